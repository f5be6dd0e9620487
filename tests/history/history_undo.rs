//! `pai undo` / `pai redo`: every case of SPEC section 6, run from a fresh "process" (the free
//! functions, after the session is gone) unless the test is about `/undo` inside a session.

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, redo, undo};

fn refused(err: HistoryError) -> (String, String) {
    match err {
        HistoryError::Refused { message, hint } | HistoryError::NoSession { message, hint } => {
            (message, hint)
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn undo_restores_the_previous_contents_and_moves_the_branch_back() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let id = s.id().to_string();
    let info = run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(report.plan, 1);
    assert_eq!(report.session, id);
    assert_eq!(report.restored, ["a.txt"]);
    assert_eq!(report.request, "edit a");
    assert_eq!(p.read("a.txt"), "alpha\n");
    assert_eq!(p.rev(&format!("refs/pai/undone/{id}/1")), info.id);
    // That was the line's last plan: HEAD is back on main and the empty branch is gone.
    assert_eq!(report.head_back.as_deref(), Some("main"));
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.rev("main"), base);
    assert!(!p.git_try(&["rev-parse", "--verify", "-q", &branch]).0);
    assert_eq!(p.status(), "");
}

#[test]
fn dirty_file_touched_by_a_plan_undo_returns_the_users_exact_bytes() {
    let p = Project::repo();
    let user_bytes = b"alpha\r\nuser's own edit \xe2\x9c\x93\r\n";
    p.write_bytes("a.txt", user_bytes);
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "rewrite a",
        &[Op::Write("a.txt", b"agent\n")],
    )
    .unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read_bytes("a.txt"), user_bytes);
    // Exactly as before the plan: the user's edit is uncommitted again, not absorbed.
    assert_eq!(p.status(), " M a.txt\n");
}

#[test]
fn mv_undone() {
    let p = Project::repo();
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "rename",
        &[Op::Move("a.txt", "docs/renamed.txt")],
    )
    .unwrap();
    assert_eq!(p.changed(&info.id), ["A docs/renamed.txt", "D a.txt"]);
    drop(s);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(report.restored, ["a.txt"]);
    assert_eq!(report.removed, ["docs/renamed.txt"]);
    assert_eq!(p.read("a.txt"), "alpha\n");
    assert!(!p.exists("docs/renamed.txt"));
    assert_eq!(p.status(), "");
}

#[test]
fn rm_undone() {
    let p = Project::repo();
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "remove",
        &[Op::Remove("b.txt"), Op::Remove("src")],
    )
    .unwrap();
    assert_eq!(p.changed(&info.id), ["D b.txt", "D src/lib.py"]);
    assert_eq!(p.status(), "");
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("b.txt"), "bravo\n");
    assert_eq!(p.read("src/lib.py"), "def f():\n    return 1\n");
    assert_eq!(p.status(), "");
}

#[test]
fn created_file_is_removed_by_undo() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "create",
        &[Op::Write("calc.py", b"print(1)\n")],
    )
    .unwrap();
    drop(s);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(report.removed, ["calc.py"]);
    assert!(!p.exists("calc.py"));
    assert_eq!(p.status(), "");
}

#[test]
fn created_file_the_user_then_edited_makes_undo_refuse() {
    let p = Project::repo();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "create",
        &[Op::Write("calc.py", b"print(1)\n")],
    )
    .unwrap();
    drop(s);
    p.write("calc.py", "print(1)\n# mine\n");
    let (message, hint) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("calc.py (modified)"), "{message}");
    assert!(hint.contains("pai undo --force"), "{hint}");
    // Nothing moved.
    assert_eq!(p.read("calc.py"), "print(1)\n# mine\n");
    assert_eq!(p.rev(&branch), info.id);
    assert_eq!(p.git(&["for-each-ref", "refs/pai/undone"]), "");
}

#[test]
fn staged_change_to_a_plans_file_makes_undo_refuse() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.write("a.txt", "staged by user\n");
    p.git(&["add", "a.txt"]);
    p.write("a.txt", "agent\n");
    let (message, _) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("a.txt (staged changes)"), "{message}");
}

