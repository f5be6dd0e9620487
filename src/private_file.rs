//! Files pai keeps for the user outside any project (the map's cache, the kept listing):
//! written whole or not at all, readable by the user alone.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::Path;

/// Write `bytes` to `file` atomically (a temporary file beside it, renamed over it), mode
/// 0600, making its folders (mode 0700) first.
pub fn write_atomic(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(file, |f| f.write_all(bytes))
}

/// Like [`write_atomic`], with the contents written by `fill` into the temporary file (for a
/// file too large to hold in memory whole).
pub fn write_atomic_with(
    file: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let Some(dir) = file.parent() else {
        return Err(std::io::Error::other(format!(
            "{} has no folder to write in",
            file.display()
        )));
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    fill(tmp.as_file_mut())?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}
