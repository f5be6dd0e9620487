//! pai's standard streams: no write to them can panic. The real binary with stdout or stderr
//! on a full disk (`/dev/full`) or a pipe whose reader left exits as the command would (a full
//! stdout turns a success into exit 1, reported once on stderr), never 101; and the source
//! holds no write to either stream outside `src/ui/stream.rs`, so it cannot regress.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The one file allowed to touch the standard streams for writing.
const HELPER: &str = "src/ui/stream.rs";
/// The build script: it speaks to cargo on its standard output (`cargo:` lines), and is not
/// part of pai.
const BUILD_SCRIPT: &str = "src/build.rs";

/// What writes to a standard stream without the helper: the `print!` family (which panics
/// when the write fails), `dbg!`, and the streams' own handles (anything but asking whether
/// they are terminals).
fn offences(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or_default();
        for mac in ["println!", "eprintln!", "print!", "eprint!", "dbg!"] {
            let bare = line.match_indices(mac).any(|(i, _)| {
                !line[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
            });
            if bare {
                found.push(format!("line {}: {mac}", n + 1));
            }
        }
        for handle in ["io::stdout()", "io::stderr()"] {
            for (i, _) in line.match_indices(handle) {
                let rest = &line[i + handle.len()..];
                if !rest.starts_with(".is_terminal()") && !rest.starts_with(".as_fd()") {
                    found.push(format!("line {}: {handle}{rest}", n + 1));
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn nothing_writes_to_a_standard_stream_but_the_stream_helper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut bad = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).unwrap();
        if rel == Path::new(HELPER) || rel == Path::new(BUILD_SCRIPT) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for offence in offences(&text) {
            bad.push(format!("{}: {offence}", rel.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "write to stdout/stderr through crate::ui::stream instead:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_source_check_sees_what_it_forbids() {
    assert_eq!(offences("    println!(\"x\");").len(), 1);
    assert_eq!(offences("    eprintln!(\"x\");").len(), 1);
    assert_eq!(offences("let o = std::io::stdout().lock();").len(), 1);
    assert!(offences("if std::io::stderr().is_terminal() {}").is_empty());
    assert!(offences("// println! in a comment").is_empty());
    assert!(offences("writeln!(out, \"x\")").is_empty());
}

/// A temporary git repository with one commit, and a home of its own.
struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new() -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        let home = tmp.path().join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        let p = Project {
            _tmp: tmp,
            root,
            home,
        };
        fs::write(p.root.join("a.txt"), "a\n").unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=T",
                "-c",
                "user.email=t@example.com",
                "commit",
                "-q",
                "-m",
                "init",
            ],
        ] {
            let ok = Command::new("git")
                .args(args)
                .current_dir(&p.root)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
        p
    }

    fn pai(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pai"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .args(args)
            .current_dir(&self.root);
        cmd
    }
}

fn full() -> File {
    File::options().write(true).open("/dev/full").unwrap()
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Run with stdout on `/dev/full`, stderr captured.
fn stdout_full(cmd: &mut Command) -> Output {
    cmd.stdout(full()).stderr(Stdio::piped()).output().unwrap()
}

/// Run with stderr on `/dev/full`, stdout captured.
fn stderr_full(cmd: &mut Command) -> Output {
    cmd.stdout(Stdio::piped()).stderr(full()).output().unwrap()
}

#[test]
fn a_full_stdout_is_reported_once_and_fails_the_command() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let p = Project::new();
    for args in [
        &["--help"][..],
        &["--version"],
        &["log"],
        &["completions", "bash"],
    ] {
        let out = stdout_full(&mut p.pai(args));
        assert_eq!(out.status.code(), Some(1), "pai {args:?}\n{}", shown(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches("cannot write").count(),
            1,
            "pai {args:?}\n{}",
            shown(&out)
        );
        assert!(
            err.contains("No space left"),
            "pai {args:?}\n{}",
            shown(&out)
        );
        assert!(!err.contains("panicked"), "pai {args:?}\n{}", shown(&out));
    }
}

#[test]
fn a_full_stderr_leaves_the_exit_code_as_the_command_gives_it() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let p = Project::new();
    // A command that succeeds, one that fails with pai's error (on stderr), a usage error.
    for args in [&["log"][..], &["undo"], &["redo"], &["no-such-command"]] {
        let normal = p.pai(args).output().unwrap();
        assert_ne!(
            normal.status.code(),
            Some(101),
            "pai {args:?}\n{}",
            shown(&normal)
        );
        let out = stderr_full(&mut p.pai(args));
        assert_eq!(
            out.status.code(),
            normal.status.code(),
            "pai {args:?} with stderr on a full disk\n{}",
            shown(&out)
        );
        assert_eq!(out.stdout, normal.stdout, "pai {args:?}");
    }
    // Both full: still no panic, the command's own code.
    let out = p
        .pai(&["undo"])
        .stdout(full())
        .stderr(full())
        .output()
        .unwrap();
    let normal = p.pai(&["undo"]).output().unwrap();
    assert_eq!(out.status.code(), normal.status.code());
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let p = Project::new();
    for args in [&["completions", "bash"][..], &["--help"], &["log"]] {
        let mut child = p
            .pai(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader leaves before pai writes a byte.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "pai {args:?}\n{}", shown(&out));
        assert!(out.stderr.is_empty(), "pai {args:?}\n{}", shown(&out));
    }
}

/// `pai run --yes` of a plan that writes a file, its standard streams set by `streams`.
fn run_plan(p: &Project, json: bool, streams: impl FnOnce(&mut Command)) -> Output {
    use crate::support::mock_llm::{MockLlm, Reply, Script};
    use pai::llm::ProviderKind;
    let kind = ProviderKind::Gemini;
    let mock = MockLlm::start(Script::with_replies([Reply::plan(serde_json::json!({
        "intent": "task", "reply": "On it.", "observe": false,
        "steps": [{"action": "WRITE", "path": "new.txt", "content": "x\n"},
                  {"action": "FINISH", "message": "done"}]
    }))]));
    let mut cmd = p.pai(&["run", "do the task", "--yes"]);
    if json {
        cmd.arg("--json");
    }
    cmd.args([
        "--provider",
        kind.name(),
        "--base-url",
        &mock.base_url(kind),
    ])
    .env(kind.key_env_var(), crate::support::project::TEST_KEY);
    streams(&mut cmd);
    cmd.output().unwrap()
}

#[test]
fn a_turn_whose_output_cannot_be_written_still_does_its_work() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    for json in [false, true] {
        let p = Project::new();
        let out = run_plan(&p, json, |c| {
            c.stdout(full()).stderr(Stdio::piped());
        });
        assert_eq!(out.status.code(), Some(1), "json {json}\n{}", shown(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("cannot write").count(), 1, "{}", shown(&out));
        assert!(
            p.root.join("new.txt").exists(),
            "json {json}\n{}",
            shown(&out)
        );

        let p = Project::new();
        let out = run_plan(&p, json, |c| {
            c.stdout(Stdio::piped()).stderr(full());
        });
        assert_eq!(out.status.code(), Some(0), "json {json}\n{}", shown(&out));
        assert!(
            p.root.join("new.txt").exists(),
            "json {json}\n{}",
            shown(&out)
        );
    }
}
