//! The status pass's walk of the tree, on every core.
//!
//! Nearly all of a status pass is the kernel answering `getdents64` and `lstat`: one
//! `lstat` per tracked file, as `git status` makes, which spreads those over threads too
//! (its preloaded index). Directories are jobs on a shared queue: a worker lists one, looks
//! at its entries and queues its subdirectories, last in first out so the descriptors held
//! open stay about the tree's depth per thread, as in [`super::scan`].
//!
//! A directory's job carries the range of index positions below it, so finding an entry in
//! the index is a binary search over that directory's own entries (a few dozen, close
//! together in memory), not over the whole index. Which tracked files the walk met is one
//! bit per file, shared by the workers; everything else a worker finds (changed positions,
//! untracked, ignored and empty directories' paths) grows with what differs, not with the
//! tree, and is merged at the end.

use std::ffi::CString;
use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::scan::{on_threads_counted, thread_count};
use super::sys::{self, DirEntry, FileStat, Kind};
use super::walk::{Level, MAX_DEPTH, Rules};

/// The files the caller already knows (git's index): sorted by path bytes, as git sorts them.
pub trait Tracked: Sync {
    /// How many there are; positions run from 0 to this, exclusive.
    fn count(&self) -> usize;
    /// The path at position `i` (raw bytes, `/`-separated, relative to the root).
    fn path(&self, i: usize) -> &[u8];
    /// The position of `path`, when it is tracked.
    fn find(&self, path: &[u8]) -> Option<usize>;
    /// Whether anything tracked lies below the directory `dir`.
    fn has_under(&self, dir: &[u8]) -> bool;
    /// Whether position `i` is a submodule (its directory belongs to another repository).
    fn is_submodule(&self, i: usize) -> bool;
    /// Whether the file at position `i`, which now has the stat data `st`, is certainly what
    /// the caller recorded (`false` when in doubt: the caller then reads it).
    fn unchanged(&self, i: usize, st: &FileStat) -> bool;
    /// The walk has looked at the directory whose tracked files are at `positions` (its
    /// subdirectories, looked at later, ask for their own positions again): an index held in
    /// a mapping may hand back the pages they lie on, so the pass does not leave all of it
    /// resident.
    fn done_with(&self, positions: Range<usize>) {
        let _ = positions;
    }
}

/// One flag per tracked position: met by the walk. Set by whichever worker meets the file.
pub(super) struct Visited(Vec<AtomicU64>);

impl Visited {
    fn new(count: usize) -> Visited {
        Visited((0..count.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn set(&self, i: usize) {
        if let Some(word) = self.0.get(i / 64) {
            word.fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }

    /// Whether position `i` was met.
    pub(super) fn get(&self, i: usize) -> bool {
        self.0
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }
}

/// What the walk found (see [`super::StatusPass`]), unsorted.
#[derive(Default)]
pub(super) struct Found {
    pub changed: Vec<usize>,
    pub untracked: Vec<String>,
    pub ignored: Vec<String>,
    pub empty_dirs: Vec<String>,
}

impl Found {
    fn merge(&mut self, other: Found) {
        self.changed.extend(other.changed);
        self.untracked.extend(other.untracked);
        self.ignored.extend(other.ignored);
        self.empty_dirs.extend(other.empty_dirs);
    }
}

/// A directory to look at: its name in its parent (open), its raw path, its parent's rules,
/// and the index positions below it.
struct Job {
    parent: Arc<OwnedFd>,
    name: CString,
    path: Vec<u8>,
    level: Arc<Level>,
    below: Range<usize>,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Workers looking at a directory (which may queue more).
    busy: usize,
}

/// What the workers share.
struct Shared<'w, 't> {
    rules: Rules<'w>,
    tracked: &'t dyn Tracked,
    visited: Visited,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Directories queued, and looked at to the end: a helper that panicked loses the ones it
    /// took, and the walk must then fail rather than miss what they hold.
    queued: AtomicUsize,
    finished: AtomicUsize,
}

/// One worker's state.
struct Worker<'s, 'w, 't> {
    shared: &'s Shared<'w, 't>,
    found: Found,
    dirents: Vec<u8>,
    /// Subdirectories of the directory being looked at, queued when it is done.
    children: Vec<Job>,
}

/// Walk the tree whose root is open as `root`, listed as `raw` with rules `level`, against
/// `tracked`. Returns what it found and which tracked files it met; `Err` when a directory
/// taken by a helper thread was not looked at to the end (the helper panicked).
pub(super) fn walk(
    rules: Rules<'_>,
    tracked: &dyn Tracked,
    root: OwnedFd,
    level: &Arc<Level>,
    raw: Vec<DirEntry>,
) -> std::io::Result<(Found, Visited)> {
    let shared = Shared {
        rules,
        tracked,
        visited: Visited::new(tracked.count()),
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        queued: AtomicUsize::new(0),
        finished: AtomicUsize::new(0),
    };
    // The root is looked at here: a project without subdirectories needs no threads.
    let mut first = Worker::new(&shared);
    first.entries(&Arc::new(root), level, raw, &[], 0..tracked.count());
    first.queue_children();
    let mut found = first.found;
    if !lock(&shared.queue).jobs.is_empty() {
        for part in on_threads_counted(thread_count(), "pai-status", || work(&shared)) {
            found.merge(part);
        }
    }
    let (queued, finished) = (
        shared.queued.load(Ordering::Relaxed),
        shared.finished.load(Ordering::Relaxed),
    );
    if finished != queued {
        return Err(std::io::Error::other(format!(
            "the walk of the project stopped short: {} of {queued} folders were not looked at",
            queued - finished.min(queued)
        )));
    }
    Ok((found, shared.visited))
}

fn lock<'a>(q: &'a Mutex<Queue>) -> std::sync::MutexGuard<'a, Queue> {
    // The queue holds no invariant a panicking worker could break halfway.
    q.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A job under way. Dropping it, even while unwinding from a panic, lets the other workers
/// stop waiting for jobs it might have added.
struct Busy<'a, 'w, 't>(&'a Shared<'w, 't>);

impl Drop for Busy<'_, '_, '_> {
    fn drop(&mut self) {
        let mut q = lock(&self.0.queue);
        q.busy -= 1;
        if q.jobs.is_empty() && q.busy == 0 {
            self.0.wake.notify_all();
        }
    }
}

