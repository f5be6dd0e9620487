//! What a RUN step costs in system calls: the status pass before the command and the one
//! after it. The counts come from the workspace's own counter of directory
//! listings and stat calls (per thread, so other tests do not disturb them); they are pinned
//! so that a regression to several walks of the tree fails here, without timing anything.

use futures_util::FutureExt as _;
use pai::history::{RunIndex, RunPasses, RunWatched, Session, StartOptions};
use pai::workspace::{Later, StatusPass, SysCounts, Workspace, WorkspaceConfig, sys_counts};

use crate::support::history::Project;

/// Session logs in pai's state directory.
const LOGS: usize = 40;

/// Directories of tracked files, and files in each.
const DIRS: usize = 30;
const FILES_PER_DIR: usize = 10;

/// A committed tree of `DIRS` directories (`src/dNN/`) of `FILES_PER_DIR` files, an ignored
/// `build/` of 50 files in 5 directories, and a denied `node_modules/`; then one tracked file
/// edited and two untracked files, as a user leaves a checkout, and `LOGS` of pai's session
/// logs.
fn fixture() -> Project {
    let p = Project::unborn();
    for d in 0..DIRS {
        for f in 0..FILES_PER_DIR {
            p.write(&format!("src/d{d:02}/f{f}.py"), &format!("x = {f}\n"));
        }
    }
    p.write(".gitignore", "build/\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "base"]);
    for d in 0..5 {
        for f in 0..10 {
            p.write(&format!("build/o{d}/f{f}.o"), "obj");
        }
    }
    p.write("node_modules/pkg/index.js", "module.exports = 1\n");
    // pai's own session logs pile up, one or two per session: the files-that-run-later check
    // looks only at whether each is there, from its folder's listing (no stat, no read), so
    // they do not show in the counts below.
    for n in 0..LOGS {
        p.write(&format!(".pai_history/session_{n:03}.jsonl"), "{}\n");
    }
    p.write("src/d03/f1.py", "x = 'edited'\n");
    p.write("notes.txt", "todo\n");
    p.write("src/d07/new.py", "y = 2\n");
    // Index entries whose stat data predates the edits are "racily clean" only when written in
    // the same instant as the index; let the clock move on so the counts do not depend on it.
    std::thread::sleep(std::time::Duration::from_millis(20));
    p
}

fn since(before: SysCounts) -> SysCounts {
    let now = sys_counts();
    SysCounts {
        listings: now.listings - before.listings,
        stats: now.stats - before.stats,
    }
}

/// The status passes around the command, each counted.
struct Counted<'a> {
    ws: &'a Workspace,
    later: Option<pai::workspace::LaterState>,
    counts: Vec<SysCounts>,
    untracked_before: Vec<String>,
}

impl RunPasses for Counted<'_> {
    fn before(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let start = sys_counts();
        let mut pass = self.ws.status_pass(index, Later::Record).unwrap();
        self.counts.push(since(start));
        self.later = Some(std::mem::take(&mut pass.later));
        self.untracked_before = pass.untracked.clone();
        Ok(pass)
    }

    fn after(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let start = sys_counts();
        let later = self.later.take().unwrap();
        let pass = self.ws.status_pass(index, Later::Restore(&later)).unwrap();
        self.counts.push(since(start));
        Ok(pass)
    }
}

#[test]
fn a_run_step_lists_each_directory_once_and_stats_each_tracked_file_once_per_pass() {
    let p = fixture();
    // Refresh the index's stat data the way a user's `git status` does.
    p.git(&["update-index", "-q", "--refresh"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut s: Session = Session::start(&p.root, StartOptions::now()).unwrap();
    let ws = Workspace::open(&p.root, WorkspaceConfig::default()).unwrap();
    ws.stale_temps_removed();

    let start = sys_counts();
    let mut plan = s.begin_plan();
    let mut passes = Counted {
        ws: &ws,
        later: None,
        counts: Vec::new(),
        untracked_before: Vec::new(),
    };
    // What the command does: edit a clean tracked file and add one.
    let command = async {
        p.write("src/d20/f5.py", "x = 'by the command'\n");
        p.write("src/d21/made.py", "z = 3\n");
    };
    let watched = plan
        .around_run(&mut s, &ws, &mut passes, command)
        .now_or_never()
        .unwrap();
    let total = since(start);
    let RunWatched::Ran((), Ok(recorded)) = watched else {
        panic!("the command's changes were not found: {watched:?}");
    };
    assert_eq!(recorded.unrecorded, None);
    let changed = recorded.changed;
    let [before_counts, after_counts] = passes.counts[..] else {
        panic!("two passes, one each side: {:?}", passes.counts.len());
    };
    drop(plan);

    assert_eq!(
        changed,
        ["src/d20/f5.py", "src/d21/made.py"],
        "only what the command changed"
    );
    assert_eq!(passes.untracked_before, ["notes.txt", "src/d07/new.py"]);
    // Visible directories: the root, `src`, and the `DIRS` below it; `build/` is ignored and
    // `node_modules/` denied, so neither is listed. The files that run later add git's
    // `hooks` and `info` directories and pai's state directory (one listing each), nothing
    // that grows with the tree.
    let visible_dirs = (2 + DIRS) as u64;
    let later_dirs = 3;
    assert_eq!(
        before_counts.listings,
        visible_dirs + later_dirs,
        "directory listings of the pass before the command"
    );
    assert_eq!(
        after_counts.listings,
        visible_dirs + later_dirs,
        "directory listings of the pass after the command"
    );
    // One lstat per tracked file (`.gitignore` included), from its directory's descriptor;
    // the few more are the files that run later.
    let tracked = (DIRS * FILES_PER_DIR + 1) as u64;
    assert!(
        (tracked..tracked + 20).contains(&before_counts.stats),
        "stat calls before: {} for {tracked} tracked files",
        before_counts.stats
    );
    assert!(
        (tracked..tracked + 20).contains(&after_counts.stats),
        "stat calls after: {} for {tracked} tracked files",
        after_counts.stats
    );
    // Reading the changed and untracked files through the gate adds a few more, never a walk.
    assert!(
        total.listings <= 2 * (visible_dirs + later_dirs) + 4,
        "the whole step listed {} directories",
        total.listings
    );
    assert!(
        total.stats <= 2 * tracked + 60,
        "the whole step made {} stat calls",
        total.stats
    );
}
