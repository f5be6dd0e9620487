//! `pai run` without `--json`: the interactive renderings printed in order, with colour only
//! on a terminal that wants it. Approvals are asked on the terminal when stdin is one and
//! declined otherwise, with a message naming the flags that approve them (`--yes`,
//! `--allow-run`).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use super::layout::Theme;
use super::present::Presenter;
use super::prompt::{Asker, StdinLines};
use super::{Appearance, DEFAULT_WIDTH, print_err, render, stdout_width};
use crate::agent::protocol::PlannedStep;
use crate::agent::protocol::{
    Approval, Event, Frontend, RunAnswer, RunQuestion, ToolAnswer, ToolQuestion,
};

/// The plain-text frontend.
pub struct TextFrontend {
    out: Mutex<Box<dyn Write + Send>>,
    presenter: Mutex<Presenter>,
    theme: Theme,
    /// Follow the terminal's width (stdout is a terminal).
    track_width: bool,
    asker: Asker,
}

impl TextFrontend {
    /// Print to stdout; colour when stdout is a terminal and `appearance` allows it. Whether a
    /// question is asked at all is the agent's decision (its approval policy); this frontend
    /// only asks, or declines when there is no terminal to ask at.
    pub fn new(appearance: Appearance) -> Self {
        let tty = std::io::stdout().is_terminal();
        let rich = tty && !appearance.plain;
        let theme = Theme {
            width: stdout_width().unwrap_or(DEFAULT_WIDTH),
            color: rich,
            unicode: rich,
            truecolor: appearance.truecolor,
            // Not a terminal: a reader (a log, a script, a pager) gets diff and output lines
            // whole; cutting them would lose a diff line's `+` on its continuation.
            wrap_code: tty,
        };
        let asker = if !std::io::stdin().is_terminal() {
            Asker::Deny
        } else if rich && std::io::stderr().is_terminal() {
            Asker::Dialog
        } else {
            Asker::Lines {
                source: Arc::new(StdinLines),
                to_stdout: false,
            }
        };
        Self {
            out: Mutex::new(Box::new(super::stream::Stdout)),
            presenter: Mutex::new(Presenter::new(true)),
            theme,
            track_width: tty,
            asker,
        }
    }

    /// Print to `out` with a fixed theme; every question is declined (tests, embedding).
    pub fn with_writer(out: Box<dyn Write + Send>, theme: Theme) -> Self {
        Self {
            out: Mutex::new(out),
            presenter: Mutex::new(Presenter::new(true)),
            theme,
            track_width: false,
            asker: Asker::Deny,
        }
    }

    fn theme(&self) -> Theme {
        let mut theme = self.theme;
        if self.track_width
            && let Some(width) = stdout_width()
        {
            theme.width = width;
        }
        theme
    }

    fn write(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut out = match self.out.lock() {
            Ok(out) => out,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn presenter(&self) -> std::sync::MutexGuard<'_, Presenter> {
        match self.presenter.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Close streamed text before a question is asked.
    fn settle(&self) {
        let text = self.presenter().end_stream();
        self.write(&text);
    }
}

impl Frontend for TextFrontend {
    fn event(&self, event: &Event) {
        let theme = self.theme();
        let text = self.presenter().event(event, &theme);
        self.write(&text);
    }

    fn approve_plan(&self, steps: &[PlannedStep]) -> Approval {
        self.settle();
        self.asker
            .plan_showing(&render::full_diffs(steps, &self.theme()), None)
    }

    fn approve_run(&self, question: &RunQuestion) -> RunAnswer {
        self.settle();
        if !matches!(self.asker, Asker::Deny) {
            print_err(&render::run_question(question, &self.theme()));
        }
        self.asker.run(
            question,
            &format!(
                "RUN `{}` needs approval and there is no terminal to ask at: run pai in a terminal, pass --yes --allow-run (confined commands only), or add it to run.allow in config.toml.",
                question.command
            ),
            None,
        )
    }

    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        self.settle();
        if !matches!(self.asker, Asker::Deny) {
            print_err(&render::tool_question(question, &self.theme()));
        }
        self.asker.tool(
            &format!(
                "TOOL {}.{} needs approval and there is no terminal to ask at: run pai in a terminal, or list the tool in the server's auto_approve in config.toml.",
                question.server, question.tool
            ),
            None,
        )
    }

    fn can_ask(&self) -> bool {
        !matches!(self.asker, Asker::Deny)
    }

    fn confirm_rm(&self, path: &str, recursive: bool) -> bool {
        self.settle();
        if !matches!(self.asker, Asker::Deny) {
            print_err(&render::rm_question(path, recursive, &self.theme()));
        }
        self.asker.yes_no(
            "Remove it?",
            false,
            &format!(
                "RM {path} needs a confirmation and there is no terminal to ask at (removing a directory always asks; --yes covers single files)."
            ),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::TurnStatus;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn question(command: &str, confined: bool) -> RunQuestion {
        RunQuestion {
            command: command.into(),
            confined,
            rule: Some(command.into()),
            can_save: true,
        }
    }

    #[test]
    fn streams_then_renders_and_never_prompts_without_a_terminal() {
        let buf = Shared::default();
        let front = TextFrontend::with_writer(Box::new(buf.clone()), Theme::plain(40));
        front.event(&Event::Thinking { phase: 1 });
        front.event(&Event::TextDelta {
            text: "Sure, ".into(),
        });
        front.event(&Event::TextDelta {
            text: "here it is.".into(),
        });
        front.event(&Event::Answer {
            text: "Sure, here it is.".into(),
        });
        front.event(&Event::Usage {
            call: 1,
            usage: crate::agent::protocol::CallUsage {
                input: 100,
                output: 20,
                cached: 0,
                reasoning: 0,
                unknown: false,
                failed: false,
            },
        });
        front.event(&Event::Finished {
            status: TurnStatus::Answered,
            message: String::new(),
            next_steps: vec![],
            calls: 1,
            input_tokens: 100,
            output_tokens: 20,
            cached_tokens: 0,
            reasoning_tokens: 0,
            calls_without_usage: 0,
            verified: None,
            result: crate::agent::protocol::TurnResult::default(),
        });
        assert_eq!(front.approve_plan(&[]), Approval::No);
        assert_eq!(front.approve_run(&question("ls", true)), RunAnswer::No);
        assert!(!front.confirm_rm("a", false));
        let out = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        // A one-call answer gives its tokens once, on the call's line.
        assert_eq!(
            out,
            "... thinking\nSure, here it is.\nTokens: 100 -> 20 (call 1)\n"
        );
    }

    #[test]
    fn the_frontend_never_approves_on_its_own() {
        // Flags are the agent's business: a frontend that cannot ask declines everything,
        // an unconfined RUN and a recursive RM included.
        let front = TextFrontend::with_writer(Box::new(Shared::default()), Theme::plain(40));
        assert_eq!(front.approve_plan(&[]), Approval::No);
        assert_eq!(front.approve_run(&question("ls", false)), RunAnswer::No);
        assert!(!front.confirm_rm("a", true));
    }
}
