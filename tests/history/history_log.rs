//! `pai log`: plans newest first across sessions, with files, line counts, calls, tokens,
//! model and undone state, checked against `git show --numstat`.

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, log, undo};
use pai::ui::log_text::log_text as render_text;

#[test]
fn log_lists_plans_newest_first_with_files_and_usage() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let id = s.id().to_string();
    let branch = s.branch().unwrap().to_string();
    let one = run_plan(
        &mut s,
        &p.wt(),
        "add a power operation",
        &[
            Op::Write("a.txt", b"alpha\npower\n"),
            Op::Write("new.py", b"a\nb\nc\n"),
        ],
    )
    .unwrap();
    let two = run_plan(&mut s, &p.wt(), "remove b", &[Op::Remove("b.txt")]).unwrap();
    drop(s);
    let sessions = log(&p.root, None, false).unwrap();
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!(session.session, id);
    assert_eq!(session.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(session.base_commit.as_deref(), Some(&base[..7]));
    assert_eq!(session.base_branch.as_deref(), Some("main"));
    assert_eq!(
        session.merge.as_deref(),
        Some(format!("git switch main && git merge {branch}").as_str())
    );
    let plans: Vec<u32> = session.plans.iter().map(|p| p.plan).collect();
    assert_eq!(plans, [2, 1]);
    assert_eq!(session.plans[0].id, two.id);
    assert_eq!(session.plans[1].id, one.id);
    let first = &session.plans[1];
    assert_eq!(first.request, "add a power operation");
    assert_eq!(first.model.as_deref(), Some("test-model"));
    assert_eq!(
        (first.calls, first.input_tokens, first.output_tokens),
        (Some(1), Some(1200), Some(340))
    );
    assert!(!first.undone);
    assert_eq!(first.patch, None);
    // Line counts agree with git's own numstat.
    let numstat = p.git(&["show", "--numstat", "--format=", &one.id]);
    let mut from_git: Vec<String> = numstat
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>().join(" "))
        .collect();
    from_git.sort();
    let mut from_log: Vec<String> = first
        .files
        .iter()
        .map(|f| format!("{} {} {}", f.added, f.deleted, f.path))
        .collect();
    from_log.sort();
    assert_eq!(from_log, from_git);
    assert_eq!(session.plans[0].files[0].status, "deleted");

    let text = render_text(&sessions);
    assert!(text.contains(&format!("Session {id}")), "{text}");
    assert!(text.contains("add a power operation"), "{text}");
    assert!(text.contains("a.txt +1 -0"), "{text}");
    assert!(
        text.contains("1 call · tokens 1200 in / 340 out (1000 cached, 20 reasoning) · test-model"),
        "{text}"
    );
    assert!(text.contains(&format!("git merge {branch}")), "{text}");
    let text_pos = |needle: &str| text.find(needle).unwrap();
    assert!(text_pos("remove b") < text_pos("add a power operation"));
}

#[test]
fn log_json_round_trips_through_serde() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    drop(s);
    let sessions = log(&p.root, None, false).unwrap();
    let json = serde_json::to_string_pretty(&sessions).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let plan = &value[0]["plans"][0];
    assert_eq!(plan["plan"], 1);
    assert_eq!(plan["request"], "one");
    assert_eq!(plan["files"][0]["path"], "a.txt");
    assert_eq!(plan["undone"], false);
    assert_eq!(plan["cached_tokens"], 1000);
    assert_eq!(plan["reasoning_tokens"], 20);
    assert_eq!(plan["input_tokens"], 1200);
    assert!(plan.get("patch").is_none());
}

#[test]
fn log_with_patch_includes_the_diff() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(
        &mut s,
        &p.wt(),
        "one",
        &[Op::Write("a.txt", b"alpha\nnew line\n")],
    )
    .unwrap();
    drop(s);
    let sessions = log(&p.root, None, true).unwrap();
    let patch = sessions[0].plans[0].patch.as_deref().unwrap();
    assert!(patch.contains("+new line"), "{patch}");
    assert!(patch.contains("a/a.txt"), "{patch}");
    assert!(render_text(&sessions).contains("+new line"));
}

