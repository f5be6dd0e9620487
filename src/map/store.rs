//! The map's cache: what it learned of each file version, kept in the user's cache directory
//! (`$XDG_CACHE_HOME/pai/map/`), one file per project, never inside the project — a
//! repository must not be able to plant what the map believes. A file that does not decode,
//! names another project, or holds an id out of range is ignored and rebuilt.
//!
//! The facts are kept by column: every blob's id and size, and the symbols (definitions,
//! references) only of the blobs that have any. The words of every blob are not in this file
//! at all but in the words index beside it (`words.rs`), read word by word for the request's
//! words only: a warm map loads what its ranking can use, not the project's text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::facts::{Facts, Names, WordCounts};
use super::files::MapFiles;
use super::terms::Query;
use super::words::{self, Added, Words, WordsId};
use crate::workspace::Stamp;

/// Bumped whenever the stored shape or what the facts mean changes.
const FORMAT: u32 = 6;

/// A git blob id: the content's identity.
pub type BlobId = [u8; 20];

/// No entry, in the per-blob table of symbol entries and in renumberings.
const NONE: u32 = u32::MAX;

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

/// The same shape as [`Stored`], borrowed, for writing without copying the store.
#[derive(serde::Serialize)]
struct StoredRef<'a> {
    format: u32,
    root: &'a str,
    names: &'a Names,
    files: Vec<(&'a str, Stamp, u32)>,
    ids: &'a [BlobId],
    sizes: &'a [Size],
    symbols: Vec<(u32, &'a Facts)>,
    recent: &'a Option<Recent>,
    words: WordsId,
}

#[derive(serde::Deserialize)]
struct Stored {
    format: u32,
    root: String,
    names: Names,
    #[serde(deserialize_with = "files_table")]
    files: HashMap<String, (Stamp, u32)>,
    ids: Vec<BlobId>,
    sizes: Vec<Size>,
    symbols: Vec<(u32, Facts)>,
    recent: Option<Recent>,
    words: WordsId,
}

/// The stored list of files, straight into the table a map looks them up in (a list first
/// would hold every path twice while the table is built: 8 MB more at 100,000 files).
fn files_table<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<HashMap<String, (Stamp, u32)>, D::Error> {
    struct Table;
    impl<'de> serde::de::Visitor<'de> for Table {
        type Value = HashMap<String, (Stamp, u32)>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of (path, stamp, blob)")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            // The hint comes from the file: bounded, so a forged length allocates nothing huge.
            let mut table = HashMap::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
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
    /// Interned names: identifiers, signatures and the terms of defined names (the words of
    /// the files' text are in the words index, and here only once a request asked for them).
    pub names: Names,
    /// Files known by their stat stamp rather than by git's index (untracked files, files
    /// whose text differs from the index, files without text): the stamp when read and the
    /// index of the blob. Tracked files the index describes are not in it.
    pub files: HashMap<String, (Stamp, u32)>,
    /// Recent history.
    pub recent: Option<Recent>,
    /// Every blob's id: the first `saved` as loaded (or kept by [`Store::compact`]), the rest
    /// added since.
    ids: Vec<BlobId>,
    /// Every blob's size.
    sizes: Vec<Size>,
    /// Per blob, its entry in `facts` (`NONE`: it has no symbols).
    symbols: Vec<u32>,
    /// The facts of the blobs with symbols (the first `entries`), then, while a map ranks,
    /// those [`Store::view`] made for the others.
    facts: Vec<(BlobId, Facts)>,
    /// How many of `facts` belong to blobs with symbols.
    entries: usize,
    /// The words of the blobs added since loading.
    added: Added,
    /// The words of the first `saved` blobs, on disk.
    words: Option<Words>,
    /// The id of that words file.
    words_id: WordsId,
    /// How [`Store::compact`] renumbered the first `saved` blobs (old index to new, `NONE`:
    /// dropped), for writing their words.
    renumbered: Option<Vec<u32>>,
    /// How many of `ids` the lookup table `slots` covers.
    saved: usize,
    /// The blobs after the first `saved`, by id.
    by_id: HashMap<BlobId, u32>,
    /// An open-addressing table over the first `saved` blobs (slot -> index + 1; 0 empty),
    /// made at the first lookup: a map looks up every tracked file's blob, and a binary search
    /// of 100,000 ids costs seventeen comparisons in memory read at random.
    slots: std::sync::OnceLock<Vec<u32>>,
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
        self.by_id.get(id).copied()
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
        self.end_view();
        let i = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.ids.push(id);
        self.sizes.push(Size::of(&facts));
        if facts.has_symbols() {
            facts.terms.clear();
            self.symbols
                .push(u32::try_from(self.facts.len()).unwrap_or(NONE));
            self.facts.push((id, facts));
            self.entries = self.facts.len();
        } else {
            self.symbols.push(NONE);
        }
        for (word, n) in words {
            self.added.entry(word).or_default().push((i, n));
        }
        self.by_id.insert(id, i);
        i
    }

    /// The facts [`Store::view`] indexes.
    pub fn facts(&self) -> &[(BlobId, Facts)] {
        &self.facts
    }

    /// Drop what the last view added.
    fn end_view(&mut self) {
        self.facts.truncate(self.entries);
        for (_, f) in &mut self.facts {
            f.terms.clear();
        }
    }

    /// The files of `files` as a ranking for `query` sees them, numbered into
    /// [`Store::facts`]: each blob with symbols as itself, with the counts of the request's
    /// words; each other blob holding one of those words as an entry of its own; and the rest,
    /// which nothing but their size tells apart, sharing one entry per size. Only the
    /// request's words are read from the words index.
    pub fn view<'a>(&mut self, files: &MapFiles<'a>, query: &Query) -> MapFiles<'a> {
        self.end_view();
        let mut wanted: Vec<&str> = query
            .terms
            .iter()
            .chain(&query.idents)
            .map(String::as_str)
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut hits: HashMap<u32, Vec<(u32, u16)>> = HashMap::new();
        for w in wanted {
            let mut list = self
                .words
                .as_ref()
                .map(|x| x.postings(w))
                .unwrap_or_default();
            if let Some(more) = self.added.get(w) {
                list.extend(more);
            }
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
        let mut out = MapFiles::new(files.paths());
        let mut own: HashMap<u32, u32> = HashMap::new();
        let mut shared: HashMap<Size, u32> = HashMap::new();
        for (i, b) in files.blobs().enumerate() {
            let Some(b) = b else {
                continue;
            };
            let (Some(&size), Some(&entry)) =
                (self.sizes.get(b as usize), self.symbols.get(b as usize))
            else {
                continue;
            };
            let entry = if entry != NONE {
                if let (Some(counts), Some((_, f))) =
                    (hits.remove(&b), self.facts.get_mut(entry as usize))
                {
                    f.terms = counts;
                }
                entry
            } else if let Some(&e) = own.get(&b) {
                e
            } else if let Some(counts) = hits.remove(&b) {
                let e = u32::try_from(self.facts.len()).unwrap_or(NONE);
                let mut f = size.facts();
                f.terms = counts;
                self.facts.push((self.ids[b as usize], f));
                own.insert(b, e);
                e
            } else {
                *shared.entry(size).or_insert_with(|| {
                    self.facts.push(([0; 20], size.facts()));
                    u32::try_from(self.facts.len() - 1).unwrap_or(NONE)
                })
            };
            out.set_blob(i, entry);
        }
        out
    }

    /// Keep only the blobs in `live` and those the stamped files use, renumbering blobs (in
    /// their order) and names, when many went, so the cache does not grow with every version
    /// of every file.
    pub fn compact(&mut self, live: &[u32]) {
        self.end_view();
        let mut used: Vec<u32> = live
            .iter()
            .copied()
            .chain(self.files.values().map(|(_, b)| *b))
            .filter(|&b| (b as usize) < self.ids.len())
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.len() * 4 >= self.ids.len() * 3 && self.names.len() < 4 * 1024 * 1024 {
            return;
        }
        let mut names = Names::default();
        let mut renumber = vec![NONE; self.ids.len()];
        let (mut ids, mut sizes, mut symbols) = (Vec::new(), Vec::new(), Vec::new());
        let mut facts = Vec::new();
        let mut old: Vec<Option<(BlobId, Facts)>> = std::mem::take(&mut self.facts)
            .into_iter()
            .map(Some)
            .collect();
        for b in used {
            let n = u32::try_from(ids.len()).unwrap_or(NONE);
            renumber[b as usize] = n;
            ids.push(self.ids[b as usize]);
            sizes.push(self.sizes[b as usize]);
            let entry = self.symbols[b as usize];
            let Some((id, mut f)) = old.get_mut(entry as usize).and_then(Option::take) else {
                symbols.push(NONE);
                continue;
            };
            let mut re = |id: &mut u32| *id = names.intern(self.names.get(*id));
            f.defs.iter_mut().for_each(|d| {
                re(&mut d.name);
                re(&mut d.signature);
            });
            f.refs.iter_mut().for_each(|(id, _)| re(id));
            f.def_terms.iter_mut().for_each(&mut re);
            f.def_terms.sort_unstable();
            f.refs.sort_unstable();
            symbols.push(u32::try_from(facts.len()).unwrap_or(NONE));
            facts.push((id, f));
        }
        self.files
            .retain(|_, (_, b)| match renumber.get(*b as usize) {
                Some(&n) if n != NONE => {
                    *b = n;
                    true
                }
                _ => false,
            });
        for list in self.added.values_mut() {
            list.retain_mut(|(b, _)| match renumber.get(*b as usize) {
                Some(&n) if n != NONE => {
                    *b = n;
                    true
                }
                _ => false,
            });
        }
        self.added.retain(|_, list| !list.is_empty());
        renumber.truncate(self.saved);
        self.renumbered = Some(renumber);
        self.names = names;
        self.ids = ids;
        self.sizes = sizes;
        self.symbols = symbols;
        self.entries = facts.len();
        self.facts = facts;
        self.by_id.clear();
        self.slots = std::sync::OnceLock::new();
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

/// Load the cache for `root` from `file` (and its words index beside it); anything unusable
/// gives an empty store.
pub fn load(file: &Path, root: &Path) -> Store {
    join_saves(&mut lock_saving(), Some(file));
    let Ok(bytes) = std::fs::read(file) else {
        return Store::default();
    };
    let Ok(stored) = postcard::from_bytes::<Stored>(&bytes) else {
        return Store::default();
    };
    drop(bytes);
    if stored.format != FORMAT || stored.root != root.to_string_lossy() {
        return Store::default();
    }
    let mut stored = stored;
    if !stored.names.is_whole() {
        return Store::default();
    }
    if !stored.names.index_is_sound() {
        stored.names.reindex();
    }
    let names = stored.names.len();
    let blobs = stored.ids.len();
    let sound = stored.sizes.len() == blobs
        && stored.symbols.windows(2).all(|w| w[0].0 < w[1].0)
        && stored
            .symbols
            .iter()
            .all(|(b, f)| (*b as usize) < blobs && f.ids_below(names))
        && stored.files.values().all(|(_, b)| (*b as usize) < blobs);
    if !sound {
        return Store::default();
    }
    // The words of every blob are part of what the cache knows: without them, it is cold.
    let words = Words::open(&words::path_of(file), &stored.words, blobs);
    if words.is_none() && blobs > 0 {
        return Store::default();
    }
    let mut symbols = vec![NONE; blobs];
    let mut facts = Vec::with_capacity(stored.symbols.len());
    for (b, f) in stored.symbols {
        symbols[b as usize] = u32::try_from(facts.len()).unwrap_or(NONE);
        facts.push((stored.ids[b as usize], f));
    }
    Store {
        names: stored.names,
        files: stored.files,
        recent: stored.recent,
        saved: blobs,
        ids: stored.ids,
        sizes: stored.sizes,
        symbols,
        entries: facts.len(),
        facts,
        added: Added::new(),
        words,
        words_id: stored.words,
        renumbered: None,
        by_id: HashMap::new(),
        slots: std::sync::OnceLock::new(),
    }
}

/// Write the cache atomically (temporary files renamed over the old ones), private to the
/// user: the words index first when blobs were added or renumbered (the old one is read as
/// the new one is written, word by word), then the cache naming it. Failing to write a cache
/// is not an error worth reporting: the next map rebuilds.
pub fn save(file: &Path, root: &Path, store: &mut Store) -> std::io::Result<()> {
    store.end_view();
    let unchanged = store.renumbered.is_none() && store.ids.len() == store.saved;
    if !unchanged || store.words.is_none() {
        let renumbered = store.renumbered.take();
        let renumber = |b: u32| match &renumbered {
            Some(map) => map.get(b as usize).copied().filter(|&n| n != NONE),
            None => Some(b),
        };
        store.words_id = words::write(
            &words::path_of(file),
            store.ids.len(),
            store.words.as_ref(),
            &renumber,
            &store.added,
        )?;
    }
    store.names.reindex();
    let mut files: Vec<(&str, Stamp, u32)> = store
        .files
        .iter()
        .map(|(p, (s, b))| (p.as_str(), *s, *b))
        .collect();
    files.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let root = root.to_string_lossy();
    let symbols = store
        .symbols
        .iter()
        .enumerate()
        .filter_map(|(b, &e)| Some((u32::try_from(b).ok()?, &store.facts.get(e as usize)?.1)))
        .collect();
    let stored = StoredRef {
        format: FORMAT,
        root: &root,
        names: &store.names,
        files,
        ids: &store.ids,
        sizes: &store.sizes,
        symbols,
        recent: &store.recent,
        words: store.words_id,
    };
    let bytes = postcard::to_stdvec(&stored).map_err(std::io::Error::other)?;
    crate::private_file::write_atomic(file, &bytes)
}

/// The caches being written, each with its file.
type Saving = Vec<(PathBuf, std::thread::JoinHandle<()>)>;

/// The caches being written after the last maps. Joined under the lock: whoever waits for a
/// cache to be written finds it written, even when another thread took the handle first.
static SAVING: std::sync::Mutex<Saving> = std::sync::Mutex::new(Vec::new());

/// Keep only the blobs in `live` (and the stamped files') and write the cache on a thread of
/// its own: the first call of a turn does not wait for it (it overlaps the model's answer).
/// [`wait_for_save`] joins it; [`load`] waits for the same file's first, so a later map in the
/// same process reads what this one learned. A cache that cannot be written, or a thread that
/// cannot be started, only makes the next map cold.
pub fn save_in_background(file: PathBuf, root: PathBuf, mut store: Store, live: Vec<u32>) {
    let mut saving = lock_saving();
    join_saves(&mut saving, Some(&file));
    let target = file.clone();
    let spawned = std::thread::Builder::new()
        .name("pai-map-save".into())
        .spawn(move || {
            store.compact(&live);
            let _ = save(&target, &root, &mut store);
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
        let code = Facts {
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
        let paths = vec!["a.py", "b.md", "c.md"];
        let mut files = MapFiles::new(&paths);
        for i in 0..3 {
            files.set_blob(i, i as u32);
        }
        let view = s.view(&files, &query(&["config", "nowhere"]));
        let config = s.names.lookup("config").unwrap();
        let facts = |i: usize| &s.facts()[view.blob(i).unwrap() as usize].1;
        assert_eq!(facts(0).terms, [(config, 2)]);
        assert_eq!(facts(0).defs.len(), 1, "the symbols come with the view");
        assert_eq!(facts(1).terms, [(config, 1)]);
        assert!(facts(2).terms.is_empty());
        assert_eq!((facts(2).len, facts(2).lines), (4, 1));
        assert!(
            s.names.lookup("ledger").is_none(),
            "a word not asked for is not loaded"
        );
        assert!(s.names.lookup("nowhere").is_none());
    }

    #[test]
    fn blobs_of_one_size_without_the_requests_words_share_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        let paths = vec!["b.md", "c.md"];
        let mut files = MapFiles::new(&paths);
        files.set_blob(0, 1);
        files.set_blob(1, 2);
        let view = s.view(&files, &query(&["absent"]));
        assert_eq!(view.blob(0), view.blob(1));
        let view = s.view(&files, &query(&["ledger"]));
        assert_ne!(
            view.blob(0),
            view.blob(1),
            "the one holding the word stands apart"
        );
    }

    #[test]
    fn a_cache_whose_words_file_is_missing_foreign_or_damaged_is_cold() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let other = dir.path().join("d.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        save(&other, root, &mut store()).unwrap();
        assert!(!load(&file, root).is_empty());
        // Another cache's words file, of the same shape: its id differs.
        std::fs::copy(words::path_of(&other), words::path_of(&file)).unwrap();
        assert!(load(&file, root).is_empty());
        save(&file, root, &mut store()).unwrap();
        let mut bytes = std::fs::read(words::path_of(&file)).unwrap();
        bytes.pop();
        std::fs::write(words::path_of(&file), &bytes).unwrap();
        assert!(load(&file, root).is_empty(), "cut short");
        std::fs::remove_file(words::path_of(&file)).unwrap();
        assert!(load(&file, root).is_empty(), "missing");
    }

    #[test]
    fn compaction_keeps_the_live_blobs_words_under_their_new_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.bin");
        let root = Path::new("/project");
        save(&file, root, &mut store()).unwrap();
        let mut s = load(&file, root);
        // Only the third blob is live: the first two go, and it becomes blob 0.
        s.compact(&[2]);
        save(&file, root, &mut s).unwrap();
        let mut s = load(&file, root);
        assert_eq!(s.ids, [[3; 20]]);
        let paths = vec!["c.md"];
        let mut files = MapFiles::new(&paths);
        files.set_blob(0, 0);
        let view = s.view(&files, &query(&["tax", "config"]));
        let tax = s.names.lookup("tax").unwrap();
        assert_eq!(
            s.facts()[view.blob(0).unwrap() as usize].1.terms,
            [(tax, 4)]
        );
        assert!(
            s.names.lookup("config").is_none(),
            "the dropped blobs' words went"
        );
    }
}
