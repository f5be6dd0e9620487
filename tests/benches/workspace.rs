#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
//! Benchmark of the guarded workspace (issue 3). Prints figures; asserts nothing about time.
//!
//! - LIST_PATH and TREE on a generated tree of 100,000 files, against `git ls-files` (and
//!   `find`) on the same tree in the same run, as ratios. Target: LIST_PATH within 2x of git.
//! - The diff guard on a 100,000-line file (several shapes of change). Target: under 50 ms.
//! - The gate on 1,000,000 paths. Target: under 2 µs per path.
//!
//! Run with `cargo bench --bench workspace`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pai::workspace::{Modification, Workspace, WorkspaceConfig, diff_guard};

const RUNS: usize = 7;

/// A named operation to time.
type Row<'a> = (&'static str, Box<dyn Fn() + 'a>);

/// Median wall time of `RUNS` runs of `f` (after one warm-up run).
fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn ms(d: Duration) -> String {
    format!("{:8.2} ms", d.as_secs_f64() * 1e3)
}

/// 10 x 10 x 10 directories of 100 files each, plus a root `.gitignore` and a few ignored and
/// denied entries that must not count.
fn generate_tree(root: &Path) -> usize {
    let mut n = 0;
    for a in 0..10 {
        for b in 0..10 {
            for c in 0..10 {
                let d = root.join(format!("pkg{a}/mod{b}/part{c}"));
                fs::create_dir_all(&d).unwrap();
                for f in 0..100 {
                    fs::write(d.join(format!("file{f:03}.py")), format!("x = {f}\n")).unwrap();
                    n += 1;
                }
            }
        }
    }
    fs::write(root.join(".gitignore"), "*.log\nbuild/\n__generated__/\n").unwrap();
    fs::create_dir_all(root.join("build")).unwrap();
    fs::write(root.join("build/out.o"), "x").unwrap();
    fs::write(root.join("debug.log"), "x").unwrap();
    fs::write(root.join(".env"), "SECRET=1").unwrap();
    n
}