#[test]
fn log_marks_undone_plans() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"1\n")]).unwrap();
    run_plan(&mut s, &p.wt(), "two", &[Op::Write("a.txt", b"2\n")]).unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    let sessions = log(&p.root, None, false).unwrap();
    let undone: Vec<(u32, bool)> = sessions[0]
        .plans
        .iter()
        .map(|p| (p.plan, p.undone))
        .collect();
    assert_eq!(undone, [(2, true), (1, false)]);
    assert!(render_text(&sessions).contains("two  [undone]"));
}

#[test]
fn log_of_one_session_and_of_an_unknown_session() {
    let p = Project::repo();
    let mut first = p.start();
    let first_id = first.id().to_string();
    run_plan(
        &mut first,
        &p.wt(),
        "first session plan",
        &[Op::Write("a.txt", b"1\n")],
    )
    .unwrap();
    drop(first);
    let mut second = p.start();
    let second_id = second.id().to_string();
    run_plan(
        &mut second,
        &p.wt(),
        "second session plan",
        &[Op::Write("b.txt", b"2\n")],
    )
    .unwrap();
    drop(second);
    let all = log(&p.root, None, false).unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(ids, [second_id.as_str(), first_id.as_str()]);
    // The second session's log holds only its own plan, not the first session's below it.
    assert_eq!(all[0].plans.len(), 1);
    assert_eq!(all[0].plans[0].request, "second session plan");
    let one = log(&p.root, Some(&first_id), false).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].plans[0].request, "first session plan");
    match log(&p.root, Some("19990101_000000"), false).unwrap_err() {
        HistoryError::Refused { message, hint } => {
            assert!(
                message.contains("no pai session `19990101_000000`"),
                "{message}"
            );
            assert!(
                hint.contains(&first_id) && hint.contains(&second_id),
                "{hint}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn log_skips_sessions_without_plans_and_works_outside_git() {
    let p = Project::plain();
    let s = p.start();
    drop(s);
    assert!(log(&p.root, None, false).unwrap().is_empty());
    assert!(render_text(&[]).contains("No pai plans"));
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "create", &[Op::Write("calc.py", b"1\n")]).unwrap();
    drop(s);
    let sessions = log(&p.root, None, false).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].merge, None);
    assert!(
        sessions[0]
            .review
            .as_deref()
            .unwrap()
            .contains("--git-dir=.pai_history/git")
    );
}

