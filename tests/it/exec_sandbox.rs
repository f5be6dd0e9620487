//! RUN under Landlock: writes inside the project, the temp dirs and extra paths succeed; writes
//! anywhere else fail, however they are attempted. Where the kernel has no Landlock, each test
//! prints a SKIPPED line with the reason (straight to stderr, past the test harness's capture).
//!
//! The "outside" directory must be outside the project and outside every directory the sandbox
//! allows (/tmp, $TMPDIR, /dev/shm), or a passing test would prove nothing: it is created under
//! cargo's per-target scratch dir (or $HOME), checked against the allowed paths, and first written
//! to unconfined, so a confined failure can only be Landlock's doing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pai::exec::{
    RunOptions, RunOutcome, SandboxMode, SandboxSupport, landlock_abi, run_command,
    sandbox_support, writable_paths,
};
use tempfile::TempDir;

/// Say loudly that a test did not test anything. Written to the process's stderr directly, not
/// through `eprintln!`, which the harness captures and hides for passing tests.
#[allow(clippy::explicit_write)]
fn skipped(test: &str, reason: &str) {
    writeln!(std::io::stderr(), "SKIPPED {test}: {reason}").unwrap();
}

fn landlock_or_skip(test: &str) -> bool {
    match sandbox_support() {
        SandboxSupport::Full => true,
        SandboxSupport::Partial(gaps) => {
            eprintln!("{test}: Landlock is partial: {gaps}");
            true
        }
        SandboxSupport::Unavailable(reason) => {
            skipped(
                test,
                &format!("this kernel has no usable Landlock: {reason}"),
            );
            false
        }
    }
}

/// A project root and a directory outside everything the sandbox allows.
struct Dirs {
    root: TempDir,
    outside: TempDir,
}

