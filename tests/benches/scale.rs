//! Every command end to end at scale: the real `pai` binary on synthetic committed
//! repositories of 1,000, 10,000 and 100,000 files, each operation beside its git counterpart
//! in the same run, interleaved rep by rep so both see the same machine load; medians, and the
//! peak RSS of each process as the kernel reports it (`wait4`).
//!
//! The repositories are generated once and kept (`PAI_BENCH_SCALE_DIR`, default
//! `/tmp/pai-bench-scale`), with the plans `pai log` lists (50 in each, 5,000 in a separate
//! 1,000-file repository) committed in-process through pai's history library and signed with
//! the secret the measured `pai` then reads. `PAI_BENCH_BIN` measures another `pai` binary in
//! this build's place (a before-and-after in one run of the same bench). Every operation
//! leaves the repository as it found it: a WRITE plan is undone by the `pai undo` row, git's
//! commit is taken back by `git reset --soft` (not timed).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pai::history::{PlanRecord, Session, StartOptions, WorkTree};
use pai::llm::ProviderKind;
use pai::workspace::{Workspace, WorkspaceConfig};
use serde_json::{Value, json};

use crate::common::{Row, git, git_command, mb, median, ms, thousands};
use crate::scale_shapes::{generate_prose, real_checkout, tracked_files};
use crate::support::mock_llm::{MockLlm, Reply, Script};
use crate::support::project::TEST_KEY;
use crate::{Measured, PAI, run_measured, workspace};

const AREA: &str = "scale";
/// The file a WRITE plan creates (and undo removes).
const NEW_FILE: &str = "scale_new.txt";

/// A plan of `steps`, as the model sends it.
fn plan(steps: Value) -> Value {
    json!({
        "intent": "task",
        "reply": "On it.",
        "analysis": {
            "user_intent": "bench",
            "files_to_read": [],
            "files_to_create": [],
            "files_to_modify": [],
            "risks": "none",
            "success_criteria": [],
            "complexity": "simple"
        },
        "steps": steps,
        "observe": false,
        "next_steps": []
    })
}

fn script() -> Script {
    Script::new()
        .require_key(TEST_KEY)
        .rule(
            "scale-write",
            Reply::plan(plan(json!([
                {"action": "WRITE", "path": NEW_FILE, "content": "made by the bench\n", "purpose": "a new file"},
                {"action": "FINISH", "message": "done"}
            ]))),
        )
        .rule(
            "scale-run",
            Reply::plan(plan(json!([
                {"action": "RUN", "command": "true", "purpose": "a command that changes nothing"},
                {"action": "FINISH", "message": "done"}
            ]))),
        )
}

/// Where the generated repositories are kept between runs.
fn cache_dir() -> PathBuf {
    std::env::var_os("PAI_BENCH_SCALE_DIR")
        .map_or_else(|| PathBuf::from("/tmp/pai-bench-scale"), PathBuf::from)
}

