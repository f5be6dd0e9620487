//! The user's git index, read and updated directly in git's on-disk format (versions 2-4).
//!
//! Why not libgit2's `Index`: it parses every entry into its own structures and rewrites them
//! one by one, which at 100,000 files costs 150-200 ms to read and ~100 ms to write — the
//! whole cost of a plan commit. Here a read is one `read(2)` and a scan, and an update splices
//! the few changed entries between byte-for-byte copies of the rest, so the only work that
//! grows with the repository is copying and hashing the file, as git itself must.
//!
//! Updates follow git's locking protocol (`index.lock`, created exclusively, renamed over the
//! index), so they never interleave with a concurrent git command. Entries pai writes carry
//! zeroed stat data, which makes git re-hash those few files once instead of trusting a stat
//! that a concurrent edit might have made stale. Extensions: the cache tree (`TREE`) is kept
//! with the changed directories invalidated, resolve-undo (`REUC`) is kept, other optional
//! caches are dropped (as git drops extensions it cannot keep valid), and an index that needs
//! a mandatory extension pai does not know (split or sparse index) is refused, never guessed.

mod file;
mod file_bytes;
mod format;
mod locked;
pub(super) mod run_index;
mod shared;
#[cfg(test)]
pub(super) mod test_git;
mod update;

pub(crate) use file::IndexFile;
pub(crate) use format::Entry;
pub(crate) use locked::{LockedIndex, lock};
pub(crate) use shared::{checksum_of, index_path, load_shared, load_shared_at};
