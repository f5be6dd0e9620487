//! Files git converts on the way in: line endings (`core.autocrlf`, the `text`, `eol` and
//! `crlf` attributes) and `ident`. For such a file the blob git stores is not the work tree's
//! bytes, so pai records what git would (libgit2's own filters, run on the work-tree bytes:
//! the blob `git add` writes) and compares work files with git's trees by that blob, as `git
//! status` does. The exact bytes a plan replaced are kept besides (a trash copy in git's object
//! store, recorded with the plan), because git's checkout of the stored blob need not give them
//! back (a CRLF file under `eol=lf`, mixed endings, an expanded `$Id$`): undo writes back those
//! bytes, and redo the bytes the plan left.
//!
//! External filter drivers (`filter=<driver>` with a `clean` command) are not converted here:
//! only git can run them, and pai refuses to write such files (`scope::filter_driver`).

use std::collections::BTreeMap;

use git2::{ObjectType, Oid, Repository};

use crate::history::error::{Context, HistoryError};
use crate::history::index::IndexFile;
use crate::history::ops::scope::{self, Entry, MODE_EXEC, PathChange, WorkFile};
use crate::history::ops::work_tree::WorkTree;
use crate::rawname;

/// The blob git stores for `bytes` at `path`: the bytes' own id (nothing written) when no
/// conversion applies to the path, else the converted blob, written to the object store on
/// the way as `git add` would. `in_index` is the user's
/// index entry for the path: git leaves line endings alone under `text=auto` (or
/// `core.autocrlf` without attributes) when the indexed blob has a CR, and libgit2 asks its
/// own index for that, which pai keeps empty (`repo::detach_index`), so the entry is shown to
/// it for the time of the conversion.
pub(crate) fn stored_id(
    repo: &Repository,
    path: &str,
    bytes: &[u8],
    in_index: Option<Entry>,
) -> Result<Oid, HistoryError> {
    use std::io::Write as _;
    let what = || format!("cannot run git's conversion of {path}");
    if !may_convert(repo, path) {
        // The common case, without a scratch blob per file.
        return Oid::hash_object(ObjectType::Blob, bytes).ctx(what);
    }
    let _shown = Shown::new(repo, path, in_index).ctx(what)?;
    let mut writer = repo.blob_writer(Some(&rawname::path(path))).ctx(what)?;
    writer.write_all(bytes).map_err(|source| HistoryError::Io {
        context: what(),
        source,
    })?;
    writer.commit().ctx(what)
}

/// `file` as git would store it at `path`: the same work-tree bytes, with the id of the blob
/// git writes for them.
pub(crate) fn as_stored(
    repo: &Repository,
    path: &str,
    file: WorkFile,
    in_index: Option<Entry>,
) -> Result<WorkFile, HistoryError> {
    let id = stored_id(repo, path, &file.bytes, in_index)?;
    Ok(WorkFile { id, ..file })
}

/// What the work tree holds at `path` (see [`scope::work_file`]), with the id git would store
/// with `in_index` in the user's index.
pub(crate) fn work_file(
    repo: &Repository,
    wt: &dyn WorkTree,
    path: &str,
    in_index: Option<Entry>,
) -> Result<Result<Option<WorkFile>, ()>, HistoryError> {
    Ok(match scope::work_file(wt, path)? {
        Ok(Some(file)) => Ok(Some(as_stored(repo, path, file, in_index)?)),
        other => other,
    })
}

/// A recorded trash copy: path, bytes, permission bits (see [`trash::recorded`]).
type TrashCopy = (String, Vec<u8>, u32);

/// Whether git may convert the file at `path` when it checks it out: line endings
/// (`core.autocrlf`, or a `text`, `eol` or `crlf` attribute) or `ident`.
fn may_convert(repo: &Repository, path: &str) -> bool {
    let autocrlf = repo
        .config()
        .and_then(|c| c.get_string("core.autocrlf"))
        .is_ok_and(|v| !v.eq_ignore_ascii_case("false"));
    autocrlf
        || ["text", "eol", "crlf", "ident"].iter().any(|name| {
            repo.get_attr(
                &rawname::path(path),
                name,
                git2::AttrCheckFlags::FILE_THEN_INDEX,
            )
            .is_ok_and(|v| v.is_some())
        })
}

