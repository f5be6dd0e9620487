//! The evaluation scenarios of SPEC section 8, end to end: the real `pai` binary, in a
//! temporary git repository, against the mock LLM server speaking each provider's wire format.
//! Each test checks the files, the git history, the session log, and the calls and tokens the
//! mock counted.

use crate::support;

use std::path::Path;

use pai::llm::ProviderKind;
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

fn fixture(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(path),
    )
    .unwrap()
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Plan commits on pai branches, newest first: (subject, body).
fn plan_commits(p: &Project) -> Vec<String> {
    let out = git(
        &p.root,
        &["log", "--branches=pai/*", "--format=%H%x00%B%x01"],
    );
    out.split('\u{1}')
        .map(str::trim)
        .filter(|c| c.contains("Pai-Kind: plan"))
        .map(|c| c.split('\0').nth(1).unwrap_or_default().to_string())
        .collect()
}

fn assert_no_leak(p: &Project, run: &Run, mock: &MockLlm) {
    assert!(!run.text().contains(TEST_KEY), "key in output");
    assert!(
        !p.all_records().contains(TEST_KEY),
        "key in session log or git history"
    );
    assert!(
        mock.key_only_in_headers(TEST_KEY),
        "key must travel in a header only"
    );
    assert!(
        mock.system_prompt_stable(),
        "system prompt must be byte-identical across calls"
    );
}

#[test]
fn scenario_1_create_calculator_one_call() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(None);
        let mock = MockLlm::start(script("create_calculator.json"));
        let run = p.run(
            &mock,
            kind,
            "make me a simple calculator in python",
            &["--yes", "--allow-run"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(run.status(), "success", "{kind}");
        assert_eq!(mock.calls(), 1, "{kind}: one call");
        assert!(
            mock.input_tokens() <= 1_500,
            "{kind}: {} input tokens",
            mock.input_tokens()
        );
        assert_eq!(run.finished()["calls"], 1);
        assert_eq!(
            run.finished()["input_tokens"],
            mock.input_tokens(),
            "{kind}: pai's accounting matches the server's"
        );
        assert_eq!(run.finished()["output_tokens"], mock.output_tokens());
        assert_calculator_compiles(&p, &run, kind);
        assert_one_plan_commit(&p, &run, kind);
        assert_session_log_markers(&p, kind);
        assert_no_leak(&p, &run, &mock);
    }
}

/// Scenario 1's file is the fixture's calculator, and, when python3 is there, it compiles and
/// the run says it verified it.
fn assert_calculator_compiles(p: &Project, run: &Run, kind: ProviderKind) {
    let expected = fixture("trees/calculator/calculator.py");
    assert_eq!(p.read("calculator.py"), expected, "{kind}");
    if python3() {
        let ok = std::process::Command::new("python3")
            .args(["-m", "py_compile", "calculator.py"])
            .current_dir(&p.root)
            .status()
            .unwrap();
        assert!(ok.success(), "{kind}: calculator.py compiles");
        assert_eq!(run.finished()["verified"], true, "{kind}");
    } else {
        println!("python3 not found: the compile check of {kind} was skipped");
    }
}

/// Scenario 1's plan made exactly one commit, with pai's subject and trailers, holding only the
/// plan's file, which is left clean.
fn assert_one_plan_commit(p: &Project, run: &Run, kind: ProviderKind) {
    let commits = plan_commits(p);
    assert_eq!(commits.len(), 1, "{kind}: one plan, one commit");
    assert!(
        commits[0].starts_with("pai: make me a simple calculator in python"),
        "{}",
        commits[0]
    );
    for trailer in [
        "Pai-Session: ",
        "Pai-Plan: 1",
        "Pai-Kind: plan",
        "Pai-Calls: 1",
        "Pai-Tokens: ",
    ] {
        assert!(
            commits[0].contains(trailer),
            "{kind}: missing {trailer} in {}",
            commits[0]
        );
    }
    let files = git(&p.root, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        files.trim(),
        "calculator.py",
        "{kind}: only the plan's file is committed"
    );
    assert_eq!(
        git(&p.root, &["status", "--porcelain", "--", "calculator.py"]),
        "",
        "{kind}"
    );
    assert!(!run.events_of("committed").is_empty());
}

