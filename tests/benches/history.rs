//! The git history's figures (issue 6) on repositories of 1,000 and 100,000 files: session
//! start, a plan commit touching 3 files, and undo, through the real workspace as the work
//! tree, side by side with `git add <3 files> && git commit` (and `git status`) on the same
//! repository in the same run.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use pai::history::{PlanRecord, Session, StartOptions, WorkEntry, WorkTree, undo};
use pai::workspace::{Workspace, WorkspaceConfig};

use crate::common::{Row, median, ms, ratio, thousands, timed_git};
use crate::workspace::file_path;

const AREA: &str = "history";

/// The workspace as history sees it, timing its writes (atomic: temp file, fsync, rename) so
/// the table can show how much of undo is the file system rather than history.
struct TimedWorkTree {
    inner: Workspace,
    writing: Cell<Duration>,
}

impl WorkTree for TimedWorkTree {
    fn read(&self, rel: &str) -> io::Result<WorkEntry> {
        WorkTree::read(&self.inner, rel)
    }
    fn write(&self, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
        let t = Instant::now();
        let r = WorkTree::write(&self.inner, rel, bytes, executable);
        self.writing.set(self.writing.get() + t.elapsed());
        r
    }
    fn remove(&self, rel: &str) -> io::Result<()> {
        let t = Instant::now();
        let r = WorkTree::remove(&self.inner, rel);
        self.writing.set(self.writing.get() + t.elapsed());
        r
    }
    fn is_denied(&self, rel: &str) -> bool {
        WorkTree::is_denied(&self.inner, rel)
    }
}

/// Medians of one repository size.
struct Figures {
    start: Duration,
    commit: Duration,
    undo: Duration,
    undo_writes: Duration,
    git_commit: Duration,
    git_status: Duration,
}

/// `runs` rounds on the committed repository at `root` holding `files` generated files
/// (see [`file_path`]): each round starts a session, commits a plan touching 3 files, undoes
/// it from a fresh open, then commits the same 3 paths with git.
fn measure(root: &Path, files: usize, runs: usize) -> Figures {
    let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
    ws.stale_temps_removed();
    let wt = TimedWorkTree {
        inner: ws,
        writing: Cell::new(Duration::ZERO),
    };
    let touched: Vec<String> = [0, files / 2, files - 1]
        .iter()
        .map(|&i| file_path(i))
        .collect();
    let mut v: [Vec<Duration>; 6] = Default::default();
    for run in 0..runs {
        let t = Instant::now();
        let mut session = Session::start(root, StartOptions::now()).unwrap();
        v[0].push(t.elapsed());
        assert!(session.read_only_reason().is_none());

        // History's part of a plan is prepare (snapshot user edits) before the writes and
        // the commit after them; both are timed, the writes are not.
        let t = Instant::now();
        session.prepare(&wt, &touched).unwrap();
        let prepare = t.elapsed();
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
        v[1].push(prepare + t.elapsed());
        assert!(info.is_some());
        drop(session);

        // From a fresh "process": open, lock, undo.
        wt.writing.set(Duration::ZERO);
        let t = Instant::now();
        undo(root, &wt, false).unwrap();
        v[2].push(t.elapsed());
        v[3].push(wt.writing.get());

        for path in &touched {
            std::fs::write(root.join(path), format!("git run {run}\n")).unwrap();
        }
        let mut add = vec!["add"];
        add.extend(touched.iter().map(String::as_str));
        v[4].push(
            timed_git(root, &add)
                + timed_git(root, &["commit", "-q", "--no-verify", "-m", "git bench"]),
        );
        v[5].push(timed_git(root, &["status", "--porcelain"]));
    }
    let [start, commit, undo_t, undo_w, git_commit, git_status] = v.map(median);
    Figures {
        start,
        commit,
        undo: undo_t,
        undo_writes: undo_w,
        git_commit,
        git_status,
    }
}

/// Rows for each `(root, files)` repository, `runs` rounds each.
pub fn rows(repos: &[(&Path, usize)], runs: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(root, files) in repos {
        let f = measure(root, files, runs);
        let n = thousands(files as u64);
        let git_ref = format!("git add && git commit {}", ms(f.git_commit));
        let big = files >= 100_000;
        let target = |row: Row, d: Duration| {
            if big {
                row.target("< 50 ms at 100,000 files", d < Duration::from_millis(50))
            } else {
                row
            }
        };
        rows.push(
            Row::new(AREA, format!("session start, {n} files"), ms(f.start))
                .vs(git_ref.clone(), ratio(f.start, f.git_commit)),
        );
        rows.push(target(
            Row::new(AREA, format!("plan commit (prepare + commit, 3 files), {n} files"), ms(f.commit))
                .vs(git_ref.clone(), ratio(f.commit, f.git_commit)),
            f.commit,
        ));
        rows.push(target(
            Row::new(
                AREA,
                format!(
                    "undo (open, lock, 3 atomic writes of {}), {n} files",
                    ms(f.undo_writes)
                ),
                ms(f.undo),
            )
            .vs(git_ref, ratio(f.undo, f.git_commit)),
            f.undo,
        ));
        rows.push(Row::new(
            AREA,
            format!("reference: git status --porcelain, {n} files"),
            ms(f.git_status),
        ));
    }
    rows
}
