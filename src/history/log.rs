//! `pai log`: the plans of every session (or one), newest first, as data (serialisable for
//! `--json`) and as plain text for people. Read from git alone: session branches, the `Pai-*`
//! trailers, `refs/pai/undone/...` and the session metadata refs.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use git2::{Commit, Oid, Repository, Sort};
use serde::Serialize;

use super::error::{Context, HistoryError};
use super::session::summary_for;
use crate::history::git::meta::{self, Meta};
use crate::history::git::names;
use crate::history::git::ref_index::RefIndex;
use crate::history::git::repo::{self, HistoryRepo};
use crate::history::plan::files as plan_files;
use crate::history::record::message::{self, Kind};
use crate::history::record::revert;

/// One session and its plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionLog {
    /// Session id.
    pub session: String,
    /// `pai/<id>` while that branch exists.
    pub branch: Option<String>,
    /// Short id of the commit the session started from.
    pub base_commit: Option<String>,
    /// The branch the session started from.
    pub base_branch: Option<String>,
    /// Command to review the session.
    pub review: Option<String>,
    /// Command to merge it into its base branch.
    pub merge: Option<String>,
    /// Plans, newest first (undone ones included, marked).
    pub plans: Vec<PlanLog>,
    /// Commits that claim to be this session's but whose mark does not verify (amended,
    /// rebased), newest first: shown, never acted on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unverified: Vec<UnverifiedCommit>,
}

/// One plan commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanLog {
    /// Abbreviated commit id.
    pub commit: String,
    /// Full commit id.
    pub id: String,
    /// Session id.
    pub session: String,
    /// Plan number within the session.
    pub plan: u32,
    /// Commit time, RFC 3339 with the committer's offset.
    pub time: String,
    /// The user's request.
    pub request: String,
    /// The plan's steps as its commit records them (`TOOL docs.search {...}: ok`).
    pub steps: Vec<String>,
    /// The failed steps its turn left undone (`MODIFY a.txt: search text not found`): not
    /// empty when the plan partly failed, and the commit holds only what succeeded.
    pub failed_steps: Vec<String>,
    /// Files with added/deleted line counts.
    pub files: Vec<FileStat>,
    /// The model.
    pub model: Option<String>,
    /// API calls.
    pub calls: Option<u32>,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Input tokens served from the provider's cache.
    pub cached_tokens: Option<u64>,
    /// Output tokens spent reasoning.
    pub reasoning_tokens: Option<u64>,
    /// Taken off the branch by `pai undo` (kept for `pai redo`).
    pub undone: bool,
    /// The unified diff, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

pub use crate::history::plan::files::FileStat;
pub use crate::history::record::unverified::UnverifiedCommit;

/// The project `pai log` lists, found from the directory it started in, with its history
/// opened once for both the recovery check every command makes first and the log itself
/// (each open of a repository reads git's config files anew).
pub struct LogSource {
    root: PathBuf,
    history: Result<HistoryRepo, HistoryError>,
}

/// Find the project `cwd` is in and open its history (see [`LogSource`]).
pub fn open_log(cwd: &Path) -> LogSource {
    let (root, found) = repo::locate(cwd);
    let history = found.and_then(|found| repo::existing(found, &root));
    LogSource { root, history }
}

impl LogSource {
    /// Whether an operation or a plan was interrupted here (see [`super::interrupted`]).
    pub fn interrupted(&self) -> bool {
        self.history
            .as_ref()
            .is_ok_and(|hr| super::ops::interrupted_in(&hr.repo, &self.root))
    }

    /// The plan history: every session, or only `session` (see [`log`]).
    pub fn log(
        self,
        session: Option<&str>,
        with_patch: bool,
    ) -> Result<Vec<SessionLog>, HistoryError> {
        log_of(&self.history?, &self.root, session, with_patch)
    }
}

/// The plan history of the project at `root`: every session, or only `session`.
pub fn log(
    root: &Path,
    session: Option<&str>,
    with_patch: bool,
) -> Result<Vec<SessionLog>, HistoryError> {
    log_of(&repo::open_existing(root)?, root, session, with_patch)
}

