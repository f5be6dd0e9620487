//! The turn's outcome from what its steps did, not from the model's last word: a
//! failed step that acts (WRITE, MODIFY, RM, MV, MKDIR, TOUCH, RUN, TOOL) stays owed until a
//! later step that acts succeeds on the same target, or the model gives it up in its closing
//! message; a turn that ends owing one has failed. A failed READ, TREE, LIST_PATH or SEARCH
//! owes nothing: it only told the model something.
//!
//! **Giving a step up.** The plan contract has no field for it (the schema and the system
//! prompt stay as they are, so prompt caching holds); the repair message tells the model the
//! form instead. The model's closing message — a FINISH message, or the answer of a later
//! phase that only talks — gives a failed step of an earlier phase up when it says
//! `not done: <target>` (the target as the repair message names it: the path, a RUN's
//! command, a TOOL's `server.tool`; any case, backticks allowed) followed on the same line by
//! why, in at least [`REASON_WORDS`] words. "all done" gives nothing up, nor does "a.txt and
//! the notes are written"; "not done: a.txt: the change is already there" does.

use super::first_line;
use crate::agent::events::{FailedStep, StepReport, TurnResult};
use crate::agent::plan::Step;

/// Words besides the target's name that make a closing message a reason, not a mention.
const REASON_WORDS: usize = 3;
/// Characters of a failed step's error kept in the outcome.
const ERROR_CHARS: usize = 200;

/// A failed step the turn still owes, with what would redo it or give it up.
struct Owed {
    step: FailedStep,
    /// What a later successful step must act on to redo it (normalised paths, `RUN <command>`,
    /// `TOOL <server>.<tool>`).
    keys: Vec<String>,
    /// The name a closing message must use to give it up.
    name: String,
}

/// The failed steps of a turn that decide its status, kept across its phases.
#[derive(Default)]
pub(super) struct Ledger {
    owed: Vec<Owed>,
    given_up: Vec<FailedStep>,
}

impl Ledger {
    /// Take one step's result into account: a failed step that acts becomes owed, a
    /// successful one redoes whatever owed step it shares a target with.
    pub(super) fn note(&mut self, step: &Step, report: &StepReport) {
        if !step.kind().acts() {
            return;
        }
        let keys = keys(step, report);
        if report.ok {
            self.owed
                .retain(|o| !o.keys.iter().any(|k| keys.contains(k)));
            return;
        }
        // A step failing again on the same target replaces the older failure: one entry
        // per thing left undone, with its latest error.
        self.owed.retain(|o| o.keys != keys);
        self.owed.push(Owed {
            step: FailedStep {
                phase: report.phase,
                index: report.index,
                action: report.action.clone(),
                target: first_line(&report.target).to_string(),
                error: shorten(first_line(report.output.trim())),
            },
            name: name(step, report),
            keys,
        });
    }

    /// The model's closing message in `phase`: every owed step of an earlier phase it names
    /// with a reason is given up (see the module documentation).
    pub(super) fn closing_words(&mut self, phase: u32, message: &str) {
        let (given, kept): (Vec<Owed>, Vec<Owed>) = std::mem::take(&mut self.owed)
            .into_iter()
            .partition(|o| o.step.phase < phase && gives_up(message, &o.name));
        self.owed = kept;
        self.given_up.extend(given.into_iter().map(|o| o.step));
    }

    /// Whether a failed step is still owed.
    pub(super) fn owes(&self) -> bool {
        !self.owed.is_empty()
    }

    /// The owed steps, one line each (`MODIFY a.txt`), for the memory and the commit.
    pub(super) fn owed_lines(&self) -> Vec<String> {
        self.owed
            .iter()
            .map(|o| format!("{} {}: {}", o.step.action, o.step.target, o.step.error))
            .collect()
    }