#[test]
fn force_saves_the_current_state_then_undoes() {
    let p = Project::repo();
    let mut s = p.start();
    let id = s.id().to_string();
    run_plan(
        &mut s,
        &p.wt(),
        "create",
        &[
            Op::Write("calc.py", b"print(1)\n"),
            Op::Write("a.txt", b"agent\n"),
        ],
    )
    .unwrap();
    drop(s);
    p.write("calc.py", "print(1)\n# mine\n");
    let report = undo(&p.root, &p.wt(), true).unwrap();
    let saved = report.saved.unwrap();
    assert_eq!(saved, format!("refs/pai/saved/{id}/1"));
    assert_eq!(
        p.git(&["show", &format!("{saved}:calc.py")]),
        "print(1)\n# mine\n"
    );
    assert_eq!(p.trailer(&saved, "Pai-Kind"), "saved");
    assert!(!p.exists("calc.py"));
    assert_eq!(p.read("a.txt"), "alpha\n");
    assert_eq!(p.status(), "");
}

#[test]
fn undo_after_the_user_merged_the_branch_refuses_and_suggests_git_revert() {
    let p = Project::repo();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.git(&["switch", "-q", "main"]);
    p.git(&["merge", "-q", &branch]);
    p.git(&["switch", "-q", &branch]);
    let (message, hint) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("already on main"), "{message}");
    assert!(
        hint.contains(&format!("git revert {}", &info.id[..7])),
        "{hint}"
    );
    assert_eq!(p.read("a.txt"), "agent\n");
}

#[test]
fn undo_refuses_when_a_remote_tracking_ref_has_the_plan() {
    let p = Project::repo();
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.git(&["update-ref", "refs/remotes/origin/feature", &info.id]);
    let (message, _) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("origin/feature"), "{message}");
}

#[test]
fn undo_with_the_user_on_another_branch_refuses() {
    let p = Project::repo();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.git(&["switch", "-q", "main"]);
    let (message, hint) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(
        message.contains("HEAD is on `main`, not a pai session branch"),
        "{message}"
    );
    assert!(hint.contains(&format!("git switch {branch}")), "{hint}");
    assert_eq!(p.read("a.txt"), "alpha\n");
}

#[test]
fn undo_refuses_a_commit_pai_did_not_make() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.write("b.txt", "my commit\n");
    p.git(&["commit", "-q", "-am", "user commit"]);
    let (message, hint) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(
        message.contains("\"user commit\" is not a pai plan"),
        "{message}"
    );
    assert!(hint.contains("git revert"), "{hint}");
}

#[test]
fn undo_during_a_merge_refuses() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    drop(s);
    p.write(".git/MERGE_HEAD", &format!("{}\n", p.rev("main")));
    let (message, hint) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("a merge is in progress"), "{message}");
    assert!(hint.contains("git merge --abort"), "{hint}");
}

#[test]
fn redo_after_undo() {
    let p = Project::repo();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "create and edit",
        &[Op::Write("calc.py", b"x\n"), Op::Write("a.txt", b"agent\n")],
    )
    .unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    let report = redo(&p.root, &p.wt()).unwrap();
    assert_eq!(report.plan, 1);
    assert_eq!(report.written, ["a.txt", "calc.py"]);
    assert_eq!(p.read("calc.py"), "x\n");
    assert_eq!(p.read("a.txt"), "agent\n");
    assert_eq!(p.rev(&branch), info.id);
    assert_eq!(p.git(&["for-each-ref", "refs/pai/undone"]), "");
    assert_eq!(p.status(), "");
    let (message, _) = refused(redo(&p.root, &p.wt()).unwrap_err());
    assert!(message.contains("nothing to redo"), "{message}");
}

#[test]
fn undo_twice_then_redo_twice_walks_the_plans_in_order() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let one = run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Write("a.txt", b"2\n")]).unwrap();
    drop(s);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!((report.plan, report.head_back), (2, None));
    assert_eq!(p.rev(&branch), one.id);
    assert!(
        p.git(&["reflog", "show", &branch])
            .contains("pai: undo plan 2")
    );
    assert_eq!(undo(&p.root, &p.wt(), false).unwrap().plan, 1);
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.rev("main"), base);
    assert_eq!(p.read("a.txt"), "alpha\n");
    let (message, _) = refused(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("not a pai session branch"), "{message}");
    let report = redo(&p.root, &p.wt()).unwrap();
    assert_eq!((report.plan, report.reentered), (1, true));
    assert_eq!(p.head_ref(), format!("refs/heads/{branch}"));
    assert_eq!(p.rev(&branch), one.id);
    assert_eq!(redo(&p.root, &p.wt()).unwrap().plan, 2);
    assert_eq!(p.rev(&branch), two.id);
    assert_eq!(p.read("a.txt"), "2\n");
}

