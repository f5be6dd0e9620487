#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
//! pai's one benchmark: start-up, memory, model cost per scenario and wire format,
//! RUN, the workspace and the git history, printed as one Markdown table. Every comparison is
//! measured side by side in the same run; times are printed, never asserted.
//!
//! `cargo bench --bench pai` builds the release binary (cargo builds a package's binaries for
//! its benches and names them in `CARGO_BIN_EXE_pai`), so it works on a clean clone with
//! nothing built by hand. Sections can be picked: `cargo bench --bench pai -- startup model
//! mcp cache edits run workspace history scale worktree` (`-- --help` lists them). `PAI_BENCH_TREE=<dir>` keeps the generated 100,000-file repository
//! there for the next run; `PAI_BENCH_FILES` changes its size, `PAI_BENCH_RUNS` the history
//! rounds (7), `PAI_BENCH_REPS` the runs per scenario (5), `PAI_BENCH_SCENARIO` picks scenarios
//! by name, `PAI_BENCH_REPLAY=1` estimates the time of RUN commands by replaying them even where
//! the kernel's process events could measure it.

#[path = "cache.rs"]
mod cache;
#[path = "child_watch.rs"]
mod child_watch;
#[path = "common.rs"]
mod common;
#[path = "../edits_corpus/corpus.rs"]
mod corpus;
#[path = "edits.rs"]
mod edits;
#[path = "exec_run.rs"]
mod exec_run;
#[path = "history.rs"]
mod history;
#[path = "map.rs"]
mod map;
#[path = "mcp.rs"]
mod mcp;
#[path = "scale.rs"]
mod scale;
#[path = "scale_shapes.rs"]
mod scale_shapes;
#[path = "../support/mod.rs"]
mod support;
use support::history as history_common;
#[path = "workspace.rs"]
mod workspace;
#[path = "worktree.rs"]
mod worktree;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use serde_json::Value;

use child_watch::ChildWatch;
use common::{Row, mb, median, median_of, ms, paired, ratio, thousands};
use support::mock_llm::{MockLlm, Script};
use support::project::{Project, TEST_KEY};
use support::pty::Pty;

const PAI: &str = env!("CARGO_BIN_EXE_pai");
/// Runs of `pai --version` / `--help`, each paired with its reference.
const STARTS: usize = 30;
/// Launches of the interactive session.
const PROMPTS: usize = 10;
const PROMPT: &str = "user> ";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// The sections, in the order they run, with what each measures.
const SECTIONS: &[(&str, &str)] = &[
    (
        "startup",
        "pai --version / --help and the interactive prompt, beside git and python3",
    ),
    (
        "model",
        "calls, tokens, local time and memory of every scenario over 3 wire formats",
    ),
    (
        "map",
        "the repository map on real repositories' cases (PAI_MAP_TREES, PAI_MAP_GIT_DIRS) and its time at 10,000 and 100,000 files; only when named",
    ),
    ("mcp", "the cost of MCP tool lists"),
    ("cache", "prompt caching across calls"),
    ("edits", "search/replace edits on the corpus"),
    (
        "run",
        "RUN's overhead, unconfined and under Landlock, and output streaming",
    ),
    (
        "workspace",
        "listings, search, the diff guard and the gate on a 100,000-file tree",
    ),
    (
        "history",
        "plan commit, undo and the RUN snapshot in-process, beside git",
    ),
    (
        "scale",
        "every command end to end on three shapes of repository (1,000 / 10,000 / 100,000 files, and a real one), beside git, with peak RSS",
    ),
    (
        "worktree",
        "a worktree session's worktree (pai run -w) at 10,000 and 100,000 files, beside git worktree add",
    ),
];

