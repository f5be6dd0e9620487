//! What every command that works on a project needs: the project opened (root, workspace),
//! errors of the lower layers turned into the CLI's, the provider's settings, and the agent
//! assembled for a session (new or continued).

use std::path::{Path, PathBuf};

use crate::agent::context::{Budget, MEMORY_TURNS, TurnMemo};
use crate::agent::journal;

use crate::agent::events::{TurnOutcome, TurnStatus};
use crate::agent::journal::Journal;
use crate::agent::turn::{Agent, AgentOptions};
use crate::config::Settings;
use crate::error::{Error, ErrorKind};
use crate::history::{self, HistoryError, Session, StartOptions};
use crate::llm::{self, LlmError, ProviderConfig};
use crate::ui::output::Output;
use crate::workspace::{Workspace, WorkspaceConfig, WorkspaceError};

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
    open_project_with(settings, |root, mut cfg| {
        // Where a writing pai registers, so temporaries are swept only after a crash.
        cfg.state_dir = history::project_dir(root);
        Workspace::open(root, cfg)
    })
}

/// [`open_project`] for a command that only reads the project (`pai map`): no sweep for
/// temporaries of crashed runs, a walk of the whole tree it has no use for.
pub fn open_project_to_read(settings: &Settings) -> Result<Project, Error> {
    open_project_with(settings, Workspace::open_unswept)
}

fn open_project_with(
    settings: &Settings,
    open: fn(&Path, WorkspaceConfig) -> Result<Workspace, WorkspaceError>,
) -> Result<Project, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))?;
    let root = history::project_root(&cwd);
    let workspace = open(&root, workspace_config(settings)).map_err(workspace_error)?;
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

/// The workspace as the settings configure it.
fn workspace_config(settings: &Settings) -> WorkspaceConfig {
    WorkspaceConfig {
        extra_deny: settings.extra_deny.clone(),
        modify_threshold: settings.modify_threshold,
        modify_max_ratio: settings.modify_max_ratio,
        ..WorkspaceConfig::default()
    }
}

/// Finish (or clean up after) a history operation an earlier pai process was killed in,
/// before this command reads or writes history, and say so in one line. Nothing to do
/// outside a project with history.
pub fn recover_interrupted(out: &Output) -> Result<(), Error> {
    let Ok(cwd) = std::env::current_dir() else {
        return Ok(());
    };
    // The project as the workspace names it (canonical), looked up before anything is opened:
    // nearly every command finds nothing to recover.
    let Ok(root) = std::fs::canonicalize(history::project_root(&cwd)) else {
        return Ok(());
    };
    if !history::interrupted(&root) {
        return Ok(());
    }
    // Unswept: the command opens the project again (and sweeps then, if it writes), and a
    // second walk of the whole tree on every command costs more than the check it serves.
    let Ok(workspace) = Workspace::open_unswept(&root, WorkspaceConfig::default()) else {
        return Ok(());
    };
    // The killed process may have left a temporary of an atomic write beside a file it was
    // replacing: sweep first, so none is left, and none keeps a folder the plan made (which
    // the roll back removes) from being empty.
    workspace.stale_temps_removed();
    if let Some(line) = history::recover(workspace.root(), &workspace).map_err(history_error)? {
        out.note(&line);
    }
    Ok(())
}

/// Convert a workspace failure for the user.
pub fn workspace_error(e: WorkspaceError) -> Error {
    Error::failed(e.to_string())
}

