//! The rough edges of first-day use, each pinned: `pai run` without `--yes` and without a
//! terminal is a dry run (`--plan` asks for one), non-terminal output keeps diff lines whole,
//! an answer is shown once, no "Next steps" after a failure, no sandbox note on a plain error,
//! the key prompt names the provider, no git wording outside git, config.toml errors with
//! line numbers, `PAI_MODIFY_MAX_RATIO` within 0-1, `pai completions` says `mkdir -p`.

use crate::support;

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY};
use support::pty::Pty;
use support::session::{PROMPT, exit_session, run_plan, start_session, task_plan};

/// `pai run REQUEST ARGS` in text mode (stdout and stdin not terminals).
fn run_text(p: &Project, mock: &MockLlm, request: &str, args: &[&str]) -> std::process::Output {
    let kind = ProviderKind::Gemini;
    p.pai()
        .env(kind.key_env_var(), TEST_KEY)
        .args(["run", request])
        .args(args)
        .args(["--base-url", &mock.base_url(kind)])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write_plan() -> serde_json::Value {
    task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": "a.txt", "content": "hello\n", "purpose": "a file"}]),
    )
}

#[test]
fn without_yes_and_a_terminal_run_is_a_dry_run_and_says_which_flag_carries_it_out() {
    let p = Project::repo(None);
    let mock =
        MockLlm::start(Script::with_replies([Reply::plan(write_plan())]).require_key(TEST_KEY));
    let out = run_text(&p, &mock, "write a file", &[]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("WRITE"), "the plan is shown: {all}");
    assert!(all.contains("Plan only"), "{all}");
    let flat = all
        .replace("|\n|", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("pass --yes to carry it out"), "{all}");
    assert!(
        !all.contains("Carry out this plan?"),
        "nobody is asked: {all}"
    );
    assert!(!p.root.join("a.txt").exists());
    assert_eq!(mock.calls(), 1);
}

#[test]
fn plan_flag_shows_the_plan_carries_nothing_out_and_exits_0() {
    let p = Project::repo(None);
    let mock =
        MockLlm::start(Script::with_replies([Reply::plan(write_plan())]).require_key(TEST_KEY));
    let run = p.run(&mock, ProviderKind::Gemini, "write a file", &["--plan"]);
    assert!(run.output.status.success(), "{}", run.text());
    assert_eq!(run.status(), "planned");
    assert_eq!(run.events_of("plan").len(), 1);
    assert!(run.events_of("step").is_empty());
    assert!(!p.root.join("a.txt").exists());
    // --plan and --yes contradict each other.
    let out = run_text(&p, &mock, "write a file", &["--plan", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn non_terminal_output_keeps_long_diff_lines_whole() {
    let p = Project::repo(None);
    let long = format!("value = \"{}\"\n", "x".repeat(150));
    let plan = task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": "long.py", "content": long, "purpose": "a long line"}]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let out = run_text(&p, &mock, "write a long line", &["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The step's diff, after the plan panel's compact preview of it.
    let diff_line = stdout
        .lines()
        .rfind(|l| l.contains("+value = "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        diff_line.ends_with(&format!("{}\"", "x".repeat(150))),
        "{stdout}"
    );
}

#[test]
fn a_phase_two_answer_is_shown_once() {
    let p = Project::repo(None);
    std::fs::write(p.root.join("data.txt"), "one\ntwo\nthree\n").unwrap();
    let read = json!({
        "intent": "task", "reply": "Reading it.",
        "analysis": {"user_intent": "count", "files_to_read": ["data.txt"], "files_to_create": [],
                     "files_to_modify": [], "risks": "none", "success_criteria": [], "complexity": "simple"},
        "steps": [{"action": "READ", "path": "data.txt", "purpose": "look"}],
        "observe": true, "next_steps": []
    });
    let mut answer = support::mock_llm::chat_plan("The file holds exactly three lines.");
    answer["intent"] = json!("chat");
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(read), Reply::plan(answer)]).require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, true, &[]);
    pty.send_line("how many lines in data.txt?");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect(PROMPT);
    let shown = pty.text();
    assert_eq!(shown.matches("exactly three lines").count(), 1, "{shown}");
    exit_session(&mut pty);
}

#[test]
fn no_next_steps_after_a_failure_and_no_sandbox_note_on_a_plain_error() {
    let p = Project::repo(None);
    let mut plan = run_plan("python3 -c 'print(undefined_name)'");
    plan["next_steps"] = json!(["Deploy it to production"]);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(plan)])
            .fallback(Reply::chat("I could not fix it."))
            .require_key(TEST_KEY),
    );
    let out = run_text(&p, &mock, "run it", &["--yes", "--allow-run"]);
    let all = text(&out);
    assert!(all.contains("NameError"), "{all}");
    assert!(!all.contains("sandboxed"), "{all}");
    assert!(!all.contains("Deploy it to production"), "{all}");
    assert_eq!(out.status.code(), Some(1), "the check still fails: {all}");
    for r in mock.generation_requests().iter().skip(1) {
        let sent = r.last_user_text().unwrap_or_default();
        assert!(
            !sent.contains("sandboxed"),
            "the model is not misled: {sent}"
        );
    }
}

