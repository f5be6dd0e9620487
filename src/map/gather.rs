//! Bring the map's facts up to date with the project, reading only files whose version the
//! cache does not know — on every core, most promising first, until a time budget runs out.
//! Files left unparsed still take part through their paths; the next map goes on where this
//! one stopped.
//!
//! A tracked file's version is the blob git's index records for it, looked up by path with
//! no `stat` (at 100,000 files a `stat` of every file costs five times `git ls-files`). Files
//! the index cannot vouch for are known by their stat stamp instead: untracked files, files
//! without text, and files whose text was found to differ from their index blob when read
//! (those have uncommitted changes, and stay stamped while they do). The cost: a tracked file
//! edited in place since the map last read it is taken for its staged version — its paths,
//! definitions and words as staged — until it is staged, committed or read for its text.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};

use super::TrackedFiles;
use super::facts::{Facts, RawFacts};
use super::files::MapFiles;
use super::grep::Needles;
use super::store::{BlobId, StampedFiles, Store};
use super::symbols::Extractor;
use crate::workspace::{Corpus, Stamp, Workspace};

/// Files larger than this are listed by path only (generated code, data, bundles).
pub const MAX_FILE_BYTES: usize = 512 * 1024;

/// Time kept, per project file, for what comes after parsing (about 8 µs a file measured at
/// 100,000 files: ranking, rendering, saving the cache).
const RESERVE_PER_FILE: Duration = Duration::from_micros(8);

/// With fewer files than this to read, a cold map reads them all within its budget: no search
/// first.
const SEARCH_FROM: usize = 2_000;

/// The share of the time budget the search for the request's words may take before parsing.
const SEARCH_SHARE: f32 = 0.4;

/// Read priorities below this are files whose path holds the request's words (the map's
/// priority puts them in the first class, keyed by depth).
const PATH_MATCH_KEYS: u32 = 64;

/// Path-matching files read before the files the search finds: a request naming a module
/// (`ext/node`, `fs`) names where to look, but a common word's matches must not take the
/// whole budget before the search's.
const FRONT_PATHS: usize = 128;

/// Parsed files each parsing thread may have waiting for the thread that stores them.
const WAITING_PER_WORKER: usize = 4;

/// Files longer than this are parsed one at a time, the freed memory of each given back once
/// done: a syntax tree takes many times its file's size, so two large files parsed at once
/// (and kept in their threads' allocator arenas afterwards) would set a cold map's peak.
const PARSE_ALONE_BYTES: usize = 64 * 1024;

/// The blob id of files that are not text or too large: they have no facts.
const NO_FACTS: BlobId = [0; 20];

/// How a gather goes.
pub struct GatherOptions<'a> {
    /// When to stop parsing and rank on what is known.
    pub time_budget: Duration,
    /// Called as files are parsed: (done, to do).
    pub progress: &'a dyn Fn(usize, usize),
    /// Which files to parse first: lower comes sooner.
    pub priority: &'a dyn Fn(&str) -> u32,
    /// git's index, for tracked files' versions (`None`: every file is known by its stamp).
    pub tracked: Option<&'a dyn TrackedFiles>,
    /// The request, whose exact words are searched for in the files to read when there are
    /// too many to parse them all, so the files holding them are parsed first.
    pub request: &'a str,
}

/// The project's files with their facts.
pub struct Gathered<'a> {
    /// The cache, updated.
    pub store: Store,
    /// Every file, in the file list's order, with its facts.
    pub files: MapFiles<'a>,
    /// Files parsed now (not found in the cache).
    pub parsed: usize,
    /// Files that changed but were not parsed within the time budget.
    pub unparsed: usize,
    /// Tracked files whose text differs from their index blob.
    pub uncommitted: HashSet<String>,
    /// Stamped files the cache knew that are gone or known by the index now.
    pub dropped: usize,
}

/// The git blob id of `text`, as `git hash-object` computes it.
pub fn blob_id(text: &[u8]) -> BlobId {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", text.len()).as_bytes());
    h.update(text);
    h.finalize().into()
}

