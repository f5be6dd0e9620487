//! The symbols of every cached file version, kept in a file beside the map's cache
//! (`<cache>.syms`): the names (identifiers, signatures, the terms of defined
//! names), each blob's definitions and references, and two inverted indexes — which blobs
//! define a name, which blobs define a name holding a term. A warm map reads only the blobs it
//! ranks, shows or walks the reference graph through, and looks names up by binary search
//! through the file: what it loads is bounded by what it ranks, not by how many files define
//! something. The file is read with `pread`, not mapped: the kernel maps a cached file's pages
//! in runs as large as the page cache holds them (megabytes, for a file just written), so a
//! binary search through a mapping would make most of the file resident.
//!
//! Layout (integers little-endian, every section at a multiple of four bytes): a header
//! (`MAGIC`, the id the cache it pairs with names, the number of blobs, of names, of definer
//! pairs, of term pairs, bytes of name text, bytes of facts), then per blob where its facts
//! end (`u32`, `blobs` of them; a blob whose facts are empty has no symbols), per name where
//! its text ends (`u32`), the names' ids in string order (`u32`), the (name, blob) pairs of
//! definitions sorted, the (term, blob) pairs of the terms of defined names sorted, the names'
//! text, and the facts (postcard). The file lives outside the project like the rest of the
//! cache and is replaced by renaming, never rewritten in place; every range read from it is
//! checked against the header, and an id past the cache's is ignored.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use super::words::{WordsId, new_id};

/// The file's first bytes (the last digit is the layout's version).
const MAGIC: &[u8; 8] = b"PAISYMS1";
/// Bytes of the header.
const HEADER: usize = 56;

/// Where the symbols of the cache at `cache` are kept.
pub fn path_of(cache: &Path) -> PathBuf {
    cache.with_extension("syms")
}

/// Where a symbols file's bytes are read from: the open file, range by range, but for its
/// first bytes when they were read whole once (for writing the next file: every name is read
/// then).
#[derive(Debug)]
struct Source {
    head: Vec<u8>,
    file: File,
}

/// An open symbols file, checked against the cache it pairs with.
#[derive(Debug)]
pub struct SymFile {
    src: Source,
    blobs: usize,
    names: usize,
    def_pairs: usize,
    term_pairs: usize,
    text_len: usize,
    facts_len: usize,
}

/// Where each section starts.
struct Sections {
    ends: usize,
    name_ends: usize,
    sorted: usize,
    defs: usize,
    terms: usize,
    text: usize,
    facts: usize,
    total: usize,
}

fn sections(
    blobs: usize,
    names: usize,
    defs: usize,
    terms: usize,
    text: usize,
    facts: usize,
) -> Option<Sections> {
    let ends = HEADER;
    let name_ends = ends.checked_add(blobs.checked_mul(4)?)?;
    let sorted = name_ends.checked_add(names.checked_mul(4)?)?;
    let defs_at = sorted.checked_add(names.checked_mul(4)?)?;
    let terms_at = defs_at.checked_add(defs.checked_mul(8)?)?;
    let text_at = terms_at.checked_add(terms.checked_mul(8)?)?;
    let facts_at = text_at.checked_add(text.checked_add(3)? / 4 * 4)?;
    let total = facts_at.checked_add(facts)?;
    Some(Sections {
        ends,
        name_ends,
        sorted,
        defs: defs_at,
        terms: terms_at,
        text: text_at,
        facts: facts_at,
        total,
    })
}

impl SymFile {
    /// Open the symbols file at `path` if it is the one `id` names, for a cache of `blobs`
    /// blobs, and whole.
    pub fn open(path: &Path, id: &WordsId, blobs: usize) -> Option<SymFile> {
        let file = File::open(path).ok()?;
        let mut head = [0u8; HEADER];
        file.read_exact_at(&mut head, 0).ok()?;
        if &head[..8] != MAGIC || &head[8..24] != id {
            return None;
        }
        let u32_at = |at: usize| head.get(at..at + 4).map(le32);
        let u64_at = |at: usize| {
            head.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
        };
        let len = file.metadata().ok()?.len();
        let out = SymFile {
            blobs: u32_at(24)? as usize,
            names: u32_at(28)? as usize,
            def_pairs: u32_at(32)? as usize,
            term_pairs: u32_at(36)? as usize,
            text_len: usize::try_from(u64_at(40)?).ok()?,
            facts_len: usize::try_from(u64_at(48)?).ok()?,
            src: Source {
                head: Vec::new(),
                file,
            },
        };
        if out.blobs != blobs {
            return None;
        }
        let s = out.sections()?;
        (s.total as u64 == len).then_some(out)
    }

