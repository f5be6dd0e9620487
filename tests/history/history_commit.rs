//! Session start, refusals and plan commits, checked with the `git` command line.

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, PlanRecord, Session, StartOptions, project_root};
use pai::ui::session_end::session_end_text;

#[test]
fn clean_tree_plan_becomes_one_commit_on_the_session_branch() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    assert!(branch.starts_with("pai/"));
    // Nothing moves before the first plan commit: no branch yet, HEAD where it was.
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert!(!p.git_try(&["rev-parse", "--verify", "-q", &branch]).0);
    assert_eq!(p.status(), "");

    let wt = p.wt();
    let info = run_plan(
        &mut s,
        &wt,
        "add a power operation",
        &[
            Op::Write("a.txt", b"alpha\npower\n"),
            Op::Write("new.py", b"print(1)\n"),
        ],
    )
    .unwrap();
    assert_eq!(info.plan, 1);
    assert_eq!(info.files, ["a.txt", "new.py"]);
    assert_eq!(info.snapshot, None);
    assert_eq!(p.rev(&branch), info.id);
    assert_eq!(p.rev(&format!("{branch}^")), base);
    // The first plan commit created the branch and attached HEAD to it.
    assert_eq!(p.head_ref(), format!("refs/heads/{branch}"));
    assert_eq!(p.rev("main"), base);
    assert_eq!(
        p.git(&["log", "-1", "--format=%s", &branch]).trim(),
        "pai: add a power operation"
    );
    assert_eq!(p.changed(&branch), ["A new.py", "M a.txt"]);
    assert_eq!(p.trailer(&branch, "Pai-Kind"), "plan");
    assert_eq!(p.trailer(&branch, "Pai-Plan"), "1");
    assert_eq!(p.trailer(&branch, "Pai-Session"), s.id());
    assert_eq!(p.trailer(&branch, "Pai-Model"), "test-model");
    assert_eq!(p.trailer(&branch, "Pai-Calls"), "1");
    assert_eq!(
        p.trailer(&branch, "Pai-Tokens"),
        "1200 in, 340 out, 1000 cached, 20 reasoning"
    );
    let body = p.git(&["log", "-1", "--format=%b", &branch]);
    assert!(body.contains("1. WRITE a.txt\n2. WRITE new.py\n"), "{body}");
    // The user's branch never moves; index and work tree agree with the new commit.
    assert_eq!(p.rev("main"), base);
    assert_eq!(p.status(), "");
}

#[test]
fn no_hooks_and_no_signing() {
    let p = Project::repo();
    p.write(
        ".git/hooks/pre-commit",
        "#!/bin/sh\ntouch hook-ran\nexit 1\n",
    );
    p.write(
        ".git/hooks/commit-msg",
        "#!/bin/sh\ntouch hook-ran\nexit 1\n",
    );
    for hook in ["pre-commit", "commit-msg"] {
        std::fs::set_permissions(
            p.path(&format!(".git/hooks/{hook}")),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    p.git(&["config", "commit.gpgsign", "true"]);
    p.git(&["config", "gpg.program", "/bin/false"]);
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"x\n")]).unwrap();
    assert!(!p.exists("hook-ran"));
    let raw = p.git(&["cat-file", "commit", &info.id]);
    assert!(!raw.contains("gpgsig"), "{raw}");
}

#[test]
fn dirty_tree_plan_touching_the_users_file_snapshots_it_first() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    p.write("a.txt", "alpha\nuser line\n");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "append",
        &[Op::Write("a.txt", b"alpha\nuser line\nagent line\n")],
    )
    .unwrap();
    let snapshot = info.snapshot.clone().unwrap();
    assert_eq!(p.rev(&format!("{branch}^")), snapshot);
    assert_eq!(p.rev(&format!("{branch}^^")), base);
    assert_eq!(p.trailer(&snapshot, "Pai-Kind"), "user");
    assert_eq!(
        p.git(&["show", &format!("{snapshot}:a.txt")]),
        "alpha\nuser line\n"
    );
    // The plan commit holds only the agent's line.
    let diff = p.git(&["diff", &snapshot, &info.id]);
    assert!(diff.contains("+agent line"), "{diff}");
    assert!(!diff.contains("+user line"), "{diff}");
    assert_eq!(p.status(), "");
}

