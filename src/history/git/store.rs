//! pai's own directory in the project, `.pai_history/`: session logs, the lock file, trash
//! copies and (outside a repository) the private git repository. History writes here directly;
//! the workspace gate keeps the model out of it.

use std::path::{Path, PathBuf};

use crate::workspace::StateDir;

use crate::history::error::{Context, HistoryError};

/// The directory's name at the project root.
pub(crate) const DIR: &str = crate::layout::STATE_DIR;

/// `<root>/.pai_history`, created on first use with a `.gitignore` of `*` so that it never
/// shows up in the user's `git status`.
/// The directory is opened without following a link (see [`StateDir`]): a planted
/// `.pai_history` symlink is refused.
pub(crate) fn ensure_dir(root: &Path) -> Result<PathBuf, HistoryError> {
    Ok(open(root)?.path().to_path_buf())
}

/// `<root>/.pai_history` opened (created) through [`StateDir`].
pub(crate) fn open(root: &Path) -> Result<StateDir, HistoryError> {
    StateDir::open(root, true).ctx(|| format!("cannot open {}", root.join(DIR).display()))
}

/// The session log a session id names (SPEC section 9); its existence reserves the id.
pub(crate) fn session_log(root: &Path, id: &str) -> PathBuf {
    root.join(DIR).join(format!("session_{id}.log"))
}

/// The private repository used outside a git repository.
pub(crate) fn private_git_dir(root: &Path) -> PathBuf {
    root.join(DIR).join("git")
}