    /// The same file with everything but the facts read into memory (to write the next one
    /// from it; `None` when it cannot be read).
    pub fn names_in_memory(&self) -> Option<SymFile> {
        let s = self.sections()?;
        let head = self.bytes(0, s.facts)?.into_owned();
        Some(SymFile {
            src: Source {
                head,
                file: self.src.file.try_clone().ok()?,
            },
            ..*self
        })
    }

    /// `len` bytes at `at` (`None` past the end or when the file cannot be read).
    fn bytes(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        if let Some(b) = self.src.head.get(at..at.checked_add(len)?) {
            return Some(Cow::Borrowed(b));
        }
        let mut buf = vec![0u8; len];
        self.src.file.read_exact_at(&mut buf, at as u64).ok()?;
        Some(Cow::Owned(buf))
    }

    fn sections(&self) -> Option<Sections> {
        sections(
            self.blobs,
            self.names,
            self.def_pairs,
            self.term_pairs,
            self.text_len,
            self.facts_len,
        )
    }

    /// The `u32` at index `i` of the section starting at `at` (of `len` entries).
    fn u32_in(&self, at: usize, len: usize, i: usize) -> Option<u32> {
        if i >= len {
            return None;
        }
        let from = at.checked_add(i.checked_mul(4)?)?;
        self.bytes(from, 4).map(|b| le32(&b))
    }

    /// How many names the file holds.
    pub fn names(&self) -> usize {
        self.names
    }

    /// The text of name `id` (`None` past the end or when damaged).
    pub fn name(&self, id: u32) -> Option<Cow<'_, str>> {
        let s = self.sections()?;
        let i = id as usize;
        let end = self.u32_in(s.name_ends, self.names, i)? as usize;
        let start = match i.checked_sub(1) {
            None => 0,
            Some(p) => self.u32_in(s.name_ends, self.names, p)? as usize,
        };
        if start > end || end > self.text_len {
            return None;
        }
        match self.bytes(s.text + start, end - start)? {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(b) => String::from_utf8(b).ok().map(Cow::Owned),
        }
    }

    /// The id of name `name`, by binary search of the names in string order.
    pub fn lookup(&self, name: &str) -> Option<u32> {
        let s = self.sections()?;
        let (mut lo, mut hi) = (0usize, self.names);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let id = self.u32_in(s.sorted, self.names, mid)?;
            match self.name(id)?.as_ref().cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(id),
            }
        }
        None
    }

    /// Name ids in string order, as written (for merging with names added since).
    pub fn sorted(&self) -> Vec<u32> {
        self.sections()
            .and_then(|s| self.bytes(s.sorted, self.names * 4))
            .map(|b| b.chunks_exact(4).map(le32).collect())
            .unwrap_or_default()
    }

    /// The encoded facts of blob `b`, when it has symbols (`None` too when damaged).
    pub fn facts(&self, b: u32) -> Option<Cow<'_, [u8]>> {
        let s = self.sections()?;
        let i = b as usize;
        let end = self.u32_in(s.ends, self.blobs, i)? as usize;
        let start = match i.checked_sub(1) {
            None => 0,
            Some(p) => self.u32_in(s.ends, self.blobs, p)? as usize,
        };
        if start >= end || end > self.facts_len {
            return None;
        }
        self.bytes(s.facts + start, end - start)
    }

    /// Whether blob `b` has symbols.
    pub fn has_symbols(&self, b: u32) -> bool {
        let Some(s) = self.sections() else {
            return false;
        };
        let i = b as usize;
        let end = self.u32_in(s.ends, self.blobs, i);
        let start = match i.checked_sub(1) {
            None => Some(0),
            Some(p) => self.u32_in(s.ends, self.blobs, p),
        };
        matches!((start, end), (Some(a), Some(z)) if a < z)
    }

    /// The blobs of the pairs (`key`, blob) in the section at `at` of `len` pairs.
    fn pairs_of(&self, at: usize, len: usize, key: u32) -> Vec<u32> {
        let pair = |i: usize| -> Option<(u32, u32)> {
            let from = at.checked_add(i.checked_mul(8)?)?;
            let b = self.bytes(from, 8)?;
            Some((le32(&b[..4]), le32(&b[4..])))
        };
        let (mut lo, mut hi) = (0usize, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match pair(mid) {
                Some((k, _)) if k < key => lo = mid + 1,
                Some(_) => hi = mid,
                None => return Vec::new(),
            }
        }
        let mut out = Vec::new();
        let mut i = lo;
        while let Some((k, b)) = pair(i).filter(|_| i < len) {
            if k != key {
                break;
            }
            if (b as usize) < self.blobs {
                out.push(b);
            }
            i += 1;
        }
        out
    }

    /// The blobs defining name `name`, in blob order.
    pub fn defining(&self, name: u32) -> Vec<u32> {
        let at = self.sections().map_or(0, |s| s.defs);
        self.pairs_of(at, self.def_pairs, name)
    }

    /// The blobs defining a name that holds term `term`, in blob order.
    pub fn with_def_term(&self, term: u32) -> Vec<u32> {
        let at = self.sections().map_or(0, |s| s.terms);
        self.pairs_of(at, self.term_pairs, term)
    }
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// One blob's symbols as written: its facts encoded, the names it defines and the terms of
/// those names (for the inverted indexes).
pub struct Entry {
    /// The facts, encoded.
    pub bytes: Vec<u8>,
    /// The names it defines.
    pub defines: Vec<u32>,
    /// The terms of the names it defines.
    pub terms: Vec<u32>,
}