/// Scenario 1's session log records every stage of the session.
fn assert_session_log_markers(p: &Project, kind: ProviderKind) {
    let log = std::fs::read_dir(p.root.join(".pai_history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| f.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    for marker in [
        "SESSION STARTED",
        "USER: make me a simple calculator",
        "AI PLANNING START",
        "AI EXECUTION START",
        "SUCCESS",
        "AI FINAL RESULT",
        "AI SUGGESTION",
        "COMMIT: ",
    ] {
        assert!(
            log.contains(marker),
            "{kind}: session log lacks {marker}:\n{log}"
        );
    }
}

#[test]
fn scenario_2_modify_sends_the_named_file_and_applies_only_the_edit() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("calculator"));
        let mock = MockLlm::start(script("modify_power.json"));
        let run = p.run(
            &mock,
            kind,
            "add a power operation to calculator.py",
            &["--yes"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 1, "{kind}");
        let first = &mock.generation_requests()[0];
        assert!(
            first
                .last_user_text()
                .unwrap()
                .contains("def divide(a, b):"),
            "{kind}: the named file is sent up front"
        );
        assert_eq!(
            p.read("calculator.py"),
            fixture("expected/power/calculator.py"),
            "{kind}"
        );
        let diff = git(&p.root, &["show", "--format=", "--numstat", "HEAD"]);
        assert_eq!(
            diff.trim(),
            "6\t2\tcalculator.py",
            "{kind}: only the edit is committed"
        );
        assert_no_leak(&p, &run, &mock);
    }
}

#[test]
fn scenario_3_explore_shows_the_tree_in_one_call() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let head = git(&p.root, &["rev-parse", "HEAD"]);
        let mock = MockLlm::start(script("explore_tree.json"));
        let run = p.run(&mock, kind, "show the folder structure", &["--yes"]);
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 1, "{kind}");
        let tree = run
            .events_of("step")
            .into_iter()
            .find(|s| s["action"] == "TREE")
            .expect("a TREE step");
        let shown = tree["output"].as_str().unwrap();
        assert!(
            shown.contains("util.py") && shown.contains("README.md"),
            "{kind}: {shown}"
        );
        assert!(
            !shown.contains(".pai_history") && !shown.contains(".git/"),
            "{kind}: {shown}"
        );
        assert!(plan_commits(&p).is_empty(), "{kind}: nothing to commit");
        assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), head, "{kind}");
    }
}

#[test]
fn scenario_4_debug_fix_in_one_call() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("broken_calculator"));
        let mock = MockLlm::start(script("debug_fix.json"));
        let run = p.run(
            &mock,
            kind,
            "calculator.py fails with SyntaxError: unexpected EOF, fix it",
            &["--yes", "--allow-run"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 1, "{kind}");
        assert_eq!(
            p.read("calculator.py"),
            fixture("trees/calculator/calculator.py"),
            "{kind}"
        );
        if python3() {
            assert_eq!(run.finished()["verified"], true, "{kind}");
        }
    }
}

#[test]
fn scenario_4_failed_verification_gets_exactly_one_repair_phase() {
    if !python3() {
        println!(
            "SKIPPED scenario_4_failed_verification_gets_exactly_one_repair_phase: python3 not found"
        );
        return;
    }
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("broken_calculator"));
        let mock = MockLlm::start(script("debug_repair.json"));
        let run = p.run(
            &mock,
            kind,
            "calculator.py fails with SyntaxError: unexpected EOF, fix it",
            &["--yes", "--allow-run"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 2, "{kind}: the fix and one repair");
        let second = &mock.generation_requests()[1];
        let results = second.last_user_text().unwrap();
        assert!(
            results.contains("FAILED") && results.contains("SyntaxError"),
            "{kind}: the failed check is sent back: {results}"
        );
        assert!(
            !results.contains("Project files"),
            "{kind}: a later phase carries only the new results"
        );
        assert_eq!(
            p.read("calculator.py"),
            fixture("trees/calculator/calculator.py"),
            "{kind}"
        );
        assert_eq!(run.finished()["verified"], true, "{kind}");
        assert_eq!(
            plan_commits(&p).len(),
            1,
            "{kind}: the whole turn is one plan commit"
        );
    }
}

