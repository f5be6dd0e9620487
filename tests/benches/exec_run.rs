#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
//! RUN overhead figures: the cost of starting a trivial command unconfined and under Landlock,
//! and how fast output streams through the head+tail cap. Prints figures; asserts nothing.

use std::time::{Duration, Instant};

use pai::exec::{RunOptions, SandboxMode, SandboxSupport, run_command, sandbox_support};

const STARTS: u32 = 40;
const STREAM_BYTES: usize = 256 * 1024 * 1024;

async fn mean_start(root: &std::path::Path, sandbox: SandboxMode) -> Duration {
    let options = RunOptions {
        sandbox,
        ..RunOptions::default()
    };
    run_command(root, "true", &options).await.unwrap(); // warm-up
    let started = Instant::now();
    for _ in 0..STARTS {
        let out = run_command(root, "true", &options).await.unwrap();
        assert!(out.success());
    }
    started.elapsed() / STARTS
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        let support = sandbox_support();
        println!("sandbox support: {support:?}");
        let off = mean_start(root.path(), SandboxMode::Off).await;
        println!("run `true` unconfined:      {:>8.2} ms per run", ms(off));
        if !matches!(support, SandboxSupport::Unavailable(_)) {
            let on = mean_start(root.path(), SandboxMode::Require).await;
            println!("run `true` under Landlock:  {:>8.2} ms per run", ms(on));
        }

        let options = RunOptions::default();
        let command = format!("head -c {STREAM_BYTES} /dev/zero");
        let started = Instant::now();
        let out = run_command(root.path(), &command, &options).await.unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(out.dropped_bytes, STREAM_BYTES - options.output_cap);
        println!(
            "stream {} MiB through a {} KiB cap: {:.2} s ({:.0} MiB/s)",
            STREAM_BYTES >> 20,
            options.output_cap >> 10,
            secs,
            (STREAM_BYTES >> 20) as f64 / secs
        );
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
