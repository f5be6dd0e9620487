//! Worktree sessions (`pai -w`): each session runs in its own linked git worktree on its own
//! branch `pai/<id>`, so the user's checkout (HEAD, index, files) is never touched and several
//! sessions work on one repository at once.
//!
//! The worktrees live in the user's state directory beside the list of them
//! (`$XDG_STATE_HOME/pai/projects/<project id>/worktrees/<id>` and `sessions/<id>.json`),
//! outside every project: no editor, build or `git status` of the user's checkout sees them,
//! nothing has to be ignored, and a confined RUN of another session (which may write only
//! inside its own project) cannot reach them. Git's admin entry is `.git/worktrees/pai-<id>`,
//! so the entries pai owns are known by name and only those are ever pruned.
//!
//! A running session holds an exclusive `flock` on its record for as long as its process
//! lives: the kernel drops it when the process dies, so "running" never outlives a crash and
//! the next command can tidy what the crash left.

use std::fs::File;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::history::error::{Context, HistoryError};
use crate::history::git::meta::{self, Meta};
use crate::history::git::names::{self, Head};
use crate::history::git::repo::{self, Found};
use crate::history::git::user_state;
use crate::history::ops::{self, OpKind, Record, WorktreeMove};
use crate::history::record::line::Line;
use crate::history::session::{Session, StartOptions, State};

/// Prefix of the admin entries (`.git/worktrees/pai-<id>`) of pai's worktrees.
pub(in crate::history) const ADMIN_PREFIX: &str = "pai-";

/// One worktree session as recorded in the user's state directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Linked {
    /// The session id (`YYYYMMDD_HHMMSS`, maybe with `-2`, ...): also the branch `pai/<id>`.
    pub id: String,
    /// The name the user gave (`pai -w=NAME`), if any; it selects the session like its id.
    pub name: Option<String>,
    /// The worktree's directory.
    pub path: PathBuf,
    /// The commit the session started from.
    pub base: String,
    /// The branch it started from (`refs/heads/...`), `None` when that was a detached HEAD.
    pub base_branch: Option<String>,
    /// The user's checkout the session was started from (where the merge happens).
    pub origin: PathBuf,
    /// When it was created (RFC 3339).
    pub created: String,
    /// The paths whose uncommitted state `--carry` brought from the user's checkout.
    #[serde(default)]
    pub carried: Vec<String>,
}

impl Linked {
    /// The session branch, `refs/heads/pai/<id>`.
    pub fn branch_ref(&self) -> String {
        names::branch_ref(&self.id)
    }

    /// The base as people name it: its branch, else the short commit id.
    pub fn base_name(&self) -> String {
        match &self.base_branch {
            Some(b) => names::short(b).to_string(),
            None => self.base.chars().take(7).collect(),
        }
    }

    /// Whether `key` (an id or the user's name for it) selects this session.
    pub fn selected_by(&self, key: &str) -> bool {
        self.id == key || self.name.as_deref() == Some(key)
    }

    fn base_oid(&self) -> Option<Oid> {
        Oid::from_str(&self.base).ok()
    }
}

/// A worktree session this process has open: its record, held locked while the process runs.
pub struct Held {
    /// The record.
    pub linked: Linked,
    _lock: File,
}

/// How to create a worktree session.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// Start time: the session id's stamp.
    pub now: DateTime<Local>,
    /// Start from this ref or commit instead of HEAD.
    pub from: Option<String>,
    /// The user's name for the session.
    pub name: Option<String>,
}

/// The project's state directory and its repository, from anywhere in it (a linked
/// worktree included: every worktree shares git's common directory and so this directory).
pub(in crate::history) fn open(root: &Path) -> Result<(Repository, PathBuf), HistoryError> {
    let repo = match repo::find(root)? {
        Found::Repo(hr) if !hr.private => hr.repo,
        Found::Blocked(b) => return Err(b.refusal("start a worktree session")),
        _ => {
            return Err(HistoryError::Refused {
                message: "worktree sessions need a git repository, and this project is not in one"
                    .into(),
                hint: "run `git init` and make a first commit, or start pai without -w".into(),
            });
        }
    };
    let state = user_state::dir(repo.commondir(), root)?;
    Ok((repo, state))
}

