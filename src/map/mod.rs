//! The repository map: what the first call of a turn shows of a project too big to list
//! whole. Every file is ranked for the request (`rank`) from its words, paths, definitions
//! and references (`symbols`, parsed with tree-sitter; `terms`), and the best are rendered
//! within a budget (`render`): their text, their key definitions, more paths. What the map
//! learns of each file version is cached outside the project (`store`) and brought up to
//! date from the files' stat data (`gather`), so a warm map reads only what changed.

pub mod excerpt;
pub mod facts;
pub mod files;
pub mod gather;
#[cfg(test)]
mod golden;
pub mod grep;
pub mod named;
pub mod order;
pub mod paths;
pub mod rank;
pub mod render;
pub mod score;
pub mod store;
pub mod symbols;
pub mod symfile;
pub mod terms;
pub mod words;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::workspace::{Corpus, Workspace};
use gather::{GatherOptions, MAX_FILE_BYTES};
use rank::Signals;
use render::Shown;
use store::Recent;
use terms::Query;

/// Default time a cold map may parse before ranking on what it has.
pub const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(4);
/// Clock ticks a second in `/proc` (`USER_HZ`, fixed for the kernel's interface).
const USER_HZ: f64 = 100.0;

/// When this process started, as the kernel tells it (now, when `/proc` cannot).
pub fn process_start() -> Instant {
    let now = Instant::now();
    process_age()
        .and_then(|age| now.checked_sub(age))
        .unwrap_or(now)
}

/// How long ago this process started: the time since boot less the process's start time
/// since boot (the 22nd field of `/proc/self/stat`, counted after the command's closing
/// parenthesis since the command may hold spaces and parentheses).
fn process_age() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields = stat.get(stat.rfind(')')? + 1..)?;
    let ticks: u64 = fields.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let age = uptime - ticks as f64 / USER_HZ;
    (age.is_finite() && age >= 0.0).then(|| Duration::from_secs_f64(age))
}

/// What the user has been doing, read from git by the caller (the map does not open the
/// repository itself; history does).
pub struct Activity<'a> {
    /// Files the last plan changed.
    pub last_plan: &'a [String],
    /// The HEAD commit now (`None` outside git).
    pub head: Option<String>,
    /// The files recent commits changed, with counts; called only when HEAD moved since the
    /// cache read them (on a thread of its own, while the files are gathered).
    pub recent: &'a (dyn Fn() -> Vec<(String, u32)> + Sync),
    /// git's index, where each tracked file's blob is looked up (read on a thread of its own
    /// while the cache loads; `None` outside git).
    pub index: &'a (dyn Fn() -> Option<Box<dyn TrackedFiles>> + Sync),
}

/// The blob git's index records for each tracked file: the version the map takes a tracked
/// file to be, without a `stat` of every file. A file edited since it was staged is seen as
/// its staged version until the map has reason to read it (see `gather`).
pub trait TrackedFiles: Send + Sync {
    /// The raw blob id of the regular file at `path`, when git tracks it.
    fn blob(&self, path: &str) -> Option<store::BlobId>;
}

/// How to build a map.
pub struct MapOptions<'a> {
    /// Characters the map (text and listing together) may take.
    pub budget_chars: usize,
    /// How long parsing may take before ranking on what is known.
    pub time_budget: Duration,
    /// Progress of parsing: (done, to do).
    pub progress: &'a dyn Fn(usize, usize),
    /// The user's cache directory (`dirs::cache_dir()`), where the map keeps what it learned
    /// (`None`: no cache, every map is cold).
    pub cache: Option<std::path::PathBuf>,
}

/// Ranked files a report carries with their reasons.
const SCORED_SHOWN: usize = 200;

/// One ranked file, for `pai map`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScoredFile {
    /// Project-relative path.
    pub path: String,
    /// Score.
    pub score: f32,
    /// Why.
    pub why: rank::Why,
}

/// A built map.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MapReport {
    /// The section for the first call.
    pub text: String,
    /// What it shows.
    pub shown: Shown,
    /// The best files (at most 200 with a score above zero), best first.
    pub ranked: Vec<ScoredFile>,
    /// Files in the project.
    pub files: usize,
    /// Files parsed now (the rest came from the cache).
    pub parsed: usize,
    /// Files that changed but were not parsed within the time budget.
    pub unparsed: usize,
    /// Files the request names.
    pub named: Vec<String>,
    /// How long it took.
    #[serde(serialize_with = "millis")]
    pub elapsed: Duration,
    /// Milliseconds of each stage: load (the cache), gather (walk, stat, parse), signals
    /// (git activity), rank, render, save (handing the cache to the thread that writes it).
    pub stages: Vec<(&'static str, f64)>,
}

