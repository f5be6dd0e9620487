//! The map benchmark's replay: each case's request driven through the real `pai run` by an
//! oracle model that knows the commit's diff but may only edit code it has been shown.
//!
//! The oracle (`oracle.rs`) answers the mock server from each request's own messages: what
//! the first call showed of each changed file (whole, or excerpt lines) and what later phases'
//! READ results carried. When every hunk's lines are shown it answers at once with MODIFY
//! edits; otherwise it READs the files first. The benchmark counts the calls and tokens per
//! task, checks that the files pai wrote equal the real commit's byte for byte whenever the
//! oracle's edits were applied, and that `pai undo` puts the parent tree back.
//!
//! Each case runs in a fresh copy of its parent tree (`$TMPDIR/pai-map-replay/<name>`) with a
//! HOME of its own, and `pai map` of the request warms the map cache first (until no file is
//! left unparsed): the first call is the warm map's, as the map rows measure it.
//! `PAI_MAP_REPLAY=0` skips the replay; with `PAI_MAP_DUMP=<dir>`, a changed file that differs
//! from the commit's is copied there as pai wrote it.

#[path = "map_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use pai::llm::ProviderKind;
use serde_json::Value;

use super::Case;
use crate::common::{Row, thousands};
use crate::support::mock_llm::{MockLlm, Script};
use crate::support::project::TEST_KEY;
use oracle::{FileDiff, Oracle};

const PAI: &str = env!("CARGO_BIN_EXE_pai");

/// The `pai` replayed: this build's, or `PAI_BENCH_BIN` (a copy, so that a rebuild during a
/// long replay does not change the binary under it).
fn pai_binary() -> String {
    std::env::var("PAI_BENCH_BIN").unwrap_or_else(|_| PAI.to_string())
}

/// What one replayed case gave.
#[derive(Debug, Default, Clone)]
struct Replayed {
    calls: u64,
    input: u64,
    output: u64,
    /// The oracle wrote edits for every changed file and the turn succeeded.
    applied: bool,
    /// Every changed file equals the real commit's, byte for byte.
    identical: bool,
    /// `pai undo` ran and the tree is the parent's again (`None`: nothing to undo).
    undone: Option<bool>,
    /// Why the oracle's edits were not applied, or how the files differ.
    note: String,
}

/// `git` on a repository's git directory; its stdout, or `None` when it fails.
fn git_out(git_dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The hunks of each changed file of `case`, read from its git directory.
fn diffs(git_dir: &Path, case: &Case) -> Option<Vec<FileDiff>> {
    case.answer
        .iter()
        .map(|f| {
            let patch = git_out(
                git_dir,
                &[
                    "diff",
                    "-U0",
                    "--no-color",
                    "--no-ext-diff",
                    "--no-renames",
                    &case.parent,
                    &case.commit,
                    "--",
                    f,
                ],
            )?;
            Some(FileDiff::parse(f, &String::from_utf8_lossy(&patch)))
        })
        .collect()
}

/// The real pai in `dir` with a private HOME.
fn pai(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(pai_binary());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd
}

/// Copies `tree` (a checkout with its `.git`) to `dest`, replacing what was there.
fn copy_tree(tree: &Path, dest: &Path) -> bool {
    let _ = std::fs::remove_dir_all(dest);
    if let Some(parent) = dest.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    Command::new("cp")
        .arg("-a")
        .arg(tree)
        .arg(dest)
        .status()
        .is_ok_and(|s| s.success())
}

/// Warms pai's map cache for `dir`: `pai map` until no file is left unparsed (at most 5
/// rounds, each within pai's own time budget).
fn warm(dir: &Path, home: &Path, request: &str) {
    for _ in 0..5 {
        let Ok(out) = pai(dir, home)
            .args(["map", request, "--json"])
            .stderr(Stdio::null())
            .output()
        else {
            return;
        };
        let unparsed = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v["unparsed"].as_u64())
            .unwrap_or(0);
        if unparsed == 0 {
            return;
        }
    }
}

/// Whether each of `files` in `dir` holds `rev`'s blob exactly.
fn files_match(dir: &Path, git_dir: &Path, rev: &str, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            let want = git_out(git_dir, &["show", &format!("{rev}:{f}")]);
            let have = std::fs::read(dir.join(f)).ok();
            want.is_none() || want != have
        })
        .cloned()
        .collect()
}