/// The bytes git's checkout writes for the blob `id` (git mode `mode`) at `path`, when git
/// converts it on the way out (line endings, `ident`); `None` when it writes the blob as it
/// is. libgit2's own checkout runs the conversion, into a scratch directory outside the
/// project (history never writes project files itself; the workspace writes the result).
pub(crate) fn checked_out(
    repo: &Repository,
    path: &str,
    id: Oid,
    mode: i32,
) -> Result<Option<Vec<u8>>, HistoryError> {
    if !may_convert(repo, path) {
        return Ok(None);
    }
    let what = || format!("cannot run git's checkout conversion of {path}");
    let scratch = tempfile::tempdir().map_err(|source| HistoryError::Io {
        context: what(),
        source,
    })?;
    let mut index = git2::Index::new().ctx(what)?;
    index.add(&index_entry(path, id, mode)).ctx(what)?;
    // The index holds this one entry, so no pathspec is needed (a name with `*` or `[` would
    // be taken for a pattern).
    let mut opts = git2::build::CheckoutBuilder::new();
    opts.target_dir(scratch.path())
        .force()
        .update_index(false)
        .refresh(false);
    repo.checkout_index(Some(&mut index), Some(&mut opts))
        .ctx(what)?;
    let bytes =
        std::fs::read(scratch.path().join(rawname::path(path).as_ref())).map_err(|source| {
            HistoryError::Io {
                context: what(),
                source,
            }
        })?;
    Ok(Some(bytes))
}

/// An index entry for the blob `id` at `path`, stat data unknown.
fn index_entry(path: &str, id: Oid, mode: i32) -> git2::IndexEntry {
    unstamped_entry(rawname::decode(path).into_owned(), id, mode)
}

/// An index entry for the blob `id` at the raw path `bytes`, stat data unknown (what
/// libgit2's checkout of one entry starts from).
pub(crate) fn unstamped_entry(bytes: Vec<u8>, id: Oid, mode: i32) -> git2::IndexEntry {
    let zero = git2::IndexTime::new(0, 0);
    git2::IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode: u32::try_from(mode).unwrap_or(0o100644),
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: u16::try_from(bytes.len().min(0xfff)).unwrap_or(0xfff),
        flags_extended: 0,
        path: bytes,
    }
}

/// Whether git stores `file` as other bytes than the work tree holds (its id is not its
/// bytes' own).
pub(crate) fn is_converted(file: &WorkFile) -> bool {
    Oid::hash_object(ObjectType::Blob, &file.bytes).is_ok_and(|raw| raw != file.id)
}

/// Whether git's checkout of `file`'s blob at `path` (what undo and redo write without a kept
/// copy) gives back its exact bytes. Always for a file git neither converts on the way in nor
/// on the way out; otherwise the conversion is run and compared (under `core.autocrlf=true` an
/// LF file is stored as it is but checked out with CRLF).
fn checkout_gives_back(
    repo: &Repository,
    path: &str,
    file: &WorkFile,
) -> Result<bool, HistoryError> {
    if !is_converted(file) && !may_convert(repo, path) {
        return Ok(true);
    }
    Ok(match checked_out(repo, path, file.id, file.mode)? {
        Some(bytes) => bytes == file.bytes,
        None => !is_converted(file),
    })
}

