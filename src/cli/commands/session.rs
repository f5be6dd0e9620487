//! `pai` (and `pai --continue`, `pai resume SESSION`): the interactive session, driving the agent for the terminal UI.

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::redo::describe_redo;
use super::undo::describe_undo;
use crate::agent::events::{Frontend, Tally, TurnOutcome, TurnStatus};
use crate::agent::task::{self, AgentHandle, Op};
use crate::cli::assemble::{Resume, Start, assemble, history_error, provider_config, runtime};
use crate::cli::worktree::{self, Entered};
use crate::config::{Env, Settings};
use crate::error::Error;
use crate::history::{self};
use crate::llm::{self};
use crate::ui::output::Output;
use crate::ui::{Appearance, InteractiveOptions, SessionDriver, SessionInfo, run_interactive};

/// The interactive session's view of the agent, which runs as a task: turns go through the
/// protocol (the terminal UI is one more frontend of it), session commands run on the agent
/// between turns.
struct Driver {
    handle: AgentHandle,
    settings: Settings,
    root: PathBuf,
    finished: bool,
}

/// Said when the agent task is gone (it only ends when the session does).
fn gone() -> Error {
    Error::failed("the agent stopped unexpectedly")
}

impl SessionDriver for Driver {
    fn info(&self) -> SessionInfo {
        let (branch, read_only) = self
            .handle
            .with_agent(|agent| {
                let history = agent.history();
                (
                    history.and_then(|h| {
                        h.branch().map(|b| {
                            if h.branch_created() {
                                b.to_string()
                            } else {
                                format!("{b} (made at the first plan; git is untouched until then)")
                            }
                        })
                    }),
                    history.and_then(|h| h.read_only_reason().map(str::to_string)),
                )
            })
            .unwrap_or_default();
        SessionInfo {
            root: self.root.clone(),
            provider: self.settings.provider.name().to_string(),
            model: self.settings.model.clone(),
            branch,
            read_only,
        }
    }

    fn turn<'a>(
        &'a mut self,
        request: &'a str,
        frontend: &'a dyn Frontend,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, TurnOutcome> {
        Box::pin(async move {
            let _ = self.handle.ops.send(Op::UserTurn(request.to_string()));
            // The UI's Ctrl+C becomes the protocol's interrupt.
            let ops = self.handle.ops.clone();
            let watched = cancel.clone();
            let bridge = tokio::spawn(async move {
                watched.cancelled().await;
                let _ = ops.send(Op::Interrupt);
            });
            let outcome = task::drive(&mut self.handle, frontend).await;
            bridge.abort();
            outcome.unwrap_or_else(|| TurnOutcome {
                status: TurnStatus::Failed,
                tally: Tally::default(),
                commit: None,
                config_hint: None,
            })
        })
    }

    fn undo(&mut self) -> Result<String, Error> {
        self.handle
            .with_agent(|agent| {
                let (history, workspace) = agent.history_and_workspace();
                let history =
                    history.ok_or_else(|| Error::failed("this session keeps no history"))?;
                let report = history.undo(workspace, false).map_err(history_error)?;
                Ok(describe_undo(&report))
            })
            .ok_or_else(gone)?
    }

    fn redo(&mut self) -> Result<String, Error> {
        self.handle
            .with_agent(|agent| {
                let (history, workspace) = agent.history_and_workspace();
                let history =
                    history.ok_or_else(|| Error::failed("this session keeps no history"))?;
                let report = history.redo(workspace).map_err(history_error)?;
                Ok(describe_redo(&report))
            })
            .ok_or_else(gone)?
    }

    fn log(&mut self) -> Result<String, Error> {
        let session = self
            .handle
            .with_agent(|agent| agent.history().map(|h| h.id().to_string()))
            .ok_or_else(gone)?;
        let sessions =
            history::log(&self.root, session.as_deref(), false).map_err(history_error)?;
        Ok(crate::ui::log_text::log_text(&sessions))
    }

    fn set_model(&mut self, model: &str) -> String {
        let model = model.trim();
        if model.is_empty() {
            return format!(
                "The model is {}. Use /model <name> to change it.",
                self.settings.model
            );
        }
        let mut settings = self.settings.clone();
        settings.model = model.to_string();
        match llm::build_provider(&provider_config(&settings)) {
            Ok(provider) => {
                let name = model.to_string();
                if self
                    .handle
                    .with_agent(move |agent| agent.set_provider(provider, name))
                    .is_none()
                {
                    return gone().to_string();
                }
                self.settings = settings;
                format!("Model set to {model} for the next requests.")
            }
            Err(e) => format!("Cannot use model {model}: {e}"),
        }
    }

    fn clear_memory(&mut self) {
        let _ = self.handle.with_agent(|agent| agent.clear_memory());
    }

    fn totals(&self) -> Tally {
        self.handle
            .with_agent(|agent| agent.totals())
            .unwrap_or_default()
    }

    fn finish(&mut self) -> String {
        if self.finished {
            return String::new();
        }
        self.finished = true;
        self.handle
            .with_agent(|agent| {
                agent
                    .take_history()
                    .map(|session| crate::ui::session_end::session_end_text(&session.finish()))
            })
            .flatten()
            .unwrap_or_default()
    }
}

/// `pai` / `pai auto`: the interactive session.
pub fn interactive(
    settings: &Settings,
    env: &Env,
    out: &Output,
    resume: Option<Resume>,
    entered: Option<Entered>,
) -> Result<i32, Error> {
    let rt = runtime()?;
    let linked = entered.as_ref().map(|e| e.linked().clone());
    let start = Start {
        stream: true,
        resume,
        housekeeping: true,
        linked: linked.as_ref(),
        // The first request is typed later: its listing is taken then, fresh.
        request_known: false,
    };
    let assembled = match assemble(settings, out, start) {
        Ok(assembled) => assembled,
        Err(e) => {
            // The session never started: its worktree goes with it.
            if let Some(entered) = entered {
                worktree::finish(entered, None, out);
            }
            return Err(e);
        }
    };
    let root = assembled.agent.workspace().root().to_path_buf();
    let opts = InteractiveOptions {
        appearance: Appearance::from_env(env),
        // Input history lives in the user's state directory, never in the project.
        history_root: crate::history::project_dir(&root),
    };
    let code = rt.block_on(async {
        let mut driver = Driver {
            handle: task::spawn(assembled.agent),
            settings: settings.clone(),
            root: root.clone(),
            finished: false,
        };
        let code = run_interactive(&mut driver, opts).await;
        // Whatever way the session ended, release it (summary already shown when it ended
        // normally), then end the task.
        let _ = driver.finish();
        let _ = driver.handle.ops.send(Op::Shutdown);
        let _ = (&mut driver.handle.done).await;
        code
    });
    if let Some(entered) = entered {
        worktree::finish(entered, None, out);
    }
    Ok(code)
}
