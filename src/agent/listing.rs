//! The project's listing for the repository map: every visible file, the walk's reading of
//! each folder kept between runs in the user's cache directory (see
//! `workspace::kept_listing`), and, when the request is known at start, taken while the
//! session opens.

use std::path::{Path, PathBuf};

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
/// of following it. Only the first turn takes it; later ones list the project anew.
pub struct ListingSoon(Option<std::thread::JoinHandle<Option<Corpus>>>);

impl ListingSoon {
    /// Start listing the project at `root`, opened as `cfg` says (the workspace the agent
    /// gets is opened the same way, so both see the same files).
    pub fn start(root: &Path, cfg: WorkspaceConfig) -> ListingSoon {
        let root = root.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("pai-listing".into())
            .spawn(move || {
                let ws = Workspace::open_unswept(&root, cfg).ok()?;
                Some(corpus(&ws))
            });
        // No thread: the turn lists the project itself.
        ListingSoon(handle.ok())
    }

    /// The listing, once taken (`None`: it failed, and the turn lists the project itself).
    pub(crate) fn take(self) -> Option<Corpus> {
        self.0?.join().ok().flatten()
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
        let files: Vec<String> = soon.take().unwrap().iter().map(str::to_string).collect();
        assert_eq!(files, ["src/main.rs"]);
        let missing = ListingSoon::start(&dir.path().join("gone"), WorkspaceConfig::default());
        assert!(missing.take().is_none());
    }
}
