//! Where the operation journal's records live (`user_state::dir(..)/ops/`, never in the
//! project) and how they are written and removed: atomically (temp, fsync, rename, fsync of
//! the folder), so a crash leaves the old record or the new one whole.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::Repository;

use super::record::Record;
use crate::history::error::{Context as _, HistoryError};
use crate::history::git::user_state;

/// Where the record of an operation on the work tree at `root` of `repo` lives.
pub(crate) fn path_for(repo: &Repository, root: &Path) -> Result<PathBuf, HistoryError> {
    let dir = user_state::dir(repo.commondir(), root)?.join("ops");
    fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    Ok(dir.join(format!("{}.json", user_state::project_id(root)?)))
}

/// Write `record` at `path` so that a crash leaves the old record or the new one whole.
pub(crate) fn write_atomic(path: &Path, record: &Record) -> Result<(), HistoryError> {
    let text = serde_json::to_vec_pretty(record)
        .map_err(std::io::Error::other)
        .ctx(|| "cannot encode the operation journal".into())?;
    let tmp = path.with_extension("tmp");
    let what = || format!("cannot write the operation journal {}", tmp.display());
    let mut file = fs::File::create(&tmp).ctx(what)?;
    file.write_all(&text).ctx(what)?;
    file.sync_all().ctx(what)?;
    drop(file);
    fs::rename(&tmp, path).ctx(|| format!("cannot write {}", path.display()))?;
    sync_dir(path);
    Ok(())
}

/// Make a rename or removal in `path`'s folder durable. Best effort: a file system without
/// directory fsync keeps the order of operations all the same.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
}

/// Remove the record at `path`: the operation is done.
pub(crate) fn remove(path: &Path) -> Result<(), HistoryError> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).ctx(|| format!("cannot remove {}", path.display())),
    }
    sync_dir(path);
    Ok(())
}
