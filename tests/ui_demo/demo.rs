//! The interactive session over a scripted fake driver, for the pseudo-terminal tests of the
//! UI (`tests/ui_pty.rs`) and for trying the UI by hand without a model:
//! `cargo run --example ui-demo`. Requests pick a script by keyword: "slow" waits for Ctrl+C,
//! "make"/"create" plans (approve it), "run" and "rm" ask approvals, "panic" panics, anything
//! else gets a streamed chat answer. With `UI_DEMO_LOG=file` every request and command the
//! driver receives is appended to that file as a JSON line.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::BoxFuture;
use pai::agent::events::{
    Approval, CallUsage, Event, FileView, Frontend, RunAnswer, RunQuestion, StepReport, Tally,
    TurnOutcome, TurnStatus,
};
use pai::agent::plan::{Analysis, Complexity, PlannedStep, Step};
use pai::config::Env;
use pai::error::Error;
use pai::ui::{Appearance, InteractiveOptions, SessionDriver, SessionInfo, run_interactive};
use tokio_util::sync::CancellationToken;

const BRANCH: &str = "pai/20250101_120000";
const COMMIT: &str = "abc1234";

struct Demo {
    /// `--yes` and `--allow-run`: like the real agent, the fake session applies the approval
    /// policy itself; the frontend only asks.
    yes: bool,
    allow_run: bool,
    root: PathBuf,
    log: Option<PathBuf>,
    model: String,
    plans: u32,
    undone: u32,
    totals: Tally,
}