/// Before a plan changes a file whose exact bytes git's checkout would not give back: keep
/// them as a trash copy in git's object store (`trash`: path, the copy's blob, permission
/// bits), recorded with the plan commit, so undo gives them back. A file already saved for
/// the plan keeps its first copy.
pub(crate) fn keep_replaced(
    repo: &Repository,
    path: &str,
    file: &WorkFile,
    perm: Option<u32>,
    trash: &mut BTreeMap<String, (Oid, u32)>,
) -> Result<(), HistoryError> {
    if trash.contains_key(path) || checkout_gives_back(repo, path, file)? {
        return Ok(());
    }
    let id = repo
        .blob(&file.bytes)
        .ctx(|| format!("cannot keep your bytes of {path}"))?;
    let perm = perm.unwrap_or(if file.mode == MODE_EXEC { 0o755 } else { 0o644 });
    trash.insert(path.to_string(), (id, perm));
    Ok(())
}

/// Undo's restore of a converted file: among the plan's recorded trash copies (`copies`:
/// path, bytes, permission bits), the one at `path` whose bytes git stores as `before` (the
/// blob undo gives back), so the user's exact bytes come back instead of git's checkout of
/// that blob.
pub(crate) fn replaced_bytes<'c>(
    repo: &Repository,
    copies: &'c [TrashCopy],
    path: &str,
    before: Oid,
) -> Result<Option<&'c TrashCopy>, HistoryError> {
    let Some(copy) = copies.iter().find(|(p, _, _)| p == path) else {
        return Ok(None);
    };
    let shown = Some((before, scope::MODE_FILE));
    Ok((stored_id(repo, path, &copy.1, shown)? == before).then_some(copy))
}

/// Undo, before it writes: the plan's files whose exact bytes git's checkout of the plan's
/// blob would not give back, put in the object store for redo to write back after the plan's
/// blobs (see `kept::save_rewrite`): path, blob, permission bits.
pub(crate) fn keep_for_redo(
    repo: &Repository,
    wt: &dyn WorkTree,
    changes: &[PathChange],
    index: &IndexFile,
) -> Result<BTreeMap<String, (Oid, u32)>, HistoryError> {
    let mut keep = BTreeMap::new();
    for c in changes.iter().filter(|c| c.after.is_some()) {
        let Ok(Some(file)) = work_file(repo, wt, &c.path, index.get(&c.path))? else {
            continue;
        };
        if Some((file.id, file.mode)) == c.after && !checkout_gives_back(repo, &c.path, &file)? {
            let default = if file.mode == MODE_EXEC { 0o755 } else { 0o644 };
            let perm = wt.permissions(&c.path).unwrap_or(default);
            let blob = repo
                .blob(&file.bytes)
                .ctx(|| format!("cannot keep {} for redo", c.path))?;
            keep.insert(c.path.clone(), (blob, perm));
        }
    }
    Ok(keep)
}

/// Redo, after writing the plan's blobs: whether `bytes` at `path` are what the plan left
/// there (git would store them as the plan's blob), so a kept copy is written back only where
/// the plan commit vouches for it.
pub(crate) fn left_by_plan(
    repo: &Repository,
    path: &str,
    bytes: &[u8],
    changes: &[PathChange],
) -> Result<bool, HistoryError> {
    let Some((id, _)) = changes
        .iter()
        .find(|c| c.path == path)
        .and_then(|c| c.after)
    else {
        return Ok(false);
    };
    Ok(stored_id(repo, path, bytes, None)? == id)
}

/// The user's index entry for one path, shown to libgit2's (otherwise empty) in-memory index
/// while a conversion runs, and taken out again when dropped.
struct Shown<'r> {
    index: Option<(git2::Index, &'r str)>,
}

impl<'r> Shown<'r> {
    fn new(repo: &Repository, path: &'r str, entry: Option<Entry>) -> Result<Self, git2::Error> {
        let Some((id, mode)) = entry else {
            return Ok(Shown { index: None });
        };
        let mut index = repo.index()?;
        index.add(&index_entry(path, id, mode))?;
        Ok(Shown {
            index: Some((index, path)),
        })
    }
}

impl Drop for Shown<'_> {
    fn drop(&mut self) {
        if let Some((index, path)) = &mut self.index {
            // Left in, the entry would only be consulted by the next conversion of this path,
            // which shows its own.
            let _ = index.remove_path(&rawname::path(path));
        }
    }
}
