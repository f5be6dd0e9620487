//! The words of every cached file version, kept as an inverted index on disk beside the map's
//! cache (`<cache>.words`): for each word, in byte order, the blobs it occurs in and how often.
//! A warm map reads only the entries of the request's words, by binary search through the
//! file (two reads a step: a word's entry with the one before it, then its text), so what it
//! loads is bounded by what it ranks, not by how much text the project holds.
//!
//! Layout (integers little-endian): a header (`MAGIC`, the id the cache it pairs with names,
//! the number of blobs that cache holds, of words, of postings, of bytes of word text), the
//! postings (`blob: u32`, `count: u16`) word after word, one entry per word (where its text
//! ends and where its postings end, both `u32`), and the words' text. The file lives outside
//! the project like the rest of the cache; every range read from it is checked against the
//! header, and a blob number past the cache's is ignored.

use std::fs::File;
use std::io::{Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

/// The file's first bytes (the last digit is the layout's version).
const MAGIC: &[u8; 8] = b"PAIWORD1";
/// Bytes of the header.
const HEADER: u64 = 48;
/// Bytes of one posting (`blob: u32`, `count: u16`).
const POSTING: u64 = 6;
/// Bytes of one word's entry.
const ENTRY: u64 = 8;
/// The longest word stored (longer ones are never terms: see `terms::for_each_term`).
const MAX_WORD: usize = 256;

/// Which words file a cache pairs with: a new id for every file written.
pub type WordsId = [u8; 16];

/// A fresh id, different for every file written (process, time and a counter hashed).
pub fn new_id() -> WordsId {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h = Sha256::new();
    h.update(std::process::id().to_le_bytes());
    h.update(now.to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let digest = h.finalize();
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

/// Where the words of the cache at `cache` are kept.
pub fn path_of(cache: &Path) -> PathBuf {
    cache.with_extension("words")
}

/// One blob's count of one word: (blob, count).
pub type Posting = (u32, u16);

/// An open words file, checked against the cache it pairs with.
#[derive(Debug)]
pub struct Words {
    file: File,
    blobs: u32,
    words: u64,
    postings: u64,
    text: u64,
}

impl Words {
    /// Open the words file at `path` if it is the one `id` names, for a cache of `blobs`
    /// blobs, and whole.
    pub fn open(path: &Path, id: &WordsId, blobs: usize) -> Option<Words> {
        let file = File::open(path).ok()?;
        let mut head = [0u8; HEADER as usize];
        file.read_exact_at(&mut head, 0).ok()?;
        let u32_at = |at: usize| {
            head.get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
        };
        let u64_at = |at: usize| {
            head.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
        };
        if &head[..8] != MAGIC || &head[8..24] != id {
            return None;
        }
        let words = Words {
            blobs: u32_at(24)?,
            words: u64::from(u32_at(28)?),
            postings: u64_at(32)?,
            text: u64_at(40)?,
            file,
        };
        if words.blobs as usize != blobs {
            return None;
        }
        let size = HEADER
            .checked_add(words.postings.checked_mul(POSTING)?)?
            .checked_add(words.words.checked_mul(ENTRY)?)?
            .checked_add(words.text)?;
        (words.file.metadata().ok()?.len() == size).then_some(words)
    }

    /// How many blobs the cache it pairs with holds.
    pub fn blobs(&self) -> usize {
        self.blobs as usize
    }

    fn entries_at(&self) -> u64 {
        HEADER + self.postings * POSTING
    }

    fn text_at(&self) -> u64 {
        self.entries_at() + self.words * ENTRY
    }

    /// Where word `k`'s text and postings start and end: `((text from, postings from), (text
    /// to, postings to))`, read in one call (the end of word `k - 1` and of word `k` are
    /// side by side), checked against the header.
    fn span(&self, k: u64) -> Option<((u64, u64), (u64, u64))> {
        if k >= self.words {
            return None;
        }
        let first = k.saturating_sub(1);
        let n = if k == 0 { 1 } else { 2 };
        let mut b = [0u8; 2 * ENTRY as usize];
        let b = &mut b[..n * ENTRY as usize];
        self.file
            .read_exact_at(b, self.entries_at() + first * ENTRY)
            .ok()?;
        let at = |i: usize| {
            let e = &b[i * ENTRY as usize..];
            let text = u64::from(u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
            let postings = u64::from(u32::from_le_bytes([e[4], e[5], e[6], e[7]]));
            (text <= self.text && postings <= self.postings).then_some((text, postings))
        };
        let end = at(n - 1)?;
        let start = if k == 0 { (0, 0) } else { at(0)? };
        Some((start, end))
    }

    /// Word `k`'s text, its span known.
    fn word(&self, span: ((u64, u64), (u64, u64)), buf: &mut Vec<u8>) -> Option<()> {
        let ((from, _), (to, _)) = span;
        let len = usize::try_from(to.checked_sub(from)?).ok()?;
        if len > MAX_WORD {
            return None;
        }
        buf.resize(len, 0);
        self.file.read_exact_at(buf, self.text_at() + from).ok()
    }

    /// The postings of `word`, in the order they were written (blob order), each blob below
    /// the cache's count (empty when the word is not there or the file is damaged).
    pub fn postings(&self, word: &str) -> Vec<Posting> {
        let (mut lo, mut hi) = (0u64, self.words);
        let mut buf = Vec::new();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some(span) = self.span(mid) else {
                return Vec::new();
            };
            if self.word(span, &mut buf).is_none() {
                return Vec::new();
            }
            match buf.as_slice().cmp(word.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.postings_of(span).unwrap_or_default(),
            }
        }
        Vec::new()
    }

    fn postings_of(&self, span: ((u64, u64), (u64, u64))) -> Option<Vec<Posting>> {
        let ((_, from), (_, to)) = span;
        let n = usize::try_from(to.checked_sub(from)?).ok()?;
        let mut bytes = vec![0u8; n.checked_mul(POSTING as usize)?];
        self.file
            .read_exact_at(&mut bytes, HEADER + from * POSTING)
            .ok()?;
        Some(
            bytes
                .chunks_exact(POSTING as usize)
                .map(decode_posting)
                .filter(|&(b, _)| b < self.blobs)
                .collect(),
        )
    }

    /// Every word with its postings, in order, read in large sequential pieces (for writing
    /// the next file: the words are never all in memory).
    fn each(
        &self,
        mut f: impl FnMut(&[u8], &[Posting]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut entries = Sequential::new(&self.file, self.entries_at(), self.words * ENTRY);
        let mut text = Sequential::new(&self.file, self.text_at(), self.text);
        let mut postings = Sequential::new(&self.file, HEADER, self.postings * POSTING);
        let (mut text_at, mut postings_at) = (0u64, 0u64);
        let mut word = Vec::new();
        let mut list = Vec::new();
        for _ in 0..self.words {
            let e = entries.take(ENTRY as usize)?;
            let text_end = u64::from(u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
            let postings_end = u64::from(u32::from_le_bytes([e[4], e[5], e[6], e[7]]));
            let (Some(len), Some(n)) = (
                text_end.checked_sub(text_at),
                postings_end.checked_sub(postings_at),
            ) else {
                return Err(damaged());
            };
            if len as usize > MAX_WORD || text_end > self.text || postings_end > self.postings {
                return Err(damaged());
            }
            word.clear();
            word.extend_from_slice(text.take(len as usize)?);
            list.clear();
            for _ in 0..n {
                let p = decode_posting(postings.take(POSTING as usize)?);
                if p.0 < self.blobs {
                    list.push(p);
                }
            }
            (text_at, postings_at) = (text_end, postings_end);
            f(&word, &list)?;
        }
        Ok(())
    }
}

fn damaged() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the map's words file is damaged",
    )
}

fn decode_posting(b: &[u8]) -> Posting {
    let blob = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let count = u16::from_le_bytes([b[4], b[5]]);
    (blob, count)
}

/// A range of a file read front to back in pieces.
struct Sequential<'f> {
    file: &'f File,
    next: u64,
    end: u64,
    buf: Vec<u8>,
    at: usize,
}

impl<'f> Sequential<'f> {
    const PIECE: usize = 64 * 1024;

    fn new(file: &'f File, from: u64, len: u64) -> Self {
        Sequential {
            file,
            next: from,
            end: from + len,
            buf: Vec::new(),
            at: 0,
        }
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> std::io::Result<&[u8]> {
        if self.buf.len() - self.at < n {
            self.buf.drain(..self.at);
            self.at = 0;
            let want = (Self::PIECE.max(n) as u64).min(self.end - self.next) as usize;
            let have = self.buf.len();
            self.buf.resize(have + want, 0);
            self.file.read_exact_at(&mut self.buf[have..], self.next)?;
            self.next += want as u64;
            if self.buf.len() < n {
                return Err(damaged());
            }
        }
        let from = self.at;
        self.at += n;
        Ok(&self.buf[from..from + n])
    }
}

/// The words of the blobs added since the cache was loaded: each distinct word's text once,
/// and every (word, blob, count) in one flat list, sorted by word only when written. A cold
/// map adds a few hundred words for each of thousands of files; a map from word to its own
/// list would cost a string, a list and a tree node per word on top of the postings.
#[derive(Debug, Default)]
pub struct Added {
    /// The words one after another.
    text: String,
    /// Where each word ends in `text`.
    ends: Vec<u32>,
    /// Word numbers, by the hash of their text.
    table: hashbrown::HashTable<u32>,
    hasher: std::collections::hash_map::RandomState,
    /// (word << 8 | count, blob), blobs in the order added: eight bytes a posting, not twelve
    /// (postings are most of what a cold map holds).
    postings: Vec<(u32, u32)>,
}

/// Bits of a packed posting's count: a count over [`MAX_COUNT`] is kept as that (a ranking
/// weighs a word's count in a file with diminishing returns long before it).
const COUNT_BITS: u32 = 8;
/// The largest count kept.
pub const MAX_COUNT: u16 = (1 << COUNT_BITS) - 1;
/// Words past this many are not kept (their number would not fit beside the count); no map
/// of one process meets that many distinct words.
const MAX_ADDED_WORDS: usize = 1 << (32 - COUNT_BITS);

/// A word number and count packed into one `u32`.
fn pack(k: u32, count: u16) -> u32 {
    (k << COUNT_BITS) | u32::from(count.min(MAX_COUNT))
}

/// The word number and count of a packed posting.
fn unpack(p: u32) -> (u32, u16) {
    (p >> COUNT_BITS, (p & u32::from(MAX_COUNT)) as u16)
}

impl Added {
    /// None yet.
    pub fn new() -> Self {
        Added::default()
    }

    /// Word `k`'s text.
    fn word(&self, k: u32) -> &str {
        let k = k as usize;
        let from = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        self.text.get(from..self.ends[k] as usize).unwrap_or("")
    }

    fn hash(&self, word: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, word)
    }

    /// The number of `word`, when it was added.
    fn find(&self, word: &str) -> Option<u32> {
        self.table
            .find(self.hash(word), |&k| self.word(k) == word)
            .copied()
    }

    /// Blob `blob` holds `word` `count` times (kept as at most [`MAX_COUNT`]).
    pub fn add(&mut self, word: &str, blob: u32, count: u16) {
        let hash = self.hash(word);
        let k = match self.table.find(hash, |&k| self.word(k) == word) {
            Some(&k) => k,
            None if self.ends.len() >= MAX_ADDED_WORDS => return,
            None => {
                let k = u32::try_from(self.ends.len()).unwrap_or(u32::MAX);
                self.text.push_str(word);
                self.ends
                    .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
                let (text, ends, hasher) = (&self.text, &self.ends, &self.hasher);
                let rehash = |&k: &u32| {
                    let k = k as usize;
                    let from = if k == 0 { 0 } else { ends[k - 1] as usize };
                    let word = text.get(from..ends[k] as usize).unwrap_or("");
                    std::hash::BuildHasher::hash_one(hasher, word)
                };
                self.table.insert_unique(hash, k, rehash);
                k
            }
        };
        self.postings.push((pack(k, count), blob));
    }

    /// The postings of each of `words` (in their order), blobs in the order added, found in
    /// one pass over the list.
    pub fn postings_of(&self, words: &[&str]) -> Vec<Vec<Posting>> {
        let mut out = vec![Vec::new(); words.len()];
        let wanted: std::collections::HashMap<u32, usize> = words
            .iter()
            .enumerate()
            .filter_map(|(i, w)| Some((self.find(w)?, i)))
            .collect();
        if wanted.is_empty() {
            return out;
        }
        for &(p, b) in &self.postings {
            let (k, n) = unpack(p);
            if let Some(&i) = wanted.get(&k) {
                out[i].push((b, n));
            }
        }
        out
    }

    /// Renumber each posting's blob with `re` (`false`: drop it).
    pub fn renumber(&mut self, mut re: impl FnMut(&mut u32) -> bool) {
        self.postings.retain_mut(|(_, b)| re(b));
    }

    /// Every word with its postings, in byte order (the list is sorted for it in place).
    fn sorted(&mut self) -> impl Iterator<Item = (&str, Vec<Posting>)> + '_ {
        let mut order: Vec<u32> = (0..u32::try_from(self.ends.len()).unwrap_or(u32::MAX)).collect();
        order.sort_unstable_by(|&a, &b| self.word(a).cmp(self.word(b)));
        let mut rank = vec![0u32; order.len()];
        for (r, &k) in order.iter().enumerate() {
            rank[k as usize] = u32::try_from(r).unwrap_or(u32::MAX);
        }
        drop(order);
        // In place (a stable sort would take half the list again): each word's blobs in blob
        // order.
        self.postings
            .sort_unstable_by_key(|&(p, b)| (rank[unpack(p).0 as usize], b));
        drop(rank);
        let this = &*self;
        let word_of = |p: &(u32, u32)| unpack(p.0).0;
        this.postings
            .chunk_by(move |a, b| word_of(a) == word_of(b))
            .map(move |run| {
                (
                    this.word(word_of(&run[0])),
                    run.iter().map(|&(p, b)| (b, unpack(p).1)).collect(),
                )
            })
    }
}

/// Write the words file of a cache of `blobs` blobs to `path` (atomically, private to the
/// user): the words of `old` with each blob renumbered by `renumber` (`None`: dropped), merged
/// with `added` (already numbered), word by word in byte order. Returns its id.
pub fn write(
    path: &Path,
    blobs: usize,
    old: Option<&Words>,
    renumber: &dyn Fn(u32) -> Option<u32>,
    added: &mut Added,
) -> std::io::Result<WordsId> {
    let id = new_id();
    let blobs = u32::try_from(blobs).map_err(|_| std::io::Error::other("too many blobs"))?;
    let too_big = || std::io::Error::other("the map's words file would pass 4 GB");
    crate::private_file::write_atomic_with(path, |out| {
        let mut entries = std::io::BufWriter::new(tempfile::tempfile_in(dir_of(path))?);
        let mut text = std::io::BufWriter::new(tempfile::tempfile_in(dir_of(path))?);
        let mut postings = std::io::BufWriter::new(&mut *out);
        postings.write_all(&[0u8; HEADER as usize])?;
        let (mut words, mut n_postings, mut n_text) = (0u32, 0u64, 0u64);
        let mut emit = |word: &[u8], lists: [&[Posting]; 2]| -> std::io::Result<()> {
            let mut any = false;
            for &(blob, count) in lists.iter().flat_map(|l| l.iter()) {
                postings.write_all(&blob.to_le_bytes())?;
                postings.write_all(&count.to_le_bytes())?;
                n_postings += 1;
                any = true;
            }
            if !any {
                return Ok(());
            }
            text.write_all(word)?;
            n_text += word.len() as u64;
            words = words.checked_add(1).ok_or_else(too_big)?;
            let t = u32::try_from(n_text).map_err(|_| too_big())?;
            let p = u32::try_from(n_postings).map_err(|_| too_big())?;
            entries.write_all(&t.to_le_bytes())?;
            entries.write_all(&p.to_le_bytes())?;
            Ok(())
        };
        let mut fresh = added.sorted().peekable();
        if let Some(old) = old {
            let mut kept = Vec::new();
            old.each(|word, list| {
                while let Some((w, l)) = fresh.next_if(|(w, _)| w.as_bytes() < word) {
                    emit(w.as_bytes(), [&l, &[]])?;
                }
                kept.clear();
                kept.extend(list.iter().filter_map(|&(b, n)| Some((renumber(b)?, n))));
                match fresh.next_if(|(w, _)| w.as_bytes() == word) {
                    Some((_, l)) => emit(word, [&kept, &l]),
                    None => emit(word, [&kept, &[]]),
                }
            })?;
        }
        for (w, l) in fresh {
            emit(w.as_bytes(), [&l, &[]])?;
        }
        postings.flush()?;
        drop(postings);
        for part in [entries, text] {
            let mut f = part.into_inner().map_err(|e| e.into_error())?;
            f.seek(SeekFrom::Start(0))?;
            std::io::copy(&mut f, &mut *out)?;
        }
        let mut head = Vec::with_capacity(HEADER as usize);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&id);
        head.extend_from_slice(&blobs.to_le_bytes());
        head.extend_from_slice(&words.to_le_bytes());
        head.extend_from_slice(&n_postings.to_le_bytes());
        head.extend_from_slice(&n_text.to_le_bytes());
        out.write_all_at(&head, 0)?;
        Ok(())
    })?;
    Ok(id)
}