#[test]
fn redo_refuses_when_the_branch_moved_on() {
    let p = Project::repo();
    let mut s = p.start();
    let undone = run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    s.undo(&p.wt(), false).unwrap();
    run_plan(&mut s, &p.wt(), "other", &[Op::Write("b.txt", b"b\n")]).unwrap();
    drop(s);
    let (message, hint) = refused(redo(&p.root, &p.wt()).unwrap_err());
    assert!(message.contains("nothing to redo"), "{message}");
    assert!(
        hint.contains(&format!("git cherry-pick {}", &undone.id[..7])),
        "{hint}"
    );
}

#[test]
fn redo_refuses_when_files_changed_since_the_undo() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "create", &[Op::Write("calc.py", b"x\n")]).unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    p.write("calc.py", "the user's own calc\n");
    let (message, _) = refused(redo(&p.root, &p.wt()).unwrap_err());
    assert!(message.contains("calc.py (created)"), "{message}");
    assert_eq!(p.read("calc.py"), "the user's own calc\n");
}

#[test]
fn undo_inside_the_session_and_busy_from_another_process() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    // Another process (here: the free function) cannot take the session's lock.
    let err = undo(&p.root, &p.wt(), false).unwrap_err();
    assert!(matches!(err, HistoryError::Busy { .. }), "{err}");
    assert!(err.hint().unwrap().contains("/undo"));
    let report = s.undo(&p.wt(), false).unwrap();
    assert_eq!(report.plan, 1);
    assert_eq!(p.read("a.txt"), "alpha\n");
    // Plan numbers keep growing after an undo, so undone refs never collide.
    let next = run_plan(&mut s, &p.wt(), "again", &[Op::Write("a.txt", b"again\n")]).unwrap();
    assert_eq!(next.plan, 2);
    assert_eq!(s.summary().plans, 1);
}

#[test]
fn undo_over_a_users_snapshot_leaves_their_edit_uncommitted() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"agent a\n")]).unwrap();
    p.write("b.txt", "user's b\n");
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Write("b.txt", b"agent b\n")]).unwrap();
    let snapshot = two.snapshot.unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("b.txt"), "user's b\n");
    // Undo goes under the snapshot taken for the plan: the user's edit is uncommitted again,
    // exactly as before plan 2, and the snapshot stays reachable from the undone ref.
    assert_eq!(p.rev(&branch), p.rev(&format!("{snapshot}^")));
    assert_eq!(p.status(), " M b.txt\n");
    assert!(
        p.git(&["for-each-ref", "refs/pai/undone"])
            .contains("undone")
    );
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(report.plan, 1);
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.rev("HEAD"), base);
    assert_eq!(p.read("a.txt"), "alpha\n");
    assert_eq!(p.read("b.txt"), "user's b\n");
    assert_eq!(p.status(), " M b.txt\n");
    // Redo puts plan 1 back; plan 2 sits on the snapshot and comes back with it.
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.read("a.txt"), "agent a\n");
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.rev(&branch), two.id);
    assert_eq!(p.read("b.txt"), "agent b\n");
    assert_eq!(p.status(), "");
}

#[test]
fn undo_and_redo_walk_the_line_across_sessions() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let b_before = p.read("b.txt");
    let mut first = p.start();
    let first_branch = first.branch().unwrap().to_string();
    let one = run_plan(&mut first, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    drop(first);
    let mut second = p.start();
    let two = run_plan(&mut second, &p.wt(), "two", &[Op::Write("b.txt", b"two\n")]).unwrap();
    drop(second);
    let undone = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(
        (undone.request.as_str(), undone.session.as_str()),
        ("two", two.session.as_str())
    );
    assert_eq!(p.rev(&first_branch), one.id);
    let undone = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(undone.request, "one");
    assert_eq!(undone.head_back.as_deref(), Some("main"));
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.rev("main"), base);
    assert_eq!(
        (p.read("a.txt"), p.read("b.txt")),
        ("alpha\n".to_string(), b_before)
    );
    assert_eq!(p.status(), "");
    assert_eq!(redo(&p.root, &p.wt()).unwrap().request, "one");
    assert_eq!(redo(&p.root, &p.wt()).unwrap().request, "two");
    assert_eq!(p.head_ref(), format!("refs/heads/{first_branch}"));
    assert_eq!(p.rev(&first_branch), two.id);
    assert_eq!(p.read("b.txt"), "two\n");
    assert_eq!(p.status(), "");
}