#[test]
fn the_key_prompt_names_the_provider_and_the_empty_key_hint_keeps_it_off_the_command_line() {
    let p = Project::plain();
    let mut cmd = p.pai();
    cmd.args(["config", "set", "--provider", "openai"]);
    let mut pty = Pty::spawn(cmd, 100, 20).unwrap();
    pty.expect("openai API key");
    // The prompt switches echo off after drawing, discarding what was typed before.
    pty.wait_for_modes_off(libc::ECHO, std::time::Duration::from_secs(20));
    pty.send_line("");
    pty.expect("the key is empty");
    pty.expect("hidden prompt");
    let status = pty.wait(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(!pty.text().contains("config set <KEY>"), "{}", pty.text());
}

#[test]
fn outside_git_the_summary_speaks_of_no_unborn_branch() {
    let p = Project::plain();
    let mock =
        MockLlm::start(Script::with_replies([Reply::plan(write_plan())]).require_key(TEST_KEY));
    let out = run_text(&p, &mock, "write a file", &["--yes"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("unborn"), "{all}");
    assert!(!all.contains("master"), "{all}");
    let log = p.pai().arg("log").output().unwrap();
    let log = text(&log);
    assert!(log.contains("write a file"), "{log}");
    assert!(!log.contains("unborn") && !log.contains("master"), "{log}");
}

#[test]
fn config_errors_name_the_line() {
    let p = Project::plain();
    let dir = p.home.join(".config/pai-code");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "model = \"m\"\ntemprature = 0.2\n").unwrap();
    let out = p.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all = text(&out);
    assert!(
        all.contains("config.toml is not valid (line 2, column 1)"),
        "{all}"
    );
}

#[test]
fn a_modify_ratio_above_one_is_rejected_with_a_warning() {
    let p = Project::plain();
    let out = p
        .pai()
        .env("PAI_MODIFY_MAX_RATIO", "7")
        .args(["config", "show"])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(all.contains("ignoring PAI_MODIFY_MAX_RATIO=7"), "{all}");
    assert!(all.contains("at most 1"), "{all}");
}

#[test]
fn completions_help_says_to_create_the_folder() {
    let p = Project::plain();
    let out = p.pai().args(["completions", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = text(&out).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("mkdir -p ~/.local/share/bash-completion/completions &&"),
        "{help}"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(readme.contains("mkdir -p ~/.local/share/bash-completion/completions"));
}

#[test]
fn started_in_a_subfolder_the_model_and_the_user_are_told_where_paths_start() {
    let p = Project::repo(None);
    std::fs::create_dir_all(p.root.join("sub")).unwrap();
    let mock = MockLlm::start(
        Script::with_replies([Reply::chat("It would go to sub/notes.txt.")]).require_key(TEST_KEY),
    );
    let kind = ProviderKind::Gemini;
    let out = p
        .pai()
        .current_dir(p.root.join("sub"))
        .env(kind.key_env_var(), TEST_KEY)
        .args(["run", "where would notes.txt go?", "--plan"])
        .args(["--base-url", &mock.base_url(kind)])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("you are in sub/ of the project"), "{all}");
    let sent = mock.generation_requests()[0]
        .last_user_text()
        .unwrap()
        .to_string();
    assert!(
        sent.contains("The user is working in the folder sub/"),
        "{sent}"
    );
    assert!(sent.contains("write sub/<name>"), "{sent}");
}

#[test]
fn outside_git_undo_refusals_name_no_git_commands() {
    let p = Project::plain();
    let mock = MockLlm::start(Script::with_replies([Reply::chat("Hi.")]).require_key(TEST_KEY));
    let out = run_text(&p, &mock, "hello", &["--plan"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = p.pai().arg("undo").output().unwrap();
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(!all.contains("master"), "{all}");
    assert!(
        !all.contains("git switch") && !all.contains("git revert"),
        "{all}"
    );
}

#[test]
fn undo_leaves_no_empty_directories_behind() {
    let p = Project::repo(None);
    std::fs::create_dir_all(p.root.join("pkg")).unwrap();
    std::fs::write(p.root.join("pkg/keep.txt"), "mine\n").unwrap();
    let plan = task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": "pkg/util/deep/x.py", "content": "x = 1\n", "purpose": "nested"}]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let out = run_text(&p, &mock, "write a nested file", &["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(p.root.join("pkg/util/deep/x.py").exists());
    let out = p.pai().arg("undo").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !p.root.join("pkg/util").exists(),
        "empty folders stay behind"
    );
    // Only what became empty goes: the user's folder and file stay.
    assert_eq!(p.read("pkg/keep.txt"), "mine\n");
}
