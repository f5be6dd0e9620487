//! pai updates the user's index itself (git's on-disk format, versions 2-4, with extensions);
//! git must read every result cleanly and agree with it. `git write-tree` is the sharpest
//! oracle: it trusts the cache tree, so a directory pai forgot to invalidate shows up as a
//! wrong tree.

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, PlanRecord};

fn index_version(p: &Project) -> u32 {
    let bytes = p.read_bytes(".git/index");
    u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]])
}

/// `git ls-files -s` without the lines of `skip`.
fn staged_except(p: &Project, skip: &[&str]) -> Vec<String> {
    p.git(&["ls-files", "-s"])
        .lines()
        .filter(|l| !skip.iter().any(|s| l.ends_with(&format!("\t{s}"))))
        .map(str::to_string)
        .collect()
}

fn nested_repo() -> Project {
    let p = Project::repo();
    for i in 0..30 {
        p.write(&format!("src/deep/more/f{i}.txt"), &format!("{i}\n"));
        p.write(&format!("lib/l{i}.txt"), &format!("{i}\n"));
    }
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "more"]);
    // Make sure the index carries a complete cache tree.
    p.git(&["write-tree"]);
    p
}

#[test]
fn cache_tree_is_invalidated_so_git_write_tree_matches_the_plan_commit() {
    let p = nested_repo();
    let before = staged_except(&p, &["src/deep/more/f3.txt", "newdir/x.txt", "lib/l7.txt"]);
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "nested",
        &[
            Op::Write("src/deep/more/f3.txt", b"changed\n"),
            Op::Write("newdir/x.txt", b"new\n"),
            Op::Remove("lib/l7.txt"),
        ],
    )
    .unwrap();
    assert_eq!(
        p.git(&["write-tree"]).trim(),
        p.rev(&format!("{}^{{tree}}", info.id))
    );
    assert_eq!(p.status(), "");
    // Every other entry is byte-for-byte what git had.
    let after = staged_except(&p, &["src/deep/more/f3.txt", "newdir/x.txt", "lib/l7.txt"]);
    assert_eq!(before, after);
    assert_eq!(index_version(&p), 2);
}

#[test]
fn index_version_4_is_kept_and_read_by_git() {
    let p = nested_repo();
    p.git(&["update-index", "--index-version", "4"]);
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "v4",
        &[
            Op::Write("lib/l10.txt", b"ten\n"),
            Op::Write("lib/l10b.txt", b"new\n"),
            Op::Remove("lib/l11.txt"),
        ],
    )
    .unwrap();
    assert_eq!(index_version(&p), 4);
    assert_eq!(p.status(), "");
    assert_eq!(
        p.git(&["write-tree"]).trim(),
        p.rev(&format!("{}^{{tree}}", info.id))
    );
    drop(s);
    pai::history::undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.status(), "");
    assert_eq!(index_version(&p), 4);
}

#[test]
fn index_version_3_extended_flags_survive() {
    let p = Project::repo();
    p.write("planned.txt", "intent to add\n");
    p.git(&["add", "-N", "planned.txt"]);
    assert_eq!(index_version(&p), 3);
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "v3", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert_eq!(index_version(&p), 3);
    assert_eq!(p.status(), " A planned.txt\n");
}

#[test]
fn optional_extensions_are_dropped_safely_and_untracked_cache_stays_right() {
    let p = Project::repo();
    p.git(&["config", "core.untrackedCache", "true"]);
    p.git(&["config", "index.recordEndOfIndexEntries", "true"]);
    p.git(&["config", "index.recordOffsetTable", "true"]);
    p.write("was-untracked.txt", "user file\n");
    p.write("still-untracked.txt", "other\n");
    p.git(&["status", "--porcelain"]);
    p.git(&["update-index", "--force-write-index"]);
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "adopt",
        &[Op::Write("was-untracked.txt", b"agent\n")],
    )
    .unwrap();
    assert_eq!(p.status(), "?? still-untracked.txt\n");
    let (ok, _, err) = p.git_try(&["ls-files", "--debug"]);
    assert!(ok && err.is_empty(), "{err}");
}

#[test]
fn skip_hash_index_is_accepted() {
    let p = Project::repo();
    p.git(&[
        "-c",
        "index.skipHash=true",
        "update-index",
        "--force-write-index",
    ]);
    let bytes = p.read_bytes(".git/index");
    assert!(bytes[bytes.len() - 20..].iter().all(|&b| b == 0));
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert_eq!(p.status(), "");
}

