//! `pai gc` (and a short automatic pass when a session starts): prune what pai keeps only so
//! an undo can be redone or a discarded session recovered — `refs/pai/undone/*` (with the
//! trash refs of those plans) and `refs/pai/discarded/*` — and the session logs in
//! `.pai_history`, once they are older than a setting (default 30 days), and then what undo
//! kept for redo that no undone ref needs any more (`kept.rs`). Never anything still
//! on a branch: a ref whose commit a branch or a remote-tracking ref holds is kept, and so is
//! the log of a session whose branch still exists.

mod kept;

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Local, NaiveDateTime, TimeZone};
use git2::Repository;
use serde::Serialize;

use super::error::HistoryError;
use super::ops::{self, OpKind, Record, StateTo};
use crate::history::git::meta;
use crate::history::git::names;
use crate::history::git::ref_index::RefIndex;
use crate::history::git::repo::{self, Found};
use crate::history::git::store;
use crate::history::record::holders;

/// What `gc` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Refs deleted (`refs/pai/undone/<session>/<n>`, `refs/pai/discarded/<session>`, ...).
    pub refs: Vec<String>,
    /// Session log files removed from `.pai_history`.
    pub logs: Vec<String>,
    /// What undo kept for redo, removed from the user's state directory (`undone/<file>`).
    pub records: Vec<String>,
    /// The pass stopped at its time budget before looking at everything.
    pub stopped_early: bool,
}

/// How far `gc` goes.
#[derive(Debug, Clone, Copy)]
pub struct GcOptions {
    /// Prune what is older than this many days.
    pub days: u32,
    /// Stop after this long (the automatic pass at session start); `None`: no limit.
    pub budget: Option<Duration>,
    /// Now (tests pass a later time instead of waiting).
    pub now: DateTime<Local>,
}

/// Prune the project at `root` (see the module documentation). A project without history has
/// nothing to prune.
pub fn gc(root: &Path, opts: GcOptions) -> Result<GcReport, HistoryError> {
    let started = Instant::now();
    let over = || opts.budget.is_some_and(|b| started.elapsed() > b);
    let cutoff = opts.now.timestamp() - i64::from(opts.days) * 86_400;
    let mut report = GcReport::default();
    let repo = match repo::find(root)? {
        Found::Repo(hr) => Some(hr.repo),
        Found::Nothing | Found::Blocked(_) => None,
    };
    if let Some(repo) = &repo {
        // pai's refs are listed once (again after any were deleted), however many there are.
        let mut index = RefIndex::read(repo);
        prune_refs(repo, &index, cutoff, &mut report, &over)?;
        if !report.refs.is_empty() {
            index = RefIndex::read(repo);
        }
        if !report.stopped_early {
            let kept =
                crate::history::gc::kept::prune(repo, &index, root, cutoff, started_at, &over);
            report.refs.extend(kept.refs);
            report.records.extend(kept.records);
            report.stopped_early = kept.stopped_early;
        }
    }
    if !report.stopped_early {
        prune_logs(root, repo.as_ref(), cutoff, &mut report, &over);
    }
    Ok(report)
}

/// Delete the undone and discarded refs whose commit is older than `cutoff` and on no branch.
fn prune_refs(
    repo: &Repository,
    index: &RefIndex,
    cutoff: i64,
    report: &mut GcReport,
    over: &dyn Fn() -> bool,
) -> Result<(), HistoryError> {
    let found = [names::UNDONE_PREFIX, names::DISCARDED_PREFIX]
        .into_iter()
        .flat_map(|prefix| index.under(prefix));
    for (name, id) in found {
        let (name, id) = (name.clone(), *id);
        if over() {
            report.stopped_early = true;
            return Ok(());
        }
        let Ok(commit) = repo.find_commit(id) else {
            continue;
        };
        // Only pai's own refs for this user: a planted one is no state of pai's to prune.
        if commit.time().seconds() >= cutoff || !crate::history::git::auth::verified(&commit) {
            continue;
        }
        if !holders::refs_containing(repo, id, "")?.is_empty() {
            continue;
        }
        let mut doomed = vec![name.clone()];
        // An undone plan's trash copies are kept only for its redo.
        if let Some(rest) = name.strip_prefix(names::UNDONE_PREFIX) {
            doomed.push(format!("{}{rest}", names::TRASH_PREFIX));
        }
        for n in doomed {
            if delete_ref(repo, &n) {
                report.refs.push(n);
            }
        }
    }
    Ok(())
}

/// Delete the ref `name` where it points now, through the executor; whether it was deleted.
/// Best effort, as all of gc: a ref that cannot go stays for the next gc.
pub(super) fn delete_ref(repo: &Repository, name: &str) -> bool {
    let Ok(Some(now)) = names::target(repo, name) else {
        return false;
    };
    let mut record = Record::new(OpKind::Gc);
    record.move_ref(name, Some(now), None);
    ops::at_once(repo, None, &record).is_ok_and(|done| done.changed == 1)
}

/// Remove `session_<id>.log` / `.jsonl` files whose session started before `cutoff` and whose
/// branch no longer exists.
fn prune_logs(
    root: &Path,
    repo: Option<&Repository>,
    cutoff: i64,
    report: &mut GcReport,
    over: &dyn Fn() -> bool,
) {
    let Ok(state) = store::open(root) else {
        return;
    };
    let Ok(entries) = state.entries(&[]) else {
        return;
    };
    for (name, is_dir) in entries {
        if over() {
            report.stopped_early = true;
            return;
        }
        if is_dir {
            continue;
        }
        let Some(id) = name
            .strip_prefix("session_")
            .and_then(|n| n.strip_suffix(".log").or_else(|| n.strip_suffix(".jsonl")))
        else {
            continue;
        };
        let Some(started) = started_at(id) else {
            continue;
        };
        if started >= cutoff {
            continue;
        }
        let on_branch = repo.is_some_and(|r| {
            r.find_reference(&meta::branch_of(r, id)).is_ok()
                || r.find_reference(&names::branch_ref(id)).is_ok()
        });
        if on_branch {
            continue;
        }
        let mut record = Record::new(OpKind::Gc);
        record.state_file(root, vec![name.clone()], StateTo::Removed);
        if ops::at_once_in_state_dir(&record).is_ok() {
            report.logs.push(name);
        }
    }
}

/// The start time of session `id` (`YYYYMMDD_HHMMSS`, maybe with `-n`), as a Unix time.
fn started_at(id: &str) -> Option<i64> {
    let stamp = id.get(..15)?;
    let naive = NaiveDateTime::parse_from_str(stamp, "%Y%m%d_%H%M%S").ok()?;
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_give_their_start_time() {
        let t = started_at("20240102_030405-2").unwrap();
        let back = Local.timestamp_opt(t, 0).unwrap();
        assert_eq!(back.format("%Y%m%d_%H%M%S").to_string(), "20240102_030405");
        assert_eq!(started_at("notes"), None);
    }
}
