//! The project's files for the repository map: one scan (the same ignore rules and deny-list
//! as the file list), no `stat` per file (the listing's file types say which entries are
//! regular files; the map takes tracked files' versions from git's index and stamps only the
//! files it must). Reads for the map go through the gate like every other read.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::SystemTime;

use super::Workspace;
use super::beneath::{open_dir, open_parent};
use super::kept_listing::{self, Keeping};
use super::scan::{Scan, scan, scan_recording};
use super::sys::{self, Kind, Stamp};
use super::walk::Walker;

/// The project's files as the map sees them: their project-relative paths, one after another
/// in one buffer (at 100,000 files a `String` each would be 100,000 allocations and twice
/// the memory).
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    text: String,
    ends: Vec<u32>,
}

impl Corpus {
    /// How many files.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The path of file `i` (empty past the end).
    pub fn get(&self, i: usize) -> &str {
        let start = i
            .checked_sub(1)
            .and_then(|k| self.ends.get(k))
            .map_or(0, |&e| e as usize);
        let end = self.ends.get(i).map_or(start, |&e| e as usize);
        self.text.get(start..end).unwrap_or("")
    }

    /// The paths, in the file list's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Add a path (a corpus past 4 GB of paths takes no more).
    fn push(&mut self, dir: &str, name: &str) {
        let sep = usize::from(!dir.is_empty());
        let Ok(end) = u32::try_from(self.text.len() + dir.len() + sep + name.len()) else {
            return;
        };
        self.text.push_str(dir);
        if sep == 1 {
            self.text.push('/');
        }
        self.text.push_str(name);
        self.ends.push(end);
    }
}

impl Workspace {
    /// Every visible regular file of the project (`.gitignore`-aware, deny-list filtered, no
    /// symlinks), in the file list's order. Unreadable directories are left out.
    pub fn corpus(&self) -> Corpus {
        let start = Walker::new(&self.gate.deny, &self.ignores);
        let Ok(root) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            return Corpus::default();
        };
        let mut tree = scan(start, root, "");
        Self::corpus_of(&mut tree)
    }

    /// [`Self::corpus`], with what the walk reads kept in `cache` (a file in the user's cache
    /// directory) between runs: a folder that did not change since is not read again (see
    /// [`kept_listing`]). `None` walks as [`Self::corpus`] does.
    pub fn corpus_kept(&self, cache: Option<&Path>) -> Corpus {
        self.corpus_kept_with(cache, Keeping::default())
    }

    /// [`Self::corpus_kept`], keeping as `keeping` says (tests keep small trees at once).
    pub fn corpus_kept_with(&self, cache: Option<&Path>, keeping: Keeping) -> Corpus {
        let Some(file) = cache else {
            return self.corpus();
        };
        let rules = self.listing_rules();
        let bytes = kept_listing::read(file).map(std::sync::Arc::new);
        let kept = bytes.as_ref().and_then(|b| kept_listing::parse(b, rules));
        let walked = SystemTime::now();
        let start = Walker::new(&self.gate.deny, &self.ignores);
        let Ok(root) = sys::reopen_dir(self.gate.root_fd.as_fd()) else {
            return Corpus::default();
        };
        let mut tree = scan_recording(start, root, "", kept.as_ref());
        drop(kept);
        drop(bytes);
        let read: Vec<kept_listing::Read<'_>> = (0..tree.len())
            .map(|id| tree.dir(id))
            .filter(|d| !d.unreadable)
            .filter_map(|d| {
                Some(kept_listing::Read {
                    rel: &d.rel,
                    stamps: d.stamps?,
                    entries: &d.entries,
                    kept: &d.kept,
                    reused: d.reused,
                })
            })
            .collect();
        kept_listing::save(file, rules, &read, walked, keeping);
        drop(read);
        Self::corpus_of(&mut tree)
    }

    /// A hash of everything besides the folders that decides what the listing shows: the
    /// deny-list, the global ignore rules, and this very program (whose built-in rules a
    /// rebuild may change).
    fn listing_rules(&self) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{:?}", self.gate.deny).hash(&mut h);
        self.ignores.fingerprint().hash(&mut h);
        let program = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                use std::os::unix::fs::MetadataExt as _;
                (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec())
            })
            .ok();
        program.hash(&mut h);
        h.finish()
    }

    fn corpus_of(tree: &mut Scan) -> Corpus {
        // Sized once: grown by doubling, the buffers would be copied and faulted in twice.
        let (files, bytes) = corpus_size(tree);
        let mut out = Corpus {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(files),
        };
        flatten(tree, 0, &mut out);
        out.text.shrink_to_fit();
        out.ends.shrink_to_fit();
        out
    }

    /// A project file's text (at most `limit` bytes; `None` for binary, longer, missing or
    /// refused files) with the stamp of the very descriptor it was read from, so a cache keyed
    /// by the stamp never pairs one version's stamp with another version's text.
    pub fn read_stamped(&self, path: &str, limit: usize) -> Option<(String, Stamp)> {
        let rel = self.gate_op(path, true).ok()?;
        if rel.is_root() {
            return None;
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "read").ok()?;
        let (fd, st) = Self::open_file(&dir, &name, &rel, "read", "").ok()?;
        if st.size > limit as u64 || super::gate::refuse_linked(&rel, st.links).is_err() {
            return None;
        }
        let bytes = sys::read_up_to(&fd, limit.saturating_add(1)).ok()?;
        if bytes.len() > limit || bytes.contains(&0) {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        Some((text, st.stamp()))
    }

    /// The stamps of project files (`None` for one that is gone, refused or not a regular
    /// file, no symlink followed), each folder gated and opened once for the consecutive files
    /// in it: a project without git has every file stamped by the map, and [`Self::stamp_of`]
    /// walks from the root for each.
    pub fn stamps_of(&self, paths: &[&str]) -> Vec<Option<Stamp>> {
        // Many files (a project without git has all of them stamped): on several threads, as
        // the scan stamped them, each taking a run of the list (a folder split between two runs
        // is opened by both).
        const PER_THREAD: usize = 4_096;
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 4)
            .min(paths.len().div_ceil(PER_THREAD));
        if threads <= 1 {
            return self.stamps_in_turn(paths);
        }
        let run = paths.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = paths
                .chunks(run)
                .map(|chunk| (chunk, s.spawn(move || self.stamps_in_turn(chunk))))
                .collect();
            handles
                .into_iter()
                .flat_map(|(chunk, h)| {
                    // A thread that panicked stamps nothing: its files are read again.
                    h.join().unwrap_or_else(|_| vec![None; chunk.len()])
                })
                .collect()
        })
    }

    /// [`Self::stamps_of`] on this thread.
    fn stamps_in_turn(&self, paths: &[&str]) -> Vec<Option<Stamp>> {
        let mut open: Option<(&str, Option<OwnedFd>)> = None;
        paths
            .iter()
            .map(|path| {
                let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
                if name.is_empty() || name == "." || name == ".." || self.is_denied(path) {
                    return None;
                }
                if open.as_ref().is_none_or(|(d, _)| *d != dir) {
                    open = Some((dir, self.open_folder(dir)));
                }
                let fd = open.as_ref()?.1.as_ref()?;
                let st = sys::lstatat(fd.as_fd(), &sys::cstr(name).ok()?).ok()?;
                (st.kind == Kind::File).then(|| st.stamp())
            })
            .collect()
    }

    /// The project folder `dir` (`""`: the root), through the gate, opened without following
    /// a link.
    fn open_folder(&self, dir: &str) -> Option<OwnedFd> {
        let comps: Vec<String> = if dir.is_empty() {
            Vec::new()
        } else {
            let rel = self.gate_op(dir, false).ok()?;
            rel.components().map(str::to_string).collect()
        };
        open_dir(
            &self.gate,
            comps.iter().map(String::as_str),
            false,
            "stat",
            dir,
        )
        .ok()
        .map(|(fd, _)| fd)
    }

    /// The stamp of a project file (no symlink followed), for files the map cannot read as
    /// text: it then knows not to try again until the file changes.
    pub fn stamp_of(&self, path: &str) -> Option<Stamp> {
        let rel = self.gate_op(path, false).ok()?;
        let (dir, name) = open_parent(&self.gate, &rel, false, "stat").ok()?;
        let st = sys::lstatat(dir.as_fd(), &name).ok()?;
        (st.kind == Kind::File).then(|| st.stamp())
    }
}

