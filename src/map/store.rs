//! The map's cache: what it learned of each file version, kept in the user's cache directory
//! (`$XDG_CACHE_HOME/pai/map/`), one file per project, never inside the project — a
//! repository must not be able to plant what the map believes. A file that does not decode,
//! names another project, or holds an id out of range is ignored and rebuilt.
//!
//! The cache file itself holds every blob's id and size, the files known by their stamp and
//! the recent history. The symbols (names, definitions, references) are in a memory-mapped
//! file beside it (`symfile.rs`) and the words of every blob in an inverted index beside it
//! (`words.rs`): a warm map reads the symbols of the blobs it ranks, shows or walks through
//! and the words the request asks for, not the project's text or every file's symbols.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

use super::facts::{BlobFacts, Facts, Names, WordCounts};
use super::symfile::{self, SymFile};
use super::terms::Query;
use super::words::{self, Added, Words, WordsId};
use crate::workspace::Stamp;

/// Bumped whenever the stored shape or what the facts mean changes.
const FORMAT: u32 = 8;

/// A git blob id: the content's identity.
pub type BlobId = [u8; 20];

/// No entry, in renumberings and name maps.
const NONE: u32 = u32::MAX;

/// Lookups by id below which the order of the blobs is not judged (a small project's table
/// costs next to nothing).
const SCATTERED_FROM: usize = 4096;
/// The share of lookups (one in this many) the guess may miss before the blobs are saved
/// renumbered.
const SCATTERED_SHARE: usize = 16;

/// The files changed by recent commits, as of one HEAD.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Recent {
    /// The HEAD commit they were read at.
    pub head: String,
    /// Paths and how many of the recent commits changed each.
    pub counts: Vec<(String, u32)>,
}

/// What a blob's size tells a ranking: its term occurrences, lines, and whether it parsed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
struct Size {
    len: u32,
    lines: u32,
    parsed: bool,
}

impl Size {
    fn of(f: &Facts) -> Self {
        Size {
            len: f.len,
            lines: f.lines,
            parsed: f.parsed,
        }
    }

    fn facts(self) -> Facts {
        Facts {
            len: self.len,
            lines: self.lines,
            parsed: self.parsed,
            ..Facts::default()
        }
    }
}

/// Blobs to a chunk of a view's cells.
const CHUNK: usize = 256;

/// The cells of [`CHUNK`] blobs in a view.
type Chunk = [OnceCell<Box<Facts>>; CHUNK];

/// The same shape as [`Stored`], borrowed, for writing without copying the store.
#[derive(serde::Serialize)]
struct StoredRef<'a> {
    format: u32,
    root: &'a str,
    files: Vec<(&'a str, Stamp, u32)>,
    blobs: u32,
    sizes: &'a [Size],
    recent: &'a Option<Recent>,
    words: WordsId,
    symbols: WordsId,
}

#[derive(serde::Deserialize)]
struct Stored {
    format: u32,
    root: String,
    #[serde(deserialize_with = "files_table")]
    files: StampedFiles,
    blobs: u32,
    sizes: Vec<Size>,
    recent: Option<Recent>,
    words: WordsId,
    symbols: WordsId,
}

/// Files known by their stamp, by path: the stamp when read, and the blob. Every file of the
/// project is looked up in it (100,000 at a time), so it hashes with foldhash, seeded per
/// process, rather than SipHash, which took as long as ranking them.
pub type StampedFiles = HashMap<String, (Stamp, u32), foldhash::fast::RandomState>;

/// The stored list of files, straight into the table a map looks them up in (a list first
/// would hold every path twice while the table is built: 8 MB more at 100,000 files).
fn files_table<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StampedFiles, D::Error> {
    struct Table;
    impl<'de> serde::de::Visitor<'de> for Table {
        type Value = StampedFiles;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of (path, stamp, blob)")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            // The hint comes from the file: bounded, so a forged length allocates nothing huge.
            let mut table = StampedFiles::with_capacity_and_hasher(
                seq.size_hint().unwrap_or(0).min(1 << 20),
                Default::default(),
            );
            while let Some((path, stamp, blob)) = seq.next_element::<(String, Stamp, u32)>()? {
                table.insert(path, (stamp, blob));
            }
            Ok(table)
        }
    }
    d.deserialize_seq(Table)
}

