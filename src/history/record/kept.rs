//! What undo replaced when it put a plan's trash copies back (the file the plan left, or the
//! user's later edit of it), kept for redo: in git's object store, never in a folder of the
//! project. The copies form a tree (`files`, `modes` as trash copies have, and `absent`: the
//! paths undo brought back where nothing stood, which redo removes again); its id is written
//! in the user's state directory (`<project>/undone/<session>.<plan>`, where a repository
//! cannot plant one) and the tree is kept reachable from `refs/pai/kept/<session>/<plan>` so
//! git's gc never prunes it. Only the id in the state directory is trusted: the ref is never
//! read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use crate::history::error::{Context as _, HistoryError};
use crate::history::git::names::{self, PlanId};
use crate::history::git::user_state;
use crate::history::ops::Record;
use crate::history::record::trash;

/// The entry of the tree listing the paths undo restored where nothing stood.
const ABSENT: &str = "absent";

/// What undo replaced for one plan.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// Files undo wrote a trash copy over: path, the bytes it replaced, their permission bits.
    pub replaced: Vec<(String, Vec<u8>, u32)>,
    /// Paths undo restored from the trash where no file stood.
    pub absent: Vec<String>,
}

/// The ref keeping the tree reachable (never read back as a source of truth).
fn keep_ref(session: &str, plan: u32) -> String {
    names::kept_ref(session, plan)
}

/// The ref keeping the files redo writes back reachable (never read back either).
fn rewrite_ref(session: &str, plan: u32) -> String {
    names::kept_rewrite_ref(session, plan)
}

/// `<state>/undone/<session>.<plan>` for the repository `repo` of the project at `root`.
fn record_path(
    repo: &Repository,
    root: &Path,
    session: &str,
    plan: u32,
) -> Result<PathBuf, HistoryError> {
    if !names::is_id(session) {
        return Err(HistoryError::Refused {
            message: format!("session id {session:?} is not one pai makes"),
            hint: "pai acts only on sessions it started".into(),
        });
    }
    let dir = user_state::dir(repo.commondir(), root)?.join("undone");
    std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    Ok(dir.join(format!("{session}.{plan}")))
}

/// `<state>/undone/<session>.<plan>.rewrite`: the record of what redo writes back.
fn rewrite_path(
    repo: &Repository,
    root: &Path,
    session: &str,
    plan: u32,
) -> Result<PathBuf, HistoryError> {
    record_path(repo, root, session, plan).map(|p| p.with_extension(format!("{plan}.rewrite")))
}

/// Write `tree`'s id to the record at `path` (a temporary renamed over it).
fn write_record(path: &Path, plan: u32, tree: Oid) -> Result<(), HistoryError> {
    let tmp = path.with_extension(format!("{plan}.tmp{}", std::process::id()));
    std::fs::write(&tmp, format!("{tree}\n"))
        .and_then(|()| std::fs::rename(&tmp, path))
        .ctx(|| format!("cannot write {}", path.display()))
}

/// The tree id the record at `path` holds (`None`: no record, or one that is unreadable).
fn read_record(path: &Path) -> Option<Oid> {
    let text = std::fs::read_to_string(path).ok()?;
    Oid::from_str(text.trim()).ok()
}

/// Record the files redo must write back as the plan left them after writing the plan's
/// blobs (`files`: path, blob already in the object store, permission bits): bytes git's
/// checkout of the plan's blob would not give back (files git converts), and ignored files the
/// plan created (its tree does not hold them). Written before undo's record; the ref keeping
/// the tree reachable is set (or, with nothing to keep, an earlier one removed) by the undo's
/// `record`.
pub(crate) fn save_rewrite(
    repo: &Repository,
    root: &Path,
    PlanId { session, plan }: PlanId<'_>,
    files: &BTreeMap<String, (Oid, u32)>,
    record: &mut Record,
) -> Result<(), HistoryError> {
    if files.is_empty() {
        if let Ok(path) = rewrite_path(repo, root, session, plan) {
            let _ = std::fs::remove_file(path);
        }
        drop_ref(repo, &rewrite_ref(session, plan), record);
        return Ok(());
    }
    let path = rewrite_path(repo, root, session, plan)?;
    let what = || format!("cannot keep plan {plan}'s files for redo");
    let tree = trash::copies_tree(repo, files, None).ctx(what)?;
    set_ref(repo, &rewrite_ref(session, plan), tree, record);
    write_record(&path, plan, tree)
}

