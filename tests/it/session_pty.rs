//! The real interactive session in a pseudo-terminal, against the mock LLM server: a request
//! typed, the plan approved, the results and commit shown; a two-line request; Ctrl+C during a
//! slow reply; `/undo`; the end-of-session summary; plain output under NO_COLOR.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::pty::{ALT_ENTER, CTRL_C, CTRL_D, ENTER, Pty};

const PROMPT: &str = "user> ";

fn start(p: &Project, mock: &MockLlm, color: bool, cols: u16) -> Pty {
    let kind = ProviderKind::Gemini;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pai"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &p.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("TERM", "xterm-256color")
        .env(kind.key_env_var(), TEST_KEY)
        .args(["--base-url", &mock.base_url(kind)])
        .current_dir(&p.root);
    if !color {
        cmd.env("NO_COLOR", "1");
    }
    let mut pty = Pty::spawn(cmd, cols, 40).unwrap();
    pty.expect(PROMPT);
    pty
}

fn scenario(name: &str) -> Script {
    Script::from_file(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/scenarios")
            .join(name),
    )
}

fn finish(pty: &mut Pty) {
    pty.send_line("exit");
    pty.expect("Session ended");
    assert!(
        pty.wait(Duration::from_secs(10))
            .is_some_and(|s| s.success())
    );
}

#[test]
fn create_approve_commit_then_undo() {
    let p = Project::repo(None);
    let mut script = scenario("create_calculator.json");
    script = script.require_key(TEST_KEY);
    let mock = MockLlm::start(script);
    let mut pty = start(&p, &mock, true, 100);
    pty.send_line("make me a simple calculator in python");
    pty.expect("Carry out this plan?");
    pty.send("y");
    pty.send(ENTER);
    pty.expect("Run it?");
    pty.send("y");
    pty.send(ENTER);
    pty.expect("Committed");
    pty.expect(PROMPT);
    assert!(p.root.join("calculator.py").exists());
    let branch = git(&p.root, &["branch", "--show-current"]);
    assert!(branch.starts_with("pai/"), "{branch}");
    let head = git(&p.root, &["log", "-1", "--format=%s"]);
    assert_eq!(head.trim(), "pai: make me a simple calculator in python");

    pty.send_line("/undo");
    pty.expect("Undid plan 1");
    pty.expect(PROMPT);
    assert!(
        !p.root.join("calculator.py").exists(),
        "undo removes the file the plan created"
    );
    finish(&mut pty);
    assert!(pty.text().contains("Session ended"));
    assert_eq!(mock.calls(), 1);
}

#[test]
fn alt_enter_sends_a_two_line_request() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::chat("Two lines received.")]).require_key(TEST_KEY),
    );
    let mut pty = start(&p, &mock, true, 100);
    pty.send("first line");
    pty.send(ALT_ENTER);
    pty.send("second line");
    pty.send(ENTER);
    pty.expect("Two lines received.");
    pty.expect(PROMPT);
    let sent = mock.generation_requests()[0]
        .last_user_text()
        .unwrap()
        .to_string();
    assert!(sent.contains("first line\nsecond line"), "{sent}");
    pty.send(CTRL_D);
    pty.expect("Session ended");
}

#[test]
fn ctrl_c_during_a_slow_reply_returns_to_the_prompt_and_writes_nothing() {
    let p = Project::repo(None);
    let mock = MockLlm::start(Script::with_replies([Reply::drip(200)]).require_key(TEST_KEY));
    let mut pty = start(&p, &mock, true, 100);
    pty.send_line("make me a simple calculator in python");
    let start = Instant::now();
    while mock.requests().is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pressed = Instant::now();
    pty.send(CTRL_C);
    pty.expect_within(PROMPT, Duration::from_secs(5));
    assert!(
        pressed.elapsed() < Duration::from_secs(1),
        "took {:?}",
        pressed.elapsed()
    );
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
    // Twice within two seconds ends the session cleanly.
    pty.send(CTRL_C);
    std::thread::sleep(Duration::from_millis(200));
    pty.send(CTRL_C);
    pty.expect("Session ended");
    assert!(pty.wait(Duration::from_secs(10)).is_some());
}

#[test]
fn no_color_output_has_no_escape_sequences() {
    let p = Project::repo(Some("util"));
    let mock = MockLlm::start(scenario("explore_tree.json").require_key(TEST_KEY));
    let mut pty = start(&p, &mock, false, 60);
    pty.send_line("show the folder structure");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("util.py");
    pty.expect(PROMPT);
    finish(&mut pty);
    let raw = pty.raw();
    assert!(
        !raw.contains(&0x1b),
        "an escape sequence was printed:\n{}",
        pty.text()
    );
}

/// SIGTERM during a turn ends the session the way a double Ctrl+C does: the running command is
/// stopped, the plan so far is recorded (so `pai undo` takes it back), and no index lock is left.
#[test]
fn sigterm_during_a_turn_ends_the_session_cleanly() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(serde_json::json!({
            "intent": "task", "reply": "Working.", "observe": false,
            "steps": [
                {"action": "WRITE", "path": "made.py", "content": "x = 1\n"},
                {"action": "RUN", "command": "touch started.flag; sleep 30"},
                {"action": "FINISH", "message": "done"}
            ]
        }))])
        .require_key(TEST_KEY),
    );
    let mut pty = start(&p, &mock, false, 100);
    pty.send_line("make it");
    pty.expect("Carry out this plan?");
    pty.send("y");
    pty.send(ENTER);
    pty.expect("Run it?");
    pty.send("y");
    pty.send(ENTER);
    let start = Instant::now();
    while !p.root.join("started.flag").exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the child this test spawned.
    assert_eq!(
        unsafe { libc::kill(pty.pid() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let status = pty.wait(Duration::from_secs(10));
    assert!(
        status.is_some(),
        "pai did not end after SIGTERM:\n{}",
        pty.text()
    );
    assert!(!p.root.join(".git/index.lock").exists());
    git(&p.root, &["fsck", "--no-progress"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pai"))
        .arg("undo")
        .current_dir(&p.root)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!p.root.join("made.py").exists());
}
