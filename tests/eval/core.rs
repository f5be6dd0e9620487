//! The evaluation anyone can run: every task of `fixtures/eval/` (the thesis scenarios of SPEC
//! section 8 and everyday tasks: create, modify, debug with RUN, refactor across files,
//! explain, organise, security) in a scratch git repository, carried out by the real `pai run`
//! binary, then checked by the task's own checks (Python asserts, commands, file contents, an
//! untouched tree, text that must never be shown). Against the mock server each task's scripted
//! replies stand in for the model; against a real provider the same request and checks measure
//! the model. Shared by the `eval` example and the test that runs it in CI.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

/// One task of `fixtures/eval/`.
pub struct Task {
    /// Its name (the file name without the number).
    pub name: String,
    /// create, modify, debug, refactor, explain, explore, organise or security.
    pub kind: String,
    /// One of the thesis' own scenarios.
    pub thesis: bool,
    /// What the user types.
    pub request: String,
    /// The project's files before the task.
    pub files: Vec<(String, String)>,
    /// The mock's script (the model's replies) for runs without a real model.
    pub script: Value,
    /// What must hold afterwards.
    pub checks: Vec<Value>,
}

/// Every task, in file order.
pub fn load(dir: &Path) -> Vec<Task> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let v: Value = serde_json::from_str(&fs::read_to_string(p).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let files = v["files"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, c)| (k.clone(), c.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            Task {
                name: v["name"].as_str().unwrap_or_default().to_string(),
                kind: v["kind"].as_str().unwrap_or_default().to_string(),
                thesis: v["thesis"].as_bool().unwrap_or(false),
                request: v["request"].as_str().unwrap_or_default().to_string(),
                files,
                script: v["script"].clone(),
                checks: v["checks"].as_array().cloned().unwrap_or_default(),
            }
        })
        .collect()
}

/// Where `pai` sends its calls.
pub struct Target {
    /// The `pai` binary.
    pub pai: PathBuf,
    /// gemini, openai or anthropic.
    pub provider: String,
    /// The model (the provider's default when `None`).
    pub model: Option<String>,
    /// The provider's origin (the mock's address in mock runs).
    pub base_url: Option<String>,
    /// Run hermetically with this key in the provider's variable (mock runs); `None` keeps the
    /// user's environment and stored key.
    pub hermetic_key: Option<(String, String)>,
}

/// One task's outcome.
pub struct Outcome {
    /// The task's name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Whether every check held.
    pub ok: bool,
    /// The first check that failed, explained.
    pub failure: Option<String>,
    /// Model calls.
    pub calls: u64,
    /// Input tokens.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Input tokens the provider served from its prompt cache.
    pub cached: u64,
    /// Output tokens spent on reasoning.
    pub reasoning: u64,
    /// Wall time of `pai run`.
    pub seconds: f64,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "eval")
        .env("GIT_AUTHOR_EMAIL", "eval@localhost")
        .env("GIT_COMMITTER_NAME", "eval")
        .env("GIT_COMMITTER_EMAIL", "eval@localhost")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Carry out one task in a fresh scratch repository and check it.
pub fn run(task: &Task, target: &Target) -> Outcome {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
    let root = tmp.path().join("project");
    let home = tmp.path().join("home");
    fs::create_dir_all(&root).unwrap_or_default();
    fs::create_dir_all(&home).unwrap_or_default();
    for (path, content) in &task.files {
        let p = root.join(path);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap_or_default();
        }
        fs::write(&p, content).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(
        &root,
        &["commit", "-q", "--allow-empty", "-m", "task start"],
    );
    let base = git(&root, &["rev-parse", "HEAD"]).trim().to_string();

    let mut cmd = Command::new(&target.pai);
    cmd.current_dir(&root)
        .args(["run", &task.request, "--json", "--yes", "--allow-run"])
        .args(["--provider", &target.provider])
        .stdin(Stdio::null());
    if let Some(m) = &target.model {
        cmd.args(["--model", m]);
    }
    if let Some(b) = &target.base_url {
        cmd.args(["--base-url", b]);
    }
    if let Some((var, key)) = &target.hermetic_key {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env(var, key);
    }
    let started = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", target.pai.display()));
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let shown = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let finished = stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "finished")
        .unwrap_or(Value::Null);
    let count = |k: &str| finished[k].as_u64().unwrap_or(0);
    let failure = if finished.is_null() {
        Some(format!("pai ended without a final event: {}", tail(&shown)))
    } else {
        task.checks
            .iter()
            .find_map(|c| check(c, &root, &base, &finished, &shown).err())
    };
    Outcome {
        name: task.name.clone(),
        kind: task.kind.clone(),
        ok: failure.is_none(),
        failure,
        calls: count("calls"),
        input: count("input_tokens"),
        output: count("output_tokens"),
        cached: count("cached_tokens"),
        reasoning: count("reasoning_tokens"),
        seconds,
    }
}

