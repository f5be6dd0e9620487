//! The third review's attack on time: a repository planting refs under `refs/pai/` (here
//! 100,000 `refs/pai/undone/<session>/1`, each a session of its own, as one packed-refs file)
//! must not make `pai log`, `pai gc`, `pai sessions` or `pai run` hang: every command lists
//! the refs once, not once per session. The oracle is the wall clock: each command with the
//! planted refs against the same command without them (before, 2,000 such refs took 7 s and
//! 8,000 more than 30 s; quadratic growth puts 100,000 past hours).

use super::*;

use std::time::{Duration, Instant};

/// Planted refs.
const PLANTED: usize = 100_000;

/// How much longer a command may take with the planted refs. The release build takes well
/// under a second more (see the commit that bounded them); this is a debug build on a shared
/// machine, so the bound is wider, and still far below what quadratic growth gives.
const MORE: Duration = Duration::from_secs(6);

/// Plant `n` undone refs, one session each, all at HEAD, as one packed-refs file.
fn plant_refs(c: &Ctx, n: usize) {
    let head = git(&c.root, &["rev-parse", "HEAD"]).trim().to_string();
    let mut lines: Vec<String> = (0..n)
        .map(|i| format!("{head} refs/pai/undone/s{i:06}/1\n"))
        .collect();
    let existing = fs::read_to_string(c.p(".git/packed-refs")).unwrap_or_default();
    lines.extend(
        existing
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
            .map(|l| format!("{l}\n")),
    );
    lines.sort_by(|a, b| a.split(' ').nth(1).cmp(&b.split(' ').nth(1)));
    let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    text.extend(lines);
    fs::write(c.p(".git/packed-refs"), text).unwrap();
}

/// `pai <args>` killed after `limit`; how long it took (`limit` when killed).
fn timed(c: &Ctx, args: &[&str], limit: Duration) -> Duration {
    let started = Instant::now();
    let mut child = c
        .pai()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return started.elapsed();
        }
        if started.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            return limit;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `pai run` of a one-WRITE plan, timed.
fn timed_run(c: &mut Ctx, file: &str) -> Duration {
    let started = Instant::now();
    c.run(vec![plan(json!([write(file, "x\n")]))], &["--yes"]);
    started.elapsed()
}

attacks! {
    planted_undone_refs_keep_every_ref_command_linear: Ctx::repo() => |c| {
        let commands: [&[&str]; 3] = [&["log"], &["gc"], &["sessions"]];
        let limit = Duration::from_secs(60);
        let before: Vec<Duration> = commands.iter().map(|a| timed(&c, a, limit)).collect();
        let run_before = timed_run(&mut c, "a.txt");
        plant_refs(&c, PLANTED);
        c.arm();
        for (args, before) in commands.iter().zip(before) {
            let after = timed(&c, args, limit);
            assert!(after < before + MORE, "pai {args:?}: {before:?} without the refs, {after:?} with");
        }
        let run_after = timed_run(&mut c, "b.txt");
        assert!(run_after < run_before + MORE, "pai run: {run_before:?} without the refs, {run_after:?} with");
        // The planted refs are not pai's: log shows the user's one plan, not 100,000 sessions.
        let log = c.cmd(&["log"]);
        assert!(!log.contains("s000001"), "{log}");
    }
}