/// Convert a history failure for the user (refusals carry a hint).
pub fn history_error(e: HistoryError) -> Error {
    let hint = e.hint().map(str::to_string);
    // Undo where there is no session to undo in is a usage error (exit 2), like any command
    // given where it does not apply; a refusal of a real undo (files changed) exits 1.
    let err = match &e {
        HistoryError::NoSession { .. } => Error::usage(e.to_string()),
        _ => Error::failed(e.to_string()),
    };
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
    cfg.request_timeout = settings.model_call.request_timeout;
    cfg.structured_output = settings.model_call.structured_output;
    cfg.compat_file = dirs::state_dir().map(|d| d.join("pai/servers.json"));
    cfg.fit_output_to_server =
        settings.model_call.max_output_tokens_source == crate::config::Source::Default;
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
/// continues (or that a new one continues the line of work HEAD is on).
struct Opened {
    session: Session,
    memory: Vec<TurnMemo>,
    /// The session continued in place (same id, same log).
    continued: bool,
    note: Option<String>,
}

/// A new worktree session, in its worktree: its own branch, nothing to continue.
fn open_linked(root: &Path, linked: &history::Linked) -> Result<Opened, Error> {
    let session = history::sessions::start_session(root, linked, StartOptions::now())
        .map_err(history_error)?;
    Ok(Opened {
        session,
        memory: Vec::new(),
        continued: false,
        note: None,
    })
}

fn open_session(root: &Path, resume: Option<Resume>) -> Result<Opened, Error> {
    let Some(resume) = resume else {
        let session = Session::start(root, StartOptions::now()).map_err(history_error)?;
        let note = session.continues_line().map(|line| {
            format!(
                "HEAD is on {line}: this session's plans go on it too (one line of work; `pai undo` walks back across sessions); `pai --continue` also brings back the last session's memory"
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
                "Continuing the conversation of session {id} ({turns}{last}); it {}, so this session {} records its plans anew",
                history::why_no_branch(root, &id),
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

/// How a session is assembled.
pub struct Start<'a> {
    /// Stream the model's text.
    pub stream: bool,
    /// The session to continue.
    pub resume: Option<Resume>,
    /// Run the bounded pruning pass (not for a dry run, which touches nothing in `.git`).
    pub housekeeping: bool,
    /// The worktree session pai entered.
    pub linked: Option<&'a history::Linked>,
    /// The first request is known now (`pai run`): the project's listing for its map starts
    /// while the session opens.
    pub request_known: bool,
}

/// Build the agent for a session in the current project, as `start` says.
pub fn assemble(settings: &Settings, out: &Output, start: Start<'_>) -> Result<Assembled, Error> {
    let Start {
        stream,
        resume,
        housekeeping,
        linked,
        request_known,
    } = start;
    let provider = llm::build_provider(&provider_config(settings)).map_err(llm_error)?;
    let Project {
        root,
        subdir,
        workspace,
    } = open_project(settings)?;
    let listing = request_known
        .then(|| crate::agent::listing::ListingSoon::start(&root, workspace_config(settings)));
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
    } = match (linked, resume) {
        (Some(linked), None) => open_linked(&root, linked)?,
        (_, resume) => open_session(&root, resume)?,
    };
    announce_session(out, &session, note.as_deref());
    if housekeeping {
        tidy(out, &root, &session, settings.history_days);
    }
    let secrets = secrets(settings);
    let journal = open_journal(&root, &session, secrets.clone(), out);
    let options = agent_options(settings, &root, stream, secrets, subdir);
    let hub = super::hub::session_hub(settings, &workspace, options.secrets.clone(), out);
    let mut agent = Agent::new(provider, workspace, Some(session), journal, options);
    if let Some(listing) = listing {
        agent.use_listing(listing);
    }
    agent.set_mcp(hub);
    agent.open_session(continued, memory);
    Ok(Assembled { agent })
}

/// Tell the user, before the first prompt, which session this is and what holds it back: it
/// cannot record plans, or earlier runs left snapshots behind.
fn announce_session(out: &Output, session: &Session, note: Option<&str>) {
    if let Some(note) = note {
        out.note(note);
    }
    if let Some(reason) = session.read_only_reason() {
        out.warning(&format!("read-only session: {reason}"));
    }
    for leftover in session.leftover_snapshots() {
        out.warning(&crate::ui::leftover_text::leftover_snapshot_text(&leftover));
    }
}

/// At a writable session's start: a short pruning pass (bounded in time, so a big backlog
/// never holds the session up; `pai gc` does the rest), and, once per project, the note that
/// no git identity is set.
fn tidy(out: &Output, root: &Path, session: &Session, days: u32) {
    if session.read_only_reason().is_some() {
        return;
    }
    // Pruning is housekeeping: a failure here must not stop the session.
    let _ = history::gc(
        root,
        history::GcOptions {
            days,
            budget: Some(std::time::Duration::from_millis(200)),
            now: chrono::Local::now(),
        },
    );
    if session.lacks_identity() && history::note_once(root, "identity-noted") {
        out.note(
            "no git identity is set, so pai's commits are authored `pai <pai@localhost>`; set yours with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com` and pai uses it",
        );
    }
}

/// Every key in sight, not only the active provider's: all are kept out of logs, commits and
/// commands' environments.
pub(crate) fn secrets(settings: &Settings) -> Vec<String> {
    settings
        .api_key
        .iter()
        .chain(&settings.other_keys)
        .map(|k| k.expose().to_string())
        .chain(crate::history::key_forms())
        .collect()
}

/// The session log; one that cannot be written is warned about, not fatal: the session works
/// without it.
fn open_journal(
    root: &Path,
    session: &Session,
    secrets: Vec<String>,
    out: &Output,
) -> Option<Journal> {
    match Journal::open(root, session.id(), secrets) {
        Ok(j) => Some(j),
        Err(e) => {
            out.warning(&format!(
                "cannot write the session log under {}: {e}",
                root.join(crate::layout::STATE_DIR).display()
            ));
            None
        }
    }
}

/// The agent's options from the settings; the RUN allow-list is the global rules followed by
/// this project's.
fn agent_options(
    settings: &Settings,
    root: &Path,
    stream: bool,
    secrets: Vec<String>,
    subdir: Option<String>,
) -> AgentOptions {
    AgentOptions {
        model: settings.model.clone(),
        temperature: settings.temperature,
        max_output_tokens: settings.model_call.max_output_tokens,
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
        budget: Budget {
            context_tokens: settings.context_tokens,
            ..Budget::default()
        },
        subdir,
    }
}

/// The exit code of a finished turn.
pub fn turn_exit_code(outcome: &TurnOutcome) -> i32 {
    if outcome.config_hint.is_some() {
        return 2;
    }
    match outcome.status {
        TurnStatus::Answered | TurnStatus::Success | TurnStatus::Planned => 0,
        TurnStatus::Failed
        | TurnStatus::Rejected
        | TurnStatus::NotApproved
        | TurnStatus::Interrupted => 1,
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

/// The first line of a request, for one-line listings.
pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}
