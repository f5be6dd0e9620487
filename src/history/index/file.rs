//! The user's git index, read and updated directly in git's on-disk format (versions 2-4).
//!
//! Why not libgit2's `Index`: it parses every entry into its own structures and rewrites them
//! one by one, which at 100,000 files costs 150-200 ms to read and ~100 ms to write — the
//! whole cost of a plan commit. Here a read is one `read(2)` and a scan, and an update splices
//! the few changed entries between byte-for-byte copies of the rest, so the only work that
//! grows with the repository is copying and hashing the file, as git itself must.
//!
//! Updates follow git's locking protocol (`index.lock`, created exclusively, renamed over the
//! index), so they never interleave with a concurrent git command. Entries pai writes carry
//! zeroed stat data, which makes git re-hash those few files once instead of trusting a stat
//! that a concurrent edit might have made stale. Extensions: the cache tree (`TREE`) is kept
//! with the changed directories invalidated, resolve-undo (`REUC`) is kept, other optional
//! caches are dropped (as git drops extensions it cannot keep valid), and an index that needs
//! a mandatory extension pai does not know (split or sparse index) is refused, never guessed.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use git2::Oid;
use sha1::{Digest, Sha1};

use super::error::HistoryError;
use super::file_bytes::FileBytes;

const SIGNATURE: &[u8; 4] = b"DIRC";
const HEADER_LEN: usize = 12;
const HASH_LEN: usize = 20;

/// A blob as git records a file: its id and mode.
pub(crate) type Entry = (Oid, i32);

/// Stat data (40 bytes), object id (20) and flags (2).
const FIXED_LEN: usize = 62;
const MODE_OFFSET: usize = 24;
const OID_OFFSET: usize = 40;
const FLAGS_OFFSET: usize = 60;
const FLAG_EXTENDED: u16 = 0x4000;
const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: u16 = 0x0fff;

/// One entry as found in the file, kept small (100,000 of them are read per commit): where
/// it starts in `IndexFile::buf`, 4 bytes. The rest is read from the file's bytes when asked
/// for: the fixed part's length, the stage and the path's length from the entry's flags, its
/// end from where the next entry starts. A version 4 path is in `IndexFile::arena`, where
/// `IndexFile::path_ends` says where it ends.
#[derive(Debug, Clone, Copy)]
struct RawEntry {
    start: u32,
}

/// An extension: its signature, and where its data is in `IndexFile::buf`.
type Extension = ([u8; 4], Range<usize>);

/// A parsed index file.
#[derive(Debug)]
pub(crate) struct IndexFile {
    version: u32,
    buf: FileBytes,
    entries: Vec<RawEntry>,
    /// Where the last entry ends in `buf` (and the extensions start).
    entries_end: u32,
    /// Version 4: where each entry's path ends in `arena` (its paths are decompressed one
    /// after the other, so a path starts where the previous one ends). Empty otherwise.
    path_ends: Vec<u32>,
    arena: Vec<u8>,
    extensions: Vec<Extension>,
}

/// Why an index file could not be used.
fn bad(path: &Path, why: impl std::fmt::Display) -> HistoryError {
    HistoryError::Index {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// git's offset varint (varint.c): each continuation adds one before shifting.
fn decode_varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut used = 0;
    let mut c = *b.first()?;
    used += 1;
    let mut val = (c & 127) as usize;
    while c & 128 != 0 {
        val = val.checked_add(1)?;
        if val > (usize::MAX >> 7) {
            return None;
        }
        c = *b.get(used)?;
        used += 1;
        val = (val << 7) + (c & 127) as usize;
    }
    Some((val, used))
}

fn encode_varint(mut value: usize, out: &mut Vec<u8>) {
    let mut tmp = [0u8; 16];
    let mut pos = tmp.len() - 1;
    tmp[pos] = (value & 127) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        pos -= 1;
        tmp[pos] = 128 | (value & 127) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&tmp[pos..]);
}

