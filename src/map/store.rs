//! The map's cache: what it learned of each file version, kept in the user's cache directory
//! (`$XDG_CACHE_HOME/pai/map/`), one file per project, never inside the project — a
//! repository must not be able to plant what the map believes. A file that does not decode,
//! names another project, or holds an id out of range is ignored and rebuilt.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::facts::{Facts, Names};
use crate::workspace::Stamp;

/// Bumped whenever the stored shape or what the facts mean changes.
const FORMAT: u32 = 5;

/// A git blob id: the content's identity.
pub type BlobId = [u8; 20];

/// The files changed by recent commits, as of one HEAD.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Recent {
    /// The HEAD commit they were read at.
    pub head: String,
    /// Paths and how many of the recent commits changed each.
    pub counts: Vec<(String, u32)>,
}

/// The same shape as [`Stored`], borrowed, for writing without copying the store.
#[derive(serde::Serialize)]
struct StoredRef<'a> {
    format: u32,
    root: &'a str,
    names: &'a Names,
    files: Vec<(&'a str, Stamp, u32)>,
    blobs: &'a [(BlobId, Facts)],
    recent: &'a Option<Recent>,
}

#[derive(serde::Deserialize)]
struct Stored {
    format: u32,
    root: String,
    names: Names,
    #[serde(deserialize_with = "files_table")]
    files: HashMap<String, (Stamp, u32)>,
    blobs: Vec<(BlobId, Facts)>,
    recent: Option<Recent>,
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
    /// Interned names and terms.
    pub names: Names,
    /// Files known by their stat stamp rather than by git's index (untracked files, files
    /// whose text differs from the index, files without text): the stamp when read and the
    /// index of the blob. Tracked files the index describes are not in it.
    pub files: HashMap<String, (Stamp, u32)>,
    /// Blob facts: the first `saved` as loaded (or kept by [`Store::compact`]), the rest added
    /// since.
    pub blobs: Vec<(BlobId, Facts)>,
    /// Recent history.
    pub recent: Option<Recent>,
    /// How many of `blobs` the lookup table `slots` covers.
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

/// The lookup table of `blobs`, at most half full.
fn slot_table(blobs: &[(BlobId, Facts)]) -> Vec<u32> {
    let size = (blobs.len() * 2).next_power_of_two().max(16);
    let mask = size - 1;
    let mut slots = vec![0u32; size];
    for (i, (id, _)) in blobs.iter().enumerate() {
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
    /// The facts of a blob already known by its id.
    pub fn blob_index(&self, id: &BlobId) -> Option<u32> {
        let saved = self.blobs.get(..self.saved).unwrap_or_default();
        let slots = self.slots.get_or_init(|| slot_table(saved));
        if let Some(mask) = slots.len().checked_sub(1) {
            let mut slot = slot_of(id) & mask;
            while let Some(&n) = slots.get(slot).filter(|&&n| n != 0) {
                if saved.get(n as usize - 1).is_some_and(|(b, _)| b == id) {
                    return Some(n - 1);
                }
                slot = (slot + 1) & mask;
            }
        }
        self.by_id.get(id).copied()
    }

    /// Add a blob's facts; returns its index.
    pub fn add_blob(&mut self, id: BlobId, facts: Facts) -> u32 {
        if let Some(i) = self.blob_index(&id) {
            return i;
        }
        let i = u32::try_from(self.blobs.len()).unwrap_or(u32::MAX);
        self.blobs.push((id, facts));
        self.by_id.insert(id, i);
        i
    }

    /// Keep only the blobs in `live` and those the stamped files use, renumbering names, when
    /// many went, so the cache does not grow with every version of every file.
    pub fn compact(&mut self, live: &[u32]) {
        let mut used: Vec<u32> = live
            .iter()
            .copied()
            .chain(self.files.values().map(|(_, b)| *b))
            .filter(|&b| (b as usize) < self.blobs.len())
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.len() * 4 >= self.blobs.len() * 3 && self.names.len() < 4 * 1024 * 1024 {
            return;
        }
        let mut names = Names::default();
        let mut blobs = Vec::with_capacity(used.len());
        let mut renumber = HashMap::with_capacity(used.len());
        let old = std::mem::take(&mut self.blobs);
        let mut old: Vec<Option<(BlobId, Facts)>> = old.into_iter().map(Some).collect();
        for i in used {
            let Some((id, mut f)) = old.get_mut(i as usize).and_then(Option::take) else {
                continue;
            };
            let mut re = |id: &mut u32| *id = names.intern(self.names.get(*id));
            f.defs.iter_mut().for_each(|d| {
                re(&mut d.name);
                re(&mut d.signature);
            });
            f.refs.iter_mut().for_each(|(id, _)| re(id));
            f.terms.iter_mut().for_each(|(id, _)| re(id));
            f.def_terms.iter_mut().for_each(&mut re);
            f.def_terms.sort_unstable();
            f.refs.sort_unstable();
            f.terms.sort_unstable();
            renumber.insert(i, u32::try_from(blobs.len()).unwrap_or(u32::MAX));
            blobs.push((id, f));
        }
        self.files.retain(|_, (_, b)| match renumber.get(b) {
            Some(&n) => {
                *b = n;
                true
            }
            None => false,
        });
        self.names = names;
        self.saved = blobs.len();
        self.blobs = blobs;
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

/// Load the cache for `root` from `file`; anything unusable gives an empty store.
pub fn load(file: &Path, root: &Path) -> Store {
    join_saves(&mut lock_saving(), Some(file));
    let Ok(bytes) = std::fs::read(file) else {
        return Store::default();
    };
    let Ok(stored) = postcard::from_bytes::<Stored>(&bytes) else {
        return Store::default();
    };
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
    let blobs = stored.blobs.len();
    let sound = stored.blobs.iter().all(|(_, f)| f.ids_below(names))
        && stored.files.values().all(|(_, b)| (*b as usize) < blobs);
    if !sound {
        return Store::default();
    }
    Store {
        names: stored.names,
        files: stored.files,
        saved: stored.blobs.len(),
        blobs: stored.blobs,
        recent: stored.recent,
        by_id: HashMap::new(),
        slots: std::sync::OnceLock::new(),
    }
}

/// Write the cache atomically (a temporary file renamed over the old one), private to the
/// user. Failing to write a cache is not an error worth reporting: the next map rebuilds.
pub fn save(file: &Path, root: &Path, store: &mut Store) -> std::io::Result<()> {
    store.names.reindex();
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
        names: &store.names,
        files,
        blobs: &store.blobs,
        recent: &store.recent,
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