/// [`log`] of the history `hr` of the project at `root`.
fn log_of(
    hr: &HistoryRepo,
    root: &Path,
    session: Option<&str>,
    with_patch: bool,
) -> Result<Vec<SessionLog>, HistoryError> {
    let repo = &hr.repo;
    let index = RefIndex::read(repo);
    let all = index.sessions();
    let wanted: Vec<String> = match session {
        Some(s) => {
            if !all.contains(s) {
                return Err(HistoryError::Refused {
                    message: format!("no pai session `{s}` in {}", root.display()),
                    hint: if all.is_empty() {
                        "no pai sessions recorded here yet".into()
                    } else {
                        format!(
                            "sessions here: {}",
                            all.iter().rev().cloned().collect::<Vec<_>>().join(", ")
                        )
                    },
                });
            }
            vec![s.to_string()]
        }
        None => all.into_iter().collect(),
    };
    let mut out = Vec::new();
    let mut commits = Commits::default();
    for s in wanted {
        let shown = Shown {
            with_patch,
            private: hr.private,
            keep_empty: session.is_some(),
        };
        if let Some(entry) = session_log(repo, &mut commits, &index, &s, shown)? {
            out.push(entry);
        }
    }
    out.sort_by(|a, b| {
        let newest = |l: &SessionLog| l.plans.first().map(|p| p.time.clone());
        newest(b).cmp(&newest(a)).then(b.session.cmp(&a.session))
    });
    Ok(out)
}

/// The commits read so far, by id: sessions that continued one another share a branch, and
/// each session's walk down it reads nothing twice. With the trailers of each undone ref's
/// target, verified once however many refs point at it.
#[derive(Default)]
struct Commits<'r> {
    read: HashMap<Oid, Commit<'r>>,
    undone_trailers: HashMap<Oid, message::Trailers>,
}

impl<'r> Commits<'r> {
    fn get(&mut self, repo: &'r Repository, id: Oid) -> Result<&Commit<'r>, HistoryError> {
        match self.read.entry(id) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => Ok(e.insert(
                repo.find_commit(id)
                    .ctx(|| format!("cannot read commit {id}"))?,
            )),
        }
    }

    /// The verified trailers of `id` (see `verified::trailers`), worked out once.
    fn trailers(
        &mut self,
        repo: &'r Repository,
        id: Oid,
    ) -> Result<&message::Trailers, HistoryError> {
        let fresh = match self.undone_trailers.contains_key(&id) {
            true => None,
            false => Some(crate::history::record::verified::trailers(
                self.get(repo, id)?,
            )),
        };
        Ok(self
            .undone_trailers
            .entry(id)
            .or_insert_with(|| fresh.unwrap_or_default()))
    }
}

/// What a session's entry shows.
#[derive(Clone, Copy)]
struct Shown {
    with_patch: bool,
    private: bool,
    /// Give the entry even when it has no plans (the session was asked for by name).
    keep_empty: bool,
}

fn session_log<'r>(
    repo: &'r Repository,
    commits: &mut Commits<'r>,
    index: &RefIndex,
    session: &str,
    shown: Shown,
) -> Result<Option<SessionLog>, HistoryError> {
    let Shown {
        with_patch,
        private,
        keep_empty,
    } = shown;
    // A session that continued another's line of work has its plans on that branch.
    let meta = index
        .target(repo, &meta::ref_name(session))
        .ok()
        .flatten()
        .and_then(|blob| meta::read_blob(repo, session, blob));
    let branch = meta
        .as_ref()
        .and_then(|m| m.branch.clone())
        .unwrap_or_else(|| names::branch_ref(session));
    let tip = index
        .target(repo, &branch)
        .ctx(|| format!("cannot read {}", names::short(&branch)))?;
    let mut plans = Vec::new();
    let mut unverified = Vec::new();
    if let Some(tip) = tip {
        for id in branch_commits(repo, commits, session, tip, meta.as_ref())? {
            let commit = commits.get(repo, id)?;
            let t = crate::history::record::verified::trailers(commit);
            if t.kind == Some(Kind::Plan) && t.session.as_deref() == Some(session) {
                plans.push(plan_log(repo, commit, t, session, false, with_patch)?);
            } else if let Some(u) = crate::history::record::unverified::of_session(commit, session)
            {
                unverified.push(u);
            }
        }
    }
    let mut listed: HashSet<String> = plans.iter().map(|p| p.id.clone()).collect();
    for (name, id) in index.undone(session) {
        if listed.contains(&id.to_string()) {
            continue;
        }
        if crate::history::record::forged::undone_plan_of(commits.trailers(repo, *id)?, name)
            .is_none()
        {
            continue;
        }
        let commit = commits.get(repo, *id)?;
        let t = message::parse(commit.message().unwrap_or_default());
        plans.push(plan_log(repo, commit, t, session, true, with_patch)?);
        listed.insert(id.to_string());
    }
    if plans.is_empty() && unverified.is_empty() && !keep_empty {
        return Ok(None);
    }
    plans.sort_by(|a, b| b.time.cmp(&a.time).then(b.plan.cmp(&a.plan)));
    let summary = summary_for(
        session,
        &meta.unwrap_or_default(),
        plans.len(),
        private,
        tip.is_some(),
    );
    Ok(Some(SessionLog {
        session: session.to_string(),
        branch: summary.branch,
        base_commit: summary.base_commit,
        base_branch: summary.base_branch,
        review: summary.review,
        merge: summary.merge,
        plans,
        unverified,
    }))
}

