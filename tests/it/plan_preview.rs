//! Approve what you see: a plan shows each WRITE's and MODIFY's diff before it is approved,
//! computed in memory with the matcher the real run uses (a search that would not match is
//! shown as the failure it would be) — in the interactive session, with `--plan`, and in
//! `--json` (a `diff` field); `[e]dit` can drop steps; the user's uncommitted edits that will
//! be snapshotted first are named with the plan.

use crate::support;

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::{PROMPT, exit_session, start_session, task_plan};

fn edit_plan() -> serde_json::Value {
    task_plan(
        "Editing.",
        json!([
            {"action": "MODIFY", "path": "notes.txt",
             "edits": [{"search": "alpha\n", "replace": "alpha\nbeta\n"}], "purpose": "add beta"},
            {"action": "MODIFY", "path": "notes.txt",
             "edits": [{"search": "gamma-not-there\n", "replace": "x\n"}], "purpose": "broken"},
            {"action": "WRITE", "path": "new.txt", "content": "fresh\n", "purpose": "a new file"}
        ]),
    )
}

fn project() -> Project {
    let p = Project::repo(None);
    std::fs::write(p.root.join("notes.txt"), "alpha\n").unwrap();
    git(&p.root, &["add", "notes.txt"]);
    git(&p.root, &["commit", "-q", "-m", "notes"]);
    p
}

#[test]
fn json_and_dry_run_show_each_diff_before_anything_runs() {
    let p = project();
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(edit_plan()), Reply::plan(edit_plan())])
            .require_key(TEST_KEY),
    );
    let run = p.run(&mock, ProviderKind::Gemini, "edit the notes", &["--plan"]);
    let plan = &run.events_of("plan")[0];
    let steps = plan["steps"].as_array().unwrap();
    let first = steps[0]["diff"].as_str().unwrap();
    assert!(first.contains("+beta"), "{plan}");
    assert_eq!(
        (steps[0]["added"].clone(), steps[0]["removed"].clone()),
        (json!(1), json!(0))
    );
    // The second edit's search is not there: shown as the failure it would be.
    assert!(steps[1].get("diff").is_none(), "{plan}");
    let fails = steps[1]["fails"].as_str().unwrap();
    assert!(fails.contains("cannot modify notes.txt"), "{fails}");
    assert!(
        steps[2]["diff"].as_str().unwrap().contains("+fresh"),
        "{plan}"
    );
    // Nothing was written.
    assert_eq!(p.read("notes.txt"), "alpha\n");
    assert!(!p.root.join("new.txt").exists());

    // The text dry run shows the same in the plan panel.
    let kind = ProviderKind::Gemini;
    let out = p
        .pai()
        .env(kind.key_env_var(), TEST_KEY)
        .args([
            "run",
            "edit the notes",
            "--plan",
            "--base-url",
            &mock.base_url(kind),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("+beta"), "{text}");
    assert!(text.contains("would fail"), "{text}");
    assert!(text.contains("+fresh"), "{text}");
}

#[test]
fn the_interactive_plan_shows_diffs_and_edit_can_drop_a_step() {
    let p = project();
    std::fs::write(p.root.join("notes.txt"), "alpha\nmine\n").unwrap();
    let plan = task_plan(
        "Editing.",
        json!([
            {"action": "MODIFY", "path": "notes.txt",
             "edits": [{"search": "alpha\n", "replace": "alpha\nbeta\n"}], "purpose": "add beta"},
            {"action": "WRITE", "path": "new.txt", "content": "fresh\n", "purpose": "a new file"}
        ]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let mut pty = start_session(&p, &mock, false, &[]);
    pty.send_line("edit the notes");
    pty.expect("Carry out this plan?");
    let shown = pty.text();
    // The diff and the snapshot of the user's edit are shown before the question.
    let before_question = &shown[..shown.rfind("Carry out this plan?").unwrap()];
    assert!(before_question.contains("+beta"), "{shown}");
    assert!(before_question.contains("+fresh"), "{shown}");
    assert!(
        before_question.contains("committed first as a snapshot"),
        "{shown}"
    );
    // `d` shows the whole diffs and asks again; `e`, Enter, `2` drops the WRITE.
    pty.send_line("d");
    pty.expect("+++ b/new.txt");
    pty.send_line("e");
    pty.expect("New request");
    pty.send_line("");
    pty.expect("Steps to drop");
    pty.send_line("2");
    pty.expect("dropped step 2");
    pty.expect("Committed");
    pty.expect(PROMPT);
    exit_session(&mut pty);
    assert_eq!(p.read("notes.txt"), "alpha\nbeta\nmine\n");
    assert!(!p.root.join("new.txt").exists());
    assert_eq!(mock.calls(), 1);
}
