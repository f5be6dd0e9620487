//! A parsed index file: read once (mapped when large), then asked for entries by path or
//! position, with nothing parsed per entry beyond where it starts. The read hands the
//! mapping's pages back as it goes, so a large index is not resident after it (see
//! `file_bytes`): a lookup faults in only the pages it reads.

use std::fs::{self, File};
use std::path::Path;

use git2::Oid;

use super::file_bytes::{FileBytes, WINDOW};
use super::format::{
    Entry, EntryReader, Extension, FIXED_LEN, FLAG_EXTENDED, FLAGS_OFFSET, HASH_LEN, HEADER_LEN,
    MODE_OFFSET, NAME_MASK, OID_OFFSET, RawEntry, STAGE_MASK, bad, be16, be32, parse_extensions,
    parse_header,
};
use crate::history::error::HistoryError;

/// A parsed index file.
#[derive(Debug)]
pub(crate) struct IndexFile {
    pub(super) version: u32,
    pub(super) buf: FileBytes,
    pub(super) entries: Vec<RawEntry>,
    /// Where the last entry ends in `buf` (and the extensions start).
    pub(super) entries_end: u32,
    /// Version 4: where each entry's path ends in `arena` (its paths are decompressed one
    /// after the other, so a path starts where the previous one ends). Empty otherwise.
    pub(super) path_ends: Vec<u32>,
    pub(super) arena: Vec<u8>,
    pub(super) extensions: Vec<Extension>,
    /// The entries at a stage other than 0 (unresolved conflicts), found while reading.
    pub(super) conflicted: Vec<u32>,
    /// Every [`PIVOT_EVERY`]th entry's path, copied while reading, one after the other, and
    /// where each ends: a lookup narrows to one block of entries here, then reads the
    /// mapping only there. A binary search over the mapping alone would fault in a page (and
    /// the kernel the pages around it, 64-128 KiB) at each of its seventeen steps, 2 MB for
    /// one lookup in an index of 100,000 entries.
    pub(super) pivots: Vec<u8>,
    pub(super) pivot_ends: Vec<u32>,
    /// The trailing checksum, copied while reading (`None`: written without one): asked for
    /// later, the mapping's last page would be faulted in again.
    pub(super) checksum: Option<[u8; HASH_LEN]>,
}

/// How many entries a pivot stands for.
const PIVOT_EVERY: usize = 64;

impl IndexFile {
    /// An empty index (no file yet).
    pub(super) fn empty() -> IndexFile {
        IndexFile {
            version: 2,
            buf: FileBytes::Read(Vec::new()),
            entries: Vec::new(),
            entries_end: HEADER_LEN as u32,
            path_ends: Vec::new(),
            arena: Vec::new(),
            extensions: Vec::new(),
            conflicted: Vec::new(),
            pivots: Vec::new(),
            pivot_ends: Vec::new(),
            checksum: None,
        }
    }