fn records_dir(state: &Path) -> PathBuf {
    state.join("sessions")
}

pub(in crate::history) fn record_path(state: &Path, id: &str) -> PathBuf {
    records_dir(state).join(format!("{id}.json"))
}

/// The mark that session `id`'s worktree is being made: created before its record is
/// written, removed once the worktree is checked out whole. A process killed in between
/// leaves it, so the next command knows the worktree holds only part of pai's checkout. (A
/// mark beside the record, not a field in it: the record is the lock the session holds, so
/// it is written once, never rewritten where a reader could catch it half written.)
pub(in crate::history) fn making_path(state: &Path, id: &str) -> PathBuf {
    records_dir(state).join(format!("{id}.making"))
}

/// Create a worktree session for the project at `root`: reserve an id no other session
/// has, create `pai/<id>` at the base and a linked worktree checked out on it, and record it.
/// The returned session is held (locked) until dropped.
pub fn create(root: &Path, opts: &CreateOptions) -> Result<Held, HistoryError> {
    let (repo, state) = open(root)?;
    if repo.find_reference(names::BRANCH_DIR).is_ok() {
        return Err(HistoryError::Refused {
            message:
                "a branch named `pai` exists, so session branches `pai/<id>` cannot be created"
                    .into(),
            hint: "rename it (`git branch -m pai <new-name>`)".into(),
        });
    }
    let (base, base_branch) = base_of(&repo, opts.from.as_deref())?;
    std::fs::create_dir_all(records_dir(&state))
        .ctx(|| format!("cannot create {}", records_dir(&state).display()))?;
    let (id, file) = reserve(&repo, &state, &opts.now.format("%Y%m%d_%H%M%S").to_string())?;
    let linked = Linked {
        id: id.clone(),
        name: opts.name.clone().filter(|n| !n.is_empty()),
        path: state.join("worktrees").join(&id),
        base: base.to_string(),
        base_branch,
        origin: root.to_path_buf(),
        created: opts.now.to_rfc3339(),
        carried: Vec::new(),
    };
    let held = Held {
        linked,
        _lock: file,
    };
    let making = making_path(&state, &id);
    std::fs::write(&making, b"").ctx(|| format!("cannot create {}", making.display()))?;
    let made = write_record(&state, &held.linked)
        .and_then(|()| add_worktree(&repo, &state, &held.linked, base));
    if let Err(e) = made {
        // Nothing of it is left to confuse the next session.
        let _ = remove_parts(&repo, &state, &held.linked);
        return Err(e);
    }
    std::fs::remove_file(&making).ctx(|| format!("cannot remove {}", making.display()))?;
    Ok(held)
}

/// The commit and branch a session starts from: `from`, else HEAD.
fn base_of(repo: &Repository, from: Option<&str>) -> Result<(Oid, Option<String>), HistoryError> {
    let no_commit = || HistoryError::Refused {
        message: "there is no commit to start a worktree session from".into(),
        hint: "make a first commit, or start pai without -w".into(),
    };
    if let Some(from) = from {
        let commit = repo
            .revparse_single(from)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| HistoryError::Refused {
                message: format!("--from {from}: no such branch or commit"),
                hint: "name a branch, tag or commit (`git log --oneline` lists them)".into(),
            })?;
        let branch = repo
            .find_branch(from, git2::BranchType::Local)
            .ok()
            .and_then(|b| b.get().name().ok().map(str::to_string));
        return Ok((commit.id(), branch));
    }
    match names::head(repo).ctx(|| "cannot read HEAD".into())? {
        Head::Branch(name) => {
            let oid = names::target(repo, &name)
                .ctx(|| format!("cannot read {name}"))?
                .ok_or_else(no_commit)?;
            Ok((oid, Some(name)))
        }
        Head::Detached(oid) => Ok((oid, None)),
    }
}

