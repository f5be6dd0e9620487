//! The project's file listing for the map, kept between runs in the user's cache directory
//! (never in the project) with the stamps of every folder it was read from and of their
//! `.gitignore` files. A folder's entries change only with its modification or status-change
//! time, so when every folder still has its stamp, no rule changed, and nothing was stamped
//! within the file system's timestamp granularity of the listing (git's "racily clean"
//! problem), the kept listing is what a walk would give: a warm `--plan` then makes one
//! `stat` per folder instead of reading every entry of the tree. Anything else (a folder
//! added, removed or changed, an ignore file edited, a cache that does not parse) means a
//! fresh walk, which keeps the listing again.

use std::ffi::CString;
use std::io::Write as _;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::corpus::Corpus;
use super::scan::Scan;
use super::sys::{self, FileStat, Kind};

/// Bumped whenever what is kept, or how it is read, changes.
const FORMAT: u32 = 1;
/// A kept listing larger than this is not read (nothing pai writes comes near it).
const MAX_BYTES: u64 = 1 << 30;
/// How close to the listing a stamp may be and still be trusted: a change made within the
/// file system's timestamp granularity of the stamp could leave it unchanged. Two seconds
/// covers the coarsest common file systems.
pub(crate) const RACY: Duration = Duration::from_secs(2);

/// What `stat` says of a folder or ignore file: equal keys, same entries (or same rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Key {
    mode: u32,
    size: u64,
    dev: u64,
    ino: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl From<FileStat> for Key {
    fn from(st: FileStat) -> Self {
        Key {
            mode: st.mode,
            size: st.size,
            dev: st.dev,
            ino: st.ino,
            mtime: st.mtime,
            ctime: st.ctime,
        }
    }
}

impl Key {
    /// Whether the key was taken so soon before `listed` (or after it) that a change in the
    /// same timestamp tick would not show in it.
    fn racy(&self, listed: SystemTime, racy: Duration) -> bool {
        let ns = |(secs, nanos): (i64, u32)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        let edge = listed
            .checked_sub(racy)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(i128::MAX, |d| {
                i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
            });
        ns(self.mtime) >= edge || ns(self.ctime) >= edge
    }
}

/// One folder the listing was read from.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Folder {
    /// Project-relative path (`""`: the root).
    rel: String,
    /// The folder's stamp.
    key: Key,
    /// Its `.gitignore`'s stamp, when it had one (one created since changes the folder).
    ignore: Option<Key>,
}

/// The listing and what it was read from.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    format: u32,
    rules: u64,
    folders: Vec<Folder>,
    text: String,
    ends: Vec<u32>,
}

/// The stamps of every folder of `scan`, or `None` when the scan cannot be kept: a folder
/// was unreadable, was not stamped, or had folders past the depth limit.
pub(crate) struct Stamps(Vec<Folder>);

impl Stamps {
    /// The stamps a recording scan took.
    pub(crate) fn of(scan: &Scan) -> Option<Stamps> {
        let mut folders = Vec::with_capacity(scan.len());
        for id in 0..scan.len() {
            let d = scan.dir(id);
            if d.unreadable {
                return None;
            }
            let (key, ignore) = d.stamps?;
            let cut = d
                .entries
                .iter()
                .zip(&d.sub)
                .any(|(e, sub)| e.kind == Kind::Dir && sub.is_none());
            if cut {
                return None;
            }
            folders.push(Folder {
                rel: d.rel.clone(),
                key: key.into(),
                ignore: ignore.map(Key::from),
            });
        }
        Some(Stamps(folders))
    }
}

/// The listing kept in `file`, when it was read under the same `rules` and every folder
/// (and ignore file) below `root` still has its stamp.
pub(crate) fn load(file: &Path, rules: u64, root: BorrowedFd<'_>) -> Option<Corpus> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let bytes = std::fs::read(file).ok()?;
    let kept: Kept = postcard::from_bytes(&bytes).ok()?;
    drop(bytes);
    if kept.format != FORMAT || kept.rules != rules || kept.folders.is_empty() {
        return None;
    }
    if !kept.folders.iter().all(|f| still(root, f)) {
        return None;
    }
    Corpus::from_parts(kept.text, kept.ends)
}

/// Whether folder `f` and its ignore file still have their stamps.
fn still(root: BorrowedFd<'_>, f: &Folder) -> bool {
    let stat = |path: &str| -> Option<Key> {
        let name = if path.is_empty() {
            CString::from(c".")
        } else {
            CString::new(path).ok()?
        };
        sys::lstatat_full(root, &name).ok().map(Key::from)
    };
    if stat(&f.rel) != Some(f.key) {
        return false;
    }
    match f.ignore {
        None => true,
        Some(ignore) => {
            let path = if f.rel.is_empty() {
                ".gitignore".to_string()
            } else {
                format!("{}/.gitignore", f.rel)
            };
            stat(&path) == Some(ignore)
        }
    }
}

/// Keep `corpus`, listed under `rules` from the folders `stamps` describes, in `file`
/// (written whole or not at all, private to the user). Not kept when a stamp is too close to
/// `listed`, the time the listing began (within `racy`): a later change could hide in the
/// same tick. Failing to keep it only makes the next listing a walk.
pub(crate) fn save(
    file: &Path,
    rules: u64,
    stamps: Stamps,
    corpus: &Corpus,
    listed: SystemTime,
    racy: Duration,
) {
    let too_recent = |k: &Key| k.racy(listed, racy);
    if stamps
        .0
        .iter()
        .any(|f| too_recent(&f.key) || f.ignore.as_ref().is_some_and(too_recent))
    {
        // An older listing kept there no longer holds either.
        let _ = std::fs::remove_file(file);
        return;
    }
    let (text, ends) = corpus.parts();
    let kept = Kept {
        format: FORMAT,
        rules,
        folders: stamps.0,
        text: text.to_string(),
        ends: ends.to_vec(),
    };
    let _ = write(file, &kept);
}

fn write(file: &Path, kept: &Kept) -> std::io::Result<()> {
    let Some(dir) = file.parent() else {
        return Ok(());
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let bytes = postcard::to_stdvec(kept).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    tmp.write_all(&bytes)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}