#[test]
fn a_snapshot_left_by_a_session_that_stopped_mid_plan_is_reported() {
    let p = Project::repo();
    p.write("a.txt", "alpha\nuser line\n");
    let first = {
        let mut s = p.start();
        let mut plan = s.begin_plan();
        plan.prepare(&mut s, &p.wt(), &["a.txt".to_string()])
            .unwrap();
        // pai stops here: the plan's edit is half done, nothing is committed or finished.
        p.write("a.txt", "half-done agent edit\n");
        s.id().to_string()
    };
    let reference = format!("refs/pai/pending/{first}");
    assert_eq!(
        p.git(&["show", &format!("{reference}:a.txt")]),
        "alpha\nuser line\n"
    );
    let s = p.start();
    assert_ne!(s.id(), first);
    let left = s.leftover_snapshots();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].session, first);
    assert_eq!(left[0].reference, reference);
    assert_eq!(left[0].files, ["a.txt"]);
    let text = pai::ui::leftover_text::leftover_snapshot_text(&left[0]);
    assert!(
        text.contains(&first)
            && text.contains("(a.txt)")
            && text.contains(&format!("`git checkout {reference} -- <file>`"))
            && text.contains(&format!("`git update-ref -d {reference}`")),
        "{text}"
    );
    // A session's own snapshot under way is not a leftover.
    let mut s = s;
    let mut plan = s.begin_plan();
    plan.prepare(&mut s, &p.wt(), &["a.txt".to_string()])
        .unwrap();
    assert_eq!(s.leftover_snapshots().len(), 1);
    drop((plan, s));
    // Forgotten with the command the report gives.
    p.git(&["update-ref", "-d", &reference]);
    let others: Vec<String> = p
        .start()
        .leftover_snapshots()
        .into_iter()
        .map(|l| l.session)
        .collect();
    assert!(!others.contains(&first), "{others:?}");
}

#[test]
fn dirty_tree_plan_not_touching_the_users_file_leaves_it_uncommitted() {
    let p = Project::repo();
    p.write("b.txt", "bravo edited by the user\n");
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert_eq!(info.snapshot, None);
    assert_eq!(p.changed(&info.id), ["M a.txt"]);
    assert_eq!(p.read("b.txt"), "bravo edited by the user\n");
    assert_eq!(p.status(), " M b.txt\n");
}

#[test]
fn users_staged_changes_are_not_committed_and_stay_staged() {
    let p = Project::repo();
    p.write("c.txt", "charlie staged\n");
    p.git(&["add", "c.txt"]);
    p.write("staged-new.txt", "new and staged\n");
    p.git(&["add", "staged-new.txt"]);
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert_eq!(p.changed(&info.id), ["M a.txt"]);
    assert_eq!(p.status(), "M  c.txt\nA  staged-new.txt\n");
    assert!(p.git(&["diff", "--cached"]).contains("+charlie staged"));
}

#[test]
fn partially_staged_file_touched_by_a_plan_keeps_both_versions() {
    let p = Project::repo();
    p.write("a.txt", "staged version\n");
    p.git(&["add", "a.txt"]);
    p.write("a.txt", "work tree version\n");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let info = run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    // Two snapshots below the plan: the staged content, then the work tree's.
    assert_eq!(
        p.git(&["show", &format!("{branch}^:a.txt")]),
        "work tree version\n"
    );
    assert_eq!(
        p.git(&["show", &format!("{branch}^^:a.txt")]),
        "staged version\n"
    );
    assert_eq!(p.trailer(&format!("{branch}^^"), "Pai-Kind"), "user");
    assert_eq!(p.changed(&info.id), ["M a.txt"]);
    assert_eq!(p.status(), "");
}

#[test]
fn untracked_files_stay_untracked_and_are_never_committed() {
    let p = Project::repo();
    p.write("notes.txt", "my notes\n");
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "create",
        &[Op::Write("new.py", b"x = 1\n")],
    )
    .unwrap();
    assert_eq!(p.changed(&info.id), ["A new.py"]);
    assert_eq!(p.status(), "?? notes.txt\n");
    assert!(
        p.git(&["ls-tree", "-r", "--name-only", &info.id])
            .lines()
            .all(|l| l != "notes.txt")
    );
}