/// Have `record` point the ref `name` at `tree`.
fn set_ref(repo: &Repository, name: &str, tree: Oid, record: &mut Record) {
    let old = names::target(repo, name).ok().flatten();
    record.move_ref(name, old, Some(tree));
}

/// Have `record` remove the ref `name`, when it stands.
fn drop_ref(repo: &Repository, name: &str, record: &mut Record) {
    if let Some(old) = names::target(repo, name).ok().flatten() {
        record.move_ref(name, Some(old), None);
    }
}

/// What [`save_rewrite`] recorded for `plan` of `session` (nothing when nothing was, or the
/// record is unreadable): path, bytes, permission bits. The caller checks each against the
/// plan commit before writing it.
pub(crate) fn read_rewrite(
    repo: &Repository,
    root: &Path,
    session: &str,
    plan: u32,
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let tree = rewrite_path(repo, root, session, plan)
        .ok()
        .and_then(|p| read_record(&p));
    match tree {
        Some(tree) => trash::recorded(repo, tree),
        None => Ok(Vec::new()),
    }
}

/// What undo is about to replace where it puts trash copies back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Replaced<'a> {
    /// Each file replaced: path, blob of its current bytes (already in the object store),
    /// permission bits.
    pub files: &'a BTreeMap<String, (Oid, u32)>,
    /// The paths where nothing stood.
    pub absent: &'a [String],
}

/// Record what undo is about to replace for `plan` of `session`, before the undo's record;
/// its ref is set by that `record`. Nothing to keep removes any earlier record.
pub(crate) fn save(
    repo: &Repository,
    root: &Path,
    PlanId { session, plan }: PlanId<'_>,
    Replaced {
        files: replaced,
        absent,
    }: Replaced<'_>,
    record: &mut Record,
) -> Result<(), HistoryError> {
    // Nothing to keep needs no state directory (a project at $HOME has none of its own).
    if replaced.is_empty() && absent.is_empty() {
        if let Ok(path) = record_path(repo, root, session, plan) {
            let _ = std::fs::remove_file(path);
        }
        drop_ref(repo, &keep_ref(session, plan), record);
        return Ok(());
    }
    let path = record_path(repo, root, session, plan)?;
    let what = || format!("cannot keep what undo replaced for plan {plan}");
    let list: String = absent
        .iter()
        .filter(|p| !p.contains('\n'))
        .map(|p| format!("{p}\n"))
        .collect();
    let list = repo.blob(list.as_bytes()).ctx(what)?;
    let tree = trash::copies_tree(repo, replaced, Some((ABSENT, list))).ctx(what)?;
    set_ref(repo, &keep_ref(session, plan), tree, record);
    write_record(&path, plan, tree)
}

/// What undo recorded for `plan` of `session`; nothing when it recorded nothing (or the
/// record is unreadable: then redo replaces nothing it cannot account for).
pub(crate) fn read(
    repo: &Repository,
    root: &Path,
    session: &str,
    plan: u32,
) -> Result<Kept, HistoryError> {
    let Some(tree) = record_path(repo, root, session, plan)
        .ok()
        .and_then(|p| read_record(&p))
    else {
        return Ok(Kept::default());
    };
    let replaced = trash::recorded(repo, tree)?;
    let top = repo
        .find_tree(tree)
        .ctx(|| format!("cannot read what undo kept for plan {plan}"))?;
    let absent = match top.get_name(ABSENT) {
        Some(entry) => {
            let blob = repo
                .find_blob(entry.id())
                .ctx(|| format!("cannot read what undo kept for plan {plan}"))?;
            String::from_utf8_lossy(blob.content())
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        }
        None => Vec::new(),
    };
    Ok(Kept { replaced, absent })
}

/// Redo used what undo kept for `plan` of `session`: its refs go with the redo's `record`.
pub(crate) fn forget(repo: &Repository, session: &str, plan: u32, record: &mut Record) {
    drop_ref(repo, &keep_ref(session, plan), record);
    drop_ref(repo, &rewrite_ref(session, plan), record);
}

/// Once the redo is done: remove the records [`forget`] let go of. Failures are harmless: a
/// stale record is overwritten by the next undo of that plan.
pub(crate) fn forget_records(repo: &Repository, root: &Path, session: &str, plan: u32) {
    if let Ok(path) = record_path(repo, root, session, plan) {
        let _ = std::fs::remove_file(path);
    }
    if let Ok(path) = rewrite_path(repo, root, session, plan) {
        let _ = std::fs::remove_file(path);
    }
}
