//! A fresh checkout of a commit's tree into a new linked worktree, written by pai on several
//! threads with a new index holding every file's stat data: what `git worktree add` does,
//! without running git (a repository's configuration can name programs git would run: filter
//! drivers, `core.fsmonitor`, hooks) and without libgit2's checkout, which writes one file
//! after another and does several times git's work per file.
//!
//! Stages: the tree's entries, names checked (`listing`; a tree with a name git treats
//! specially is left whole to libgit2's checkout by the caller), git's administrative entry
//! (`admin`), which files libgit2 must write for their conversion (`conversion`), the files on
//! threads (`writer`: `.gitattributes` files first, so every thread reads the same rules),
//! links last, then the index (`fresh_index`).

mod admin;
mod conversion;
mod fresh_index;
mod listing;
mod writer;

use std::path::{Path, PathBuf};

use git2::{Repository, Tree};

pub(crate) use admin::{Admin, add as add_admin};
pub(crate) use listing::{Listing, list};

use crate::history::error::{Context, HistoryError};
use conversion::Conversion;
use writer::Target;

/// Where libgit2's converted files of the worktree at `root` are made before they are moved
/// into place: beside it, on the same file system. Removed after the checkout, and with the
/// worktree.
pub(crate) fn scratch_path(root: &Path) -> PathBuf {
    let mut name = root.file_name().unwrap_or_default().to_os_string();
    name.push(".converting");
    root.with_file_name(name)
}

/// Check out `listing` (of `tree`) into the worktree `root` that [`add_admin`] made, write
/// its index and unlock it.
pub(crate) fn check_out(
    repo: &Repository,
    tree: &Tree<'_>,
    listing: &Listing,
    root: &Path,
    admin: &Admin,
) -> Result<(), HistoryError> {
    let conversion = Conversion::read(repo, listing.has_attributes_file)?;
    let scratch = scratch_path(root);
    let written = write_all(tree, listing, root, admin, conversion, &scratch);
    // Whatever happened, libgit2's leftovers go (a failure leaves them to the worktree's removal).
    let _ = std::fs::remove_dir_all(&scratch);
    let stamps = written?;
    fresh_index::write(&admin.index_path(), &listing.entries, &stamps)?;
    admin.unlock()
}

/// Every entry written; their stamps, in the entries' order.
fn write_all(
    tree: &Tree<'_>,
    listing: &Listing,
    root: &Path,
    admin: &Admin,
    conversion: Conversion,
    scratch: &Path,
) -> Result<Vec<fresh_index::Stamp>, HistoryError> {
    let entries = &listing.entries;
    let mut stamps = vec![None; entries.len()];
    let (rules, rest): (Vec<usize>, Vec<usize>) =
        (0..entries.len()).partition(|&i| entries[i].rel().ends_with(".gitattributes"));
    if conversion.asks_attributes() {
        // libgit2 reads a `.gitattributes` from the index until it is written.
        fresh_index::write_unstamped(&admin.index_path(), tree)?;
    }
    let first = Target {
        root,
        scratch: &scratch.join("rules"),
        conversion,
    };
    writer::write_files(&first, entries, &rules, &mut stamps)?;
    let target = Target {
        root,
        scratch: &scratch.join("files"),
        conversion,
    };
    writer::write_files(&target, entries, &rest, &mut stamps)?;
    let repo =
        Repository::open(root).ctx(|| format!("cannot open the worktree {}", root.display()))?;
    writer::write_links(&target, &repo, entries, &mut stamps)?;
    stamps
        .into_iter()
        .zip(entries)
        .map(|(stamp, entry)| {
            stamp.ok_or_else(|| HistoryError::Io {
                context: format!("cannot write {}", root.join(entry.rel()).display()),
                source: std::io::Error::other("it was not written"),
            })
        })
        .collect()
}
