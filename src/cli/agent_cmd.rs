//! The commands that work on a project: `pai run`, the interactive session, `pai undo`,
//! `pai redo` and `pai log`. This is glue: it builds the workspace, the git session, the
//! provider and the agent from the settings and hands them to a frontend.

use std::path::{Path, PathBuf};

use crate::agent::context::Budget;
use crate::agent::events::{TurnOutcome, TurnStatus};
use crate::agent::journal::Journal;
use crate::agent::turn::{Agent, AgentOptions};
use crate::config::Settings;
use crate::error::{Error, ErrorKind};
use crate::history::{self, HistoryError, Session, StartOptions};
use crate::llm::{self, LlmError, ProviderConfig};
use crate::ui::output::Output;
use crate::workspace::{Workspace, WorkspaceConfig, WorkspaceError};

/// Output token limit per call: enough for a few complete files.
const MAX_OUTPUT_TOKENS: u32 = 16_384;

/// The project the command runs in.
pub struct Project {
    /// Its root: the git top level, else the current directory.
    pub root: PathBuf,
    /// The gate over it.
    pub workspace: Workspace,
}

/// Find the project root from the current directory and open the workspace gate over it.
pub fn open_project(settings: &Settings) -> Result<Project, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))?;
    let root = history::project_root(&cwd);
    let cfg = WorkspaceConfig {
        extra_deny: settings.extra_deny.clone(),
        modify_threshold: settings.modify_threshold,
        modify_max_ratio: settings.modify_max_ratio,
        ..WorkspaceConfig::default()
    };
    let workspace = Workspace::open(&root, cfg).map_err(workspace_error)?;
    Ok(Project {
        root: workspace.root().to_path_buf(),
        workspace,
    })
}

/// Convert a workspace failure for the user.
pub fn workspace_error(e: WorkspaceError) -> Error {
    Error::failed(e.to_string())
}

/// Convert a history failure for the user (refusals carry a hint).
pub fn history_error(e: HistoryError) -> Error {
    let hint = e.hint().map(str::to_string);
    let err = Error::failed(e.to_string());
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// Convert a provider failure: configuration problems (no key, bad URL) exit 2.
pub fn llm_error(e: LlmError) -> Error {
    // A rejected key, an unknown model or a wrong base URL is fixed in the configuration,
    // not by trying again.
    let kind = match (&e, e.kind()) {
        (_, llm::LlmErrorKind::Config) | (LlmError::Auth { .. } | LlmError::NotFound { .. }, _) => {
            ErrorKind::Config
        }
        _ => ErrorKind::Failed,
    };
    Error::new(kind, e.to_string()).with_hint(e.hint())
}

/// The provider configuration from the settings.
pub fn provider_config(settings: &Settings) -> ProviderConfig {
    let mut cfg = ProviderConfig::new(settings.provider, settings.model.clone());
    cfg.base_url = settings.base_url.clone();
    cfg.api_key = settings.api_key.as_ref().map(|k| k.expose().to_string());
    cfg
}

/// Everything a session needs, assembled.
pub struct Assembled {
    /// The agent.
    pub agent: Agent,
}

/// Build the agent for a session in the current project.
pub fn assemble(settings: &Settings, out: &Output, stream: bool) -> Result<Assembled, Error> {
    let provider = llm::build_provider(&provider_config(settings)).map_err(llm_error)?;
    let Project { root, workspace } = open_project(settings)?;
    let session = match Session::start(&root, StartOptions::now()) {
        Ok(s) => s,
        Err(e) => return Err(history_error(e)),
    };
    if let Some(reason) = session.read_only_reason() {
        out.warning(&format!("read-only session: {reason}"));
    }
    let secrets: Vec<String> = settings
        .api_key
        .iter()
        .map(|k| k.expose().to_string())
        .collect();
    let journal = match Journal::open(&root, session.id(), secrets.clone()) {
        Ok(j) => Some(j),
        Err(e) => {
            out.warning(&format!(
                "cannot write the session log under {}: {e}",
                root.join(".pai_history").display()
            ));
            None
        }
    };
    if let Some(j) = &journal {
        let _ = j.session_started(
            &root,
            settings.provider.name(),
            &settings.model,
            session.branch(),
        );
    }
    let options = AgentOptions {
        model: settings.model.clone(),
        temperature: settings.temperature,
        max_output_tokens: MAX_OUTPUT_TOKENS,
        stream,
        yes: settings.yes,
        allow_run: settings.allow_run,
        run_allow: settings.run_allow.clone(),
        run_timeout: settings.run_timeout,
        require_sandbox: settings.require_sandbox,
        secrets,
        budget: Budget::default(),
    };
    let agent = Agent::new(provider, workspace, Some(session), journal, options);
    Ok(Assembled { agent })
}

/// The exit code of a finished turn.
pub fn turn_exit_code(outcome: &TurnOutcome) -> i32 {
    match outcome.status {
        TurnStatus::Answered | TurnStatus::Success => 0,
        TurnStatus::Failed | TurnStatus::Rejected | TurnStatus::Interrupted => 1,
    }
}

/// `pai undo`.
pub fn undo(settings: &Settings, out: &Output, force: bool) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::undo(&project.root, &project.workspace, force).map_err(history_error)?;
    out.line(&format!(
        "Undid plan {} of session {} ({}): {}",
        report.plan, report.session, report.commit, report.request
    ));
    for f in &report.restored {
        out.line(&format!("  restored {f}"));
    }
    for f in &report.removed {
        out.line(&format!("  removed  {f}"));
    }
    for f in &report.from_trash {
        out.line(&format!("  recovered {f} from .pai_history/trash"));
    }
    if let Some(saved) = &report.saved {
        out.line(&format!("  your previous state is saved at {saved}"));
    }
    out.line("Run `pai redo` to re-apply it.");
    Ok(())
}