/// Check the header of the index file `path` (its size, signature and a version pai reads);
/// its version and entry count.
fn parse_header(path: &Path, buf: &[u8]) -> Result<(u32, usize), HistoryError> {
    if buf.len() > u32::MAX as usize {
        return Err(bad(path, "larger than 4 GiB"));
    }
    if buf.len() < HEADER_LEN + HASH_LEN || &buf[..4] != SIGNATURE {
        return Err(bad(path, "not a git index file"));
    }
    let version = be32(buf, 4);
    if !(2..=4).contains(&version) {
        return Err(bad(
            path,
            format!("index version {version} is not supported"),
        ));
    }
    let count = be32(buf, 8) as usize;
    // Every entry takes at least its fixed part and a path terminator, so a count the file
    // cannot hold is corrupt; refused here, before anything is sized by it (a hostile count
    // would otherwise ask for gigabytes up front and abort the process).
    let room = buf.len() - HEADER_LEN - HASH_LEN;
    if count > room / (FIXED_LEN + 1) {
        return Err(bad(
            path,
            format!("the header counts {count} entries, more than the file can hold"),
        ));
    }
    Ok((version, count))
}

/// Reads the entries of an index file one after the other. It is a walk with state: an entry
/// starts where the previous one ends, and a version 4 path is compressed against the
/// previous entry's. Every read is checked against `end`, so a corrupt file is an error,
/// never a panic.
struct EntryReader<'b> {
    /// The index file, for errors.
    file: &'b Path,
    buf: &'b [u8],
    /// Where the entries and extensions end: at the trailing checksum.
    end: usize,
    version: u32,
    /// Where the next entry starts (after the last one: where the extensions start).
    pos: usize,
    /// Version 4's decompressed paths.
    arena: Vec<u8>,
    /// The previous entry's path (in `arena` for version 4, else in `buf`).
    prev: Range<usize>,
    /// Whether an entry had no path.
    nameless: bool,
    /// Version 4: where each path ends in `arena`.
    path_ends: Vec<u32>,
}

impl<'b> EntryReader<'b> {
    /// A reader at the first entry of `buf`, whose header says `version` and `count`.
    fn new(file: &'b Path, buf: &'b [u8], version: u32, count: usize) -> Self {
        EntryReader {
            file,
            buf,
            end: buf.len() - HASH_LEN,
            version,
            pos: HEADER_LEN,
            arena: Vec::with_capacity(if version == 4 { count * 32 } else { 0 }),
            prev: 0..0,
            nameless: false,
            path_ends: Vec::with_capacity(if version == 4 { count } else { 0 }),
        }
    }

    fn truncated(&self) -> HistoryError {
        bad(self.file, "truncated entry")
    }

    /// The next entry: its fixed part (62 bytes, 64 with the extended flags of version 3 and
    /// up), then its path.
    fn entry(&mut self) -> Result<RawEntry, HistoryError> {
        let start = self.pos;
        if start + FIXED_LEN > self.end {
            return Err(self.truncated());
        }
        let flags = be16(self.buf, start + FLAGS_OFFSET);
        let mut fixed = FIXED_LEN;
        if flags & FLAG_EXTENDED != 0 {
            if self.version < 3 {
                return Err(bad(self.file, "extended flags in a version 2 index"));
            }
            fixed += 2;
        }
        self.pos = start + fixed;
        if self.pos > self.end {
            return Err(self.truncated());
        }
        let path_range = if self.version == 4 {
            self.compressed_path()?
        } else {
            self.padded_path(start, fixed, flags)?
        };
        // A split index has nameless entries; the `link` extension after them says so.
        self.nameless |= path_range.is_empty();
        self.prev = path_range.clone();
        if self.version == 4 {
            self.path_ends.push(path_range.end as u32);
        }
        Ok(RawEntry {
            start: start as u32,
        })
    }