/// The cache in memory.
#[derive(Default)]
pub struct Store {
    /// Interned names: identifiers, signatures and the terms of defined names (the stored
    /// ones in the symbols file; the words of the files' text are in the words index, and
    /// here only once a request asked for them).
    pub names: Names,
    /// Files known by their stat stamp rather than by git's index (untracked files, files
    /// whose text differs from the index, files without text): the stamp when read and the
    /// index of the blob. Tracked files the index describes are not in it.
    pub files: StampedFiles,
    /// Recent history.
    pub recent: Option<Recent>,
    /// Every blob's id: the first `saved` as loaded (or kept by [`Store::compact`]), the rest
    /// added since.
    ids: Vec<BlobId>,
    /// Every blob's size.
    sizes: Vec<Size>,
    /// The facts of the blobs added since loading that have symbols, encoded as the symbols
    /// file holds them (a third of their size in memory: a cold map adds thousands).
    added_facts: HashMap<u32, Box<[u8]>>,
    /// The symbols of the first `saved` blobs, mapped.
    syms: Option<Arc<SymFile>>,
    /// The id of that symbols file.
    syms_id: WordsId,
    /// The words of the blobs added since loading.
    added: Added,
    /// The words of the first `saved` blobs, on disk.
    words: Option<Words>,
    /// The id of that words file.
    words_id: WordsId,
    /// How [`Store::compact`] renumbered the first `saved` blobs (old index to new, `NONE`:
    /// dropped), for writing their words and symbols.
    renumbered: Option<Vec<u32>>,
    /// How many of `ids` the lookup table `slots` covers.
    saved: usize,
    /// The blobs after the first `saved`, by id.
    by_id: HashMap<BlobId, u32>,
    /// An open-addressing table over the first `saved` blobs (slot -> index + 1; 0 empty),
    /// made at the first lookup the guess below misses: a binary search of 100,000 ids costs
    /// seventeen comparisons in memory read at random.
    slots: OnceLock<Vec<u32>>,
    /// The blob after the last one found by id. The cache numbers its blobs in the order the
    /// project's files first use them (see [`Store::compact`]), and a map looks the files up
    /// in that order, so the next lookup is most often this blob: the ids are then read in
    /// order, and the table is never made.
    next: AtomicUsize,
    /// Lookups of saved blobs the guess missed, and lookups in all.
    misses: AtomicUsize,
    lookups: AtomicUsize,
}

/// Where a blob id starts probing: its first eight bytes (an id is a SHA-1, spread evenly).
fn slot_of(id: &BlobId) -> usize {
    let mut word = [0u8; 8];
    word.copy_from_slice(&id[..8]);
    u64::from_le_bytes(word) as usize
}

/// The lookup table of `ids`, at most half full.
fn slot_table(ids: &[BlobId]) -> Vec<u32> {
    let size = (ids.len() * 2).next_power_of_two().max(16);
    let mask = size - 1;
    let mut slots = vec![0u32; size];
    for (i, id) in ids.iter().enumerate() {
        let Ok(n) = u32::try_from(i + 1) else {
            break;
        };
        let mut slot = slot_of(id) & mask;
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = n;
    }
    slots
}

/// The request's words found in the blobs: per blob, (name id, count) sorted by name id.
pub type Hits = HashMap<u32, Vec<(u32, u16)>>;

impl Store {
    /// Whether it knows no blob (a cold map).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of blob `b`.
    pub fn id(&self, b: u32) -> Option<BlobId> {
        self.ids.get(b as usize).copied()
    }

    /// The facts of a blob already known by its id.
    pub fn blob_index(&self, id: &BlobId) -> Option<u32> {
        let saved = self.ids.get(..self.saved).unwrap_or_default();
        self.lookups.fetch_add(1, Relaxed);
        let guess = self.next.load(Relaxed);
        // The next blob; the same as the last file's (a copy); the one after (a file known
        // by its stamp took the next).
        for at in [guess, guess.wrapping_sub(1), guess + 1] {
            if saved.get(at) == Some(id) {
                self.next.store(at + 1, Relaxed);
                return u32::try_from(at).ok();
            }
        }
        self.misses.fetch_add(1, Relaxed);
        let found = self.probe(saved, id);
        if let Some(b) = found {
            self.next.store(b as usize + 1, Relaxed);
        }
        found.or_else(|| self.by_id.get(id).copied())
    }

    /// Whether the saved blobs are numbered far from the order lookups come in (a cache
    /// written before blobs were numbered by first use, or a project reordered since), so that
    /// the map should save the cache renumbered though nothing else changed.
    pub fn scattered(&self) -> bool {
        let (misses, lookups) = (self.misses.load(Relaxed), self.lookups.load(Relaxed));
        lookups >= SCATTERED_FROM && misses * SCATTERED_SHARE > lookups
    }

    /// The saved blob `id`, from the table over them (made when first needed).
    fn probe(&self, saved: &[BlobId], id: &BlobId) -> Option<u32> {
        let slots = self.slots.get_or_init(|| slot_table(saved));
        if let Some(mask) = slots.len().checked_sub(1) {
            let mut slot = slot_of(id) & mask;
            while let Some(&n) = slots.get(slot).filter(|&&n| n != 0) {
                if saved.get(n as usize - 1) == Some(id) {
                    return Some(n - 1);
                }
                slot = (slot + 1) & mask;
            }
        }
        None
    }

    /// Add a blob's facts (without words); returns its index.
    pub fn add_blob(&mut self, id: BlobId, facts: Facts) -> u32 {
        self.add_parsed(id, facts, Vec::new())
    }