fn print_help() {
    println!("cargo bench --bench pai [-- SECTION...]\n\nSections (all when none is named):");
    for (name, what) in SECTIONS {
        println!("  {name:<10} {what}");
    }
    println!(
        "\nEnvironment: PAI_BENCH_TREE, PAI_BENCH_FILES, PAI_BENCH_RUNS, PAI_BENCH_REPS, \
         PAI_BENCH_SCENARIO, PAI_BENCH_REPLAY (see tests/benches/pai.rs); for `scale`: \
         PAI_BENCH_SCALE_DIR (where the repositories are kept, /tmp/pai-bench-scale), \
         PAI_BENCH_SCALE_SIZES (1000,10000,100000), PAI_BENCH_SCALE_REPS (7), \
         PAI_BENCH_SCALE_SHAPES (generated,prose,real), PAI_BENCH_SCALE_REAL (a checkout of a \
         real repository), PAI_BENCH_SCALE_HOME (the HOME of the pai processes), PAI_BENCH_BIN."
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print_help();
        return;
    }
    // cargo passes `--bench`; other arguments name sections.
    let picked: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(unknown) = picked
        .iter()
        .find(|p| !SECTIONS.iter().any(|(name, _)| name == p))
    {
        eprintln!("no section `{unknown}`");
        print_help();
        std::process::exit(2);
    }
    let want = |s: &str| picked.is_empty() || picked.iter().any(|p| p == s);
    history_common::hermetic();
    // SAFETY: no other thread runs yet. Every child (pai, its RUN commands, the replays)
    // inherits this PATH.
    unsafe { std::env::set_var("PATH", real_python_path()) };
    let began = Instant::now();
    let mut rows = Vec::new();
    if want("startup") {
        eprintln!("start-up ...");
        rows.extend(startup_rows());
    }
    if want("model") {
        eprintln!("model cost and memory (every scenario x 3 wire formats) ...");
        rows.extend(model_rows(env_usize("PAI_BENCH_REPS", 5)));
    }
    if picked.iter().any(|p| p == "map") {
        eprintln!(
            "repository map localization ({}) ...",
            map::cases_file().display()
        );
        if std::env::var_os("PAI_MAP_COLD").is_some() {
            rows.extend(map::cold_rows());
        } else {
            rows.extend(map::rows());
            rows.extend(map::scale_rows());
        }
    }
    if want("mcp") {
        eprintln!("MCP tool list cost ...");
        rows.extend(mcp::rows(python3()));
    }
    if want("cache") {
        eprintln!("prompt cache ...");
        rows.extend(cache::rows());
    }
    if want("edits") {
        eprintln!("edits ...");
        rows.extend(edits::rows());
    }
    if want("run") {
        eprintln!("RUN ...");
        rows.extend(exec_run::rows(python3()));
    }
    if want("workspace") || want("history") {
        rows.extend(workspace_and_history_rows(&want));
    }
    if want("scale") {
        eprintln!("scale (the pai binary end to end, beside git) ...");
        rows.extend(scale::rows(env_usize("PAI_BENCH_SCALE_REPS", 7)));
    }
    if want("worktree") {
        eprintln!("worktree sessions (pai run -w at 10,000 and 100,000 files) ...");
        rows.extend(worktree::rows());
    }
    println!(
        "\npai benchmark: {} CPUs, release build; medians; ratio = pai / reference\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{}", common::markdown(&rows));
    println!("(whole benchmark: {:.0} s)", began.elapsed().as_secs_f64());
}

/// The workspace and history sections, over one generated big repository.
fn workspace_and_history_rows(want: &dyn Fn(&str) -> bool) -> Vec<Row> {
    let mut rows = Vec::new();
    let tmp = tempfile::tempdir().unwrap();
    let files = env_usize("PAI_BENCH_FILES", 100_000);
    let big: PathBuf = std::env::var_os("PAI_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("big"));
    let t = Instant::now();
    workspace::generate_repo(&big, files);
    eprintln!(
        "{} files ready in {:.1} s",
        thousands(files as u64),
        t.elapsed().as_secs_f64()
    );
    if want("workspace") {
        eprintln!("workspace ...");
        rows.extend(workspace::listing_rows(&big, files));
        rows.extend(workspace::guard_rows());
        rows.extend(workspace::gate_rows());
    }
    if want("history") {
        eprintln!("history ...");
        let small = tmp.path().join("small");
        workspace::generate_repo(&small, 1_000);
        let runs = env_usize("PAI_BENCH_RUNS", 7);
        rows.extend(history::rows(&[(&small, 1_000), (&big, files)], runs));
    }
    rows
}

// ---------------------------------------------------------------------------------------------
// Child processes with their peak memory
// ---------------------------------------------------------------------------------------------

/// A finished child: wall time from spawn to reaping, peak RSS (of the child, or of a child
/// of its own when that was larger, as the kernel reports it), exit code, output.
struct Measured {
    pid: u32,
    wall: Duration,
    max_rss_kib: u64,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `cmd` to the end and reaps it with `wait4`, which returns its resource usage (std's
/// `wait` would not), hence no `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_measured(cmd: &mut Command) -> Measured {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let mut stdout = Vec::new();
    let _ = out.read_to_end(&mut stdout);
    let stderr = errors.join().unwrap();
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value for the kernel to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: waits for our own child, writing into locals that outlive the call. `child` is
    // not waited for again (dropping a std Child neither waits nor kills).
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        pid: child.id(),
        wall,
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        code,
        stdout,
        stderr,
    }
}

// ---------------------------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------------------------

/// The area of the start-up rows.
const STARTUP: &str = "start-up";

fn startup_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let (v, version_rss) = version_and_help_rows(&mut rows);
    rows.push(prompt_row(v));
    rows.push(
        Row::new("memory", "peak RSS, pai --version", mb(version_rss)).note(format!(
            "binary size {}",
            mb(std::fs::metadata(PAI).map_or(0, |m| m.len()) / 1024)
        )),
    );
    rows
}

