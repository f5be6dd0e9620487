//! A directory tree read into memory on several threads, for TREE, LIST_PATH and the project
//! file list.
//!
//! Walking a big tree is mostly system calls (`getdents64`, `openat`), and the kernel spends
//! about as long on them as `git ls-files` spends on its whole job. Reading directories on
//! every core is what keeps a listing of 100,000 files within 2x of `git ls-files`; rendering
//! then runs over the finished scan in memory, in the same order a sequential walk would give.
//!
//! Safety is the walk's: each directory is opened relative to its parent's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY`, symlinks are listed but never followed, and the same ignore
//! rules and deny-list decide what is visible.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::sys::{self, Kind};
use super::walk::{Entry, Level, MAX_DEPTH, Rules, Scratch, Walker, join};

/// Most threads a scan uses: past four, the file system's locks, not the cores, set the pace.
const MAX_THREADS: usize = 4;

/// A scanned tree: `dirs[0]` is the directory the scan started at.
pub(crate) struct Scan {
    dirs: Vec<ScanDir>,
}

/// One scanned directory.
#[derive(Default)]
pub(crate) struct ScanDir {
    /// Its project-relative path (empty for the root).
    pub rel: String,
    /// Its visible entries, directories first, each group sorted by name.
    pub entries: Vec<Entry>,
    /// For each entry that is a directory the scan went into, the id of its scan (for
    /// [`Scan::dir`]); `None` for files and for directories past the depth limit.
    pub sub: Vec<Option<usize>>,
    /// Whether this directory could not be opened or read.
    pub unreadable: bool,
    /// For a recording scan ([`scan_recording`]): the directory's stat and its `.gitignore`'s
    /// (`None` when it has none), both taken before it was read.
    pub stamps: Option<(sys::FileStat, Option<sys::FileStat>)>,
}

impl Scan {
    /// The directory the scan started at.
    pub(crate) fn root(&self) -> &ScanDir {
        self.dir(0)
    }

    /// How many directories were scanned; ids run from 0 to this, exclusive.
    pub(crate) fn len(&self) -> usize {
        self.dirs.len()
    }

    /// A directory by id (an id from [`ScanDir::sub`]).
    pub(crate) fn dir(&self, id: usize) -> &ScanDir {
        static EMPTY: ScanDir = ScanDir {
            rel: String::new(),
            entries: Vec::new(),
            sub: Vec::new(),
            unreadable: true,
            stamps: None,
        };
        self.dirs.get(id).unwrap_or(&EMPTY)
    }

    /// Take a directory out of the scan (an unread one after the first time), so a caller
    /// turning the scan into something else frees it as it goes.
    pub(crate) fn take(&mut self, id: usize) -> ScanDir {
        self.dirs
            .get_mut(id)
            .map_or_else(ScanDir::unread, std::mem::take)
    }
}

/// A directory waiting to be read: its parent's descriptor and its name (no name for the
/// start directory, which is `dir` itself).
struct Job {
    id: usize,
    dir: Arc<OwnedFd>,
    name: Option<CString>,
    rel: String,
    parent_rules: Option<Arc<Level>>,
}

/// Jobs waiting, and how many are being worked on (a worker may still add jobs).
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    busy: usize,
}

struct Shared<'w> {
    rules: Rules<'w>,
    /// Take each directory's stamps (see [`ScanDir::stamps`]).
    record: bool,
    queue: Mutex<Queue>,
    wake: Condvar,
    next_id: AtomicUsize,
}

/// Scan the tree below `dir` (at project-relative `rel`), going on from `start`: the rules,
/// and the ignore rules of the directories above `dir`.
pub(crate) fn scan(start: Walker<'_>, dir: OwnedFd, rel: &str) -> Scan {
    scan_with(start, dir, rel, false)
}

/// [`scan`], taking every directory's stamps as it goes: what a kept listing is checked
/// against later (two more `stat`s per directory).
pub(crate) fn scan_recording(start: Walker<'_>, dir: OwnedFd, rel: &str) -> Scan {
    scan_with(start, dir, rel, true)
}

fn scan_with(start: Walker<'_>, dir: OwnedFd, rel: &str, record: bool) -> Scan {
    let (rules, parent_rules) = start.into_parts();
    let shared = Shared {
        rules,
        record,
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        next_id: AtomicUsize::new(1),
    };
    let root = Job {
        id: 0,
        dir: Arc::new(dir),
        name: None,
        rel: rel.to_string(),
        parent_rules,
    };
    let mut scratch = Scratch::default();
    // The start directory is read here: a directory without subdirectories (the common case
    // for a LIST_PATH of one folder) then needs no threads at all.
    let mut done = vec![read_one(&shared, root, &mut scratch)];
    if !lock(&shared.queue).jobs.is_empty() {
        // Directories a panicked helper took are missing from `done`: they show as unreadable.
        done.extend(on_threads(thread_count(), "pai-scan", || work(&shared)));
    }
    let total = shared.next_id.load(Ordering::Relaxed);
    let mut dirs: Vec<ScanDir> = (0..total).map(|_| ScanDir::unread()).collect();
    for (id, d) in done {
        if let Some(slot) = dirs.get_mut(id) {
            *slot = d;
        }
    }
    Scan { dirs }
}