#[test]
fn split_index_makes_the_session_read_only() {
    let p = Project::repo();
    p.git(&["update-index", "--split-index"]);
    let s = p.start();
    let reason = s.read_only_reason().unwrap();
    assert!(reason.contains("split or sparse index"), "{reason}");
}

#[test]
fn a_held_index_lock_stops_the_commit_before_the_branch_moves() {
    let p = Project::repo();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let tip = p.rev("main");
    let wt = p.wt();
    let mut plan = s.begin_plan();
    plan.prepare(&mut s, &wt, &["a.txt".into()]).unwrap();
    p.write("a.txt", "agent\n");
    p.write(".git/index.lock", "held by another git");
    let record = PlanRecord {
        request: "edit".into(),
        touched: vec!["a.txt".into()],
        ..PlanRecord::default()
    };
    let err = plan.commit(&mut s, &wt, &record).unwrap_err().error;
    assert!(matches!(err, HistoryError::Index { .. }), "{err}");
    assert!(err.to_string().contains("index.lock exists"), "{err}");
    assert_eq!(p.rev("main"), tip);
    assert!(!p.git_try(&["rev-parse", "--verify", "-q", &branch]).0);
    assert_eq!(p.head_ref(), "refs/heads/main");
    // The other process's lock is left alone.
    assert_eq!(p.read(".git/index.lock"), "held by another git");
    std::fs::remove_file(p.path(".git/index.lock")).unwrap();
    assert_eq!(p.status(), " M a.txt\n");
}

/// A plan whose commit failed (another git held the index) is given back whole, with what
/// its preparation gathered: its next commit sits on the snapshot of the user's edit, so
/// those bytes stay reachable from the session branch, and the plan numbers do not skip or
/// repeat.
#[test]
fn a_failed_commit_keeps_the_users_snapshot_for_the_next_plan() {
    let p = Project::repo();
    p.write("a.txt", "the user's edit of a\n");
    p.write("b.txt", "the user's edit of b\n");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let wt = p.wt();
    let record = |touched: &str| PlanRecord {
        request: format!("edit {touched}"),
        touched: vec![touched.into()],
        ..PlanRecord::default()
    };
    let mut plan = s.begin_plan();
    plan.prepare(&mut s, &wt, &["a.txt".into()]).unwrap();
    p.write("a.txt", "agent\n");
    p.write(".git/index.lock", "held by another git");
    let mut plan = plan.commit(&mut s, &wt, &record("a.txt")).unwrap_err().plan;
    std::fs::remove_file(p.path(".git/index.lock")).unwrap();

    // The plan given back snapshots another edited file, then commits.
    plan.prepare(&mut s, &wt, &["b.txt".into()]).unwrap();
    p.write("b.txt", "agent\n");
    let info = plan.commit(&mut s, &wt, &record("b.txt")).unwrap().unwrap();
    assert_eq!(info.plan, 1);
    let reachable = |path: &str, text: &str| {
        p.git(&["rev-list", &branch]).lines().any(|c| {
            let (ok, out, _) = p.git_try(&["show", &format!("{c}:{path}")]);
            ok && out == text
        })
    };
    assert!(reachable("a.txt", "the user's edit of a\n"));
    assert!(reachable("b.txt", "the user's edit of b\n"));
    assert_eq!(p.git(&["fsck", "--no-progress"]), "");
}

#[test]
fn file_replaced_by_a_directory_keeps_the_index_consistent() {
    let p = Project::repo();
    p.write("docs", "a file named docs\n");
    p.git(&["add", "docs"]);
    p.git(&["commit", "-q", "-m", "docs file"]);
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "docs dir",
        &[Op::Remove("docs"), Op::Write("docs/readme.md", b"# docs\n")],
    )
    .unwrap();
    assert_eq!(p.changed(&info.id), ["A docs/readme.md", "D docs"]);
    assert_eq!(p.status(), "");
    assert_eq!(
        p.git(&["write-tree"]).trim(),
        p.rev(&format!("{}^{{tree}}", info.id))
    );
    drop(s);
    pai::history::undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("docs"), "a file named docs\n");
    assert_eq!(p.status(), "");
}