    /// What the next phase's call is told about the owed steps: which failed (their errors
    /// are in the results the conversation already carries) and that a FINISH leaving them
    /// undone and unexplained is reported as a failure. Kept short: it rides on every
    /// later call of a turn with a failure.
    pub(super) fn repair_note(&self) -> Option<String> {
        if self.owed.is_empty() {
            return None;
        }
        let owed: Vec<String> = self
            .owed
            .iter()
            .map(|o| {
                format!(
                    "{} `{}` (phase {} step {})",
                    o.step.action, o.name, o.step.phase, o.step.index
                )
            })
            .collect();
        Some(format!(
            "Failed and not redone yet: {}. Redo each on the same target, or give it up with a line `not done: <target>: <why>` in your FINISH message (the target as quoted here); a FINISH that does neither is reported to the user as a failure.\n",
            owed.join(", ")
        ))
    }

    /// The outcome for the `finished` event, with the paths the turn changed.
    pub(super) fn into_result(self, changed: Vec<String>) -> TurnResult {
        TurnResult {
            failed_steps: self.owed.into_iter().map(|o| o.step).collect(),
            given_up: self.given_up,
            changed,
        }
    }
}

/// What a step acts on, for "redone on the same target": the paths it writes (a MV both),
/// the command a RUN ran (the user may have edited it: the report has what ran), a TOOL's
/// server and tool.
fn keys(step: &Step, report: &StepReport) -> Vec<String> {
    match step {
        Step::Run { .. } => vec![format!("RUN {}", report.target.trim())],
        Step::Tool { server, tool, .. } => vec![format!("TOOL {server}.{tool}")],
        Step::Mkdir { path } => vec![normal(path)],
        other => other.written_paths().into_iter().map(normal).collect(),
    }
}

/// The name a closing message uses for a step: its path (a MV's source), its command, or
/// its `server.tool`.
fn name(step: &Step, report: &StepReport) -> String {
    match step {
        Step::Run { .. } => report.target.trim().to_string(),
        Step::Tool { server, tool, .. } => format!("{server}.{tool}"),
        Step::Mv { path, .. } => normal(path),
        other => other
            .written_paths()
            .first()
            .map_or_else(|| first_line(&report.target).to_string(), |p| normal(p)),
    }
}

/// A path as the plan validator compares them: no `./` before, no `/` after.
fn normal(path: &str) -> String {
    let trimmed = path.trim().trim_start_matches("./").trim_end_matches('/');
    if trimmed.is_empty() {
        ".".into()
    } else {
        trimmed.to_string()
    }
}

/// The marker of a step given up in a closing message (compared in lower case).
const NOT_DONE: &str = "not done:";

/// Whether `message` says `not done: <name>` and why, on the same line.
fn gives_up(message: &str, name: &str) -> bool {
    let name = name.to_lowercase();
    if name.is_empty() {
        return false;
    }
    message.to_lowercase().lines().any(|line| {
        line.match_indices(NOT_DONE).any(|(at, _)| {
            let named = line[at + NOT_DONE.len()..]
                .trim_start()
                .trim_start_matches(['`', '"', '\''])
                .strip_prefix(name.as_str());
            named.is_some_and(|reason| words(reason) >= REASON_WORDS)
        })
    })
}