/// Time per stage of a map.
struct Stages {
    last: Instant,
    stages: Vec<(&'static str, f64)>,
}

impl Stages {
    fn new(started: Instant) -> Self {
        Stages {
            last: started,
            stages: Vec::new(),
        }
    }

    fn mark(&mut self, stage: &'static str) {
        let now = Instant::now();
        let ms = now.duration_since(self.last).as_secs_f64() * 1000.0;
        self.stages.push((stage, ms));
        self.last = now;
    }
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Build the map of the project in `ws` for `request`; `corpus` is its files as
/// [`Workspace::corpus`] took them (the caller may already have needed them).
pub fn build(
    ws: &Workspace,
    corpus: &Corpus,
    request: &str,
    activity: &Activity<'_>,
    opts: &MapOptions<'_>,
) -> MapReport {
    let query = Query::parse(request);
    // What the paths alone tell (the request's words in them, tests and docs, the files the
    // request names) is worked out on a thread of its own, while the cache loads, git's index
    // is read and the files' facts are gathered.
    let told = || Some(PathsTold::of(corpus, request, &query));
    std::thread::scope(|s| {
        let index = Background::start(s, "pai-map-git", activity.index);
        let paths = Background::start(s, "pai-map-paths", &told);
        let helpers = Helpers { index, paths };
        build_with(ws, corpus, request, &query, activity, opts, helpers)
    })
}

/// What a map's helper threads work out while it loads and gathers.
struct Helpers<'scope, 'c> {
    /// git's index.
    index: Background<'scope, Option<Box<dyn TrackedFiles>>>,
    /// What the paths tell.
    paths: Background<'scope, Option<PathsTold<'c>>>,
}

/// What the paths alone tell a map.
struct PathsTold<'c> {
    /// Files the request names.
    named: Vec<String>,
    /// For the ranking.
    facts: paths::PathFacts<'c>,
}

impl<'c> PathsTold<'c> {
    fn of(corpus: &'c Corpus, request: &str, query: &Query) -> Self {
        let pairs = named::Pairs::of(request);
        let facts = paths::PathFacts::of(corpus, query, Some(&pairs));
        PathsTold {
            // Only paths whose names pass the pairs' test can be named.
            named: named::named_in(request, facts.may_be_named.iter().copied()),
            facts,
        }
    }
}

/// A value computed on a scoped thread (or here, when no thread can be started).
enum Background<'scope, T> {
    Running(std::thread::ScopedJoinHandle<'scope, T>),
    Later(&'scope (dyn Fn() -> T + Sync)),
}

impl<'scope, T: Send + Default> Background<'scope, T> {
    fn start<'env>(
        s: &'scope std::thread::Scope<'scope, 'env>,
        name: &str,
        f: &'scope (dyn Fn() -> T + Sync),
    ) -> Self {
        match std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, f)
        {
            Ok(handle) => Background::Running(handle),
            Err(_) => Background::Later(f),
        }
    }

    /// The value (the default when its thread panicked).
    fn value(self) -> T {
        match self {
            Background::Running(handle) => handle.join().unwrap_or_default(),
            Background::Later(f) => f(),
        }
    }
}