/// `program args`, measured; it must exit 0.
fn tiny(program: &str, args: &[&str]) -> Measured {
    let m = run_measured(Command::new(program).args(args));
    assert_eq!(m.code, Some(0), "{program} {args:?}");
    m
}

/// `pai --version` and `pai --help` against `git --version`, and `pai --version` against the
/// Python interpreter when there is one. Returns the median time of `pai --version` and its
/// peak RSS, which the later rows compare with.
fn version_and_help_rows(rows: &mut Vec<Row>) -> (Duration, u64) {
    let mut version_rss = 0;
    let (v, g, r) = paired(
        STARTS,
        &mut || version_rss = tiny(PAI, &["--version"]).max_rss_kib,
        &mut || {
            tiny("git", &["--version"]);
        },
    );
    rows.push(
        Row::new(STARTUP, "pai --version", ms(v))
            .vs(format!("git --version {}", ms(g)), r)
            .target("< 5 ms", v < Duration::from_millis(5)),
    );
    let (h, g, r) = paired(
        STARTS,
        &mut || {
            tiny(PAI, &["--help"]);
        },
        &mut || {
            tiny("git", &["--version"]);
        },
    );
    rows.push(Row::new(STARTUP, "pai --help", ms(h)).vs(format!("git --version {}", ms(g)), r));
    if python3() {
        let (v2, p, r) = paired(
            STARTS,
            &mut || {
                tiny(PAI, &["--version"]);
            },
            &mut || {
                let m = run_measured(Command::new("python3").args(["-c", "pass"]));
                assert_eq!(m.code, Some(0));
            },
        );
        rows.push(
            Row::new(
                STARTUP,
                "pai --version, against the Python interpreter",
                ms(v2),
            )
            .vs(
                format!(
                    "python3 -c pass {} (what the Python original pays first)",
                    ms(p)
                ),
                r,
            ),
        );
    }
    (v, version_rss)
}

/// The interactive session: launch in a pseudo-terminal until the prompt shows, against `v`,
/// the time of `pai --version`.
fn prompt_row(v: Duration) -> Row {
    let p = Project::repo(Some("calculator"));
    let mock = MockLlm::start(Script::new().require_key(TEST_KEY));
    let kind = ProviderKind::Gemini;
    let launch = || {
        let mut cmd = Command::new(PAI);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &p.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("TERM", "xterm-256color")
            .env(kind.key_env_var(), TEST_KEY)
            .args(["--base-url", &mock.base_url(kind)])
            .current_dir(&p.root);
        let started = Instant::now();
        let mut pty = Pty::spawn(cmd, 100, 40).unwrap();
        pty.expect(PROMPT);
        let to_prompt = started.elapsed();
        pty.send_line("exit");
        assert!(
            pty.wait(Duration::from_secs(10))
                .is_some_and(|s| s.success()),
            "the session did not end cleanly:\n{}",
            pty.text()
        );
        to_prompt
    };
    launch();
    let prompt = median((0..PROMPTS).map(|_| launch()).collect());
    assert_eq!(
        mock.calls(),
        0,
        "reaching the prompt must not call the model"
    );
    Row::new(
        STARTUP,
        format!(
            "`pai` in a pty to the `{}` prompt (temp git repo)",
            PROMPT.trim()
        ),
        ms(prompt),
    )
    .vs(format!("pai --version {}", ms(v)), ratio(prompt, v))
    .target("< 50 ms", prompt < Duration::from_millis(50))
}

