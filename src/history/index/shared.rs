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
    let size = meta.len();
    let mut sum = [0u8; HASH_LEN];
    let summed = size >= HASH_LEN as u64
        && std::os::unix::fs::FileExt::read_exact_at(&file, &mut sum, size - HASH_LEN as u64)
            .is_ok()
        && sum != [0; HASH_LEN];
    if summed {
        let shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((p, s, index)) = shared.as_ref()
            && *p == path
            && *s == sum
        {
            return Ok(Arc::clone(index));
        }
    }
    let buf = file_bytes(&path, &mut file, &meta)?;
    let read_sum: Option<[u8; HASH_LEN]> = buf
        .len()
        .checked_sub(HASH_LEN)
        .and_then(|at| buf[at..].try_into().ok())
        .filter(|s| *s != [0; HASH_LEN]);
    let index = Arc::new(IndexFile::parse(&path, buf)?);
    if let Some(sum) = read_sum {
        *SHARED.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((path, sum, Arc::clone(&index)));
    }
    Ok(index)
}