    /// A version 4 path: how many bytes to strip from the end of the previous path, then
    /// what follows them, NUL-terminated (no padding). Decompressed into `arena`; its range
    /// there.
    fn compressed_path(&mut self) -> Result<Range<usize>, HistoryError> {
        let (buf, end) = (self.buf, self.end);
        let path_start = self.arena.len();
        let (strip, used) = decode_varint(&buf[self.pos..end]).ok_or_else(|| self.truncated())?;
        self.pos += used;
        let nul = buf[self.pos..end]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.truncated())?;
        if strip > self.prev.len() {
            return Err(bad(self.file, "bad path compression"));
        }
        self.arena
            .extend_from_within(self.prev.start..self.prev.end - strip);
        self.arena.extend_from_slice(&buf[self.pos..self.pos + nul]);
        self.pos += nul + 1;
        Ok(path_start..self.arena.len())
    }

    /// A version 2 or 3 path: as long as the flags say (up to the NUL when too long for
    /// them), NUL-terminated, and padded with NULs so that the entry (from `start`, with a
    /// fixed part of `fixed` bytes) ends on a multiple of 8. Its range in `buf`.
    fn padded_path(
        &mut self,
        start: usize,
        fixed: usize,
        flags: u16,
    ) -> Result<Range<usize>, HistoryError> {
        let (buf, end, pos) = (self.buf, self.end, self.pos);
        let len = (flags & NAME_MASK) as usize;
        let nul = if len < NAME_MASK as usize {
            len
        } else {
            buf[pos..end]
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| self.truncated())?
        };
        if pos + nul >= end || buf[pos + nul] != 0 {
            return Err(self.truncated());
        }
        self.pos = start + ((fixed + nul + 8) & !7);
        if self.pos > end {
            return Err(self.truncated());
        }
        Ok(pos..pos + nul)
    }
}

/// The extensions between the entries (ending at `pos`) and the checksum (at `end`): each a
/// signature, a size and its data, as (signature, data range in `buf`). An extension that
/// changes how the entries must be read is refused, never guessed at.
fn parse_extensions(
    path: &Path,
    buf: &[u8],
    mut pos: usize,
    end: usize,
) -> Result<Vec<Extension>, HistoryError> {
    let mut extensions = Vec::new();
    while pos < end {
        if pos + 8 > end {
            return Err(bad(path, "truncated extension"));
        }
        let mut sig = [0u8; 4];
        sig.copy_from_slice(&buf[pos..pos + 4]);
        let size = be32(buf, pos + 4) as usize;
        let data = pos + 8..pos + 8 + size;
        if data.end > end {
            return Err(bad(path, "truncated extension"));
        }
        // Optional extensions start with an upper-case letter; the others change how
        // the entries must be read (split index `link`, sparse index `sdir`).
        if !sig[0].is_ascii_uppercase() {
            return Err(bad(
                path,
                format!(
                    "it uses the `{}` extension (split or sparse index), which pai cannot update; run `git update-index --no-split-index` or `git sparse-checkout disable`",
                    String::from_utf8_lossy(&sig)
                ),
            ));
        }
        extensions.push((sig, data.clone()));
        pos = data.end;
    }
    Ok(extensions)
}

/// A writer for a new index file: every byte goes to the sink and into the SHA-1 that git
/// expects as the file's last 20 bytes. Small pieces are gathered (a `BufWriter`); the long
/// runs of unchanged entries pass straight through to the sink.
struct HashingWriter<W: Write> {
    sink: std::io::BufWriter<W>,
    hasher: Sha1,
}

impl<W: Write> HashingWriter<W> {
    fn new(sink: W) -> Self {
        HashingWriter {
            sink: std::io::BufWriter::with_capacity(64 * 1024, sink),
            hasher: Sha1::new(),
        }
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.sink.write_all(bytes)
    }

    /// Append the checksum and flush.
    fn finish(mut self) -> std::io::Result<()> {
        let hash = self.hasher.finalize();
        self.sink.write_all(&hash)?;
        self.sink.flush()
    }
}

