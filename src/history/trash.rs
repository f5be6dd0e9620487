//! Trash copies: files git would not keep (ignored, untracked, `filter=lfs`) are copied to
//! `.pai_history/trash/<session>/<plan>/<path>` before a plan overwrites or removes them, and
//! undo puts the ones git could not restore back.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::{Context, HistoryError};
use super::store;

/// The trash directory of one plan.
pub(crate) fn plan_dir(root: &Path, session: &str, plan: u32) -> PathBuf {
    root.join(store::DIR)
        .join("trash")
        .join(session)
        .join(plan.to_string())
}

/// Where undo keeps what it replaced when restoring a trash copy, so redo can put it back.
pub(crate) fn undone_dir(root: &Path, session: &str, plan: u32) -> PathBuf {
    root.join(store::DIR)
        .join("trash")
        .join(session)
        .join(format!("{plan}.undone"))
}

/// The trash directory of a session; its existence reserves the session id.
pub(crate) fn session_dir(root: &Path, session: &str) -> PathBuf {
    root.join(store::DIR).join("trash").join(session)
}

/// Copy `bytes` to `dir/rel` unless a copy is already there: the first copy is the user's
/// version, later ones would be the plan's own output.
pub(crate) fn save(
    root: &Path,
    dir: &Path,
    rel: &str,
    bytes: &[u8],
    executable: bool,
) -> Result<bool, HistoryError> {
    store::ensure_dir(root)?;
    let target = dir.join(rel);
    if target.symlink_metadata().is_ok() {
        return Ok(false);
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).ctx(|| format!("cannot create {}", parent.display()))?;
    }
    fs::write(&target, bytes).ctx(|| format!("cannot write trash copy {}", target.display()))?;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(&target, fs::Permissions::from_mode(mode))
        .ctx(|| format!("cannot set permissions of {}", target.display()))?;
    Ok(true)
}

/// Every file under `dir`, as `/`-separated paths relative to it, with its bytes and
/// executable bit. An absent directory holds nothing.
pub(crate) fn list(dir: &Path) -> Result<Vec<(String, Vec<u8>, bool)>, HistoryError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).ctx(|| format!("cannot list {}", path.display())),
        };
        for entry in entries {
            let entry = entry.ctx(|| format!("cannot list {}", path.display()))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let child_rel = super::paths::join(&rel, &name);
            let meta = entry
                .metadata()
                .ctx(|| format!("cannot stat {}", entry.path().display()))?;
            if meta.is_dir() {
                stack.push((entry.path(), child_rel));
            } else if meta.is_file() {
                let bytes = fs::read(entry.path())
                    .ctx(|| format!("cannot read {}", entry.path().display()))?;
                out.push((child_rel, bytes, meta.permissions().mode() & 0o111 != 0));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_copy_wins_and_lists_back() {
        let root = tempfile::tempdir().unwrap();
        let dir = plan_dir(root.path(), "s", 1);
        assert!(save(root.path(), &dir, "a/b.txt", b"user", true).unwrap());
        assert!(!save(root.path(), &dir, "a/b.txt", b"agent", false).unwrap());
        assert_eq!(
            list(&dir).unwrap(),
            vec![("a/b.txt".to_string(), b"user".to_vec(), true)]
        );
        assert!(list(&plan_dir(root.path(), "s", 2)).unwrap().is_empty());
    }
}