fn python3() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `PATH` with the directory of the real Python interpreter first. Version managers put a
/// shell-script shim named `python3` on `PATH` that costs far more than the interpreter; the
/// scenarios' RUN commands and the start-up reference should pay for Python, not for the shim.
fn real_python_path() -> std::ffi::OsString {
    {
        let current = std::env::var_os("PATH").unwrap_or_default();
        let real = Command::new("python3")
            .args([
                "-c",
                "import os, sys; print(os.path.dirname(os.path.realpath(sys.executable)))",
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|d| !d.is_empty());
        match real {
            Some(dir) => {
                let mut paths = vec![PathBuf::from(dir)];
                paths.extend(std::env::split_paths(&current));
                std::env::join_paths(paths).unwrap_or(current)
            }
            None => current,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Model cost, local time and memory per scenario
// ---------------------------------------------------------------------------------------------

/// A scenario of SPEC section 8 as tests/it/agent_scenarios.rs runs it.
struct Scenario {
    name: &'static str,
    script: &'static str,
    tree: Option<&'static str>,
    request: &'static str,
    flags: &'static [&'static str],
    /// Calls it should take (1, or 2 with a repair or a run-then-fix).
    calls: u64,
    /// Whether it runs python3 (skipped without it).
    python: bool,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "1 create",
        script: "create_calculator.json",
        tree: None,
        request: "make me a simple calculator in python",
        flags: &["--yes", "--allow-run"],
        calls: 1,
        python: true,
    },
    Scenario {
        name: "2 modify",
        script: "modify_power.json",
        tree: Some("calculator"),
        request: "add a power operation to calculator.py",
        flags: &["--yes"],
        calls: 1,
        python: false,
    },
    Scenario {
        name: "3 explore",
        script: "explore_tree.json",
        tree: Some("util"),
        request: "show the folder structure",
        flags: &["--yes"],
        calls: 1,
        python: false,
    },
    Scenario {
        name: "4 debug fix",
        script: "debug_fix.json",
        tree: Some("broken_calculator"),
        request: "calculator.py fails with SyntaxError: unexpected EOF, fix it",
        flags: &["--yes", "--allow-run"],
        calls: 1,
        python: true,
    },
    Scenario {
        name: "4 debug + 1 repair",
        script: "debug_repair.json",
        tree: Some("broken_calculator"),
        request: "calculator.py fails with SyntaxError: unexpected EOF, fix it",
        flags: &["--yes", "--allow-run"],
        calls: 2,
        python: true,
    },
    Scenario {
        name: "4 run and fix",
        script: "run_and_fix.json",
        tree: Some("main_nameerror"),
        request: "run main.py and fix it if it errors",
        flags: &["--yes", "--allow-run"],
        calls: 2,
        python: true,
    },
    Scenario {
        name: "5 read ../../etc/passwd",
        script: "security_passwd.json",
        tree: Some("util"),
        request: "read ../../etc/passwd",
        flags: &["--yes"],
        calls: 1,
        python: false,
    },
    Scenario {
        name: "5 delete ../outside.txt",
        script: "security_rm_outside.json",
        tree: Some("util"),
        request: "delete ../outside.txt",
        flags: &["--yes"],
        calls: 1,
        python: false,
    },
    Scenario {
        name: "5 show .git",
        script: "security_git.json",
        tree: Some("util"),
        request: "show the contents of .git",
        flags: &["--yes"],
        calls: 1,
        python: false,
    },
    Scenario {
        name: "chat",
        script: "chat.json",
        tree: Some("util"),
        request: "hi, what can you do?",
        flags: &[],
        calls: 1,
        python: false,
    },
];

/// One `pai run` of a scenario.
struct Turn {
    calls: u64,
    input: u64,
    output: u64,
    wall: Duration,
    /// Time the mock spent answering.
    mock: Duration,
    /// Time pai's RUN commands took: exactly, from the kernel's process events, or else
    /// estimated by replaying them with `sh -c` in the same directory.
    commands: Duration,
    max_rss_kib: u64,
    status: String,
}

impl Turn {
    /// pai's own time: the wall time less the waits on the model and on the commands it ran.
    fn local(&self) -> Duration {
        self.wall.saturating_sub(self.mock + self.commands)
    }
}

fn run_scenario(s: &Scenario, kind: ProviderKind, watch: Option<&ChildWatch>) -> Turn {
    let p = Project::repo(s.tree);
    let _outside = s.script.contains("rm_outside").then(|| {
        let f = p.root.parent().unwrap().join("outside.txt");
        std::fs::write(&f, "keep me").unwrap();
        f
    });
    let script = Script::from_file(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/scenarios")
            .join(s.script),
    )
    .require_key(TEST_KEY);
    let mock = MockLlm::start(script);
    let mut cmd = p.pai();
    cmd.env(kind.key_env_var(), TEST_KEY)
        .args([
            "run",
            s.request,
            "--json",
            "--provider",
            kind.name(),
            "--base-url",
            &mock.base_url(kind),
        ])
        .args(s.flags);
    if let Some(w) = watch {
        w.clear();
    }
    let m = run_measured(&mut cmd);
    let exact = watch.and_then(|w| w.children_time(m.pid));
    let events: Vec<Value> = String::from_utf8_lossy(&m.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let finished = events
        .iter()
        .rfind(|e| e["event"] == "finished")
        .unwrap_or_else(|| {
            panic!(
                "{} ({kind}): no finished event (exit {:?}):\n{}{}",
                s.name,
                m.code,
                String::from_utf8_lossy(&m.stdout),
                String::from_utf8_lossy(&m.stderr)
            )
        });
    let status = finished["status"].as_str().unwrap_or_default().to_string();
    let commands = exact.unwrap_or_else(|| {
        // No process events: replay the commands as a shell runs them (after a warm-up run,
        // the median of 2).
        let mut total = Duration::ZERO;
        for step in events
            .iter()
            .filter(|e| e["event"] == "step" && e["action"] == "RUN")
        {
            let command = step["target"].as_str().unwrap_or_default();
            total += median_of(2, || {
                let _ = Command::new("/bin/sh")
                    .args(["-c", command])
                    .current_dir(&p.root)
                    .stdin(Stdio::null())
                    .output();
            });
        }
        total
    });
    Turn {
        calls: mock.calls(),
        input: mock.input_tokens(),
        output: mock.output_tokens(),
        wall: m.wall,
        mock: mock.handling_time(),
        commands,
        max_rss_kib: m.max_rss_kib,
        status,
    }
}

fn model_rows(reps: usize) -> Vec<Row> {
    let python = python3();
    // PAI_BENCH_REPLAY=1 estimates the RUN time by replaying even where it can be measured.
    let watch = if std::env::var_os("PAI_BENCH_REPLAY").is_some() {
        None
    } else {
        ChildWatch::start()
    };
    let how = if watch.is_some() {
        "RUN (exact)"
    } else {
        "RUN (replayed)"
    };
    let mut rows = Vec::new();
    let mut peaks = Peaks::default();
    let only = std::env::var("PAI_BENCH_SCENARIO").unwrap_or_default();
    for s in SCENARIOS.iter().filter(|s| s.name.contains(&only)) {
        if s.python && !python {
            rows.push(Row::new("model cost", s.name, "skipped: python3 not found"));
            continue;
        }
        for kind in ProviderKind::ALL {
            let turns: Vec<Turn> = (0..reps)
                .map(|_| run_scenario(s, kind, watch.as_ref()))
                .collect();
            let first = &turns[0];
            for t in &turns[1..] {
                assert_eq!(
                    (t.calls, t.input, t.output, &t.status),
                    (first.calls, first.input, first.output, &first.status),
                    "{} ({kind}): calls and tokens must not vary between runs",
                    s.name
                );
            }
            let local = median(turns.iter().map(Turn::local).collect());
            peaks.record(s, kind, &turns, local);
            rows.push(scenario_row(s, kind, &turns, local, how));
        }
    }
    let mut memory = peaks.memory_rows();
    if !peaks.all_local.is_empty() {
        let worst = peaks.all_local.iter().max().copied().unwrap_or_default();
        rows.push(
            Row::new(
                "model cost",
                "local time per turn, worst scenario (median of its runs)",
                ms(worst),
            )
            .note(format!(
                "median over all rows {}",
                ms(median(peaks.all_local))
            ))
            .target("< 20 ms", worst < Duration::from_millis(20)),
        );
    }
    memory.extend(rows);
    memory
}

/// The figures the summary rows take from every scenario's runs. Peak RSS as the kernel
/// reports it for a reaped child is the larger of its own and its children's: scenarios that
/// run python3 may report python's. Kept apart.
#[derive(Default)]
struct Peaks {
    /// The largest peak RSS of a scenario without python3, and where.
    largest: (u64, String),
    /// The largest peak RSS of a scenario running python3, and where.
    largest_with_run: (u64, String),
    /// Every run's peak RSS, of the scenarios without python3.
    all_rss: Vec<u64>,
    /// Every row's median local time.
    all_local: Vec<Duration>,
}

impl Peaks {
    /// Takes in the runs of scenario `s` over `kind`, whose median local time is `local`.
    fn record(&mut self, s: &Scenario, kind: ProviderKind, turns: &[Turn], local: Duration) {
        let rss = turns.iter().map(|t| t.max_rss_kib).max().unwrap_or(0);
        self.all_local.push(local);
        if s.python {
            if rss > self.largest_with_run.0 {
                self.largest_with_run = (rss, format!("{} · {kind}", s.name));
            }
        } else {
            self.all_rss.extend(turns.iter().map(|t| t.max_rss_kib));
            if rss > self.largest.0 {
                self.largest = (rss, format!("{} · {kind}", s.name));
            }
        }
    }

    /// The memory rows: the largest peak RSS without python3 (with the median), and with it.
    fn memory_rows(&mut self) -> Vec<Row> {
        let mut memory = Vec::new();
        let all_rss = &mut self.all_rss;
        if !all_rss.is_empty() {
            all_rss.sort_unstable();
            memory.push(
                Row::new(
                    "memory",
                    format!(
                        "peak RSS of a whole `pai run`, largest ({})",
                        self.largest.1
                    ),
                    mb(self.largest.0),
                )
                .note(format!(
                    "median of {} runs without RUN {}",
                    all_rss.len(),
                    mb(all_rss[all_rss.len() / 2])
                ))
                .target("< 30 MB", self.largest.0 < 30 * 1024),
            );
        }
        if self.largest_with_run.0 > 0 {
            memory.push(
                Row::new(
                    "memory",
                    format!(
                        "peak RSS, `pai run` with python3 RUN commands, largest ({})",
                        self.largest_with_run.1
                    ),
                    mb(self.largest_with_run.0),
                )
                .note("the larger of pai and the python3 it ran"),
            );
        }
        memory
    }
}

/// The row of scenario `s` over `kind`: calls and tokens (the same in every run) and the median
/// local time, with where the time went, or for scenario 1 the thesis' own figures; against the
/// scenario's target.
fn scenario_row(
    s: &Scenario,
    kind: ProviderKind,
    turns: &[Turn],
    local: Duration,
    how: &str,
) -> Row {
    let first = &turns[0];
    let wall = median(turns.iter().map(|t| t.wall).collect());
    let mock = median(turns.iter().map(|t| t.mock).collect());
    let commands = median(turns.iter().map(|t| t.commands).collect());
    let calls_word = if first.calls == 1 { "call" } else { "calls" };
    let mut row = Row::new(
        "model cost",
        format!("{} · {kind} ({})", s.name, first.status),
        format!(
            "{} {calls_word} · {} in · {} out · {} local",
            first.calls,
            thousands(first.input),
            thousands(first.output),
            ms(local)
        ),
    );
    row = if s.name == "1 create" {
        // The thesis' own figures for this request (its screenshot), not measured here.
        let mut row = row.note("thesis (its screenshot): 8 calls · ~8,200 in · ~1,700 out");
        row.ratio = format!(
            "{:.2}x calls · {:.2}x in · {:.2}x out",
            first.calls as f64 / 8.0,
            first.input as f64 / 8_200.0,
            first.output as f64 / 1_700.0
        );
        row
    } else {
        row.note(format!(
            "wall {} − mock {} − {how} {}",
            ms(wall),
            ms(mock),
            ms(commands)
        ))
    };
    let target = format!(
        "{} {calls_word}, < 20 ms local",
        s.calls,
        calls_word = if s.calls == 1 { "call" } else { "calls" }
    );
    row.target(
        target,
        first.calls == s.calls && local < Duration::from_millis(20),
    )
}
