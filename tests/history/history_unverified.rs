//! Plan commits the user amended or rebased: pai's mark covers tree, parents and message, so
//! they no longer verify. pai takes no action on them, says why with the command to use
//! instead, and `pai log` still lists them, marked "not verified".

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{HistoryError, log, undo};
use pai::ui::log_text::log_text as render_text;

fn refusal(err: HistoryError) -> (String, String) {
    match err {
        HistoryError::Refused { message, hint } => (message, hint),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_amended_plan_is_refused_by_undo_with_the_revert_to_use_and_listed_as_not_verified() {
    let p = Project::repo();
    let mut s = p.start();
    let session = s.id().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    drop(s);
    p.write("c.txt", "c\n");
    p.git(&["add", "c.txt"]);
    p.git(&["commit", "-q", "--amend", "--no-edit", "--no-verify"]);
    let amended = p.rev("HEAD");
    let short = &amended[..7];

    let (message, hint) = refusal(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains(short), "{message}");
    assert!(
        message.contains("changed after pai made it (amended or rebased"),
        "{message}"
    );
    assert!(hint.contains(&format!("`git revert {short}`")), "{hint}");
    assert_eq!(p.rev("HEAD"), amended, "undo changed the branch");

    let sessions = log(&p.root, None, false).unwrap();
    let listed = sessions.iter().find(|l| l.session == session).unwrap();
    assert!(listed.plans.is_empty(), "{listed:?}");
    assert_eq!(listed.unverified.len(), 1, "{listed:?}");
    assert_eq!(listed.unverified[0].id, amended);
    assert_eq!(listed.unverified[0].revert, format!("git revert {short}"));
    let text = render_text(&sessions);
    assert!(text.contains(&format!("not verified {short}")), "{text}");
    assert!(
        !text.contains("  plan "),
        "an unverified commit was shown as a plan: {text}"
    );
}

#[test]
fn a_rebased_session_is_listed_as_not_verified_and_undo_names_the_newest_commit() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let session = s.id().to_string();
    let branch = s.branch().unwrap().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    run_plan(&mut s, &p.wt(), "two", &[Op::Write("d.txt", b"d\n")]).unwrap();
    drop(s);
    let tree = format!("{base}^{{tree}}");
    let elsewhere = p.git(&["commit-tree", &tree, "-m", "another root"]);
    p.git(&["checkout", "-q", &branch]);
    p.git(&["rebase", "-q", "--onto", elsewhere.trim(), &base]);
    let tip = p.rev("HEAD");

    let sessions = log(&p.root, Some(&session), false).unwrap();
    let ids: Vec<&str> = sessions[0]
        .unverified
        .iter()
        .map(|u| u.id.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{sessions:?}");
    assert_eq!(ids[0], tip, "newest first");
    assert!(sessions[0].plans.is_empty());

    let (message, hint) = refusal(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains(&tip[..7]), "{message}");
    assert!(
        hint.contains(&format!("`git revert {}`", &tip[..7])),
        "{hint}"
    );
}

#[test]
fn a_commit_imitating_pai_without_a_mark_is_told_apart_from_an_amended_one() {
    let p = Project::repo();
    let mut s = p.start();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    drop(s);
    // The same message with its mark cut off, as a pai older than the mark would have written.
    let message = p.git(&["log", "-1", "--format=%B"]);
    let unmarked: String = message
        .lines()
        .filter(|l| !l.starts_with("Pai-Auth:"))
        .map(|l| format!("{l}\n"))
        .collect();
    p.git(&["commit", "-q", "--amend", "--no-verify", "-m", &unmarked]);
    let (message, _) = refusal(undo(&p.root, &p.wt(), false).unwrap_err());
    assert!(message.contains("it has no pai mark"), "{message}");
}

#[test]
fn redo_names_a_kept_plan_that_no_longer_verifies_instead_of_redoing_it() {
    let p = Project::repo();
    let base = p.rev("HEAD");
    let mut s = p.start();
    let session = s.id().to_string();
    run_plan(&mut s, &p.wt(), "one", &[Op::Write("a.txt", b"alpha\n1\n")]).unwrap();
    let two = run_plan(&mut s, &p.wt(), "two", &[Op::Write("d.txt", b"d\n")]).unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    // The kept plan rewritten onto another parent (as a rebase would): same tree, same
    // message and mark, so the mark no longer verifies.
    let message = p.git(&["log", "-1", "--format=%B", &two.id]);
    let tree = format!("{}^{{tree}}", two.id);
    let moved = p.git(&["commit-tree", &tree, "-p", &base, "-m", message.trim_end()]);
    let moved = moved.trim();
    p.git(&["update-ref", &format!("refs/pai/undone/{session}/2"), moved]);
    let (message, hint) = refusal(pai::history::redo(&p.root, &p.wt()).unwrap_err());
    assert!(message.contains("nothing to redo"), "{message}");
    assert!(hint.contains(&moved[..7]), "{hint}");
    assert!(hint.contains("changed after pai made it"), "{hint}");
    assert!(!p.exists("d.txt"), "redo wrote the unverified plan's file");
}
