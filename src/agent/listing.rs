//! The project's listing for the repository map: every visible file, the walk's reading of
//! each folder kept between runs in the user's cache directory (see
//! `workspace::kept_listing`), and, when the request is known at start, taken while the
//! session opens.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::history::TrackedBlobs;
use crate::map;
use crate::workspace::{Corpus, Workspace, WorkspaceConfig};

/// The project's files as the map sees them, their listing kept between runs beside the
/// map's cache (in the user's cache directory) so a warm map reads no folder.
pub fn corpus(ws: &Workspace) -> Corpus {
    ws.corpus_kept(listing_cache(ws.root()).as_deref())
}

/// The project's listing for the first turn's map, taken on a thread of its own while the
/// session opens, when the request is known at start (`pai run`): the walk then overlaps the
/// session's start (git's index read for the write check, the session's lock and log) instead
/// of following it. Only the first turn takes it; later ones list the project anew. git's
/// index is copied for the map on another thread meanwhile (see [`IndexSoon`]).
pub struct ListingSoon {
    listing: Option<JoinHandle<Option<Corpus>>>,
    index: IndexSoon,
}

impl ListingSoon {
    /// Start listing the project at `root`, opened as `cfg` says (the workspace the agent
    /// gets is opened the same way, so both see the same files).
    pub fn start(root: &Path, cfg: WorkspaceConfig) -> ListingSoon {
        let at = root.to_path_buf();
        let listing = std::thread::Builder::new()
            .name("pai-listing".into())
            .spawn(move || {
                let ws = Workspace::open_unswept(&at, cfg).ok()?;
                Some(corpus(&ws))
            });
        // No thread: the turn lists the project itself.
        ListingSoon {
            listing: listing.ok(),
            index: IndexSoon::start(root),
        }
    }

    /// The listing, once taken (`None`: it failed, and the turn lists the project itself),
    /// and git's index as read for the map.
    pub(crate) fn take(self) -> (Option<Corpus>, IndexSoon) {
        let corpus = self.listing.and_then(|h| h.join().ok().flatten());
        (corpus, self.index)
    }
}

/// git's index as the map looks tracked files up in it, read on a thread of its own from the
/// start of the session: at 100,000 files reading it takes as long as the rest of a warm map,
/// which waits for it. It stands for the index only while the index is unchanged (see
/// [`TrackedBlobs::is_current`]); otherwise the map reads the index again.
#[derive(Default)]
pub struct IndexSoon(Mutex<Option<JoinHandle<Option<TrackedBlobs>>>>);

impl IndexSoon {
    /// Start reading the index of the repository holding `root`.
    pub fn start(root: &Path) -> IndexSoon {
        let root = root.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("pai-index".into())
            .spawn(move || TrackedBlobs::read(&root));
        IndexSoon(Mutex::new(handle.ok()))
    }

    /// The index read ahead, when it was read and is still current (taken: a second call
    /// gets `None`).
    pub(crate) fn take_current(&self) -> Option<TrackedBlobs> {
        let handle = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        handle
            .join()
            .ok()
            .flatten()
            .filter(TrackedBlobs::is_current)
    }
}

/// Where the listing of the project at `root` is kept (`None`: not kept, as when the cache
/// directory lies inside the project).
fn listing_cache(root: &Path) -> Option<PathBuf> {
    let base = dirs::cache_dir()?;
    let map_cache = map::store::location(&base, root)?;
    Some(
        base.join("pai")
            .join("listing")
            .join(map_cache.file_name()?),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_taken_soon_is_the_projects_visible_files_then() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(dir.path().join(".env"), "SECRET=1\n").unwrap();
        let soon = ListingSoon::start(dir.path(), WorkspaceConfig::default());
        let files: Vec<String> = soon.take().0.unwrap().iter().map(str::to_string).collect();
        assert_eq!(files, ["src/main.rs"]);
        let missing = ListingSoon::start(&dir.path().join("gone"), WorkspaceConfig::default());
        assert!(missing.take().0.is_none());
    }

    #[test]
    fn an_index_read_ahead_is_given_once_and_only_while_git_left_it_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        git(&["add", "a.txt"]);
        let soon = IndexSoon::start(dir.path());
        assert!(soon.take_current().unwrap().blob("a.txt").is_some());
        assert!(soon.take_current().is_none(), "taken once");
        let stale = IndexSoon::start(dir.path());
        // Read before the change below.
        while !stale.0.lock().unwrap().as_ref().unwrap().is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::fs::write(dir.path().join("b.txt"), "two\n").unwrap();
        git(&["add", "b.txt"]);
        assert!(stale.take_current().is_none(), "the index changed since");
        assert!(IndexSoon::default().take_current().is_none());
    }
}