    /// Add a blob's facts and words; returns its index.
    pub fn add_parsed(&mut self, id: BlobId, mut facts: Facts, words: WordCounts) -> u32 {
        if let Some(i) = self.blob_index(&id) {
            return i;
        }
        let i = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.ids.push(id);
        self.sizes.push(Size::of(&facts));
        if facts.has_symbols() {
            facts.terms.clear();
            if let Ok(bytes) = postcard::to_stdvec(&facts) {
                self.added_facts.insert(i, bytes.into_boxed_slice());
            }
        }
        for (word, n) in words {
            self.added.add(&word, i, n);
        }
        self.by_id.insert(id, i);
        i
    }

    /// The facts of blob `b`, added since loading.
    fn added_facts(&self, b: u32) -> Option<Facts> {
        postcard::from_bytes(self.added_facts.get(&b)?).ok()
    }

    /// The symbols file's blobs, numbered as now (none once [`Store::compact`] renumbered).
    fn mapped(&self) -> Option<&SymFile> {
        self.syms.as_deref().filter(|_| self.renumbered.is_none())
    }

    /// The facts of blob `b` as stored, without the request's term counts.
    fn stored_facts(&self, b: u32) -> Option<Facts> {
        let size = *self.sizes.get(b as usize)?;
        let symbols = match self.added_facts(b) {
            Some(f) => Some(f),
            None if (b as usize) < self.saved => self.mapped().and_then(|s| decode(s, b)),
            None => None,
        };
        Some(symbols.unwrap_or_else(|| size.facts()))
    }

    /// The request's words (its terms and identifiers) in the blobs, read from the words
    /// index for those words only, each word found interned into [`Store::names`].
    pub fn words_of(&mut self, query: &Query) -> Hits {
        let mut wanted: Vec<&str> = query
            .terms
            .iter()
            .chain(&query.idents)
            .map(String::as_str)
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut hits: Hits = HashMap::new();
        let added = self.added.postings_of(&wanted);
        for (w, more) in wanted.into_iter().zip(added) {
            let mut list = self
                .words
                .as_ref()
                .map(|x| x.postings(w))
                .unwrap_or_default();
            list.extend(more);
            if list.is_empty() {
                continue;
            }
            let id = self.names.intern(w);
            for (b, n) in list {
                hits.entry(b).or_default().push((id, n));
            }
        }
        for counts in hits.values_mut() {
            counts.sort_unstable();
            counts.dedup_by_key(|c| c.0);
        }
        hits
    }

    /// The blobs as a ranking for a request reads them, given the request's words in them
    /// ([`Store::words_of`]): each blob's facts loaded when first asked for.
    pub fn view(&self, hits: Hits) -> View<'_> {
        View {
            store: self,
            hits,
            cells: (0..self.ids.len().div_ceil(CHUNK))
                .map(|_| OnceCell::new())
                .collect(),
            added_index: OnceCell::new(),
        }
    }

    /// Keep only the blobs in `live` (every project file's, in the file list's order) and
    /// those the stamped files use, renumbering blobs when many went, so the cache does not
    /// grow with every version of every file (the names are renumbered as the symbols file is
    /// written). Renumbered, the blobs take the order the files first use them in, which is
    /// the order the next map looks them up in; they are renumbered for that alone when it
    /// halves the lookups that miss that order and the words and symbols are written anew
    /// anyway (blobs were added), or the lookups of this map mostly missed it. Returns
    /// whether it renumbered.
    pub fn compact(&mut self, live: &[u32]) -> bool {
        let count = self.ids.len();
        let mut stamped: Vec<u32> = self.files.values().map(|(_, b)| *b).collect();
        stamped.sort_unstable();
        let mut renumber = vec![NONE; count];
        let mut used = Vec::with_capacity(live.len().min(count));
        for b in live.iter().copied().chain(stamped) {
            if let Some(slot) = renumber.get_mut(b as usize)
                && *slot == NONE
            {
                *slot = u32::try_from(used.len()).unwrap_or(NONE);
                used.push(b);
            }
        }
        let few_went = used.len() * 4 >= count * 3 && self.names.len() < 4 * 1024 * 1024;
        if few_went {
            let worth = count != self.saved || self.scattered();
            let now = guess_misses(live, |b| b);
            let after = guess_misses(live, |b| renumber.get(b as usize).copied().unwrap_or(NONE));
            if !(worth && after * 2 < now) {
                return false;
            }
        }
        let (mut ids, mut sizes) = (Vec::new(), Vec::new());
        let mut added_facts = HashMap::new();
        for b in used {
            let n = u32::try_from(ids.len()).unwrap_or(NONE);
            ids.push(self.ids[b as usize]);
            sizes.push(self.sizes[b as usize]);
            if let Some(f) = self.added_facts.remove(&b) {
                added_facts.insert(n, f);
            }
        }
        let re = |b: &mut u32| match renumber.get(*b as usize) {
            Some(&n) if n != NONE => {
                *b = n;
                true
            }
            _ => false,
        };
        self.files.retain(|_, (_, b)| re(b));
        self.added.renumber(re);
        renumber.truncate(self.saved);
        self.renumbered = Some(renumber);
        self.ids = ids;
        self.sizes = sizes;
        self.added_facts = added_facts;
        self.by_id.clear();
        self.slots = OnceLock::new();
        self.next = AtomicUsize::new(0);
        true
    }
}

