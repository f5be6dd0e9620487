//! `pai gc` and what undo keeps for redo: the record in the user's state directory and the
//! `refs/pai/kept/...` ref go once no undone ref needs them and they are older than the
//! setting; while the plan can still be redone they stay, and redo still works.

use std::path::PathBuf;

use crate::support::history as history_common;

use history_common::{Op, Project, run_plan};
use pai::history::{GcOptions, gc, project_dir, redo, undo};

/// A project whose ignored `local.cfg` a plan removes: undo brings it back from the trash and
/// keeps a record (it stood nowhere before) for redo.
fn undone_plan_with_a_kept_record() -> (Project, String, String) {
    let p = Project::repo();
    p.write(".gitignore", "local.cfg\n");
    p.git(&["add", ".gitignore"]);
    p.git(&["commit", "-q", "-m", "ignore"]);
    p.write("local.cfg", "user settings\n");
    let mut s = p.start();
    let id = s.id().to_string();
    let info = run_plan(
        &mut s,
        &p.wt(),
        "clean up",
        &[Op::Remove("local.cfg"), Op::Write("a.txt", b"agent\n")],
    )
    .unwrap();
    drop(s);
    undo(&p.root, &p.wt(), false).unwrap();
    assert_eq!(p.read("local.cfg"), "user settings\n");
    (p, id, info.id)
}

fn records(p: &Project, id: &str) -> Vec<PathBuf> {
    let dir = project_dir(&p.root).unwrap().join("undone");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|f| {
        f.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(id))
    });
    found
}

fn kept_refs(p: &Project) -> String {
    p.git(&["for-each-ref", "--format=%(refname)", "refs/pai/kept"])
}

fn at(days_later: i64) -> GcOptions {
    GcOptions {
        days: 30,
        budget: None,
        now: chrono::Local::now() + chrono::Duration::days(days_later),
    }
}

#[test]
fn gc_prunes_kept_records_once_no_undone_ref_needs_them_and_they_are_old() {
    let (p, id, _) = undone_plan_with_a_kept_record();
    assert!(!records(&p, &id).is_empty(), "undo kept no record");
    assert!(kept_refs(&p).contains(&format!("refs/pai/kept/{id}/1")));

    // Young: nothing goes.
    let report = gc(&p.root, at(0)).unwrap();
    assert!(
        report.records.is_empty() && report.refs.is_empty(),
        "{report:?}"
    );
    assert!(!records(&p, &id).is_empty());

    // A month later the undone ref goes (existing rule), and what it kept follows it.
    let report = gc(&p.root, at(31)).unwrap();
    assert!(
        report.refs.contains(&format!("refs/pai/undone/{id}/1")),
        "{report:?}"
    );
    assert!(
        report.refs.contains(&format!("refs/pai/kept/{id}/1")),
        "{report:?}"
    );
    assert!(
        report.records.contains(&format!("undone/{id}.1")),
        "{report:?}"
    );
    assert!(records(&p, &id).is_empty(), "{:?}", records(&p, &id));
    assert_eq!(kept_refs(&p).trim(), "");
    // The user's file is untouched.
    assert_eq!(p.read("local.cfg"), "user settings\n");
}

#[test]
fn a_kept_record_a_live_undone_ref_needs_stays_and_redo_uses_it() {
    let (p, id, plan) = undone_plan_with_a_kept_record();
    // A branch holds the undone plan, so its undone ref is kept however old.
    p.git(&["branch", "keep", &plan]);
    let report = gc(&p.root, at(31)).unwrap();
    assert!(report.records.is_empty(), "{report:?}");
    assert!(
        !report.refs.iter().any(|r| r.contains("/kept/")),
        "{report:?}"
    );
    assert!(!records(&p, &id).is_empty());
    p.git(&["branch", "-D", "keep"]);
    let report = redo(&p.root, &p.wt()).unwrap();
    assert_eq!(report.removed, ["local.cfg"], "{report:?}");
    assert!(!p.exists("local.cfg"));
}

#[test]
fn an_old_record_of_no_undone_plan_goes_and_a_planted_kept_ref_of_no_pai_session_stays() {
    let (p, id, _) = undone_plan_with_a_kept_record();
    // The undone ref deleted by hand: the record is needed by nothing.
    p.git(&["update-ref", "-d", &format!("refs/pai/undone/{id}/1")]);
    let tree = p.rev("HEAD^{tree}");
    p.git(&["update-ref", "refs/pai/kept/not-a-session/1", &tree]);
    let report = gc(&p.root, at(31)).unwrap();
    assert!(
        report.records.contains(&format!("undone/{id}.1")),
        "{report:?}"
    );
    assert!(
        report.refs.contains(&format!("refs/pai/kept/{id}/1")),
        "{report:?}"
    );
    assert!(kept_refs(&p).contains("refs/pai/kept/not-a-session/1"));
}
