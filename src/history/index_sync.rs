//! Keeping the user's index in step with the session branch for exactly the paths pai
//! recorded, so `git status` is clean for them and untouched for everything else. Entries get
//! zeroed stat data ("smudged"): git then re-hashes those few files once instead of trusting a
//! stat that a concurrent edit could have made stale.

use std::path::Path;

use git2::{Index, IndexEntry, IndexTime, Repository};

use super::error::{Context, HistoryError};
use super::scope::Entry;

/// The user's index, freshly read from disk.
pub(crate) fn load(repo: &Repository) -> Result<Index, HistoryError> {
    let mut index = repo.index().ctx(|| "cannot open the index".to_string())?;
    index
        .read(false)
        .ctx(|| "cannot read the index".to_string())?;
    Ok(index)
}

/// Set each path's stage-0 entry to the given blob, or remove it, then write the index.
pub(crate) fn update(
    index: &mut Index,
    entries: &[(String, Option<Entry>)],
) -> Result<(), HistoryError> {
    if entries.is_empty() {
        return Ok(());
    }
    // Removals first: a file replaced by a directory (or the reverse) must leave before its
    // replacement can enter.
    for (path, entry) in entries {
        if entry.is_none() && index.get_path(Path::new(path), 0).is_some() {
            index
                .remove_path(Path::new(path))
                .ctx(|| format!("cannot remove {path} from the index"))?;
        }
    }
    for (path, entry) in entries {
        let Some((id, mode)) = entry else { continue };
        let zero = IndexTime::new(0, 0);
        let len = path.len().min(0xfff) as u16;
        let entry = IndexEntry {
            ctime: zero,
            mtime: zero,
            dev: 0,
            ino: 0,
            mode: *mode as u32,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: *id,
            flags: len,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        };
        // A directory of the same name in the index would block the file.
        let _ = index.remove_dir(Path::new(path), 0);
        index
            .add(&entry)
            .ctx(|| format!("cannot update {path} in the index"))?;
    }
    index.write().ctx(|| "cannot write the index".to_string())
}
