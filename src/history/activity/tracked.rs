//! The blob git's index records for each tracked file, looked up by path, for the repository
//! map: a tracked file's version is its index blob, so the map knows what it holds without
//! a `stat` of every file (at 100,000 files those stats alone cost five times `git ls-files`).
//! Only what a lookup needs is kept, copied out of the index in one pass that hands the
//! index's pages back as it goes: the regular files' paths, one after the other, and their
//! blob ids. The index itself carries every entry's stat data and every link's path (half the
//! entries of a theme of icons are links), three times as much to hold.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::history::git::repo::{self, Found};
use crate::history::index::{self, IndexFile};

/// git's modes for regular files: the only entries a file's text can be looked up for.
const REGULAR: [u32; 2] = [0o100_644, 0o100_755];

/// Lookups that may miss the next entry before the hash table is built: a binary search
/// costs about seventeen path comparisons at 100,000 files, the table a pass over every path
/// (a fifth of a warm map's CPU when the files come in the index's order and it is never
/// used).
const MISSES_BEFORE_TABLE: usize = 512;

/// Entries copied between two hand-backs of the index's pages.
const RELEASE_EVERY: usize = 8192;

/// The project's tracked regular files and their blobs, for looking them up.
#[derive(Debug)]
pub struct TrackedBlobs {
    /// The stage-0 regular files' paths in the index's order (sorted), one after the other.
    paths: Vec<u8>,
    /// Where each path ends in `paths`.
    ends: Vec<u32>,
    /// Each one's blob id.
    blobs: Vec<[u8; 20]>,
    /// An open-addressing table over the files: slot -> file number + 1 (0 is empty), built
    /// once lookups have missed the next file [`MISSES_BEFORE_TABLE`] times. A lookup then
    /// hashes the path once and compares one or two paths.
    slots: OnceLock<Vec<u32>>,
    /// Lookups that missed the next file so far.
    misses: AtomicUsize,
    /// The file after the last one found: the map asks folder by folder, file names in
    /// order, so the next file is most often the next one here.
    next: AtomicUsize,
    /// The index file these were read from, and its trailing checksum then (`None`: an index
    /// written without one, whose version cannot be told cheaply).
    source: Option<(PathBuf, [u8; 20])>,
}

