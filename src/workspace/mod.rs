//! The guarded workspace (SPEC sections 4 and 5): every byte pai reads or writes in a project
//! goes through here.
//!
//! One gate ([`Workspace::check`]) confines paths to the project root, refuses the deny-list, and
//! resolves symlinks; the operations then open what the gate approved relative to a descriptor
//! on the root, never following a symlink, so a swap after the check cannot redirect them.
//! Writes are atomic and keep permission bits and line endings; MODIFY applies exact
//! search/replace edits under a diff guard. Each mutating operation returns [`FileChange`]s
//! saying what changed, for the history layer to commit.
//!
//! The module knows nothing of models, terminals or git: callers decide the root (the git top
//! level or the current directory) and what to do with the results.
//!
//! Layout: `gate` (path policy), `deny` (deny-list), `beneath` (use-time opening), `atomic`
//! (atomic writes and stale temporaries), `guard` (diffs and the diff guard), `edits`
//! (search/replace), `text` (encodings and line endings), `walk` (directory walking),
//! `scan` (parallel tree reading), `status` (the status pass before and after a RUN), `listing` (TREE, LIST_PATH, project files), `search` (SEARCH), `ops` (the file commands),
//! `change` (result types), `sys` (system calls).

mod atomic;
mod beneath;
mod change;
mod config;
mod corpus;
mod deny;
mod diff;
mod edits;
mod error;
mod gate;
mod guard;
mod inspect;
mod kept_listing;
mod later;
mod ledger;
mod listing;
mod ops;
mod scan;
mod search;
mod state;
mod status;
mod status_walk;
mod sys;
mod text;
mod walk;
mod writers;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use change::{ChangeKind, EditPreview, FileChange, LinesShown, Probe, ReadContent, ReadOutput};
pub use config::{ENV_MODIFY_MAX_RATIO, ENV_MODIFY_THRESHOLD, WorkspaceConfig};
pub use corpus::Corpus;
pub use edits::{Edit, Modification, edit_text};
pub use error::WorkspaceError;
pub use gate::RelPath;
pub use inspect::StatSnapshot;
pub use kept_listing::Keeping;
pub use later::LaterState;
pub use state::{STATE_DIR, StateDir};
pub use status::{Later, StatusPass};
pub use status_walk::Tracked;
pub use sys::Stamp;
pub use sys::{FileStat, SysCounts, counts as sys_counts};

/// A callback run between the gate check and the use of a path (tests use it to swap in a
/// symlink at the worst moment).
type AfterCheckHook = Arc<dyn Fn(&RelPath) + Send + Sync>;

/// A project directory behind the gate. Cheap to share: all methods take `&self`, and the type
/// is `Send + Sync`.
pub struct Workspace {
    root: PathBuf,
    gate: gate::Gate,
    cfg: WorkspaceConfig,
    ignores: walk::GlobalIgnores,
    /// The sweep for temporaries of crashed runs, running in the background: it walks the
    /// whole tree, and start-up must not wait for that on a big project.
    stale_sweep: std::sync::Mutex<StaleSweep>,
    /// Where this process registers before its first atomic write (`None`: no state dir).
    writers: Option<writers::Registry>,
    /// This process's record, once registered (removed when the workspace is dropped).
    writer: std::sync::OnceLock<Option<writers::Record>>,
    after_check: Option<AfterCheckHook>,
    /// Test hook run by MODIFY after reading and editing, just before replacing the file.
    before_replace: Option<AfterCheckHook>,
    /// What the current plan started from, for the diff guard over the whole plan.
    ledger: ledger::Ledger,
}

/// The background sweep for stale temporaries, or its result once known.
enum StaleSweep {
    /// Not started: the workspace was opened with [`Workspace::open_unswept`].
    NotStarted,
    Running(std::thread::JoinHandle<usize>),
    Done(usize),
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// Open the project at `root` (made canonical). Removes temporary files a crashed pai run
    /// left behind. Fails when the root is not a readable directory, its path is not UTF-8, or
    /// the configured deny patterns are invalid.
    pub fn open(root: &Path, cfg: WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        let ws = Workspace::open_unswept(root, cfg)?;
        ws.start_stale_sweep();
        Ok(ws)
    }