fn git(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `PAI_BENCH=listing,guard,gate` selects sections (all by default); `PAI_BENCH_TREE=<dir>`
/// keeps the generated 100,000-file tree there and reuses it on the next run.
fn main() {
    let only = std::env::var("PAI_BENCH").unwrap_or_default();
    let want = |s: &str| only.is_empty() || only.split(',').any(|o| o == s);
    println!("pai workspace benchmark ({RUNS} runs each, median)\n");
    if want("listing") {
        bench_listing();
    }
    if want("guard") {
        bench_diff_guard();
    }
    if want("gate") {
        bench_gate();
    }
}

fn bench_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("PAI_BENCH_TREE").map(std::path::PathBuf::from);
    let root = keep.clone().unwrap_or_else(|| tmp.path().join("tree"));
    let t = Instant::now();
    if !root.join(".git").exists() {
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let n = generate_tree(&root);
        println!("generated {n} files in {:.1} s", t.elapsed().as_secs_f64());
        git(&root, &["init", "-q", "."]);
        git(&root, &["add", "-A"]);
    }
    let tracked = String::from_utf8_lossy(&git(&root, &["ls-files"]).stdout)
        .lines()
        .count();
    println!(
        "tree ready ({tracked} files in the git index) after {:.1} s\n",
        t.elapsed().as_secs_f64()
    );

    let git_ls = || {
        let out = git(&root, &["ls-files"]);
        assert!(out.stdout.len() > 1_000_000);
    };
    let t = Instant::now();
    let ws = Workspace::open(&root, WorkspaceConfig::default()).unwrap();
    let open = t.elapsed();
    let uncapped = Workspace::open(
        &root,
        WorkspaceConfig {
            max_list_entries: usize::MAX,
            ..WorkspaceConfig::default()
        },
    )
    .unwrap();
    let summary = ws.list_path(".").unwrap();
    println!("LIST_PATH says: {}", summary.lines().last().unwrap_or(""));
    println!("tree of 100,000 files (1,110 directories); each row timed alternately with git:");
    println!(
        "                                    pai median   git median   ratio (median of pairs)"
    );
    let case = std::env::var("PAI_BENCH_CASE").unwrap_or_default();
    let rows: Vec<Row<'_>> = vec![
        (
            "LIST_PATH . (capped at 1,000)",
            Box::new(|| {
                assert!(
                    ws.list_path(".")
                        .unwrap()
                        .contains("more entries not shown")
                )
            }),
        ),
        (
            "LIST_PATH . (uncapped, 101,111)",
            Box::new(|| assert!(uncapped.list_path(".").unwrap().lines().count() > 101_000)),
        ),
        (
            "TREE . (capped at 500)",
            Box::new(|| assert!(ws.tree(".").unwrap().contains("more entries not shown"))),
        ),
        (
            "project_files (all)",
            Box::new(|| assert!(ws.project_files(usize::MAX).0.len() > 100_000)),
        ),
        (
            "find -type f",
            Box::new(|| {
                let out = Command::new("find")
                    .args([
                        ".", "-path", "./.git", "-prune", "-o", "-type", "f", "-print",
                    ])
                    .current_dir(&root)
                    .output()
                    .unwrap();
                assert!(out.stdout.len() > 1_000_000);
            }),
        ),
        (
            "SEARCH ^x = 42$ (reads every file)",
            Box::new(|| {
                let out = ws.search(r"^x = 42$", None).unwrap();
                assert!(
                    out.contains("of 1,000 matching lines (in 1,000 files)"),
                    "{out}"
                );
            }),
        ),
    ];
    for (name, f) in rows {
        if !case.is_empty() && !name.contains(&case) {
            continue;
        }
        let (ours, theirs, ratio) = paired(&*f, &git_ls);
        println!(
            "  {name:<34}{}  {}   {ratio:.2}x git ls-files",
            ms(ours),
            ms(theirs)
        );
    }
    println!("  Workspace::open (stale sweep)     {}\n", ms(open));
}

/// Run `a` and `b` alternately (so both see the same machine load) and return their medians
/// and the median of the per-pair ratios a/b.
fn paired(a: &dyn Fn(), b: &dyn Fn()) -> (Duration, Duration, f64) {
    a();
    b();
    let runs = RUNS * 2 + 1;
    let (mut ta, mut tb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        a();
        let da = t.elapsed();
        let t = Instant::now();
        b();
        let db = t.elapsed();
        ta.push(da);
        tb.push(db);
        ratios.push(da.as_secs_f64() / db.as_secs_f64());
    }
    ta.sort();
    tb.sort();
    ratios.sort_by(f64::total_cmp);
    (ta[runs / 2], tb[runs / 2], ratios[runs / 2])
}

