//! RUN: timeouts kill the whole process group, nothing outlives a run or a dropped future, exit
//! codes and signals are reported, output is interleaved, capped and decoded lossily.

use std::path::Path;
use std::time::{Duration, Instant};

use pai::exec::{ExecError, RunOptions, RunOutcome, run_command};

fn opts(timeout: Duration) -> RunOptions {
    RunOptions {
        timeout,
        ..RunOptions::default()
    }
}

async fn run(root: &Path, command: &str, timeout: Duration) -> RunOutcome {
    run_command(root, command, &opts(timeout))
        .await
        .unwrap_or_else(|e| panic!("`{command}` could not run: {e}"))
}

/// A process is alive if /proc knows it and it is not a zombie (a zombie runs nothing; its
/// reaping is up to init).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            !matches!(state, Some("Z" | "X" | "x"))
        }
        Err(_) => false,
    }
}

/// Whether `pid` is gone within a moment: a killed process closes its files (which ends the
/// run's output) a little before the kernel marks it a zombie, so an instant check would race.
fn dies_soon(pid: i32) -> bool {
    let start = std::time::Instant::now();
    while alive(pid) {
        if start.elapsed() > Duration::from_secs(1) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn read_pid(root: &Path, name: &str) -> i32 {
    let text = std::fs::read_to_string(root.join(name))
        .unwrap_or_else(|e| panic!("{name} was not written by the command: {e}"));
    text.trim().parse().unwrap()
}

#[tokio::test]
async fn timeout_kills_the_command_and_its_children() {
    let root = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(
        root.path(),
        "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 30",
        Duration::from_millis(500),
    )
    .await;
    assert!(out.timed_out);
    assert!(!out.success());
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(libc::SIGTERM));
    assert_eq!(out.output, "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (bg, sh) = (
        read_pid(root.path(), "bg.pid"),
        read_pid(root.path(), "sh.pid"),
    );
    // Checked right away: run_command returns only once the group is gone.
    assert!(dies_soon(bg), "background child {bg} survived the timeout");
    assert!(dies_soon(sh), "shell {sh} survived the timeout");
    assert!(out.summary_for_model().starts_with("timed out after"));
}

#[tokio::test]
async fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
    let root = tempfile::tempdir().unwrap();
    // An ignored signal stays ignored in children, so the whole group shrugs off SIGTERM.
    let out = run(
        root.path(),
        "trap '' TERM; sleep 30 & echo $! > bg.pid; sleep 30",
        Duration::from_millis(300),
    )
    .await;
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert!(
        out.duration >= Duration::from_secs(2),
        "no grace: {:?}",
        out.duration
    );
    assert!(out.duration < Duration::from_secs(6), "{:?}", out.duration);
    let bg = read_pid(root.path(), "bg.pid");
    assert!(dies_soon(bg), "background child {bg} survived SIGKILL");
}

