//! The git history's figures on repositories of 1,000 and 100,000 files: session
//! start, a plan commit touching 3 files, and undo, through the real workspace as the work
//! tree, side by side with `git add <3 files> && git commit` (and `git status`) on the same
//! repository in the same run, and with the bare cost of replacing an index that size.

use std::cell::Cell;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use pai::history::{
    PlanRecord, RunIndex, RunPasses, RunWatched, Session, StartOptions, WorkEntry, WorkTree, undo,
};
use pai::workspace::{Later, LaterState, StatusPass, Workspace, WorkspaceConfig};
use sha1::{Digest, Sha1};

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
    run_snapshot: Duration,
    index_bytes: usize,
    index_floor: Duration,
}

/// The workspace's status passes around a command, as the agent makes them.
struct Passes<'a> {
    ws: &'a Workspace,
    later: Option<LaterState>,
}

impl RunPasses for Passes<'_> {
    fn before(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let mut pass = self.ws.status_pass(index, Later::Record).unwrap();
        self.later = Some(std::mem::take(&mut pass.later));
        Ok(pass)
    }

    fn after(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let later = self.later.take().unwrap_or_default();
        Ok(self.ws.status_pass(index, Later::Restore(&later)).unwrap())
    }
}

/// A command under a plan that does nothing, timed until it would start: the status pass
/// before it and the remembering of the user's uncommitted files.
fn until_command(session: &mut Session, ws: &Workspace, wt: &TimedWorkTree) -> Duration {
    let mut plan = session.begin_plan();
    let mut passes = Passes { ws, later: None };
    let mut until = Duration::ZERO;
    let t = Instant::now();
    let command = async { until = t.elapsed() };
    let watched = plan
        .around_run(session, wt, &mut passes, command)
        .now_or_never()
        .unwrap();
    assert!(matches!(watched, RunWatched::Ran((), Ok(_))));
    drop(plan);
    until
}

/// A plan touching `touched`, committed in a new session.
fn commit_once(root: &Path, wt: &TimedWorkTree, touched: &[String], run: usize) -> Duration {
    let mut session = Session::start(root, StartOptions::now()).unwrap();
    assert!(session.read_only_reason().is_none());
    // History's part of a plan is prepare (snapshot user edits) before the writes and the
    // commit after them; both are timed, the writes are not.
    let t = Instant::now();
    let mut plan = session.begin_plan();
    plan.prepare(&mut session, wt, touched).unwrap();
    let prepare = t.elapsed();
    for path in touched {
        wt.write(path, format!("agent run {run}\n").as_bytes(), false)
            .unwrap();
    }
    let record = PlanRecord {
        request: format!("bench plan {run}"),
        steps: touched.iter().map(|t| format!("MODIFY {t}")).collect(),
        touched: touched.to_vec(),
        model: "bench".into(),
        calls: 1,
        ..PlanRecord::default()
    };
    let t = Instant::now();
    let info = plan.commit(&mut session, wt, &record).unwrap();
    let commit = prepare + t.elapsed();
    assert!(info.is_some());
    commit
}

/// The least any tool pays to update a git index of this size safely: read it, hash the new
/// contents (SHA-1 trailer), write `index.lock`, rename it over the index. Done on a copy, in
/// the same directory.
fn index_floor(git_dir: &Path) -> (usize, Duration) {
    let copy = git_dir.join("pai-bench-index");
    let lock = git_dir.join("pai-bench-index.lock");
    std::fs::copy(git_dir.join("index"), &copy).unwrap();
    let t = Instant::now();
    let bytes = std::fs::read(&copy).unwrap();
    let hash = Sha1::digest(&bytes[..bytes.len() - 20]);
    let mut out = std::fs::File::create_new(&lock).unwrap();
    out.write_all(&bytes[..bytes.len() - 20]).unwrap();
    out.write_all(&hash).unwrap();
    drop(out);
    std::fs::rename(&lock, &copy).unwrap();
    let took = t.elapsed();
    std::fs::remove_file(&copy).unwrap();
    (bytes.len(), took)
}

/// `runs` rounds on the committed repository at `root` holding `files` generated files
/// (see [`file_path`]): each round starts a session, commits a plan touching 3 files, undoes
/// it from a fresh open, then commits the same 3 paths with git. Back to back, as a script
/// would: each step's index write lands while the previous one's is being written back.
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
    let git_dir = root.join(".git");
    let mut v: [Vec<Duration>; 8] = Default::default();
    let mut index_bytes = 0;
    for run in 0..runs {
        let t = Instant::now();
        drop(Session::start(root, StartOptions::now()).unwrap());
        v[0].push(t.elapsed());

        v[1].push(commit_once(root, &wt, &touched, run));

        // From a fresh "process": open, lock, undo.
        wt.writing.set(Duration::ZERO);
        let t = Instant::now();
        undo(root, &wt, false).unwrap();
        v[2].push(t.elapsed());
        v[3].push(wt.writing.get());

        // The same, with the undo straight after the commit.
        commit_once(root, &wt, &touched, run);
        let t = Instant::now();
        undo(root, &wt, false).unwrap();
        v[4].push(t.elapsed());

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
        let (bytes, floor) = index_floor(&git_dir);
        index_bytes = bytes;
        v[6].push(floor);

        // What pai does before every RUN: find the uncommitted files (3 here) and remember
        // their content, the way git status finds them.
        for path in &touched {
            std::fs::write(root.join(path), format!("uncommitted {run}\n")).unwrap();
        }
        let mut session = Session::start(root, StartOptions::now()).unwrap();
        let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
        ws.stale_temps_removed();
        v[7].push(until_command(&mut session, &ws, &wt));
        drop(session);
        let mut checkout = vec!["checkout", "-q", "--"];
        checkout.extend(touched.iter().map(String::as_str));
        timed_git(root, &checkout);
    }
    let [
        start,
        commit,
        undo_t,
        undo_w,
        git_commit,
        git_status,
        index_floor,
        run_snapshot,
    ] = v.map(median);
    Figures {
        start,
        commit,
        undo: undo_t,
        undo_writes: undo_w,
        git_commit,
        git_status,
        run_snapshot,
        index_bytes,
        index_floor,
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
            Row::new(
                AREA,
                format!("plan commit (prepare + commit, 3 files), {n} files"),
                ms(f.commit),
            )
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
        rows.push(
            Row::new(
                AREA,
                format!(
                    "reference: replace the {:.1} MB index (read, SHA-1, write, rename), {n} files",
                    f.index_bytes as f64 / 1e6
                ),
                ms(f.index_floor),
            )
            .note("the least any index update costs; pai's commit and undo each do one"),
        );
        rows.push(Row::new(
            AREA,
            format!("reference: git status --porcelain, {n} files"),
            ms(f.git_status),
        ));
        let snapshot = Row::new(
            AREA,
            format!("RUN snapshot (find and remember uncommitted files), {n} files"),
            ms(f.run_snapshot),
        )
        .vs(
            format!("git status {}", ms(f.git_status)),
            ratio(f.run_snapshot, f.git_status),
        );
        rows.push(if big {
            snapshot.target("< 2x git status", f.run_snapshot < f.git_status * 2)
        } else {
            snapshot
        });
    }
    rows
}