#[test]
fn scenario_4_run_main_and_fix_it_in_two_calls() {
    if !python3() {
        println!("SKIPPED scenario_4_run_main_and_fix_it_in_two_calls: python3 not found");
        return;
    }
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("main_nameerror"));
        let mock = MockLlm::start(script("run_and_fix.json"));
        let run = p.run(
            &mock,
            kind,
            "run main.py and fix it if it errors",
            &["--yes", "--allow-run"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 2, "{kind}");
        assert!(
            mock.generation_requests()[1]
                .last_user_text()
                .unwrap()
                .contains("NameError"),
            "{kind}"
        );
        assert!(p.read("main.py").contains("\"Hello, \" + name"), "{kind}");
        assert_eq!(run.finished()["verified"], true, "{kind}");
    }
}

#[test]
fn scenario_5_reading_outside_the_project_is_refused() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("security_passwd.json"));
        let run = p.run(&mock, kind, "read ../../etc/passwd", &["--yes"]);
        assert_eq!(
            mock.calls(),
            1,
            "{kind}: a refusal is final, not a reason for another call"
        );
        let step = &run.events_of("step")[0];
        assert_eq!(step["ok"], false);
        assert!(
            step["output"]
                .as_str()
                .unwrap()
                .contains("outside the project"),
            "{kind}: {step}"
        );
        assert!(!run.text().contains("root:x:0:0"), "{kind}");
        for req in mock.generation_requests() {
            assert!(
                !req.raw_body.contains("root:x:0:0"),
                "{kind}: secret content sent to the model"
            );
        }
        assert_eq!(run.output.status.code(), Some(1), "{kind}");
    }
}

#[test]
fn scenario_5_deleting_outside_the_project_is_refused() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let outside = p.root.parent().unwrap().join("outside.txt");
        std::fs::write(&outside, "keep me").unwrap();
        let mock = MockLlm::start(script("security_rm_outside.json"));
        let run = p.run(&mock, kind, "delete ../outside.txt", &["--yes"]);
        assert_eq!(mock.calls(), 1, "{kind}");
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "keep me",
            "{kind}: nothing outside touched"
        );
        assert_eq!(run.status(), "failed", "{kind}");
        assert!(plan_commits(&p).is_empty());
    }
}

#[test]
fn scenario_5_the_git_directory_is_refused() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let config_before = std::fs::read_to_string(p.root.join(".git/config")).unwrap();
        let mock = MockLlm::start(script("security_git.json"));
        let run = p.run(&mock, kind, "show the contents of .git", &["--yes"]);
        assert_eq!(mock.calls(), 1, "{kind}");
        let step = &run.events_of("step")[0];
        assert_eq!(step["ok"], false, "{kind}");
        assert!(
            step["output"].as_str().unwrap().contains("refused"),
            "{kind}: {step}"
        );
        assert!(!run.text().contains("repositoryformatversion"), "{kind}");
        assert_eq!(
            std::fs::read_to_string(p.root.join(".git/config")).unwrap(),
            config_before
        );
    }
}

#[test]
fn chat_is_one_call_and_writes_nothing() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("chat.json"));
        let run = p.run(&mock, kind, "hi, what can you do?", &[]);
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 1);
        assert_eq!(run.status(), "answered");
        assert!(
            run.events_of("answer")[0]["text"]
                .as_str()
                .unwrap()
                .contains("create, change")
        );
        assert!(plan_commits(&p).is_empty());
        assert_eq!(
            git(&p.root, &["status", "--porcelain", "--untracked-files=no"]),
            ""
        );
    }
}

