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

use super::kept_listing::{Ignore, KeptEntries, KeptFolders};
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
    /// For each entry that is a directory the scan went into, its index among the entries
    /// and the id of its scan (for [`Scan::dir`]), in entry order; see [`ScanDir::sub`].
    /// Only directories have a pair: a slot for every entry would cost 16 bytes a file.
    subs: Vec<(u32, u32)>,
    /// Whether this directory could not be opened or read.
    pub unreadable: bool,
    /// For a recording scan ([`scan_recording`]): the directory's stat and its `.gitignore`'s
    /// (`None` when it has none), both taken before it was read.
    pub stamps: Option<(sys::FileStat, Option<sys::FileStat>)>,
    /// Whether its entries came from the kept listing rather than from reading it.
    pub reused: bool,
    /// Its visible entries when they came from the kept listing (`entries` is then empty).
    pub kept: KeptEntries,
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
            subs: Vec::new(),
            unreadable: true,
            stamps: None,
            reused: false,
            kept: KeptEntries::new(),
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
    /// Whether no ignore rule above this directory changed since the kept listing.
    rules_same: bool,
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
    /// What an earlier recording scan read, reused for directories that did not change.
    kept: Option<&'w KeptFolders<'w>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    next_id: AtomicUsize,
}

/// Scan the tree below `dir` (at project-relative `rel`), going on from `start`: the rules,
/// and the ignore rules of the directories above `dir`.
pub(crate) fn scan(start: Walker<'_>, dir: OwnedFd, rel: &str) -> Scan {
    scan_with(start, dir, rel, false, None)
}

/// [`scan`], taking every directory's stamps as it goes (two more `stat`s per directory), and
/// reusing what `kept` holds of a directory whose stamps and rules did not change instead of
/// reading it (see [`super::kept_listing`]).
pub(crate) fn scan_recording<'w>(
    start: Walker<'w>,
    dir: OwnedFd,
    rel: &str,
    kept: Option<&'w KeptFolders<'w>>,
) -> Scan {
    scan_with(start, dir, rel, true, kept)
}

