//! The second stop signal ends pai within a second whatever it is doing; the first still stops
//! the turn gracefully. The state a hard stop leaves is the next command's to recover.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY};
use support::session::task_plan;

fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) on one process id taken from /proc; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Whether `pid` still runs (a zombie or a vanished process does not).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// The child of `parent` (strace's tracee: pai).
fn child_of(parent: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let ppid: u32 = stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == parent).then_some(pid)
    })
}

fn strace_works() -> bool {
    Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// The plan's WRITE stalls for five seconds as it renames its new file into place (strace
/// delays the call): the turn's task is stuck in a system call, so the graceful stop the first signal starts cannot finish.
/// The second signal ends pai within a second anyway, and the next command finds a usable
/// project.
#[test]
fn a_second_signal_ends_pai_within_a_second_even_when_it_is_stuck() {
    if !strace_works() {
        eprintln!("skipped: strace is missing or cannot trace here");
        return;
    }
    let p = Project::repo(None);
    let plan = task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": "notes.txt", "content": "hello\n", "purpose": "a file"}]),
    );
    let mock = MockLlm::start(Script::with_replies([Reply::plan(plan)]).require_key(TEST_KEY));
    let kind = ProviderKind::Gemini;
    let pai = p.pai();
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=renameat2"])
        .args(["-e", "inject=renameat2:delay_enter=5000000"])
        .arg(pai.get_program())
        .args(["run", "write the notes", "--yes"])
        .args(["--base-url", &mock.base_url(kind)])
        .current_dir(&p.root)
        .envs(pai.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env(kind.key_env_var(), TEST_KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut strace = cmd.spawn().unwrap();
    let start = Instant::now();
    while mock.requests().is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if mock.requests().is_empty() {
        let _ = strace.kill();
        let out = strace.wait_with_output().unwrap();
        panic!(
            "pai never called the model: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pai_pid = child_of(strace.id()).expect("pai runs under strace");
    // Long enough for the reply to be read and the WRITE to reach its fsync.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(running(pai_pid), "pai ended before it was signalled");
    signal(pai_pid, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        running(pai_pid),
        "the stall did not hold pai: the test proves nothing"
    );
    let second = Instant::now();
    signal(pai_pid, libc::SIGINT);
    while running(pai_pid) && second.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = second.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "pai took {took:?} after the second signal"
    );
    let status = strace.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    // What the stop left is the next command's to recover: the project is usable.
    assert!(!p.root.join(".git/index.lock").exists());
    let log = p.pai().args(["log"]).output().unwrap();
    assert!(
        log.status.success(),
        "{}",
        String::from_utf8_lossy(&log.stderr)
    );
}