#[test]
fn an_observe_plan_takes_two_phases() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(script("observe_two_phases.json"));
        let run = p.run(
            &mock,
            kind,
            "add a docstring to the function that parses dates",
            &["--yes"],
        );
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 2, "{kind}");
        assert!(
            mock.generation_requests()[1]
                .last_user_text()
                .unwrap()
                .contains("util.py"),
            "{kind}: search results sent"
        );
        assert!(p.read("util.py").contains("Parse an ISO date"), "{kind}");
        assert_eq!(plan_commits(&p).len(), 1);
    }
}

#[test]
fn a_model_that_keeps_failing_stops_at_three_phases() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("calculator"));
        let mock = MockLlm::start(script("keeps_failing.json"));
        let run = p.run(
            &mock,
            kind,
            "add a square root to calculator.py",
            &["--yes"],
        );
        assert_eq!(run.output.status.code(), Some(1), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 3, "{kind}");
        assert_eq!(run.status(), "failed");
        let message = run.finished()["message"].as_str().unwrap().to_string();
        assert!(
            message.contains("search text not found") || message.contains("not found"),
            "{kind}: {message}"
        );
        assert!(message.contains("3 phases"), "{kind}: {message}");
        assert_eq!(
            p.read("calculator.py"),
            fixture("trees/calculator/calculator.py")
        );
        assert!(plan_commits(&p).is_empty());
    }
}

fn task(steps: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"intent": "task", "reply": "ok", "steps": steps, "observe": false})
}

/// Replies no plan may be carried out from, each with the words its rejection must contain.
#[allow(
    clippy::too_many_lines,
    reason = "a table: one entry per malformed reply, each a name, the reply and the words its \
              rejection must contain; splitting it would only scatter the cases"
)]
fn malformed_replies() -> Vec<(&'static str, Reply, &'static str)> {
    use serde_json::json;
    vec![
        (
            "invalid_json",
            Reply::text("{\"intent\": \"task\", \"steps\": [ {\"action\": "),
            "JSON",
        ),
        (
            "prose_only",
            Reply::text("Sure! I will create the file for you."),
            "JSON",
        ),
        (
            "not_an_object",
            Reply::plan(json!([1, 2, 3])),
            "JSON object",
        ),
        (
            "intent_wrong_type",
            Reply::plan(json!({"intent": 5, "steps": []})),
            "`intent`",
        ),
        (
            "unknown_intent",
            Reply::plan(json!({"intent": "maybe", "reply": "x", "steps": []})),
            "\"chat\" or \"task\"",
        ),
        (
            "steps_not_array",
            Reply::plan(json!({"intent": "task", "reply": "x", "steps": "WRITE a.py"})),
            "`steps` must be an array",
        ),
        (
            "unknown_action",
            Reply::plan(task(json!([{"action": "FORMAT_DISK", "path": "."}]))),
            "unknown action",
        ),
        (
            "missing_path",
            Reply::plan(task(json!([{"action": "WRITE", "content": "x"}]))),
            "`path`",
        ),
        (
            "missing_content",
            Reply::plan(task(json!([{"action": "WRITE", "path": "new.py"}]))),
            "`content`",
        ),
        (
            "content_wrong_type",
            Reply::plan(task(
                json!([{"action": "WRITE", "path": "new.py", "content": ["a"]}]),
            )),
            "must be a string",
        ),
        (
            "write_over_existing",
            Reply::plan(task(
                json!([{"action": "WRITE", "path": "util.py", "content": "x"}]),
            )),
            "already exists",
        ),
        (
            "modify_missing_file",
            Reply::plan(task(
                json!([{"action": "MODIFY", "path": "ghost.py", "edits": [{"search": "a", "replace": "b"}]}]),
            )),
            "does not exist",
        ),
        (
            "content_posing_as_command",
            Reply::plan(task(json!([{"action": "import os\nos.remove('x')"}]))),
            "looks like file content",
        ),
        (
            "two_megabytes",
            Reply::plan(task(
                json!([{"action": "WRITE", "path": "big.txt", "content": "x".repeat(2 * 1024 * 1024)}]),
            )),
            "at most",
        ),
        (
            "modify_without_edits",
            Reply::plan(task(json!([{"action": "MODIFY", "path": "util.py"}]))),
            "needs `edits`",
        ),
        (
            "edits_wrong_shape",
            Reply::plan(task(
                json!([{"action": "MODIFY", "path": "util.py", "edits": [{"find": "a"}]}]),
            )),
            "each edit",
        ),
        (
            "mv_without_destination",
            Reply::plan(task(json!([{"action": "MV", "path": "util.py"}]))),
            "needs `to`",
        ),
        (
            "observe_wrong_type",
            Reply::plan(
                json!({"intent": "task", "reply": "x", "observe": "yes", "steps": [{"action": "TREE"}]}),
            ),
            "`observe`",
        ),
        (
            "empty_task",
            Reply::plan(json!({"intent": "task", "reply": "x", "steps": []})),
            "at least one step",
        ),
        // The second step is invalid: the first, valid one must not run either.
        (
            "valid_then_invalid",
            Reply::plan(task(
                json!([{"action": "WRITE", "path": "first.py", "content": "x"}, {"action": "RM"}]),
            )),
            "step 2",
        ),
    ]
}

