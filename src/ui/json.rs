//! `pai run --json`: every event as one JSON object on its own line of stdout, for scripts and
//! editors. It never prompts: approvals come from the flags (`--yes` approves plans and RM,
//! `--allow-run` approves RUN), and each decision that declines is reported as a `notice` event
//! so a reader of the stream knows why nothing happened.

use std::io::Write;
use std::sync::Mutex;

use crate::agent::protocol::PlannedStep;
use crate::agent::protocol::{
    Approval, Event, Frontend, RunAnswer, RunQuestion, ToolAnswer, ToolQuestion,
};

/// The JSON-lines frontend.
pub struct JsonFrontend {
    out: Mutex<Box<dyn Write + Send>>,
}

impl JsonFrontend {
    /// Print to stdout. It never prompts: a question the agent's policy could not settle from
    /// the flags is declined, and the decline reported as a notice.
    pub fn new() -> Self {
        Self::with_writer(Box::new(super::stream::Stdout))
    }

    /// Print to any writer (tests).
    pub fn with_writer(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }

    fn emit(&self, event: &Event) {
        let Ok(mut line) = serde_json::to_vec(event) else {
            return;
        };
        line.push(b'\n');
        let mut out = match self.out.lock() {
            Ok(out) => out,
            Err(poisoned) => poisoned.into_inner(),
        };
        // A reader that went away (`| head`) must not fail the turn.
        let _ = out.write_all(&line);
        let _ = out.flush();
    }

    fn declined(&self, text: &str) {
        self.emit(&Event::Notice { text: text.into() });
    }
}

impl Default for JsonFrontend {
    fn default() -> Self {
        Self::new()
    }
}

impl Frontend for JsonFrontend {
    fn event(&self, event: &Event) {
        self.emit(event);
    }

    fn approve_plan(&self, _steps: &[PlannedStep]) -> Approval {
        self.declined("the plan was not carried out: pass --yes to approve plans");
        Approval::No
    }

    fn approve_run(&self, question: &RunQuestion) -> RunAnswer {
        self.declined(&format!(
            "RUN `{}` was not allowed: pass --yes --allow-run (confined commands only) or add it to run.allow",
            question.command
        ));
        RunAnswer::No
    }

    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        self.declined(&format!(
            "TOOL {}.{} was not allowed: list it in the server's auto_approve in config.toml",
            question.server, question.tool
        ));
        ToolAnswer::No
    }

    fn can_ask(&self) -> bool {
        false
    }

    fn confirm_rm(&self, path: &str, _recursive: bool) -> bool {
        self.declined(&format!(
            "RM {path} was not confirmed: removing a directory always needs a terminal to confirm at; --yes covers single files"
        ));
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use super::*;
    use crate::agent::protocol::{Analysis, Complexity, Step};
    use crate::agent::protocol::{CallUsage, StepReport, TurnStatus};

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

    fn lines(buf: &Shared) -> Vec<Value> {
        let bytes = buf.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn one_object_per_line_per_event() {
        let buf = Shared::default();
        let front = JsonFrontend::with_writer(Box::new(buf.clone()));
        let steps = vec![PlannedStep {
            step: Step::Write {
                path: "a.py".into(),
                content: "print(1)\n".into(),
            },
            purpose: "make it".into(),
            preview: None,
        }];
        front.event(&Event::Thinking { phase: 1 });
        front.event(&Event::Usage {
            call: 1,
            usage: CallUsage {
                input: 10,
                output: 5,
                cached: 0,
                reasoning: 0,
                unknown: false,
                failed: false,
            },
        });
        front.event(&Event::Plan {
            phase: 1,
            reply: "ok\nmultiline".into(),
            analysis: Analysis::default(),
            complexity: Complexity::Simple,
            steps,
            observe: false,
        });
        front.event(&Event::Step(StepReport {
            index: 1,
            phase: 1,
            action: "WRITE".into(),
            target: "a.py".into(),
            ok: true,
            output: "created".into(),
            diff: Some("+print(1)".into()),
            file_view: None,
        }));
        front.event(&Event::Finished {
            status: TurnStatus::Success,
            message: "done".into(),
            next_steps: vec![],
            calls: 1,
            input_tokens: 10,
            output_tokens: 5,
            cached_tokens: 0,
            reasoning_tokens: 0,
            calls_without_usage: 0,
            verified: None,
            result: crate::agent::protocol::TurnResult::default(),
        });
        let got = lines(&buf);
        assert_eq!(got.len(), 5);
        assert_eq!(got[0]["event"], "thinking");
        assert_eq!(got[1]["event"], "usage");
        assert_eq!(got[1]["input"], 10);
        assert_eq!(got[2]["event"], "plan");
        assert_eq!(got[2]["steps"][0]["action"], "WRITE");
        assert_eq!(got[2]["steps"][0]["purpose"], "make it");
        assert_eq!(got[3]["event"], "step");
        assert_eq!(got[3]["ok"], true);
        assert_eq!(got[4]["status"], "success");
    }

    #[test]
    fn it_never_approves_and_reports_every_decline() {
        let buf = Shared::default();
        let front = JsonFrontend::with_writer(Box::new(buf.clone()));
        assert_eq!(front.approve_plan(&[]), Approval::No);
        let q = RunQuestion {
            command: "make".into(),
            confined: true,
            rule: Some("make".into()),
            can_save: true,
        };
        assert_eq!(front.approve_run(&q), RunAnswer::No);
        assert!(!front.confirm_rm("x", true));
        let got = lines(&buf);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|v| v["event"] == "notice"));
        assert!(got[0]["text"].as_str().unwrap().contains("--yes"));
        assert!(got[1]["text"].as_str().unwrap().contains("--allow-run"));
    }

    #[test]
    fn a_closed_reader_is_not_an_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
        }
        let front = JsonFrontend::with_writer(Box::new(Closed));
        front.event(&Event::Notice { text: "x".into() });
    }
}