#[test]
fn executable_and_crlf_files_round_trip_through_commit_and_undo() {
    let p = Project::repo();
    p.write_bytes("run.sh", b"#!/bin/sh\r\necho base\r\n");
    std::fs::set_permissions(
        p.path("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    p.git(&["add", "run.sh"]);
    p.git(&["commit", "-q", "-m", "script"]);
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "edit script",
        &[Op::WriteExec("run.sh", b"#!/bin/sh\r\necho agent\r\n")],
    )
    .unwrap();
    assert_eq!(p.mode("run.sh"), 0o755);
    assert_eq!(p.status(), "");
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read_bytes("run.sh"), b"#!/bin/sh\r\necho base\r\n");
    assert_eq!(p.mode("run.sh"), 0o755);
    assert_eq!(p.status(), "");
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.read_bytes("run.sh"), b"#!/bin/sh\r\necho agent\r\n");
    assert_eq!(p.mode("run.sh"), 0o755);
}

#[test]
fn unborn_branch_undo_and_redo() {
    let p = Project::unborn();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(&mut s, &p.wt(), "create", &[Op::Write("calc.py", b"1\n")]).unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert!(!p.exists("calc.py"));
    assert_eq!(p.head_ref(), "refs/heads/main");
    let (exists, _, _) = p.git_try(&["rev-parse", "--verify", "-q", &branch]);
    assert!(!exists);
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.head_ref(), format!("refs/heads/{branch}"));
    assert_eq!(p.rev(&branch), info.id);
    assert_eq!(p.read("calc.py"), "1\n");
}

#[test]
fn not_a_repository_undo_and_redo() {
    let p = Project::plain();
    p.write("keep.txt", "untouched\n");
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "create", &[Op::Write("calc.py", b"1\n")]).unwrap();
    run_plan(&mut s, &p.wt(), "edit", &[Op::Write("calc.py", b"2\n")]).unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("calc.py"), "1\n");
    undo(&p.root, &p.wt(), false).unwrap();
    assert!(!p.exists("calc.py"));
    assert_eq!(p.read("keep.txt"), "untouched\n");
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.read("calc.py"), "1\n");
}

/// A repository that ignores `local.cfg`, with the user's `local.cfg` in it (only the trash
/// can give it back).
fn with_ignored_local_cfg() -> Project {
    let p = Project::repo();
    p.write(".gitignore", "local.cfg\n");
    p.git(&["add", ".gitignore"]);
    p.git(&["commit", "-q", "-m", "ignore"]);
    p.write("local.cfg", "user settings\n");
    p
}

#[test]
fn ignored_file_overwritten_by_a_plan_comes_back_from_the_trash() {
    let p = with_ignored_local_cfg();
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "configure",
        &[
            Op::Write("local.cfg", b"agent settings\n"),
            Op::Write("a.txt", b"agent\n"),
        ],
    )
    .unwrap();
    drop(s);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(report.from_trash, ["local.cfg"]);
    assert_eq!(p.read("local.cfg"), "user settings\n");
    let report = redo(&p.root, &p.wt()).unwrap();
    assert_eq!(report.from_trash, ["local.cfg"]);
    assert_eq!(p.read("local.cfg"), "agent settings\n");
}

#[test]
fn redo_keeps_a_file_from_the_trash_the_user_changed_since_the_undo_and_says_so() {
    let p = with_ignored_local_cfg();
    let mut s = p.start();
    let ops = [Op::Remove("local.cfg"), Op::Write("a.txt", b"agent\n")];
    run_plan(&mut s, &p.wt(), "clean up", &ops).unwrap();
    drop(s);
    assert!(!p.exists("local.cfg"));
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("local.cfg"), "user settings\n");
    p.write("local.cfg", "edited after the undo\n");
    let report = redo(&p.root, &p.wt()).unwrap();
    assert_eq!(report.kept, ["local.cfg"]);
    assert!(!report.removed.contains(&"local.cfg".to_string()));
    assert_eq!(p.read("local.cfg"), "edited after the undo\n");
    assert_eq!(p.read("a.txt"), "agent\n");

    // Unchanged since the undo: removed again, nothing kept.
    let p2 = with_ignored_local_cfg();
    let mut s = p2.start();
    run_plan(&mut s, &p2.wt(), "clean up", &ops).unwrap();
    drop(s);
    undo(&p2.root, &p2.wt(), false).unwrap();
    let report = redo(&p2.root, &p2.wt()).unwrap();
    assert_eq!(report.kept, Vec::<String>::new());
    assert_eq!(report.removed, ["local.cfg"]);
    assert!(!p2.exists("local.cfg"));
}