/// A file read and parsed on a worker.
struct Parsed {
    at: usize,
    stamp: Stamp,
    id: BlobId,
    raw: Option<RawFacts>,
}

/// What the cache knows of one corpus file before anything is read.
enum Known {
    /// Its facts (index into the store's blobs) and blob id.
    Blob(u32, BlobId),
    /// Known to have no text, as of its stamp.
    NoText,
    /// To be read.
    Unknown,
}

/// Bring `store` up to date with the project.
/// `corpus` is the project's files as [`Workspace::corpus`] took them.
pub fn gather<'a>(
    ws: &Workspace,
    corpus: &'a Corpus,
    mut store: Store,
    opts: &GatherOptions<'_>,
) -> Gathered<'a> {
    let started = Instant::now();
    let before = store.files.len();
    let mut files = MapFiles::new(corpus);
    let mut todo = Vec::new();
    let mut uncommitted = HashSet::new();
    let (mut seen, mut forget) = (0, Vec::new());
    let mut stamped = stamped_now(ws, corpus, &store.files).into_iter().peekable();
    for (i, f) in corpus.iter().enumerate() {
        let tracked = opts.tracked.and_then(|t| t.blob(f));
        let (entry, now) = stamped
            .next_if(|s| s.at == i)
            .map_or((None, None), |s| (Some(s.entry), s.now));
        let (known, keep) = known(&store, entry, tracked, now);
        seen += usize::from(entry.is_some());
        if entry.is_some() && !keep {
            forget.push(f);
        }
        let id = match known {
            Known::Blob(b, id) => {
                files.set_blob(i, b);
                Some(id)
            }
            Known::NoText => None,
            Known::Unknown => {
                todo.push(i);
                None
            }
        };
        if id.is_some() && tracked.is_some() && id != tracked {
            uncommitted.insert(f.to_string());
        }
    }
    let dropped = forget.len() + before - seen;
    forget_stamped(&mut store, corpus, &forget, seen < before);
    let todo = read_order(ws, &files, &todo, opts, started);
    // What follows parsing (ranking, rendering, saving the cache) grows with the project:
    // parsing stops early enough that the whole map keeps to the budget.
    let reserve = RESERVE_PER_FILE.saturating_mul(u32::try_from(files.len()).unwrap_or(u32::MAX));
    let deadline = started + opts.time_budget.saturating_sub(reserve);
    let total = todo.len();
    let mut parsed = 0;
    parse_all(ws, corpus, &todo, deadline, |p| {
        parsed += 1;
        if parsed % 64 == 0 || parsed == total {
            (opts.progress)(parsed, total);
        }
        let path = files.path(p.at);
        let tracked = opts.tracked.and_then(|t| t.blob(path));
        let Some(raw) = p.raw else {
            let none = store.add_blob(NO_FACTS, Facts::default());
            store.files.insert(path.to_string(), (p.stamp, none));
            return;
        };
        let blob = match store.blob_index(&p.id) {
            Some(b) => b,
            None => {
                let (facts, words) = raw.split(&mut store.names);
                store.add_parsed(p.id, facts, words)
            }
        };
        if tracked != Some(p.id) {
            // Untracked, or changed since staged: known by its stamp until that changes.
            store.files.insert(path.to_string(), (p.stamp, blob));
            if tracked.is_some() {
                uncommitted.insert(path.to_string());
            }
        }
        files.set_blob(p.at, blob);
    });
    Gathered {
        store,
        files,
        parsed,
        unparsed: total - parsed,
        uncommitted,
        dropped,
    }
}