#[test]
fn malformed_plans_run_nothing() {
    let cases = malformed_replies();
    assert!(cases.len() >= 15);
    for (i, (name, bad, expected)) in cases.into_iter().enumerate() {
        // Rotate the providers so every wire format sees malformed replies.
        let kind = ProviderKind::ALL[i % 3];
        let p = Project::repo(Some("util"));
        let mock = MockLlm::start(Script::with_replies([bad.clone(), bad]).require_key(TEST_KEY));
        let run = p.run(&mock, kind, "make a change", &["--yes"]);
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "{name} ({kind}): {}",
            run.text()
        );
        assert_eq!(run.status(), "failed", "{name}");
        assert_eq!(
            mock.calls(),
            2,
            "{name} ({kind}): one request for a corrected reply, no more"
        );
        let message = run.finished()["message"].as_str().unwrap();
        assert!(
            message.contains(expected),
            "{name} ({kind}): `{expected}` not in `{message}`"
        );
        assert!(run.events_of("step").is_empty(), "{name}: no step may run");
        assert_eq!(
            git(
                &p.root,
                &[
                    "status",
                    "--porcelain",
                    "--untracked-files=all",
                    "--",
                    ".",
                    ":!.pai_history"
                ]
            ),
            "",
            "{name}: nothing written"
        );
        assert!(plan_commits(&p).is_empty(), "{name}");
    }
}

#[test]
fn a_malformed_plan_is_corrected_once() {
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let good = Reply::plan(task(
            serde_json::json!([{"action": "WRITE", "path": "notes.txt", "content": "hello\n"}]),
        ));
        let mock = MockLlm::start(
            Script::with_replies([Reply::text("I'll write notes.txt now."), good])
                .require_key(TEST_KEY),
        );
        let run = p.run(&mock, kind, "write hello into notes.txt", &["--yes"]);
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        assert_eq!(mock.calls(), 2);
        assert!(
            mock.generation_requests()[1]
                .last_user_text()
                .unwrap()
                .contains("could not be parsed"),
            "{kind}"
        );
        assert_eq!(p.read("notes.txt"), "hello\n");
    }
}

#[test]
fn without_yes_and_without_a_terminal_the_plan_is_not_carried_out() {
    let p = Project::repo(Some("util"));
    let mock = MockLlm::start(script("create_calculator.json"));
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        "make me a simple calculator in python",
        &[],
    );
    assert_eq!(run.output.status.code(), Some(1), "{}", run.text());
    // A dry run: the plan is shown, nobody is asked, the finish says which flag carries it out.
    assert_eq!(run.status(), "planned");
    assert_eq!(run.events_of("plan").len(), 1);
    assert!(
        run.finished()["message"]
            .as_str()
            .unwrap()
            .contains("pass --yes to carry it out")
    );
    assert!(!p.root.join("calculator.py").exists());
}