#[test]
fn untracked_file_overwritten_by_a_plan_is_snapshotted_and_trashed() {
    let p = Project::repo();
    p.write("draft.md", "the user's draft\n");
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "rewrite the draft",
        &[Op::Write("draft.md", b"agent draft\n")],
    )
    .unwrap();
    let snapshot = info.snapshot.unwrap();
    assert_eq!(
        p.git(&["show", &format!("{snapshot}:draft.md")]),
        "the user's draft\n"
    );
    let trash = p.path(&format!(".pai_history/trash/{}/1/draft.md", s.id()));
    assert_eq!(
        std::fs::read_to_string(trash).unwrap(),
        "the user's draft\n"
    );
    // .pai_history never shows up in the user's status.
    assert_eq!(p.status(), "");
}

#[test]
fn detached_head_session_branches_from_the_commit() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    p.git(&["checkout", "-q", "--detach"]);
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    assert_eq!(p.rev("HEAD"), base);
    assert!(!p.git_try(&["symbolic-ref", "-q", "HEAD"]).0);
    let info = run_plan(&mut s, &p.wt(), "edit", &[Op::Write("a.txt", b"z\n")]).unwrap();
    assert_eq!(p.head_ref(), format!("refs/heads/{branch}"));
    assert_eq!(p.rev(&format!("{}^", info.id)), base);
    let summary = s.summary();
    assert_eq!(summary.base_branch, None);
    assert_eq!(summary.plans, 1);
    let merge = summary.merge.unwrap();
    assert!(
        merge.contains("--detach") && merge.contains(&branch),
        "{merge}"
    );
}

#[test]
fn unborn_branch_first_commit_has_no_parent() {
    let p = Project::unborn();
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    assert_eq!(p.head_ref(), "refs/heads/main");
    let info = run_plan(
        &mut s,
        &p.wt(),
        "make a calculator",
        &[Op::Write("calc.py", b"print(2+2)\n")],
    )
    .unwrap();
    assert_eq!(p.head_ref(), format!("refs/heads/{branch}"));
    assert_eq!(p.git(&["log", "--format=%P", &branch]).trim(), "");
    assert_eq!(p.git(&["rev-list", "--count", &branch]).trim(), "1");
    assert_eq!(p.changed(&info.id), ["A calc.py"]);
    assert_eq!(p.status(), "");
    let summary = s.summary();
    assert_eq!(summary.base_commit, None);
    assert_eq!(summary.base_branch.as_deref(), Some("main"));
}

#[test]
fn not_a_repository_uses_a_private_history_of_touched_paths_only() {
    let p = Project::plain();
    p.write("existing.txt", "not ours\n");
    p.write("sub/other.txt", "nor this\n");
    assert_eq!(project_root(&p.path("sub")), p.path("sub"));
    assert_eq!(project_root(&p.root), p.root);
    let mut s = p.start();
    assert!(s.is_private());
    let info = run_plan(&mut s, &p.wt(), "create", &[Op::Write("calc.py", b"1\n")]).unwrap();
    // No .git appears in the project, so plain git still sees no repository here.
    assert!(!p.exists(".git"));
    let (ok, _, _) = p.git_try(&["status"]);
    assert!(!ok);
    let files = p.private_git(&["ls-tree", "-r", "--name-only", &info.id]);
    assert_eq!(files, "calc.py\n");
    assert_eq!(
        p.private_git(&["log", "-1", "--format=%(trailers:key=Pai-Kind,valueonly)"])
            .trim(),
        "plan"
    );
    let summary = s.summary();
    assert!(summary.private);
    assert_eq!(summary.merge, None);
}

#[test]
fn second_session_started_on_a_pai_branch_continues_that_line() {
    let p = Project::repo();
    let mut first = p.start();
    let first_branch = first.branch().unwrap().to_string();
    let one = run_plan(&mut first, &p.wt(), "one", &[Op::Write("a.txt", b"one\n")]).unwrap();
    drop(first);
    let mut second = p.start();
    assert_ne!(second.id(), one.session);
    assert_eq!(second.branch(), Some(first_branch.as_str()));
    assert_eq!(second.continues_line(), Some(first_branch.as_str()));
    let two = run_plan(&mut second, &p.wt(), "two", &[Op::Write("b.txt", b"two\n")]).unwrap();
    assert_eq!(two.plan, 1);
    assert_eq!(two.session, second.id());
    assert_eq!(two.branch, first_branch);
    assert_eq!(p.rev(&first_branch), two.id);
    assert_eq!(p.rev(&format!("{}^", two.id)), one.id);
    assert_eq!(p.git(&["branch", "--list", "pai/*"]).lines().count(), 1);
    // Merges are suggested into the branch the line started from, never another pai branch.
    let summary = second.summary();
    assert_eq!(summary.plans, 1);
    assert_eq!(summary.base_branch.as_deref(), Some("main"));
    assert_eq!(
        summary.merge.as_deref(),
        Some(format!("git switch main && git merge {first_branch}").as_str())
    );
    // `pai log` finds the second session's plan on the line.
    drop(second);
    let logs = pai::history::log(&p.root, None, false).unwrap();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(
        logs.iter()
            .all(|l| l.branch.as_deref() == Some(first_branch.as_str()))
    );
}