/// The order to read the `todo` files in: by their priority, then, when there are too many to
/// parse them all, the files holding the request's words (the rarest first) moved ahead of all
/// but the first [`FRONT_PATHS`] files whose paths hold them, and the files found to hold none
/// moved last.
fn read_order(
    ws: &Workspace,
    files: &MapFiles<'_>,
    todo: &[usize],
    opts: &GatherOptions<'_>,
    started: Instant,
) -> Vec<usize> {
    // The key splits and stems a path: worked out once a file, not once a comparison.
    let mut keyed: Vec<(u32, usize)> = todo
        .iter()
        .map(|&i| ((opts.priority)(files.path(i)), i))
        .collect();
    keyed.sort_unstable();
    if keyed.len() >= SEARCH_FROM
        && let Some(needles) = Needles::of(opts.request)
    {
        let deadline = started + opts.time_budget.mul_f32(SEARCH_SHARE);
        let mut rest = keyed.split_off(paths_first(&keyed));
        first_with_words(ws, files, &mut rest, &needles, deadline);
        keyed.append(&mut rest);
    }
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// How many of `keyed` (sorted by key) stay ahead of the search's files: the path-matching
/// ones, at most [`FRONT_PATHS`].
fn paths_first(keyed: &[(u32, usize)]) -> usize {
    keyed
        .iter()
        .take(FRONT_PATHS)
        .take_while(|&&(key, _)| key < PATH_MATCH_KEYS)
        .count()
}

/// Reorder `keyed` (files to read, in the order of their keys) by what a search of their
/// text for `needles` finds: every file holding a needle first, the most telling first (tests,
/// docs and files of no known language counting half); then the files the search had no time
/// for, in their keys' order; last the files searched and found to hold none of the request's
/// words. A file without them scores nothing on the request's words once parsed, so the
/// budget goes to files that can, however far down the keys put them.
fn first_with_words(
    ws: &Workspace,
    files: &MapFiles<'_>,
    keyed: &mut Vec<(u32, usize)>,
    needles: &Needles,
    deadline: Instant,
) {
    let paths: Vec<&str> = keyed.iter().map(|&(_, i)| files.path(i)).collect();
    let found = super::grep::search(ws, &paths, needles, MAX_FILE_BYTES, deadline);
    let scores = found.scores(needles);
    let order = by_words(&paths, &scores, found.searched);
    *keyed = order.into_iter().map(|at| keyed[at]).collect();
}

/// The order of `paths` (places in a list sorted by key): those with a score, best first
/// (tests, docs and files of no known language counting half, vendored code as the ranking
/// counts it); then those past the first
/// `searched`, which the search did not reach, in list order; then the rest, searched and
/// found to hold nothing.
fn by_words(paths: &[&str], scores: &HashMap<usize, f32>, searched: usize) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = scores
        .iter()
        .filter(|&(&at, &score)| at < paths.len() && score > 0.0)
        .map(|(&at, &score)| {
            let path = paths[at];
            let minor = super::paths::is_test_path(path)
                || super::paths::is_doc_path(path)
                || super::symbols::Lang::from_path(path).is_none();
            let vendored = super::paths::is_vendored_path(path);
            let score = if minor { score / 2.0 } else { score };
            (
                if vendored {
                    score * super::rank::VENDORED_DOWN
                } else {
                    score
                },
                at,
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut ahead = vec![false; paths.len()];
    for &(_, at) in &scored {
        ahead[at] = true;
    }
    let searched = searched.min(paths.len());
    let unreached = (searched..paths.len()).filter(|&at| !ahead[at]);
    let empty = (0..searched).filter(|&at| !ahead[at]);
    scored
        .iter()
        .map(|&(_, at)| at)
        .chain(unreached)
        .chain(empty)
        .collect()
}

/// A corpus file the cache knows by its stamp.
struct Stamped {
    /// Its place in the corpus.
    at: usize,
    /// The cache's entry: the stamp when read, and its blob.
    entry: (Stamp, u32),
    /// Its stamp now (`None`: gone or refused).
    now: Option<Stamp>,
}

/// The files the cache knows by their stamp, with their stamps now, in corpus order: each
/// path looked up once, and none when the cache knows no file by its stamp (a committed
/// project), then the stamps taken in one pass folder by folder.
fn stamped_now(ws: &Workspace, corpus: &Corpus, stamped: &StampedFiles) -> Vec<Stamped> {
    if stamped.is_empty() {
        return Vec::new();
    }
    let found: Vec<(usize, &str, (Stamp, u32))> = corpus
        .iter()
        .enumerate()
        .filter_map(|(at, f)| stamped.get(f).map(|e| (at, f, *e)))
        .collect();
    let paths: Vec<&str> = found.iter().map(|(_, f, _)| *f).collect();
    let stamps = ws.stamps_of(&paths);
    found
        .into_iter()
        .zip(stamps)
        .map(|((at, _, entry), now)| Stamped { at, entry, now })
        .collect()
}

/// Drop the stamped entries of `forget`, and (`gone`) those of files no longer in the corpus.
fn forget_stamped(store: &mut Store, corpus: &Corpus, forget: &[&str], gone: bool) {
    for f in forget {
        store.files.remove(*f);
    }
    if gone {
        let live: HashSet<&str> = corpus.iter().collect();
        store.files.retain(|p, _| live.contains(p.as_str()));
    }
}

/// What the cache knows of a file (`entry`: its stamped entry, if any; `tracked`: its index
/// blob; `now`: its stamp, taken only when it has a stamped entry), and whether to keep its
/// stamped entry.
fn known(
    store: &Store,
    entry: Option<(Stamp, u32)>,
    tracked: Option<BlobId>,
    now: Option<Stamp>,
) -> (Known, bool) {
    if let Some((stamp, b)) = entry {
        let Some(id) = store.id(b) else {
            return (Known::Unknown, false);
        };
        if Some(id) == tracked {
            // Staged or committed as read: the index vouches for it now.
            return (Known::Blob(b, id), false);
        }
        if now != Some(stamp) {
            return (Known::Unknown, false);
        }
        let known = if id == NO_FACTS {
            Known::NoText
        } else {
            Known::Blob(b, id)
        };
        return (known, true);
    }
    match tracked.and_then(|id| Some((store.blob_index(&id)?, id))) {
        Some((b, id)) => (Known::Blob(b, id), false),
        None => (Known::Unknown, false),
    }
}

/// Read and parse the `todo` files (places in `corpus`) on every core until `deadline`,
/// handing each result to `take` on this thread (which owns the store). Workers wait when a
/// few results are waiting for `take`: parsed files must not pile up in memory while this
/// thread is held up (it shares the cores with the workers).
fn parse_all(
    ws: &Workspace,
    corpus: &Corpus,
    todo: &[usize],
    deadline: Instant,
    mut take: impl FnMut(Parsed),
) {
    if todo.is_empty() {
        return;
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(1, 8)
        .min(todo.len());
    let next = AtomicUsize::new(0);
    let alone = Mutex::new(());
    let (tx, rx) = mpsc::sync_channel::<Parsed>(threads * WAITING_PER_WORKER);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, alone) = (&next, &alone);
            let spawned = std::thread::Builder::new()
                .name("pai-map".into())
                .spawn_scoped(s, move || {
                    worker(ws, corpus, todo, (next, alone), deadline, &tx);
                });
            if spawned.is_err() {
                break;
            }
        }
        drop(tx);
        for p in rx {
            take(p);
        }
    });
}

