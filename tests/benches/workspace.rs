//! The guarded workspace's figures: LIST_PATH, TREE, the project file list and SEARCH
//! on the 100,000-file tree side by side with `git ls-files` / `find` / `git grep`; the diff
//! guard on a 100,000-line file; the gate per path. Also generates the shared trees.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pai::workspace::{Edit, Modification, Workspace, WorkspaceConfig, diff_guard};

use crate::common::{Row, git, median_of, ms, paired, ratio, thousands};

const AREA: &str = "workspace";
/// Pairs per side-by-side listing row; medians are taken over them.
const PAIRS: usize = 7;
/// Runs per diff-guard shape.
const RUNS: usize = 5;

/// The path of generated file `i`: directories of 100 files, three levels deep
/// (`pkg{a}/mod{b}/part{c}/file{f}.py`), so 100,000 files make 1,000 leaf directories.
pub fn file_path(i: usize) -> String {
    let dir = i / 100;
    format!(
        "pkg{}/mod{}/part{}/file{:03}.py",
        dir / 100,
        (dir / 10) % 10,
        dir % 10,
        i % 100
    )
}

/// Fills `root` with `files` small files plus a root `.gitignore` and a few ignored and denied
/// entries that must not count, and commits the files to a new repository (branch `main`).
/// A tree that is already a repository is reused as it is.
pub fn generate_repo(root: &Path, files: usize) {
    if root.join(".git").exists() {
        return;
    }
    let _ = fs::remove_dir_all(root);
    for i in 0..files {
        let path = root.join(file_path(i));
        if i % 100 == 0 {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        fs::write(path, format!("x = {}\n", i % 100)).unwrap();
    }
    fs::write(root.join(".gitignore"), "*.log\nbuild/\n__generated__/\n").unwrap();
    fs::create_dir_all(root.join("build")).unwrap();
    fs::write(root.join("build/out.o"), "x").unwrap();
    fs::write(root.join("debug.log"), "x").unwrap();
    fs::write(root.join(".env"), "SECRET=1").unwrap();
    git(root, &["init", "-q", "-b", "main", "."]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "generated"]);
    // Warm the caches the way a user's repository is warm, and let the 100,000 new files and
    // objects reach the disk before anything is timed.
    git(root, &["status", "--porcelain"]);
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
}

/// Listing and search rows on the tree [`generate_repo`] made at `root` with `files` files.
pub fn listing_rows(root: &Path, files: usize) -> Vec<Row> {
    let t = Instant::now();
    let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
    let open = t.elapsed();
    // The sweep for stale temporaries walks the tree in the background; let it finish so it
    // does not compete with the timings.
    let t = Instant::now();
    ws.stale_temps_removed();
    let sweep = t.elapsed();
    let uncapped = Workspace::open(
        root,
        WorkspaceConfig {
            max_list_entries: usize::MAX,
            ..WorkspaceConfig::default()
        },
    )
    .unwrap();
    uncapped.stale_temps_removed();
    let files_label = thousands(files as u64);

    let mut rows = listings_vs_git_ls_files(root, files, &ws, &uncapped);
    rows.push(search_row(root, &files_label, &ws));
    rows.push(
        Row::new(
            AREA,
            format!("Workspace::open on {files_label} files"),
            ms(open),
        )
        .note(format!("background stale-temp sweep: {}", ms(sweep))),
    );
    rows
}

/// LIST_PATH (capped and not), TREE, the project file list and `find`, each paired with
/// `git ls-files` on the same tree.
fn listings_vs_git_ls_files(
    root: &Path,
    files: usize,
    ws: &Workspace,
    uncapped: &Workspace,
) -> Vec<Row> {
    let files_label = thousands(files as u64);
    let mut rows = Vec::new();
    let mut git_ls = || {
        let out = git(root, &["ls-files"]);
        assert!(out.stdout.len() > 1_000);
    };
    let mut side_by_side = |what: String, f: &mut dyn FnMut(), target: bool| {
        let (ours, theirs, r) = paired(PAIRS, f, &mut git_ls);
        let row = Row::new(AREA, what, ms(ours)).vs(format!("git ls-files {}", ms(theirs)), r);
        if target {
            row.target("within 2x of git ls-files", r <= 2.0)
        } else {
            row
        }
    };
    rows.push(side_by_side(
        format!("LIST_PATH . on {files_label} files (shows 1,000)"),
        &mut || {
            let out = ws.list_path(".").unwrap();
            assert!(out.contains("more entries not shown"));
        },
        true,
    ));
    rows.push(side_by_side(
        format!("LIST_PATH . on {files_label} files, uncapped"),
        &mut || {
            let out = uncapped.list_path(".").unwrap();
            assert!(out.lines().count() > files);
        },
        true,
    ));
    rows.push(side_by_side(
        format!("TREE . on {files_label} files (shows 500)"),
        &mut || assert!(ws.tree(".").unwrap().contains("more entries not shown")),
        false,
    ));
    rows.push(side_by_side(
        "project file list for the model's context (all)".into(),
        &mut || assert!(ws.project_files(usize::MAX).0.len() >= files),
        false,
    ));
    rows.push(side_by_side(
        "reference: find -type f".into(),
        &mut || {
            let out = Command::new("find")
                .args([
                    ".", "-path", "./.git", "-prune", "-o", "-type", "f", "-print",
                ])
                .current_dir(root)
                .output()
                .unwrap();
            assert!(out.stdout.len() > 1_000);
        },
        false,
    ));
    rows
}