    /// [`Workspace::open`] without the sweep for stale temporaries, which walks the whole
    /// tree: for a command that only reads the project, or opens it a second time, where the
    /// walk would be paid for nothing. [`Workspace::stale_temps_removed`] sweeps on demand.
    pub fn open_unswept(root: &Path, cfg: WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        let shown = root.to_string_lossy().into_owned();
        let canon = std::fs::canonicalize(root)
            .map_err(|e| WorkspaceError::io("open the project at", &shown, e))?;
        let Some(root_str) = canon.to_str().map(str::to_string) else {
            return Err(WorkspaceError::failed(
                "open the project at",
                &shown,
                "its path is not valid UTF-8",
            ));
        };
        let dir = std::fs::File::open(&canon)
            .map_err(|e| WorkspaceError::io("open the project at", &root_str, e))?;
        let fd: OwnedFd = dir.into();
        let st = sys::fstat(fd.as_fd())
            .map_err(|e| WorkspaceError::io("open the project at", &root_str, e))?;
        if st.kind != sys::Kind::Dir {
            return Err(WorkspaceError::failed(
                "open the project at",
                &root_str,
                "it is not a directory",
            ));
        }
        let mut deny =
            deny::DenyList::new(&cfg.extra_deny).map_err(|reason| WorkspaceError::Config {
                name: "extra_deny".into(),
                value: cfg.extra_deny.join(", "),
                reason,
            })?;
        if is_home(&canon) {
            deny = deny.at_home();
        }
        let later = crate::layout::configured_runs_later(&canon);
        deny = deny.with_later(later.into_iter().map(|(path, _)| path));
        let ignores = walk::GlobalIgnores::load(&fd);
        let writers = cfg.state_dir.as_deref().map(writers::Registry::new);
        Ok(Workspace {
            root: canon,
            gate: gate::Gate::new(fd, root_str, deny),
            cfg,
            ignores,
            stale_sweep: std::sync::Mutex::new(StaleSweep::NotStarted),
            writers,
            writer: std::sync::OnceLock::new(),
            after_check: None,
            before_replace: None,
            ledger: ledger::Ledger::default(),
        })
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The settings in use.
    pub fn config(&self) -> &WorkspaceConfig {
        &self.cfg
    }

    /// Start the sweep for temporaries of crashed runs on a thread of its own, unless it has
    /// started already. The sweep only removes temporaries whose writing process is gone, so
    /// it can run while this process writes its own.
    fn start_stale_sweep(&self) {
        let Ok(mut sweep) = self.stale_sweep.lock() else {
            return;
        };
        if !matches!(*sweep, StaleSweep::NotStarted) {
            return;
        }
        // Only a process that died while writing leaves temporaries: without one, no walk.
        let gone = match self.writers.as_ref().map(writers::Registry::left) {
            Some(writers::Left::Nothing) => {
                *sweep = StaleSweep::Done(0);
                return;
            }
            Some(writers::Left::Crashed(gone)) => gone,
            Some(writers::Left::Unknown) | None => Vec::new(),
        };
        let Ok(fd) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            *sweep = StaleSweep::Done(0);
            return;
        };
        let deny = self.gate.deny.clone();
        let registry = self.writers.clone();
        *sweep = match std::thread::Builder::new()
            .name("pai-stale-sweep".into())
            .spawn(move || {
                let removed = atomic::remove_stale(fd.as_fd(), &deny);
                if let Some(r) = registry {
                    r.forget(&gone);
                }
                removed
            }) {
            Ok(handle) => StaleSweep::Running(handle),
            // No thread: `stale_temps_removed` sweeps when asked.
            Err(_) => StaleSweep::NotStarted,
        };
    }

    /// Register this process as one that writes in the project (once), before its first
    /// atomic write: should it die mid-write, the next pai knows to sweep. A registry that
    /// cannot be written only loses that: the write goes ahead.
    fn register_writer(&self) {
        self.writer
            .get_or_init(|| self.writers.as_ref().and_then(|r| r.register().ok()));
    }

    /// How many stale temporary files the sweep removed: waits for the sweep
    /// [`Workspace::open`] started to finish, or sweeps now when none was started.
    pub fn stale_temps_removed(&self) -> usize {
        let Ok(mut sweep) = self.stale_sweep.lock() else {
            return 0;
        };
        let done = match std::mem::replace(&mut *sweep, StaleSweep::Done(0)) {
            StaleSweep::NotStarted => sys::reopen_dir(self.gate.root_fd.as_fd())
                .map_or(0, |fd| atomic::remove_stale(fd.as_fd(), &self.gate.deny)),
            StaleSweep::Running(handle) => handle.join().unwrap_or(0),
            StaleSweep::Done(n) => n,
        };
        *sweep = StaleSweep::Done(done);
        done
    }

    /// A new plan begins: the diff guard now judges each file's change against what it holds
    /// at this moment, over every step until the next call (the agent calls this once per
    /// plan, before its first step).
    pub fn begin_plan(&self) {
        self.ledger.clear();
    }

