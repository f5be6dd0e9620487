//! A RUN command's output is shown while it runs, in every frontend: the interactive live
//! panel (last lines, elapsed time), plain text streamed line by line, `run_output` JSON
//! events; all of it lands in the session log; Ctrl+C stops the command, not the session.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY};
use support::pty::CTRL_C;
use support::session::{PROMPT, WAITING_COMMAND, exit_session, release, run_plan, start_session};

fn session_log(p: &Project) -> String {
    let dir = p.root.join(".pai_history");
    let mut text = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "log") {
            text.push_str(&std::fs::read_to_string(path).unwrap());
        }
    }
    text
}

fn live_output_in_a_terminal(color: bool) {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan(WAITING_COMMAND))]).require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, color, &[]);
    pty.send_line("run the waiting command");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Run it?");
    pty.send_line("y");
    pty.expect_within("LIVE-one", Duration::from_secs(15));
    // The command is still waiting for the flag: what is on screen came while it ran.
    assert!(!p.root.join("stop.flag").exists());
    let shown = pty.text();
    assert!(!shown.contains("LIVE-two"), "{shown}");
    if color {
        // The live panel names the command and counts the seconds.
        pty.expect("Running printf");
        pty.expect("s (Ctrl+C stops it)");
    }
    release(&p.root);
    pty.expect_within("LIVE-two", Duration::from_secs(15));
    pty.expect(PROMPT);
    exit_session(&mut pty);
    let log = session_log(&p);
    assert!(log.contains("RUN OUTPUT: LIVE-one"), "{log}");
    assert!(log.contains("RUN OUTPUT: LIVE-two"), "{log}");
}

#[test]
fn the_live_panel_shows_the_first_line_while_the_command_runs() {
    live_output_in_a_terminal(true);
}

#[test]
fn plain_terminal_output_streams_lines_while_the_command_runs() {
    live_output_in_a_terminal(false);
}

/// `pai run` with stdout a pipe: returns the lines as they arrive.
fn piped_run(
    p: &Project,
    mock: &MockLlm,
    json: bool,
) -> (std::process::Child, mpsc::Receiver<String>) {
    let kind = ProviderKind::Gemini;
    let mut cmd = p.pai();
    cmd.env(kind.key_env_var(), TEST_KEY)
        .args(["run", "run the waiting command", "--yes", "--allow-run"])
        .args(["--base-url", &mock.base_url(kind)])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if json {
        cmd.arg("--json");
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn wait_for_line(rx: &mpsc::Receiver<String>, pred: impl Fn(&str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            let hit = pred(&line);
            seen.push(line);
            if hit {
                return seen;
            }
        }
    }
    panic!("line not seen; got:\n{}", seen.join("\n"));
}

#[test]
fn plain_output_without_a_terminal_streams_lines_as_they_come() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan(WAITING_COMMAND))]).require_key(TEST_KEY),
    );
    let (mut child, rx) = piped_run(&p, &mock, false);
    let seen = wait_for_line(&rx, |l| l.contains("LIVE-one"));
    assert!(!p.root.join("stop.flag").exists());
    assert!(
        seen.last().unwrap().trim_start().starts_with("| LIVE-one"),
        "{seen:?}"
    );
    release(&p.root);
    let rest: Vec<String> = rx.iter().collect();
    assert!(child.wait().unwrap().success());
    let all = format!("{}\n{}", seen.join("\n"), rest.join("\n"));
    assert!(all.contains("| LIVE-two"), "{all}");
    // Shown once as it came, not repeated in the step's result.
    assert_eq!(all.matches("LIVE-one").count(), 1, "{all}");
}

#[test]
fn json_output_emits_run_output_events_while_the_command_runs() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([Reply::plan(run_plan(WAITING_COMMAND))]).require_key(TEST_KEY),
    );
    let (mut child, rx) = piped_run(&p, &mock, true);
    let seen = wait_for_line(&rx, |l| l.contains("LIVE-one"));
    assert!(!p.root.join("stop.flag").exists());
    let started: Vec<serde_json::Value> = seen
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(started.iter().any(|e| e["event"] == "run_started"
        && e["command"] == WAITING_COMMAND
        && e["index"] == 1));
    let last = started.last().unwrap();
    assert_eq!(last["event"], "run_output");
    assert_eq!(last["line"], "LIVE-one");
    assert_eq!(last["phase"], 1);
    release(&p.root);
    let rest: Vec<String> = rx.iter().collect();
    assert!(child.wait().unwrap().success());
    assert!(
        rest.iter().any(|l| l.contains("\"line\":\"LIVE-two\"")),
        "{rest:?}"
    );
    // The whole stream in protocol order: the session, the acknowledgment, and the step
    // started before its command, which ends before the step's result.
    let kinds: Vec<String> = seen
        .iter()
        .chain(&rest)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["event"].as_str().unwrap_or_default().to_string())
        .collect();
    let at = |k: &str| kinds.iter().position(|x| x == k).unwrap_or(usize::MAX);
    assert_eq!(kinds[..2], ["session_started", "turn_started"], "{kinds:?}");
    assert!(
        at("plan") < at("step_started")
            && at("step_started") < at("run_started")
            && at("run_started") < at("step")
            && kinds.last().map(String::as_str) == Some("finished"),
        "{kinds:?}"
    );
}

#[test]
fn ctrl_c_stops_the_command_and_the_session_goes_on() {
    let p = Project::repo(None);
    let mock = MockLlm::start(
        Script::with_replies([
            Reply::plan(run_plan(WAITING_COMMAND)),
            Reply::chat("Still here."),
        ])
        .require_key(TEST_KEY),
    );
    let mut pty = start_session(&p, &mock, true, &[]);
    pty.send_line("run the waiting command");
    pty.expect("Carry out this plan?");
    pty.send_line("y");
    pty.expect("Run it?");
    pty.send_line("y");
    pty.expect_within("LIVE-one", Duration::from_secs(15));
    let pressed = Instant::now();
    pty.send(CTRL_C);
    pty.expect_within(PROMPT, Duration::from_secs(5));
    assert!(
        pressed.elapsed() < Duration::from_secs(3),
        "{:?}",
        pressed.elapsed()
    );
    assert!(!pty.text().contains("LIVE-two"), "the command was stopped");
    pty.send_line("are you there?");
    pty.expect("Still here.");
    pty.expect(PROMPT);
    exit_session(&mut pty);
}