/// A descendant that leaves the process group with `setsid` (and closes the output pipe, so
/// the run does not wait for it) is killed when the step ends too: pai is a child subreaper,
/// so the orphan becomes its child and is reaped.
#[tokio::test]
async fn setsid_descendants_do_not_outlive_a_finished_run() {
    let root = tempfile::tempdir().unwrap();
    let out = run(
        root.path(),
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' </dev/null >/dev/null 2>&1 & \
         while [ ! -s escaped.pid ]; do sleep 0.01; done; echo done",
        Duration::from_secs(10),
    )
    .await;
    assert!(out.success(), "{out:?}");
    let escaped = read_pid(root.path(), "escaped.pid");
    assert!(
        dies_soon(escaped),
        "setsid descendant {escaped} outlived the run"
    );
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_finished_run() {
    let root = tempfile::tempdir().unwrap();
    let out = run(
        root.path(),
        "sleep 30 & echo $! > bg.pid; echo done",
        Duration::from_secs(10),
    )
    .await;
    assert!(out.success(), "{out:?}");
    assert!(!out.timed_out);
    assert_eq!(out.output, "done\n");
    assert!(out.duration < Duration::from_secs(3), "{:?}", out.duration);
    let bg = read_pid(root.path(), "bg.pid");
    assert!(dies_soon(bg), "background job {bg} outlived the run");
}

#[tokio::test]
async fn dropping_the_future_kills_the_process_group() {
    let root = tempfile::tempdir().unwrap();
    let options = opts(Duration::from_secs(60));
    let future = run_command(
        root.path(),
        "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; sleep 30",
        &options,
    );
    // The outer timeout drops the run's future mid-way: that is how a caller cancels.
    let cancelled = tokio::time::timeout(Duration::from_millis(600), future).await;
    assert!(cancelled.is_err(), "the run should still have been going");
    let (bg, sh) = (
        read_pid(root.path(), "bg.pid"),
        read_pid(root.path(), "sh.pid"),
    );
    // SIGKILL is sent on drop; give the kernel a moment to finish the processes off.
    let deadline = Instant::now() + Duration::from_secs(2);
    while (alive(bg) || alive(sh)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(bg),
        "background child {bg} survived the dropped future"
    );
    assert!(dies_soon(sh), "shell {sh} survived the dropped future");
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    let root = tempfile::tempdir().unwrap();
    let t = Duration::from_secs(10);

    let ok = run(root.path(), "true", t).await;
    assert!(ok.success());
    assert_eq!((ok.exit_code, ok.signal), (Some(0), None));

    let failed = run(root.path(), "echo oops >&2; exit 3", t).await;
    assert!(!failed.success());
    assert_eq!((failed.exit_code, failed.signal), (Some(3), None));
    let summary = failed.summary_for_model();
    assert!(summary.starts_with("exit code 3 after"), "{summary}");
    assert!(summary.ends_with("output:\noops"), "{summary}");

    let killed = run(root.path(), "kill -USR1 $$; sleep 5", t).await;
    assert!(!killed.success());
    assert!(!killed.timed_out);
    assert_eq!(
        (killed.exit_code, killed.signal),
        (None, Some(libc::SIGUSR1))
    );
    assert!(
        killed
            .summary_for_model()
            .starts_with("killed by signal 10")
    );
}

#[tokio::test]
async fn output_over_the_cap_keeps_head_and_tail_with_the_dropped_count() {
    let root = tempfile::tempdir().unwrap();
    let options = RunOptions {
        output_cap: 1000,
        ..opts(Duration::from_secs(10))
    };
    // 6 + 100000 + 5 bytes in total.
    let out = run_command(
        root.path(),
        "printf 'BEGIN\\n'; head -c 100000 /dev/zero | tr '\\000' x; printf '\\nEND\\n'",
        &options,
    )
    .await
    .unwrap();
    assert!(out.success(), "{out:?}");
    assert_eq!(out.dropped_bytes, 100_011 - 1000);
    let marker = "[... 99011 bytes of output dropped ...]\n";
    let (head, tail) = out.output.split_once(marker).expect("no drop marker");
    assert_eq!(head, format!("BEGIN\n{}\n", "x".repeat(494)));
    assert_eq!(tail, format!("{}\nEND\n", "x".repeat(495)));
}

#[tokio::test]
async fn stdout_and_stderr_are_interleaved_in_arrival_order() {
    let root = tempfile::tempdir().unwrap();
    let out = run(
        root.path(),
        "echo one; echo two >&2; echo three; echo four >&2",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(out.output, "one\ntwo\nthree\nfour\n");
}

#[tokio::test]
async fn non_utf8_output_is_decoded_lossily() {
    let root = tempfile::tempdir().unwrap();
    let out = run(root.path(), "printf 'a\\377b\\n'", Duration::from_secs(10)).await;
    assert_eq!(out.output, "a\u{FFFD}b\n");
}

#[tokio::test]
async fn stdin_is_closed_and_the_project_root_is_the_working_directory() {
    let root = tempfile::tempdir().unwrap();
    // `cat` would wait forever on an open stdin.
    let out = run(root.path(), "cat; pwd", Duration::from_secs(5)).await;
    assert!(!out.timed_out);
    let expected = std::fs::canonicalize(root.path()).unwrap();
    assert_eq!(out.output.trim_end(), expected.to_str().unwrap());
}

#[tokio::test]
async fn commands_cannot_prompt_on_the_terminal() {
    let root = tempfile::tempdir().unwrap();
    // A new session has no controlling terminal: /dev/tty cannot be opened, so nothing can hang
    // waiting for a password typed there.
    let out = run(
        root.path(),
        "if (exec 3</dev/tty) 2>/dev/null; then echo has-tty; else echo no-tty; fi",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(out.output, "no-tty\n");
}

#[tokio::test]
async fn a_missing_root_is_reported_and_nothing_runs() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nope");
    let err = run_command(&missing, "echo hi", &RunOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::Root { .. }), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");
}
