//! The `worktree` section: what a worktree session (`pai -w`) costs at 10,000 and
//! 100,000 files. `pai run -w` with a chat reply creates the session's worktree (a branch and
//! a full checkout of the files), runs the turn and, since nothing was carried out, removes
//! it again: measured beside the same turn in place (the difference is the worktree) and
//! beside `git worktree add` + `git worktree remove` of the same tree. pai's and git's runs
//! alternate, and which goes first alternates too: creating files right after many were
//! removed costs more on some file systems (ext4 without a journal scans the inodes freed in
//! the last seconds), so each side follows the other's removal as often as its own.
//!
//! The repositories are generated once and kept in `PAI_BENCH_WORKTREE_DIR`
//! (`/tmp/pai-bench-worktree`); `PAI_BENCH_WORKTREE_SIZES` (`10000,100000`) and
//! `PAI_BENCH_WORKTREE_REPS` (3) change what is measured; `PAI_BENCH_BIN` measures another `pai`
//! binary, as in the scale section.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;

use crate::common::{Row, median, ms, ratio, thousands};
use crate::support::mock_llm::{MockLlm, Reply, Script};
use crate::support::project::TEST_KEY;
use crate::workspace;

/// The `pai` binary measured: this build's, or `PAI_BENCH_BIN` (as in the scale section, so
/// both sections of one run measure the same binary).
fn pai_binary() -> String {
    std::env::var("PAI_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_pai").to_string())
}

fn cache_dir() -> PathBuf {
    std::env::var_os("PAI_BENCH_WORKTREE_DIR")
        .map_or_else(|| PathBuf::from("/tmp/pai-bench-worktree"), PathBuf::from)
}

fn sizes() -> Vec<usize> {
    std::env::var("PAI_BENCH_WORKTREE_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

fn reps() -> usize {
    std::env::var("PAI_BENCH_WORKTREE_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

/// `pai run hello --yes ARGS` in `root` against a chat reply, timed; it must succeed.
fn pai_run(root: &Path, args: &[&str]) -> Duration {
    let home = cache_dir().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let kind = ProviderKind::Gemini;
    let mock = MockLlm::start(Script::new().fallback(Reply::chat("Hello.")));
    let t = Instant::now();
    let out = Command::new(pai_binary())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1")
        .env(kind.key_env_var(), TEST_KEY)
        .env("PAI_BASE_URL", mock.base_url(kind))
        .args(["run", "hello", "--yes"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "pai run {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// `git worktree add --detach` then `git worktree remove --force`, timed together.
fn git_worktree(root: &Path) -> Duration {
    let wt = cache_dir().join("git-worktree");
    let git = |args: &[&str]| {
        let out = crate::common::git_command(root, args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let t = Instant::now();
    git(&["worktree", "add", "-q", "--detach", &wt.to_string_lossy()]);
    git(&["worktree", "remove", "--force", &wt.to_string_lossy()]);
    t.elapsed()
}

/// The section's rows.
pub fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for files in sizes() {
        let root = cache_dir().join(format!("repo-{files}"));
        workspace::generate_repo(&root, files);
        let n = reps();
        let in_place: Vec<Duration> = (0..n).map(|_| pai_run(&root, &[])).collect();
        let (mut worktree, mut git) = (Vec::new(), Vec::new());
        for rep in 0..n {
            if rep % 2 == 0 {
                git.push(git_worktree(&root));
                worktree.push(pai_run(&root, &["-w"]));
            } else {
                worktree.push(pai_run(&root, &["-w"]));
                git.push(git_worktree(&root));
            }
        }
        let (in_place, worktree, git) = (median(in_place), median(worktree), median(git));
        let size = thousands(files as u64);
        rows.push(
            Row::new(
                "worktree",
                format!("pai run -w, chat reply (create + remove the worktree), {size} files"),
                ms(worktree),
            )
            .vs(
                format!("git worktree add + remove: {}", ms(git)),
                ratio(worktree, git),
            ),
        );
        rows.push(Row::new(
            "worktree",
            format!("the same turn in place, {size} files (the worktree costs the difference)"),
            ms(in_place),
        ));
    }
    rows
}
