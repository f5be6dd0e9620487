//! `pai gc`'s pass over what undo keeps for redo (`history/kept.rs`): the ids in the user's
//! state directory (`undone/<session>.<plan>`, `.rewrite`, and temporaries a killed undo left)
//! and the refs that keep those trees reachable (`refs/pai/kept/<session>/<plan>`,
//! `<plan>-rewrite`). Redo reads a record only while the plan's `refs/pai/undone/<session>/
//! <plan>` exists, so a record is needed exactly while that ref does; one no live undone ref
//! needs goes once it is older than the setting (the record file's time, or, for a ref with no
//! record, its session's start), so an undo writing its record right now is never raced.
//! Runs after the undone refs are pruned, so their records follow them.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{Oid, Repository};

use crate::history::git::names;
use crate::history::git::ref_index::RefIndex;
use crate::history::git::user_state;

/// What the pass removed.
#[derive(Debug, Default)]
pub(in crate::history) struct Pruned {
    /// `refs/pai/kept/...` refs deleted.
    pub refs: Vec<String>,
    /// Record files removed, as `undone/<file>`.
    pub records: Vec<String>,
    /// The pass stopped at its time budget.
    pub stopped_early: bool,
}

/// A session's start time from its id (`gc::started_at`), passed in so this module and `gc`
/// do not import each other.
pub(in crate::history) type StartedAt = fn(&str) -> Option<i64>;

/// Prune the kept records and refs no undone ref needs and older than `cutoff` (see the
/// module documentation).
pub(in crate::history) fn prune(
    repo: &Repository,
    index: &RefIndex,
    root: &Path,
    cutoff: i64,
    started_at: StartedAt,
    over: &dyn Fn() -> bool,
) -> Pruned {
    let mut pruned = Pruned::default();
    let report = &mut pruned;
    let live = live_undone(index);
    let records = user_state::dir(repo.commondir(), root)
        .ok()
        .map(|d| d.join("undone"));
    let fresh = records
        .as_deref()
        .map(|dir| prune_records(dir, &live, cutoff, report, over))
        .unwrap_or_default();
    if !report.stopped_early {
        let needed = Needed {
            live: &live,
            fresh: &fresh,
        };
        let kept = index.under(names::KEPT_PREFIX);
        prune_refs(repo, kept, needed, cutoff, started_at, report, over);
    }
    pruned
}

/// `<session>.<plan>` of every `refs/pai/undone/<session>/<plan>` left.
fn live_undone(index: &RefIndex) -> BTreeSet<String> {
    index
        .under(names::UNDONE_PREFIX)
        .iter()
        .filter_map(|(name, _)| {
            let (session, plan) = names::undone_parts(name)?;
            Some(format!("{session}.{plan}"))
        })
        .collect()
}

/// What keeps a kept ref: the undone refs left (`<session>.<plan>`) and the names of the
/// records younger than the cutoff.
#[derive(Clone, Copy)]
struct Needed<'a> {
    live: &'a BTreeSet<String>,
    fresh: &'a [String],
}

/// The `<session>.<plan>` a record file `name` belongs to, when it is one of `keys`: the name
/// itself or the key followed by `.` (`.rewrite`, a temporary). A lookup per `.` in the name,
/// not a pass over the keys, which a repository's planted refs can make many.
fn key_of<'k>(name: &str, keys: &'k BTreeSet<String>) -> Option<&'k String> {
    std::iter::once(name.len())
        .chain(name.match_indices('.').map(|(i, _)| i))
        .find_map(|end| keys.get(name.get(..end)?))
}

/// Remove the record files in `dir` no live undone ref needs and last written before
/// `cutoff`; returns the names of those kept because they are younger (their refs stay too).
fn prune_records(
    dir: &Path,
    live: &BTreeSet<String>,
    cutoff: i64,
    report: &mut Pruned,
    over: &dyn Fn() -> bool,
) -> Vec<String> {
    let mut fresh = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return fresh;
    };
    for entry in entries.flatten() {
        if over() {
            report.stopped_early = true;
            return fresh;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if key_of(name, live).is_some() {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let written = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok())
            .unwrap_or(i64::MAX);
        if written >= cutoff {
            fresh.push(name.to_string());
        } else if std::fs::remove_file(entry.path()).is_ok() {
            report.records.push(format!("undone/{name}"));
        }
    }
    fresh
}

/// Delete `refs/pai/kept/<session>/<plan>[-rewrite]` when no live undone ref needs it, no
/// record younger than `cutoff` names it, and its session (a pai id) started before `cutoff`.
fn prune_refs(
    repo: &Repository,
    kept: &[(String, Oid)],
    needed: Needed<'_>,
    cutoff: i64,
    started_at: StartedAt,
    report: &mut Pruned,
    over: &dyn Fn() -> bool,
) {
    let Needed { live, fresh } = needed;
    for (name, _) in kept {
        let name = name.clone();
        if over() {
            report.stopped_early = true;
            return;
        }
        let Some((session, plan)) = names::kept_parts(&name) else {
            continue;
        };
        let plan = plan.strip_suffix("-rewrite").unwrap_or(plan);
        if !names::is_id(session) || plan.parse::<u32>().is_err() {
            continue;
        }
        let key = BTreeSet::from([format!("{session}.{plan}")]);
        let needed = live.contains(&format!("{session}.{plan}"))
            || fresh.iter().any(|f| key_of(f, &key).is_some());
        let old = started_at(session).is_some_and(|t| t < cutoff);
        if needed || !old {
            continue;
        }
        if crate::history::gc::delete_ref(repo, &name) {
            report.refs.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::history::gc::kept::*;

    #[test]
    fn record_files_belong_to_their_plan_only() {
        let keys = BTreeSet::from(["20250101_101010.1".to_string()]);
        for name in [
            "20250101_101010.1",
            "20250101_101010.1.rewrite",
            "20250101_101010.1.tmp42",
        ] {
            assert!(key_of(name, &keys).is_some(), "{name}");
        }
        for name in ["20250101_101010.10", "20250101_101010.12.rewrite", "other"] {
            assert!(key_of(name, &keys).is_none(), "{name}");
        }
    }
}
