//! What the walk for the map's project listing read of each folder, kept between runs in the
//! user's cache directory (never in the project): the folder's visible entries, with the
//! stamps of the folder and of its `.gitignore` taken before it was read.
//!
//! A folder's entries change only with its modification or status-change time, and what is
//! visible of them only with the ignore rules: its own `.gitignore`, its ancestors', the
//! global ones and the deny-list. So the next walk reuses a folder's kept entries, instead of
//! listing it and matching every entry against the rules, when the folder still has its stamp
//! and neither its `.gitignore` nor an ancestor's changed (a folder whose own entries changed
//! is read again; its unchanged subfolders are still reused). A stamp taken within the file
//! system's timestamp granularity of the walk is not trusted (git's "racily clean" problem):
//! such a folder is read again next time. Anything unusable (another format, other rules, a
//! file that does not parse) means every folder is read.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::sys::{FileStat, Kind};
use super::walk::Entry;

/// Bumped whenever what is kept, or how it is read, changes.
const FORMAT: u32 = 2;
/// A kept listing larger than this is not read (nothing pai writes comes near it).
const MAX_BYTES: u64 = 1 << 30;
/// When a walk's listing is kept.
#[derive(Debug, Clone, Copy)]
pub struct Keeping {
    /// How close to the walk a stamp may be and still be trusted: a change made within the
    /// file system's timestamp granularity of the stamp could leave it unchanged.
    pub racy: Duration,
    /// The fewest entries worth keeping: a smaller tree is read faster than a file written.
    pub min_entries: usize,
}

impl Default for Keeping {
    /// Two seconds covers the coarsest common file systems; a few thousand entries take a
    /// millisecond or two to read.
    fn default() -> Self {
        Keeping {
            racy: Duration::from_secs(2),
            min_entries: 4_096,
        }
    }
}

/// What `stat` says of a folder or ignore file: equal keys, same entries (or same rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Key {
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
    /// Whether the key was taken so soon before `walked` (or after it) that a change in the
    /// same timestamp tick would not show in it.
    fn racy(&self, walked: SystemTime, racy: Duration) -> bool {
        let ns = |(secs, nanos): (i64, u32)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        let edge = walked
            .checked_sub(racy)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(i128::MAX, |d| {
                i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
            });
        ns(self.mtime) >= edge || ns(self.ctime) >= edge
    }
}

/// A folder's `.gitignore` as the walk found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Ignore {
    /// It had none.
    Absent,
    /// It had one with this stamp.
    Present(Key),
    /// Not known (stamped too close to the walk): the rules below it are read again.
    Unknown,
}

impl Ignore {
    /// The `.gitignore` stamp a walk took (`None`: there was none).
    pub(crate) fn of(stat: Option<FileStat>) -> Ignore {
        stat.map_or(Ignore::Absent, |st| Ignore::Present(st.into()))
    }
}

/// One folder as kept: borrowed from the kept file's bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Folder<'a> {
    /// Project-relative path (`""`: the root).
    rel: &'a str,
    /// The folder's stamp; `None` when it was too close to the walk to trust.
    key: Option<Key>,
    /// Its `.gitignore`.
    ignore: Ignore,
    /// Its visible entries' names, each ended by a NUL, in the walk's order.
    names: &'a [u8],
    /// Each entry's kind (see [`kind_code`]).
    kinds: &'a [u8],
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    rules: u64,
}

/// The folders of a kept listing, by path, and the bytes they were read from (which the
/// entries of reused folders share rather than copy).
pub(crate) struct KeptFolders<'a> {
    bytes: &'a Arc<Vec<u8>>,
    folders: HashMap<&'a str, Folder<'a>>,
}

impl<'a> KeptFolders<'a> {
    /// The folder at `rel`, when kept.
    fn get(&self, rel: &str) -> Option<&Folder<'a>> {
        self.folders.get(rel)
    }

    /// Where `part` (borrowed from the kept bytes) lies in them.
    fn range_of(&self, part: &[u8]) -> Option<Range<usize>> {
        let start = (part.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)?;
        let end = start.checked_add(part.len())?;
        (end <= self.bytes.len()).then_some(start..end)
    }

    /// Whether the folder at `rel` keeps the rules it had: its `.gitignore` is `ignore` as
    /// before (the caller checks the ancestors).
    pub(crate) fn same_rules(&self, rel: &str, ignore: Ignore) -> bool {
        ignore != Ignore::Unknown && self.get(rel).is_some_and(|f| f.ignore == ignore)
    }

    /// Whether the folder at `rel` still has the stamp `key` it was kept with, and had no
    /// `.gitignore` then.
    pub(crate) fn unchanged_without_ignore(&self, rel: &str, key: Key) -> bool {
        self.get(rel)
            .is_some_and(|f| f.key == Some(key) && f.ignore == Ignore::Absent)
    }

    /// The kept entries of the folder at `rel` when its stamp is still `key` (the caller
    /// knows its rules are the same); `None` when it must be read.
    pub(crate) fn entries(&self, rel: &str, key: Key) -> Option<KeptEntries> {
        let f = self.get(rel)?;
        if f.key != Some(key) {
            return None;
        }
        let kinds_known = f.kinds.iter().all(|&k| kind_of(k).is_some());
        if !(kinds_known && names_listable(f.names, f.kinds.len())) {
            return None;
        }
        Some(KeptEntries {
            bytes: Some(Arc::clone(self.bytes)),
            names: self.range_of(f.names)?,
            kinds: self.range_of(f.kinds)?,
        })
    }
}

