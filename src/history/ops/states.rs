//! The states a record names for a work-tree file, worked out while an operation builds its
//! record: what stands there now, and the exact bytes a path gets (a kept copy, git's
//! checkout of a stored blob, or the blob as it is), put in the object store first so the
//! executor, live or after a crash, writes exactly those bytes.

use git2::Repository;

use super::super::error::{Context as _, HistoryError};
use super::record::FileState;
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Entry};
use crate::history::ops::work_tree::WorkTree;

/// What stands at `path` now, as a record's state: its exact bytes and permission bits.
/// Something that is not a regular file is no state a record can name (absent).
pub(crate) fn found(wt: &dyn WorkTree, path: &str) -> Result<Option<FileState>, HistoryError> {
    Ok(match scope::work_file(wt, path)? {
        Ok(Some(file)) => Some(FileState::found(&file, wt.permissions(path))),
        _ => None,
    })
}

/// A kept copy of `bytes` for `path` (in the object store already, or put there) with its
/// permission bits, as a record's state.
pub(crate) fn copy_state(
    repo: &Repository,
    path: &str,
    bytes: &[u8],
    perm: u32,
) -> Result<FileState, HistoryError> {
    let raw = repo
        .blob(bytes)
        .ctx(|| format!("cannot keep the bytes of {path}"))?;
    Ok(FileState::copy(raw, perm))
}

/// The bytes `path` gets for the stored blob `id` (git mode `mode`): a kept copy of the
/// exact bytes (`copy`: bytes and permission bits) when there is one, else git's checkout of
/// the blob (put in the object store: the record names exact bytes), else the blob as it is.
pub(crate) fn produced(
    repo: &Repository,
    path: &str,
    (id, mode): Entry,
    copy: Option<(&[u8], u32)>,
) -> Result<FileState, HistoryError> {
    if let Some((bytes, perm)) = copy {
        return copy_state(repo, path, bytes, perm);
    }
    Ok(match convert::checked_out(repo, path, id, mode)? {
        Some(bytes) => {
            let raw = repo
                .blob(&bytes)
                .ctx(|| format!("cannot keep git's checkout of {path}"))?;
            FileState::checkout(raw, mode)
        }
        None => FileState::stored((id, mode)),
    })
}