impl IndexFile {
    /// An empty index (no file yet).
    fn empty() -> IndexFile {
        IndexFile {
            version: 2,
            buf: FileBytes::Read(Vec::new()),
            entries: Vec::new(),
            entries_end: HEADER_LEN as u32,
            path_ends: Vec::new(),
            arena: Vec::new(),
            extensions: Vec::new(),
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

    fn parse(path: &Path, buf: impl Into<FileBytes>) -> Result<IndexFile, HistoryError> {
        let buf: FileBytes = buf.into();
        let (version, count) = parse_header(path, &buf)?;
        let mut entries = Vec::with_capacity(count);
        let mut reader = EntryReader::new(path, &buf, version, count);
        for _ in 0..count {
            entries.push(reader.entry()?);
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
        Ok(IndexFile {
            version,
            buf,
            entries,
            entries_end: pos as u32,
            path_ends,
            arena,
            extensions,
        })
    }

    /// An entry's flags.
    fn flags_of(&self, e: RawEntry) -> u16 {
        be16(&self.buf, e.start as usize + FLAGS_OFFSET)
    }

    /// The length of an entry's fixed part: 62, or 64 with the extended flags.
    fn fixed_of(&self, e: RawEntry) -> usize {
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
    fn end_of(&self, i: usize) -> usize {
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
    fn entry_of(&self, e: RawEntry) -> Entry {
        let at = e.start as usize;
        let mut id = [0u8; 20];
        id.copy_from_slice(&self.buf[at + OID_OFFSET..at + OID_OFFSET + 20]);
        // 20 bytes always make an id.
        let id = Oid::from_bytes(&id).unwrap_or(Oid::ZERO_SHA1);
        (id, be32(&self.buf, at + MODE_OFFSET) as i32)
    }

    /// Paths with unresolved conflicts (entries at a stage other than 0).
    pub(crate) fn conflicts(&self) -> Vec<String> {
        let mut out: Vec<String> = (0..self.entries.len())
            .filter(|&i| self.stage_of(self.entries[i]) != 0)
            .map(|i| crate::rawname::encode(self.path_at(i)).into_owned())
            .collect();
        out.dedup();
        out
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
    fn lower_bound(&self, path: &[u8]) -> usize {
        // A binary search over positions, not entries: a version 4 path needs its neighbour.
        let (mut lo, mut hi) = (0, self.entries.len());
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

    /// Indices of the entries an update replaces or removes: the updated paths (every stage),
    /// and whatever would clash with an added file — a file where one of its directories
    /// goes, or anything below a directory where it goes — as `git add` would remove them.
    fn dropped(&self, updates: &ByteUpdates) -> Vec<bool> {
        let mut dropped = vec![false; self.entries.len()];
        let mark_exact = |path: &[u8], dropped: &mut Vec<bool>| {
            let mut i = self.lower_bound(path);
            while i < self.entries.len() && self.path_at(i) == path {
                dropped[i] = true;
                i += 1;
            }
        };
        for (path, entry) in updates {
            let path = path.as_slice();
            mark_exact(path, &mut dropped);
            if entry.is_none() {
                continue;
            }
            for (i, &b) in path.iter().enumerate() {
                if b == b'/' {
                    mark_exact(&path[..i], &mut dropped);
                }
            }
            let mut below = path.to_vec();
            below.push(b'/');
            let mut i = self.lower_bound(&below);
            while i < self.entries.len() && self.path_at(i).starts_with(&below) {
                dropped[i] = true;
                i += 1;
            }
        }
        dropped
    }

    /// The whole file with `updates` applied, in memory (tests compare it with a model).
    #[cfg(test)]
    fn rewrite(&self, updates: &BTreeMap<String, Option<Entry>>) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = self.write_updated(&by_bytes(updates), &mut out);
        out
    }

    /// Write the whole file with `updates` applied to `sink`. Unchanged entries are copied in
    /// runs, byte for byte (in version 4 only the first entry of a run is re-encoded, since its
    /// predecessor may have changed), straight from the old file's bytes to `sink` and hashed
    /// on the way: the cost is one pass of copying and hashing, without building the new file
    /// in memory first (at 100,000 files that buffer alone would be 10 MB more faulted in and
    /// copied per commit and undo).
    fn write_updated(&self, updates: &ByteUpdates, sink: impl Write) -> std::io::Result<()> {
        let dropped = self.dropped(updates);
        // New entries, each with the position of the old entry it goes before.
        let inserts: Vec<(usize, &[u8], Oid, u32)> = updates
            .iter()
            .filter_map(|(p, e)| {
                e.map(|(id, mode)| (self.lower_bound(p), p.as_slice(), id, mode as u32))
            })
            .collect();
        let count = dropped.iter().filter(|&&d| !d).count() + inserts.len();
        let mut out = HashingWriter::new(sink);
        out.put(SIGNATURE)?;
        out.put(&self.version.to_be_bytes())?;
        out.put(&(count as u32).to_be_bytes())?;
        // Entries that are re-encoded are assembled here, then written in one piece.
        let mut piece: Vec<u8> = Vec::with_capacity(256);
        let mut prev: Vec<u8> = Vec::new();
        let n = self.entries.len();
        let mut inserts = inserts.into_iter().peekable();
        let mut i = 0;
        loop {
            while let Some((_, p, id, mode)) = inserts.next_if(|x| x.0 <= i) {
                let mut fixed = [0u8; FIXED_LEN];
                fixed[MODE_OFFSET..MODE_OFFSET + 4].copy_from_slice(&mode.to_be_bytes());
                fixed[OID_OFFSET..OID_OFFSET + 20].copy_from_slice(id.as_bytes());
                let flags = p.len().min(NAME_MASK as usize) as u16;
                fixed[FLAGS_OFFSET..FLAGS_OFFSET + 2].copy_from_slice(&flags.to_be_bytes());
                piece.clear();
                piece.extend_from_slice(&fixed);
                self.emit_path(&mut piece, &mut prev, p, FIXED_LEN);
                out.put(&piece)?;
            }
            if i == n {
                break;
            }
            if dropped[i] {
                i += 1;
                continue;
            }
            let next_insert = inserts.peek().map_or(n, |x| x.0);
            let mut j = i + 1;
            while j < n && j < next_insert && !dropped[j] {
                j += 1;
            }
            let first = self.entries[i];
            let (start, fixed) = (first.start as usize, self.fixed_of(first));
            let run_end = self.end_of(j - 1);
            if self.version == 4 {
                piece.clear();
                piece.extend_from_slice(&self.buf[start..start + fixed]);
                self.emit_path(&mut piece, &mut prev, self.path_at(i), fixed);
                out.put(&piece)?;
                out.put(&self.buf[self.end_of(i)..run_end])?;
                prev.clear();
                prev.extend_from_slice(self.path_at(j - 1));
            } else {
                out.put(&self.buf[start..run_end])?;
            }
            i = j;
        }
        let changed: Vec<&[u8]> = updates.keys().map(Vec::as_slice).collect();
        for (sig, data) in &self.extensions {
            let data = &self.buf[data.clone()];
            let kept = match sig {
                b"TREE" => invalidate_cache_tree(data, &changed),
                b"REUC" => Some(data.to_vec()),
                _ => None,
            };
            if let Some(kept) = kept {
                out.put(sig)?;
                out.put(&(kept.len() as u32).to_be_bytes())?;
                out.put(&kept)?;
            }
        }
        out.finish()
    }

    /// The path part of an entry: padded (v2, v3) or prefix-compressed (v4).
    fn emit_path(&self, out: &mut Vec<u8>, prev: &mut Vec<u8>, path: &[u8], fixed: usize) {
        if self.version == 4 {
            let common = prev.iter().zip(path).take_while(|(a, b)| a == b).count();
            encode_varint(prev.len() - common, out);
            out.extend_from_slice(&path[common..]);
            out.push(0);
            prev.clear();
            prev.extend_from_slice(path);
        } else {
            out.extend_from_slice(path);
            let len = (fixed + path.len() + 8) & !7;
            out.resize(out.len() + len - fixed - path.len(), 0);
        }
    }
}

/// One node of the cache tree.
struct TreeNode {
    name: Vec<u8>,
    entries: i64,
    id: Option<[u8; 20]>,
    children: Vec<TreeNode>,
}

fn parse_tree_node(data: &[u8], pos: &mut usize) -> Option<TreeNode> {
    let nul = data[*pos..].iter().position(|&b| b == 0)?;
    let name = data[*pos..*pos + nul].to_vec();
    *pos += nul + 1;
    let nl = data[*pos..].iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&data[*pos..*pos + nl]).ok()?;
    *pos += nl + 1;
    let (entries, subtrees) = line.split_once(' ')?;
    let entries: i64 = entries.parse().ok()?;
    let subtrees: usize = subtrees.parse().ok()?;
    let id = if entries >= 0 {
        let mut id = [0u8; 20];
        id.copy_from_slice(data.get(*pos..*pos + 20)?);
        *pos += 20;
        Some(id)
    } else {
        None
    };
    let mut children = Vec::with_capacity(subtrees);
    for _ in 0..subtrees {
        children.push(parse_tree_node(data, pos)?);
    }
    Some(TreeNode {
        name,
        entries,
        id,
        children,
    })
}

fn write_tree_node(node: &TreeNode, out: &mut Vec<u8>) {
    out.extend_from_slice(&node.name);
    out.push(0);
    out.extend_from_slice(format!("{} {}\n", node.entries, node.children.len()).as_bytes());
    if let Some(id) = &node.id {
        out.extend_from_slice(id);
    }
    for child in &node.children {
        write_tree_node(child, out);
    }
}

/// The `TREE` extension with every directory on the way to a changed path marked invalid;
/// `None` (drop the cache) if it cannot be parsed.
/// Index updates keyed by the bytes of their paths: the index is sorted by bytes, which is
/// not the order of pai's string spellings once a name is not UTF-8 (see [`crate::rawname`]).
type ByteUpdates = BTreeMap<Vec<u8>, Option<Entry>>;

fn by_bytes(updates: &BTreeMap<String, Option<Entry>>) -> ByteUpdates {
    updates
        .iter()
        .map(|(p, e)| (crate::rawname::decode(p).into_owned(), *e))
        .collect()
}

fn invalidate_cache_tree(data: &[u8], changed: &[&[u8]]) -> Option<Vec<u8>> {
    let mut pos = 0;
    let mut root = parse_tree_node(data, &mut pos)?;
    if pos != data.len() {
        return None;
    }
    for path in changed {
        let mut node = &mut root;
        let mut parts = path.split(|&b| b == b'/').peekable();
        loop {
            node.entries = -1;
            node.id = None;
            let Some(part) = parts.next() else { break };
            if parts.peek().is_none() {
                break;
            }
            match node.children.iter_mut().find(|c| c.name == part) {
                Some(child) => node = child,
                None => break,
            }
        }
    }
    let mut out = Vec::with_capacity(data.len());
    write_tree_node(&root, &mut out);
    Some(out)
}

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

/// The bytes of the index file open as `file` at `path`, whose metadata is `meta`: mapped
/// when it is a large regular file (see [`FileBytes`]).
fn file_bytes(
    path: &Path,
    file: &mut File,
    meta: &fs::Metadata,
) -> Result<FileBytes, HistoryError> {
    FileBytes::of(file, meta.len(), meta.is_file()).map_err(|e| bad(path, e))
}

/// Removes the lock file unless the update went through.
struct LockGuard {
    path: PathBuf,
    done: bool,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A rewritten index waiting in `index.lock`: the lock is held (so no git command can
/// change the index meanwhile) until [`PendingIndex::commit`] renames it into place; dropping
/// it leaves the index as it was.
pub(crate) struct PendingIndex {
    index_path: PathBuf,
    guard: LockGuard,
}

impl PendingIndex {
    /// Put the new index in place.
    pub(crate) fn commit(mut self) -> Result<(), HistoryError> {
        fs::rename(&self.guard.path, &self.index_path).map_err(|e| bad(&self.index_path, e))?;
        self.guard.done = true;
        Ok(())
    }
}

/// The index read under git's `index.lock`: no git command can change it until this is
/// dropped (lock removed, index unchanged) or [`LockedIndex::stage`]d.
pub(crate) struct LockedIndex {
    index: Arc<IndexFile>,
    index_path: PathBuf,
    file: File,
    guard: LockGuard,
}

impl std::ops::Deref for LockedIndex {
    type Target = IndexFile;
    fn deref(&self) -> &IndexFile {
        &self.index
    }
}

/// Take the index's lock (`index.lock` beside it) and read the index of the repository whose
/// git directory is `git_dir` (see [`index_path`]).
pub(crate) fn lock(git_dir: &Path) -> Result<LockedIndex, HistoryError> {
    let index_path = index_path(git_dir);
    let mut lock_name = index_path.clone().into_os_string();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock_path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(bad(
                &index_path,
                format!(
                    "{} exists: another git command is running (or one crashed; if none is running, remove that file)",
                    lock_path.display()
                ),
            ));
        }
        Err(e) => return Err(bad(&lock_path, e)),
    };
    let guard = LockGuard {
        path: lock_path,
        done: false,
    };
    // Read under the lock, so no git command changes it before the update lands; the index the
    // plan already read is reused when the file still holds it.
    let index = load_shared_at(index_path.clone())?;
    Ok(LockedIndex {
        index,
        index_path,
        file,
        guard,
    })
}

impl LockedIndex {
    /// Write the index with `updates` applied into the lock file; it takes effect with
    /// [`PendingIndex::commit`]. `None` (and the lock released) when there is nothing to do.
    pub(crate) fn stage(
        mut self,
        updates: &BTreeMap<String, Option<Entry>>,
    ) -> Result<Option<PendingIndex>, HistoryError> {
        if updates.is_empty() {
            return Ok(None);
        }
        let lock_path = self.guard.path.clone();
        self.index
            .write_updated(&by_bytes(updates), &mut self.file)
            .map_err(|e| bad(&lock_path, e))?;
        if let Ok(meta) = fs::metadata(&self.index_path) {
            // Keep the index's permission bits (shared repositories).
            let _ = fs::set_permissions(&lock_path, meta.permissions());
        }
        Ok(Some(PendingIndex {
            index_path: self.index_path,
            guard: self.guard,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_the_file_cannot_hold_is_refused_before_allocating() {
        for version in [2u32, 3, 4] {
            let mut buf = SIGNATURE.to_vec();
            buf.extend_from_slice(&version.to_be_bytes());
            buf.extend_from_slice(&u32::MAX.to_be_bytes());
            buf.extend_from_slice(&[0; 64]);
            buf.extend_from_slice(&[0; HASH_LEN]);
            let err = IndexFile::parse(Path::new("index"), buf)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("more than the file can hold"), "{err}");
        }
    }

    #[test]
    fn varints_round_trip_like_git() {
        for v in [
            0usize,
            1,
            127,
            128,
            255,
            16511,
            16512,
            1 << 20,
            usize::MAX >> 8,
        ] {
            let mut out = Vec::new();
            encode_varint(v, &mut out);
            assert_eq!(decode_varint(&out), Some((v, out.len())), "{v}");
        }
        // git's encoding of 128 is 0x80 0x00 (the continuation adds one).
        let mut out = Vec::new();
        encode_varint(128, &mut out);
        assert_eq!(out, [0x80, 0x00]);
    }

    #[test]
    fn garbage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        fs::write(&p, b"DIRC\0\0\0\x02\0\0\0\x05short").unwrap();
        assert!(IndexFile::read(&p).is_err());
        fs::write(&p, b"not an index at all, not at all......").unwrap();
        assert!(IndexFile::read(&p).is_err());
        let missing = IndexFile::read(&dir.path().join("none")).unwrap();
        assert!(missing.get("a").is_none());
    }

    #[test]
    fn entries_round_trip_in_every_version_including_names_over_4095_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        let long = format!("{}/f.txt", "d".repeat(5000));
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        for version in [2u32, 3, 4] {
            let mut empty = IndexFile::empty();
            empty.version = version;
            let mut updates = BTreeMap::new();
            updates.insert("a.txt".to_string(), Some((id, 0o100644)));
            updates.insert("a/b.txt".to_string(), Some((id, 0o100755)));
            updates.insert(long.clone(), Some((id, 0o100644)));
            fs::write(&p, empty.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            assert_eq!(read.version, version);
            assert_eq!(read.get("a.txt"), Some((id, 0o100644)));
            assert_eq!(read.get("a/b.txt"), Some((id, 0o100755)));
            assert_eq!(read.get(&long), Some((id, 0o100644)));
            assert_eq!(read.under("a"), ["a/b.txt"]);
            // Removing one entry keeps the others.
            let mut updates = BTreeMap::new();
            updates.insert("a.txt".to_string(), None);
            fs::write(&p, read.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            assert_eq!(read.get("a.txt"), None);
            assert_eq!(read.get(&long), Some((id, 0o100644)));
            assert_eq!(read.entries.len(), 2);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn rewrite_matches_a_model_in_every_version(
            version in 2u32..=4,
            start in proptest::collection::btree_map("[ab]{1,2}(/[ab]{1,2}){0,2}", 0u8..4, 0..40),
            edits in proptest::collection::btree_map("[ab]{1,2}(/[ab]{1,2}){0,2}", proptest::option::of(0u8..4), 0..8),
        ) {
            let id = |n: u8| Oid::from_bytes(&[n + 1; 20]).unwrap();
            // A valid index has no file/directory clashes: build the start state through
            // rewrite itself, which removes them as git add would.
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("index");
            let mut empty = IndexFile::empty();
            empty.version = version;
            let mut model: BTreeMap<String, u8> = BTreeMap::new();
            let mut current = empty;
            for (path, n) in &start {
                let mut one = BTreeMap::new();
                one.insert(path.clone(), Some((id(*n), 0o100644)));
                fs::write(&p, current.rewrite(&one)).unwrap();
                current = IndexFile::read(&p).unwrap();
                apply(&mut model, path, Some(*n));
            }
            let updates: BTreeMap<String, Option<Entry>> = edits
                .iter()
                .map(|(p, n)| (p.clone(), n.map(|n| (id(n), 0o100644))))
                .collect();
            for (path, n) in &edits {
                apply(&mut model, path, *n);
            }
            // Apply all edits at once; clashes among the edits themselves resolve in path order.
            fs::write(&p, current.rewrite(&updates)).unwrap();
            let read = IndexFile::read(&p).unwrap();
            let got: BTreeMap<String, u8> = (0..read.len())
                .map(|i| (String::from_utf8(read.path_at(i).to_vec()).unwrap(), read.entry_of(read.entries[i]).0.as_bytes()[0] - 1))
                .collect();
            let paths: Vec<&[u8]> = (0..read.len()).map(|i| read.path_at(i)).collect();
            proptest::prop_assert!(paths.windows(2).all(|w| w[0] < w[1]), "unsorted: {paths:?}");
            if edits.keys().all(|a| edits.keys().all(|b| a == b || !(b.starts_with(&format!("{a}/"))))) {
                proptest::prop_assert_eq!(got, model);
            }
        }
    }

    /// The model of `git add` / `git rm --cached` for one path.
    fn apply(model: &mut BTreeMap<String, u8>, path: &str, n: Option<u8>) {
        model.remove(path);
        if let Some(n) = n {
            model.retain(|k, _| {
                !k.starts_with(&format!("{path}/")) && !path.starts_with(&format!("{k}/"))
            });
            model.insert(path.to_string(), n);
        }
    }

    #[test]
    fn adding_a_file_removes_what_clashes_with_it() {
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index");
        let mut updates = BTreeMap::new();
        updates.insert("x".to_string(), Some((id, 0o100644)));
        updates.insert("y/z".to_string(), Some((id, 0o100644)));
        fs::write(&p, IndexFile::empty().rewrite(&updates)).unwrap();
        let read = IndexFile::read(&p).unwrap();
        let mut updates = BTreeMap::new();
        updates.insert("x/inner".to_string(), Some((id, 0o100644)));
        updates.insert("y".to_string(), Some((id, 0o100644)));
        fs::write(&p, read.rewrite(&updates)).unwrap();
        let read = IndexFile::read(&p).unwrap();
        let paths: Vec<&[u8]> = (0..read.len()).map(|i| read.path_at(i)).collect();
        assert_eq!(paths, [b"x/inner".as_slice(), b"y".as_slice()]);
    }

    #[test]
    fn cache_tree_invalidation_marks_only_the_changed_path() {
        // root (2 entries, 1 subtree) -> "a" (1 entry, 0 subtrees)
        let mut data = Vec::new();
        data.extend_from_slice(b"\x002 1\n");
        data.extend_from_slice(&[1u8; 20]);
        data.extend_from_slice(b"a\x001 0\n");
        data.extend_from_slice(&[2u8; 20]);
        data.extend_from_slice(b"b\x001 0\n");
        data.extend_from_slice(&[3u8; 20]);
        // Make the root say 2 subtrees.
        data[3] = b'2';
        let out = invalidate_cache_tree(&data, &[b"a/x.txt".as_slice()]).unwrap();
        let mut pos = 0;
        let root = parse_tree_node(&out, &mut pos).unwrap();
        assert_eq!(root.entries, -1);
        assert_eq!(root.children[0].entries, -1);
        assert_eq!(root.children[1].entries, 1);
        assert_eq!(root.children[1].id, Some([3u8; 20]));
        assert_eq!(pos, out.len());
    }
}