/// Take jobs until none are left and no worker can add more; what this worker found.
fn work(shared: &Shared<'_, '_>) -> Found {
    let mut worker = Worker::new(shared);
    let mut q = lock(&shared.queue);
    loop {
        if let Some(job) = q.jobs.pop() {
            q.busy += 1;
            drop(q);
            let busy = Busy(shared);
            worker.job(job);
            worker.queue_children();
            shared.finished.fetch_add(1, Ordering::Relaxed);
            drop(busy);
            q = lock(&shared.queue);
        } else if q.busy == 0 {
            break;
        } else {
            q = shared.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
    drop(q);
    worker.found
}

/// The first index position in `range` whose path is not less than `key`.
fn lower_bound(tracked: &dyn Tracked, range: Range<usize>, key: &[u8]) -> usize {
    let (mut lo, mut hi) = (range.start, range.end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if tracked.path(mid) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The first position at `path` within `range`, when it is tracked.
fn find_in(tracked: &dyn Tracked, range: Range<usize>, path: &[u8]) -> Option<usize> {
    let i = lower_bound(tracked, range.clone(), path);
    (i < range.end && tracked.path(i) == path).then_some(i)
}

/// The positions within `range` below the directory `dir`: those starting with `dir/`,
/// which sort together, before `dir0` (`0` follows `/`).
fn below(tracked: &dyn Tracked, range: Range<usize>, dir: &[u8]) -> Range<usize> {
    let mut key = Vec::with_capacity(dir.len() + 1);
    key.extend_from_slice(dir);
    key.push(b'/');
    let lo = lower_bound(tracked, range.clone(), &key);
    if let Some(last) = key.last_mut() {
        *last = b'0';
    }
    lo..lower_bound(tracked, lo..range.end, &key)
}

impl<'s, 'w, 't> Worker<'s, 'w, 't> {
    fn new(shared: &'s Shared<'w, 't>) -> Self {
        Worker {
            shared,
            found: Found::default(),
            dirents: Vec::new(),
            children: Vec::new(),
        }
    }

    fn queue_children(&mut self) {
        if self.children.is_empty() {
            return;
        }
        // Pushed in reverse: the first subdirectory is taken next (see the module comment).
        self.children.reverse();
        self.shared
            .queued
            .fetch_add(self.children.len(), Ordering::Relaxed);
        lock(&self.shared.queue).jobs.append(&mut self.children);
        self.shared.wake.notify_all();
    }

    /// Open and list one directory, then look at its entries.
    fn job(&mut self, job: Job) {
        let rules = self.shared.rules;
        let Ok(fd) = sys::openat(job.parent.as_fd(), &job.name, sys::DIR_READ, 0) else {
            return;
        };
        let full = String::from_utf8_lossy(&job.path).into_owned();
        let (level, raw) = rules.read_raw(&fd, &full, Some(&job.level), &mut self.dirents);
        let Ok(raw) = raw else {
            return;
        };
        let nested_repo = raw.iter().any(|e| e.name.to_bytes() == b".git");
        if nested_repo && job.below.is_empty() {
            // An embedded repository: git status shows it as one untracked directory and
            // does not look inside; nothing in it can be recorded here.
            return;
        }
        self.entries(&Arc::new(fd), &level, raw, &job.path, job.below);
    }

    /// Look at the entries `raw` of the directory open as `fd`, at raw path `base`, whose
    /// rules are `level` and whose tracked files are at the positions `below`.
    fn entries(
        &mut self,
        fd: &Arc<OwnedFd>,
        level: &Arc<Level>,
        raw: Vec<DirEntry>,
        base: &[u8],
        below: Range<usize>,
    ) {
        let tracked = self.shared.tracked;
        let any_rules = self.shared.rules.any_rules(level);
        if raw.is_empty() && !base.is_empty() {
            self.found
                .empty_dirs
                .push(crate::rawname::encode(base).into_owned());
        }
        let mut path = base.to_vec();
        for e in raw {
            path.truncate(base.len());
            if !base.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(e.name.to_bytes());
            let found = find_in(tracked, below.clone(), &path);
            if let Some(i) = found {
                self.shared.visited.set(i);
            }
            match (e.kind, found) {
                (Kind::Dir, Some(i)) if tracked.is_submodule(i) => {}
                (Kind::Dir, _) => {
                    // A tracked file replaced by a directory.
                    self.found.changed.extend(found);
                    self.subdir(fd, e.name, level, any_rules, &path, below.clone());
                }
                (_, Some(i)) => {
                    let same = sys::lstatat_full(fd.as_fd(), &e.name)
                        .is_ok_and(|st| tracked.unchanged(i, &st));
                    if !same {
                        self.found.changed.push(i);
                    }
                }
                (_, None) => self.untracked_file(&e.name, level, any_rules, &path),
            }
        }
        tracked.done_with(below);
    }

    /// An untracked file at `path`: reported unless hidden.
    fn untracked_file(&mut self, name: &CString, level: &Level, any_rules: bool, path: &[u8]) {
        let rules = self.shared.rules;
        if rules.denied_name(&name.to_string_lossy()) {
            return;
        }
        let full = String::from_utf8_lossy(path);
        if rules.denied_path(&full) {
            return;
        }
        let shown = crate::rawname::encode(path).into_owned();
        if any_rules && rules.ignored(level, &full, false) {
            self.found.ignored.push(shown);
        } else {
            self.found.untracked.push(shown);
        }
    }

    /// Queue the directory `name` of `parent` (at `path`) unless it is hidden, ignored or
    /// too deep; `range` holds the parent's tracked positions.
    fn subdir(
        &mut self,
        parent: &Arc<OwnedFd>,
        name: CString,
        level: &Arc<Level>,
        any_rules: bool,
        path: &[u8],
        range: Range<usize>,
    ) {
        let rules = self.shared.rules;
        if rules.denied_name(&name.to_string_lossy()) || level.depth() >= MAX_DEPTH {
            return;
        }
        let full = String::from_utf8_lossy(path);
        if rules.denied_path(&full) {
            return;
        }
        if any_rules && rules.ignored(level, &full, true) {
            self.found
                .ignored
                .push(format!("{}/", crate::rawname::encode(path)));
            return;
        }
        self.children.push(Job {
            parent: Arc::clone(parent),
            name,
            path: path.to_vec(),
            level: Arc::clone(level),
            below: below(self.shared.tracked, range, path),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visited_bits_are_set_one_by_one() {
        let v = Visited::new(130);
        for i in [0, 63, 64, 129] {
            assert!(!v.get(i));
            v.set(i);
            assert!(v.get(i));
        }
        assert!(!v.get(1) && !v.get(65) && !v.get(128));
        // Past the end: nothing set, nothing found.
        v.set(500);
        assert!(!v.get(500));
    }

    /// Sorted paths, as git's index holds them.
    struct Paths(Vec<&'static [u8]>);

    impl Tracked for Paths {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn path(&self, i: usize) -> &[u8] {
            self.0[i]
        }
        fn find(&self, path: &[u8]) -> Option<usize> {
            self.0.iter().position(|p| *p == path)
        }
        fn has_under(&self, _: &[u8]) -> bool {
            false
        }
        fn is_submodule(&self, _: usize) -> bool {
            false
        }
        fn unchanged(&self, _: usize, _: &FileStat) -> bool {
            false
        }
    }

    #[test]
    fn a_directory_s_range_holds_exactly_the_paths_below_it() {
        // `a-b` and `a.c` sort between `a` and `a/`, `a0` after every `a/...`.
        let t = Paths(vec![
            b"a", b"a-b", b"a.c", b"a/b/c", b"a/b/d", b"a/e", b"a0", b"b/a",
        ]);
        let all = 0..t.count();
        assert_eq!(below(&t, all.clone(), b"a"), 3..6);
        assert_eq!(below(&t, 3..6, b"a/b"), 3..5);
        assert_eq!(below(&t, all.clone(), b"b"), 7..8);
        assert!(below(&t, all.clone(), b"c").is_empty());
        assert!(below(&t, 3..6, b"a/e").is_empty());
        for (i, p) in t.0.iter().enumerate() {
            assert_eq!(find_in(&t, all.clone(), p), Some(i));
        }
        assert_eq!(find_in(&t, 3..6, b"a/e"), Some(5));
        // Outside the range searched: not found, though tracked.
        assert_eq!(find_in(&t, 3..6, b"a0"), None);
        assert_eq!(find_in(&t, all, b"a/b"), None);
    }
}