/// How many threads a walk uses: one per core, at most [`MAX_THREADS`].
pub(crate) fn thread_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
}

/// Run `work` on the calling thread and on `threads - 1` helpers, and gather what they all
/// return. A helper that cannot be started is simply not there; one that panics loses its
/// part, which the caller must treat as not done.
pub(crate) fn on_threads<T: Send>(
    threads: usize,
    name: &str,
    work: impl Fn() -> Vec<T> + Sync,
) -> Vec<T> {
    let mut done = Vec::new();
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn_scoped(s, &work)
                    .ok()
            })
            .collect();
        done.extend(work());
        for h in helpers {
            if let Ok(part) = h.join() {
                done.extend(part);
            }
        }
    });
    done
}

impl ScanDir {
    fn unread() -> ScanDir {
        ScanDir {
            unreadable: true,
            ..ScanDir::default()
        }
    }
}

fn lock<'a>(q: &'a Mutex<Queue>) -> std::sync::MutexGuard<'a, Queue> {
    // The queue holds no invariant a panicking worker could break halfway.
    q.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A job under way. Dropping it, even while unwinding from a panic, lets the other workers
/// stop waiting for jobs it might have added.
struct Busy<'a, 'w>(&'a Shared<'w>);

impl Drop for Busy<'_, '_> {
    fn drop(&mut self) {
        let mut q = lock(&self.0.queue);
        q.busy -= 1;
        if q.jobs.is_empty() && q.busy == 0 {
            self.0.wake.notify_all();
        }
    }
}

/// Take jobs until none are left and no worker can add more.
fn work(shared: &Shared<'_>) -> Vec<(usize, ScanDir)> {
    let mut out = Vec::new();
    let mut scratch = Scratch::default();
    let mut q = lock(&shared.queue);
    loop {
        if let Some(job) = q.jobs.pop() {
            q.busy += 1;
            drop(q);
            let busy = Busy(shared);
            out.push(read_one(shared, job, &mut scratch));
            drop(busy);
            q = lock(&shared.queue);
        } else if q.busy == 0 {
            return out;
        } else {
            q = shared.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Read one directory and queue its subdirectories.
fn read_one(shared: &Shared<'_>, job: Job, scratch: &mut Scratch) -> (usize, ScanDir) {
    let failed = |rel: String| ScanDir {
        rel,
        ..ScanDir::unread()
    };
    let dir = match &job.name {
        None => job.dir,
        Some(name) => match sys::openat(job.dir.as_fd(), name, sys::DIR_READ, 0) {
            Ok(fd) => Arc::new(fd),
            Err(_) => return (job.id, failed(job.rel)),
        },
    };
    // Stamped before reading, so a change made while the directory is read shows as a
    // different stamp next time.
    let stamps = if shared.record {
        match sys::lstatat_full(dir.as_fd(), c".") {
            Ok(st) => Some((st, sys::lstatat_full(dir.as_fd(), c".gitignore").ok())),
            Err(_) => return (job.id, failed(job.rel)),
        }
    } else {
        None
    };
    let (level, entries) = shared
        .rules
        .read(&dir, &job.rel, job.parent_rules.as_ref(), scratch);
    let Ok(entries) = entries else {
        return (job.id, failed(job.rel));
    };
    let mut sub = vec![None; entries.len()];
    let mut children = Vec::new();
    if level.depth() < MAX_DEPTH {
        for (i, e) in entries.iter().enumerate() {
            if e.kind != Kind::Dir {
                continue;
            }
            let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
            sub[i] = Some(id);
            children.push(Job {
                id,
                dir: Arc::clone(&dir),
                name: Some(e.cname.clone()),
                rel: join(&job.rel, &e.name()),
                parent_rules: Some(Arc::clone(&level)),
            });
        }
    }
    if !children.is_empty() {
        // Last in, first out, and pushed in reverse: a worker takes the first subdirectory
        // next, so the directories waiting (each holding its parent's descriptor open) stay
        // few, about the depth of the tree per thread, however wide the tree is.
        children.reverse();
        lock(&shared.queue).jobs.extend(children);
        shared.wake.notify_all();
    }
    (
        job.id,
        ScanDir {
            rel: job.rel,
            entries,
            sub,
            unreadable: false,
            stamps,
        },
    )
}