    /// Read the index at `path` (unshared: the tests' reader; pai reads through
    /// [`load_shared`]); a missing file is an empty index. Like git, the trailing
    /// checksum is not re-computed on read (that alone would cost as much as the rest); the
    /// structure is checked instead.
    #[cfg(test)]
    pub(crate) fn read(path: &Path) -> Result<IndexFile, HistoryError> {
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(IndexFile::empty()),
            Err(e) => return Err(bad(path, e)),
        };
        let meta = file.metadata().map_err(|e| bad(path, e))?;
        let buf = file_bytes(path, &mut file, &meta)?;
        IndexFile::parse(path, buf)
    }

    pub(super) fn parse(path: &Path, buf: impl Into<FileBytes>) -> Result<IndexFile, HistoryError> {
        let buf: FileBytes = buf.into();
        let (version, count) = parse_header(path, &buf)?;
        let mut entries = Vec::with_capacity(count);
        let mut conflicted = Vec::new();
        let mut reader = EntryReader::new(path, &buf, version, count);
        let mut released = 0;
        let (mut pivots, mut pivot_ends) = (Vec::new(), Vec::new());
        for i in 0..count {
            let e = reader.entry()?;
            if be16(&buf, e.start as usize + FLAGS_OFFSET) & STAGE_MASK != 0 {
                conflicted.push(i as u32);
            }
            if i % PIVOT_EVERY == 0 {
                let from: &[u8] = if version == 4 { &reader.arena } else { &buf };
                pivots.extend_from_slice(&from[reader.prev.clone()]);
                pivot_ends.push(pivots.len() as u32);
            }
            entries.push(e);
            if reader.pos - released >= WINDOW {
                buf.release(released..reader.pos);
                released = reader.pos;
            }
        }
        let EntryReader {
            arena,
            pos,
            end,
            nameless,
            path_ends,
            ..
        } = reader;
        let extensions = parse_extensions(path, &buf, pos, end)?;
        if nameless {
            return Err(bad(path, "an entry has no path"));
        }
        let checksum = buf
            .len()
            .checked_sub(HASH_LEN)
            .and_then(|at| <[u8; HASH_LEN]>::try_from(&buf[at..]).ok())
            .filter(|sum| *sum != [0; HASH_LEN]);
        buf.release_all();
        Ok(IndexFile {
            version,
            buf,
            entries,
            entries_end: pos as u32,
            path_ends,
            arena,
            extensions,
            conflicted,
            pivots,
            pivot_ends,
            checksum,
        })
    }

    /// An entry's flags.
    fn flags_of(&self, e: RawEntry) -> u16 {
        be16(&self.buf, e.start as usize + FLAGS_OFFSET)
    }

    /// The length of an entry's fixed part: 62, or 64 with the extended flags.
    pub(super) fn fixed_of(&self, e: RawEntry) -> usize {
        if self.flags_of(e) & FLAG_EXTENDED != 0 {
            FIXED_LEN + 2
        } else {
            FIXED_LEN
        }
    }

    /// An entry's stage (0 unless it is a side of a conflict).
    fn stage_of(&self, e: RawEntry) -> u16 {
        (self.flags_of(e) & STAGE_MASK) >> 12
    }

    /// Where entry `i` ends in `buf`: where the next one starts.
    pub(super) fn end_of(&self, i: usize) -> usize {
        self.entries
            .get(i + 1)
            .map_or(self.entries_end, |e| e.start) as usize
    }

    /// The path of entry `i` (raw bytes); empty past the end.
    pub(crate) fn path_at(&self, i: usize) -> &[u8] {
        let Some(&e) = self.entries.get(i) else {
            return &[];
        };
        if self.version == 4 {
            let start = match i.checked_sub(1) {
                Some(prev) => self.path_ends[prev] as usize,
                None => 0,
            };
            &self.arena[start..self.path_ends[i] as usize]
        } else {
            // The flags hold the path's length, unless it is too long for them: then it ends
            // at its NUL (both checked when the file was read).
            let start = e.start as usize + self.fixed_of(e);
            let len = (self.flags_of(e) & NAME_MASK) as usize;
            let len = if len < NAME_MASK as usize {
                len
            } else {
                let rest = &self.buf[start..self.end_of(i)];
                rest.iter().position(|&b| b == 0).unwrap_or(rest.len())
            };
            &self.buf[start..start + len]
        }
    }

    /// Entry `i`, when it is a stage-0 entry.
    fn stage0(&self, i: usize) -> Option<RawEntry> {
        self.entries
            .get(i)
            .copied()
            .filter(|&e| self.stage_of(e) == 0)
    }

    /// The blob id and mode an entry records.
    pub(super) fn entry_of(&self, e: RawEntry) -> Entry {
        let at = e.start as usize;
        let mut id = [0u8; 20];
        id.copy_from_slice(&self.buf[at + OID_OFFSET..at + OID_OFFSET + 20]);
        // 20 bytes always make an id.
        let id = Oid::from_bytes(&id).unwrap_or(Oid::ZERO_SHA1);
        (id, be32(&self.buf, at + MODE_OFFSET) as i32)
    }

    /// Paths with unresolved conflicts (entries at a stage other than 0).
    pub(crate) fn conflicts(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .conflicted
            .iter()
            .map(|&i| crate::rawname::encode(self.path_at(i as usize)).into_owned())
            .collect();
        out.dedup();
        out
    }

    /// Hand back the pages entries `range` lie on (see [`FileBytes::release`]): a pass over
    /// many entries calls it behind itself, so the file is not left resident after it.
    pub(crate) fn release(&self, range: std::ops::Range<usize>) {
        let Some(first) = self.entries.get(range.start) else {
            return;
        };
        let last = range.end.min(self.entries.len());
        if last > range.start {
            self.buf
                .release(first.start as usize..self.end_of(last - 1));
        }
    }

    /// How many bytes the entries take in the file: about as many as their paths (a bound on
    /// them, but for version 4's shared prefixes), for sizing a copy of the paths.
    pub(crate) fn entries_bytes(&self) -> usize {
        self.entries_end as usize
    }

    /// The index's trailing checksum, as read (`None` when it was written without one).
    pub(crate) fn checksum(&self) -> Option<[u8; HASH_LEN]> {
        self.checksum
    }

    /// How many entries there are (every stage).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The blob id and mode of entry `i`, when it is a stage-0 entry.
    pub(crate) fn entry_at(&self, i: usize) -> Option<Entry> {
        self.stage0(i).map(|e| self.entry_of(e))
    }

    /// The raw blob id and mode of entry `i`, when it is a stage-0 entry (no `Oid` made: the
    /// map asks for every tracked file's).
    pub(crate) fn raw_entry_at(&self, i: usize) -> Option<(&[u8], u32)> {
        let e = self.stage0(i)?;
        let at = e.start as usize;
        let id = self.buf.get(at + OID_OFFSET..at + OID_OFFSET + 20)?;
        Some((id, be32(&self.buf, at + MODE_OFFSET)))
    }

    /// The stat data entry `i` records, as git writes it: ctime and mtime (seconds,
    /// nanoseconds), dev, ino, mode, uid, gid, size, each 32 bits; `None` past the end.
    pub(crate) fn stat_at(&self, i: usize) -> Option<[u32; 10]> {
        let e = self.entries.get(i)?;
        let at = e.start as usize;
        let mut out = [0u32; 10];
        for (k, v) in out.iter_mut().enumerate() {
            *v = be32(&self.buf, at + 4 * k);
        }
        Some(out)
    }

    /// The position of the first entry at `path` (any stage).
    pub(crate) fn position(&self, path: &[u8]) -> Option<usize> {
        let i = self.lower_bound(path);
        (i < self.entries.len() && self.path_at(i) == path).then_some(i)
    }

    /// Whether any entry lies below the directory `dir` (raw bytes, no trailing `/`).
    pub(crate) fn has_under(&self, dir: &[u8]) -> bool {
        let mut prefix = dir.to_vec();
        prefix.push(b'/');
        let i = self.lower_bound(&prefix);
        i < self.entries.len() && self.path_at(i).starts_with(&prefix)
    }

    /// Index of the first entry whose path is not less than `path`.
    pub(super) fn lower_bound(&self, path: &[u8]) -> usize {
        // The pivots below `path` say which block it is in: past pivot k-1's entry, and not
        // past pivot k's (the entries sort, so their pivots do).
        let pivot = |k: usize| {
            let start = k.checked_sub(1).map_or(0, |p| self.pivot_ends[p] as usize);
            &self.pivots[start..self.pivot_ends[k] as usize]
        };
        let (mut lo, mut hi) = (0, self.pivot_ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pivot(mid) < path {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let below = lo;
        // A binary search over positions, not entries: a version 4 path needs its neighbour.
        let (mut lo, mut hi) = (
            below.checked_sub(1).map_or(0, |k| k * PIVOT_EVERY + 1),
            (below * PIVOT_EVERY).min(self.entries.len()),
        );
        if below == self.pivot_ends.len() {
            hi = self.entries.len();
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.path_at(mid) < path {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The stage-0 entry at `path`.
    pub(crate) fn get(&self, path: &str) -> Option<Entry> {
        let path = crate::rawname::decode(path);
        let path = path.as_ref();
        let i = self.lower_bound(path);
        (i..self.entries.len())
            .take_while(|&j| self.path_at(j) == path)
            .find_map(|j| self.stage0(j))
            .map(|e| self.entry_of(e))
    }

    /// Paths of the entries below directory `dir`.
    pub(crate) fn under(&self, dir: &str) -> Vec<String> {
        let mut prefix = crate::rawname::decode(dir).into_owned();
        prefix.push(b'/');
        let i = self.lower_bound(&prefix);
        (i..self.entries.len())
            .map(|j| self.path_at(j))
            .take_while(|p| p.starts_with(&prefix))
            .map(|p| crate::rawname::encode(p).into_owned())
            .collect()
    }
}

/// The bytes of the index file open as `file` at `path`, whose metadata is `meta`: mapped
/// when it is a large regular file (see [`FileBytes`]).
pub(super) fn file_bytes(
    path: &Path,
    file: &mut File,
    meta: &fs::Metadata,
) -> Result<FileBytes, HistoryError> {
    FileBytes::of(file, meta.len(), meta.is_file()).map_err(|e| bad(path, e))
}
