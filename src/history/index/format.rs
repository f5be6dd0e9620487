//! git's index format, piece by piece: the header, the entries read one after the other
//! (version 4 paths prefix-compressed), the extensions, and the writer that hashes a new
//! file as it goes.

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use git2::Oid;
use sha1::{Digest, Sha1};

use crate::history::error::HistoryError;

pub(super) const SIGNATURE: &[u8; 4] = b"DIRC";
pub(super) const HEADER_LEN: usize = 12;
pub(super) const HASH_LEN: usize = 20;

/// A blob as git records a file: its id and mode.
pub(crate) type Entry = (Oid, i32);

/// Stat data (40 bytes), object id (20) and flags (2).
pub(super) const FIXED_LEN: usize = 62;
pub(super) const MODE_OFFSET: usize = 24;
pub(super) const OID_OFFSET: usize = 40;
pub(super) const FLAGS_OFFSET: usize = 60;
pub(super) const FLAG_EXTENDED: u16 = 0x4000;
pub(super) const STAGE_MASK: u16 = 0x3000;
pub(super) const NAME_MASK: u16 = 0x0fff;

/// One entry as found in the file, kept small (100,000 of them are read per commit): where
/// it starts in `IndexFile::buf`, 4 bytes. The rest is read from the file's bytes when asked
/// for: the fixed part's length, the stage and the path's length from the entry's flags, its
/// end from where the next entry starts. A version 4 path is in `IndexFile::arena`, where
/// `IndexFile::path_ends` says where it ends.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawEntry {
    pub(super) start: u32,
}

/// An extension: its signature, and where its data is in `IndexFile::buf`.
pub(super) type Extension = ([u8; 4], Range<usize>);

/// Why an index file could not be used.
pub(super) fn bad(path: &Path, why: impl std::fmt::Display) -> HistoryError {
    HistoryError::Index {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(super) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// git's offset varint (varint.c): each continuation adds one before shifting.
pub(super) fn decode_varint(b: &[u8]) -> Option<(usize, usize)> {
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

pub(super) fn encode_varint(mut value: usize, out: &mut Vec<u8>) {
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
pub(super) fn parse_header(path: &Path, buf: &[u8]) -> Result<(u32, usize), HistoryError> {
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
pub(super) struct EntryReader<'b> {
    /// The index file, for errors.
    pub(super) file: &'b Path,
    pub(super) buf: &'b [u8],
    /// Where the entries and extensions end: at the trailing checksum.
    pub(super) end: usize,
    pub(super) version: u32,
    /// Where the next entry starts (after the last one: where the extensions start).
    pub(super) pos: usize,
    /// Version 4's decompressed paths.
    pub(super) arena: Vec<u8>,
    /// The previous entry's path (in `arena` for version 4, else in `buf`).
    pub(super) prev: Range<usize>,
    /// Whether an entry had no path.
    pub(super) nameless: bool,
    /// Version 4: where each path ends in `arena`.
    pub(super) path_ends: Vec<u32>,
}

impl<'b> EntryReader<'b> {
    /// A reader at the first entry of `buf`, whose header says `version` and `count`.
    pub(super) fn new(file: &'b Path, buf: &'b [u8], version: u32, count: usize) -> Self {
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

    pub(super) fn truncated(&self) -> HistoryError {
        bad(self.file, "truncated entry")
    }

    /// The next entry: its fixed part (62 bytes, 64 with the extended flags of version 3 and
    /// up), then its path.
    pub(super) fn entry(&mut self) -> Result<RawEntry, HistoryError> {
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
    pub(super) fn compressed_path(&mut self) -> Result<Range<usize>, HistoryError> {
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
    pub(super) fn padded_path(
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
pub(super) fn parse_extensions(
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
pub(super) struct HashingWriter<W: Write> {
    sink: std::io::BufWriter<W>,
    hasher: Sha1,
}

impl<W: Write> HashingWriter<W> {
    pub(super) fn new(sink: W) -> Self {
        HashingWriter {
            sink: std::io::BufWriter::with_capacity(64 * 1024, sink),
            hasher: Sha1::new(),
        }
    }

    pub(super) fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hasher.update(bytes);
        self.sink.write_all(bytes)
    }

    /// Append the checksum and flush.
    pub(super) fn finish(mut self) -> std::io::Result<()> {
        let hash = self.hasher.finalize();
        self.sink.write_all(&hash)?;
        self.sink.flush()
    }
}
