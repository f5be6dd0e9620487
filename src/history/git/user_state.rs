//! pai's per-project state that the repository must not be able to write: kept in the user's
//! state directory (`$XDG_STATE_HOME/pai/projects/<project id>/`), never inside the project.
//!
//! A cloned or unpacked repository controls every byte under its root, `.pai_history`
//! included, so anything pai later *acts on* (the operation journal, which commits pai made,
//! input history) lives here instead. The project id is the hash of the canonical path of
//! git's common directory, so every linked worktree of one repository shares one state
//! directory, and a repository moved to another path starts afresh.

use std::path::{Path, PathBuf};

use crate::history::error::{Context as _, HistoryError};

/// The project id for a git common directory: the first 16 hex digits of the SHA-256 of its
/// canonical path.
pub(crate) fn project_id(common_dir: &Path) -> Result<String, HistoryError> {
    use sha2::Digest as _;
    let canonical = std::fs::canonicalize(common_dir)
        .ctx(|| format!("cannot resolve git directory {}", common_dir.display()))?;
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    Ok(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// `$XDG_STATE_HOME/pai/projects/<project id>/` for the repository whose common directory is
/// `common_dir`, created (mode 0700) on first use. Refused when the user's state directory
/// lies inside the project itself (`project_root`), where the repository could plant it.
pub(crate) fn dir(common_dir: &Path, project_root: &Path) -> Result<PathBuf, HistoryError> {
    let base = dirs::state_dir()
        .ok_or_else(|| std::io::Error::other("set HOME or XDG_STATE_HOME"))
        .ctx(|| "no state directory for pai's records".to_string())?;
    let dir = base.join("pai/projects").join(project_id(common_dir)?);
    if let (Ok(state), Ok(root)) = (
        std::fs::canonicalize(&base),
        std::fs::canonicalize(project_root),
    ) && state.starts_with(&root)
    {
        return Err(HistoryError::Refused {
            message: format!(
                "the state directory {} is inside the project",
                base.display()
            ),
            hint: "pai keeps its records outside the project: set XDG_STATE_HOME elsewhere"
                .to_string(),
        });
    }
    create_private(&dir)?;
    Ok(dir)
}

/// pai's per-project state directory for the project at `root` (see [`dir`]): its
/// repository's, or (no repository pai may use) one keyed by the project directory itself.
/// `None` when there is no usable state directory; callers then keep nothing.
pub fn project_dir(root: &Path) -> Option<PathBuf> {
    let common = match super::repo::find(root) {
        Ok(super::repo::Found::Repo(hr)) => hr.repo.commondir().to_path_buf(),
        _ => root.to_path_buf(),
    };
    dir(&common, root).ok()
}

/// Create `dir` and its parents; the leaf is made readable by the user alone.
fn create_private(dir: &Path) -> Result<(), HistoryError> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .ctx(|| format!("cannot create {}", dir.display()))?;
    let meta = std::fs::symlink_metadata(dir).ctx(|| format!("cannot read {}", dir.display()))?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("not a directory; move it aside"))
            .ctx(|| format!("cannot use {}", dir.display()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_stable_and_depends_on_the_path() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let id = project_id(a.path()).unwrap();
        assert_eq!(id.len(), 16);
        assert_eq!(id, project_id(a.path()).unwrap());
        assert_ne!(id, project_id(b.path()).unwrap());
    }
}
