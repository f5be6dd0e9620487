//! The new worktree's index: every entry of the tree with the stat data of the file just
//! written, so `git status` there finds every file clean without reading one.
//!
//! The index is made new (no earlier index read), so nothing in it counts as racily clean
//! against an older index: git and libgit2 still re-read a file whose time is not older than
//! the index file's own, as for any index.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use git2::{Index, IndexEntry, IndexTime};

use super::listing::Entry;
use crate::history::error::{Context, HistoryError};

/// What git's index keeps of a file's `lstat`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stamp {
    ctime: (i64, i64),
    mtime: (i64, i64),
    dev: u64,
    ino: u64,
    uid: u32,
    gid: u32,
    size: u64,
}

impl Stamp {
    /// From a file's metadata (of the link itself, for a link).
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            dev: meta.dev(),
            ino: meta.ino(),
            uid: meta.uid(),
            gid: meta.gid(),
            size: meta.size(),
        }
    }
}

/// Git's index keeps 32 bits of each field: the low ones, as git truncates them.
fn low32(v: u64) -> u32 {
    (v & 0xffff_ffff) as u32
}

fn time((secs, nanos): (i64, i64)) -> IndexTime {
    #[allow(
        clippy::cast_possible_truncation,
        reason = "git keeps 32 bits of the seconds"
    )]
    IndexTime::new(secs as i32, low32(nanos.unsigned_abs()))
}

/// The index entry of `entry` written with `stamp`.
fn index_entry(entry: &Entry, stamp: &Stamp) -> IndexEntry {
    IndexEntry {
        ctime: time(stamp.ctime),
        mtime: time(stamp.mtime),
        dev: low32(stamp.dev),
        ino: low32(stamp.ino),
        mode: u32::try_from(entry.mode).unwrap_or(0o100644),
        uid: stamp.uid,
        gid: stamp.gid,
        file_size: low32(stamp.size),
        id: entry.id,
        flags: u16::try_from(entry.path.len().min(0xfff)).unwrap_or(0xfff),
        flags_extended: 0,
        path: entry.path.clone(),
    }
}

/// Write the index at `path`: `entries` (in the index's order) with their stamps.
pub(crate) fn write(path: &Path, entries: &[Entry], stamps: &[Stamp]) -> Result<(), HistoryError> {
    let what = || format!("cannot write the worktree's index {}", path.display());
    // An index read from disk would count every file written in its second as racily clean
    // and re-read them all when written; a new one has nothing to compare with.
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(HistoryError::Io {
                context: what(),
                source: e,
            });
        }
        _ => {}
    }
    let mut index = Index::open(path).ctx(what)?;
    for (entry, stamp) in entries.iter().zip(stamps) {
        index.add(&index_entry(entry, stamp)).ctx(what)?;
    }
    index.write().ctx(what)
}

/// The index at `path` holding `tree`'s entries without stat data: what libgit2 reads the
/// tree's `.gitattributes` from while the files are being written.
pub(crate) fn write_unstamped(path: &Path, tree: &git2::Tree<'_>) -> Result<(), HistoryError> {
    let what = || format!("cannot write the worktree's index {}", path.display());
    let mut index = Index::open(path).ctx(what)?;
    index.read_tree(tree).ctx(what)?;
    index.write().ctx(what)
}
