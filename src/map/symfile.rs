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
//!
//! A ranking asks which blobs define tens of thousands of names (every name the files it walks
//! refer to): a binary search by `pread` costs a system call a step. So the first lookup in a
//! pair section reads it once, front to back in large pieces, checking it is sorted, and keeps
//! every `STRIDE`-th key and a bit per name telling whether any pair has it as its key (a few
//! kilobytes); a lookup of a key no pair has reads nothing, any other reads the one or two
//! blocks of pairs its key can be in, in one call. A section found unsorted, or with a key
//! past the names, answers nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::words::{WordsId, new_id};

/// The file's first bytes (the last digit is the layout's version).
const MAGIC: &[u8; 8] = b"PAISYMS1";
/// Bytes of the header.
const HEADER: usize = 56;
/// Pairs between two keys a pair section's sparse index keeps.
const STRIDE: usize = 64;
/// Names' texts kept once read (a ranking asks for the names of the references of every file
/// it walks, most of them many times).
const NAMES_KEPT: usize = 1 << 15;
/// Bytes of one (key, blob) pair.
const PAIR: usize = 8;
/// Pairs read at once when building a sparse index (a multiple of `STRIDE`).
const SCAN_PAIRS: usize = 128 * STRIDE;
/// Bytes of one block of the file kept once read: a ranking reads thousands of small ranges
/// (a name's end, its text, a blob's facts) that lie close together, since names are numbered
/// in the order the files that use them were parsed.
const BLOCK: usize = 4096;
/// Blocks kept at most (16 MiB, a bound the files of projects of 50,000 files come near only
/// when a ranking walks most of their references); past it, ranges are read from the file
/// each time.
const BLOCKS_KEPT: usize = 4096;

/// The hasher of the tables of names and blocks read: a ranking looks them up hundreds of
/// thousands of times, and their keys are the file's own numbers.
type FastHash = foldhash::fast::FixedState;

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
    /// The sparse index of the definer pairs, once a lookup needed it.
    defs_index: OnceLock<Option<SparseIndex>>,
    /// The sparse index of the term pairs, once a lookup needed it.
    terms_index: OnceLock<Option<SparseIndex>>,
    /// Names read from the file, by id (at most `NAMES_KEPT`).
    kept: Mutex<HashMap<u32, Box<str>, FastHash>>,
    /// Blocks of the file read so far, by number (at most `BLOCKS_KEPT`).
    blocks: Mutex<HashMap<usize, Box<[u8]>, FastHash>>,
}

/// What a pair section's lookups find in memory: every `STRIDE`-th key, and which keys the
/// section holds at all (a bit per name).
#[derive(Debug)]
struct SparseIndex {
    firsts: Vec<u32>,
    present: Vec<u64>,
}

