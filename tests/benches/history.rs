//! Benchmark of the git history on generated repositories of 1,000 and 100,000 files: session
//! start, a plan commit touching 3 files, and undo, next to `git add <3 files> && git commit`
//! and `git status` on the same repository in the same run. Prints a table; asserts nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../history_common/mod.rs"]
mod history_common;

use std::cell::Cell;
use std::fs;
use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use history_common::{FsWorkTree, Project};
use pai::history::{PlanRecord, Session, StartOptions, WorkEntry, WorkTree, undo};

/// Runs per size unless `PAI_BENCH_RUNS` says otherwise; the table shows medians.
const RUNS: usize = 5;
const FILES_PER_DIR: usize = 100;

/// The test work tree, timing its writes (atomic: temp file, fsync, rename) so the table can
/// show how much of undo is the file system rather than history.
struct TimedWorkTree {
    inner: FsWorkTree,
    writing: Cell<Duration>,
}

impl WorkTree for TimedWorkTree {
    fn read(&self, rel: &str) -> io::Result<WorkEntry> {
        self.inner.read(rel)
    }
    fn write(&self, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
        let t = Instant::now();
        let r = self.inner.write(rel, bytes, executable);
        self.writing.set(self.writing.get() + t.elapsed());
        r
    }
    fn remove(&self, rel: &str) -> io::Result<()> {
        let t = Instant::now();
        let r = self.inner.remove(rel);
        self.writing.set(self.writing.get() + t.elapsed());
        r
    }
    fn is_denied(&self, rel: &str) -> bool {
        self.inner.is_denied(rel)
    }
}

struct Row {
    files: usize,
    start: Duration,
    prepare: Duration,
    commit: Duration,
    undo: Duration,
    undo_writes: Duration,
    git_commit: Duration,
    git_status: Duration,
}

fn runs() -> usize {
    std::env::var("PAI_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RUNS)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn file_path(i: usize) -> String {
    format!("d{:04}/f{i:06}.txt", i / FILES_PER_DIR)
}

fn generate(files: usize) -> Project {
    let p = Project::unborn();
    for i in 0..files {
        let path = p.path(&file_path(i));
        if i % FILES_PER_DIR == 0 {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        fs::write(path, format!("file {i}\nline two\n")).unwrap();
    }
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "generated"]);
    // Warm the caches the way a user's repository is warm.
    p.git(&["status", "--porcelain"]);
    p
}

fn timed_git(p: &Project, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new("git")
        .args(args)
        .current_dir(&p.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn measure(files: usize) -> Row {
    let p = generate(files);
    let wt = TimedWorkTree {
        inner: FsWorkTree {
            root: p.root.clone(),
        },
        writing: Cell::new(Duration::ZERO),
    };
    let touched: Vec<String> = [0, files / 2, files - 1]
        .iter()
        .map(|&i| file_path(i))
        .collect();
    let (
        mut start,
        mut prepare,
        mut commit,
        mut undo_t,
        mut undo_w,
        mut git_commit,
        mut git_status,
    ) = (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for run in 0..runs() {
        let t = Instant::now();
        let mut session = Session::start(&p.root, StartOptions::now()).unwrap();
        start.push(t.elapsed());
        assert!(session.read_only_reason().is_none());

        let t = Instant::now();
        session.prepare(&wt, &touched).unwrap();
        prepare.push(t.elapsed());
        for path in &touched {
            wt.write(path, format!("agent run {run}\n").as_bytes(), false)
                .unwrap();
        }
        let record = PlanRecord {
            request: format!("bench plan {run}"),
            steps: touched.iter().map(|t| format!("MODIFY {t}")).collect(),
            touched: touched.clone(),
            model: "bench".into(),
            calls: 1,
            ..PlanRecord::default()
        };
        let t = Instant::now();
        let info = session.commit_plan(&wt, &record).unwrap();
        commit.push(t.elapsed());
        assert!(info.is_some());
        drop(session);

        // From a fresh "process": open, lock, undo.
        wt.writing.set(Duration::ZERO);
        let t = Instant::now();
        undo(&p.root, &wt, false).unwrap();
        undo_t.push(t.elapsed());
        undo_w.push(wt.writing.get());

        for path in &touched {
            fs::write(p.path(path), format!("git run {run}\n")).unwrap();
        }
        let mut add = vec!["add"];
        add.extend(touched.iter().map(String::as_str));
        let t = timed_git(&p, &add)
            + timed_git(&p, &["commit", "-q", "--no-verify", "-m", "git bench"]);
        git_commit.push(t);
        git_status.push(timed_git(&p, &["status", "--porcelain"]));
    }
    Row {
        files,
        start: median(start),
        prepare: median(prepare),
        commit: median(commit),
        undo: median(undo_t),
        undo_writes: median(undo_w),
        git_commit: median(git_commit),
        git_status: median(git_status),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("PAI_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000]);
    let rows: Vec<Row> = sizes.iter().map(|&n| measure(n)).collect();
    println!(
        "\nhistory benchmark (median of {} runs; plan touches 3 files)\n",
        runs()
    );
    print!("{:<34}", "operation");
    for r in &rows {
        print!("{:>16}", format!("{} files", r.files));
    }
    println!();
    type Pick = fn(&Row) -> Duration;
    let lines: [(&str, Pick); 7] = [
        ("pai session start", |r| r.start),
        ("pai prepare (3 paths)", |r| r.prepare),
        ("pai commit_plan (3 files)", |r| r.commit),
        ("pai undo (fresh open + lock)", |r| r.undo),
        ("  of which 3 atomic writes+fsync", |r| r.undo_writes),
        ("git add 3 files && git commit", |r| r.git_commit),
        ("git status --porcelain", |r| r.git_status),
    ];
    for (label, pick) in lines {
        print!("{label:<34}");
        for r in &rows {
            print!("{:>16}", ms(pick(r)));
        }
        println!();
    }
}