    /// The first word of a shell command that names a protected path, described, or `None`
    /// (see the deny-list: secrets, key material, git internals, pai's own state and
    /// configuration). RUN refuses such a command before it runs.
    pub fn protected_in_command(&self, command: &str) -> Option<String> {
        self.gate
            .deny
            .protected_in_command(command)
            .map(|(word, why)| format!("`{word}` is a protected path {why}"))
    }

    /// Run the gate alone: lexical rules, deny-list, and resolution of every existing prefix
    /// (a final symlink is resolved too). Plans are checked with this before anything runs.
    pub fn check(&self, path: &str) -> Result<RelPath, WorkspaceError> {
        self.gate.check(path, true)
    }

    /// Whether a relative `/`-separated path falls under the deny-list (any segment, lookalikes
    /// included). The history layer uses it to never commit such a path.
    pub fn is_denied(&self, rel: &str) -> bool {
        self.gate
            .deny
            .path(rel.trim_start_matches("./").trim_end_matches('/'))
            .is_some()
    }

    /// Testing aid: run `hook` after every gate check, before the path is used. Not for
    /// production callers.
    #[doc(hidden)]
    pub fn with_after_check_hook(
        mut self,
        hook: impl Fn(&RelPath) + Send + Sync + 'static,
    ) -> Self {
        self.after_check = Some(Arc::new(hook));
        self
    }

    /// Testing aid: run `hook` inside MODIFY after the file was read and edited, just before it
    /// is replaced (tests use it to change the file under pai). Never set by production
    /// callers.
    #[doc(hidden)]
    pub fn with_before_replace_hook(
        mut self,
        hook: impl Fn(&RelPath) + Send + Sync + 'static,
    ) -> Self {
        self.before_replace = Some(Arc::new(hook));
        self
    }

    /// Testing aid: skip the `openat2` fast path of the gate and always resolve component by
    /// component (the path taken on kernels or sandboxes without `openat2`).
    #[doc(hidden)]
    pub fn with_portable_resolution(mut self) -> Self {
        self.gate.slow_only = true;
        self
    }

    /// The gate followed by the test hook, as every operation uses it.
    fn gate_op(&self, path: &str, follow_last: bool) -> Result<RelPath, WorkspaceError> {
        let rel = self.gate.check(path, follow_last)?;
        if let Some(h) = &self.after_check {
            h(&rel);
        }
        Ok(rel)
    }

    /// [`Workspace::gate_op`] for an operation that changes files: a path inside another
    /// repository (a submodule, or a repository embedded without being one) is refused. Its
    /// files belong to that repository's history, and the project's commit would record them
    /// wrongly (a submodule is one entry in the index, not files).
    fn gate_write(&self, path: &str, follow_last: bool) -> Result<RelPath, WorkspaceError> {
        let rel = self.gate_op(path, follow_last)?;
        let parts: Vec<&str> = rel.components().collect();
        for depth in 1..parts.len() {
            let Ok((dir, _)) = beneath::open_dir(
                &self.gate,
                parts[..depth].iter().copied(),
                false,
                "check",
                "",
            ) else {
                break;
            };
            if sys::lstatat(dir.as_fd(), c".git").is_ok() {
                return Err(WorkspaceError::refused(
                    rel.display(),
                    format!(
                        "{} is another git repository (a submodule or an embedded repository); \
                         pai changes only this project's own files: work in that repository \
                         instead (run pai there)",
                        parts[..depth].join("/")
                    ),
                ));
            }
        }
        Ok(rel)
    }
}

/// Whether `root` (canonical) is the user's home directory.
fn is_home(root: &Path) -> bool {
    dirs::home_dir()
        .and_then(|h| std::fs::canonicalize(h).ok())
        .is_some_and(|h| h == root)
}

/// The diff guard alone (SPEC section 5), as MODIFY applies it: the added and removed line
/// counts of changing `old` into `new` (both already normalised to `\n`), or the refusal MODIFY
/// would give for `path`. For callers vetting a change before applying it, and for benchmarks.
pub fn diff_guard(
    cfg: &WorkspaceConfig,
    path: &str,
    old: &str,
    new: &str,
) -> Result<(usize, usize), WorkspaceError> {
    guard::guard(cfg, old, new, path)
        .map(|d| (d.added, d.removed))
        .map_err(|r| guard::refusal_error(cfg, path, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn workspace_is_send_and_sync() {
        assert_send_sync::<Workspace>();
    }
}
