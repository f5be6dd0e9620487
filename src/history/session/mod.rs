//! Starting a session: where its plans will go (a new line of work whose branch `pai/<id>`
//! is created at the first plan commit, or the session branch HEAD is on), the read-only
//! fallback with its reason, the work-tree lock, and the end-of-session summary with the
//! review, merge and discard commands.
//! `impl Session` lives here whole; the end-of-session summary is `summary.rs`.

pub(super) mod chain;
pub(super) mod leftover;
mod summary;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Local};
use git2::{Oid, Repository};

use super::error::{Context, HistoryError};
use super::ops::{self, OpKind, Record};
use super::plan::user_edits;
use super::plan::{PlanHost, PlanUnderWay, Writer};
use super::record::trash;
use super::undo::{self, RedoReport, UndoReport};
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::meta;
use crate::history::git::names::{self, Head};
use crate::history::git::repo::{self, Found};
use crate::history::git::store;
use crate::history::ops::work_tree::WorkTree;
use crate::history::record::line::{self, Line};
use leftover::LeftoverSnapshot;
use summary::count_of;

pub use summary::SessionSummary;
pub(in crate::history) use summary::count_plans;
pub(in crate::history) use summary::summary_for;

/// How to start a session.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The session's start time; its `YYYYMMDD_HHMMSS` form is the session id.
    pub now: DateTime<Local>,
    /// Commit as this (name, email) instead of the user's git identity.
    pub identity: Option<(String, String)>,
}

impl StartOptions {
    /// Start now, committing with the user's git identity (or `pai <pai@localhost>`).
    pub fn now() -> StartOptions {
        StartOptions {
            now: Local::now(),
            identity: None,
        }
    }
}

/// An open session. Writable sessions hold the work-tree lock until dropped.
pub struct Session {
    pub(super) id: String,
    pub(super) root: PathBuf,
    pub(super) state: State,
}

pub(super) enum State {
    ReadOnly(String),
    Writable(Box<Writer>),
}

impl Session {
    /// Start a session for the project at `root` (from [`super::project_root`]).
    ///
    /// Nothing in git changes here: the branch `pai/<id>` is created at the first plan
    /// commit, from where HEAD is then (detached HEAD and unborn branches work), and HEAD is
    /// attached to it; when HEAD is on a session branch already, the session continues that
    /// line of work on it. Outside a repository: the private repository `.pai_history/git`.
    /// When pai must not write (operation in progress, conflicts, bare or unopenable
    /// repository, another session holding the lock) the session is read-only and says why.
    pub fn start(root: &Path, opts: StartOptions) -> Result<Session, HistoryError> {
        let stamp = opts.now.format("%Y%m%d_%H%M%S").to_string();
        let read_only = |reason: String, repo: Option<&Repository>| Session {
            id: unique_id(root, repo, &stamp),
            root: root.to_path_buf(),
            state: State::ReadOnly(reason),
        };
        let found = match repo::find(root)? {
            Found::Nothing => repo::find_or_create(root)?,
            found => found,
        };
        let hr = match found {
            Found::Repo(hr) => hr,
            Found::Blocked(b) => return Ok(read_only(b.reason(), None)),
            Found::Nothing => return Err(HistoryError::NoHistory { root: root.into() }),
        };
        if let Some(b) = repo::blocker(&hr.repo) {
            return Ok(read_only(b.reason(), Some(&hr.repo)));
        }
        let lock = match lock_work_tree(root)? {
            Ok(lock) => lock,
            Err(reason) => return Ok(read_only(reason, Some(&hr.repo))),
        };
        let repo = hr.repo;
        if !hr.private && repo.find_reference(names::BRANCH_DIR).is_ok() {
            return Ok(read_only(
                "a branch named `pai` exists, so session branches `pai/<id>` cannot be created; rename it (`git branch -m pai <new-name>`)".into(),
                Some(&repo),
            ));
        }
        let head = names::head(&repo).ctx(|| "cannot read HEAD".into())?;
        let started_at = repo.head().ok().and_then(|h| h.target());
        let id = unique_id(root, Some(&repo), &stamp);
        let (branch, meta, created) = match line::at_head(&repo, &head) {
            Some((branch, meta)) => (branch, meta, true),
            None => (
                names::branch_ref(&id),
                line::start_point(&repo, &head)?,
                false,
            ),
        };
        Ok(Session {
            id,
            root: root.to_path_buf(),
            state: State::Writable(Box::new(Writer {
                repo,
                private: hr.private,
                branch,
                line: Line {
                    created,
                    start_head: head,
                    recorded: false,
                },
                meta,
                identity: opts.identity,
                next_plan: 1,
                started_at,
                _lock: lock,
            })),
        })
    }