#[test]
fn merge_in_progress_makes_the_session_read_only() {
    let p = Project::repo();
    p.git(&["switch", "-q", "-c", "other"]);
    p.write("a.txt", "other side\n");
    p.git(&["commit", "-q", "-am", "other"]);
    p.git(&["switch", "-q", "main"]);
    p.write("a.txt", "main side\n");
    p.git(&["commit", "-q", "-am", "main"]);
    let (ok, _, _) = p.git_try(&["merge", "other"]);
    assert!(!ok, "the merge should conflict");
    let mut s = p.start();
    let reason = s.read_only_reason().unwrap().to_string();
    assert!(reason.contains("merge is in progress"), "{reason}");
    assert!(reason.contains("git merge --abort"), "{reason}");
    assert_eq!(s.branch(), None);
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.git(&["branch", "--list", "pai/*"]), "");
    let err = s
        .begin_plan()
        .prepare(&mut s, &p.wt(), &["a.txt".into()])
        .unwrap_err();
    assert!(matches!(err, HistoryError::ReadOnly { .. }), "{err}");
}

#[test]
fn conflicts_without_a_merge_state_make_the_session_read_only() {
    let p = Project::repo();
    p.git(&["switch", "-q", "-c", "other"]);
    p.write("a.txt", "other side\n");
    p.git(&["commit", "-q", "-am", "other"]);
    p.git(&["switch", "-q", "main"]);
    p.write("a.txt", "main side\n");
    p.git(&["commit", "-q", "-am", "main"]);
    let _ = p.git_try(&["merge", "other"]);
    // Drop MERGE_HEAD but keep the conflicted index entries.
    std::fs::remove_file(p.path(".git/MERGE_HEAD")).unwrap();
    let s = p.start();
    let reason = s.read_only_reason().unwrap();
    assert!(reason.contains("unresolved conflicts (a.txt)"), "{reason}");
}

#[test]
fn bisect_in_progress_makes_the_session_read_only() {
    let p = Project::repo();
    p.git(&["bisect", "start"]);
    let s = p.start();
    assert!(s.read_only_reason().unwrap().contains("git bisect reset"));
}

#[test]
fn bare_repository_is_read_only() {
    let p = Project::plain();
    p.git(&["init", "-q", "--bare", "repo.git"]);
    let root = p.path("repo.git");
    assert_eq!(project_root(&root), root);
    let s = Session::start(&root, StartOptions::now()).unwrap();
    assert!(
        s.read_only_reason().unwrap().contains("bare"),
        "{:?}",
        s.read_only_reason()
    );
}

#[test]
fn unopenable_repository_is_read_only() {
    let p = Project::repo();
    p.git(&["config", "core.repositoryformatversion", "1"]);
    p.git(&["config", "extensions.paiunknownextension", "true"]);
    p.write("src/deep/file.txt", "x\n");
    assert_eq!(project_root(&p.path("src/deep")), p.root);
    let s = p.start();
    let reason = s.read_only_reason().unwrap();
    assert!(reason.contains("cannot open the repository"), "{reason}");
    // Plain git refuses this repository too; HEAD is read as a file.
    assert_eq!(p.read(".git/HEAD"), "ref: refs/heads/main\n");
}

#[test]
fn repository_owned_by_another_user_is_read_only() {
    // Ownership can only be faked by root (chown); elsewhere the check is libgit2's own.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let p = Project::repo();
    let git_dir = std::ffi::CString::new(p.path(".git").to_str().unwrap()).unwrap();
    let root = std::ffi::CString::new(p.root.to_str().unwrap()).unwrap();
    unsafe {
        assert_eq!(libc::chown(git_dir.as_ptr(), 4242, 4242), 0);
        assert_eq!(libc::chown(root.as_ptr(), 4242, 4242), 0);
    }
    let s = p.start();
    let reason = s.read_only_reason().unwrap();
    assert!(reason.contains("safe.directory"), "{reason}");
}

