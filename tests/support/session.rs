//! The real `pai` session in a pseudo-terminal against the mock LLM server, and small plan
//! builders, shared by the daily-use tests (live RUN output, approvals, resume).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use serde_json::{Value, json};

use super::mock_llm::MockLlm;
use super::project::{Project, TEST_KEY};
use super::pty::Pty;

/// The interactive prompt.
pub const PROMPT: &str = "user> ";

/// `pai ARGS --base-url <mock>` with a hermetic environment against `mock` (Gemini wire
/// format), not yet started.
pub fn pai_command(p: &Project, mock: &MockLlm, color: bool, args: &[&str]) -> Command {
    let kind = ProviderKind::Gemini;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pai"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &p.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("TERM", "xterm-256color")
        .env(kind.key_env_var(), TEST_KEY)
        .args(args)
        .args(["--base-url", &mock.base_url(kind)])
        .current_dir(&p.root);
    if !color {
        cmd.env("NO_COLOR", "1");
    }
    cmd
}

/// Start an interactive session (`args` after the base URL) and wait for the prompt.
pub fn start_session(p: &Project, mock: &MockLlm, color: bool, args: &[&str]) -> Pty {
    let cmd = pai_command(p, mock, color, args);
    let mut pty = Pty::spawn(cmd, 100, 40).unwrap_or_else(|e| panic!("cannot start pai: {e}"));
    pty.expect(PROMPT);
    pty
}

/// Leave the session with `exit` and wait for a clean exit.
pub fn exit_session(pty: &mut Pty) {
    pty.send_line("exit");
    pty.expect("Session ended");
    let status = pty.wait(Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// A task plan with these steps.
pub fn task_plan(reply: &str, steps: Value) -> Value {
    json!({
        "intent": "task",
        "reply": reply,
        "analysis": {
            "user_intent": reply,
            "files_to_read": [], "files_to_create": [], "files_to_modify": [],
            "risks": "none", "success_criteria": [], "complexity": "simple"
        },
        "steps": steps,
        "observe": false,
        "next_steps": []
    })
}

/// A plan that runs one command.
pub fn run_plan(command: &str) -> Value {
    task_plan(
        "Running it.",
        json!([{"action": "RUN", "command": command, "purpose": "try it"}]),
    )
}

/// A shell command that prints `LIVE-one`, waits until `stop.flag` exists in the project,
/// then prints `LIVE-two`. The printed words do not appear in the command's own text, so
/// seeing them on screen means the command printed them.
pub const WAITING_COMMAND: &str = "printf 'LIVE%s\\n' -one; i=0; while [ ! -f stop.flag ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; printf 'LIVE%s\\n' -two";

/// Wait until `cond` holds (or panic after `timeout`).
pub fn wait_until(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Create the file `WAITING_COMMAND` waits for.
pub fn release(root: &Path) {
    std::fs::write(root.join("stop.flag"), "").unwrap_or_else(|e| panic!("stop.flag: {e}"));
}