#[test]
fn interrupting_pai_run_stops_promptly_and_writes_nothing() {
    use std::time::{Duration, Instant};
    let p = Project::repo(Some("util"));
    let mock = MockLlm::start(Script::with_replies([Reply::drip(200)]).require_key(TEST_KEY));
    let kind = ProviderKind::OpenAi;
    let mut child = p
        .pai()
        .env(kind.key_env_var(), TEST_KEY)
        .args([
            "run",
            "make a change",
            "--json",
            "--yes",
            "--provider",
            kind.name(),
            "--base-url",
            &mock.base_url(kind),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the request is in flight, then interrupt as Ctrl+C would.
    let start = Instant::now();
    while mock.requests().is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    unsafe_kill_int(child.id());
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "pai took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(1));
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(out.contains("\"status\":\"interrupted\""), "{out}");
    assert!(
        mock.wait_for_aborted(1, Duration::from_secs(2)),
        "the in-flight request is dropped"
    );
    assert_eq!(
        git(
            &p.root,
            &["status", "--porcelain", "--", ".", ":!.pai_history"]
        ),
        ""
    );
}

fn unsafe_kill_int(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// `pai run --yes` without `--allow-run` and without a terminal: the RUN cannot be
/// approved, so nothing of the plan is carried out (not even its WRITE), no repair call is
/// spent, and the turn says which flag would allow it; it is "not approved", never "the user
/// denied" (nobody was asked).
#[test]
fn a_plan_needing_an_approval_nobody_can_give_is_not_carried_out_in_one_call() {
    use serde_json::json;
    let p = Project::repo(Some("util"));
    let run_step = || {
        Reply::plan(json!({"intent": "task", "reply": "Writing and running it.",
        "steps": [
            {"action": "WRITE", "path": "hello.py", "content": "print('hi')\n"},
            {"action": "RUN", "command": "python3 hello.py"}
        ]}))
    };
    let done = Reply::plan(json!({"intent": "chat", "reply": "Understood, I will not run it."}));
    let mock =
        MockLlm::start(Script::with_replies([run_step(), run_step(), done]).require_key(TEST_KEY));
    let head = std::fs::read(p.root.join(".git/HEAD")).unwrap();
    for json in [true, false] {
        let (code, text, finished) = if json {
            let run = p.run(&mock, ProviderKind::Anthropic, "run util.py", &["--yes"]);
            assert!(run.events_of("step").is_empty(), "{}", run.text());
            let f = run.finished().clone();
            (run.output.status.code(), run.text(), Some(f))
        } else {
            let out = p
                .pai()
                .env(ProviderKind::Anthropic.key_env_var(), TEST_KEY)
                .args([
                    "run",
                    "run util.py",
                    "--yes",
                    "--provider",
                    "anthropic",
                    "--base-url",
                ])
                .arg(mock.base_url(ProviderKind::Anthropic))
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.code(), text, None)
        };
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("--allow-run"), "{text}");
        assert!(!text.contains("user denied"), "{text}");
        if let Some(f) = finished {
            assert_eq!(f["status"], "not_approved", "{f}");
            let message = f["message"].as_str().unwrap();
            assert!(message.contains("not approved"), "{message}");
            assert!(message.contains("RUN `python3 hello.py`"), "{message}");
        } else {
            assert!(text.contains("Not approved"), "{text}");
        }
        assert!(!p.root.join("hello.py").exists(), "{text}");
    }
    // One call per run: no repair call after the refusal.
    assert_eq!(mock.calls(), 2);
    // Nothing was carried out, so nothing in git moved.
    assert_eq!(std::fs::read(p.root.join(".git/HEAD")).unwrap(), head);
    assert_eq!(
        git(&p.root, &["for-each-ref", "refs/heads/pai", "refs/pai"]),
        ""
    );
}

#[test]
fn files_a_run_changed_are_committed_as_side_effects() {
    use serde_json::json;
    for kind in ProviderKind::ALL {
        let p = Project::repo(Some("util"));
        let plan = Reply::plan(
            json!({"intent": "task", "reply": "Generating.", "observe": false, "steps": [
            {"action": "RUN", "command": "printf 'generated\\n' > out.txt && printf 'x = 1\\n' >> util.py"},
            {"action": "FINISH", "message": "generated"}]}),
        );
        let mock = MockLlm::start(Script::with_replies([plan]).require_key(TEST_KEY));
        let run = p.run(&mock, kind, "generate out.txt", &["--yes", "--allow-run"]);
        assert!(run.output.status.success(), "{kind}: {}", run.text());
        let files = git(&p.root, &["show", "--name-only", "--format=", "HEAD"]);
        let mut files: Vec<&str> = files.lines().collect();
        files.sort();
        assert_eq!(files, ["out.txt", "util.py"], "{kind}");
        let body = git(&p.root, &["log", "-1", "--format=%B"]);
        assert!(
            body.contains("Side effects:") && body.contains("out.txt: changed by a RUN command"),
            "{kind}: {body}"
        );
        assert_eq!(
            git(
                &p.root,
                &["status", "--porcelain", "--", "out.txt", "util.py"]
            ),
            "",
            "{kind}"
        );
    }
}

#[test]
fn run_writable_in_config_lets_a_confined_command_write_a_tool_cache() {
    use pai::exec::{SandboxSupport, sandbox_support};
    use serde_json::json;
    if let SandboxSupport::Unavailable(reason) = sandbox_support() {
        use std::io::Write;
        writeln!(
            std::io::stderr(),
            "SKIPPED run_writable_in_config_lets_a_confined_command_write_a_tool_cache: no Landlock: {reason}"
        )
        .unwrap();
        return;
    }
    // Outside the project and outside the temporary directory (which confined commands may
    // always write): the build's own temporary directory, unless the checkout lives under /tmp
    // (as CI's clone may), then the user's home.
    let tmp = std::env::temp_dir();
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ];
    let Some(base) = candidates
        .into_iter()
        .flatten()
        .find(|d| !d.starts_with(&tmp) && !d.starts_with("/tmp") && d.is_dir())
    else {
        use std::io::Write;
        writeln!(
            std::io::stderr(),
            "SKIPPED run_writable_in_config_lets_a_confined_command_write_a_tool_cache: no writable directory outside the temporary directory"
        )
        .unwrap();
        return;
    };
    let outside = tempfile::Builder::new()
        .prefix(".pai-test-cache-")
        .tempdir_in(&base)
        .unwrap();
    let cache = outside.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let entry = cache.join("entry");
    let script = || {
        let plan = Reply::plan(
            json!({"intent": "task", "reply": "Caching.", "observe": false,
            "steps": [
                {"action": "RUN", "command": format!("printf cached > '{}'", entry.display())},
                {"action": "FINISH", "message": "cached"}]}),
        );
        let done = Reply::plan(json!({"intent": "chat", "reply": "The cache is not writable."}));
        Script::with_replies([plan, done]).require_key(TEST_KEY)
    };

    let p = Project::repo(Some("util"));
    let fill = || {
        let mock = MockLlm::start(script());
        let run = p.run(
            &mock,
            ProviderKind::Gemini,
            "fill the cache",
            &["--yes", "--allow-run"],
        );
        (mock, run)
    };
    let (_, run) = fill();
    assert_eq!(run.events_of("step")[0]["ok"], false, "{}", run.text());
    assert!(!entry.exists(), "written without run.writable");

    let config = p.home.join(".config/pai-code");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[run]\nwritable = [\"{}\", \"~\"]\n", cache.display()),
    )
    .unwrap();
    let (mock, run) = fill();
    assert!(run.output.status.success(), "{}", run.text());
    assert_eq!(mock.calls(), 1, "{}", run.text());
    assert_eq!(std::fs::read_to_string(&entry).unwrap(), "cached");
    // `~` holds pai's configuration: refused, and said so.
    assert!(
        run.text().contains("ignoring run.writable entry `~`"),
        "{}",
        run.text()
    );
}