/// `pai redo`.
pub fn redo(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::redo(&project.root, &project.workspace).map_err(history_error)?;
    out.line(&format!(
        "Re-applied plan {} of session {} ({}): {}",
        report.plan, report.session, report.commit, report.request
    ));
    for f in report.written.iter().chain(&report.from_trash) {
        out.line(&format!("  wrote   {f}"));
    }
    for f in &report.removed {
        out.line(&format!("  removed {f}"));
    }
    Ok(())
}

/// `pai log`.
pub fn log(
    root: &Path,
    out: &Output,
    session: Option<&str>,
    patch: bool,
    json: bool,
) -> Result<(), Error> {
    let sessions = history::log(root, session, patch).map_err(history_error)?;
    if json {
        let text = history::render_json(&sessions)
            .map_err(|e| Error::failed(format!("cannot encode the log: {e}")))?;
        out.line(&text);
    } else {
        out.raw(history::render_text(&sessions).as_bytes());
    }
    Ok(())
}

/// A frontend for `pai run`: events as JSON lines (`--json`) or plain lines, approvals from the
/// flags only (there is no one to ask).
struct RunFrontend {
    json: bool,
    yes: bool,
}

impl crate::agent::events::Frontend for RunFrontend {
    fn event(&self, event: &crate::agent::events::Event) {
        use crate::agent::events::Event;
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        if self.json {
            if !matches!(event, Event::TextDelta { .. } | Event::Thinking { .. })
                && let Ok(line) = serde_json::to_string(event)
            {
                let _ = writeln!(stdout, "{line}");
            }
            return;
        }
        let text = match event {
            Event::Thinking { .. } | Event::TextDelta { .. } => return,
            Event::Usage { call, usage } => {
                format!("Tokens (call {call}): {} -> {}", usage.input, usage.output)
            }
            Event::Answer { text } => text.clone(),
            Event::Plan { reply, steps, .. } => {
                let mut s = format!("{reply}\nPlan:");
                for (i, st) in steps.iter().enumerate() {
                    s.push_str(&format!(
                        "\n  {}. {} {}  {}",
                        i + 1,
                        st.step.action(),
                        st.step.target().lines().next().unwrap_or_default(),
                        st.purpose
                    ));
                }
                s
            }
            Event::Step(r) => {
                let mut s = format!(
                    "[{}] {} {}: {}",
                    if r.ok { "ok" } else { "FAILED" },
                    r.action,
                    r.target.lines().next().unwrap_or_default(),
                    r.output
                );
                if let Some(v) = &r.file_view {
                    s.push('\n');
                    s.push_str(&v.text);
                }
                s
            }
            Event::Notice { text } => format!("note: {text}"),
            Event::Committed { commit, branch } => format!("Committed {commit} on {branch}"),
            Event::Finished {
                status,
                message,
                calls,
                input_tokens,
                output_tokens,
                ..
            } => {
                format!(
                    "{status:?}: {message}\nTurn: {calls} call(s), {input_tokens} -> {output_tokens} tokens"
                )
            }
        };
        let _ = writeln!(stdout, "{text}");
    }

    fn approve_plan(
        &self,
        _steps: &[crate::agent::plan::PlannedStep],
    ) -> crate::agent::events::Approval {
        if self.yes {
            crate::agent::events::Approval::Yes
        } else {
            crate::agent::events::Approval::No
        }
    }

    fn approve_run(&self, _command: &str, _confined: bool) -> bool {
        false
    }

    fn confirm_rm(&self, _path: &str, _recursive: bool) -> bool {
        false
    }
}

/// Build a runtime for the commands that talk to a model.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::failed(format!("cannot start the async runtime: {e}")))
}

/// `pai run "<request>"`: one turn, no terminal needed.
pub fn run_once(
    settings: &Settings,
    out: &Output,
    request: &str,
    json: bool,
) -> Result<i32, Error> {
    if request.trim().is_empty() {
        return Err(Error::usage("the request is empty")
            .with_hint("pai run \"add a power operation to calculator.py\""));
    }
    let rt = runtime()?;
    let mut assembled = assemble(settings, out, false)?;
    let frontend = RunFrontend {
        json,
        yes: settings.yes,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let outcome = rt.block_on(async {
        let watcher = cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                watcher.cancel();
            }
        });
        let outcome = assembled.agent.turn(request, &frontend, &cancel).await;
        ctrl_c.abort();
        outcome
    });
    if let Some(session) = assembled.agent.take_history() {
        let summary = session.finish();
        if !json && summary.plans > 0 {
            out.note(&summary.render());
        }
    }
    Ok(turn_exit_code(&outcome))
}