/// SEARCH reads every file; its fair reference is git grep on the same tree.
fn search_row(root: &Path, files_label: &str, ws: &Workspace) -> Row {
    let (ours, theirs, r) = paired(
        PAIRS,
        &mut || {
            let out = ws.search(r"^x = 42$", None).unwrap();
            assert!(out.contains("matching lines"), "{out}");
        },
        &mut || {
            let out = git(root, &["grep", "-c", "-E", "^x = 42$"]);
            assert!(!out.stdout.is_empty());
        },
    );
    Row::new(
        AREA,
        format!("SEARCH ^x = 42$ over {files_label} files"),
        ms(ours),
    )
    .vs(format!("git grep {}", ms(theirs)), r)
}

/// Lines in the diff guard's file.
const GUARD_LINES: usize = 100_000;

/// The diff guard on a 100,000-line file, for several shapes of change, and one MODIFY end to
/// end (read, edit, guard, atomic write with fsync) on the same file.
pub fn guard_rows() -> Vec<Row> {
    let old: String = (0..GUARD_LINES)
        .map(|i| format!("    value_{i} = compute({i}, \"item {i}\")\n"))
        .collect();
    let cfg = WorkspaceConfig::default();
    let mut rows = Vec::new();
    for (name, new) in changed_versions(&old) {
        let mut verdict = String::new();
        let t = median_of(RUNS, || {
            verdict = match diff_guard(&cfg, "big.py", &old, &new) {
                Ok((a, r)) => format!("allowed, +{a} -{r}"),
                Err(_) => "refused".to_string(),
            };
        });
        rows.push(
            Row::new(
                AREA,
                format!("diff guard, 100,000 lines: {name} ({verdict})"),
                ms(t),
            )
            .target("< 50 ms", t < Duration::from_millis(50)),
        );
    }
    rows.push(modify_row(&old, cfg));
    rows
}

/// The shapes of change the diff guard is timed on, each named, as new versions of `old`.
fn changed_versions(old: &str) -> [(&'static str, String); 5] {
    let lines = GUARD_LINES;
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
    [
        ("1 line changed", edit_lines(lines)),
        ("1,000 scattered lines changed", edit_lines(100)),
        ("400-line block replaced", block),
        ("4,000 lines moved", shuffled),
        ("whole file rewritten", rewrite),
    ]
}

/// One MODIFY end to end on `old` written to a file, flipping one call's argument back and
/// forth.
fn modify_row(old: &str, cfg: WorkspaceConfig) -> Row {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("big.py"), old).unwrap();
    let ws = Workspace::open(tmp.path(), cfg).unwrap();
    let mut flip = false;
    let t = median_of(RUNS, || {
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
            &Modification::Edits(vec![Edit {
                search: from.into(),
                replace: to.into(),
            }]),
        )
        .unwrap();
    });
    Row::new(
        AREA,
        "MODIFY end to end, 1 edit in 100,000 lines (with fsync)",
        ms(t),
    )
}

/// The gate on 1,000,000 generated paths (existing, new, `..`, hostile), by the `openat2`
/// fast path and the portable component-by-component resolution.
pub fn gate_rows() -> Vec<Row> {
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
    let t = Instant::now();
    let accepted = paths.iter().filter(|p| ws.check(p).is_ok()).count();
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
    let per = |d: Duration, k: usize| d.as_secs_f64() * 1e6 / k as f64;
    vec![
        Row::new(
            AREA,
            format!(
                "gate per path (openat2), {} paths, {} accepted",
                thousands(n as u64),
                thousands(accepted as u64)
            ),
            format!("{:.2} µs", per(fast, n)),
        )
        .target("< 2 µs", per(fast, n) < 2.0),
        Row::new(
            AREA,
            "gate per path (portable resolution, no openat2)",
            format!("{:.2} µs", per(slow, sample.len())),
        )
        .vs(
            format!("openat2 path {:.2} µs", per(fast, n)),
            ratio(slow, fast) * n as f64 / sample.len() as f64,
        ),
    ]
}