    /// Continue session `id` (`pai --continue`, `pai resume`): its branch `pai/<id>` checked
    /// out again and its plan numbers going on where they stopped.
    ///
    /// HEAD must be on that branch already (where a session with plans leaves it) or at the
    /// commit at its tip, in which case HEAD is attached to it, which changes neither index
    /// nor work tree. Anywhere else is refused with the command that gets there: pointing HEAD
    /// at another commit without a checkout would make the work tree look changed, and pai
    /// never checks out. `Ok(None)` when the session has no branch (it recorded no plans, so
    /// its empty branch was removed when it ended): the caller starts a new session instead.
    pub fn resume(
        root: &Path,
        id: &str,
        opts: StartOptions,
    ) -> Result<Option<Session>, HistoryError> {
        let refused = |message: String, hint: &str| HistoryError::Refused {
            message,
            hint: hint.to_string(),
        };
        let hr = match repo::find(root)? {
            Found::Repo(hr) => hr,
            Found::Nothing => return Ok(None),
            Found::Blocked(b) => {
                return Err(refused(
                    format!("cannot continue session {id}: {}", b.reason()),
                    "fix that, then continue the session",
                ));
            }
        };
        if let Some(b) = repo::blocker(&hr.repo) {
            return Err(refused(
                format!("cannot continue session {id}: {}", b.reason()),
                "fix that, then continue the session",
            ));
        }
        let repo = hr.repo;
        let branch = meta::branch_of(&repo, id);
        let Some(tip) = names::target(&repo, &branch).ctx(|| format!("cannot read pai/{id}"))?
        else {
            return Ok(None);
        };
        let lock = WorkTreeLock::acquire(root)?;
        let head = names::head(&repo).ctx(|| "cannot read HEAD".into())?;
        if head != Head::Branch(branch.clone()) {
            let at = match &head {
                Head::Branch(name) => {
                    names::target(&repo, name).ctx(|| format!("cannot read {name}"))?
                }
                Head::Detached(oid) => Some(*oid),
            };
            if at != Some(tip) {
                let now = match &head {
                    Head::Branch(name) => format!("HEAD is on {}", names::short(name)),
                    Head::Detached(oid) => format!("HEAD is detached at {}", names::short_id(*oid)),
                };
                return Err(refused(
                    format!(
                        "cannot continue session {id}: {now}, not on its branch {}",
                        names::short(&branch)
                    ),
                    &format!(
                        "commit or stash your changes, `git switch {}`, then continue; or start a new session with `pai`",
                        crate::shell::quote(names::short(&branch))
                    ),
                ));
            }
            // HEAD at the branch's tip: attached to the branch, index and work tree as
            // they are, through the executor like every move of HEAD.
            let mut record = Record::new(OpKind::Continue);
            record.name(id, 0);
            record.move_head(&head, &Head::Branch(branch.clone()));
            record.reflog = format!("pai: continue session {id}");
            ops::at_once(&repo, None, &record)?;
        }
        let meta = meta::read(&repo, id).unwrap_or_default();
        let next_plan = last_plan_number(&repo, id, tip, meta.base) + 1;
        Ok(Some(Session {
            id: id.to_string(),
            root: root.to_path_buf(),
            state: State::Writable(Box::new(Writer {
                repo,
                private: hr.private,
                line: Line {
                    created: true,
                    start_head: Head::Branch(branch.clone()),
                    recorded: true,
                },
                branch,
                meta,
                identity: opts.identity,
                next_plan,
                started_at: None,
                _lock: lock,
            })),
        }))
    }

    /// The line of work this session continues: the session branch (`pai/<id>`) HEAD was on
    /// when it started, where this session's plans go too.
    pub fn continues_line(&self) -> Option<&str> {
        match &self.state {
            State::Writable(w) if w.meta.branch.is_some() => Some(names::short(&w.branch)),
            _ => None,
        }
    }

    /// The session id (`YYYYMMDD_HHMMSS`, maybe with `-2`, `-3`, ...): also the name of the
    /// session log `.pai_history/session_<id>.log`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The branch the session's plans go on (`pai/<id>`, or the line it continues; created
    /// at the first plan), `None` for a read-only session.
    pub fn branch(&self) -> Option<&str> {
        match &self.state {
            State::Writable(w) => Some(names::short(&w.branch)),
            State::ReadOnly(_) => None,
        }
    }

    /// Whether the session's branch exists (it is created at the first plan commit).
    pub fn branch_created(&self) -> bool {
        matches!(&self.state, State::Writable(w) if w.line.created)
    }