/// An id from `stamp` that no branch, session record or metadata uses, its record created
/// (exclusively, so two processes never get the same id) and locked.
fn reserve(repo: &Repository, state: &Path, stamp: &str) -> Result<(String, File), HistoryError> {
    let mut n = 1;
    loop {
        let id = if n == 1 {
            stamp.to_string()
        } else {
            format!("{stamp}-{n}")
        };
        n += 1;
        if repo.find_reference(&names::branch_ref(&id)).is_ok()
            || repo.find_reference(&meta::ref_name(&id)).is_ok()
            || state.join("worktrees").join(&id).exists()
            || ref_locks(repo, &id).iter().any(|l| l.exists())
        {
            continue;
        }
        let path = record_path(state, &id);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .map_err(std::io::Error::from)
                    .ctx(|| format!("cannot lock {}", path.display()))?;
                return Ok((id, file));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).ctx(|| format!("cannot create {}", path.display())),
        }
    }
}

/// The lock files of session `id`'s refs (its branch and its metadata). A session killed
/// while creating its branch leaves one, which would make the next session given the same id
/// (one started in the same second) fail to create its branch.
fn ref_locks(repo: &Repository, id: &str) -> [PathBuf; 2] {
    [
        names::ref_lock_path(repo, &names::branch_ref(id)),
        names::ref_lock_path(repo, &meta::ref_name(id)),
    ]
}

pub(in crate::history) fn write_record(state: &Path, linked: &Linked) -> Result<(), HistoryError> {
    let path = record_path(state, &linked.id);
    let text = serde_json::to_string_pretty(linked)
        .map_err(std::io::Error::other)
        .ctx(|| format!("cannot record session {}", linked.id))?;
    // Written in place: the file is the lock this process holds, so it is never replaced.
    std::fs::write(&path, text).ctx(|| format!("cannot write {}", path.display()))
}

/// The branch at `base` and the worktree checked out on it, both moved by the executor (see
/// `ops::WorktreeMove::Add`), at once: the session's `making` mark stands until it is whole.
fn add_worktree(
    repo: &Repository,
    state: &Path,
    linked: &Linked,
    base: Oid,
) -> Result<(), HistoryError> {
    let branch = linked.branch_ref();
    let mut record = Record::new(OpKind::Worktree);
    record.name(&linked.id, 0);
    record.reflog = format!("branch: Created from {}", names::short_id(base));
    record.move_ref(&branch, None, Some(base));
    record.move_worktree(WorktreeMove::Add {
        path: linked.path.clone(),
        admin: format!("{ADMIN_PREFIX}{}", linked.id),
        branch_ref: branch,
        commit: base,
        turns: records_dir(state).join("adding.lock"),
    });
    let done = ops::at_once(repo, None, &record)?;
    if done.kept.is_empty() {
        Ok(())
    } else {
        Err(HistoryError::Refused {
            message: format!("the branch pai/{} exists already", linked.id),
            hint: "start the session again: it takes a new id".into(),
        })
    }
}

/// Start the history session of a worktree session, in its worktree (`root`): the session's
/// id is the worktree's, its plans go on `pai/<id>` from the base, and its metadata records
/// the base commit (HEAD of the worktree goes back there, detached, if every plan is undone:
/// the user's branch is checked out in the user's checkout, never in a worktree).
pub fn start_session(
    root: &Path,
    linked: &Linked,
    opts: StartOptions,
) -> Result<Session, HistoryError> {
    let mut session = Session::start(root, opts)?;
    session.id = linked.id.clone();
    if let State::Writable(w) = &mut session.state {
        w.branch = linked.branch_ref();
        w.meta = Meta {
            base: linked.base_oid(),
            base_branch: None,
            branch: None,
        };
        w.line = Line {
            created: true,
            start_head: Head::Branch(w.branch.clone()),
            recorded: false,
        };
        w.next_plan = 1;
    }
    Ok(session)
}

/// Every worktree session recorded for the project at `root`, oldest first.
pub fn list(root: &Path) -> Result<Vec<Linked>, HistoryError> {
    let (_, state) = open(root)?;
    Ok(read_records(&state))
}