/// What a symbols file is written from.
pub struct Contents<'a> {
    /// How many blobs.
    pub blobs: usize,
    /// Every name's text, by id.
    pub name: &'a dyn Fn(u32) -> Cow<'a, str>,
    /// How many names.
    pub names: usize,
    /// The name ids in string order.
    pub sorted: Vec<u32>,
    /// Blob `b`'s symbols, when it has any (asked for twice: for their sizes, then to write
    /// them).
    pub facts: &'a dyn Fn(u32) -> std::io::Result<Option<Entry>>,
}

/// The header of a file of `counts` (blobs, names, definer pairs, term pairs), `text` bytes
/// of names and `facts` bytes of facts.
fn header(id: &WordsId, counts: [usize; 4], text: usize, facts: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(HEADER);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(id);
    for n in counts {
        let n = u32::try_from(n).map_err(|_| std::io::Error::other("too many symbols"))?;
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&(text as u64).to_le_bytes());
    out.extend_from_slice(&(facts as u64).to_le_bytes());
    Ok(out)
}

/// Write the symbols file at `path` (atomically, private to the user), the facts encoded
/// twice (once for their sizes, once into the file) rather than held whole. Returns its id.
pub fn write(path: &Path, c: &Contents<'_>) -> std::io::Result<WordsId> {
    use std::io::Write as _;
    let too_big = || std::io::Error::other("the map's symbols file would pass 4 GB");
    let id = new_id();
    let count = |n: usize| u32::try_from(n).map_err(|_| too_big());
    let mut ends = Vec::with_capacity(c.blobs);
    let mut defs: Vec<(u32, u32)> = Vec::new();
    let mut terms: Vec<(u32, u32)> = Vec::new();
    let mut facts_len = 0usize;
    for b in 0..count(c.blobs)? {
        if let Some(e) = (c.facts)(b)? {
            defs.extend(e.defines.iter().map(|&n| (n, b)));
            terms.extend(e.terms.iter().map(|&t| (t, b)));
            facts_len += e.bytes.len();
        }
        ends.push(count(facts_len)?);
    }
    defs.sort_unstable();
    defs.dedup();
    terms.sort_unstable();
    terms.dedup();
    let mut name_ends = Vec::with_capacity(c.names);
    let mut text_len = 0usize;
    for id in 0..count(c.names)? {
        text_len += (c.name)(id).len();
        name_ends.push(count(text_len)?);
    }
    let s = sections(
        c.blobs,
        c.names,
        defs.len(),
        terms.len(),
        text_len,
        facts_len,
    )
    .ok_or_else(too_big)?;
    if c.sorted.len() != c.names {
        return Err(std::io::Error::other(
            "the map's symbols file is inconsistent",
        ));
    }
    crate::private_file::write_atomic_with(path, |file| {
        let mut out = std::io::BufWriter::new(file);
        let mut at = 0usize;
        let mut put = |out: &mut std::io::BufWriter<&mut File>, b: &[u8]| -> std::io::Result<()> {
            at += b.len();
            out.write_all(b)
        };
        let counts = [c.blobs, c.names, defs.len(), terms.len()];
        put(&mut out, &header(&id, counts, text_len, facts_len)?)?;
        for n in ends.iter().chain(&name_ends).chain(&c.sorted) {
            put(&mut out, &n.to_le_bytes())?;
        }
        for (k, b) in defs.iter().chain(&terms) {
            put(&mut out, &k.to_le_bytes())?;
            put(&mut out, &b.to_le_bytes())?;
        }
        for id in 0..count(c.names)? {
            put(&mut out, (c.name)(id).as_bytes())?;
        }
        let pad = s.facts.checked_sub(s.text + text_len).ok_or_else(too_big)?;
        put(&mut out, &[0u8; 4][..pad])?;
        let mut written = 0usize;
        for b in 0..count(c.blobs)? {
            if let Some(e) = (c.facts)(b)? {
                written += e.bytes.len();
                put(&mut out, &e.bytes)?;
            }
        }
        if written != facts_len || at != s.total {
            return Err(std::io::Error::other(
                "the map's symbols changed while being written",
            ));
        }
        out.flush()
    })?;
    Ok(id)
}
