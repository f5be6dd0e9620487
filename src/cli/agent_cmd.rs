//! The commands that work on a project: `pai run`, the interactive session, `pai undo`,
//! `pai redo` and `pai log`. This is glue: it builds the workspace, the git session, the
//! provider and the agent from the settings and hands them to a frontend.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::agent::context::{Budget, MEMORY_TURNS, TurnMemo};
use crate::agent::journal;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::agent::events::{Frontend, Tally, TurnOutcome, TurnStatus};
use crate::agent::journal::Journal;
use crate::agent::turn::{Agent, AgentOptions};
use crate::config::{Env, Settings};
use crate::error::{Error, ErrorKind};
use crate::history::{self, HistoryError, RedoReport, Session, StartOptions, UndoReport};
use crate::llm::{self, LlmError, ProviderConfig};
use crate::ui::json::JsonFrontend;
use crate::ui::output::Output;
use crate::ui::text::TextFrontend;
use crate::ui::{Appearance, InteractiveOptions, SessionDriver, SessionInfo, run_interactive};
use crate::workspace::{Workspace, WorkspaceConfig, WorkspaceError};

/// Output token limit per call: enough for a few complete files.
const MAX_OUTPUT_TOKENS: u32 = 16_384;

/// The project the command runs in.
pub struct Project {
    /// Its root: the git top level, else the current directory.
    pub root: PathBuf,
    /// The current directory relative to the root, when pai was started below it.
    pub subdir: Option<String>,
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
    let root = workspace.root().to_path_buf();
    let subdir = std::fs::canonicalize(&cwd)
        .ok()
        .and_then(|cwd| {
            cwd.strip_prefix(&root)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
        })
        .filter(|s| !s.is_empty());
    Ok(Project {
        root,
        subdir,
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

/// Which session to continue instead of starting a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The latest session of this project (`pai --continue`).
    Latest,
    /// This one (`pai resume SESSION`).
    Session(String),
}

/// The git session to work in, the memory to restore, and the text saying which session
/// continues (or that a new one is stacked on the previous one).
struct Opened {
    session: Session,
    memory: Vec<TurnMemo>,
    /// The session continued in place (same id, same log).
    continued: bool,
    note: Option<String>,
}

fn open_session(root: &Path, resume: Option<Resume>) -> Result<Opened, Error> {
    let Some(resume) = resume else {
        let session = Session::start(root, StartOptions::now()).map_err(history_error)?;
        let note = session.stacked_on().map(|prev| {
            format!(
                "HEAD was on pai/{prev}, so this new session {} starts on top of session {prev}'s plans; `pai --continue` continues session {prev} instead",
                session.id()
            )
        });
        return Ok(Opened {
            session,
            memory: Vec::new(),
            continued: false,
            note,
        });
    };
    let sessions = journal::list_sessions(root);
    let id = match resume {
        // The session HEAD is on (where its plans are), else the newest one.
        Resume::Latest => history::head_session(root)
            .filter(|id| sessions.iter().any(|s| &s.id == id))
            .or_else(|| sessions.last().map(|s| s.id.clone()))
            .ok_or_else(|| {
                Error::usage("there is no session to continue in this project")
                    .with_hint("start one with `pai`")
            })?,
        Resume::Session(id) => {
            if !journal::is_session_id(&id) || !sessions.iter().any(|s| s.id == id) {
                return Err(
                    Error::usage(format!("there is no session {id} in this project"))
                        .with_hint("`pai resume` lists this project's sessions"),
                );
            }
            id
        }
    };
    let memory = journal::load_memory(root, &id, MEMORY_TURNS);
    let turns = match memory.len() {
        0 => "nothing to remember".to_string(),
        1 => "1 turn remembered".to_string(),
        n => format!("{n} turns remembered"),
    };
    let last = memory
        .last()
        .map(|m| format!(", the last: \"{}\"", first_line(&m.request)))
        .unwrap_or_default();
    match Session::resume(root, &id, StartOptions::now()).map_err(history_error)? {
        Some(session) => {
            let note = format!(
                "Continuing session {id} on {} ({turns}{last})",
                session.branch().unwrap_or("its branch")
            );
            Ok(Opened {
                session,
                memory,
                continued: true,
                note: Some(note),
            })
        }
        None => {
            let session = Session::start(root, StartOptions::now()).map_err(history_error)?;
            let note = format!(
                "Continuing the conversation of session {id} ({turns}{last}); it recorded no plans, so this session {} starts a new branch",
                session.id()
            );
            Ok(Opened {
                session,
                memory,
                continued: false,
                note: Some(note),
            })
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// `pai resume` without a session: this project's sessions, newest last.
pub fn list_sessions(out: &Output) -> Result<(), Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))?;
    let root = history::project_root(&cwd);
    let sessions = journal::list_sessions(&root);
    if sessions.is_empty() {
        out.line("No sessions in this project yet: start one with `pai`.");
        return Ok(());
    }
    let mut text = String::from("Sessions of this project (newest last):\n");
    for s in &sessions {
        let first = s
            .requests
            .first()
            .map(|r| format!("\"{}\"", first_line(r)))
            .unwrap_or_else(|| "(no requests)".into());
        let n = s.requests.len();
        text.push_str(&format!(
            "  {}  {n} request{}  {first}\n",
            s.id,
            if n == 1 { "" } else { "s" }
        ));
    }
    text.push_str("Continue one with `pai resume <SESSION>`, the latest with `pai --continue`.");
    out.line(&text);
    Ok(())
}

/// Build the agent for a session in the current project (continuing `resume` when given).
pub fn assemble(
    settings: &Settings,
    out: &Output,
    stream: bool,
    resume: Option<Resume>,
) -> Result<Assembled, Error> {
    let provider = llm::build_provider(&provider_config(settings)).map_err(llm_error)?;
    let Project {
        root,
        subdir,
        workspace,
    } = open_project(settings)?;
    if let Some(sub) = &subdir {
        out.note(&format!(
            "you are in {sub}/ of the project {}: pai works on the whole project and shows paths from its root; the model is told you are in {sub}/, so a file you name here goes to {sub}/",
            root.display()
        ));
    }
    let Opened {
        session,
        memory,
        continued,
        note,
    } = open_session(&root, resume)?;
    if let Some(note) = &note {
        out.note(note);
    }
    if let Some(reason) = session.read_only_reason() {
        out.warning(&format!("read-only session: {reason}"));
    }
    for leftover in session.leftover_snapshots() {
        out.warning(&leftover.describe());
    }
    // Every key in sight, not only the active provider's: all are kept out of logs, commits
    // and commands' environments.
    let secrets: Vec<String> = settings
        .api_key
        .iter()
        .chain(&settings.other_keys)
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
        let _ = if continued {
            j.session_continued(session.branch())
        } else {
            j.session_started(
                &root,
                settings.provider.name(),
                &settings.model,
                session.branch(),
            )
        };
        if !continued {
            // A new session carrying an older one's memory records it, so continuing this
            // one later gets it back too.
            for memo in &memory {
                let _ = j.memo(memo);
            }
        }
    }
    let options = AgentOptions {
        model: settings.model.clone(),
        temperature: settings.temperature,
        max_output_tokens: MAX_OUTPUT_TOKENS,
        stream,
        yes: settings.yes,
        dry_run: None,
        allow_run: settings.allow_run,
        run_allow: settings
            .run_allow
            .iter()
            .chain(
                settings
                    .project_run_allow
                    .get(&root.display().to_string())
                    .into_iter()
                    .flatten(),
            )
            .cloned()
            .collect(),
        settings_file: settings.settings_file.clone(),
        run_timeout: settings.run_timeout,
        require_sandbox: settings.require_sandbox,
        run_writable: settings.run_writable.clone(),
        secrets,
        budget: Budget::default(),
        subdir,
    };
    let hub = super::mcp_cmd::session_hub(settings, &workspace, options.secrets.clone(), out);
    let mut agent = Agent::new(provider, workspace, Some(session), journal, options);
    agent.set_mcp(hub);
    agent.restore_memory(memory);
    Ok(Assembled { agent })
}

/// The exit code of a finished turn.
pub fn turn_exit_code(outcome: &TurnOutcome) -> i32 {
    if outcome.config_hint.is_some() {
        return 2;
    }
    match outcome.status {
        TurnStatus::Answered | TurnStatus::Success | TurnStatus::Planned => 0,
        TurnStatus::Failed | TurnStatus::Rejected | TurnStatus::Interrupted => 1,
    }
}

fn describe_undo(report: &UndoReport) -> String {
    let mut text = format!(
        "Undid plan {} of session {} ({}): {}\n",
        report.plan, report.session, report.commit, report.request
    );
    for f in &report.restored {
        text.push_str(&format!("  restored  {f}\n"));
    }
    for f in &report.removed {
        text.push_str(&format!("  removed   {f}\n"));
    }
    for f in &report.from_trash {
        text.push_str(&format!("  recovered {f} from .pai_history/trash\n"));
    }
    if let Some(saved) = &report.saved {
        text.push_str(&format!("  your previous state is saved at {saved}\n"));
    }
    text.push_str("Run `pai redo` (or /redo) to re-apply it.");
    text
}

fn describe_redo(report: &RedoReport) -> String {
    let mut text = format!(
        "Re-applied plan {} of session {} ({}): {}",
        report.plan, report.session, report.commit, report.request
    );
    for f in report.written.iter().chain(&report.from_trash) {
        text.push_str(&format!("\n  wrote   {f}"));
    }
    for f in &report.removed {
        text.push_str(&format!("\n  removed {f}"));
    }
    text
}

/// `pai undo`.
pub fn undo(settings: &Settings, out: &Output, force: bool) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::undo(&project.root, &project.workspace, force).map_err(history_error)?;
    out.line(&describe_undo(&report));
    Ok(())
}