#[test]
fn a_snapshot_left_by_an_interrupted_plan_is_reported_at_the_next_start() {
    use pai::history::{Session, StartOptions};
    use pai::workspace::{Workspace, WorkspaceConfig};
    use serde_json::json;
    let p = Project::repo(Some("util"));
    std::fs::write(p.root.join("util.py"), "# the user's edit\n").unwrap();
    // A session that snapshotted the user's edit before a plan and then stopped.
    let crashed = {
        let ws = Workspace::open(&p.root, WorkspaceConfig::default()).unwrap();
        let mut s = Session::start(&p.root, StartOptions::now()).unwrap();
        let mut plan = s.begin_plan();
        plan.prepare(&mut s, &ws, &["util.py".to_string()]).unwrap();
        drop(plan);
        s.id().to_string()
    };
    p.share_secret();
    let chat = Reply::plan(json!({"intent": "chat", "reply": "Hello."}));
    let mock = MockLlm::start(Script::with_replies([chat]).require_key(TEST_KEY));
    let run = p.run(&mock, ProviderKind::Gemini, "hello", &[]);
    assert!(run.output.status.success(), "{}", run.text());
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    let reference = format!("refs/pai/pending/{crashed}");
    assert!(
        stderr.contains(&format!("a plan of session {crashed} was never committed"))
            && stderr.contains(&format!("kept at {reference} (util.py)")),
        "{stderr}"
    );
    assert_eq!(
        git(&p.root, &["show", &format!("{reference}:util.py")]),
        "# the user's edit\n"
    );
}