/// Whether `names` holds `count` names a walk can list (not empty, `.` or `..`, no `/`), each
/// ended by a NUL: anything else means the file is not what pai wrote. One pass over the
/// bytes, not a split per name.
fn names_listable(names: &[u8], count: usize) -> bool {
    let (mut seen, mut start) = (0, 0);
    for (i, &b) in names.iter().enumerate() {
        match b {
            b'/' => return false,
            0 => {
                // Lengths first: a slice pattern of strings compares each in full.
                let name = &names[start..i];
                if name.len() <= 2 && name.iter().all(|&c| c == b'.') {
                    return false;
                }
                seen += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    start == names.len() && seen == count
}

/// A folder's entries as kept: what a reading would give, without a `CString` per entry,
/// in the kept listing's bytes (shared by every folder reused from them, not copied).
#[derive(Debug, Default)]
pub(crate) struct KeptEntries {
    bytes: Option<Arc<Vec<u8>>>,
    /// Where the names are, each ended by a NUL.
    names: Range<usize>,
    /// Where each entry's kind is.
    kinds: Range<usize>,
}

impl KeptEntries {
    /// None.
    pub(crate) const fn new() -> Self {
        KeptEntries {
            bytes: None,
            names: 0..0,
            kinds: 0..0,
        }
    }

    /// The names, each ended by a NUL.
    pub(crate) fn names(&self) -> &[u8] {
        self.part(&self.names)
    }

    /// Each entry's kind code.
    pub(crate) fn kinds(&self) -> &[u8] {
        self.part(&self.kinds)
    }

    fn part(&self, range: &Range<usize>) -> &[u8] {
        self.bytes
            .as_deref()
            .and_then(|b| b.get(range.clone()))
            .unwrap_or(&[])
    }

    /// How many entries.
    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether any of them is a folder (a folder of thousands of files holds none, and its
    /// names need not be gone through to find them).
    pub(crate) fn has_dirs(&self) -> bool {
        memchr::memchr(kind_code(Kind::Dir), self.kinds()).is_some()
    }

    /// How many of them are files.
    pub(crate) fn files(&self) -> usize {
        let file = kind_code(Kind::File);
        self.kinds().iter().filter(|&&k| k == file).count()
    }

    /// Each entry's name and kind, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], Kind)> {
        self.names()
            .split(|&b| b == 0)
            .zip(self.kinds())
            .map(|(name, &k)| (name, kind_of(k).unwrap_or(Kind::Other)))
    }

    /// [`Self::iter`] with the names as text, when every name is its own spelling (see
    /// [`crate::rawname`]): UTF-8 holding none of the characters that stand for other bytes,
    /// checked once for the folder rather than name by name.
    pub(crate) fn iter_text(&self) -> Option<impl Iterator<Item = (&str, Kind)>> {
        // Those characters (U+10FF80 and up) are all written with a leading byte 0xF4.
        if memchr::memchr(0xF4, self.names()).is_some() {
            return None;
        }
        let names = std::str::from_utf8(self.names()).ok()?;
        // Split at the NULs bytewise (a NUL is a whole character, so every piece is text):
        // names are short, and a search per name costs more than the names' bytes.
        let mut start = 0;
        let pieces = names
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b == 0)
            .map(move |(end, _)| {
                let name = names.get(start..end).unwrap_or("");
                start = end + 1;
                name
            });
        Some(
            pieces
                .zip(self.kinds())
                .map(|(name, &k)| (name, kind_of(k).unwrap_or(Kind::Other))),
        )
    }
}

fn kind_code(kind: Kind) -> u8 {
    match kind {
        Kind::Dir => 0,
        Kind::File => 1,
        Kind::Symlink => 2,
        Kind::Other => 3,
    }
}

fn kind_of(code: u8) -> Option<Kind> {
    Some(match code {
        0 => Kind::Dir,
        1 => Kind::File,
        2 => Kind::Symlink,
        3 => Kind::Other,
        _ => return None,
    })
}

/// The bytes of the listing kept in `file` (`None`: none usable).
pub(crate) fn read(file: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    std::fs::read(file).ok()
}

/// The folders kept in `bytes`, when they were listed under the same `rules`.
pub(crate) fn parse(bytes: &Arc<Vec<u8>>, rules: u64) -> Option<KeptFolders<'_>> {
    let (header, rest): (Header, &[u8]) = postcard::take_from_bytes(bytes).ok()?;
    if header.format != FORMAT || header.rules != rules {
        return None;
    }
    let folders: Vec<Folder<'_>> = postcard::from_bytes(rest).ok()?;
    Some(KeptFolders {
        bytes,
        folders: folders.into_iter().map(|f| (f.rel, f)).collect(),
    })
}

/// What a recording walk read of one folder.
pub(crate) struct Read<'a> {
    /// Project-relative path.
    pub rel: &'a str,
    /// The folder's stamp and its `.gitignore`'s, taken before it was read.
    pub stamps: (FileStat, Option<FileStat>),
    /// Its visible entries as read.
    pub entries: &'a [Entry],
    /// Its visible entries as kept (when it was not read).
    pub kept: &'a KeptEntries,
    /// Whether they came from the kept listing.
    pub reused: bool,
}