    /// Why this session cannot record history, and what to do; `None` when it can.
    pub fn read_only_reason(&self) -> Option<&str> {
        match &self.state {
            State::ReadOnly(reason) => Some(reason),
            State::Writable(_) => None,
        }
    }

    /// Whether plan commits will fall back to `pai <pai@localhost>` because no git identity
    /// is configured (`user.name` / `user.email`, or git's `GIT_AUTHOR_*` variables).
    pub fn lacks_identity(&self) -> bool {
        match &self.state {
            State::Writable(w) => {
                !w.private
                    && w.identity.is_none()
                    && (w.repo.author_from_env().is_err() || w.repo.committer_from_env().is_err())
            }
            State::ReadOnly(_) => false,
        }
    }

    /// Whether history lives in the private `.pai_history/git` (the project is not in git).
    pub fn is_private(&self) -> bool {
        matches!(&self.state, State::Writable(w) if w.private)
    }

    pub(super) fn writer(&mut self) -> Result<&mut Writer, HistoryError> {
        match &mut self.state {
            State::Writable(w) => Ok(w),
            State::ReadOnly(reason) => Err(HistoryError::ReadOnly {
                reason: reason.clone(),
            }),
        }
    }

    /// Branch, base, number of plans and the review / merge / discard commands.
    pub fn summary(&self) -> SessionSummary {
        match &self.state {
            State::ReadOnly(reason) => SessionSummary {
                session: self.id.clone(),
                read_only: Some(reason.clone()),
                ..SessionSummary::default()
            },
            State::Writable(w) => {
                // A new session's commits are all above where HEAD was when it started.
                let [plans, snapshots] =
                    count_of(&w.repo, &self.id, &w.branch, &[w.meta.base, w.started_at]);
                let exists = w.repo.find_reference(&w.branch).is_ok();
                SessionSummary {
                    snapshots,
                    ..summary_for(&self.id, &w.meta, plans, w.private, exists)
                }
            }
        }
    }

    /// Begin a plan: what it holds while in progress is the value returned, which the caller
    /// keeps until it ends the plan ([`PlanUnderWay::commit`] or [`PlanUnderWay::abandon`]).
    #[must_use = "a plan under way ends with `commit` or `abandon`"]
    pub fn begin_plan(&self) -> PlanUnderWay {
        PlanUnderWay::default()
    }

    /// End the session and release the lock. A session that carried out nothing changed
    /// nothing in git (its branch is made only at its first plan commit), so there is nothing
    /// to put back.
    pub fn finish(self) -> SessionSummary {
        self.summary()
    }

    /// `/undo` inside a session: [`super::undo`] with this session's lock and identity.
    pub fn undo(&mut self, wt: &dyn WorkTree, force: bool) -> Result<UndoReport, HistoryError> {
        let root = self.root.clone();
        let w = self.writer()?;
        let report = undo::undo_in(&w.repo, &root, wt, force, w.identity.as_ref());
        self.follow_head();
        report
    }

    /// `/redo` inside a session: [`super::redo`] with this session's lock.
    pub fn redo(&mut self, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
        let root = self.root.clone();
        let w = self.writer()?;
        let report = undo::redo_in(&w.repo, &root, wt);
        self.follow_head();
        report
    }

    /// Which of `paths` (files) hold changes of the user's that the session branch does not:
    /// what [`PlanUnderWay::prepare`] would commit as a snapshot before a plan touches them.
    /// Told with the plan, before approval. Empty for a read-only session or when nothing can
    /// be read.
    pub fn user_edits_in(&self, wt: &dyn WorkTree, paths: &[String]) -> Vec<String> {
        match &self.state {
            State::Writable(w) => match w.line.tip(&w.repo, &w.branch) {
                Ok(tip) => user_edits::user_edits_in(&w.repo, tip, wt, paths),
                Err(_) => Vec::new(),
            },
            State::ReadOnly(_) => Vec::new(),
        }
    }

    /// Whether the line this session's plans go on holds a plan of pai's that changed files
    /// and is not merged into the base branch: what the model wrote there is in the project
    /// until the user reviews and merges it. `false` for a read-only session.
    pub fn line_holds_unmerged_plans(&self) -> bool {
        let State::Writable(w) = &self.state else {
            return false;
        };
        match w.line.tip(&w.repo, &w.branch) {
            Ok(Some(tip)) => chain::holds_unmerged_plans(&w.repo, tip, &w.meta),
            _ => false,
        }
    }