#[test]
fn a_second_session_on_the_same_work_tree_is_read_only() {
    let p = Project::repo();
    let first = p.start();
    let second = p.start();
    assert!(first.read_only_reason().is_none());
    let reason = second.read_only_reason().unwrap();
    assert!(reason.contains("another pai session"), "{reason}");
    assert!(
        reason.contains(&format!("pid {}", std::process::id())),
        "{reason}"
    );
    drop(first);
    assert!(p.start().read_only_reason().is_none());
}

#[test]
fn linked_worktree_is_its_own_project_with_its_own_lock() {
    let p = Project::repo();
    p.git(&["worktree", "add", "-q", "../linked"]);
    let linked = p.root.parent().unwrap().join("linked");
    std::fs::create_dir_all(linked.join("deep")).unwrap();
    assert_eq!(project_root(&linked.join("deep")), linked);
    let main_session = p.start();
    let mut linked_session = Session::start(&linked, StartOptions::now()).unwrap();
    assert!(main_session.read_only_reason().is_none());
    assert!(linked_session.read_only_reason().is_none());
    let wt = history_common::FsWorkTree {
        root: linked.clone(),
    };
    let info = run_plan(
        &mut linked_session,
        &wt,
        "in the worktree",
        &[Op::Write("a.txt", b"linked\n")],
    )
    .unwrap();
    let branch = linked_session.branch().unwrap().to_string();
    assert_eq!(p.rev(&branch), info.id);
    // The main checkout's session, started in the same second, gets a branch of its own.
    let mut main_session = main_session;
    let other = run_plan(
        &mut main_session,
        &p.wt(),
        "in main",
        &[Op::Write("a.txt", b"main\n")],
    )
    .unwrap();
    assert_ne!(other.branch, branch);
    assert_eq!(p.rev(&other.branch), other.id);
    assert_eq!(p.head_ref(), format!("refs/heads/{}", other.branch));
    let status = p.git(&["-C", linked.to_str().unwrap(), "status", "--porcelain"]);
    assert_eq!(status, "");
}

#[test]
fn env_file_written_by_the_user_is_never_committed() {
    let p = Project::repo();
    p.write(".env", "API_KEY=secret\n");
    p.write("config/.env.local", "TOKEN=secret\n");
    let mut s = p.start();
    let wt = p.wt();
    let mut plan = s.begin_plan();
    plan.prepare(
        &mut s,
        &wt,
        &[".env".into(), "config".into(), "app.py".into()],
    )
    .unwrap();
    p.write("app.py", "print('hi')\n");
    let record = PlanRecord {
        request: "use the key".into(),
        touched: vec![".env".into(), "config".into(), "app.py".into()],
        ..PlanRecord::default()
    };
    let info = plan.commit(&mut s, &wt, &record).unwrap().unwrap();
    assert_eq!(p.changed(&info.id), ["A app.py"]);
    assert!(
        info.left_out
            .iter()
            .any(|l| l.path == ".env" && l.reason == "deny-listed")
    );
    assert_eq!(
        p.git(&["log", "--all", "--format=%H", "--", ".env", "config"]),
        ""
    );
    assert!(
        !p.path(&format!(".pai_history/trash/{}/1/.env", s.id()))
            .exists()
    );
}

#[test]
fn ignored_and_lfs_files_are_left_out_and_trashed() {
    let p = Project::repo();
    p.write(".gitignore", "build/\n");
    p.write(
        ".gitattributes",
        "*.bin filter=lfs diff=lfs merge=lfs -text\n",
    );
    p.git(&["add", ".gitignore", ".gitattributes"]);
    p.git(&["commit", "-q", "-m", "rules"]);
    p.write("build/out.txt", "user's build output\n");
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "build",
        &[
            Op::Write("build/out.txt", b"agent output\n"),
            Op::Write("data.bin", b"\x00\x01"),
            Op::Write("a.txt", b"agent\n"),
        ],
    )
    .unwrap();
    assert_eq!(p.changed(&info.id), ["M a.txt"]);
    assert!(
        info.left_out
            .iter()
            .any(|l| l.path == "build/out.txt" && l.reason == "ignored")
    );
    assert!(
        info.warnings
            .iter()
            .any(|w| w.contains("data.bin") && w.contains("lfs"))
    );
    let trash = p.path(&format!(".pai_history/trash/{}/1/build/out.txt", s.id()));
    assert_eq!(
        std::fs::read_to_string(trash).unwrap(),
        "user's build output\n"
    );
}

