//! Property test of the gate: over at least 10,000 generated paths per run, built from
//! ordinary names, dots, protected names, lookalikes and a zoo of symlinks (inside, outside,
//! absolute, dangling, looping, into `.git`), any path the gate accepts
//! - names something inside the root: its resolved form has no `..`, and no existing prefix of
//!   it is a symlink (so opening it component by component cannot leave the root);
//! - agrees with the kernel: where the path exists, `realpath` of the lexical path is the root
//!   joined with the gate's resolved path;
//! - has no denied segment, lexically or resolved (checked by an independent list).
//!
//! And the fast (`openat2`) and portable resolution paths give the same answers.

use std::cell::Cell;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use pai::workspace::{Workspace, WorkspaceConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const SEGMENTS: &[&str] = &[
    "a",
    "b",
    "src",
    "main.py",
    "f.txt",
    "x",
    "deep",
    "new",
    ".",
    "..",
    "",
    ".git",
    ".GIT",
    ".g\u{0456}t",
    ".git.",
    ".env",
    ".env.local",
    ".Env",
    "node_modules",
    "venv",
    "id_rsa",
    "k.pem",
    "__pycache__",
    "in_link",
    "abs_in",
    "out_link",
    "abs_out",
    "loop",
    "dangle_in",
    "dangle_out",
    "git_link",
    "up",
    "self",
    "chain",
    "back",
    "~",
    "a\\b",
    "C:",
    "\u{200B}x",
    "é",
    "a b",
    "-",
    "*",
    "%2e%2e",
    ".pai-tmp-1-1",
    ".gitignore",
    "env",
];

/// Independent deny oracle: the SPEC list, case-insensitively, plus the lookalikes the
/// generator uses.
fn denied_segment(seg: &str) -> bool {
    let s = seg.to_lowercase();
    let s = s.trim_end_matches(['.', ' ']);
    matches!(
        s,
        ".git"
            | ".env"
            | "venv"
            | ".venv"
            | "__pycache__"
            | ".pai_history"
            | ".idea"
            | ".vscode"
            | "node_modules"
            | ".netrc"
            | ".npmrc"
            | ".pypirc"
            | ".g\u{0456}t"
    ) || s.starts_with(".env.")
        || s.ends_with(".pem")
        || s.starts_with("id_rsa")
        || s.starts_with("id_ed25519")
        || s.starts_with(".pai-tmp-")
}

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    let outside = tmp.path().join("outside");
    for d in ["a/b", "src", ".git", "deep/x/y", "node_modules"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::create_dir_all(outside.join("a")).unwrap();
    for f in [
        "a/f.txt",
        "src/main.py",
        ".env",
        ".git/config",
        "deep/x/y/f.txt",
    ] {
        fs::write(root.join(f), "x").unwrap();
    }
    let root = fs::canonicalize(&root).unwrap();
    let links: &[(&str, PathBuf)] = &[
        ("in_link", "a".into()),
        ("abs_in", root.join("src")),
        ("out_link", "../outside".into()),
        ("abs_out", "/tmp".into()),
        ("loop", "loop".into()),
        ("dangle_in", "a/missing".into()),
        ("dangle_out", "/nonexistent/pai".into()),
        ("git_link", ".git".into()),
        ("up", "..".into()),
        ("self", ".".into()),
        ("chain", "in_link/b".into()),
        ("a/back", "../src".into()),
        ("deep/x/back", "../../a".into()),
        ("a/b/up", "../../..".into()),
    ];
    for (l, t) in links {
        symlink(t, root.join(l)).unwrap();
    }
    Fixture { _tmp: tmp, root }
}

/// What the kernel makes of `root/rel` for the part that exists: realpath of the longest
/// prefix that can be resolved, joined with the rest. `None` when a prefix cannot be resolved
/// (a dangling or looping link), where only confinement is checked.
fn kernel_resolve(root: &Path, rel: &str) -> Option<PathBuf> {
    let comps: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
    let mut n = comps.len();
    loop {
        let prefix: PathBuf = comps[..n].iter().fold(root.to_path_buf(), |p, c| p.join(c));
        if prefix.symlink_metadata().is_ok() {
            let canon = fs::canonicalize(&prefix).ok()?;
            return Some(comps[n..].iter().fold(canon, |p, c| p.join(c)));
        }
        if n == 0 {
            return Some(root.to_path_buf());
        }
        n -= 1;
    }
}

#[test]
fn gate_accepts_only_confined_undenied_paths() {
    let fx = fixture();
    let fast = Workspace::open(&fx.root, WorkspaceConfig::default()).unwrap();
    let slow = Workspace::open(&fx.root, WorkspaceConfig::default())
        .unwrap()
        .with_portable_resolution();
    let strategy = (
        prop::collection::vec(prop::sample::select(SEGMENTS), 1..8),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.15),
    );
    let mut runner = TestRunner::new(Config {
        cases: 10_000,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = Cell::new(0usize);
    let cases = Cell::new(0usize);
    runner
        .run(&strategy, |(segs, absolute, trailing)| {
            cases.set(cases.get() + 1);
            let mut path = segs.join("/");
            if absolute {
                path.insert(0, '/');
            }
            if trailing {
                path.push('/');
            }
            let a = fast.check(&path);
            let b = slow.check(&path);
            prop_assert_eq!(
                a.as_ref().map(|r| r.resolved().to_string()).ok(),
                b.as_ref().map(|r| r.resolved().to_string()).ok(),
                "fast and portable resolution disagree on {:?}",
                path
            );
            let Ok(rel) = a else { return Ok(()) };
            accepted.set(accepted.get() + 1);
            prop_assert!(!path.starts_with('/'), "absolute accepted: {:?}", path);
            let suspicious = path.contains('\\') || path.contains('\u{200B}');
            prop_assert!(!suspicious, "accepted {:?}", path);
            for seg in rel.as_str().split('/').chain(rel.resolved().split('/')) {
                prop_assert!(seg != ".." && seg != ".", "{:?} -> {:?}", path, rel);
                prop_assert!(!denied_segment(seg), "{:?} accepted with {:?}", path, seg);
            }
            // No existing prefix of the resolved path is a symlink: opening it with
            // O_NOFOLLOW one component at a time stays under the root.
            let mut p = fx.root.clone();
            for c in rel.components_for_test() {
                p.push(c);
                match p.symlink_metadata() {
                    Ok(m) => prop_assert!(
                        !m.file_type().is_symlink(),
                        "{:?}: resolved path {:?} goes through symlink {}",
                        path,
                        rel.resolved(),
                        p.display()
                    ),
                    Err(_) => break,
                }
            }
            if let Some(k) = kernel_resolve(&fx.root, rel.as_str()) {
                let gate = fx.root.join(rel.resolved());
                let gate = gate.to_str().unwrap().trim_end_matches('/');
                prop_assert_eq!(
                    k.to_str().unwrap(),
                    gate,
                    "kernel and gate differ on {:?}",
                    path
                );
            }
            Ok(())
        })
        .unwrap();
    let (cases, accepted) = (cases.get(), accepted.get());
    eprintln!("gate property: {accepted} of {cases} paths accepted");
    assert!(cases >= 10_000, "{cases} cases");
    // The generator must exercise both sides of the gate.
    assert!(
        accepted > 500 && accepted < cases - 500,
        "accepted {accepted} of {cases}"
    );
}

trait Components {
    fn components_for_test(&self) -> Vec<String>;
}

impl Components for pai::workspace::RelPath {
    fn components_for_test(&self) -> Vec<String> {
        self.resolved()
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}
