//! The index as this process reads it: where it lives (`GIT_INDEX_FILE` included) and one
//! copy shared by every reader while the file's checksum holds.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::file::{IndexFile, file_bytes};
use super::format::{HASH_LEN, bad};
use crate::history::error::HistoryError;

/// Where the index of the repository whose git directory is `git_dir` lives: `GIT_INDEX_FILE`
/// when set (relative to the current directory, as git reads it), else `<git_dir>/index`.
pub(crate) fn index_path(git_dir: &Path) -> PathBuf {
    match std::env::var_os("GIT_INDEX_FILE").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
            }
        }
        None => git_dir.join("index"),
    }
}

/// The index last read by [`load_shared`]: its path and trailing checksum, and the index.
type SharedIndex = (PathBuf, [u8; HASH_LEN], Arc<IndexFile>);

static SHARED: Mutex<Option<SharedIndex>> = Mutex::new(None);

/// The index of `repo` as it is now, for reading only, shared with the other readers of this
/// process while the file holds the same content: at 100,000 files an index is 10 MB, and a
/// turn reads it for the write check, the repository map and the plan's preview. The file's
/// trailing checksum (git's SHA-1 of everything before it) tells whether it changed; an
/// index written without one (`index.skipHash`) is read every time.
pub(crate) fn load_shared(repo: &git2::Repository) -> Result<Arc<IndexFile>, HistoryError> {
    load_shared_at(index_path(repo.path()))
}

/// [`load_shared`] for the index file at `path`.
pub(crate) fn load_shared_at(path: PathBuf) -> Result<Arc<IndexFile>, HistoryError> {
    let mut file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Arc::new(IndexFile::empty()));
        }
        Err(e) => return Err(bad(&path, e)),
    };
    let meta = file.metadata().map_err(|e| bad(&path, e))?;
    // Held while the index is read: a second reader of it (the map's, started while the
    // session opens) waits for this one's copy instead of reading its own beside it.
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(sum) = trailing_sum(&file, meta.len())
        && let Some((p, s, index)) = shared.as_ref()
        && *p == path
        && *s == sum
    {
        return Ok(Arc::clone(index));
    }
    let buf = file_bytes(&path, &mut file, &meta)?;
    let index = Arc::new(IndexFile::parse(&path, buf)?);
    if let Some(sum) = index.checksum() {
        *shared = Some((path, sum, Arc::clone(&index)));
    }
    Ok(index)
}

/// The trailing checksum of the index file at `path` now (`None`: missing, unreadable, or
/// written without one): one read of its last 20 bytes tells whether it changed.
pub(crate) fn checksum_of(path: &Path) -> Option<[u8; HASH_LEN]> {
    let file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    trailing_sum(&file, size)
}

/// The last [`HASH_LEN`] bytes of `file`, `size` bytes long, when they are a checksum (git
/// writes zeros there under `index.skipHash`).
fn trailing_sum(file: &File, size: u64) -> Option<[u8; HASH_LEN]> {
    let mut sum = [0u8; HASH_LEN];
    let at = size.checked_sub(HASH_LEN as u64)?;
    std::os::unix::fs::FileExt::read_exact_at(file, &mut sum, at).ok()?;
    (sum != [0; HASH_LEN]).then_some(sum)
}