#[test]
fn executable_bit_and_crlf_are_committed_exactly() {
    let p = Project::repo();
    let mut s = p.start();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "scripts",
        &[
            Op::WriteExec("run.sh", b"#!/bin/sh\necho hi\n"),
            Op::Write("win.txt", b"one\r\ntwo\r\n"),
        ],
    )
    .unwrap();
    let tree = p.git(&["ls-tree", &info.id, "run.sh", "win.txt"]);
    assert!(
        tree.contains("100755 blob") && tree.contains("run.sh"),
        "{tree}"
    );
    assert!(
        tree.contains("100644 blob") && tree.contains("win.txt"),
        "{tree}"
    );
    let blob = std::process::Command::new("git")
        .args(["cat-file", "blob", &format!("{}:win.txt", info.id)])
        .current_dir(&p.root)
        .output()
        .unwrap()
        .stdout;
    assert_eq!(blob, b"one\r\ntwo\r\n");
    assert_eq!(p.status(), "");
}

#[test]
fn identity_comes_from_git_config_else_pai_localhost_without_writing_config() {
    let p = Project::repo();
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    assert_eq!(
        p.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>", &info.id])
            .trim(),
        "pai <pai@localhost>|pai <pai@localhost>"
    );
    let (has_name, _, _) = p.git_try(&["config", "user.name"]);
    assert!(!has_name, "pai must not write the user's config");
    p.git(&["config", "user.name", "Ada Lovelace"]);
    p.git(&["config", "user.email", "ada@example.com"]);
    let info = run_plan(&mut s, &p.wt(), "two", &[Op::Write("a.txt", b"2\n")]).unwrap();
    assert_eq!(
        p.git(&["log", "-1", "--format=%an <%ae>", &info.id]).trim(),
        "Ada Lovelace <ada@example.com>"
    );
}

#[test]
fn plan_without_changes_makes_no_commit_and_drops_its_snapshot() {
    let p = Project::repo();
    p.write("a.txt", "user edit\n");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    let tip = p.rev("main");
    let wt = p.wt();
    let mut plan = s.begin_plan();
    plan.prepare(&mut s, &wt, &["a.txt".into()]).unwrap();
    let record = PlanRecord {
        request: "failed plan".into(),
        touched: vec!["a.txt".into()],
        ..PlanRecord::default()
    };
    assert_eq!(plan.commit(&mut s, &wt, &record).unwrap(), None);
    // No plan recorded: no branch, HEAD and main where they were.
    assert!(!p.git_try(&["rev-parse", "--verify", "-q", &branch]).0);
    assert_eq!(p.head_ref(), "refs/heads/main");
    assert_eq!(p.rev("main"), tip);
    assert_eq!(p.status(), " M a.txt\n");
    assert_eq!(p.git(&["for-each-ref", "refs/pai/pending"]), "");
    // The next plan is still plan 1.
    let info = run_plan(&mut s, &wt, "works", &[Op::Write("b.txt", b"b\n")]).unwrap();
    assert_eq!(info.plan, 1);
}