/// Words (runs of letters and digits with at least one letter) in `text`.
fn words(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= ERROR_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(ERROR_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::plan::Edit;

    fn modify(path: &str) -> Step {
        Step::Modify {
            path: path.into(),
            edits: vec![Edit {
                search: "a".into(),
                replace: "b".into(),
            }],
            content: None,
        }
    }

    fn report(step: &Step, phase: u32, index: usize, ok: bool) -> StepReport {
        StepReport {
            index,
            phase,
            action: step.action().to_string(),
            target: step.target(),
            ok,
            output: if ok {
                "ok".into()
            } else {
                "search text not found\nmore".into()
            },
            diff: None,
            file_view: None,
        }
    }

    fn noted(steps: &[(Step, u32, bool)]) -> Ledger {
        let mut ledger = Ledger::default();
        for (i, (step, phase, ok)) in steps.iter().enumerate() {
            ledger.note(step, &report(step, *phase, i + 1, *ok));
        }
        ledger
    }

    #[test]
    fn a_failed_step_that_acts_is_owed_until_redone_on_its_target() {
        let ledger = noted(&[(modify("a.txt"), 1, false)]);
        assert!(ledger.owes());
        assert_eq!(ledger.owed_lines(), ["MODIFY a.txt: search text not found"]);
        // Redone in a later phase, written differently.
        let ledger = noted(&[(modify("a.txt"), 1, false), (modify("./a.txt"), 2, true)]);
        assert!(!ledger.owes());
        // Another file's success redoes nothing.
        let ledger = noted(&[(modify("a.txt"), 1, false), (modify("b.txt"), 2, true)]);
        assert!(ledger.owes());
        // Success before the failure redoes nothing either.
        let ledger = noted(&[(modify("a.txt"), 1, true), (modify("a.txt"), 2, false)]);
        assert!(ledger.owes());
    }

    #[test]
    fn observations_owe_nothing() {
        let read = Step::Read {
            path: "missing.txt".into(),
            lines: None,
        };
        let search = Step::Search {
            pattern: "x".into(),
            path: None,
        };
        let ledger = noted(&[(read, 1, false), (search, 1, false)]);
        assert!(!ledger.owes());
        assert_eq!(ledger.into_result(vec![]), TurnResult::default());
    }

    #[test]
    fn a_run_is_redone_by_the_same_command_and_a_tool_by_the_same_tool() {
        let run = |c: &str| Step::Run { command: c.into() };
        let ledger = noted(&[(run("make test"), 1, false), (run("make"), 2, true)]);
        assert!(ledger.owes());
        let ledger = noted(&[(run("make test"), 1, false), (run("make test"), 2, true)]);
        assert!(!ledger.owes());
        let tool = |args: &str| Step::Tool {
            server: "docs".into(),
            tool: "save".into(),
            arguments: serde_json::from_str(args).unwrap(),
        };
        let ledger = noted(&[
            (tool(r#"{"a":1}"#), 1, false),
            (tool(r#"{"a":2}"#), 2, true),
        ]);
        assert!(!ledger.owes());
    }

    #[test]
    fn a_closing_message_gives_up_only_what_it_names_with_a_reason() {
        let mut ledger = noted(&[(modify("a.txt"), 1, false)]);
        for words in [
            "all done",
            "a.txt and the notes are written, all done",
            "not done: a.txt",
            "not done: a.txt: skipped",
            "not done: b.txt: the change is already there",
            "not done:\na.txt: the change is already there",
        ] {
            ledger.closing_words(2, words);
            assert!(ledger.owes(), "`{words}` gives nothing up");
        }
        ledger.closing_words(1, "not done: a.txt: the change is already there");
        assert!(
            ledger.owes(),
            "words from before the failure give nothing up"
        );
        ledger.closing_words(
            2,
            "Added b.\nNot done: `a.txt` - the change is already there",
        );
        assert!(!ledger.owes());
        let result = ledger.into_result(vec!["b.txt".into()]);
        assert_eq!(result.given_up.len(), 1);
        assert_eq!(result.given_up[0].target, "a.txt");
        assert!(result.failed_steps.is_empty());
        assert_eq!(result.changed, ["b.txt"]);
    }

    #[test]
    fn the_repair_note_names_each_owed_step_and_the_consequence() {
        let ledger = noted(&[(modify("a.txt"), 1, false)]);
        let note = ledger.repair_note().unwrap();
        assert!(note.contains("MODIFY `a.txt` (phase 1 step 1)"), "{note}");
        assert!(note.contains("`not done: <target>: <why>`"), "{note}");
        assert!(note.contains("reported to the user as a failure"), "{note}");
        assert_eq!(Ledger::default().repair_note(), None);
    }
}