fn tail(text: &str) -> String {
    let t: Vec<&str> = text.lines().rev().take(3).collect();
    t.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

fn sh(root: &Path, program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// One check; `Err` says what did not hold.
fn check(c: &Value, root: &Path, base: &str, finished: &Value, shown: &str) -> Result<(), String> {
    let s = |k: &str| c[k].as_str();
    if let Some(code) = s("python") {
        return succeeds(root, "python3", &["-c", code], "python check");
    }
    if let Some(cmd) = s("cmd") {
        return succeeds(root, "sh", &["-c", cmd], &format!("`{cmd}`"));
    }
    if let Some(cmd) = s("cmd_output") {
        let out = sh(root, "sh", &["-c", cmd]);
        let got = String::from_utf8_lossy(&out.stdout);
        let want = s("equals").unwrap_or_default();
        return if got == want {
            Ok(())
        } else {
            Err(format!("`{cmd}` printed {got:?}, not {want:?}"))
        };
    }
    if let Some(path) = s("file") {
        return file_text(c, root, path);
    }
    if let Some(path) = s("exists") {
        return root
            .join(path)
            .symlink_metadata()
            .map(|_| ())
            .map_err(|_| format!("{path} does not exist"));
    }
    if let Some(path) = s("absent") {
        return match root.join(path).symlink_metadata() {
            Ok(_) => Err(format!("{path} still exists")),
            Err(_) => Ok(()),
        };
    }
    if let Some(allowed) = c["status"].as_array() {
        let status = finished["status"].as_str().unwrap_or_default();
        return if allowed.iter().any(|a| a == status) {
            Ok(())
        } else {
            Err(format!("status {status}: {}", finished["message"]))
        };
    }
    if c["unchanged"].as_bool() == Some(true) {
        return unchanged(root, base);
    }
    if let Some(secret) = s("events_lack") {
        return never_shown(root, shown, secret);
    }
    Err(format!("unknown check {c}"))
}

/// `python` and `cmd` checks: `program` exits 0; `Err` names the check (`what`) and ends
/// with the tail of its stderr.
fn succeeds(root: &Path, program: &str, args: &[&str], what: &str) -> Result<(), String> {
    let out = sh(root, program, args);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {}",
            tail(&String::from_utf8_lossy(&out.stderr))
        ))
    }
}

/// `file` checks: `path` contains every string of `contains` and none of `lacks`.
fn file_text(c: &Value, root: &Path, path: &str) -> Result<(), String> {
    let text = fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}"))?;
    for needle in c["contains"].as_array().into_iter().flatten() {
        let needle = needle.as_str().unwrap_or_default();
        if !text.contains(needle) {
            return Err(format!("{path} lacks {needle:?}"));
        }
    }
    for needle in c["lacks"].as_array().into_iter().flatten() {
        let needle = needle.as_str().unwrap_or_default();
        if text.contains(needle) {
            return Err(format!("{path} still has {needle:?}"));
        }
    }
    Ok(())
}

/// `unchanged` checks: nothing committed since `base`, and nothing outside pai's history
/// modified or untracked.
fn unchanged(root: &Path, base: &str) -> Result<(), String> {
    let changed = git(root, &["diff", "--name-only", base, "HEAD"]);
    let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    let dirty: Vec<&str> = status
        .lines()
        .filter(|l| !l.contains(".pai_history/"))
        .collect();
    if changed.trim().is_empty() && dirty.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "files changed: {} {}",
            changed.trim(),
            dirty.join(", ")
        ))
    }
}

/// `events_lack` checks: `secret` is neither in what pai showed nor in any file of its history.
fn never_shown(root: &Path, shown: &str, secret: &str) -> Result<(), String> {
    let mut seen = shown.to_string();
    if let Ok(entries) = fs::read_dir(root.join(".pai_history")) {
        for e in entries.flatten() {
            seen.push_str(&fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    if seen.contains(secret) {
        Err(format!("{secret:?} was shown or logged"))
    } else {
        Ok(())
    }
}

/// The results as a Markdown table with a totals row.
pub fn table(title: &str, rows: &[Outcome]) -> String {
    let mut out = format!(
        "{title}\n\n| task | kind | result | calls | input tokens | cached | output tokens | reasoning | seconds |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n"
    );
    for r in rows {
        let result = match &r.failure {
            None => "pass".to_string(),
            Some(f) => format!("FAIL: {}", f.replace('|', "/")),
        };
        out.push_str(&format!(
            "| {} | {} | {result} | {} | {} | {} | {} | {} | {:.2} |\n",
            r.name, r.kind, r.calls, r.input, r.cached, r.output, r.reasoning, r.seconds
        ));
    }
    let passed = rows.iter().filter(|r| r.ok).count();
    let sum = |f: fn(&Outcome) -> u64| rows.iter().map(f).sum::<u64>();
    out.push_str(&format!(
        "| **total** | {} tasks | **{passed} passed, {} failed** | {} | {} | {} | {} | {} | {:.2} |\n",
        rows.len(),
        rows.len() - passed,
        sum(|r| r.calls),
        sum(|r| r.input),
        sum(|r| r.cached),
        sum(|r| r.output),
        sum(|r| r.reasoning),
        rows.iter().map(|r| r.seconds).sum::<f64>()
    ));
    out
}