#[test]
fn session_ids_get_a_suffix_when_taken() {
    let p = Project::repo();
    let now = chrono::Local::now();
    let opts = || StartOptions {
        now,
        identity: None,
    };
    let mut first = Session::start(&p.root, opts()).unwrap();
    run_plan(&mut first, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    let first_id = first.id().to_string();
    drop(first);
    let second = Session::start(&p.root, opts()).unwrap();
    assert_eq!(second.id(), format!("{first_id}-2"));
    assert_eq!(first_id, now.format("%Y%m%d_%H%M%S").to_string());
}

#[test]
fn a_session_that_carries_out_nothing_changes_nothing_in_git() {
    let p = Project::repo();
    let before = p.git(&["for-each-ref"]);
    let head = std::fs::read(p.root.join(".git/HEAD")).unwrap();
    let s = p.start();
    // Nothing moves at the start: the branch is created at the first plan commit.
    assert_eq!(p.head_ref(), "refs/heads/main");
    let summary = s.finish();
    assert_eq!(summary.plans, 0);
    assert_eq!(summary.branch, None);
    assert!(
        session_end_text(&summary).contains("nothing changed in git"),
        "{}",
        session_end_text(&summary)
    );
    assert_eq!(std::fs::read(p.root.join(".git/HEAD")).unwrap(), head);
    assert_eq!(p.git(&["for-each-ref"]), before);
    assert_eq!(p.status(), "");
}

#[test]
fn summary_lists_review_merge_and_discard_commands() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    let summary = s.finish();
    assert_eq!(summary.plans, 1);
    assert_eq!(summary.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(
        summary.review.as_deref(),
        Some(format!("git diff {}...{branch}", &base[..7]).as_str())
    );
    assert_eq!(
        summary.merge.as_deref(),
        Some(format!("git switch main && git merge {branch}").as_str())
    );
    // Never `git branch -D`: that would drop the only copy of the snapshotted edits.
    assert_eq!(
        summary.discard.as_deref(),
        Some(format!("pai discard {}", summary.session).as_str())
    );
    let text = session_end_text(&summary);
    assert!(
        text.contains("1 plan on") && text.contains("git merge"),
        "{text}"
    );
    // The review command works as printed.
    let review = summary.review.unwrap();
    let args: Vec<&str> = review.split(' ').skip(1).collect();
    assert!(p.git(&args).contains("+1"));
}

#[test]
fn merging_the_session_branch_fast_forwards_to_exactly_the_agents_files() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    p.write("b.txt", "user's unrelated edit\n");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"agent a\n")]).unwrap();
    run_plan(
        &mut s,
        &p.wt(),
        "two",
        &[Op::Write("new/mod.py", b"x = 2\n"), Op::Remove("c.txt")],
    )
    .unwrap();
    drop(s);
    p.git(&["stash", "-q"]);
    p.git(&["switch", "-q", "main"]);
    let out = p.git(&["merge", &branch]);
    assert!(out.contains("Fast-forward"), "{out}");
    let mut files: Vec<String> = p
        .git(&["diff", "--name-status", &base, "main"])
        .lines()
        .map(|l| l.replace('\t', " "))
        .collect();
    files.sort();
    assert_eq!(files, ["A new/mod.py", "D c.txt", "M a.txt"]);
    assert_eq!(p.read("a.txt"), "agent a\n");
    p.git(&["stash", "pop", "-q"]);
    assert_eq!(p.read("b.txt"), "user's unrelated edit\n");
}

#[test]
fn commit_refuses_when_head_moved_away_mid_session() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("b.txt", b"one\n")]).unwrap();
    p.git(&["switch", "-q", "main"]);
    let wt = p.wt();
    let err = s
        .begin_plan()
        .prepare(&mut s, &wt, &["a.txt".into()])
        .unwrap_err();
    assert!(matches!(err, HistoryError::HeadMoved { .. }), "{err}");
    assert!(err.to_string().contains("`main`"), "{err}");
}

#[test]
fn paths_escaping_the_project_are_refused() {
    let p = Project::repo();
    let mut s = p.start();
    let wt = p.wt();
    for bad in ["../outside.txt", "/etc/passwd", ".git/config", "a/../../x"] {
        let err = s
            .begin_plan()
            .prepare(&mut s, &wt, &[bad.to_string()])
            .unwrap_err();
        assert!(
            matches!(err, HistoryError::InvalidPath { .. }),
            "{bad}: {err}"
        );
    }
}

#[test]
fn the_summary_says_the_branch_holds_a_snapshot_of_the_users_edits() {
    let p = Project::repo();
    p.write("a.txt", "the user's own edit\n");
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert!(info.snapshot.is_some());
    let summary = s.summary();
    assert_eq!((summary.plans, summary.snapshots), (1, 1));
    let text = session_end_text(&summary);
    assert!(
        text.contains("1 snapshot of your uncommitted edits"),
        "{text}"
    );
    // Without one, nothing is said.
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "edit a", &[Op::Write("a.txt", b"agent\n")]).unwrap();
    assert_eq!(s.summary().snapshots, 0);
    assert!(!session_end_text(&s.summary()).contains("snapshot"));
}