pub(in crate::history) fn read_records(state: &Path) -> Vec<Linked> {
    let Ok(entries) = std::fs::read_dir(records_dir(state)) else {
        return Vec::new();
    };
    let mut out: Vec<Linked> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<Linked>(&bytes).ok())
        // The id names refs, files and folders: one outside pai's grammar is not pai's.
        .filter(|l| names::is_id(&l.id))
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The recorded worktree session `key` (id or name), held for this process; refused when
/// another process is running it.
pub fn hold(root: &Path, key: &str) -> Result<Option<Held>, HistoryError> {
    // Outside git (or where pai may not write) there are no worktree sessions to hold.
    let Ok((_, state)) = open(root) else {
        return Ok(None);
    };
    let Some(linked) = read_records(&state)
        .into_iter()
        .find(|l| l.selected_by(key))
    else {
        return Ok(None);
    };
    let path = record_path(&state, &linked.id);
    let file = File::open(&path).ctx(|| format!("cannot open {}", path.display()))?;
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(HistoryError::Refused {
            message: format!("session {} is running in another pai process", linked.id),
            hint: "use that session, or wait until it ends".into(),
        });
    }
    Ok(Some(Held {
        linked,
        _lock: file,
    }))
}

/// Whether the session's branch `pai/<id>` exists (every plan undone removes it).
pub fn has_branch(linked: &Linked) -> bool {
    Repository::open(&linked.path)
        .is_ok_and(|repo| repo.find_reference(&linked.branch_ref()).is_ok())
}

/// Whether another process is running session `linked` (it holds its record's lock).
pub fn is_running(root: &Path, linked: &Linked) -> bool {
    let Ok((_, state)) = open(root) else {
        return false;
    };
    let Ok(file) = File::open(record_path(&state, &linked.id)) else {
        return false;
    };
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared).is_err()
}

/// Whether the session carried out nothing: its branch is still at the base and it never
/// recorded a plan (its metadata is written at the first one).
pub(in crate::history) fn carried_out_nothing(repo: &Repository, linked: &Linked) -> bool {
    let tip = names::target(repo, &linked.branch_ref()).ok().flatten();
    let missing_or_at_base = tip.is_none() || tip == linked.base_oid();
    missing_or_at_base && meta::read(repo, &linked.id).is_none()
}

/// At a worktree session's end: a session that carried out nothing leaves nothing (its
/// worktree, branch and record are removed). `true` when it was removed.
pub fn finish(held: Held, root: &Path) -> Result<bool, HistoryError> {
    let (repo, state) = open(root)?;
    if !carried_out_nothing(&repo, &held.linked) {
        return Ok(false);
    }
    remove_parts(&repo, &state, &held.linked)?;
    Ok(true)
}

/// Everything of a session that carried out nothing: worktree, admin entry, branch, record.
pub(in crate::history) fn remove_parts(
    repo: &Repository,
    state: &Path,
    linked: &Linked,
) -> Result<(), HistoryError> {
    let mut record = removal(linked);
    if carried_out_nothing(repo, linked)
        && let Ok(Some(tip)) = names::target(repo, &linked.branch_ref())
    {
        record.move_ref(&linked.branch_ref(), Some(tip), None);
    }
    ops::at_once(repo, None, &record)?;
    let _ = std::fs::remove_file(record_path(state, &linked.id));
    let _ = std::fs::remove_file(making_path(state, &linked.id));
    Ok(())
}

/// The worktree's directory (on many threads; links inside are removed, never followed),
/// what its checkout left beside it, and git's admin entry for it (what `git worktree
/// prune` would remove), for pai's own entry only.
pub(in crate::history) fn remove_worktree(
    repo: &Repository,
    linked: &Linked,
) -> Result<(), HistoryError> {
    ops::at_once(repo, None, &removal(linked)).map(drop)
}

/// The record removing `linked`'s worktree and its admin entry.
fn removal(linked: &Linked) -> Record {
    let mut record = Record::new(OpKind::Worktree);
    record.name(&linked.id, 0);
    record.move_worktree(WorktreeMove::RemoveTree {
        path: linked.path.clone(),
    });
    record.move_worktree(WorktreeMove::RemoveAdmin {
        admin: format!("{ADMIN_PREFIX}{}", linked.id),
    });
    record
}
