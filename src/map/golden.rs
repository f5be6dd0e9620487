//! The map's output pinned: a generated project of a few thousand files (sources in several
//! languages that define and refer to each other, tests, docs, untracked and uncommitted files,
//! the user's recent work) mapped for several requests, cold and then warm, and every ranked
//! file's score bits, reasons and the rendered text compared with
//! `fixtures/map/golden_ranking.txt`, so that work on the map's speed cannot change what it
//! ranks: a change that moves any score by one bit, reorders a tie or renders one character
//! differently fails here. `PAI_BLESS=1` rewrites the file (only for a change meant to alter
//! the ranking).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::workspace::WorkspaceConfig;

const GOLDEN: &str = "fixtures/map/golden_ranking.txt";

/// Ranked files pinned with their scores and reasons (the rendered listing pins the order of
/// the rest).
const RANKED_PINNED: usize = 80;

/// Requests of every kind the ranker tells apart: plain words, code identifiers, a named file
/// (and a shared name), tests, docs, words nothing matches.
const REQUESTS: [&str; 7] = [
    "fix the parser",
    "the invoice total is rounded wrong when the tax rate changes",
    "rename `parse_config()` and update its callers in loader",
    "in billing, invoice.py crashes on an empty ledger; also look at mod.rs of the cache",
    "the tests for the ledger fail after the refactor",
    "update the docs and the examples for the scheduler",
    "retry the upload when the network drops (UploadQueue.flush)",
];

const TOPICS: [&str; 10] = [
    "invoice",
    "ledger",
    "scheduler",
    "upload",
    "parser",
    "config",
    "cache",
    "network",
    "report",
    "session",
];

