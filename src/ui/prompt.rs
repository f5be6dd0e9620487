//! Approval questions: the plan (yes / no / edit the request), RUN commands and RM. On a
//! capable terminal they are `dialoguer` prompts; in plain mode they are plain lines (no escape
//! sequences) answered from a line source; without a terminal to ask on they are declined with
//! a message saying which flag approves them.

use std::io::BufRead;
use std::sync::Arc;

use dialoguer::theme::ColorfulTheme;
use dialoguer::{Confirm, Input};
use tokio_util::sync::CancellationToken;

use super::print_err;
use crate::agent::protocol::{Approval, RuleScope, RunAnswer, RunQuestion, ToolAnswer};

/// Where plain answers come from.
pub(crate) trait LineSource: Send + Sync {
    /// The next line, without its newline; `None` at end of input or when `cancel` fires.
    fn read_line(&self, cancel: Option<&CancellationToken>) -> Option<String>;
}

/// Lines read straight from stdin (`pai run` in plain mode).
pub(crate) struct StdinLines;

impl LineSource for StdinLines {
    fn read_line(&self, _cancel: Option<&CancellationToken>) -> Option<String> {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
        }
    }
}

/// How questions are asked.
#[derive(Clone)]
pub(crate) enum Asker {
    /// `dialoguer` prompts on stderr.
    Dialog,
    /// Plain text questions, answered by lines. `to_stdout` puts the questions on stdout (the
    /// interactive session) rather than stderr (`pai run`, whose stdout may be captured).
    Lines {
        source: Arc<dyn LineSource>,
        to_stdout: bool,
    },
    /// Nobody to ask: decline and say how to approve.
    Deny,
}

/// What a plan answer typed as text means.
fn parse_plan_answer(text: &str) -> Option<PlanChoice> {
    match text.trim().to_ascii_lowercase().as_str() {
        "" | "y" | "yes" => Some(PlanChoice::Yes),
        "n" | "no" => Some(PlanChoice::No),
        "e" | "edit" | "a" | "amend" => Some(PlanChoice::Edit),
        "d" | "diff" => Some(PlanChoice::Diff),
        _ => None,
    }
}

fn parse_yes_no(text: &str, default: bool) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "" => Some(default),
        "y" | "yes" => Some(true),
        "n" | "no" => Some(false),
        _ => None,
    }
}

/// The answers a RUN question offers, as the prompt shows them.
pub(crate) fn run_choices(q: &RunQuestion) -> String {
    let mut text = String::from("[y]es [n]o");
    if q.rule.is_some() {
        text.push_str(" [a]lways");
        if q.can_save {
            text.push_str(" [p]roject [u]ser");
        }
    }
    text.push_str(" [e]dit");
    text
}