/// `pai discard`.
pub fn discard(
    settings: &Settings,
    out: &Output,
    session: Option<&str>,
    force: bool,
) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::discard(&project.root, &project.workspace, session, force)
        .map_err(history_error)?;
    let plans = match report.undone.len() {
        0 => "no plan to undo".to_string(),
        1 => "1 plan undone".to_string(),
        n => format!("{n} plans undone"),
    };
    let mut text = format!(
        "Discarded session {} ({plans}): the files it touched are as you had them, your own uncommitted edits included.",
        report.session
    );
    if !report.head.is_empty() {
        text.push_str(&format!(
            "
HEAD is back on {}.",
            report.head
        ));
    }
    text.push_str(&format!(
        "
The session's commits are kept at {} (`git log -p {}`).",
        report.kept_at, report.kept_at
    ));
    out.line(&text);
    Ok(())
}

/// `pai redo`.
pub fn redo(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::redo(&project.root, &project.workspace).map_err(history_error)?;
    out.line(&describe_redo(&report));
    Ok(())
}

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
    env: &Env,
    out: &Output,
    request: &str,
    json: bool,
    resume: Option<Resume>,
    plan_only: bool,
) -> Result<i32, Error> {
    if request.trim().is_empty() {
        return Err(Error::usage("the request is empty")
            .with_hint("pai run \"add a power operation to calculator.py\""));
    }
    let rt = runtime()?;
    let mut assembled = assemble(settings, out, false, resume)?;
    // Without --yes a plan needs someone to approve it; with no terminal to ask at (or
    // --json, which never asks) the turn is a dry run: the plan is shown, nothing carried out.
    let nobody_to_ask = json || !std::io::stdin().is_terminal();
    let dry_run = if plan_only {
        Some("dry run (--plan): the plan above was not carried out; run again without --plan to carry it out".to_string())
    } else if !settings.yes && nobody_to_ask {
        Some("not carried out: there is no terminal to approve the plan at; pass --yes to carry it out (--allow-run for its RUN commands), or --plan to only see plans".to_string())
    } else {
        None
    };
    assembled.agent.set_dry_run(dry_run);
    let frontend: Box<dyn Frontend> = if json {
        Box::new(JsonFrontend::new())
    } else {
        Box::new(TextFrontend::new(Appearance::from_env(env)))
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let outcome = rt.block_on(async {
        // Ctrl+C, SIGTERM and SIGHUP stop the turn rather than the process: the turn unwinds
        // (a running command is stopped, a commit under way finishes and releases the index
        // lock), so a script's timeout or a closed terminal never leaves `.git/index.lock`.
        let watcher = cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                if tokio::signal::ctrl_c().await.is_ok() {
                    watcher.cancel();
                }
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            watcher.cancel();
        });
        let outcome = assembled
            .agent
            .turn(request, frontend.as_ref(), &cancel)
            .await;
        ctrl_c.abort();
        outcome
    });
    if let Some(session) = assembled.agent.take_history() {
        let summary = session.finish();
        if !json && summary.plans > 0 {
            out.note(&summary.render());
        }
    }
    if outcome.status == TurnStatus::Planned && !plan_only {
        // The request was not done: a script must not take this for success.
        return Ok(1);
    }
    Ok(turn_exit_code(&outcome))
}