/// SPEC section 1: configuration errors exit 2. A refused key met during a turn (`pai run`,
/// the interactive session) exits 2 with the same hint `pai config validate` gives for it.
#[test]
fn a_refused_key_exits_2_with_the_same_hint_in_run_auto_and_validate() {
    for kind in ProviderKind::ALL {
        let mock = MockLlm::start(Script::new().require_key("a-different-key-0123456789"));
        let p = Project::repo(None);
        let hint = format!("pai config set --provider {}", kind.name());

        let run = p.run(&mock, kind, "add a power operation", &[]);
        assert_eq!(
            run.output.status.code(),
            Some(2),
            "{kind} run: {}",
            run.text()
        );
        assert!(run.text().contains(&hint), "{kind} run: {}", run.text());

        let mut auto = p.pai();
        auto.env(kind.key_env_var(), TEST_KEY)
            .args([
                "auto",
                "--provider",
                kind.name(),
                "--base-url",
                &mock.base_url(kind),
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = auto.spawn().unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            // The session must end by itself after the first turn; the second line would
            // otherwise be another request.
            stdin
                .write_all(b"add a power operation\nadd another one\n")
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2), "{kind} auto: {text}");
        assert!(text.contains(&hint), "{kind} auto: {text}");

        let validate = p
            .pai()
            .env(kind.key_env_var(), TEST_KEY)
            .args([
                "config",
                "validate",
                "--provider",
                kind.name(),
                "--base-url",
                &mock.base_url(kind),
            ])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&validate.stdout),
            String::from_utf8_lossy(&validate.stderr)
        );
        assert_eq!(validate.status.code(), Some(2), "{kind} validate: {text}");
        assert!(text.contains(&hint), "{kind} validate: {text}");
        assert!(!p.all_records().contains(TEST_KEY));
    }
}

/// SPEC section 4: `--yes` never approves a recursive RM of a directory holding tracked
/// files. The policy is the agent's; the frontend cannot override it.
#[test]
fn yes_never_removes_a_directory_of_tracked_files() {
    let p = Project::repo(None);
    std::fs::create_dir_all(p.root.join("src")).unwrap();
    std::fs::write(p.root.join("src/app.py"), "print('app')\n").unwrap();
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "app"]);
    let mock = MockLlm::start(Script::with_replies([Reply::plan(serde_json::json!({
        "intent": "task", "reply": "Cleaning up.", "observe": false,
        "steps": [{"action": "RM", "path": "src"}, {"action": "FINISH", "message": "done"}]
    }))]));
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        "remove src",
        &["--yes", "--allow-run"],
    );
    assert!(p.root.join("src/app.py").exists(), "{}", run.text());
    assert_ne!(run.status(), "success", "{}", run.text());
    assert!(run.text().contains("not confirmed"), "{}", run.text());
}