impl Demo {
    fn record(&self, kind: &str, text: &str) {
        let Some(path) = &self.log else { return };
        let line = serde_json::json!({"kind": kind, "text": text}).to_string();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    fn finished(
        &mut self,
        frontend: &dyn Frontend,
        status: TurnStatus,
        message: &str,
        tally: Tally,
    ) -> TurnOutcome {
        self.totals.add(tally);
        let next_steps = if status == TurnStatus::Success {
            vec!["Run python3 hello.py".to_string(), "Add a test".to_string()]
        } else {
            Vec::new()
        };
        frontend.event(&Event::Finished {
            status,
            message: message.to_string(),
            next_steps,
            calls: tally.calls,
            input_tokens: tally.input,
            output_tokens: tally.output,
            cached_tokens: 0,
            reasoning_tokens: 0,
            calls_without_usage: 0,
            verified: None,
            result: pai::agent::events::TurnResult::default(),
        });
        TurnOutcome {
            status,
            tally,
            commit: (status == TurnStatus::Success).then(|| COMMIT.to_string()),
            config_hint: None,
        }
    }

    async fn call(&self, frontend: &dyn Frontend, reply: &str, tally: &mut Tally) {
        frontend.event(&Event::Thinking { phase: 1 });
        tokio::time::sleep(Duration::from_millis(150)).await;
        for word in reply.split_inclusive(' ') {
            frontend.event(&Event::TextDelta {
                text: word.to_string(),
            });
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tally.calls += 1;
        tally.input += 900;
        tally.output += 150;
        frontend.event(&Event::Usage {
            call: tally.calls,
            usage: CallUsage {
                input: 900,
                output: 150,
                cached: 0,
                reasoning: 0,
                unknown: false,
                failed: false,
            },
        });
    }

    async fn run(
        &mut self,
        request: &str,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        self.record("request", request);
        let mut tally = Tally::default();
        let lower = request.to_lowercase();
        if lower.contains("panic") {
            panic!("the demo driver was asked to panic");
        }
        if lower.contains("slow") {
            frontend.event(&Event::Thinking { phase: 1 });
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                _ = cancel.cancelled() => {
                    self.record("cancelled", request);
                    return self.finished(frontend, TurnStatus::Interrupted, "stopped before the model answered", tally);
                }
            }
            return self.finished(
                frontend,
                TurnStatus::Failed,
                "the model never answered",
                tally,
            );
        }
        if lower.contains("make") || lower.contains("create") {
            return self.plan(frontend, cancel, tally).await;
        }
        if lower.contains("run") {
            self.call(frontend, "I'll run the script. ", &mut tally)
                .await;
            let confined = !lower.contains("unconfined");
            // Only a confined command is approved by the flags; an unconfined one always asks.
            let ok = (self.yes && self.allow_run && confined)
                || tokio::task::block_in_place(|| {
                    frontend.approve_run(&RunQuestion {
                        command: "python3 hello.py".into(),
                        confined,
                        rule: None,
                        can_save: false,
                    }) == RunAnswer::Yes
                });
            self.record("run", if ok { "approved" } else { "declined" });
            let status = if ok {
                TurnStatus::Success
            } else {
                TurnStatus::Failed
            };
            return self.finished(
                frontend,
                status,
                if ok { "ran it" } else { "RUN was declined" },
                tally,
            );
        }
        if lower.contains("rm") {
            self.call(frontend, "I'll remove old.txt. ", &mut tally)
                .await;
            let ok =
                self.yes || tokio::task::block_in_place(|| frontend.confirm_rm("old.txt", false));
            self.record("rm", if ok { "approved" } else { "declined" });
            let status = if ok {
                TurnStatus::Success
            } else {
                TurnStatus::Failed
            };
            return self.finished(frontend, status, "rm handled", tally);
        }
        let answer = "Python is a programming language that is easy to read and has a large standard library.";
        self.call(frontend, answer, &mut tally).await;
        frontend.event(&Event::Answer {
            text: answer.to_string(),
        });
        self.finished(frontend, TurnStatus::Answered, answer, tally)
    }

    async fn plan(
        &mut self,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        mut tally: Tally,
    ) -> TurnOutcome {
        let reply = "I'll create hello.py that prints a greeting, then show it.";
        self.call(frontend, reply, &mut tally).await;
        let content = hello_content();
        let steps = hello_steps(&content);
        frontend.event(&Event::Plan {
            phase: 1,
            reply: reply.into(),
            analysis: Analysis::default(),
            complexity: Complexity::Simple,
            steps: steps.clone(),
            observe: false,
        });
        let approval = if self.yes {
            Approval::Yes
        } else {
            tokio::task::block_in_place(|| frontend.approve_plan(&steps))
        };
        match approval {
            Approval::Yes => {}
            Approval::No => {
                self.record("plan", "declined");
                return self.finished(
                    frontend,
                    TurnStatus::Rejected,
                    "The plan was declined; nothing changed.",
                    tally,
                );
            }
            Approval::Drop(numbers) => {
                self.record("drop", &format!("{numbers:?}"));
                return self.finished(
                    frontend,
                    TurnStatus::Rejected,
                    "Steps dropped; the demo does not run a reduced plan.",
                    tally,
                );
            }
            Approval::Amend(text) => {
                self.record("amend", &text);
                return self.finished(
                    frontend,
                    TurnStatus::Rejected,
                    "Amended; the demo does not re-plan.",
                    tally,
                );
            }
        }
        self.record("plan", "approved");
        if cancel.is_cancelled() {
            return self.finished(frontend, TurnStatus::Interrupted, "stopped", tally);
        }
        report_hello_steps(frontend, content);
        self.plans += 1;
        frontend.event(&Event::Committed {
            commit: COMMIT.into(),
            branch: BRANCH.into(),
        });
        self.finished(frontend, TurnStatus::Success, "Created hello.py.", tally)
    }
}

/// The demo plan's file: a greeting and enough lines to show a long diff and file view.
fn hello_content() -> String {
    std::iter::once("def main():\n    print(\"hello\")\n".to_string())
        .chain((1..=23).map(|i| format!("# line {i}\n")))
        .collect()
}

/// The demo plan: write hello.py with `content`, then read it back.
fn hello_steps(content: &str) -> Vec<PlannedStep> {
    vec![
        PlannedStep {
            step: Step::Write {
                path: "hello.py".into(),
                content: content.to_string(),
            },
            purpose: "Create the greeting script".into(),
            preview: None,
        },
        PlannedStep {
            step: Step::Read {
                path: "hello.py".into(),
                lines: None,
            },
            purpose: "Show the result".into(),
            preview: None,
        },
    ]
}

/// The results of the demo plan's two steps: the WRITE with its diff, the READ with the file.
fn report_hello_steps(frontend: &dyn Frontend, content: String) {
    let diff: String =
        std::iter::once("--- /dev/null\n+++ b/hello.py\n@@ -0,0 +1,25 @@\n".to_string())
            .chain(content.lines().map(|l| format!("+{l}\n")))
            .collect();
    frontend.event(&Event::Step(StepReport {
        index: 1,
        phase: 1,
        action: "WRITE".into(),
        target: "hello.py".into(),
        ok: true,
        output: "created hello.py (25 lines)".into(),
        diff: Some(diff),
        file_view: None,
    }));
    frontend.event(&Event::Step(StepReport {
        index: 2,
        phase: 1,
        action: "READ".into(),
        target: "hello.py".into(),
        ok: true,
        output: "read hello.py (25 lines)".into(),
        diff: None,
        file_view: Some(FileView {
            path: "hello.py".into(),
            text: content,
            first_line: 1,
        }),
    }));
}

impl SessionDriver for Demo {
    fn info(&self) -> SessionInfo {
        SessionInfo {
            root: self.root.clone(),
            provider: "gemini".into(),
            model: self.model.clone(),
            branch: Some(BRANCH.into()),
            read_only: None,
        }
    }