/// What an answer to a RUN question typed as text means, among the answers offered.
fn parse_run_answer(text: &str, q: &RunQuestion) -> Option<RunChoice> {
    let always = q.rule.is_some();
    let save = always && q.can_save;
    match text.trim().to_ascii_lowercase().as_str() {
        "" | "n" | "no" => Some(RunChoice::Answer(RunAnswer::No)),
        "y" | "yes" => Some(RunChoice::Answer(RunAnswer::Yes)),
        "a" | "always" if always => Some(RunChoice::Answer(RunAnswer::Always)),
        "p" | "project" if save => Some(RunChoice::Answer(RunAnswer::Save(RuleScope::Project))),
        "u" | "user" if save => Some(RunChoice::Answer(RunAnswer::Save(RuleScope::User))),
        "e" | "edit" => Some(RunChoice::Edit),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum RunChoice {
    Answer(RunAnswer),
    Edit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlanChoice {
    Yes,
    No,
    Edit,
    Diff,
}

const PLAN_QUESTION: &str = "Carry out this plan? [y]es [n]o [e]dit [d]iff";
const MAX_TRIES: usize = 3;

impl Asker {
    fn say(&self, text: &str) {
        match self {
            Asker::Lines {
                to_stdout: true, ..
            } => super::print_out(text),
            _ => print_err(text),
        }
    }

    /// Ask whether to carry out a plan. `cancel` is the turn's token: a Ctrl+C while asking
    /// cancels the turn and declines.
    #[cfg(test)]
    pub(crate) fn plan(&self, cancel: Option<&CancellationToken>) -> Approval {
        self.plan_showing("", cancel)
    }

    /// [`Asker::plan`], where `d` prints `diffs` (every step's whole diff) and asks again, and
    /// `e` asks for an amended request or, left empty, which steps to drop.
    pub(crate) fn plan_showing(&self, diffs: &str, cancel: Option<&CancellationToken>) -> Approval {
        if let Asker::Deny = self {
            print_err(
                "The plan was not carried out: it needs approval. Pass --yes to approve plans (and --allow-run to allow RUN commands), or run pai in a terminal.\n",
            );
            return Approval::No;
        }
        let mut tries = 0;
        while tries < MAX_TRIES {
            let Some(text) = self.ask_line(PLAN_QUESTION, Some("y"), cancel) else {
                return interrupted(cancel);
            };
            match parse_plan_answer(&text) {
                Some(PlanChoice::Yes) => return Approval::Yes,
                Some(PlanChoice::No) => return Approval::No,
                Some(PlanChoice::Diff) => {
                    let shown = if diffs.is_empty() {
                        "(no file changes to show)\n"
                    } else {
                        diffs
                    };
                    self.say(shown);
                }
                Some(PlanChoice::Edit) => return self.amend(cancel),
                None => {
                    tries += 1;
                    self.say("Please answer y, n, e or d.\n");
                }
            }
        }
        Approval::No
    }

    /// After `e`: a new request, or (left empty) the numbers of the steps to drop.
    fn amend(&self, cancel: Option<&CancellationToken>) -> Approval {
        let Some(text) = self.ask_line(
            "New request (Enter keeps it and drops steps instead)",
            None,
            cancel,
        ) else {
            return interrupted(cancel);
        };
        if !text.trim().is_empty() {
            return Approval::Amend(text);
        }
        let Some(text) = self.ask_line("Steps to drop (numbers, e.g. 2 3)", None, cancel) else {
            return interrupted(cancel);
        };
        let numbers: Option<Vec<usize>> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().ok().filter(|n| *n > 0))
            .collect();
        match numbers {
            Some(n) if !n.is_empty() => Approval::Drop(n),
            _ => Approval::No,
        }
    }

    /// One line typed at `prompt` (with `default` for a bare Enter in the dialog); `None`
    /// when the input ended or was interrupted.
    fn ask_line(
        &self,
        prompt: &str,
        default: Option<&str>,
        cancel: Option<&CancellationToken>,
    ) -> Option<String> {
        match self {
            Asker::Deny => None,
            Asker::Dialog => {
                let theme = ColorfulTheme::default();
                let mut input = Input::<String>::with_theme(&theme)
                    .with_prompt(prompt)
                    .allow_empty(true);
                if let Some(d) = default {
                    input = input.default(d.into());
                }
                input.interact_text().ok()
            }
            Asker::Lines { source, .. } => {
                self.say(&format!("{prompt} "));
                let line = source.read_line(cancel);
                if line.is_none() {
                    self.say("\n");
                }
                line
            }
        }
    }

    /// Ask a yes/no question (RUN, RM); `default` is the answer to a bare Enter. `denied`
    /// explains which flag approves it when nobody can be asked.
    pub(crate) fn yes_no(
        &self,
        question: &str,
        default: bool,
        denied: &str,
        cancel: Option<&CancellationToken>,
    ) -> bool {
        match self {
            Asker::Deny => {
                print_err(&format!("{denied}\n"));
                false
            }
            Asker::Dialog => {
                let theme = ColorfulTheme::default();
                match Confirm::with_theme(&theme)
                    .with_prompt(question)
                    .default(default)
                    .wait_for_newline(true)
                    .interact()
                {
                    Ok(answer) => answer,
                    Err(_) => {
                        interrupted(cancel);
                        false
                    }
                }
            }
            Asker::Lines { source, .. } => {
                let hint = if default { "[Y/n]" } else { "[y/N]" };
                for _ in 0..MAX_TRIES {
                    self.say(&format!("{question} {hint} "));
                    let Some(text) = source.read_line(cancel) else {
                        self.say("\n");
                        return false;
                    };
                    match parse_yes_no(&text, default) {
                        Some(answer) => return answer,
                        None => self.say("Please answer y or n.\n"),
                    }
                }
                false
            }
        }
    }
}

impl Asker {
    /// Ask about a RUN command with the answers `q` offers (the default, a bare Enter, is no).
    /// `denied` explains how to approve it when nobody can be asked.
    pub(crate) fn run(
        &self,
        q: &RunQuestion,
        denied: &str,
        cancel: Option<&CancellationToken>,
    ) -> RunAnswer {
        let question = format!("Run it? {}", run_choices(q));
        let wrong = format!("Please answer {}.\n", run_choices(q));
        match self {
            Asker::Deny => {
                print_err(&format!("{denied}\n"));
                RunAnswer::No
            }
            Asker::Dialog => {
                let theme = ColorfulTheme::default();
                let answer = Input::<String>::with_theme(&theme)
                    .with_prompt(&question)
                    .default("n".into())
                    .validate_with(|s: &String| -> Result<(), String> {
                        parse_run_answer(s, q)
                            .map(|_| ())
                            .ok_or_else(|| wrong.trim_end().to_string())
                    })
                    .interact_text();
                let choice = match answer {
                    Ok(text) => parse_run_answer(&text, q),
                    Err(_) => {
                        interrupted(cancel);
                        return RunAnswer::No;
                    }
                };
                match choice {
                    Some(RunChoice::Answer(a)) => a,
                    None => RunAnswer::No,
                    Some(RunChoice::Edit) => match Input::<String>::with_theme(&theme)
                        .with_prompt("Command")
                        .with_initial_text(&q.command)
                        .allow_empty(true)
                        .interact_text()
                    {
                        Ok(text) => RunAnswer::Edit(text),
                        Err(_) => {
                            interrupted(cancel);
                            RunAnswer::No
                        }
                    },
                }
            }
            Asker::Lines { source, .. } => {
                for _ in 0..MAX_TRIES {
                    self.say(&format!("{question} "));
                    let Some(text) = source.read_line(cancel) else {
                        self.say("\n");
                        return RunAnswer::No;
                    };
                    match parse_run_answer(&text, q) {
                        Some(RunChoice::Answer(a)) => return a,
                        Some(RunChoice::Edit) => {
                            self.say("Command: ");
                            return match source.read_line(cancel) {
                                Some(text) => RunAnswer::Edit(text),
                                None => RunAnswer::No,
                            };
                        }
                        None => self.say(&wrong),
                    }
                }
                RunAnswer::No
            }
        }
    }
}

impl Asker {
    /// Ask about a TOOL call: `y`, `n` (the default) or `a`lways for this tool.
    pub(crate) fn tool(&self, denied: &str, cancel: Option<&CancellationToken>) -> ToolAnswer {
        const QUESTION: &str = "Call it? [y]es [n]o [a]lways";
        let parse = |text: &str| match text.trim().to_ascii_lowercase().as_str() {
            "" | "n" | "no" => Some(ToolAnswer::No),
            "y" | "yes" => Some(ToolAnswer::Yes),
            "a" | "always" => Some(ToolAnswer::Always),
            _ => None,
        };
        match self {
            Asker::Deny => {
                print_err(&format!("{denied}\n"));
                ToolAnswer::No
            }
            Asker::Dialog => {
                let answer = Input::<String>::with_theme(&ColorfulTheme::default())
                    .with_prompt(QUESTION)
                    .default("n".into())
                    .validate_with(|s: &String| -> Result<(), &str> {
                        parse(s).map(|_| ()).ok_or("answer y, n or a")
                    })
                    .interact_text();
                match answer {
                    Ok(text) => parse(&text).unwrap_or(ToolAnswer::No),
                    Err(_) => {
                        interrupted(cancel);
                        ToolAnswer::No
                    }
                }
            }
            Asker::Lines { source, .. } => {
                for _ in 0..MAX_TRIES {
                    self.say(&format!("{QUESTION} "));
                    let Some(text) = source.read_line(cancel) else {
                        self.say("\n");
                        return ToolAnswer::No;
                    };
                    match parse(&text) {
                        Some(a) => return a,
                        None => self.say("Please answer y, n or a.\n"),
                    }
                }
                ToolAnswer::No
            }
        }
    }
}

/// A prompt was interrupted (Ctrl+C) or its terminal went away: stop the turn and decline.
fn interrupted(cancel: Option<&CancellationToken>) -> Approval {
    if let Some(cancel) = cancel {
        cancel.cancel();
    }
    // dialoguer may leave the cursor hidden or mid-line.
    let term = console::Term::stderr();
    let _ = term.show_cursor();
    super::stream::err("\n");
    Approval::No
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    struct Scripted(Mutex<Vec<&'static str>>);

    impl LineSource for Scripted {
        fn read_line(&self, _cancel: Option<&CancellationToken>) -> Option<String> {
            let mut lines = self.0.lock().unwrap();
            if lines.is_empty() {
                None
            } else {
                Some(lines.remove(0).to_string())
            }
        }
    }

    fn asker(lines: Vec<&'static str>) -> Asker {
        Asker::Lines {
            source: Arc::new(Scripted(Mutex::new(lines))),
            to_stdout: false,
        }
    }

    #[test]
    fn plan_answers() {
        assert_eq!(asker(vec!["y"]).plan(None), Approval::Yes);
        assert_eq!(asker(vec![""]).plan(None), Approval::Yes);
        assert_eq!(asker(vec!["No"]).plan(None), Approval::No);
        assert_eq!(
            asker(vec!["e", "add tests too"]).plan(None),
            Approval::Amend("add tests too".into())
        );
        assert_eq!(asker(vec!["e", ""]).plan(None), Approval::No);
        assert_eq!(asker(vec!["maybe", "y"]).plan(None), Approval::Yes);
        assert_eq!(asker(vec!["?", "?", "?", "y"]).plan(None), Approval::No);
        assert_eq!(asker(vec![]).plan(None), Approval::No);
        assert_eq!(Asker::Deny.plan(None), Approval::No);
    }

    #[test]
    fn run_answers_offer_only_what_the_agent_allows() {
        let full = RunQuestion {
            command: "pytest tests".into(),
            confined: true,
            rule: Some("pytest tests".into()),
            can_save: true,
        };
        assert_eq!(
            run_choices(&full),
            "[y]es [n]o [a]lways [p]roject [u]ser [e]dit"
        );
        assert_eq!(asker(vec!["a"]).run(&full, "", None), RunAnswer::Always);
        assert_eq!(
            asker(vec!["p"]).run(&full, "", None),
            RunAnswer::Save(RuleScope::Project)
        );
        assert_eq!(
            asker(vec!["U"]).run(&full, "", None),
            RunAnswer::Save(RuleScope::User)
        );
        assert_eq!(asker(vec![""]).run(&full, "", None), RunAnswer::No);
        assert_eq!(asker(vec!["yes"]).run(&full, "", None), RunAnswer::Yes);
        assert_eq!(
            asker(vec!["e", "pytest tests -x"]).run(&full, "", None),
            RunAnswer::Edit("pytest tests -x".into())
        );
        let once = RunQuestion {
            rule: None,
            ..full.clone()
        };
        assert_eq!(run_choices(&once), "[y]es [n]o [e]dit");
        // "always" is not offered for it, so it is not an answer: asked again.
        assert_eq!(asker(vec!["a", "y"]).run(&once, "", None), RunAnswer::Yes);
        let unsaved = RunQuestion {
            can_save: false,
            ..full
        };
        assert_eq!(asker(vec!["p", "n"]).run(&unsaved, "", None), RunAnswer::No);
        assert_eq!(Asker::Deny.run(&unsaved, "no", None), RunAnswer::No);
    }

    #[test]
    fn yes_no_answers_respect_the_default() {
        assert!(!asker(vec![""]).yes_no("Run?", false, "", None));
        assert!(asker(vec![""]).yes_no("Run?", true, "", None));
        assert!(asker(vec!["yes"]).yes_no("Run?", false, "", None));
        assert!(!asker(vec![]).yes_no("Run?", true, "", None));
        assert!(!Asker::Deny.yes_no("Run?", true, "no", None));
    }
}