/// How many files the scan found, and about how long their paths are together (at least as
/// long: a kept folder's names are counted with its subfolders' and their NULs).
fn corpus_size(tree: &Scan) -> (usize, usize) {
    let (mut files, mut bytes) = (0, 0);
    for id in 0..tree.len() {
        let d = tree.dir(id);
        let sep = d.rel.len() + usize::from(!d.rel.is_empty());
        let read = d.entries.iter().filter(|e| e.kind == Kind::File);
        let (n, names) = read.fold((d.kept.files(), d.kept.names().len()), |(n, b), e| {
            (n + 1, b + e.cname.as_bytes().len())
        });
        files += n;
        bytes += names + n * sep;
    }
    (files, bytes)
}

/// The files of directory `id` and its scanned subdirectories, in the file list's
/// order (a directory's subdirectories, then its files). Each directory is taken out of the
/// scan as it is turned into paths, so the two are not both held whole.
fn flatten(tree: &mut Scan, id: usize, out: &mut Corpus) {
    let d = tree.take(id);
    // A reused folder's names are checked once, not one by one, for being UTF-8 that needs no
    // escape (see `rawname`).
    if let Some(kept) = d.kept.iter_text().filter(|_| d.entries.is_empty()) {
        for (i, (name, kind)) in kept.enumerate() {
            match kind {
                Kind::Dir => {
                    if let Some(sub) = d.sub(i) {
                        flatten(tree, sub, out);
                    }
                }
                Kind::File => out.push(&d.rel, name),
                _ => {}
            }
        }
        return;
    }
    let listed = d
        .entries
        .iter()
        .map(|e| (e.cname.as_bytes(), e.kind))
        .chain(d.kept.iter());
    for (i, (name, kind)) in listed.enumerate() {
        match kind {
            Kind::Dir => {
                if let Some(sub) = d.sub(i) {
                    flatten(tree, sub, out);
                }
            }
            // Spelled losslessly, as every path pai shows (a lossy spelling names no file).
            Kind::File => out.push(&d.rel, &crate::rawname::encode(name)),
            _ => {}
        }
    }
}
