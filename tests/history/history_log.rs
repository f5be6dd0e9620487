//! `pai log`: plans newest first across sessions, with files, line counts, calls, tokens,
//! model and undone state, checked against `git show --numstat`.

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, log, render_json, render_text, undo};

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
    let json = render_json(&sessions).unwrap();
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