impl SparseIndex {
    fn holds(&self, key: u32) -> bool {
        let k = key as usize;
        self.present
            .get(k / 64)
            .is_some_and(|w| w & (1 << (k % 64)) != 0)
    }
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
            defs_index: OnceLock::new(),
            terms_index: OnceLock::new(),
            kept: Mutex::default(),
            blocks: Mutex::default(),
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
            blobs: self.blobs,
            names: self.names,
            def_pairs: self.def_pairs,
            term_pairs: self.term_pairs,
            text_len: self.text_len,
            facts_len: self.facts_len,
            defs_index: OnceLock::new(),
            terms_index: OnceLock::new(),
            kept: Mutex::default(),
            blocks: Mutex::default(),
        })
    }

    /// `len` bytes at `at` (`None` past the end or when the file cannot be read).
    fn bytes(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        if let Some(b) = self.src.head.get(at..at.checked_add(len)?) {
            return Some(Cow::Borrowed(b));
        }
        let mut buf = vec![0u8; len];
        self.read_into(at, &mut buf)?;
        Some(Cow::Owned(buf))
    }

    /// `buf.len()` bytes at `at` into `buf` (`None` past the end or when the file cannot be
    /// read).
    fn read_into(&self, at: usize, buf: &mut [u8]) -> Option<()> {
        if let Some(b) = self.src.head.get(at..at.checked_add(buf.len())?) {
            buf.copy_from_slice(b);
            return Some(());
        }
        if self.read_kept(at, buf).is_some() {
            return Some(());
        }
        self.src.file.read_exact_at(buf, at as u64).ok()
    }

    /// `buf.len()` bytes at `at` copied from the kept blocks, reading the one or two blocks
    /// they lie in when not kept yet (`None`: a longer range, past the end, or no room left
    /// to keep its blocks; the caller reads the file).
    fn read_kept(&self, at: usize, buf: &mut [u8]) -> Option<()> {
        let end = at.checked_add(buf.len())?;
        let total = self.sections()?.total;
        if buf.is_empty() || end > total {
            return None;
        }
        let (first, last) = (at / BLOCK, (end - 1) / BLOCK);
        if last > first + 1 {
            return None;
        }
        let mut kept = self.blocks.lock().ok()?;
        let mut done = 0;
        for k in first..=last {
            if !kept.contains_key(&k) {
                if kept.len() >= BLOCKS_KEPT {
                    return None;
                }
                let start = k.checked_mul(BLOCK)?;
                let mut block = vec![0u8; BLOCK.min(total.checked_sub(start)?)];
                self.src.file.read_exact_at(&mut block, start as u64).ok()?;
                kept.insert(k, block.into_boxed_slice());
            }
            let block = kept.get(&k)?;
            let from = (at + done).checked_sub(k * BLOCK)?;
            let n = block.len().checked_sub(from)?.min(buf.len() - done);
            buf.get_mut(done..done + n)?
                .copy_from_slice(block.get(from..from + n)?);
            done += n;
        }
        (done == buf.len()).then_some(())
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
        let mut b = [0u8; 4];
        self.read_into(from, &mut b)?;
        Some(le32(&b))
    }

    /// The `u32`s at indexes `i - 1` and `i` of the section starting at `at` (of `len`
    /// entries), the first 0 when `i` is 0: where entry `i` starts and ends, in one read.
    fn span_in(&self, at: usize, len: usize, i: usize) -> Option<(usize, usize)> {
        if i >= len {
            return None;
        }
        let Some(prev) = i.checked_sub(1) else {
            return Some((0, self.u32_in(at, len, 0)? as usize));
        };
        let from = at.checked_add(prev.checked_mul(4)?)?;
        let mut b = [0u8; 8];
        self.read_into(from, &mut b)?;
        Some((le32(&b[..4]) as usize, le32(&b[4..]) as usize))
    }

    /// How many names the file holds.
    pub fn names(&self) -> usize {
        self.names
    }

    /// The text of name `id` (`None` past the end or when damaged).
    pub fn name(&self, id: u32) -> Option<Cow<'_, str>> {
        if self.src.head.is_empty()
            && let Some(known) = self
                .kept
                .lock()
                .ok()
                .and_then(|k| k.get(&id).map(|n| n.to_string()))
        {
            return Some(Cow::Owned(known));
        }
        let s = self.sections()?;
        let (start, end) = self.span_in(s.name_ends, self.names, id as usize)?;
        if start > end || end > self.text_len {
            return None;
        }
        match self.bytes(s.text + start, end - start)? {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(b) => {
                let name = String::from_utf8(b).ok()?;
                if let Ok(mut k) = self.kept.lock()
                    && k.len() < NAMES_KEPT
                {
                    k.insert(id, name.as_str().into());
                }
                Some(Cow::Owned(name))
            }
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
        let (start, end) = self.span_in(s.ends, self.blobs, b as usize)?;
        if start >= end || end > self.facts_len {
            return None;
        }
        self.bytes(s.facts + start, end - start)
    }

    /// Whether blob `b` has symbols.
    pub fn has_symbols(&self, b: u32) -> bool {
        self.sections()
            .and_then(|s| self.span_in(s.ends, self.blobs, b as usize))
            .is_some_and(|(start, end)| start < end)
    }

    /// Pairs `from..from + n` of the section at `at` (of `len` pairs), read into `buf`:
    /// the bytes of the pairs read (fewer past the section's end).
    fn read_pairs<'b>(
        &self,
        at: usize,
        len: usize,
        from: usize,
        n: usize,
        buf: &'b mut Vec<u8>,
    ) -> Option<&'b [u8]> {
        let n = n.min(len.checked_sub(from)?);
        let start = at.checked_add(from.checked_mul(PAIR)?)?;
        buf.resize(n.checked_mul(PAIR)?, 0);
        self.read_into(start, buf)?;
        Some(buf)
    }

    /// The sparse index of the section at `at` of `len` pairs, read front to back; `None`
    /// when it cannot be read, is not sorted or has a key past the names (then it is damaged).
    fn sparse_index(&self, at: usize, len: usize) -> Option<SparseIndex> {
        let mut firsts = Vec::with_capacity(len.div_ceil(STRIDE));
        let mut present = vec![0u64; self.names.div_ceil(64)];
        let mut last: Option<(u32, u32)> = None;
        let mut buf = Vec::new();
        let mut from = 0;
        while from < len {
            let block = self.read_pairs(at, len, from, SCAN_PAIRS, &mut buf)?;
            for (i, p) in block.chunks_exact(PAIR).enumerate() {
                let pair = (le32(&p[..4]), le32(&p[4..]));
                if last.is_some_and(|l| l >= pair) {
                    return None;
                }
                last = Some(pair);
                let k = pair.0 as usize;
                *present.get_mut(k / 64)? |= 1 << (k % 64);
                if (from + i) % STRIDE == 0 {
                    firsts.push(pair.0);
                }
            }
            from += block.len() / PAIR;
        }
        Some(SparseIndex { firsts, present })
    }

    /// The blobs of the pairs (`key`, blob) in the section at `at` of `len` pairs, found
    /// through its sparse index `index` (built on first use).
    fn pairs_of(
        &self,
        index: &OnceLock<Option<SparseIndex>>,
        at: usize,
        len: usize,
        key: u32,
    ) -> Vec<u32> {
        let Some(index) = index.get_or_init(|| self.sparse_index(at, len)) else {
            return Vec::new();
        };
        if !index.holds(key) {
            return Vec::new();
        }
        let firsts = &index.firsts;
        // Block `p` starts with the first sampled key not below `key`: the key's pairs start
        // in the block before it or at its start.
        let p = firsts.partition_point(|&k| k < key);
        if p == 0 && firsts.first() != Some(&key) {
            return Vec::new();
        }
        let mut from = p.saturating_sub(1) * STRIDE;
        let mut want = 2 * STRIDE;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while from < len {
            let Some(block) = self.read_pairs(at, len, from, want, &mut buf) else {
                return Vec::new();
            };
            for p in block.chunks_exact(PAIR) {
                let (k, b) = (le32(&p[..4]), le32(&p[4..]));
                if k > key {
                    return out;
                }
                if k == key && (b as usize) < self.blobs {
                    out.push(b);
                }
            }
            from += block.len() / PAIR;
            // A key held by many blobs: read the rest of its run in larger pieces.
            want = SCAN_PAIRS;
        }
        out
    }

    /// The blobs defining name `name`, in blob order.
    pub fn defining(&self, name: u32) -> Vec<u32> {
        let Some(s) = self.sections() else {
            return Vec::new();
        };
        self.pairs_of(&self.defs_index, s.defs, self.def_pairs, name)
    }

    /// The blobs defining a name that holds term `term`, in blob order.
    pub fn with_def_term(&self, term: u32) -> Vec<u32> {
        let Some(s) = self.sections() else {
            return Vec::new();
        };
        self.pairs_of(&self.terms_index, s.terms, self.term_pairs, term)
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

#[cfg(test)]
mod tests {
    use super::*;

    const BLOBS: u32 = 600;
    const NAMES: u32 = 300;

    /// The blobs defining name `n` in the test file: name 0 in every blob (a run longer than
    /// any block read), name 1 in every third, the others in a few each, and names from 250
    /// in none.
    fn definers(n: u32) -> Vec<u32> {
        (0..BLOBS)
            .filter(|b| match n {
                0 => true,
                1 => b % 3 == 0,
                250.. => false,
                _ => b % 97 == n % 97,
            })
            .collect()
    }

    /// Term pairs: blob `b` has the term `b % 40 + 10`.
    fn with_term(t: u32) -> Vec<u32> {
        (0..BLOBS).filter(|b| b % 40 + 10 == t).collect()
    }

    fn name_of(id: u32) -> String {
        format!("name_{id:04}")
    }

    /// A symbols file of `BLOBS` blobs, every fifth without symbols, and its path.
    fn written(dir: &Path) -> (PathBuf, WordsId) {
        let path = dir.join("c.syms");
        let name = |id: u32| Cow::Owned(name_of(id));
        let facts = |b: u32| -> std::io::Result<Option<Entry>> {
            if b % 5 == 4 {
                return Ok(None);
            }
            Ok(Some(Entry {
                bytes: vec![b as u8; 3],
                defines: (0..NAMES).filter(|&n| definers(n).contains(&b)).collect(),
                terms: vec![b % 40 + 10],
            }))
        };
        let id = write(
            &path,
            &Contents {
                blobs: BLOBS as usize,
                name: &name,
                names: NAMES as usize,
                sorted: (0..NAMES).collect(),
                facts: &facts,
            },
        )
        .unwrap();
        (path, id)
    }

    fn expected(n: u32) -> Vec<u32> {
        definers(n).into_iter().filter(|b| b % 5 != 4).collect()
    }

    fn pair_sections(f: &SymFile) -> (usize, usize) {
        let s = f.sections().unwrap();
        (s.defs, s.terms)
    }

    #[test]
    fn every_lookup_finds_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = written(dir.path());
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        for n in 0..NAMES + 5 {
            assert_eq!(f.defining(n), expected(n), "name {n}");
        }
        assert_eq!(expected(0).len(), 480, "a run of many blocks");
        for t in 0..NAMES {
            let want: Vec<u32> = with_term(t).into_iter().filter(|b| b % 5 != 4).collect();
            assert_eq!(f.with_def_term(t), want, "term {t}");
        }
        for n in [0, 1, 137, NAMES - 1] {
            assert_eq!(f.name(n).unwrap(), name_of(n));
            assert_eq!(f.name(n).unwrap(), name_of(n), "kept once read");
            assert_eq!(f.lookup(&name_of(n)), Some(n));
        }
        assert_eq!(f.name(NAMES), None);
        assert_eq!(f.lookup("name_"), None);
        assert_eq!(f.lookup("zzz"), None);
        assert_eq!(f.facts(3).as_deref(), Some(&[3u8; 3][..]));
        assert!(f.has_symbols(3) && !f.has_symbols(4) && !f.has_symbols(BLOBS));
        let whole = f.names_in_memory().unwrap();
        for n in [0, 1, 96, 250] {
            assert_eq!(whole.defining(n), expected(n), "name {n}, in memory");
        }
    }

    #[test]
    fn ranges_read_through_the_kept_blocks_are_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = written(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        let total = bytes.len();
        assert!(total > 3 * BLOCK, "the file spans several blocks: {total}");
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        for at in [0, 1, BLOCK - 3, BLOCK, 2 * BLOCK - 1, total - 8, total - 1] {
            for len in [1, 4, 8, 13, BLOCK, BLOCK + 1, 3 * BLOCK] {
                let mut buf = vec![0u8; len];
                let got = f.read_into(at, &mut buf);
                if at + len <= total {
                    assert_eq!(got, Some(()), "{len} bytes at {at}");
                    assert!(buf == bytes[at..at + len], "{len} bytes at {at}");
                } else {
                    assert_eq!(got, None, "{len} bytes at {at}, past the end");
                }
            }
        }
        let kept = f.blocks.lock().unwrap();
        assert!(!kept.is_empty() && kept.len() <= total.div_ceil(BLOCK));
        let last = (total - 1) / BLOCK;
        assert_eq!(kept.get(&last).map(|b| b.len()), Some(total - last * BLOCK));
        drop(kept);
        // What the lookups find through the kept blocks is what a fresh file finds.
        for n in [0, 1, 96, 137, NAMES - 1] {
            assert_eq!(f.name(n).unwrap(), name_of(n));
            assert_eq!(f.defining(n), expected(n), "name {n}");
        }
        assert_eq!(f.facts(3).as_deref(), Some(&[3u8; 3][..]));
    }

    /// The file at `path` with the (key, blob) pair `i` of the section at `at` replaced.
    fn set_pair(path: &Path, at: usize, i: usize, pair: (u32, u32)) {
        let mut bytes = std::fs::read(path).unwrap();
        let p = at + i * PAIR;
        bytes[p..p + 4].copy_from_slice(&pair.0.to_le_bytes());
        bytes[p + 4..p + 8].copy_from_slice(&pair.1.to_le_bytes());
        std::fs::write(path, &bytes).unwrap();
    }

    #[test]
    fn pair_sections_out_of_order_or_past_the_names_answer_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = written(dir.path());
        let (defs, terms) = pair_sections(&SymFile::open(&path, &id, BLOBS as usize).unwrap());
        // The first definer pair moved after the others: the section is not sorted.
        set_pair(&path, defs, 0, (NAMES - 60, 0));
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        for n in 0..NAMES {
            assert!(f.defining(n).is_empty(), "name {n}");
        }
        assert_eq!(
            f.with_def_term(12),
            [
                2, 42, 82, 122, 162, 202, 242, 282, 322, 362, 402, 442, 482, 522, 562
            ]
        );

        let (path, id) = written(dir.path());
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        // The last term pair's key past the names.
        set_pair(&path, terms, f.term_pairs - 1, (u32::MAX, 1));
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        for t in 0..NAMES {
            assert!(f.with_def_term(t).is_empty(), "term {t}");
        }
        assert_eq!(f.defining(96), expected(96));
    }

    #[test]
    fn a_pair_naming_a_blob_past_the_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = written(dir.path());
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        let (defs, last) = (pair_sections(&f).0, f.def_pairs - 1);
        let mut bytes = std::fs::read(&path).unwrap();
        let key = le32(&bytes[defs + last * PAIR..]);
        drop(f);
        set_pair(&path, defs, last, (key, BLOBS + 7));
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        let mut want = expected(key);
        want.pop();
        assert_eq!(f.defining(key), want);
        bytes.truncate(bytes.len() - 1);
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            SymFile::open(&path, &id, BLOBS as usize).is_none(),
            "cut short"
        );
    }

    #[test]
    fn damaged_name_ends_yield_no_name_and_no_panic() {
        let dir = tempfile::tempdir().unwrap();
        let (path, id) = written(dir.path());
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        let at = f.sections().unwrap().name_ends;
        drop(f);
        let mut bytes = std::fs::read(&path).unwrap();
        // Name 10 ends before it starts; name 11 past the text.
        bytes[at + 40..at + 44].copy_from_slice(&0u32.to_le_bytes());
        bytes[at + 44..at + 48].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let f = SymFile::open(&path, &id, BLOBS as usize).unwrap();
        assert_eq!(f.name(10), None);
        assert_eq!(f.name(11), None);
        assert_eq!(f.name(12), None, "starts past the text");
        assert_eq!(f.name(13).unwrap(), name_of(13));
        for n in 0..NAMES {
            if let Some(id) = f.lookup(&name_of(n)) {
                assert_eq!(id, n);
            }
        }
    }
}