fn scan_with<'w>(
    start: Walker<'w>,
    dir: OwnedFd,
    rel: &str,
    record: bool,
    kept: Option<&'w KeptFolders<'w>>,
) -> Scan {
    let (rules, parent_rules) = start.into_parts();
    let shared = Shared {
        rules,
        record,
        kept,
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
        rules_same: true,
    };
    let mut scratch = Scratch::default();
    // The start directory is read here: a directory without subdirectories (the common case
    // for a LIST_PATH of one folder) then needs no threads at all.
    let mut done = vec![read_one(&shared, root, &mut scratch)];
    if !lock(&shared.queue).jobs.is_empty() {
        // Directories a panicked helper took are missing from `done`: they show as unreadable.
        for read in on_threads_counted(thread_count(), "pai-scan", || work(&shared)) {
            done.extend(read);
        }
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

/// [`on_threads`], one result per thread, with the system calls the helpers made added to
/// the calling thread's counts (the counts a test pins are the caller's).
pub(crate) fn on_threads_counted<T: Send>(
    threads: usize,
    name: &str,
    work: impl Fn() -> T + Sync,
) -> Vec<T> {
    let me = std::thread::current().id();
    let parts = on_threads(threads, name, || {
        let start = sys::counts();
        let out = work();
        let now = sys::counts();
        let made = sys::SysCounts {
            listings: now.listings - start.listings,
            stats: now.stats - start.stats,
        };
        vec![(out, made, std::thread::current().id())]
    });
    parts
        .into_iter()
        .map(|(out, made, thread)| {
            if thread != me {
                sys::add_counts(made);
            }
            out
        })
        .collect()
}

impl ScanDir {
    fn unread() -> ScanDir {
        ScanDir {
            unreadable: true,
            ..ScanDir::default()
        }
    }

    /// The id of the scan of entry `i` (for [`Scan::dir`]), when it is a directory the scan
    /// went into; `None` for files and for directories past the depth limit.
    pub(crate) fn sub(&self, i: usize) -> Option<usize> {
        let i = u32::try_from(i).ok()?;
        let at = self.subs.binary_search_by_key(&i, |&(at, _)| at).ok()?;
        self.subs.get(at).map(|&(_, id)| id as usize)
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

/// What one directory holds, and how it was found.
struct Listed {
    level: Arc<Level>,
    /// Its visible entries, when read.
    entries: Vec<Entry>,
    /// Its visible entries, when reused from the kept listing.
    kept: KeptEntries,
    stamps: Option<(sys::FileStat, Option<sys::FileStat>)>,
    /// Whether no ignore rule from here up changed since the kept listing.
    rules_same: bool,
    /// Whether the entries came from the kept listing.
    reused: bool,
}

/// The directory `job` (open as `dir`): stamped when recording, its entries reused from the
/// kept listing when it and the rules above it did not change, else read. `None` when it
/// cannot be stamped or read.
fn list(shared: &Shared<'_>, job: &Job, dir: &OwnedFd, scratch: &mut Scratch) -> Option<Listed> {
    // Stamped before reading, so a change made while the directory is read shows as a
    // different stamp next time.
    let stamps = if shared.record {
        let st = sys::fstat_full(dir.as_fd()).ok()?;
        // A folder that kept its stamp kept its entries, so one that had no `.gitignore`
        // still has none (making one changes the folder's times): one lookup less per folder.
        let ignore = if shared
            .kept
            .is_some_and(|k| k.unchanged_without_ignore(&job.rel, st.into()))
        {
            None
        } else {
            sys::lstatat_full(dir.as_fd(), c".gitignore").ok()
        };
        Some((st, ignore))
    } else {
        None
    };
    let (rules_same, kept) = match (shared.kept, stamps) {
        (Some(kept), Some((st, ignore))) => {
            let same = job.rules_same && kept.same_rules(&job.rel, Ignore::of(ignore));
            (
                same,
                same.then(|| kept.entries(&job.rel, st.into())).flatten(),
            )
        }
        _ => (false, None),
    };
    let parent = job.parent_rules.as_ref();
    Some(match kept {
        Some(kept) => {
            let has_gitignore = stamps
                .and_then(|(_, ignore)| ignore)
                .is_some_and(|st| st.mode & libc::S_IFMT == libc::S_IFREG);
            Listed {
                level: shared.rules.level(dir, &job.rel, parent, has_gitignore),
                entries: Vec::new(),
                kept,
                stamps,
                rules_same,
                reused: true,
            }
        }
        None => {
            let (level, read) = shared.rules.read(dir, &job.rel, parent, scratch);
            Listed {
                level,
                entries: read.ok()?,
                kept: KeptEntries::new(),
                stamps,
                rules_same,
                reused: false,
            }
        }
    })
}

/// Read one directory and queue its subdirectories.
fn read_one(shared: &Shared<'_>, job: Job, scratch: &mut Scratch) -> (usize, ScanDir) {
    let failed = |rel: String| ScanDir {
        rel,
        ..ScanDir::unread()
    };
    let dir = match &job.name {
        None => Arc::clone(&job.dir),
        Some(name) => match sys::openat(job.dir.as_fd(), name, sys::DIR_READ, 0) {
            Ok(fd) => Arc::new(fd),
            Err(_) => return (job.id, failed(job.rel)),
        },
    };
    let Some(found) = list(shared, &job, &dir, scratch) else {
        return (job.id, failed(job.rel));
    };
    let Listed {
        level,
        entries,
        kept,
        stamps,
        rules_same,
        reused,
    } = found;
    let mut subs = Vec::new();
    let mut children = Vec::new();
    let has_dirs = kept.has_dirs() || entries.iter().any(|e| e.kind == Kind::Dir);
    if has_dirs && level.depth() < MAX_DEPTH {
        let listed = entries
            .iter()
            .map(|e| (e.cname.as_bytes(), e.kind))
            .chain(kept.iter());
        for (i, (name, kind)) in listed.enumerate() {
            if kind != Kind::Dir {
                continue;
            }
            let Ok(cname) = CString::new(name) else {
                continue;
            };
            let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
            let (Ok(at), Ok(id32)) = (u32::try_from(i), u32::try_from(id)) else {
                continue;
            };
            subs.push((at, id32));
            children.push(Job {
                id,
                dir: Arc::clone(&dir),
                rel: join(&job.rel, &crate::rawname::encode(name)),
                name: Some(cname),
                parent_rules: Some(Arc::clone(&level)),
                rules_same,
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
            subs,
            unreadable: false,
            stamps,
            reused,
            kept,
        },
    )
}