fn bench_diff_guard() {
    let lines = 100_000;
    let old: String = (0..lines)
        .map(|i| format!("    value_{i} = compute({i}, \"item {i}\")\n"))
        .collect();
    let edit_lines = |every: usize| -> String {
        old.lines()
            .enumerate()
            .map(|(i, l)| {
                if i % every == every / 2 {
                    format!("{l} # changed\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    let one_edit = edit_lines(lines);
    let scattered_100 = edit_lines(1_000);
    let scattered_1000 = edit_lines(100);
    let block: String = old
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if (40_000..40_400).contains(&i) {
                format!("new block line {i}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let rewrite: String = (0..lines).map(|i| format!("rewritten {i}\n")).collect();
    let mut shuffled: Vec<&str> = old.split_inclusive('\n').collect();
    // Move every 50th line 25 lines down: lines shared but reordered (Myers' hard case).
    for i in (0..lines - 50).step_by(50) {
        shuffled.swap(i, i + 25);
    }
    let shuffled: String = shuffled.concat();

    let cfg = WorkspaceConfig::default();
    println!("diff guard on a {lines}-line file (threshold 500 lines / 50%):");
    for (name, new) in [
        ("1 line changed", &one_edit),
        ("100 scattered lines changed", &scattered_100),
        ("1,000 scattered lines changed", &scattered_1000),
        ("400-line block replaced", &block),
        ("4,000 lines moved (reordered)", &shuffled),
        ("whole file rewritten (refused)", &rewrite),
    ] {
        if let Ok(case) = std::env::var("PAI_BENCH_CASE")
            && !name.contains(&case)
        {
            continue;
        }
        let mut verdict = String::new();
        let t = median(|| {
            verdict = match diff_guard(&cfg, "big.py", &old, new) {
                Ok((a, r)) => format!("allowed, +{a} -{r}"),
                Err(_) => "refused".to_string(),
            };
        });
        println!("  {name:<34} {}   {verdict}", ms(t));
    }

    // End to end: MODIFY with one search/replace edit on the same file (read, edit, guard,
    // hash, atomic write with fsync).
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("big.py"), &old).unwrap();
    let ws = Workspace::open(tmp.path(), cfg).unwrap();
    let mut flip = false;
    let t = median(|| {
        let (from, to) = if flip {
            (
                "compute(50000, \"item X\")",
                "compute(50000, \"item 50000\")",
            )
        } else {
            (
                "compute(50000, \"item 50000\")",
                "compute(50000, \"item X\")",
            )
        };
        flip = !flip;
        ws.modify(
            "big.py",
            &Modification::Edits(vec![pai::workspace::Edit {
                search: from.into(),
                replace: to.into(),
            }]),
        )
        .unwrap();
    });
    println!("  MODIFY end to end, 1 edit         {}\n", ms(t));
}

fn bench_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    for a in 0..10 {
        for b in 0..10 {
            let d = root.join(format!("src/pkg{a}/mod{b}"));
            fs::create_dir_all(&d).unwrap();
            for f in 0..10 {
                fs::write(d.join(format!("file{f}.rs")), "x").unwrap();
            }
        }
    }
    let n = 1_000_000;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let hostile = [
        "../x",
        "a/../../x",
        "/etc/passwd",
        ".git/config",
        "src/.env",
        "node_modules/x/y",
        "src/pkg1/.GIT/HEAD",
        "..\\x",
        ".g\u{0456}t/config",
    ];
    let paths: Vec<String> = (0..n)
        .map(|_| {
            let r = next();
            let (a, b, f) = (r % 10, (r >> 8) % 10, (r >> 16) % 10);
            match (r >> 32) % 10 {
                0..=5 => format!("src/pkg{a}/mod{b}/file{f}.rs"),
                6 => format!("./src/pkg{a}//mod{b}/new_{f}.rs"),
                7 => format!("src/pkg{a}/mod{b}/../mod{f}/file{a}.rs"),
                8 => format!("src/pkg{a}/missing{b}/deeper/x{f}.rs"),
                _ => hostile[(r >> 40) as usize % hostile.len()].to_string(),
            }
        })
        .collect();
    let ws = Workspace::open(&root, WorkspaceConfig::default()).unwrap();
    let mut accepted = 0usize;
    let t = Instant::now();
    for p in &paths {
        if ws.check(p).is_ok() {
            accepted += 1;
        }
    }
    let fast = t.elapsed();
    let portable = Workspace::open(&root, WorkspaceConfig::default())
        .unwrap()
        .with_portable_resolution();
    let sample = &paths[..200_000];
    let t = Instant::now();
    for p in sample {
        let _ = portable.check(p);
    }
    let slow = t.elapsed();
    println!("gate on {n} paths ({accepted} accepted; mixed existing, new, `..`, hostile):");
    println!(
        "  check (openat2 fast path)        {:8.3} s   {:.2} µs/path",
        fast.as_secs_f64(),
        fast.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  check (portable, 200,000 paths)  {:8.3} s   {:.2} µs/path",
        slow.as_secs_f64(),
        slow.as_secs_f64() * 1e6 / sample.len() as f64
    );
}