fn dir_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(list: &[(&str, &[Posting])]) -> Added {
        let mut out = Added::new();
        for (w, l) in list {
            for &(b, n) in *l {
                out.add(w, b, n);
            }
        }
        out
    }

    #[test]
    fn words_are_found_with_their_postings_and_merged_when_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.words");
        let mut first = added(&[
            ("alpha", &[(0, 2), (3, 1)]),
            ("delta", &[(1, 5)]),
            ("zeta", &[(2, 1)]),
        ]);
        let id = write(&path, 4, None, &|b| Some(b), &mut first).unwrap();
        let w = Words::open(&path, &id, 4).unwrap();
        assert_eq!(w.postings("alpha"), [(0, 2), (3, 1)]);
        assert_eq!(w.postings("delta"), [(1, 5)]);
        assert_eq!(w.postings("zeta"), [(2, 1)]);
        assert!(w.postings("beta").is_empty());
        assert!(w.postings("").is_empty());
        // Blob 1 dropped, the rest renumbered down; two more blobs added.
        let mut more = added(&[("beta", &[(3, 1)]), ("zeta", &[(4, 7)])]);
        let renumber = |b: u32| match b {
            0 => Some(0),
            2 => Some(1),
            3 => Some(2),
            _ => None,
        };
        let id2 = write(&path, 5, Some(&w), &renumber, &mut more).unwrap();
        assert_ne!(id, id2);
        assert!(
            Words::open(&path, &id, 4).is_none(),
            "the old id no longer names it"
        );
        let w = Words::open(&path, &id2, 5).unwrap();
        assert_eq!(w.postings("alpha"), [(0, 2), (2, 1)]);
        assert_eq!(w.postings("beta"), [(3, 1)]);
        assert!(w.postings("delta").is_empty(), "its only blob was dropped");
        assert_eq!(w.postings("zeta"), [(1, 1), (4, 7)]);
    }

    #[test]
    fn added_words_are_found_in_one_pass_and_renumbered() {
        let mut a = added(&[("alpha", &[(0, 2), (3, 1)]), ("beta", &[(1, 5)])]);
        a.add("alpha", 4, 9);
        // Enough words for the table to grow and rehash them from their text.
        for i in 0..5_000 {
            a.add(&format!("w{i}"), 5, 1);
        }
        assert_eq!(
            a.postings_of(&["beta", "gamma", "alpha"]),
            [vec![(1, 5)], vec![], vec![(0, 2), (3, 1), (4, 9)]]
        );
        // Blob 3 dropped, 4 becomes 2.
        a.renumber(|b| match *b {
            3 => false,
            4 => {
                *b = 2;
                true
            }
            _ => true,
        });
        assert_eq!(a.postings_of(&["alpha"]), [vec![(0, 2), (2, 9)]]);
        assert_eq!(a.postings_of(&["w4999"]), [vec![(5, 1)]]);
        a.add("often", 6, 1_000);
        assert_eq!(
            a.postings_of(&["often"]),
            [vec![(6, MAX_COUNT)]],
            "a count past the largest kept is kept as that"
        );
        // Words added in no order are written in byte order.
        let mut b = added(&[("zeta", &[(0, 1)]), ("eta", &[(1, 1), (0, 3)])]);
        let listed: Vec<(String, Vec<Posting>)> =
            b.sorted().map(|(w, l)| (w.to_string(), l)).collect();
        assert_eq!(
            listed,
            [
                ("eta".to_string(), vec![(0, 3), (1, 1)]),
                ("zeta".to_string(), vec![(0, 1)])
            ]
        );
    }

    #[test]
    fn a_damaged_or_foreign_file_is_refused_or_yields_nothing_out_of_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.words");
        let id = write(
            &path,
            2,
            None,
            &|b| Some(b),
            &mut added(&[("word", &[(0, 1), (1, 1)])]),
        )
        .unwrap();
        assert!(
            Words::open(&path, &id, 3).is_none(),
            "another cache's blob count"
        );
        assert!(
            Words::open(&path, &[9; 16], 2).is_none(),
            "another cache's id"
        );
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 1);
        std::fs::write(&path, &bytes).unwrap();
        assert!(Words::open(&path, &id, 2).is_none(), "cut short");
        // A posting naming a blob past the cache's: ignored.
        let id = write(
            &path,
            2,
            None,
            &|b| Some(b),
            &mut added(&[("word", &[(0, 1), (7, 1)])]),
        )
        .unwrap();
        let w = Words::open(&path, &id, 2).unwrap();
        assert_eq!(w.postings("word"), [(0, 1)]);
        // An entry pointing past the postings: nothing, and no panic.
        let mut bytes = std::fs::read(&path).unwrap();
        let entry = (HEADER + 2 * POSTING) as usize;
        bytes[entry + 4..entry + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let w = Words::open(&path, &id, 2).unwrap();
        assert!(w.postings("word").is_empty());
    }
}