/// Replays one case in `dir` (a fresh copy of its parent tree).
fn replay(case: &Case, dir: &Path, home: &Path, git_dir: &Path, diffs: Vec<FileDiff>) -> Replayed {
    warm(dir, home, &case.request);
    let oracle = Arc::new(Oracle::new(diffs));
    let answering = Arc::clone(&oracle);
    let script = Script::new()
        .require_key(TEST_KEY)
        .respond_with(move |req| Some(answering.answer(req)));
    let mock = MockLlm::start(script);
    let kind = ProviderKind::Gemini;
    let out = pai(dir, home)
        .env(kind.key_env_var(), TEST_KEY)
        .args([
            "run",
            &case.request,
            "--json",
            "--yes",
            "--provider",
            kind.name(),
            "--base-url",
            &mock.base_url(kind),
        ])
        .output();
    let mut r = Replayed {
        calls: mock.calls(),
        input: mock.input_tokens(),
        output: mock.output_tokens(),
        ..Replayed::default()
    };
    let events: Vec<Value> = out
        .as_ref()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default();
    let status = events
        .iter()
        .rfind(|e| e["event"] == "finished")
        .and_then(|e| e["status"].as_str())
        .unwrap_or("no finished event")
        .to_string();
    let wrote = oracle.wrote_edits();
    r.applied = wrote && status == "success";
    if r.applied {
        let differ = files_match(dir, git_dir, &case.commit, &case.answer);
        r.identical = differ.is_empty();
        if !r.identical {
            r.note = format!("differs from the commit: {differ:?}");
            // What pai wrote, to compare with the commit by hand.
            if let Some(dump) = std::env::var_os("PAI_MAP_DUMP").map(PathBuf::from) {
                for f in &differ {
                    let name = format!("{}-replay-{}", case.id, f.replace('/', "+"));
                    let _ = std::fs::copy(dir.join(f), dump.join(name));
                }
            }
        }
    } else {
        r.note = format!("{status}: {}", oracle.notes().join("; "));
    }
    let committed = events
        .iter()
        .any(|e| e["event"] == "finished" && e["commit"].as_str().is_some_and(|c| !c.is_empty()))
        || head(dir).as_deref() != Some(case.parent.as_str());
    if committed {
        let undo = pai(dir, home)
            .args(["undo"])
            .output()
            .is_ok_and(|o| o.status.success());
        let clean = git_status(dir).is_some_and(|s| s.is_empty());
        let back = files_match(dir, git_dir, &case.parent, &case.answer).is_empty();
        let at_parent = head(dir).as_deref() == Some(case.parent.as_str());
        r.undone = Some(undo && clean && back && at_parent);
        if r.undone == Some(false) {
            r.note.push_str(&format!(
                " | undo: ran {undo}, status clean {clean}, files back {back}, HEAD at parent {at_parent}"
            ));
        }
    }
    r
}

/// HEAD's commit in the work tree `dir`.
fn head(dir: &Path) -> Option<String> {
    let out = crate::common::git_command(dir, &["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git status --porcelain` of the work tree `dir`, untracked files included.
fn git_status(dir: &Path) -> Option<String> {
    let out = crate::common::git_command(dir, &["status", "--porcelain", "--untracked-files=all"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The replay rows for `cases` (those that don't name the file), per repository and in all.
pub fn rows(cases: &[&Case], trees: &Path) -> Vec<Row> {
    if std::env::var("PAI_MAP_REPLAY").is_ok_and(|v| v == "0") {
        return Vec::new();
    }
    let verbose = std::env::var_os("PAI_MAP_VERBOSE").is_some();
    let base = std::env::temp_dir().join("pai-map-replay");
    let mut per_repo: BTreeMap<String, Vec<Replayed>> = BTreeMap::new();
    for case in cases {
        let Some(gd) = super::git_dir(&case.repo) else {
            eprintln!("replay: no git directory for {}", case.repo);
            continue;
        };
        let Some(diffs) = diffs(&gd, case) else {
            eprintln!("replay: no diff for {}", case.id);
            continue;
        };
        let Ok(tree) = trees.join(&case.id).canonicalize() else {
            continue;
        };
        let name = case.repo.rsplit('/').next().unwrap_or("repo");
        let dir: PathBuf = base.join(name);
        if !copy_tree(&tree, &dir) {
            eprintln!("replay: cannot copy the tree of {}", case.id);
            continue;
        }
        // A HOME of its own: what pai remembers of one case's session must not steer the next.
        let home = base.join("home");
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::create_dir_all(&home);
        let r = replay(case, &dir, &home, &gd, diffs);
        if verbose {
            eprintln!(
                "replay {} calls={} in={} out={} applied={} identical={} undone={:?} {}",
                case.id, r.calls, r.input, r.output, r.applied, r.identical, r.undone, r.note
            );
        }
        per_repo.entry(case.repo.clone()).or_default().push(r);
    }
    let _ = std::fs::remove_dir_all(&base);
    summarize(&per_repo)
}

fn summarize(per_repo: &BTreeMap<String, Vec<Replayed>>) -> Vec<Row> {
    let mut groups: Vec<(String, Vec<&Replayed>)> = per_repo
        .iter()
        .map(|(r, v)| (r.clone(), v.iter().collect()))
        .collect();
    groups.push((
        "all repositories".into(),
        per_repo.values().flatten().collect(),
    ));
    let mut rows = Vec::new();
    for (name, runs) in groups {
        let n = runs.len();
        if n == 0 {
            continue;
        }
        let calls: u64 = runs.iter().map(|r| r.calls).sum();
        let mean = calls as f64 / n as f64;
        let by = |k: u64| runs.iter().filter(|r| r.calls == k).count();
        let tokens = |r: &&Replayed| r.input + r.output;
        let mut per_task: Vec<u64> = runs.iter().map(tokens).collect();
        per_task.sort_unstable();
        let mean_tokens = per_task.iter().sum::<u64>() as f64 / n as f64;
        let applied = runs.iter().filter(|r| r.applied).count();
        let identical = runs.iter().filter(|r| r.applied && r.identical).count();
        let undos: Vec<bool> = runs.iter().filter_map(|r| r.undone).collect();
        let undone = undos.iter().filter(|&&u| u).count();
        let all = name == "all repositories";
        let mut row = Row::new(
            "map replay",
            format!("{name} ({n} cases): oracle through `pai run`"),
            format!(
                "{mean:.2} calls per task (1: {}, 2: {}, 3+: {}), tokens per task median {} mean {}",
                by(1),
                by(2),
                n - by(1) - by(2),
                thousands(per_task[n / 2]),
                thousands(mean_tokens.round() as u64),
            ),
        )
        .note(format!(
            "edits applied {applied}/{n}, identical to the commit {identical}/{applied}; pai undo restored the parent {undone}/{}",
            undos.len()
        ));
        if all {
            row = row.target(
                "≤ 1.4 calls; applied = identical; undo restores",
                mean <= 1.4 && identical == applied && undone == undos.len(),
            );
        }
        rows.push(row);
    }
    rows
}