/// A hash of a path's bytes, eight at a time, finished with splitmix64's mixer so that the
/// low bits the table uses depend on every byte (paths of one folder differ in a few).
fn hash(path: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ path.len() as u64;
    for chunk in path.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

impl TrackedBlobs {
    /// The index of the repository at `root` (`None` outside git, in pai's private repository,
    /// or when the index cannot be read: the map then reads files by their stat data).
    pub fn read(root: &Path) -> Option<TrackedBlobs> {
        let Ok(Found::Repo(hr)) = repo::find(root) else {
            return None;
        };
        if hr.private {
            return None;
        }
        let path = index::index_path(hr.repo.path());
        let index = index::load_shared_at(path.clone()).ok()?;
        let mut tracked = TrackedBlobs::of(&index)?;
        tracked.source = index.checksum().map(|sum| (path, sum));
        Some(tracked)
    }

    /// Whether the index is still the one these were read from: its trailing checksum (git's
    /// hash of all it holds) is the same. Read ahead of the map, while the session opens,
    /// they stand for the index only while this holds.
    pub fn is_current(&self) -> bool {
        let Some((path, sum)) = &self.source else {
            return false;
        };
        index::checksum_of(path).is_some_and(|now| now == *sum)
    }

    /// What a lookup needs of `index`, copied out a window at a time (`None` past 4 GiB of
    /// paths).
    fn of(index: &IndexFile) -> Option<TrackedBlobs> {
        // Sized once for every entry: grown by doubling, the copies would be copied again and
        // their pages faulted in twice (a third of the pass at 100,000 files). What is not
        // used is never touched, and is handed back below.
        let mut paths = Vec::with_capacity(index.entries_bytes());
        let mut ends = Vec::with_capacity(index.len());
        let mut blobs = Vec::with_capacity(index.len());
        let mut from = 0;
        for at in 0..index.len() {
            if let Some((id, mode)) = index.raw_entry_at(at)
                && REGULAR.contains(&mode)
                && let Ok(id) = <[u8; 20]>::try_from(id)
            {
                paths.extend_from_slice(index.path_at(at));
                ends.push(u32::try_from(paths.len()).ok()?);
                blobs.push(id);
            }
            if at + 1 - from >= RELEASE_EVERY {
                index.release(from..at + 1);
                from = at + 1;
            }
        }
        index.release(from..index.len());
        paths.shrink_to_fit();
        ends.shrink_to_fit();
        blobs.shrink_to_fit();
        Some(TrackedBlobs {
            paths,
            ends,
            blobs,
            slots: OnceLock::new(),
            misses: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            source: None,
        })
    }

    /// The raw blob id the index records for the regular file at project-relative `path`
    /// (stage 0; `None` for untracked, conflicted, symlinks and submodules).
    pub fn blob(&self, path: &str) -> Option<[u8; 20]> {
        let raw = crate::rawname::decode(path);
        let at = self.find(&raw)?;
        self.blobs.get(at).copied()
    }

    /// How many files there are.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The path of file `i` (empty past the end).
    fn path_at(&self, i: usize) -> &[u8] {
        let Some(&end) = self.ends.get(i) else {
            return &[];
        };
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.paths[start..end as usize]
    }

    /// The file at `path`.
    fn find(&self, path: &[u8]) -> Option<usize> {
        let guess = self.next.load(Relaxed);
        let at = if guess < self.len() && self.path_at(guess) == path {
            Some(guess)
        } else if self.slots.get().is_some()
            || self.misses.fetch_add(1, Relaxed) >= MISSES_BEFORE_TABLE
        {
            self.probe(path)
        } else {
            let i = self.lower_bound(path);
            (i < self.len() && self.path_at(i) == path).then_some(i)
        };
        if let Some(at) = at {
            self.next.store(at + 1, Relaxed);
        }
        at
    }

    /// The first file whose path is not less than `path`.
    fn lower_bound(&self, path: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
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

    /// The file at `path`, from the table.
    fn probe(&self, path: &[u8]) -> Option<usize> {
        let slots = self.slots.get_or_init(|| self.table());
        let mask = slots.len().checked_sub(1)?;
        let mut slot = hash(path) as usize & mask;
        loop {
            let at = (*slots.get(slot)? as usize).checked_sub(1)?;
            if self.path_at(at) == path {
                return Some(at);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The lookup table of the files, at most half full (so a probe ends soon).
    fn table(&self) -> Vec<u32> {
        let size = (self.len() * 2).next_power_of_two().max(16);
        let mask = size - 1;
        let mut slots = vec![0u32; size];
        for at in 0..self.len() {
            let Ok(number) = u32::try_from(at + 1) else {
                break;
            };
            let mut slot = hash(self.path_at(at)) as usize & mask;
            while slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            slots[slot] = number;
        }
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::index::test_git::git;

    /// A repository whose index holds `a.txt` ("one").
    fn one_file_staged() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
        git(tmp.path(), &["add", "a.txt"]);
        tmp
    }

    #[test]
    fn blobs_read_ahead_stand_for_the_index_only_while_git_leaves_it_unchanged() {
        let tmp = one_file_staged();
        let root = tmp.path();
        let before = TrackedBlobs::read(root).unwrap();
        assert!(before.is_current(), "nothing changed yet");
        // Staging the same bytes again rewrites the index with the same entries and checksum.
        git(root, &["add", "a.txt"]);
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        assert!(
            before.is_current(),
            "an unstaged edit leaves the index as it was"
        );
        git(root, &["add", "a.txt"]);
        assert!(!before.is_current(), "a staged edit changes the index");
        let after = TrackedBlobs::read(root).unwrap();
        assert!(after.is_current());
        assert_ne!(before.blob("a.txt"), after.blob("a.txt"));
        std::fs::remove_file(root.join(".git/index")).unwrap();
        assert!(!after.is_current(), "an index gone is not the one read");
    }

    #[test]
    fn tracked_blobs_are_what_git_stages() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a b.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("README"), "hello\n").unwrap();
        std::fs::write(root.join("run.sh"), "echo\n").unwrap();
        // Enough entries for the lookup table's probes to collide and wrap.
        for i in 0..600 {
            let dir = root.join(format!("many/d{}", i % 7));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        }
        std::os::unix::fs::symlink("README", root.join("link")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["update-index", "--chmod=+x", "run.sh"]);
        std::fs::write(root.join("untracked.txt"), "new\n").unwrap();
        let listing = git(root, &["ls-files", "-s", "-z"]);
        let tracked = TrackedBlobs::read(root).unwrap();
        let mut checked = 0;
        // "<mode> <id> <stage>\t<path>\0" per entry.
        for line in String::from_utf8(listing.clone()).unwrap().split('\0') {
            let Some((meta, path)) = line.split_once('\t') else {
                continue;
            };
            let mut meta = meta.split(' ');
            let (mode, id) = (meta.next().unwrap(), meta.next().unwrap());
            let got = tracked
                .blob(path)
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
            if mode == "120000" {
                assert_eq!(got, None, "{path} is a symlink");
            } else {
                assert_eq!(got.as_deref(), Some(id), "{path}");
                checked += 1;
            }
        }
        assert_eq!(checked, 603);
        // Out of the index's order, every lookup misses the next entry: the first ones are
        // found by binary search, the rest through the table built after them.
        let by_path: Vec<(String, Option<[u8; 20]>)> = String::from_utf8(listing)
            .unwrap()
            .split('\0')
            .filter_map(|l| l.split_once('\t'))
            .map(|(_, p)| (p.to_string(), tracked.blob(p)))
            .collect();
        let shuffled = TrackedBlobs::read(root).unwrap();
        for (path, blob) in by_path.iter().rev() {
            assert_eq!(shuffled.blob(path), *blob, "{path}, out of order");
        }
        assert!(by_path.len() > MISSES_BEFORE_TABLE && shuffled.slots.get().is_some());
        assert_eq!(tracked.blob("untracked.txt"), None);
        assert_eq!(tracked.blob("src"), None);
        assert_eq!(tracked.blob("many/d1/f7.txt"), None, "f7 is in d0, not d1");
        assert_eq!(tracked.blob("many/d0"), None);
    }

    /// The resident KiB of this process's mappings of the file at `path`.
    fn resident_kib(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let (mut mine, mut kib) = (false, 0);
        for line in smaps.lines() {
            if let Some(v) = line.strip_prefix("Rss:") {
                if mine {
                    kib += v
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .unwrap();
                }
            } else if line.split_whitespace().count() >= 5 && line.contains('-') {
                mine = line.ends_with(&*path.to_string_lossy());
            }
        }
        kib
    }

    #[test]
    fn a_large_index_is_not_left_resident_and_every_blob_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        // Long names, so that the index is large enough to be mapped (256 KiB and over).
        let dir = "a-folder-with-a-long-name/and-another-one-below-it-to-make-paths-long";
        std::fs::create_dir_all(root.join(dir)).unwrap();
        for i in 0..3000 {
            std::fs::write(
                root.join(format!("{dir}/file-number-{i:05}.txt")),
                format!("{i}\n"),
            )
            .unwrap();
        }
        git(root, &["add", "-A"]);
        let index = root.join(".git/index");
        assert!(std::fs::metadata(&index).unwrap().len() > 300 * 1024);
        let tracked = TrackedBlobs::read(root).unwrap();
        let resident = resident_kib(&index);
        assert!(
            resident <= 64,
            "{resident} KiB of the index resident after reading it"
        );
        let listing = String::from_utf8(git(root, &["ls-files", "-s", "-z"])).unwrap();
        for line in listing.split('\0').filter(|l| !l.is_empty()) {
            let (meta, path) = line.split_once('\t').unwrap();
            let id = meta.split(' ').nth(1).unwrap();
            let got = tracked.blob(path).unwrap();
            assert_eq!(
                got.iter().map(|x| format!("{x:02x}")).collect::<String>(),
                id
            );
        }
    }

    #[test]
    fn an_index_git_rewrites_is_read_again() {
        let tmp = one_file_staged();
        let root = tmp.path();
        let id = |root: &Path| {
            let t = TrackedBlobs::read(root).unwrap();
            t.blob("a.txt")
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
        };
        let staged = |root: &Path| {
            let out = git(root, &["rev-parse", ":a.txt"]);
            String::from_utf8(out).unwrap().trim().to_string()
        };
        let first = id(root);
        assert_eq!(first.as_deref(), Some(staged(root).as_str()));
        assert_eq!(id(root), first, "an unchanged index reads the same");
        // Same size, other content: only the checksum tells the two indexes apart.
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        git(root, &["add", "a.txt"]);
        let second = id(root);
        assert_ne!(second, first);
        assert_eq!(second.as_deref(), Some(staged(root).as_str()));
    }
}