fn build_with<'c>(
    ws: &Workspace,
    corpus: &'c Corpus,
    request: &str,
    query: &Query,
    activity: &Activity<'_>,
    opts: &MapOptions<'_>,
    helpers: Helpers<'_, 'c>,
) -> MapReport {
    let started = Instant::now();
    let root = ws.root().to_path_buf();
    let (location, cached) = load_cache(opts, &root, corpus);
    let wanted: HashSet<&str> = query.terms.iter().map(String::as_str).collect();
    let priority = |path: &str| parse_priority(path, &wanted);
    let stale = recent_stale(&cached, activity);
    // Recent commits are read (when HEAD moved) while the files are gathered, not after: git
    // maps its pack files to read them, and that memory is let go before parsing has grown
    // its own, instead of adding to it at the end.
    let ((mut g, mut clock), fresh) = std::thread::scope(|s| {
        let fresh = stale.then(|| Background::start(s, "pai-map-recent", activity.recent));
        let index = helpers.index.value();
        let mut clock = Stages::new(started);
        clock.mark("load");
        let g = gather::gather(
            ws,
            corpus,
            cached,
            &GatherOptions {
                // The budget is the whole map's: what loading the cache and git's index took
                // comes out of the time left to parse.
                time_budget: opts.time_budget.saturating_sub(started.elapsed()),
                progress: opts.progress,
                priority: &priority,
                tracked: index.as_deref(),
                request,
            },
        );
        drop(index);
        ((g, clock), fresh.map(Background::value))
    });
    clock.mark("gather");
    let PathsTold {
        named,
        facts: paths,
    } = helpers
        .paths
        .value()
        .unwrap_or_else(|| PathsTold::of(corpus, request, query));
    let head_before = g.store.recent.as_ref().map(|r| r.head.clone());
    let signals = Signals {
        named: named.clone(),
        last_plan: activity.last_plan.to_vec(),
        uncommitted: std::mem::take(&mut g.uncommitted),
        recent: recent(&mut g.store, activity, fresh),
    };
    clock.mark("signals");
    let hits = g.store.words_of(query);
    let view = g.store.view(hits);
    let ranked = rank::rank(&g.files, &view, &g.store.names, query, &signals, paths);
    let text_of = |p: &str| ws.read_stamped(p, MAX_FILE_BYTES).map(|(t, _)| t);
    clock.mark("rank");
    let (text, shown) = render::render(&render::Input {
        files: &g.files,
        ranked: &ranked,
        blobs: &view,
        names: &g.store.names,
        query,
        budget: opts.budget_chars,
        text_of: &text_of,
    });
    clock.mark("render");
    drop(view);
    let ranked = best_scored(ranked, &g.files);
    let files = g.files.len();
    let needed = g.parsed > 0 || g.dropped > 0 || head_before != activity.head;
    if let Some(l) = location
        && (needed || g.store.scattered())
    {
        let live = g.files.blobs().flatten().collect();
        store::save_in_background(l, root, g.store, live, needed);
    }
    clock.mark("save");
    MapReport {
        text,
        shown,
        ranked,
        files,
        parsed: g.parsed,
        unparsed: g.unparsed,
        named,
        elapsed: started.elapsed(),
        stages: clock.stages,
    }
}

/// Where the project's cache is, and what it holds (empty when cold).
fn load_cache(
    opts: &MapOptions<'_>,
    root: &std::path::Path,
    corpus: &Corpus,
) -> (Option<std::path::PathBuf>, store::Store) {
    let location = opts
        .cache
        .as_deref()
        .and_then(|base| store::location(base, root));
    let cached = location
        .as_deref()
        .map(|l| store::load(l, root))
        .unwrap_or_default();
    if cached.is_empty() {
        // Cold: nearly every file will be parsed. A warm map parses few files or none, and
        // compiling a language it does not need would cost more than the rest of the map.
        prepare_languages(corpus);
    }
    (location, cached)
}

/// The best files with a score above zero, with their reasons, for the report.
fn best_scored(ranked: rank::Ranking, files: &files::MapFiles) -> Vec<ScoredFile> {
    ranked
        .scored
        .into_iter()
        .take(SCORED_SHOWN)
        .filter(|r| r.score > 0.0)
        .map(|r| ScoredFile {
            path: files.path(r.file as usize).to_string(),
            score: r.score,
            why: r.why.map(|w| *w).unwrap_or_default(),
        })
        .collect()
}

/// Start compiling the tags configurations of the project's main languages on a thread of
/// their own, for a cold map, while git's index is read: compiling one costs about as much as
/// the rest of a warm map. Judged from a sample of the paths; a language needed but not
/// guessed (or by a warm map) is compiled when first parsed.
fn prepare_languages(corpus: &Corpus) {
    const SAMPLE_EVERY: usize = 16;
    const SHARE: usize = 10;
    let sample: Vec<String> = corpus
        .iter()
        .step_by(SAMPLE_EVERY)
        .map(str::to_string)
        .collect();
    let _ = std::thread::Builder::new()
        .name("pai-map-langs".into())
        .spawn(move || {
            let mut counts: HashMap<symbols::Lang, usize> = HashMap::new();
            for path in &sample {
                if let Some(lang) = symbols::Lang::from_path(path) {
                    *counts.entry(lang).or_default() += 1;
                }
            }
            let mut main: Vec<(symbols::Lang, usize)> = counts
                .into_iter()
                .filter(|(_, n)| n * SHARE >= sample.len())
                .collect();
            main.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            for (lang, _) in main.into_iter().take(2) {
                lang.prepare();
            }
        });
}