#[test]
fn no_history_here_is_reported() {
    let p = Project::plain();
    let err = undo(&p.root, &p.wt(), false).unwrap_err();
    assert!(matches!(err, HistoryError::NoHistory { .. }), "{err}");
}

#[test]
fn undo_and_redo_a_plan_inherited_from_a_deleted_session_branch() {
    let p = Project::repo();
    let mut first = p.start();
    let first_branch = first.branch().unwrap().to_string();
    let first_id = first.id().to_string();
    let one = run_plan(&mut first, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    drop(first);
    // A session branch stacked on the first one, as earlier versions of pai made them.
    let second_branch = "pai/19990101_000000".to_string();
    p.git(&["switch", "-q", "-c", &second_branch]);
    p.git(&["branch", "-D", &first_branch]);
    let report = undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(
        (report.session.as_str(), report.plan),
        (first_id.as_str(), 1)
    );
    assert_eq!(p.read("a.txt"), "alpha\n");
    // The session's log still shows the plan, as undone, although its branch is gone.
    let sessions = pai::history::log(&p.root, Some(&first_id), false).unwrap();
    assert_eq!(sessions[0].branch, None);
    assert!(sessions[0].plans[0].undone);
    redo(&p.root, &p.wt()).unwrap();
    assert_eq!(p.rev(&second_branch), one.id);
    assert_eq!(p.read("a.txt"), "one\n");
}

#[test]
fn redo_after_a_new_session_on_the_line_re_applies_the_earlier_sessions_plan() {
    let p = Project::repo();
    let mut first = p.start();
    run_plan(&mut first, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    run_plan(&mut first, &p.wt(), "two", &[Op::Write("a.txt", b"two\n")]).unwrap();
    first.undo(&p.wt(), false).unwrap();
    drop(first);
    // A new session continues the line where the first one's undo left it.
    let second = p.start();
    drop(second);
    assert_eq!(redo(&p.root, &p.wt()).unwrap().request, "two");
    assert_eq!(p.read("a.txt"), "two\n");
}

#[test]
fn undo_of_the_only_plan_inside_the_session_lets_the_next_plan_start_a_new_line() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let one = run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    s.undo(&p.wt(), false).unwrap();
    assert_eq!(p.head_ref(), "refs/heads/main");
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Write("b.txt", b"two\n")]).unwrap();
    assert_eq!(two.plan, 2);
    assert_eq!(p.rev(&format!("{}^", two.id)), base);
    assert_eq!(p.head_ref(), format!("refs/heads/{}", two.branch));
    assert_ne!(two.id, one.id);
}

#[test]
fn gc_prunes_old_undone_and_discarded_refs_but_nothing_on_a_branch() {
    use pai::history::{GcOptions, gc};
    let p = Project::repo();
    let mut s = p.start();
    let id = s.id().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Write("a.txt", b"two\n")]).unwrap();
    s.undo(&p.wt(), false).unwrap();
    drop(s);
    // A discarded session someone branched from is on a branch: kept.
    p.git(&["update-ref", "refs/pai/discarded/19990101_000000", &two.id]);
    p.git(&["branch", "keep", &two.id]);
    let undone = format!("refs/pai/undone/{id}/2");
    assert_eq!(p.rev(&undone), two.id);
    let now = chrono::Local::now();
    let opts = |days_later: i64| GcOptions {
        days: 30,
        budget: None,
        now: now + chrono::Duration::days(days_later),
    };
    // Younger than 30 days: nothing goes.
    assert!(gc(&p.root, opts(0)).unwrap().refs.is_empty());
    p.git(&["branch", "-D", "keep"]);
    p.git(&["branch", "keep", &format!("{}^", two.id)]);
    let report = gc(&p.root, opts(31)).unwrap();
    assert!(report.refs.contains(&undone), "{report:?}");
    assert!(
        report.refs.iter().any(|r| r.ends_with("19990101_000000")),
        "{report:?}"
    );
    assert!(!p.git_try(&["rev-parse", "--verify", "-q", &undone]).0);
    // The plan still on the session branch, and its branch, are untouched.
    assert_eq!(p.read("a.txt"), "one\n");
    assert!(p.git(&["for-each-ref", "refs/heads/pai"]).contains("pai/"));
}
