//! The outcome a turn reports is what happened, end to end: the real `pai` binary
//! against the mock model. A failed step that acts and is neither redone nor given up with a
//! reason fails the turn (exit 1, `finished` status `failed`, the panel names the step),
//! whatever the model's closing words; a failed observation does not.

use crate::support;

use std::path::Path;

use pai::llm::ProviderKind;
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, Run, TEST_KEY, git};

fn script(name: &str) -> Script {
    Script::from_file(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/scenarios")
            .join(name),
    )
    .require_key(TEST_KEY)
}

/// `pai run <request> --yes` in plain text (no `--json`): what a person sees.
fn run_text(p: &Project, mock: &MockLlm, kind: ProviderKind, request: &str) -> (i32, String) {
    let out = p
        .pai()
        .env(kind.key_env_var(), TEST_KEY)
        .args([
            "run",
            request,
            "--yes",
            "--provider",
            kind.name(),
            "--base-url",
            &mock.base_url(kind),
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Plan commit messages on pai branches, newest first.
fn plan_commits(p: &Project) -> Vec<String> {
    let out = git(&p.root, &["log", "--branches=pai/*", "--format=%B%x01"]);
    out.split('\u{1}')
        .map(str::trim)
        .filter(|c| c.contains("Pai-Kind: plan"))
        .map(str::to_string)
        .collect()
}

/// The human-readable session log.
fn session_log(p: &Project) -> String {
    let log = std::fs::read_dir(p.root.join(".pai_history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| f.extension().is_some_and(|x| x == "log"))
        .unwrap();
    std::fs::read_to_string(log).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The one failed step of `run`'s outcome, checked to be the MODIFY of util.py in phase 1.
fn assert_failed_modify(run: &Run, list: &str, kind: ProviderKind) {
    let steps = run.finished()[list].as_array().unwrap().clone();
    assert_eq!(steps.len(), 1, "{kind}: {}", run.finished());
    assert_eq!(steps[0]["action"], "MODIFY", "{kind}");
    assert_eq!(steps[0]["target"], "util.py", "{kind}");
    assert_eq!(
        (&steps[0]["phase"], &steps[0]["index"]),
        (&json!(1), &json!(1))
    );
    assert!(
        steps[0]["error"]
            .as_str()
            .unwrap()
            .contains("class Calendar:"),
        "{kind}: the error says which search failed: {}",
        steps[0]
    );
}

/// The core case: the only MODIFY fails, the repair reply only says FINISH "all done".
#[test]
fn a_failed_modify_then_a_finish_only_repair_fails_the_turn() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let before = p.read("util.py");
        let mock = MockLlm::start(script("outcome_finish_only_repair.json"));
        let run = p.run(&mock, kind, "add a docstring to util.py", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(1), "{kind}: {}", run.text());
        assert_eq!(run.status(), "failed", "{kind}");
        assert_eq!(mock.calls(), 2, "{kind}: the plan and one repair");
        assert_failed_modify(&run, "failed_steps", kind);
        assert_eq!(run.finished()["given_up"], json!([]), "{kind}");
        assert_eq!(
            run.finished()["changed"],
            json!([]),
            "{kind}: nothing changed"
        );
        // The model's words are the message, not the verdict.
        assert_eq!(run.finished()["message"], "all done", "{kind}");
        // The repair phase was told plainly what failed and what a bare FINISH means.
        let requests = mock.generation_requests();
        let repair = requests[1].last_user_text().unwrap();
        for words in [
            "Failed and not redone yet: MODIFY `util.py` (phase 1 step 1).",
            "`not done: <target>: <why>`",
            "reported to the user as a failure",
        ] {
            assert!(repair.contains(words), "{kind}: `{words}` not in {repair}");
        }
        assert!(mock.system_prompt_stable(), "{kind}");
        assert_eq!(p.read("util.py"), before, "{kind}");
        assert!(plan_commits(&p).is_empty(), "{kind}: nothing to commit");
        let log = session_log(&p);
        for line in [
            "AI FINAL RESULT: Failed: all done",
            "FAILED STEP: MODIFY util.py (phase 1, step 1)",
            "CHANGED: nothing",
        ] {
            assert!(log.contains(line), "{kind}: `{line}` not in\n{log}");
        }
    }
}

/// The same turn as a person sees it: the panel's verdict, the failed step, that nothing was
/// changed, and the model's message as a message.
#[test]
fn the_final_panel_names_the_failed_step_and_what_changed() {
    let p = Project::repo(Some("util"));
    let mock = MockLlm::start(script("outcome_finish_only_repair.json"));
    let (code, text) = run_text(
        &p,
        &mock,
        ProviderKind::Gemini,
        "add a docstring to util.py",
    );
    assert_eq!(code, 1, "{text}");
    let panel = text
        .split("+- Failed -")
        .nth(1)
        .unwrap_or_else(|| panic!("no Failed panel:\n{text}"));
    for words in [
        "| all done",
        "Failed, not redone:",
        "- MODIFY util.py (phase 1, step 1): ",
        "Changed: nothing",
    ] {
        assert!(panel.contains(words), "`{words}` not in the panel:\n{text}");
    }
    assert!(!text.contains("+- Done -"), "{text}");
}

#[test]
fn a_failed_modify_redone_on_the_same_file_succeeds() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("outcome_modify_redone.json"));
        let run = p.run(&mock, kind, "add a docstring to util.py", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(0), "{kind}: {}", run.text());
        assert_eq!(run.status(), "success", "{kind}");
        assert_eq!(mock.calls(), 2, "{kind}");
        let failed: Vec<&Value> = run
            .events_of("step")
            .into_iter()
            .filter(|s| s["ok"] == false)
            .collect();
        assert_eq!(failed.len(), 1, "{kind}: the first MODIFY did fail");
        assert_eq!(run.finished()["failed_steps"], json!([]), "{kind}");
        assert_eq!(strings(&run.finished()["changed"]), ["util.py"], "{kind}");
        assert!(p.read("util.py").contains("Parse an ISO date"), "{kind}");
        let commits = plan_commits(&p);
        assert_eq!(commits.len(), 1, "{kind}");
        assert!(
            !commits[0].contains("Partly failed"),
            "{kind}: {}",
            commits[0]
        );
    }
}

/// A plan whose second WRITE fails: the first file is written, committed and named; the turn
/// failed, and its commit and `pai log` say the plan partly failed.
#[test]
fn one_failed_and_one_successful_write_fail_the_turn_and_commit_the_success() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("outcome_one_write_fails.json"));
        let run = p.run(&mock, kind, "write b.txt and the notes", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(1), "{kind}: {}", run.text());
        assert_eq!(run.status(), "failed", "{kind}");
        let failed = run.finished()["failed_steps"].as_array().unwrap().clone();
        assert_eq!(failed.len(), 1, "{kind}: {}", run.finished());
        assert_eq!(
            (&failed[0]["action"], &failed[0]["target"]),
            (&json!("WRITE"), &json!("notes/"))
        );
        assert_eq!(strings(&run.finished()["changed"]), ["b.txt"], "{kind}");
        assert_eq!(p.read("b.txt"), "bee\n", "{kind}");
        assert!(!run.events_of("committed").is_empty(), "{kind}");
        let files = git(&p.root, &["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(files.trim(), "b.txt", "{kind}: the success is committed");
        let commits = plan_commits(&p);
        assert_eq!(commits.len(), 1, "{kind}");
        assert!(
            commits[0].contains(
                "Partly failed: these steps failed and were not redone:\n- WRITE notes/: "
            ),
            "{kind}: {}",
            commits[0]
        );
        assert_pai_log_says_partly_failed(&p, kind);
    }
    let p = Project::repo(Some("util"));
    let mock = MockLlm::start(script("outcome_one_write_fails.json"));
    let (code, text) = run_text(&p, &mock, ProviderKind::OpenAi, "write b.txt and the notes");
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("- WRITE notes/ (phase 1, step 2): "),
        "{text}"
    );
    assert!(text.contains("Changed: b.txt"), "{text}");
}