/// Which files a cold map parses first (lower is sooner): those whose path has the request's
/// words, then source, then other text, then tests and docs, vendored code last; shallow
/// before deep.
fn parse_priority(path: &str, wanted: &HashSet<&str>) -> u32 {
    let hits = terms::term_set(path)
        .iter()
        .any(|t| wanted.contains(t.as_str()));
    let source = symbols::Lang::from_path(path).is_some();
    let vendored = paths::is_vendored_path(path);
    let minor = vendored || paths::is_test_path(path) || paths::is_doc_path(path);
    let depth = path.matches('/').count() as u32;
    let class = match (hits, source, minor) {
        (true, _, false) => 0,
        (true, _, true) => 1,
        (false, _, _) if vendored => 5,
        (false, true, false) => 2,
        (false, true, true) => 4,
        (false, false, _) => 3,
    };
    class * 64 + depth.min(63)
}

/// Whether the recent commits the cache holds were read at another HEAD (or none were).
fn recent_stale(cached: &store::Store, activity: &Activity<'_>) -> bool {
    activity.head.is_some() && cached.recent.as_ref().map(|r| &r.head) != activity.head.as_ref()
}

/// Recently changed files: `fresh` when they were read for this map, else from the cache
/// when HEAD has not moved.
fn recent(
    store: &mut store::Store,
    activity: &Activity<'_>,
    fresh: Option<Vec<(String, u32)>>,
) -> HashMap<String, u32> {
    let Some(head) = &activity.head else {
        return HashMap::new();
    };
    let known = store.recent.as_ref().is_some_and(|r| &r.head == head);
    if !known || fresh.is_some() {
        store.recent = Some(Recent {
            head: head.clone(),
            counts: fresh.unwrap_or_else(|| (activity.recent)()),
        });
    }
    store
        .recent
        .as_ref()
        .map(|r| r.counts.iter().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::WorkspaceConfig;
    use std::fs;
    use std::path::Path;

    #[test]
    fn a_cold_map_parses_vendored_code_last_unless_its_path_has_the_requests_words() {
        let wanted: HashSet<&str> = ["invoic"].into();
        let order = |p: &str| parse_priority(p, &wanted);
        let own_source = order("src/deep/er/billing.py");
        let own_test = order("tests/test_billing.py");
        let own_text = order("setup.cfg");
        let vendored = order("vendor/lib/billing.py");
        assert!(vendored > own_source && vendored > own_test && vendored > own_text);
        assert!(
            order("vendor/lib/invoice.py") < own_source,
            "a vendored file the request's words name is read early, as a test would be"
        );
    }

    /// A project of 300 filler modules and one file about invoices and tax.
    fn project(dir: &Path) {
        for i in 0..300 {
            let d = dir.join(format!("pkg/module_{:02}", i / 20));
            fs::create_dir_all(&d).unwrap();
            fs::write(
                d.join(format!("helper_{i:03}.py")),
                format!("def helper_{i}(value):\n    return value + {i}\n"),
            )
            .unwrap();
        }
        fs::create_dir_all(dir.join("src/billing")).unwrap();
        fs::write(
            dir.join("src/billing/invoice.py"),
            "class Invoice:\n    def compute_tax(self, rate):\n        return self.total * rate\n",
        )
        .unwrap();
    }

    fn none() -> Vec<(String, u32)> {
        Vec::new()
    }

    fn no_index() -> Option<Box<dyn TrackedFiles>> {
        None
    }

    fn build_in(dir: &Path, cache: Option<&Path>, request: &str) -> MapReport {
        build_indexed(dir, cache, request, &no_index)
    }

    /// A stand-in for git's index: path to blob id.
    struct FakeIndex(HashMap<String, store::BlobId>);

    impl TrackedFiles for FakeIndex {
        fn blob(&self, path: &str) -> Option<store::BlobId> {
            self.0.get(path).copied()
        }
    }

    /// An index that stages every file of `dir` as it is now.
    fn staged(dir: &Path) -> HashMap<String, store::BlobId> {
        let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
        ws.corpus()
            .iter()
            .map(|f| {
                let id = gather::blob_id(&fs::read(dir.join(f)).unwrap());
                (f.to_string(), id)
            })
            .collect()
    }

    fn build_indexed(
        dir: &Path,
        cache: Option<&Path>,
        request: &str,
        index: &(dyn Fn() -> Option<Box<dyn TrackedFiles>> + Sync),
    ) -> MapReport {
        let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
        let activity = Activity {
            last_plan: &[],
            head: None,
            recent: &none,
            index,
        };
        build(
            &ws,
            &ws.corpus(),
            request,
            &activity,
            &MapOptions {
                budget_chars: 12_000,
                time_budget: Duration::from_secs(30),
                progress: &|_, _| {},
                cache: cache.map(Path::to_path_buf),
            },
        )
    }

    #[test]
    fn the_file_a_request_is_about_ranks_first_with_its_text() {
        let tmp = tempfile::tempdir().unwrap();
        project(tmp.path());
        let r = build_in(
            tmp.path(),
            None,
            "the tax on invoices is computed with the wrong rate",
        );
        assert_eq!(
            r.ranked[0].path,
            "src/billing/invoice.py",
            "{:?}",
            &r.ranked[..3]
        );
        assert!(
            r.text.contains("def compute_tax(self, rate):"),
            "{}",
            r.text
        );
        assert_eq!(r.files, 301);
    }

    #[test]
    fn a_warm_map_reads_only_the_files_that_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        project(tmp.path());
        let cold = build_in(tmp.path(), Some(cache.path()), "invoice tax");
        assert_eq!(cold.parsed, 301);
        let warm = build_in(tmp.path(), Some(cache.path()), "invoice tax");
        assert_eq!(warm.parsed, 0);
        assert_eq!(warm.ranked[0].path, cold.ranked[0].path);
        fs::write(
            tmp.path().join("pkg/module_00/helper_000.py"),
            "def changed():\n    pass\n",
        )
        .unwrap();
        let after = build_in(tmp.path(), Some(cache.path()), "invoice tax");
        assert_eq!(after.parsed, 1);
    }

    #[test]
    fn tracked_files_are_known_by_their_index_blob() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        project(tmp.path());
        let index = std::sync::Mutex::new(staged(tmp.path()));
        let read = || {
            let table = index.lock().unwrap().clone();
            Some(Box::new(FakeIndex(table)) as Box<dyn TrackedFiles>)
        };
        let cold = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!(cold.parsed, 301);
        let warm = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!(warm.parsed, 0);
        // A new version, staged: the index names a blob the cache does not know.
        let changed = "pkg/module_00/helper_000.py";
        fs::write(
            tmp.path().join(changed),
            "def reconcile_ledger():\n    pass\n",
        )
        .unwrap();
        *index.lock().unwrap() = staged(tmp.path());
        let after = build_indexed(tmp.path(), Some(cache.path()), "reconcile ledger", &read);
        assert_eq!(after.parsed, 1);
        assert_eq!(after.ranked[0].path, changed);
        assert!(
            after.text.contains("def reconcile_ledger():"),
            "{}",
            after.text
        );
        assert!(
            !after.ranked[0].why.signals.contains(&"uncommitted changes"),
            "{:?}",
            after.ranked[0].why
        );
    }

    #[test]
    fn a_file_unlike_its_index_blob_is_uncommitted_and_known_by_its_stamp() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        project(tmp.path());
        let edited = "src/billing/invoice.py";
        let mut table = staged(tmp.path());
        // Staged before its last edit: the index holds another version.
        table.insert(
            edited.to_string(),
            gather::blob_id(b"class Invoice:\n    pass\n"),
        );
        let table = std::sync::Mutex::new(table);
        let read = || {
            let t = table.lock().unwrap().clone();
            Some(Box::new(FakeIndex(t)) as Box<dyn TrackedFiles>)
        };
        let uncommitted = |r: &MapReport| {
            r.ranked
                .iter()
                .filter(|f| f.why.signals.contains(&"uncommitted changes"))
                .map(|f| f.path.clone())
                .collect::<Vec<_>>()
        };
        let cold = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!(cold.parsed, 301);
        assert_eq!(uncommitted(&cold), [edited]);
        assert!(
            cold.text.contains("def compute_tax(self, rate):"),
            "{}",
            cold.text
        );
        // Known by its stamp now: not read again, still uncommitted.
        let warm = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!(
            (warm.parsed, uncommitted(&warm)),
            (0, vec![edited.to_string()])
        );
        // Edited again: its stamp changed, so it is read again.
        fs::write(
            tmp.path().join(edited),
            "class Invoice:\n    def compute_tax(self, rate, region):\n        return 0\n",
        )
        .unwrap();
        let again = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!(again.parsed, 1);
        assert!(again.text.contains("rate, region"), "{}", again.text);
        // Staged as it is: the index vouches for it, nothing is read, nothing uncommitted.
        *table.lock().unwrap() = staged(tmp.path());
        let staged_now = build_indexed(tmp.path(), Some(cache.path()), "invoice tax", &read);
        assert_eq!((staged_now.parsed, uncommitted(&staged_now)), (0, vec![]));
    }

    #[test]
    fn recent_commits_are_read_when_head_moved_and_count_in_the_ranking() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        project(tmp.path());
        let ws = Workspace::open(tmp.path(), WorkspaceConfig::default()).unwrap();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let recent = || {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            vec![("pkg/module_03/helper_070.py".to_string(), 3)]
        };
        let map = |head: &str| {
            let activity = Activity {
                last_plan: &[],
                head: Some(head.to_string()),
                recent: &recent,
                index: &no_index,
            };
            let r = build(
                &ws,
                &ws.corpus(),
                "helper value",
                &activity,
                &MapOptions {
                    budget_chars: 12_000,
                    time_budget: Duration::from_secs(30),
                    progress: &|_, _| {},
                    cache: Some(cache.path().to_path_buf()),
                },
            );
            store::wait_for_save();
            r
        };
        let first = map("aaaa");
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        let recent_file = |r: &MapReport| {
            r.ranked
                .iter()
                .find(|f| f.path == "pkg/module_03/helper_070.py")
                .map(|f| f.why.signals.clone())
        };
        assert!(
            recent_file(&first).is_some_and(|s| s.iter().any(|w| w.contains("recent"))),
            "{:?}",
            recent_file(&first)
        );
        let again = map("aaaa");
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::Relaxed),
            1,
            "kept in the cache"
        );
        assert_eq!(recent_file(&again), recent_file(&first));
        map("bbbb");
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "HEAD moved"
        );
    }

    #[test]
    fn the_process_started_before_now_and_not_long_ago() {
        std::thread::sleep(Duration::from_millis(30));
        let age = process_age().expect("/proc tells a process's age");
        assert!(age < Duration::from_secs(24 * 3600), "{age:?}");
        let start = process_start();
        assert!(start <= Instant::now());
        assert!(
            start.elapsed() >= Duration::from_millis(20),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_corrupt_cache_is_ignored_and_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        project(tmp.path());
        let root = fs::canonicalize(tmp.path()).unwrap();
        let loc = store::location(cache.path(), &root).unwrap();
        fs::create_dir_all(loc.parent().unwrap()).unwrap();
        fs::write(&loc, b"\x01\x02garbage that is no cache").unwrap();
        let r = build_in(tmp.path(), Some(cache.path()), "invoice tax");
        assert_eq!(r.parsed, 301);
        assert_eq!(r.ranked[0].path, "src/billing/invoice.py");
        let again = build_in(tmp.path(), Some(cache.path()), "invoice tax");
        assert_eq!(again.parsed, 0, "the rebuilt cache is used");
    }

    #[test]
    fn a_cache_planted_inside_the_project_is_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        project(tmp.path());
        let root = fs::canonicalize(tmp.path()).unwrap();
        // The "cache directory" is inside the project (pai started in the home directory): a
        // cache found there, claiming `invoice.py` defines `forged_symbol`, must not be used.
        let base = root.join(".cache");
        let ws = Workspace::open(&root, WorkspaceConfig::default()).unwrap();
        let mut planted = store::Store::default();
        let forged = facts::RawFacts::read(
            "x.py",
            "def forged_symbol():\n    pass\n",
            &mut symbols::Extractor::new(),
        )
        .intern(&mut planted.names);
        let blob = planted.add_blob([7; 20], forged);
        for f in ws.corpus().iter() {
            let stamp = ws.stamp_of(f).unwrap();
            planted.files.insert(f.to_string(), (stamp, blob));
        }
        let loc = base.join("pai/map").join(store::file_name(&root));
        fs::create_dir_all(loc.parent().unwrap()).unwrap();
        store::save(&loc, &root, &mut planted).unwrap();
        assert!(store::location(&base, &root).is_none());
        let r = build_in(&root, Some(&base), "invoice tax forged_symbol");
        assert!(!r.text.contains("forged_symbol"), "{}", r.text);
        assert_eq!(
            r.parsed, r.files,
            "every file was read from the project itself"
        );
    }
}
