//! RUN's overhead: starting a trivial command unconfined and under Landlock, side by
//! side with `/bin/sh -c true` spawned directly, and how fast output streams through the
//! head+tail cap.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pai::exec::{RunOptions, SandboxMode, SandboxSupport, run_command, sandbox_support};

use crate::common::{Row, ms, paired, ratio};

const AREA: &str = "RUN";
const PAIRS: usize = 30;
const STREAM_BYTES: usize = 256 * 1024 * 1024;

/// The rows, run on a current-thread runtime as pai runs commands; with `python`, also a row
/// for a real command (`python3 -c pass`).
pub fn rows(python: bool) -> Vec<Row> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let mut rows = Vec::new();
    let support = sandbox_support();
    let mut modes = vec![("unconfined", SandboxMode::Off)];
    if !matches!(support, SandboxSupport::Unavailable(_)) {
        modes.push(("under Landlock", SandboxMode::Require));
    }
    let mut commands = vec!["true"];
    if python {
        commands.push("python3 -c pass");
    }
    for command in commands {
        let mut sh = || {
            let out = Command::new("/bin/sh")
                .args(["-c", command])
                .current_dir(root)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(out.status.success());
        };
        for (name, sandbox) in &modes {
            let options = RunOptions {
                sandbox: *sandbox,
                ..RunOptions::default()
            };
            let (ours, theirs, r) = paired(
                if command == "true" { PAIRS } else { PAIRS / 3 },
                &mut || {
                    let out = runtime
                        .block_on(run_command(root, command, &options))
                        .unwrap();
                    assert!(out.success());
                },
                &mut sh,
            );
            rows.push(
                Row::new(AREA, format!("RUN `{command}`, {name}"), ms(ours))
                    .vs(format!("sh -c '{command}' {}", ms(theirs)), r),
            );
        }
    }

    let options = RunOptions::default();
    let command = format!("head -c {STREAM_BYTES} /dev/zero");
    let t = Instant::now();
    let out = runtime
        .block_on(run_command(root, &command, &options))
        .unwrap();
    let ours = t.elapsed();
    assert_eq!(out.dropped_bytes, STREAM_BYTES - options.output_cap);
    let t = Instant::now();
    let direct = Command::new("/bin/sh")
        .args(["-c", &format!("{command} > /dev/null")])
        .status()
        .unwrap();
    assert!(direct.success());
    let theirs = t.elapsed();
    let rate = |d: Duration| (STREAM_BYTES >> 20) as f64 / d.as_secs_f64();
    rows.push(
        Row::new(
            AREA,
            format!(
                "{} MiB of output through the {} KiB cap",
                STREAM_BYTES >> 20,
                options.output_cap >> 10
            ),
            format!("{:.0} MiB/s", rate(ours)),
        )
        .vs(
            format!("to /dev/null {:.0} MiB/s", rate(theirs)),
            ratio(ours, theirs),
        ),
    );
    rows
}