fn assert_pai_log_says_partly_failed(p: &Project, kind: ProviderKind) {
    let out = p.pai().args(["log"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{kind}: {text}");
    assert!(text.contains("[partly failed]"), "{kind}: {text}");
    assert!(text.contains("not done: WRITE notes/: "), "{kind}: {text}");
    let out = p.pai().args(["log", "--json"]).output().unwrap();
    let sessions: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = &sessions[0]["plans"][0]["failed_steps"];
    assert_eq!(
        failed.as_array().map(Vec::len),
        Some(1),
        "{kind}: {sessions}"
    );
}

#[test]
fn a_failed_read_then_success_succeeds() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("outcome_read_fails_then_success.json"));
        let run = p.run(&mock, kind, "create the settings", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(0), "{kind}: {}", run.text());
        assert_eq!(run.status(), "success", "{kind}");
        let read = &run.events_of("step")[0];
        assert_eq!(
            (&read["action"], &read["ok"]),
            (&json!("READ"), &json!(false))
        );
        assert_eq!(run.finished()["failed_steps"], json!([]), "{kind}");
        assert_eq!(strings(&run.finished()["changed"]), ["settings.txt"]);
        assert_eq!(p.read("settings.txt"), "debug = false\n");
    }
}

/// The model may give a failed step up: its FINISH message says `not done: <target>` and
/// why. The turn keeps its success and the outcome says what was given up.
#[test]
fn a_failed_step_given_up_with_a_reason_keeps_the_success() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("outcome_given_up.json"));
        let run = p.run(&mock, kind, "document the Calendar class", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(0), "{kind}: {}", run.text());
        assert_eq!(run.status(), "success", "{kind}");
        assert_eq!(run.finished()["failed_steps"], json!([]), "{kind}");
        assert_failed_modify(&run, "given_up", kind);
        assert!(
            run.finished()["message"]
                .as_str()
                .unwrap()
                .contains("Not done: util.py: it has no Calendar class"),
            "{kind}"
        );
        assert!(
            session_log(&p).contains("GIVEN UP: MODIFY util.py"),
            "{kind}"
        );
    }
}