impl Dirs {
    fn new() -> Option<Dirs> {
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        let allowed: Vec<PathBuf> = writable_paths(&root_path, &[])
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        let candidates = [
            Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
            std::env::var_os("HOME").map(PathBuf::from),
        ];
        for base in candidates.into_iter().flatten() {
            let Ok(base) = base.canonicalize() else {
                continue;
            };
            if allowed.iter().any(|a| base.starts_with(a)) {
                continue;
            }
            if let Ok(outside) = tempfile::Builder::new()
                .prefix("pai-outside-")
                .tempdir_in(&base)
            {
                return Some(Dirs { root, outside });
            }
        }
        None
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn outside(&self, name: &str) -> String {
        self.outside.path().join(name).to_str().unwrap().to_string()
    }
}

fn dirs_or_skip(test: &str) -> Option<Dirs> {
    let dirs = Dirs::new();
    if dirs.is_none() {
        skipped(
            test,
            "no writable directory outside the sandbox's allowed paths to test with",
        );
    }
    dirs
}

async fn run(root: &Path, command: &str, sandbox: SandboxMode, extra: Vec<PathBuf>) -> RunOutcome {
    let options = RunOptions {
        timeout: Duration::from_secs(10),
        sandbox,
        extra_writable: extra,
        ..RunOptions::default()
    };
    run_command(root, command, &options)
        .await
        .unwrap_or_else(|e| panic!("`{command}` could not run: {e}"))
}

async fn confined(root: &Path, command: &str) -> RunOutcome {
    let out = run(root, command, SandboxMode::Require, Vec::new()).await;
    assert!(out.confined, "`{command}` ran unconfined");
    out
}

#[tokio::test]
async fn writes_outside_the_project_fail_under_landlock_while_inside_succeed() {
    let test = "writes_outside_the_project_fail_under_landlock_while_inside_succeed";
    if !landlock_or_skip(test) {
        return;
    }
    let Some(dirs) = dirs_or_skip(test) else {
        return;
    };
    eprintln!("Landlock ABI {:?}", landlock_abi());

    // Control: unconfined, the outside directory is writable, so a confined failure is Landlock's.
    let control = dirs.outside("control.txt");
    let out = run(
        dirs.root(),
        &format!("echo x > '{control}'"),
        SandboxMode::Off,
        vec![],
    )
    .await;
    assert!(out.success() && !out.confined, "{out:?}");
    assert!(Path::new(&control).exists());

    let escaped = dirs.outside("escaped.txt");
    let out = confined(dirs.root(), &format!("echo x > '{escaped}'")).await;
    assert!(!out.success(), "the write outside succeeded: {out:?}");
    assert!(out.output.contains("Permission denied"), "{}", out.output);
    assert!(!Path::new(&escaped).exists());

    let out = confined(
        dirs.root(),
        "mkdir -p sub && echo inside > sub/inside.txt && echo ok > /dev/null && cat sub/inside.txt",
    )
    .await;
    assert!(out.success(), "{out:?}");
    assert_eq!(out.output, "inside\n");
    assert!(dirs.root().join("sub/inside.txt").exists());
}

#[tokio::test]
async fn temp_dirs_and_extra_writable_paths_are_writable_when_confined() {
    let test = "temp_dirs_and_extra_writable_paths_are_writable_when_confined";
    if !landlock_or_skip(test) {
        return;
    }
    let Some(dirs) = dirs_or_skip(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let in_tmp = tmp.path().join("t.txt");
    let out = confined(dirs.root(), &format!("echo t > '{}'", in_tmp.display())).await;
    assert!(out.success(), "{out:?}");
    assert!(in_tmp.exists());

    let extra = dirs.outside("extra.txt");
    let options_extra = vec![dirs.outside.path().to_path_buf()];
    let out = run(
        dirs.root(),
        &format!("echo e > '{extra}'"),
        SandboxMode::Require,
        options_extra,
    )
    .await;
    assert!(out.confined && out.success(), "{out:?}");
    assert!(Path::new(&extra).exists());
}

#[tokio::test]
async fn confined_commands_cannot_escape_by_symlink_rename_removal_or_truncation() {
    let test = "confined_commands_cannot_escape_by_symlink_rename_removal_or_truncation";
    if !landlock_or_skip(test) {
        return;
    }
    let Some(dirs) = dirs_or_skip(test) else {
        return;
    };
    let precious = dirs.outside("precious.txt");
    std::fs::write(&precious, "precious").unwrap();
    let outside_dir = dirs.outside.path().display().to_string();

    let attempts = [
        // A symlink inside the project pointing outside.
        format!("ln -s '{outside_dir}' link && echo x > link/via-link.txt"),
        // Renaming a project file out of the project.
        format!("echo m > moved.txt && mv moved.txt '{outside_dir}/moved.txt'"),
        // A grandchild process (the sandbox is inherited across fork and exec).
        format!("sh -c \"cp /etc/hostname '{outside_dir}/copied.txt'\""),
        format!("mkdir '{outside_dir}/newdir'"),
        format!("rm -f '{precious}'"),
        format!(": > '{precious}'"),
        format!("echo more >> '{precious}'"),
    ];
    for attempt in &attempts {
        let out = confined(dirs.root(), attempt).await;
        eprintln!(
            "{attempt}\n  -> {}",
            out.summary_for_model().replace('\n', "\n     ")
        );
        assert!(!out.success(), "`{attempt}` succeeded: {out:?}");
    }
    // truncate(2) on a path, without opening the file for writing: needs Landlock ABI 3.
    if landlock_abi().unwrap_or(0) >= 3 && Path::new("/usr/bin/python3").exists() {
        let script = format!("python3 -c \"import os; os.truncate('{precious}', 0)\"");
        let out = confined(dirs.root(), &script).await;
        eprintln!(
            "{script}\n  -> {}",
            out.summary_for_model().replace('\n', "\n     ")
        );
        assert!(!out.success(), "truncate(2) succeeded: {out:?}");
    }

    let mut left: Vec<String> = std::fs::read_dir(dirs.outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["precious.txt"], "something was written outside");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
}

#[tokio::test]
async fn off_mode_runs_unconfined() {
    let root = tempfile::tempdir().unwrap();
    let out = run(root.path(), "true", SandboxMode::Off, vec![]).await;
    assert!(out.success());
    assert!(!out.confined);
}

#[tokio::test]
async fn require_mode_confines_or_refuses() {
    let root = tempfile::tempdir().unwrap();
    let options = RunOptions {
        sandbox: SandboxMode::Require,
        ..RunOptions::default()
    };
    let result = run_command(root.path(), "touch ran", &options).await;
    match sandbox_support() {
        SandboxSupport::Unavailable(reason) => {
            let err = result.unwrap_err();
            assert!(err.to_string().contains(&reason), "{err}");
            assert!(!root.path().join("ran").exists(), "the command ran anyway");
        }
        SandboxSupport::Full | SandboxSupport::Partial(_) => {
            let out = result.unwrap();
            assert!(out.confined && out.success(), "{out:?}");
            assert!(root.path().join("ran").exists());
        }
    }
}