/// Commits of the session on its branch: down to the recorded base, or (without metadata)
/// down to the first commit that is not the session's. The first-parent line is followed
/// through `commits`, so sessions of one line read each commit once; when the base is not on
/// that line (history rewritten under it), libgit2's walk decides, as git would.
fn branch_commits<'r>(
    repo: &'r Repository,
    commits: &mut Commits<'r>,
    session: &str,
    tip: Oid,
    meta: Option<&Meta>,
) -> Result<Vec<Oid>, HistoryError> {
    let base = meta.and_then(|m| m.base);
    let mut out = Vec::new();
    let mut next = Some(tip);
    while let Some(id) = next {
        if Some(id) == base {
            return Ok(out);
        }
        let commit = commits.get(repo, id)?;
        if meta.is_none()
            && crate::history::record::verified::trailers(commit)
                .session
                .as_deref()
                != Some(session)
        {
            return Ok(out);
        }
        out.push(id);
        next = commit.parent_ids().next();
    }
    match base {
        Some(base) => walked_commits(repo, tip, base),
        None => Ok(out),
    }
}

/// The first-parent commits from `tip` that `base` does not reach.
fn walked_commits(repo: &Repository, tip: Oid, base: Oid) -> Result<Vec<Oid>, HistoryError> {
    let mut walk = repo.revwalk().ctx(|| "cannot walk history".into())?;
    walk.set_sorting(Sort::TOPOLOGICAL)
        .and_then(|()| walk.push(tip))
        .and_then(|()| walk.simplify_first_parent())
        .and_then(|()| walk.hide(base))
        .ctx(|| "cannot walk history".into())?;
    Ok(walk.flatten().collect())
}

/// One plan commit for the log, `t` its trailers as already parsed (libgit2's trailer
/// parser is the largest part of reading a plan: once per commit is enough).
fn plan_log(
    repo: &Repository,
    commit: &Commit<'_>,
    t: message::Trailers,
    session: &str,
    undone: bool,
    with_patch: bool,
) -> Result<PlanLog, HistoryError> {
    let msg = commit.message().unwrap_or_default();
    let (files, patch) = if with_patch {
        let tree = commit.tree().ctx(|| "cannot read a plan's tree".into())?;
        let parent = revert::parent_tree(commit)?;
        let (files, patch) = plan_files::diff(repo, parent.as_ref(), &tree)?;
        (files, Some(patch))
    } else {
        (plan_files::of_commit(repo, commit, msg)?, None)
    };
    let time = commit.time();
    let when = FixedOffset::east_opt(time.offset_minutes() * 60)
        .and_then(|tz| DateTime::from_timestamp(time.seconds(), 0).map(|d| d.with_timezone(&tz)))
        .map(|d| d.to_rfc3339())
        .unwrap_or_default();
    Ok(PlanLog {
        commit: names::short_id(commit.id()),
        id: commit.id().to_string(),
        session: t.session.clone().unwrap_or_else(|| session.to_string()),
        plan: t.plan.unwrap_or(0),
        time: when,
        request: message::request_of(msg),
        steps: message::steps_of(msg),
        failed_steps: message::failed_of(msg),
        files,
        model: t.model,
        calls: t.calls,
        input_tokens: t.tokens.map(|t| t.input),
        output_tokens: t.tokens.map(|t| t.output),
        cached_tokens: t.tokens.map(|t| t.cached),
        reasoning_tokens: t.tokens.map(|t| t.reasoning),
        undone,
        patch,
    })
}