/// Keep what a recording walk read of every folder it read or reused (`read`), under
/// `rules`, in `file` (written whole or not at all, private to the user). `walked` is when
/// the walk began: stamps within `keeping.racy` of it are not trusted. Failing to keep it only
/// makes the next walk read every folder. Nothing is written for a tree under
/// `keeping.min_entries`, nor for a walk that read few entries (under a sixteenth: a folder
/// where a file was added, say): reading them again next time costs less than writing every
/// folder's entries now.
pub(crate) fn save(
    file: &Path,
    rules: u64,
    read: &[Read<'_>],
    walked: SystemTime,
    keeping: Keeping,
) {
    let total: usize = read.iter().map(|r| r.entries.len() + r.kept.len()).sum();
    let fresh: usize = read
        .iter()
        .filter(|r| !r.reused)
        .map(|r| r.entries.len().max(1))
        .sum();
    if total < keeping.min_entries || fresh == 0 || fresh.saturating_mul(16) < total {
        return;
    }
    let racy = keeping.racy;
    let mut names = Vec::new();
    let mut kinds = Vec::new();
    let mut spans = Vec::with_capacity(read.len());
    for r in read {
        let start = (names.len(), kinds.len());
        for e in r.entries {
            names.extend_from_slice(e.cname.as_bytes_with_nul());
            kinds.push(kind_code(e.kind));
        }
        names.extend_from_slice(r.kept.names());
        kinds.extend_from_slice(r.kept.kinds());
        spans.push((start, (names.len(), kinds.len())));
    }
    let kept: Vec<Folder<'_>> = read
        .iter()
        .zip(spans)
        .map(|(r, ((n0, k0), (n1, k1)))| {
            let key = Key::from(r.stamps.0);
            Folder {
                rel: r.rel,
                key: (!key.racy(walked, racy)).then_some(key),
                ignore: match Ignore::of(r.stamps.1) {
                    Ignore::Present(k) if k.racy(walked, racy) => Ignore::Unknown,
                    other => other,
                },
                names: &names[n0..n1],
                kinds: &kinds[k0..k1],
            }
        })
        .collect();
    let _ = write(file, rules, &kept);
}

fn write(file: &Path, rules: u64, folders: &[Folder<'_>]) -> std::io::Result<()> {
    let header = Header {
        format: FORMAT,
        rules,
    };
    let mut bytes = postcard::to_stdvec(&header).map_err(std::io::Error::other)?;
    bytes.extend(postcard::to_stdvec(folders).map_err(std::io::Error::other)?);
    crate::private_file::write_atomic(file, &bytes)
}

#[cfg(test)]
mod tests {
    use super::names_listable;

    #[test]
    fn only_names_a_walk_can_list_are_taken_from_a_kept_listing() {
        let good: [(&[u8], usize); 5] = [
            (b"", 0),
            (b"a\0", 1),
            (b"..foo\0.x\0a.b\0", 3),
            (b"\xff\xfe\0", 1),
            (b".gitignore\0src\0", 2),
        ];
        for (names, count) in good {
            assert!(names_listable(names, count), "{names:?}");
        }
        let bad: [(&[u8], usize); 10] = [
            (b"\0", 1),
            (b".\0", 1),
            (b"..\0", 1),
            (b"a\0\0", 2),
            (b"a\0..\0", 2),
            (b"a/b\0", 1),
            (b"/\0", 1),
            (b"a\0b", 2),
            (b"a\0b\0", 1),
            (b"a\0b\0", 3),
        ];
        for (names, count) in bad {
            assert!(!names_listable(names, count), "{names:?}");
        }
    }
}