#[test]
fn long_multiline_request_is_shortened_in_the_subject_and_whole_in_the_log() {
    let p = Project::repo();
    let request = format!(
        "{}\nsecond line of the request",
        "make it better ".repeat(10)
    );
    let mut s = p.start();
    let info = run_plan(&mut s, &p.wt(), &request, &[Op::Write("a.txt", b"1\n")]).unwrap();
    drop(s);
    let subject = p.git(&["log", "-1", "--format=%s", &info.id]);
    assert!(subject.trim().chars().count() <= 72, "{subject}");
    assert!(subject.trim().ends_with('…'), "{subject}");
    assert_eq!(p.trailer(&info.id, "Pai-Kind"), "plan");
    let sessions = log(&p.root, None, false).unwrap();
    assert_eq!(
        sessions[0].plans[0].request,
        request
            .trim_end()
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The loose objects of `ids`' trees (every subtree and blob), deleted from `p`'s
/// repository: whatever reads them afterwards fails.
fn delete_trees_and_blobs(p: &Project, ids: &[&str]) {
    let mut objects = Vec::new();
    for id in ids {
        objects.push(p.rev(&format!("{id}^{{tree}}")));
        for line in p.git(&["ls-tree", "-r", "-t", id]).lines() {
            let (meta, _) = line.split_once('\t').unwrap();
            objects.push(meta.split(' ').nth(2).unwrap().to_string());
        }
    }
    for id in objects {
        let file = p.root.join(".git/objects").join(&id[..2]).join(&id[2..]);
        // Objects shared with the base commit may be gone already.
        let _ = std::fs::remove_file(file);
    }
}

#[test]
fn log_lists_files_from_the_plan_commit_without_reading_trees_or_blobs() {
    // A plan commit records its files and line counts when it is made; log reads them back
    // instead of diffing every plan's trees.
    let p = Project::repo();
    let mut s = p.start();
    let one = run_plan(
        &mut s,
        &p.wt(),
        "one",
        &[
            Op::Write("a.txt", b"alpha\npower\n"),
            Op::Write("dir/new file.py", b"a\nb\nc\n"),
            Op::Write("logo.bin", b"\x00\x01\x02"),
        ],
    )
    .unwrap();
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Remove("b.txt")]).unwrap();
    drop(s);
    let before = log(&p.root, None, false).unwrap();
    let body = p.git(&["show", "-s", "--format=%B", &one.id]);
    assert!(body.contains("added +3 -0 dir/new file.py\n"), "{body}");
    assert!(body.contains("added binary logo.bin\n"), "{body}");
    assert_eq!(p.trailer(&one.id, "Pai-Kind"), "plan", "trailers stay last");
    delete_trees_and_blobs(&p, &[&one.id, &two.id]);
    assert!(
        !p.git_try(&["show", "--stat", &one.id]).0,
        "git cannot diff it now"
    );
    let after = log(&p.root, None, false).unwrap();
    assert_eq!(after, before);
    let files: Vec<String> = after[0].plans[1]
        .files
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f.status, f.added, f.deleted, f.binary, f.path
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            "modified 1 0 false a.txt",
            "added 3 0 false dir/new file.py",
            "added 0 0 true logo.bin"
        ]
    );
    assert_eq!(after[0].plans[0].files[0].status, "deleted");
    // --patch needs the trees: it still diffs.
    assert!(log(&p.root, None, true).is_err());
}

#[test]
fn a_plan_commit_rewritten_with_other_content_is_no_longer_taken_for_a_plan() {
    let p = Project::repo();
    let mut s = p.start();
    let one = run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    drop(s);
    assert_eq!(log(&p.root, None, false).unwrap()[0].plans.len(), 1);
    // Amended with other content and the same message (as a rebase that resolved a
    // conflict would leave it): pai's mark (`Pai-Auth`, over tree, parents and message) no
    // longer verifies, so neither the recorded file list nor any other trailer is believed:
    // the commit is the user's, not a plan.
    p.write("a.txt", "alpha\n1\n2\n3\n");
    p.write("c.txt", "c\n");
    p.git(&["add", "a.txt", "c.txt"]);
    p.git(&["commit", "-q", "--amend", "--no-edit", "--no-verify"]);
    let amended = p.rev("HEAD");
    assert_ne!(amended, one.id);
    let sessions = log(&p.root, None, false).unwrap();
    assert!(
        sessions
            .iter()
            .all(|s| s.plans.iter().all(|plan| plan.id != amended)),
        "{sessions:?}"
    );
}

#[test]
fn a_session_rebased_off_its_recorded_base_lists_no_plans_it_cannot_verify() {
    // The plans rebased onto another root have new parents: pai's mark covers the parents,
    // so they are no longer pai's plans (undo would refuse them too) and log lists none.
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    run_plan(&mut s, &p.wt(), "two", &[Op::Write("d.txt", b"d\n")]).unwrap();
    drop(s);
    assert_eq!(log(&p.root, None, false).unwrap()[0].plans.len(), 2);
    // Another root with the base's files: the plans apply to it unchanged.
    let tree = format!("{base}^{{tree}}");
    let elsewhere = p.git(&["commit-tree", &tree, "-m", "another root"]);
    p.git(&["checkout", "-q", &branch]);
    p.git(&["rebase", "-q", "--onto", elsewhere.trim(), &base]);
    assert_eq!(p.git(&["rev-list", "--count", "HEAD"]).trim(), "3");
    let sessions = log(&p.root, None, false).unwrap();
    assert!(sessions.iter().all(|s| s.plans.is_empty()), "{sessions:?}");
}