/// How many of `live`'s blobs, numbered by `number`, a lookup in that order finds away from
/// where [`Store::blob_index`] guesses first.
fn guess_misses(live: &[u32], number: impl Fn(u32) -> u32) -> usize {
    let mut next: u32 = 0;
    let mut misses = 0;
    for &b in live {
        let n = number(b);
        if n == NONE {
            continue;
        }
        let near = n == next || n.wrapping_add(1) == next || n == next.wrapping_add(1);
        misses += usize::from(!near);
        next = n.wrapping_add(1);
    }
    misses
}

/// Blob `b`'s facts from the symbols file `syms` (`None` when it has none, or they do not
/// decode or name a name past the file's).
fn decode(syms: &SymFile, b: u32) -> Option<Facts> {
    let f: Facts = postcard::from_bytes(&syms.facts(b)?).ok()?;
    f.ids_below(syms.names()).then_some(f)
}

/// Blob facts `f` as the symbols file holds them (`None` when they hold no symbols).
fn entry(f: Option<Facts>) -> std::io::Result<Option<symfile::Entry>> {
    let Some(f) = f.filter(Facts::has_symbols) else {
        return Ok(None);
    };
    Ok(Some(symfile::Entry {
        bytes: postcard::to_stdvec(&f).map_err(std::io::Error::other)?,
        defines: f.defs.iter().map(|d| d.name).collect(),
        terms: f.def_terms.clone(),
    }))
}

/// The store's blobs as one ranking reads them: sizes from the store's columns, the request's
/// words from the words index, symbols decoded from the mapped file blob by blob as asked for.
pub struct View<'s> {
    store: &'s Store,
    hits: Hits,
    /// Each blob's facts, once asked for, in chunks of [`CHUNK`] blobs made when one of
    /// theirs is first asked for: a map asks for a few hundred blobs' facts at most, and a
    /// cell for every blob would be a table as large as the blobs' ids written for nothing.
    cells: Vec<OnceCell<Box<Chunk>>>,
    /// The (name, blob) pairs of the definitions, and the (term, blob) pairs of the terms of
    /// defined names, of the blobs added since loading, sorted (made when first asked for).
    added_index: OnceCell<AddedIndex>,
}

impl View<'_> {
    /// How many blobs' facts were loaded so far.
    pub fn loaded(&self) -> usize {
        self.cells
            .iter()
            .filter_map(OnceCell::get)
            .flat_map(|chunk| chunk.iter())
            .filter(|c| c.get().is_some())
            .count()
    }

    fn added_index(&self) -> &AddedIndex {
        self.added_index.get_or_init(|| {
            let (mut defs, mut terms) = (Vec::new(), Vec::new());
            for &b in self.store.added_facts.keys() {
                let Some(f) = self.store.added_facts(b) else {
                    continue;
                };
                defs.extend(f.defs.iter().map(|d| (d.name, b)));
                terms.extend(f.def_terms.iter().map(|&t| (t, b)));
            }
            defs.sort_unstable();
            defs.dedup();
            terms.sort_unstable();
            terms.dedup();
            AddedIndex { defs, terms }
        })
    }
}

/// The inverted indexes of the blobs added since loading: (name, blob) of their definitions
/// and (term, blob) of the terms of the names they define, sorted.
struct AddedIndex {
    defs: Vec<(u32, u32)>,
    terms: Vec<(u32, u32)>,
}

/// The blobs of the pairs (`key`, blob) in sorted `pairs`.
fn paired(pairs: &[(u32, u32)], key: u32) -> impl Iterator<Item = u32> + '_ {
    let from = pairs.partition_point(|(k, _)| *k < key);
    pairs[from..]
        .iter()
        .take_while(move |(k, _)| *k == key)
        .map(|(_, b)| *b)
}