/// A later phase that only talks is the model's last word too: it does not undo a failure.
#[test]
fn a_chat_reply_after_a_failed_modify_fails_the_turn() {
    let p = Project::repo(Some("util"));
    let failing = Reply::plan(json!({
        "intent": "task", "reply": "Adding it.", "observe": false,
        "steps": [{"action": "MODIFY", "path": "util.py",
                   "edits": [{"search": "class Calendar:", "replace": "class Calendar:\n    pass"}]}]
    }));
    let talk = Reply::plan(json!({"intent": "chat", "reply": "all done", "steps": []}));
    let mock = MockLlm::start(Script::with_replies([failing, talk]).require_key(TEST_KEY));
    let run = p.run(&mock, ProviderKind::Anthropic, "add it", &["--yes"]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.text());
    assert_eq!(run.status(), "failed");
    assert_failed_modify(&run, "failed_steps", ProviderKind::Anthropic);
}

/// A file longer than a READ shows is read on in ranges: the cut READ names the lines shown
/// and how to go on, a READ with `lines` returns lines far past the whole-file limit in the
/// file's own numbering, and an edit planned from them applies.
#[test]
fn a_long_file_is_read_on_by_line_range_and_edited_there() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(None);
        let body: String = (1..=9000).map(|i| format!("v_{i:05} = {i}\n")).collect();
        assert!(
            body.len() > 100_000,
            "past the workspace's whole-file READ limit"
        );
        std::fs::write(p.root.join("big.py"), &body).unwrap();
        git(&p.root, &["add", "big.py"]);
        git(&p.root, &["commit", "-q", "-m", "big"]);
        let observe = |steps: Value| {
            Reply::plan(
                json!({"intent": "task", "reply": "Reading.", "observe": true, "steps": steps}),
            )
        };
        let mock = MockLlm::start(
            Script::with_replies([
                observe(json!([{"action": "READ", "path": "big.py"}])),
                observe(json!([{"action": "READ", "path": "big.py", "lines": "8000-8010"}])),
                Reply::plan(json!({
                    "intent": "task", "reply": "Changing it.", "observe": false,
                    "steps": [
                        {"action": "MODIFY", "path": "big.py",
                         "edits": [{"search": "v_08005 = 8005\n", "replace": "v_08005 = 0\n"}]},
                        {"action": "FINISH", "message": "done"}
                    ]
                })),
            ])
            .require_key(TEST_KEY),
        );
        let run = p.run(&mock, kind, "zero v_08005", &["--yes"]);
        assert_eq!(run.output.status.code(), Some(0), "{kind}: {}", run.text());
        let calls = mock.generation_requests();
        assert_eq!(calls.len(), 3, "{kind}");
        let whole = calls[1].last_user_text().unwrap();
        assert!(!whole.contains("v_08005"), "{kind}");
        assert!(
            whole.contains("READ big.py with \"lines\": \"") && whole.contains("for the rest]"),
            "{kind}: {}",
            &whole[whole.len().saturating_sub(400)..]
        );
        let ranged = calls[2].last_user_text().unwrap();
        assert!(
            ranged.contains("READ big.py (lines 8000-8010): OK"),
            "{kind}: {ranged}"
        );
        assert!(
            ranged.contains("read big.py lines 8000-8010 of 9000"),
            "{kind}: {ranged}"
        );
        assert!(
            ranged.contains("v_08000 = 8000\n") && ranged.contains("v_08010 = 8010\n"),
            "{kind}"
        );
        assert!(!ranged.contains("v_08011"), "{kind}");
        let want = body.replace("v_08005 = 8005\n", "v_08005 = 0\n");
        assert_eq!(p.read("big.py"), want, "{kind}");
    }
}