    /// Snapshots earlier sessions left behind (see `leftover.rs`), oldest session first.
    /// Empty for a read-only session, and whenever the repository cannot be read: this is a
    /// report, never a reason to fail.
    pub fn leftover_snapshots(&self) -> Vec<LeftoverSnapshot> {
        match &self.state {
            State::Writable(w) => leftover::snapshots(&self.id, &w.repo, w.private),
            State::ReadOnly(_) => Vec::new(),
        }
    }

    /// After an undo or redo inside the session: where the session's plans go follows HEAD
    /// (undo may have left the line for the branch it started from, redo come back to it).
    pub(super) fn follow_head(&mut self) {
        let id = self.id.clone();
        if let State::Writable(w) = &mut self.state {
            let Writer {
                repo,
                line,
                branch,
                meta,
                ..
            } = w.as_mut();
            line.follow_head(repo, &id, branch, meta);
        }
    }
}

impl PlanHost for Session {
    fn id(&self) -> &str {
        &self.id
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn read_only_reason(&self) -> Option<&str> {
        Session::read_only_reason(self)
    }

    fn writer(&mut self) -> Result<&mut Writer, HistoryError> {
        Session::writer(self)
    }
}

/// Why session `id` has no branch to continue, in words that follow "it ...": discarded,
/// all its plans undone, or none recorded.
pub fn why_no_branch(root: &Path, id: &str) -> String {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return "recorded no plans".into();
    };
    let discarded = crate::history::git::names::discarded_ref(id);
    if hr.repo.find_reference(&discarded).is_ok() {
        return format!("was discarded (its plans are kept at {discarded})");
    }
    if has_undone(&hr.repo, id) {
        return "had all its plans undone (`pai redo` from where it started brings them back)"
            .into();
    }
    "recorded no plans".into()
}

/// The session whose plan is newest on the session branch HEAD is on in the project at
/// `root`, if any: where `pai --continue` picks up first.
pub fn head_session(root: &Path) -> Option<String> {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return None;
    };
    match names::head(&hr.repo).ok()? {
        Head::Branch(name) => names::session_of_branch(&name)
            .is_some()
            .then(|| line::newest_session(&hr.repo, &name))
            .flatten(),
        Head::Detached(_) => None,
    }
}

/// The work-tree lock for a new session, or, when another pai session holds it, the reason
/// the new one is read-only (any other failure is an error).
fn lock_work_tree(root: &Path) -> Result<Result<WorkTreeLock, String>, HistoryError> {
    match WorkTreeLock::acquire(root) {
        Ok(lock) => Ok(Ok(lock)),
        Err(HistoryError::Busy { pid }) => {
            let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            Ok(Err(format!(
                "another pai session{who} is writing this work tree; use that session, or wait until it ends"
            )))
        }
        Err(e) => Err(e),
    }
}

/// A session id not yet used by a branch, undone plans, a session log or trash.
fn unique_id(root: &Path, repo: Option<&Repository>, stamp: &str) -> String {
    let taken = |id: &str| {
        store::session_log(root, id).exists()
            || trash::session_dir(root, id).exists()
            || repo.is_some_and(|r| {
                r.find_reference(&names::branch_ref(id)).is_ok()
                    || r.find_reference(&meta::ref_name(id)).is_ok()
                    || r.find_reference(&names::pending_ref(id)).is_ok()
                    || has_undone(r, id)
            })
    };
    let mut id = stamp.to_string();
    let mut n = 2;
    while taken(&id) {
        id = format!("{stamp}-{n}");
        n += 1;
    }
    id
}

fn has_undone(repo: &Repository, session: &str) -> bool {
    repo.references_glob(&names::undone_glob(session))
        .map(|mut refs| refs.next().is_some())
        .unwrap_or(false)
}

/// The highest plan number `session` used: on its branch above `base` (snapshots included)
/// and among its undone plans, so a continued session never reuses a number.
fn last_plan_number(repo: &Repository, session: &str, tip: Oid, base: Option<Oid>) -> u32 {
    let mut last = 0;
    if let Ok(mut walk) = repo.revwalk()
        && walk.push(tip).is_ok()
    {
        if let Some(base) = base {
            let _ = walk.hide(base);
        }
        for commit in walk.flatten().filter_map(|oid| repo.find_commit(oid).ok()) {
            let t = crate::history::record::verified::trailers(&commit);
            if t.session.as_deref() == Some(session) {
                last = last.max(t.plan.unwrap_or(0));
            }
        }
    }
    if let Ok(refs) = repo.references_glob(&names::undone_glob(session)) {
        for r in refs.flatten() {
            let n = r
                .name()
                .ok()
                .and_then(|n| n.rsplit('/').next())
                .and_then(|n| n.parse::<u32>().ok());
            last = last.max(n.unwrap_or(0));
        }
    }
    last
}