impl BlobFacts for View<'_> {
    fn count(&self) -> usize {
        self.store.ids.len()
    }

    fn facts(&self, b: u32) -> Option<&Facts> {
        if b as usize >= self.store.ids.len() {
            return None;
        }
        let chunk = self
            .cells
            .get(b as usize / CHUNK)?
            .get_or_init(|| Box::new(std::array::from_fn(|_| OnceCell::new())));
        let cell = chunk.get(b as usize % CHUNK)?;
        let f = cell.get_or_init(|| {
            let mut f = self.store.stored_facts(b).unwrap_or_default();
            f.terms = self.hits.get(&b).cloned().unwrap_or_default();
            Box::new(f)
        });
        Some(f)
    }

    fn len(&self, b: u32) -> Option<u32> {
        self.store.sizes.get(b as usize).map(|s| s.len)
    }

    fn tf(&self, b: u32, term: u32) -> u16 {
        let Some(counts) = self.hits.get(&b) else {
            return 0;
        };
        counts
            .binary_search_by_key(&term, |(t, _)| *t)
            .map_or(0, |i| counts[i].1)
    }

    fn with_terms(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .hits
            .keys()
            .copied()
            .filter(|&b| (b as usize) < self.store.ids.len())
            .collect();
        out.sort_unstable();
        out
    }

    fn defining(&self, name: u32) -> Vec<u32> {
        let mut out = self
            .store
            .mapped()
            .map(|s| s.defining(name))
            .unwrap_or_default();
        out.extend(paired(&self.added_index().defs, name));
        out.sort_unstable();
        out.dedup();
        out
    }

    fn with_def_term(&self, term: u32) -> Vec<u32> {
        let mut out = self
            .store
            .mapped()
            .map(|s| s.with_def_term(term))
            .unwrap_or_default();
        out.extend(paired(&self.added_index().terms, term));
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Where the cache of the project at `root` lives under the user's cache directory `base`
/// (`dirs::cache_dir()`). `None` when that would be inside the project (pai started in the
/// home directory, say): the repository could then write what the map believes.
pub fn location(base: &Path, root: &Path) -> Option<PathBuf> {
    let inside = |p: &Path| {
        let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let r = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        p.starts_with(&r)
    };
    if inside(base) {
        return None;
    }
    Some(base.join("pai").join("map").join(file_name(root)))
}

/// The cache file's name for the project at `root`: a hash of the root's path.
pub fn file_name(root: &Path) -> String {
    let key = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hex: String = key[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.bin")
}

/// Load the cache for `root` from `file` (and its symbols and words beside it); anything
/// unusable gives an empty store.
pub fn load(file: &Path, root: &Path) -> Store {
    join_saves(&mut lock_saving(), Some(file));
    let Some((stored, ids)) = read_cache(file) else {
        return Store::default();
    };
    if stored.format != FORMAT || stored.root != root.to_string_lossy() {
        return Store::default();
    }
    let blobs = ids.len();
    let sound =
        stored.sizes.len() == blobs && stored.files.values().all(|(_, b)| (*b as usize) < blobs);
    if !sound {
        return Store::default();
    }
    // The symbols and words of every blob are part of what the cache knows: without them, it
    // is cold.
    let Some(syms) = SymFile::open(&symfile::path_of(file), &stored.symbols, blobs) else {
        return Store::default();
    };
    let words = Words::open(&words::path_of(file), &stored.words, blobs);
    if words.is_none() && blobs > 0 {
        return Store::default();
    }
    let syms = Arc::new(syms);
    Store {
        names: Names::on(syms.clone()),
        files: stored.files,
        recent: stored.recent,
        saved: blobs,
        ids,
        sizes: stored.sizes,
        added_facts: HashMap::new(),
        syms: Some(syms),
        syms_id: stored.symbols,
        added: Added::new(),
        words,
        words_id: stored.words,
        renumbered: None,
        by_id: HashMap::new(),
        slots: OnceLock::new(),
        next: AtomicUsize::new(0),
        misses: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
    }
}

/// The cache file at `file`: its record, then every blob's id read straight into the table
/// it is kept in (no copy of the file's bytes held beside it: 2 MB at 100,000 blobs). The
/// file is the record's length (`u64`), the record (postcard), and the ids, 20 bytes each.
fn read_cache(file: &Path) -> Option<(Stored, Vec<BlobId>)> {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::File::open(file).ok()?;
    let size = f.metadata().ok()?.len();
    let mut len = [0u8; 8];
    f.read_exact_at(&mut len, 0).ok()?;
    let len = u64::from_le_bytes(len);
    if len.checked_add(8)? > size {
        return None;
    }
    let mut record = vec![0u8; usize::try_from(len).ok()?];
    f.read_exact_at(&mut record, 8).ok()?;
    let stored: Stored = postcard::from_bytes(&record).ok()?;
    drop(record);
    let blobs = stored.blobs as usize;
    if 8 + len + (blobs as u64).checked_mul(20)? != size {
        return None;
    }
    let mut ids = vec![[0u8; 20]; blobs];
    f.read_exact_at(ids.as_flattened_mut(), 8 + len).ok()?;
    Some((stored, ids))
}

/// Write the cache atomically (temporary files renamed over the old ones), private to the
/// user: the words index and the symbols first when blobs were added or renumbered (the old
/// ones are read as the new ones are written), then the cache naming them. Failing to write a
/// cache is not an error worth reporting: the next map rebuilds.
pub fn save(file: &Path, root: &Path, store: &mut Store) -> std::io::Result<()> {
    let unchanged = store.renumbered.is_none() && store.ids.len() == store.saved;
    let renumbered = store.renumbered.take();
    if !unchanged || store.words.is_none() {
        let renumber = |b: u32| match &renumbered {
            Some(map) => map.get(b as usize).copied().filter(|&n| n != NONE),
            None => Some(b),
        };
        store.words_id = words::write(
            &words::path_of(file),
            store.ids.len(),
            store.words.as_ref(),
            &renumber,
            &mut store.added,
        )?;
    }
    if !unchanged || store.syms.is_none() {
        store.syms_id = write_symbols(&symfile::path_of(file), store, renumbered.as_deref())?;
    }
    let mut files: Vec<(&str, Stamp, u32)> = store
        .files
        .iter()
        .map(|(p, (s, b))| (p.as_str(), *s, *b))
        .collect();
    files.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let root = root.to_string_lossy();
    let stored = StoredRef {
        format: FORMAT,
        root: &root,
        files,
        blobs: u32::try_from(store.ids.len()).map_err(std::io::Error::other)?,
        sizes: &store.sizes,
        recent: &store.recent,
        words: store.words_id,
        symbols: store.syms_id,
    };
    let bytes = postcard::to_stdvec(&stored).map_err(std::io::Error::other)?;
    let mut out = Vec::with_capacity(8 + bytes.len() + store.ids.len() * 20);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&bytes);
    out.extend_from_slice(store.ids.as_flattened());
    crate::private_file::write_atomic(file, &out)
}

/// Write the symbols of every blob of `store` to `path`: the mapped file's (numbered as
/// `renumbered` says, when [`Store::compact`] renumbered them; their names then renumbered
/// too, keeping only those still used) and those added since. Returns the file's id.
fn write_symbols(
    path: &Path,
    store: &Store,
    renumbered: Option<&[u32]>,
) -> std::io::Result<WordsId> {
    // The stored blob each one was (`NONE`: added since loading).
    let stored_of: Vec<u32> = match renumbered {
        Some(map) => {
            let mut of = vec![NONE; store.ids.len()];
            for (old, &new) in map.iter().enumerate() {
                if let (Some(slot), Ok(old)) = (of.get_mut(new as usize), u32::try_from(old)) {
                    *slot = old;
                }
            }
            of
        }
        None => (0..u32::try_from(store.saved).unwrap_or(NONE)).collect(),
    };
    // Every stored name is read: the names read whole once, not range by range.
    let syms = store.syms.as_deref();
    let read = store.names.in_memory();
    let all = read.as_ref().unwrap_or(&store.names);
    let facts_of = |b: u32| -> Option<Facts> {
        match stored_of.get(b as usize) {
            Some(&old) if old != NONE => decode(syms?, old),
            _ => store.added_facts(b),
        }
    };
    let blobs = store.ids.len();
    // Without a symbols file loaded (a cold map), every name was met by this map: there are
    // none from dropped blobs to leave out, and copying them all to renumber them would double
    // what the names take at the end of the map.
    if renumbered.is_none() || syms.is_none() {
        let name = |id: u32| all.get(id);
        let symbols = |b: u32| entry(facts_of(b));
        return symfile::write(
            path,
            &symfile::Contents {
                blobs,
                name: &name,
                names: all.len(),
                sorted: all.sorted(),
                facts: &symbols,
            },
        );
    }
    // Only the names the kept blobs use, renumbered in the order first met.
    let mut names = Names::default();
    let mut map = vec![NONE; all.len()];
    let mut keep = |id: u32| {
        if let Some(slot) = map.get_mut(id as usize)
            && *slot == NONE
        {
            *slot = names.intern(&all.get(id));
        }
    };
    for b in 0..u32::try_from(blobs).unwrap_or(NONE) {
        if let Some(f) = facts_of(b) {
            each_name(&f, &mut keep);
        }
    }
    let renamed = |b: u32| {
        let mut f = facts_of(b)?;
        let re = |id: &mut u32| *id = map.get(*id as usize).copied().unwrap_or(NONE);
        f.defs.iter_mut().for_each(|d| {
            re(&mut d.name);
            re(&mut d.signature);
        });
        f.refs.iter_mut().for_each(|(id, _)| re(id));
        f.def_terms.iter_mut().for_each(re);
        f.def_terms.sort_unstable();
        f.refs.sort_unstable();
        Some(f)
    };
    let name = |id: u32| names.get(id);
    let symbols = |b: u32| entry(renamed(b));
    symfile::write(
        path,
        &symfile::Contents {
            blobs,
            name: &name,
            names: names.len(),
            sorted: names.sorted(),
            facts: &symbols,
        },
    )
}

/// Every name id facts `f` hold.
fn each_name(f: &Facts, mut name: impl FnMut(u32)) {
    for d in &f.defs {
        name(d.name);
        name(d.signature);
    }
    f.refs.iter().for_each(|(id, _)| name(*id));
    f.def_terms.iter().copied().for_each(name);
}

/// The caches being written, each with its file.
type Saving = Vec<(PathBuf, std::thread::JoinHandle<()>)>;

/// The caches being written after the last maps. Joined under the lock: whoever waits for a
/// cache to be written finds it written, even when another thread took the handle first.
static SAVING: std::sync::Mutex<Saving> = std::sync::Mutex::new(Vec::new());

/// Keep only the blobs in `live` (and the stamped files') and write the cache on a thread of
/// its own — unless nothing but the blobs' order asked for it (`needed` false) and they
/// stay as numbered: the first call of a turn does not wait for it (it overlaps the model's
/// answer).
/// [`wait_for_save`] joins it; [`load`] waits for the same file's first, so a later map in the
/// same process reads what this one learned. A cache that cannot be written, or a thread that
/// cannot be started, only makes the next map cold.
pub fn save_in_background(
    file: PathBuf,
    root: PathBuf,
    mut store: Store,
    live: Vec<u32>,
    needed: bool,
) {
    let mut saving = lock_saving();
    join_saves(&mut saving, Some(&file));
    let target = file.clone();
    let spawned = std::thread::Builder::new()
        .name("pai-map-save".into())
        .spawn(move || {
            if store.compact(&live) || needed {
                let _ = save(&target, &root, &mut store);
            }
        });
    if let Ok(handle) = spawned {
        saving.push((file, handle));
    }
}

/// Wait until every cache the last maps are writing is on disk (before the process exits).
pub fn wait_for_save() {
    join_saves(&mut lock_saving(), None);
}

fn lock_saving() -> std::sync::MutexGuard<'static, Saving> {
    SAVING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Join the saves of `file` (all, for `None`).
fn join_saves(saving: &mut Saving, file: Option<&Path>) {
    let (done, rest): (Saving, Saving) = std::mem::take(saving)
        .into_iter()
        .partition(|(f, _)| file.is_none_or(|file| f == file));
    *saving = rest;
    for (_, handle) in done {
        let _ = handle.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::facts::DefRec;
    use crate::map::symbols::DefKind;

    /// A store of three blobs: one defining `parse_config` with the words "parse" and
    /// "config", one of prose, one of other prose of the same size.
    fn store() -> Store {
        let mut s = Store::default();
        let name = s.names.intern("parse_config");
        let sig = s.names.intern("def parse_config():");
        let mut def_terms = vec![s.names.intern("pars"), s.names.intern("config")];
        def_terms.sort_unstable();
        let code = Facts {
            def_terms,
            defs: vec![DefRec {
                name,
                kind: DefKind::Function,
                line: 1,
                end: 2,
                signature: sig,
            }],
            len: 3,
            lines: 2,
            parsed: true,
            ..Facts::default()
        };
        let prose = Facts {
            len: 4,
            lines: 1,
            ..Facts::default()
        };
        let words = |w: &[(&str, u16)]| w.iter().map(|(w, n)| (w.to_string(), *n)).collect();
        s.add_parsed([1; 20], code, words(&[("pars", 1), ("config", 2)]));
        s.add_parsed(
            [2; 20],
            prose.clone(),
            words(&[("ledger", 3), ("config", 1)]),
        );
        s.add_parsed([3; 20], prose, words(&[("tax", 4)]));
        s
    }

    fn query(words: &[&str]) -> Query {
        Query {
            terms: words.iter().map(|w| w.to_string()).collect(),
            ..Query::default()
        }
    }

    #[test]
    fn a_saved_store_reads_back_only_the_requests_words() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        assert_eq!(s.ids.len(), 3);
        assert_eq!(s.blob_index(&[2; 20]), Some(1));
        let hits = s.words_of(&query(&["config", "nowhere"]));
        let view = s.view(hits);
        let config = s.names.lookup("config").unwrap();
        assert_eq!(view.facts(0).unwrap().terms, [(config, 2)]);
        assert_eq!(
            view.facts(0).unwrap().defs.len(),
            1,
            "the symbols come with the view"
        );
        assert_eq!(view.facts(1).unwrap().terms, [(config, 1)]);
        assert!(view.facts(2).unwrap().terms.is_empty());
        assert_eq!(
            (view.facts(2).unwrap().len, view.facts(2).unwrap().lines),
            (4, 1)
        );
        assert_eq!(view.with_terms(), [0, 1]);
        assert!(
            s.names.lookup("ledger").is_none(),
            "a word not asked for is not loaded"
        );
        assert!(s.names.lookup("nowhere").is_none());
    }

    #[test]
    fn a_view_loads_only_the_facts_asked_for_and_finds_definers_by_index() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        let hits = s.words_of(&query(&["absent"]));
        let view = s.view(hits);
        let name = s.names.lookup("parse_config").unwrap();
        let term = s.names.lookup("pars").unwrap();
        assert_eq!(view.defining(name), [0]);
        assert_eq!(view.with_def_term(term), [0]);
        assert_eq!(view.len(1), Some(4));
        assert_eq!(view.loaded(), 0, "indexes and sizes load no blob's facts");
        assert!(view.with_terms().is_empty());
        assert_eq!(view.facts(0).unwrap().defs[0].name, name);
        assert_eq!(view.loaded(), 1);
        assert_eq!(
            s.names.get(view.facts(0).unwrap().defs[0].signature),
            "def parse_config():"
        );
    }

    #[test]
    fn blobs_added_after_loading_are_found_beside_the_mapped_ones() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        let name = s.names.intern("parse_config");
        let sig = s.names.intern("def parse_config(path):");
        let again = Facts {
            defs: vec![DefRec {
                name,
                kind: DefKind::Function,
                line: 3,
                end: 4,
                signature: sig,
            }],
            len: 5,
            lines: 4,
            parsed: true,
            ..Facts::default()
        };
        let b = s.add_parsed([4; 20], again, vec![("config".to_string(), 3)]);
        assert_eq!(b, 3);
        let hits = s.words_of(&query(&["config"]));
        let view = s.view(hits);
        assert_eq!(view.defining(name), [0, 3]);
        assert_eq!(view.with_terms(), [0, 1, 3]);
        drop(view);
        save(&file, root, &mut s).unwrap();
        let mut s = load(&file, root);
        let name = s.names.lookup("parse_config").unwrap();
        let hits = s.words_of(&query(&["config"]));
        let view = s.view(hits);
        assert_eq!(
            view.defining(name),
            [0, 3],
            "both saved in the symbols file"
        );
        assert_eq!(
            s.names.get(view.facts(3).unwrap().defs[0].signature),
            "def parse_config(path):"
        );
    }

    #[test]
    fn a_cache_whose_words_or_symbols_file_is_missing_foreign_or_damaged_is_cold() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let other = dir.path().join("d.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        save(&other, root, &mut store()).unwrap();
        assert!(!load(&file, root).is_empty());
        for side in [words::path_of, symfile::path_of] {
            // Another cache's file, of the same shape: its id differs.
            std::fs::copy(side(&other), side(&file)).unwrap();
            assert!(load(&file, root).is_empty());
            save(&file, root, &mut store()).unwrap();
            let mut bytes = std::fs::read(side(&file)).unwrap();
            bytes.pop();
            std::fs::write(side(&file), &bytes).unwrap();
            assert!(load(&file, root).is_empty(), "cut short");
            std::fs::remove_file(side(&file)).unwrap();
            assert!(load(&file, root).is_empty(), "missing");
            save(&file, root, &mut store()).unwrap();
        }
    }

    #[test]
    fn blobs_are_renumbered_in_the_order_the_files_first_use_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        let mut s = store();
        // The files use the blobs backwards (as a cold map's parsing may have numbered them).
        assert!(s.compact(&[2, 1, 0]), "blobs were added: renumbered");
        save(&file, root, &mut s).unwrap();
        let mut s = load(&file, root);
        assert_eq!(s.ids, [[3; 20], [2; 20], [1; 20]]);
        let hits = s.words_of(&query(&["tax", "config"]));
        let view = s.view(hits);
        let (tax, config) = (
            s.names.lookup("tax").unwrap(),
            s.names.lookup("config").unwrap(),
        );
        assert_eq!(view.facts(0).unwrap().terms, [(tax, 4)]);
        assert_eq!(view.facts(1).unwrap().terms, [(config, 1)]);
        assert_eq!(view.facts(2).unwrap().terms, [(config, 2)]);
        assert_eq!((view.len(0), view.len(2)), (Some(4), Some(3)));
        let name = s.names.lookup("parse_config").unwrap();
        assert_eq!(view.defining(name), [2]);
        assert_eq!(
            s.names.get(view.facts(2).unwrap().defs[0].signature),
            "def parse_config():"
        );
        drop(view);
        // In the order they are numbered now, nothing is gained: the files stay as saved.
        assert!(!s.compact(&[0, 1, 2]));
        assert!(!s.compact(&[0, 1, 1, 2]));
    }

    #[test]
    fn lookups_in_the_blobs_order_need_no_table_and_others_still_find_their_blob() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let s = load(&file, root);
        for (b, id) in [(0, [1; 20]), (0, [1; 20]), (1, [2; 20]), (2, [3; 20])] {
            assert_eq!(s.blob_index(&id), Some(b));
        }
        assert!(s.slots.get().is_none(), "found where guessed");
        assert_eq!(s.blob_index(&[9; 20]), None);
        assert_eq!(s.blob_index(&[1; 20]), Some(0));
        assert_eq!(s.blob_index(&[3; 20]), Some(2));
        assert!(s.slots.get().is_some());
        assert!(!s.scattered(), "too few lookups to judge");
    }

    #[test]
    fn compaction_keeps_the_live_blobs_words_and_symbols_under_their_new_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        // Only the first and third blobs are live: the second goes, the third becomes 1.
        assert!(s.compact(&[0, 2]));
        save(&file, root, &mut s).unwrap();
        let mut s = load(&file, root);
        assert_eq!(s.ids, [[1; 20], [3; 20]]);
        let hits = s.words_of(&query(&["tax", "config"]));
        let view = s.view(hits);
        let tax = s.names.lookup("tax").unwrap();
        assert_eq!(view.facts(1).unwrap().terms, [(tax, 4)]);
        let name = s.names.lookup("parse_config").unwrap();
        assert_eq!(view.defining(name), [0]);
        assert_eq!(
            s.names.get(view.facts(0).unwrap().defs[0].signature),
            "def parse_config():"
        );
        assert!(
            s.names.lookup("ledger").is_none(),
            "the dropped blobs' words went"
        );
    }
}
