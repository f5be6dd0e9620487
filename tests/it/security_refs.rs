//! The third review's attack on time: a repository planting refs under `refs/pai/` (here
//! 8,000 `refs/pai/undone/<session>/1`, each a session of its own) must not make `pai log`,
//! `pai gc` or `pai sessions` hang: the refs are listed once, not once per session. The oracle
//! is the wall clock against a bound far above the linear cost and far below the quadratic
//! one (2,000 such refs took 7 s, 8,000 more than 30 s before).

use super::*;

use std::time::{Duration, Instant};

/// Plant `n` undone refs, one session each, all at HEAD, as one packed-refs file.
fn plant_refs(c: &Ctx, n: usize) {
    let head = git(&c.root, &["rev-parse", "HEAD"]).trim().to_string();
    let mut lines: Vec<String> = (0..n)
        .map(|i| format!("{head} refs/pai/undone/s{i:06}/1\n"))
        .collect();
    lines.sort();
    let existing = fs::read_to_string(c.p(".git/packed-refs")).unwrap_or_default();
    let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    text.extend(
        existing
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n")),
    );
    text.extend(lines);
    fs::write(c.p(".git/packed-refs"), text).unwrap();
}

attacks! {
    planted_undone_refs_keep_every_ref_command_linear: Ctx::repo() => |c| {
        plant_refs(&c, 8_000);
        c.arm();
        for args in [&["log"][..], &["gc"], &["sessions"]] {
            let started = Instant::now();
            let out = c.cmd(args);
            let took = started.elapsed();
            assert!(took < Duration::from_secs(10), "pai {args:?} took {took:?}:\n{out}");
        }
    }
}