/// The sizes to measure (`PAI_BENCH_SCALE_SIZES=1000,10000`).
fn sizes() -> Vec<usize> {
    std::env::var("PAI_BENCH_SCALE_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000])
}

/// The `HOME` every `pai` the bench runs gets (`PAI_BENCH_SCALE_HOME`: another, so that a
/// build measured with `PAI_BENCH_BIN` keeps caches of its own).
fn bench_home() -> PathBuf {
    std::env::var_os("PAI_BENCH_SCALE_HOME").map_or_else(|| cache_dir().join("home"), PathBuf::from)
}

/// Give the `pai` processes the bench runs (`HOME` = [`bench_home`]) the secret the plans
/// were signed with in-process (the bench's own configuration directory): pai lists and
/// undoes only plans whose `Pai-Auth` mark verifies with the user's secret, so with another
/// secret `pai log` would list nothing and time nothing.
fn share_secret() {
    let Some(ours) = dirs::config_dir().map(|d| d.join("pai-code").join("secret")) else {
        return;
    };
    let Ok(bytes) = std::fs::read(&ours) else {
        return;
    };
    let theirs = bench_home().join(".config/pai-code");
    std::fs::create_dir_all(&theirs).unwrap();
    let path = theirs.join("secret");
    if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
        std::fs::write(&path, &bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// Commit `plans` plans (each creating one file under `log/`) in one session, through pai's
/// history library, unless a marker says they are there already. The marker names signed
/// plans: plans committed before pai signed its commits are the user's to pai, and a
/// repository holding only those is given signed ones.
fn ensure_plans(root: &Path, plans: usize) {
    let marker = root.join(format!(".git/pai-bench-signed-plans-{plans}"));
    if marker.exists() {
        share_secret();
        return;
    }
    let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
    ws.stale_temps_removed();
    let mut session = Session::start(root, StartOptions::now()).unwrap();
    for i in 0..plans {
        // A hundred files a directory, as a project's files spread: a plan's diff then
        // compares two small directories, not one that grows with the history.
        let path = format!("log/d{:03}/plan{i:05}.txt", i / 100);
        let touched = vec![path.clone()];
        let mut plan = session.begin_plan();
        plan.prepare(&mut session, &ws, &touched).unwrap();
        ws.write(&path, format!("plan {i}\n").as_bytes(), false)
            .unwrap();
        let record = PlanRecord {
            request: format!("bench plan {i}"),
            steps: vec![format!("WRITE {path}")],
            touched,
            model: "bench".into(),
            calls: 1,
            ..PlanRecord::default()
        };
        plan.commit(&mut session, &ws, &record).unwrap();
    }
    drop(session);
    share_secret();
    std::fs::write(marker, "").unwrap();
}

/// The kinds of repository measured.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One line of Python a file (`workspace::generate_repo`).
    Generated,
    /// 1–4 KB of words a file, five extensions (`scale_shapes::generate_prose`).
    Prose,
    /// The checkout `PAI_BENCH_SCALE_REAL` names.
    Real,
}

impl Shape {
    /// What a row says of the repository (nothing for the generated one, whose rows keep
    /// their names).
    fn label(self) -> String {
        match self {
            Shape::Generated => String::new(),
            Shape::Prose => ", prose".to_string(),
            Shape::Real => format!(
                ", {}",
                real_checkout()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The shapes to measure (`PAI_BENCH_SCALE_SHAPES=generated,prose,real`; `real` only when
/// `PAI_BENCH_SCALE_REAL` names a checkout).
fn shapes() -> Vec<Shape> {
    let wanted = std::env::var("PAI_BENCH_SCALE_SHAPES")
        .unwrap_or_else(|_| "generated,prose,real".to_string());
    let mut out = Vec::new();
    for name in wanted.split(',').map(str::trim) {
        match name {
            "generated" => out.push(Shape::Generated),
            "prose" => out.push(Shape::Prose),
            "real" if real_checkout().is_some() => out.push(Shape::Real),
            "real" => eprintln!("  no real repository: PAI_BENCH_SCALE_REAL names no checkout"),
            other => eprintln!("  unknown shape {other:?}"),
        }
    }
    out
}

/// A repository of `shape` with `files` files (the real one: all of its own) and 50 plans,
/// ready to measure.
fn prepared_repo(shape: Shape, files: usize) -> PathBuf {
    let root = match shape {
        Shape::Generated => {
            let root = cache_dir().join(format!("repo-{files}"));
            workspace::generate_repo(&root, files);
            root
        }
        Shape::Prose => {
            let root = cache_dir().join(format!("prose-{files}"));
            generate_prose(&root, files);
            root
        }
        Shape::Real => real_checkout().unwrap(),
    };
    ensure_plans(&root, 50);
    // A run cut short leaves the WRITE plan's file: take it back the way the bench does.
    if root.join(NEW_FILE).exists() {
        pai_cmd(&root, &MockLlm::start(script()), &["undo", "--force"]);
    }
    forget_undone_sessions(&root);
    root
}

/// The `pai` binary measured: this build's, or `PAI_BENCH_BIN` (another build, for a
/// before-and-after comparison in the same bench).
fn pai_binary() -> String {
    std::env::var("PAI_BENCH_BIN").unwrap_or_else(|_| PAI.to_string())
}

/// `pai` with `args` in `root`, hermetic, against `mock`; measured; it must succeed.
fn pai_cmd(root: &Path, mock: &MockLlm, args: &[&str]) -> Measured {
    pai_cmd_as(root, mock, args, &pai_binary(), None)
}

/// [`pai_cmd`] with another binary, and another cache directory (`cache`: the user's caches
/// as a first run in a project finds them, empty).
fn pai_cmd_as(
    root: &Path,
    mock: &MockLlm,
    args: &[&str],
    binary: &str,
    cache: Option<&Path>,
) -> Measured {
    let home = bench_home();
    std::fs::create_dir_all(&home).unwrap();
    let kind = ProviderKind::Gemini;
    let rss = RssFile::new();
    let mut cmd = rss.command(binary);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1")
        .env(kind.key_env_var(), TEST_KEY)
        .env("PAI_BASE_URL", mock.base_url(kind))
        .args(args)
        .current_dir(root);
    if let Some(cache) = cache {
        cmd.env("XDG_CACHE_HOME", cache);
    }
    let m = rss.read(run_measured(&mut cmd));
    assert_eq!(
        m.code,
        Some(0),
        "pai {args:?} in {}:\n{}{}",
        root.display(),
        String::from_utf8_lossy(&m.stdout),
        String::from_utf8_lossy(&m.stderr)
    );
    m
}

/// `git` with `args` in `root`, measured; it must succeed.
fn git_cmd(root: &Path, args: &[&str]) -> Measured {
    let rss = RssFile::new();
    let mut cmd = rss.command("git");
    // The same hermetic setting as `common::git_command`.
    let reference = git_command(root, args);
    for (k, v) in reference.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.args(args).current_dir(root);
    let m = rss.read(run_measured(&mut cmd));
    assert_eq!(m.code, Some(0), "git {args:?}");
    m
}

/// GNU time, when installed: it reports its child's peak RSS from `wait4`.
const TIME: &str = "/usr/bin/time";

/// Where `/usr/bin/time` writes the peak RSS of the command it runs.
///
/// Why not the benchmark's own `wait4`: a child is spawned from the benchmark's address space,
/// and the kernel counts that address space's resident pages, at the moment of `exec`, into
/// the child's peak RSS, so every figure would be at least the benchmark's own RSS (tens of
/// MB once it has committed thousands of plans in-process). Spawned from GNU time, whose RSS
/// is about 2 MB, the figure is the command's own. Both sides of each row pay the same
/// fraction of a millisecond for the extra `exec`.
struct RssFile(Option<tempfile::NamedTempFile>);

impl RssFile {
    fn new() -> RssFile {
        RssFile(
            Path::new(TIME)
                .exists()
                .then(|| tempfile::NamedTempFile::new().unwrap()),
        )
    }

    /// `program`, run through GNU time when there is one.
    fn command(&self, program: &str) -> Command {
        match &self.0 {
            Some(f) => {
                let mut cmd = Command::new(TIME);
                cmd.args(["-f", "%M", "-o"]).arg(f.path()).arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    /// `m` with the peak RSS GNU time reported.
    fn read(&self, mut m: Measured) -> Measured {
        if let Some(f) = &self.0
            && let Ok(text) = std::fs::read_to_string(f.path())
            && let Some(kib) = text.lines().rev().find_map(|l| l.trim().parse().ok())
        {
            m.max_rss_kib = kib;
        }
        m
    }
}

/// The events of a `pai run --json`, and its final status.
fn finished_status(m: &Measured) -> String {
    String::from_utf8_lossy(&m.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|e| e["event"] == "finished")
        .and_then(|e| e["status"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One operation's runs: wall times and peak RSS, pai's and git's.
#[derive(Default)]
struct Samples {
    pai: Vec<Duration>,
    pai_rss: u64,
    git: Vec<Duration>,
    git_rss: u64,
}

impl Samples {
    fn pai(&mut self, m: &Measured) {
        self.pai.push(m.wall);
        self.pai_rss = self.pai_rss.max(m.max_rss_kib);
    }

    /// git's side: one or more processes whose times add up; the largest peak.
    fn git(&mut self, ms: &[Measured]) {
        self.git.push(ms.iter().map(|m| m.wall).sum());
        self.git_rss = self
            .git_rss
            .max(ms.iter().map(|m| m.max_rss_kib).max().unwrap_or(0));
    }
}

/// The operations, in table order.
const OPS: [&str; 6] = [
    "`pai run --plan`",
    "WRITE plan (plan + commit)",
    "`pai undo`",
    "plan with one RUN (`true`)",
    "`pai log`, 50 plans",
    "`pai log`, 5,000 plans",
];

/// What each operation is compared with, and the target at 100,000 files.
const REFS: [(&str, Option<f64>); 6] = [
    ("`git ls-files`", Some(1.5)),
    ("`git add` + `git commit`", Some(1.0)),
    ("`git add` + `git commit`", Some(1.0)),
    ("2 × `git status --porcelain`", Some(1.2)),
    ("`git log --oneline`", Some(1.2)),
    ("`git log --oneline`", Some(1.2)),
];

/// One rep of the operations on the repository at `root`, each beside its git counterpart.
fn one_rep(root: &Path, mock: &MockLlm, s: &mut [Samples]) {
    let m = pai_cmd(root, mock, &["run", "scale-write", "--plan", "--json"]);
    s[0].pai(&m);
    s[0].git(&[git_cmd(root, &["ls-files"])]);

    let m = pai_cmd(root, mock, &["run", "scale-write", "--json", "--yes"]);
    assert_eq!(finished_status(&m), "success", "the WRITE plan");
    s[1].pai(&m);
    s[2].pai(&pai_cmd(root, mock, &["undo"]));
    std::fs::write(root.join(NEW_FILE), "made by git\n").unwrap();
    let g = [
        git_cmd(root, &["add", NEW_FILE]),
        git_cmd(root, &["commit", "-q", "--no-verify", "-m", "bench"]),
    ];
    s[1].git(&g);
    s[2].git(&g);
    git(root, &["reset", "-q", "--soft", "HEAD~1"]);
    git(root, &["rm", "-q", "--cached", NEW_FILE]);
    std::fs::remove_file(root.join(NEW_FILE)).unwrap();
    forget_undone_sessions(root);

    let m = pai_cmd(
        root,
        mock,
        &["run", "scale-run", "--json", "--yes", "--allow-run"],
    );
    assert_eq!(finished_status(&m), "success", "the RUN plan");
    s[3].pai(&m);
    s[3].git(&[
        git_cmd(root, &["status", "--porcelain"]),
        git_cmd(root, &["status", "--porcelain"]),
    ]);

    s[4].pai(&listed_log(root, mock, 50));
    s[4].git(&[git_cmd(root, &["log", "--oneline"])]);
}

/// `pai log`, measured, after checking that it listed the bench's `plans` plans (a log that
/// lists nothing, because the plans are not pai's to it, would time nothing).
fn listed_log(root: &Path, mock: &MockLlm, plans: usize) -> Measured {
    let m = pai_cmd(root, mock, &["log"]);
    let last = format!("bench plan {}", plans - 1);
    assert!(
        String::from_utf8_lossy(&m.stdout).contains(&last),
        "`pai log` in {} does not list the bench's plans:\n{}",
        root.display(),
        String::from_utf8_lossy(&m.stdout)
    );
    m
}

/// Remove what the WRITE plan and its undo leave in refs (the undone plan and its session's
/// record), so that every rep and every run of the bench lists the same 50 plans: kept, they
/// pile up (73 sessions after a few runs) and `pai log`, which lists undone plans too, times
/// more each run while `git log --oneline` does not. Sessions with a branch of their own (the
/// bench's 50 plans) stay.
fn forget_undone_sessions(root: &Path) {
    let out = git(root, &["for-each-ref", "--format=%(refname)", "refs/pai/"]);
    let branches = git(
        root,
        &["for-each-ref", "--format=%(refname)", "refs/heads/pai/"],
    );
    let branches = String::from_utf8_lossy(&branches.stdout).into_owned();
    for name in String::from_utf8_lossy(&out.stdout).lines() {
        let keep = name.strip_prefix("refs/pai/sessions/").is_some_and(|id| {
            branches
                .lines()
                .any(|b| b == format!("refs/heads/pai/{id}"))
        });
        if (name.starts_with("refs/pai/undone/") || name.starts_with("refs/pai/sessions/")) && !keep
        {
            git(root, &["update-ref", "-d", name]);
        }
    }
}

/// Run `pai map` for the bench's request until the map's cache knows every file: a cold map
/// parses what its time budget allows and the next goes on, so at 100,000 files of text the
/// first few runs are not yet warm.
fn warm_map(root: &Path, mock: &MockLlm) {
    for _ in 0..60 {
        let m = pai_cmd(root, mock, &["map", "--json", "scale-write"]);
        let report: Value = serde_json::from_slice(&m.stdout).unwrap_or_default();
        if report["unparsed"] == 0 {
            return;
        }
    }
    eprintln!("  the map's cache of {} is still not warm", root.display());
}

/// The first `pai run --plan` in a project (the user's caches empty: every folder read, every
/// file parsed) and the first after a new binary (the kept listing is stamped with the
/// binary, so the walk reads every folder again; the map's cache stays), each beside one
/// `git ls-files`, measured once: they happen once, and are not the warm figures the targets
/// are about. The caches are warm again after them.
fn first_runs(root: &Path, mock: &MockLlm, files: usize, shape: Shape) -> Vec<Row> {
    let args = ["run", "scale-write", "--plan", "--json"];
    let what = |first: &str| {
        format!(
            "`pai run --plan`, first run {first} · {} files{}",
            thousands(files as u64),
            shape.label()
        )
    };
    let mut rows = Vec::new();
    let cold = tempfile::tempdir().unwrap();
    let m = pai_cmd_as(root, mock, &args, &pai_binary(), Some(cold.path()));
    let g = git_cmd(root, &["ls-files"]);
    rows.extend(first_rows(what("in the project"), &m, &g));
    // A copy is a new binary to pai: another inode and time.
    let copy = tempfile::Builder::new()
        .prefix("pai-new-")
        .tempdir()
        .unwrap();
    let binary = copy.path().join("pai");
    std::fs::copy(pai_binary(), &binary).unwrap();
    // Warm with this build first, so that only the binary is new.
    pai_cmd(root, mock, &args);
    let m = pai_cmd_as(root, mock, &args, &binary.to_string_lossy(), None);
    let g = git_cmd(root, &["ls-files"]);
    rows.extend(first_rows(what("after a new binary"), &m, &g));
    // The kept listing is this build's again for the reps.
    pai_cmd(root, mock, &args);
    rows
}

/// A once-measured run's time and peak RSS beside git's.
fn first_rows(what: String, m: &Measured, g: &Measured) -> Vec<Row> {
    vec![
        Row::new(AREA, what.clone(), ms(m.wall)).vs(
            format!("`git ls-files` {}", ms(g.wall)),
            crate::common::ratio(m.wall, g.wall),
        ),
        Row::new(AREA, format!("peak RSS, {what}"), mb(m.max_rss_kib)).vs(
            format!("`git ls-files` {}", mb(g.max_rss_kib)),
            m.max_rss_kib as f64 / g.max_rss_kib.max(1) as f64,
        ),
    ]
}

/// `pai log` beside `git log --oneline` in the 5,000-plan repository.
fn log_rep(root: &Path, mock: &MockLlm, s: &mut Samples) {
    s.pai(&listed_log(root, mock, 5_000));
    s.git(&[git_cmd(root, &["log", "--oneline"])]);
}

/// The rows of one operation at one size.
fn row(op: usize, files: usize, s: &Samples) -> Vec<Row> {
    shaped_row(op, files, Shape::Generated, s)
}

/// The rows of one operation on one repository.
fn shaped_row(op: usize, files: usize, shape: Shape, s: &Samples) -> Vec<Row> {
    let label = shape.label();
    let (pai, git) = (median(s.pai.clone()), median(s.git.clone()));
    let r = crate::common::ratio(pai, git);
    let (reference, limit) = REFS[op];
    let mut time = Row::new(
        AREA,
        format!("{} · {} files{label}", OPS[op], thousands(files as u64)),
        ms(pai),
    )
    .vs(format!("{reference} {}", ms(git)), r);
    let mut memory = Row::new(
        AREA,
        format!(
            "peak RSS, {} · {} files{label}",
            OPS[op],
            thousands(files as u64)
        ),
        mb(s.pai_rss),
    )
    .vs(
        format!("{reference} {}", mb(s.git_rss)),
        s.pai_rss as f64 / s.git_rss.max(1) as f64,
    );
    if files >= 100_000 || op == 5 || shape == Shape::Real {
        if let Some(limit) = limit {
            let what = if limit >= 1.0 && (op == 1 || op == 2) {
                "< 1x".to_string()
            } else {
                format!("≤ {limit}x")
            };
            time = time.target(what, r <= limit);
        }
        memory = memory.target("< 30 MB", s.pai_rss < 30 * 1024);
    }
    vec![time, memory]
}

/// The scale rows: every shape at every size (the real repository at its own), `reps`
/// interleaved reps each after the first runs and one warm-up.
pub fn rows(reps: usize) -> Vec<Row> {
    let mock = MockLlm::start(script());
    let mut rows = Vec::new();
    for shape in shapes() {
        let sizes = match shape {
            Shape::Real => real_checkout()
                .map(|d| vec![tracked_files(&d)])
                .unwrap_or_default(),
            _ => sizes(),
        };
        for files in sizes {
            eprintln!("  {} files{} ...", thousands(files as u64), shape.label());
            let root = prepared_repo(shape, files);
            warm_map(&root, &mock);
            rows.extend(first_runs(&root, &mock, files, shape));
            let mut s: Vec<Samples> = (0..5).map(|_| Samples::default()).collect();
            one_rep(&root, &mock, &mut s);
            let mut s: Vec<Samples> = (0..5).map(|_| Samples::default()).collect();
            for _ in 0..reps {
                one_rep(&root, &mock, &mut s);
            }
            for (op, samples) in s.iter().enumerate() {
                rows.extend(shaped_row(op, files, shape, samples));
            }
        }
    }
    eprintln!("  5,000 plans ...");
    let root = cache_dir().join("log-5000-spread");
    workspace::generate_repo(&root, 1_000);
    ensure_plans(&root, 5_000);
    let mut s = Samples::default();
    // Each `pai log` here diffs 5,000 plans: a few reps are enough for a median.
    for _ in 0..reps.min(5) {
        log_rep(&root, &mock, &mut s);
    }
    rows.extend(row(5, 1_000, &s));
    rows
}