/// One generated file: its path and text.
fn source(i: usize) -> (String, String) {
    let topic = TOPICS[i % TOPICS.len()];
    let other = TOPICS[(i * 7 + 3) % TOPICS.len()];
    let pkg = format!("pkg{}/{}", i % 6, topic);
    match i % 9 {
        0..=2 => (
            format!("{pkg}/{topic}_{i:04}.py"),
            format!(
                "from {other} import load_{other}\n\n\
                 class {Topic}{i}:\n    def compute_{topic}(self, rate):\n        \
                 return load_{other}(rate) * {i}\n\n\
                 def parse_{topic}_{i}(text):\n    # the {topic} parser rounds the total\n    \
                 return {Topic}{i}().compute_{topic}(len(text))\n",
                Topic = capital(topic),
            ),
        ),
        3 | 4 => (
            format!("{pkg}/{topic}_{i:04}.rs"),
            format!(
                "pub struct {Topic}Queue{i} {{ items: Vec<u32> }}\n\n\
                 impl {Topic}Queue{i} {{\n    pub fn flush(&mut self) -> usize {{\n        \
                 load_{other}(self.items.len())\n    }}\n}}\n\n\
                 pub fn load_{topic}(n: usize) -> usize {{ n + {i} }}\n",
                Topic = capital(topic),
            ),
        ),
        5 => (
            format!("tests/{topic}/test_{topic}_{i:04}.py"),
            format!(
                "from {topic} import parse_{topic}_{j}\n\n\
                 def test_{topic}_{i}():\n    assert parse_{topic}_{j}('x') > 0\n",
                j = i - 5,
            ),
        ),
        6 => (
            format!("docs/{topic}/{topic}_{i:04}.md"),
            format!("# The {topic}\n\nHow the {topic} works with the {other} and its config.\n"),
        ),
        7 => (
            format!("web/{topic}/{topic}{i}.spec.ts"),
            format!(
                "import {{ {topic}Client }} from './{topic}';\n\
                 export function check{Topic}{i}(): number {{ return {topic}Client.retry({i}); }}\n",
                Topic = capital(topic),
            ),
        ),
        _ => (
            format!("web/{topic}/{topic}{i}.js"),
            format!(
                "export function {topic}Client{i}(session) {{\n  \
                 return session.upload('{other}', {i});\n}}\n"
            ),
        ),
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// The generated project; returns its files.
fn project(dir: &Path) -> Vec<String> {
    let mut files: Vec<(String, String)> = (0..1800).map(source).collect();
    files.extend([
        (
            "src/billing/invoice.py".to_string(),
            "def parse_config(path):\n    return open(path).read()\n\n\
             class Invoice:\n    def total(self, ledger):\n        return round(sum(ledger) * 1.2, 2)\n"
                .to_string(),
        ),
        (
            "src/loader.py".to_string(),
            "from billing.invoice import parse_config\n\n\
             def load(path):\n    return parse_config(path)\n"
                .to_string(),
        ),
        (
            "src/cache/mod.rs".to_string(),
            "pub mod store;\npub fn cache_dir() -> String { String::new() }\n".to_string(),
        ),
        (
            "src/agent/mod.rs".to_string(),
            "pub fn run() {}\n".to_string(),
        ),
        ("README.md".to_string(), "# Project\n\nA ledger and invoices.\n".to_string()),
        (
            "examples/scheduler_demo.py".to_string(),
            "from scheduler import Scheduler\nScheduler().start()\n".to_string(),
        ),
        (
            "src/net/upload_queue.py".to_string(),
            "class UploadQueue:\n    def flush(self):\n        return retry_upload(self)\n\n\
             def retry_upload(queue):\n    return queue\n"
                .to_string(),
        ),
        ("data/blob.bin".to_string(), "\u{0}\u{1}binary".to_string()),
        ("notes.txt".to_string(), "ledger totals by month\n".to_string()),
    ]);
    for (path, text) in &files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    files.into_iter().map(|(p, _)| p).collect()
}

/// A stand-in for git's index: path to blob id.
struct Index(HashMap<String, store::BlobId>);

impl TrackedFiles for Index {
    fn blob(&self, path: &str) -> Option<store::BlobId> {
        self.0.get(path).copied()
    }
}

/// Every file staged as it is, but for two untracked files and one staged before its last
/// edit (uncommitted).
fn index_of(dir: &Path, files: &[String]) -> HashMap<String, store::BlobId> {
    let mut table: HashMap<String, store::BlobId> = files
        .iter()
        .filter(|f| !f.ends_with("notes.txt") && !f.ends_with("0017.py"))
        .map(|f| (f.clone(), gather::blob_id(&fs::read(dir.join(f)).unwrap())))
        .collect();
    table.insert(
        "src/loader.py".to_string(),
        gather::blob_id(b"def load(path):\n    pass\n"),
    );
    table
}

fn recent_work() -> Vec<(String, u32)> {
    vec![
        ("src/billing/invoice.py".to_string(), 3),
        ("pkg1/ledger/ledger_0001.py".to_string(), 1),
        ("docs/scheduler/scheduler_0006.md".to_string(), 2),
        ("gone/file.py".to_string(), 4),
    ]
}

fn map_of(
    dir: &Path,
    cache: &Path,
    request: &str,
    table: &HashMap<String, store::BlobId>,
) -> MapReport {
    let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
    let index = || Some(Box::new(Index(table.clone())) as Box<dyn TrackedFiles>);
    let last_plan = [
        "src/net/upload_queue.py".to_string(),
        "web/upload/upload3.js".to_string(),
    ];
    let activity = Activity {
        last_plan: &last_plan,
        head: Some("0123456789abcdef".to_string()),
        recent: &recent_work,
        index: &index,
    };
    build(
        &ws,
        &ws.corpus(),
        request,
        &activity,
        &MapOptions {
            budget_chars: 6_000,
            time_budget: Duration::from_secs(120),
            progress: &|_, _| {},
            cache: Some(cache.to_path_buf()),
        },
    )
}

/// Everything a map decides, exactly (scores as bits).
fn digest(request: &str, r: &MapReport) -> String {
    let mut out = format!(
        "== {request}\nfiles {} named {:?} ranked {}\n",
        r.files,
        r.named,
        r.ranked.len()
    );
    let bits = |x: f32| format!("{:08x}", x.to_bits());
    for f in r.ranked.iter().take(RANKED_PINNED) {
        let w = &f.why;
        let _ = writeln!(
            out,
            "{} {} words={:?} path={:?} symbols={:?} by={:?} signals={:?} parts={}/{}/{}/{}",
            f.path,
            bits(f.score),
            w.words,
            w.path_words,
            w.symbols,
            w.referenced_by,
            w.signals,
            bits(w.text),
            bits(w.path),
            bits(w.defs),
            bits(w.graph),
        );
    }
    let s = &r.shown;
    let _ = writeln!(
        out,
        "listed {}\nwhole {:?}\nexcerpts {:?}\nomitted {}\n-- text\n{}\n",
        s.listed.len(),
        s.whole,
        s.excerpts,
        s.omitted,
        r.text
    );
    out
}

#[test]
fn the_map_is_what_it_was_for_the_same_project_request_and_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let files = project(tmp.path());
    let table = index_of(tmp.path(), &files);
    let mut got = String::new();
    for (k, request) in REQUESTS.iter().enumerate() {
        let first = map_of(tmp.path(), cache.path(), request, &table);
        if k == 0 {
            assert_eq!(first.parsed, first.files, "cold: every file read");
        }
        let warm = map_of(tmp.path(), cache.path(), request, &table);
        assert_eq!(warm.parsed, 0, "warm");
        let (a, b) = (digest(request, &first), digest(request, &warm));
        assert_eq!(a, b, "a cold and a warm map agree");
        got.push_str(&b);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("PAI_BLESS").is_some() {
        fs::write(&path, &got).unwrap();
    }
    let want = fs::read_to_string(&path).unwrap();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(g, w)| g != w)
            .unwrap_or(0);
        panic!(
            "the map differs from {GOLDEN} at line {}:\n got: {}\nwant: {}",
            line + 1,
            got.lines().nth(line).unwrap_or(""),
            want.lines().nth(line).unwrap_or("")
        );
    }
}
