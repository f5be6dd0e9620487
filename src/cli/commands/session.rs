//! `pai` (and `pai --continue`, `pai resume SESSION`): the interactive session, driving the agent for the terminal UI.

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::redo::describe_redo;
use super::undo::describe_undo;
use crate::agent::events::{Frontend, Tally, TurnOutcome};
use crate::agent::turn::Agent;
use crate::cli::assemble::{Resume, assemble, history_error, provider_config, runtime};
use crate::config::{Env, Settings};
use crate::error::Error;
use crate::history::{self};
use crate::llm::{self};
use crate::ui::output::Output;
use crate::ui::{Appearance, InteractiveOptions, SessionDriver, SessionInfo, run_interactive};

/// The interactive session's view of the agent.
struct Driver {
    agent: Agent,
    settings: Settings,
    root: PathBuf,
    finished: bool,
}

impl SessionDriver for Driver {
    fn info(&self) -> SessionInfo {
        let history = self.agent.history();
        SessionInfo {
            root: self.root.clone(),
            provider: self.settings.provider.name().to_string(),
            model: self.settings.model.clone(),
            branch: history.and_then(|h| h.branch().map(str::to_string)),
            read_only: history.and_then(|h| h.read_only_reason().map(str::to_string)),
        }
    }

    fn turn<'a>(
        &'a mut self,
        request: &'a str,
        frontend: &'a dyn Frontend,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, TurnOutcome> {
        Box::pin(self.agent.turn(request, frontend, cancel))
    }

    fn undo(&mut self) -> Result<String, Error> {
        let (history, workspace) = self.agent.history_and_workspace();
        let history = history.ok_or_else(|| Error::failed("this session keeps no history"))?;
        let report = history.undo(workspace, false).map_err(history_error)?;
        Ok(describe_undo(&report))
    }

    fn redo(&mut self) -> Result<String, Error> {
        let (history, workspace) = self.agent.history_and_workspace();
        let history = history.ok_or_else(|| Error::failed("this session keeps no history"))?;
        let report = history.redo(workspace).map_err(history_error)?;
        Ok(describe_redo(&report))
    }

    fn log(&mut self) -> Result<String, Error> {
        let session = self.agent.history().map(|h| h.id().to_string());
        let sessions =
            history::log(&self.root, session.as_deref(), false).map_err(history_error)?;
        Ok(history::render_text(&sessions))
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
                self.agent.set_provider(provider, model.to_string());
                self.settings = settings;
                format!("Model set to {model} for the next requests.")
            }
            Err(e) => format!("Cannot use model {model}: {e}"),
        }
    }

    fn clear_memory(&mut self) {
        self.agent.clear_memory();
    }

    fn totals(&self) -> Tally {
        self.agent.totals()
    }

    fn finish(&mut self) -> String {
        if self.finished {
            return String::new();
        }
        self.finished = true;
        match self.agent.take_history() {
            Some(session) => session.finish().render(),
            None => String::new(),
        }
    }
}

/// `pai` / `pai auto`: the interactive session.
pub fn interactive(
    settings: &Settings,
    env: &Env,
    out: &Output,
    resume: Option<Resume>,
) -> Result<i32, Error> {
    let rt = runtime()?;
    let assembled = assemble(settings, out, true, resume)?;
    let root = assembled.agent.workspace().root().to_path_buf();
    let mut driver = Driver {
        agent: assembled.agent,
        settings: settings.clone(),
        root: root.clone(),
        finished: false,
    };
    let opts = InteractiveOptions {
        appearance: Appearance::from_env(env),
        history_root: Some(root.clone()),
    };
    let code = rt.block_on(run_interactive(&mut driver, opts));
    // Whatever way the session ended, release it (summary already shown when it ended normally).
    let _ = driver.finish();
    Ok(code)
}