/// Take files off the shared counter until none are left or the time is up.
fn worker(
    ws: &Workspace,
    corpus: &Corpus,
    todo: &[usize],
    (next, alone): (&AtomicUsize, &Mutex<()>),
    deadline: Instant,
    tx: &mpsc::SyncSender<Parsed>,
) {
    let mut extractor = Extractor::new();
    while Instant::now() < deadline {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&at) = todo.get(k) else {
            return;
        };
        let path = corpus.get(at);
        let parsed = match ws.read_stamped(path, MAX_FILE_BYTES) {
            Some((text, stamp)) => Parsed {
                at,
                stamp,
                id: blob_id(text.as_bytes()),
                raw: Some(read_facts(path, &text, &mut extractor, alone)),
            },
            None => {
                let Some(stamp) = ws.stamp_of(path) else {
                    continue;
                };
                Parsed {
                    at,
                    stamp,
                    id: NO_FACTS,
                    raw: None,
                }
            }
        };
        if tx.send(parsed).is_err() {
            return;
        }
    }
}

/// The facts of `text`, read alone (holding `alone`) when it is longer than
/// [`PARSE_ALONE_BYTES`], and the memory freed meanwhile given back to the system.
fn read_facts(path: &str, text: &str, extractor: &mut Extractor, alone: &Mutex<()>) -> RawFacts {
    if text.len() <= PARSE_ALONE_BYTES {
        return RawFacts::read(path, text, extractor);
    }
    // A poisoned lock only means another worker panicked mid-parse: the guard guards nothing.
    let _guard = alone
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let raw = RawFacts::read(path, text, extractor);
    crate::heap::release_freed();
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_matching_files_stay_ahead_of_the_search_but_only_a_few() {
        // Keys as the map's priority gives them: path matches first, by depth.
        let keyed = [(1, 10), (2, 11), (130, 12), (131, 13)];
        assert_eq!(paths_first(&keyed), 2);
        assert_eq!(paths_first(&[(130, 0), (131, 1)]), 0, "no path matches");
        let many: Vec<(u32, usize)> = (0..1_000).map(|i| (3, i)).collect();
        assert_eq!(
            paths_first(&many),
            FRONT_PATHS,
            "a common word's matches leave room for the search's"
        );
    }

    #[test]
    fn files_holding_the_words_come_first_then_unsearched_then_files_without_them() {
        let paths = [
            "src/a.rs",      // searched, holds nothing
            "src/b.rs",      // holds a common word
            "docs/guide.md", // holds the rarest word, but is a doc
            "src/c.rs",      // holds the rarest word
            "src/d.rs",      // searched, holds nothing
            "src/e.rs",      // not reached by the search
            "src/f.rs",      // not reached by the search
        ];
        let scores = HashMap::from([(1, 1.0), (2, 6.0), (3, 5.0)]);
        let order = by_words(&paths, &scores, 5);
        assert_eq!(order, [3, 2, 1, 5, 6, 0, 4]);
        // Everything searched: the files without the words come last, in their order.
        assert_eq!(by_words(&paths, &scores, 7), [3, 2, 1, 0, 4, 5, 6]);
        // No score at all: the keys' order stands.
        assert_eq!(by_words(&paths, &HashMap::new(), 0), [0, 1, 2, 3, 4, 5, 6]);
        // Vendored code holding the rarest word comes after the project's own holding less.
        let paths = ["vendor/lib/x.rs", "src/y.rs", "src/z.rs"];
        let scores = HashMap::from([(0, 6.0), (1, 2.0)]);
        assert_eq!(by_words(&paths, &scores, 3), [1, 0, 2]);
    }

    #[test]
    fn long_files_are_parsed_one_at_a_time() {
        let alone = Mutex::new(());
        let short = "def f():\n    return 1\n";
        let long = short.repeat(PARSE_ALONE_BYTES / short.len() + 1);
        let held = alone.lock().unwrap();
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let alone = &alone;
            let (short_tx, long_tx) = (tx.clone(), tx);
            s.spawn(move || {
                read_facts("a.py", short, &mut Extractor::new(), alone);
                short_tx.send("short").unwrap();
            });
            assert_eq!(rx.recv().unwrap(), "short", "a short file does not wait");
            let long = &long;
            s.spawn(move || {
                read_facts("b.py", long, &mut Extractor::new(), alone);
                long_tx.send("long").unwrap();
            });
            let waited = rx.recv_timeout(Duration::from_millis(200));
            assert!(
                waited.is_err(),
                "a long file waits for the one being parsed"
            );
            drop(held);
            assert_eq!(rx.recv().unwrap(), "long");
        });
    }
}