    fn turn<'a>(
        &'a mut self,
        request: &'a str,
        frontend: &'a dyn Frontend,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, TurnOutcome> {
        Box::pin(self.run(request, frontend, cancel))
    }

    fn undo(&mut self) -> Result<String, Error> {
        self.record("undo", "");
        if self.plans == 0 {
            return Err(
                Error::failed("nothing to undo: this session has no plan yet")
                    .with_hint("make a request first"),
            );
        }
        self.plans -= 1;
        self.undone += 1;
        Ok(format!("Reverted plan 1 ({COMMIT}): hello.py"))
    }

    fn redo(&mut self) -> Result<String, Error> {
        self.record("redo", "");
        if self.undone == 0 {
            return Err(Error::failed("nothing to redo"));
        }
        self.undone -= 1;
        self.plans += 1;
        Ok(format!("Re-applied plan 1 as {COMMIT}: hello.py"))
    }

    fn log(&mut self) -> Result<String, Error> {
        self.record("log", "");
        Ok(format!(
            "{COMMIT}  plan 1  make hello  hello.py +25 -0  1 call"
        ))
    }

    fn set_model(&mut self, model: &str) -> String {
        self.record("model", model);
        self.model = model.to_string();
        format!("Using {model} from the next request on.")
    }

    fn clear_memory(&mut self) {
        self.record("clear", "");
    }

    fn totals(&self) -> Tally {
        self.totals
    }

    fn finish(&mut self) -> String {
        self.record("finish", "");
        format!(
            "Session {BRANCH}: {} plan(s).\nReview: git diff main...{BRANCH}\nMerge:  git merge {BRANCH}\nDiscard: pai discard {BRANCH}",
            self.plans
        )
    }
}

#[tokio::main]
async fn main() {
    let env = Env::from_process();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let opts = InteractiveOptions {
        appearance: Appearance::from_env(&env),
        // As `pai` does: input history in the user's state directory, never in the project.
        history_root: pai::history::project_dir(&root),
    };
    let mut driver = Demo {
        yes: args.iter().any(|a| a == "--yes"),
        allow_run: args.iter().any(|a| a == "--allow-run"),
        root,
        log: env.get("UI_DEMO_LOG").map(PathBuf::from),
        model: "gemini-2.5-flash-lite".into(),
        plans: 0,
        undone: 0,
        totals: Tally::default(),
    };
    let code = run_interactive(&mut driver, opts).await;
    std::process::exit(code);
}
