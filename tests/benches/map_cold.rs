//! The map of a large repository on a new project's first call (`PAI_MAP_COLD=1`, on
//! `fixtures/map/large_cases.jsonl` by default): per case, the map's cache emptied, the first
//! call built in this process with the default time budget and judged as the other figures
//! are; then `pai map` run in a new process with an empty cache directory, for the first
//! call's wall time and peak RSS as a user meets them. `PAI_MAP_COLD=warm` also builds the
//! whole cache (no time budget) and judges and times the warm first call after it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pai::map::MapReport;
use pai::workspace::{Workspace, WorkspaceConfig};

use super::super::common::{Row, mb};
use super::{BenchView, Case, Outcome, change_of, git_dir, judge, median, pct};

/// The default budget of the first call, in tokens.
const TOKENS: usize = 8000;

fn first_call(ws: &Workspace, request: &str, time_budget: Duration) -> (String, MapReport) {
    let view = BenchView {
        ws,
        time_budget,
        report: RefCell::new(None),
    };
    let budget = pai::agent::context::Budget {
        context_tokens: TOKENS,
        ..pai::agent::context::Budget::default()
    };
    let msg = pai::agent::context::build(
        request,
        &view,
        &pai::agent::context::Memory::default(),
        &budget,
    );
    let report = view
        .report
        .into_inner()
        .expect("the first call built a map");
    (msg, report)
}

/// Remove the map's cache of `tree` (after any save under way has reached the disk).
fn forget_cache(tree: &Path) {
    pai::agent::repo_map::finish();
    if let Some(loc) = dirs::cache_dir().and_then(|d| pai::map::store::location(&d, tree)) {
        let _ = std::fs::remove_file(pai::map::words::path_of(&loc));
        let _ = std::fs::remove_file(loc);
    }
}

/// One case, cold and (when asked) warm.
struct ColdRun {
    files: usize,
    cold: Outcome,
    /// The in-process cold map: its time (ms) and the share of files it parsed.
    map_ms: f64,
    parsed: f64,
    /// `pai map` in a new process: wall time (ms) and peak RSS (KiB).
    process_ms: f64,
    rss_kib: u64,
    warm: Option<(Outcome, f64)>,
}

/// `pai map` for `request` in `tree`, in a new process with an empty cache directory: its
/// wall time (ms) and peak RSS (KiB). The RSS is GNU time's report of its child: a child
/// spawned from this benchmark would count this process's resident pages at `exec` into its
/// own peak (see `RssFile` in scale.rs). `PAI_BENCH_BIN` names another build to measure.
fn process(tree: &Path, request: &str) -> (f64, u64) {
    let cache = tempfile::tempdir().unwrap();
    let rss = tempfile::NamedTempFile::new().unwrap();
    let pai = std::env::var("PAI_BENCH_BIN").unwrap_or_else(|_| super::super::PAI.into());
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%M", "-o"])
        .arg(rss.path())
        .arg(pai)
        .args(["map", request, "--json"])
        .current_dir(tree)
        .env("XDG_CACHE_HOME", cache.path());
    let m = super::super::run_measured(&mut cmd);
    if m.code != Some(0) {
        eprintln!(
            "map cold: pai map failed in {}: {}",
            tree.display(),
            String::from_utf8_lossy(&m.stderr)
        );
    }
    let kib = std::fs::read_to_string(rss.path())
        .ok()
        .and_then(|t| t.lines().rev().find_map(|l| l.trim().parse().ok()))
        .unwrap_or(m.max_rss_kib);
    (m.wall.as_secs_f64() * 1000.0, kib)
}

fn run_case(case: &Case, tree: &Path, warm: bool) -> ColdRun {
    let ws = Workspace::open(tree, WorkspaceConfig::default()).unwrap();
    let gd = git_dir(&case.repo);
    let change = change_of(case, tree, gd.as_deref());
    forget_cache(tree);
    // As `pai map` counts it: the project's listing comes out of the first call's budget.
    let since = std::time::Instant::now();
    drop(ws.corpus());
    let budget = pai::agent::repo_map::left_of(pai::map::DEFAULT_TIME_BUDGET, since);
    let (msg, report) = first_call(&ws, &case.request, budget);
    let cold = judge(case, &msg, Some(&report), &change);
    let map_ms = report.elapsed.as_secs_f64() * 1000.0;
    let parsed = report.parsed as f64 / report.files.max(1) as f64;
    let warm = warm.then(|| {
        let _ = first_call(&ws, &case.request, Duration::from_secs(600));
        pai::agent::repo_map::finish();
        let (msg, report) = first_call(&ws, &case.request, pai::map::DEFAULT_TIME_BUDGET);
        let outcome = judge(case, &msg, Some(&report), &change);
        (outcome, report.elapsed.as_secs_f64() * 1000.0)
    });
    forget_cache(tree);
    let (process_ms, rss_kib) = process(tree, &case.request);
    ColdRun {
        files: report.files,
        cold,
        map_ms,
        parsed,
        process_ms,
        rss_kib,
        warm,
    }
}

/// The rows of the cold (and warm) figures, per repository and for all.
pub fn rows() -> Vec<Row> {
    let Some(trees) = std::env::var_os("PAI_MAP_TREES").map(std::path::PathBuf::from) else {
        eprintln!("map cold: PAI_MAP_TREES is not set; see fixtures/map/README.md");
        return Vec::new();
    };
    let cases = super::cases();
    let warm = std::env::var("PAI_MAP_COLD").is_ok_and(|v| v == "warm");
    let verbose = std::env::var_os("PAI_MAP_VERBOSE").is_some();
    let mut per_repo: BTreeMap<String, Vec<ColdRun>> = BTreeMap::new();
    for case in cases.iter().filter(|c| !c.names_file) {
        let Ok(tree) = trees.join(&case.id).canonicalize() else {
            eprintln!("map cold: no tree for {}", case.id);
            continue;
        };
        let run = run_case(case, &tree, warm);
        if verbose {
            eprintln!(
                "{} files={} cold visible={} regions={} map={:.0}ms parsed={:.0}% process={:.0}ms rss={} warm={:?} missed {:?}",
                case.id,
                run.files,
                run.cold.visible,
                run.cold.regions,
                run.map_ms,
                run.parsed * 100.0,
                run.process_ms,
                mb(run.rss_kib),
                run.warm
                    .as_ref()
                    .map(|(o, ms)| (o.visible, o.regions, ms.round())),
                run.cold.missed,
            );
        }
        per_repo.entry(case.repo.clone()).or_default().push(run);
    }
    let mut groups: Vec<(String, Vec<&ColdRun>)> = per_repo
        .iter()
        .map(|(r, v)| (r.clone(), v.iter().collect()))
        .collect();
    groups.push(("all".into(), per_repo.values().flatten().collect()));
    let mut rows = Vec::new();
    for (name, runs) in groups {
        rows.extend(group_rows(&name, &runs));
    }
    rows
}

fn group_rows(name: &str, runs: &[&ColdRun]) -> Vec<Row> {
    let n = runs.len();
    let count = |f: &dyn Fn(&ColdRun) -> bool| runs.iter().filter(|r| f(r)).count();
    let med = |f: &dyn Fn(&ColdRun) -> f64| median(runs.iter().map(|r| f(r)).collect());
    let max = |f: &dyn Fn(&ColdRun) -> f64| runs.iter().map(|r| f(r)).fold(0.0, f64::max);
    let (lo, hi) = (
        runs.iter().map(|r| r.files).min().unwrap_or(0),
        runs.iter().map(|r| r.files).max().unwrap_or(0),
    );
    let what = format!("{name} ({n} cases, {lo}–{hi} files)");
    let process_max = max(&|r| r.process_ms);
    let rss_max = runs.iter().map(|r| r.rss_kib).max().unwrap_or(0);
    let mut rows = vec![
        Row::new(
            "map cold",
            what.clone(),
            format!(
                "visible {}, all regions {}, median input {:.0} tokens",
                pct(count(&|r| r.cold.visible), n),
                pct(count(&|r| r.cold.regions), n),
                med(&|r| r.cold.tokens as f64),
            ),
        )
        .note(format!(
            "pai map in a new process: median {:.0} ms, max {process_max:.0} ms, peak RSS median {}, max {}; map in process median {:.0} ms, {:.0}% of files parsed",
            med(&|r| r.process_ms),
            mb(med(&|r| r.rss_kib as f64) as u64),
            mb(rss_max),
            med(&|r| r.map_ms),
            med(&|r| r.parsed) * 100.0,
        ))
        .target(
            "visible ≥ 85%, all regions ≥ 45%, first call ≤ 4 s, RSS < 60 MB",
            count(&|r| r.cold.visible) * 100 >= 85 * n
                && count(&|r| r.cold.regions) * 100 >= 45 * n
                && process_max <= 4000.0
                && rss_max < 60 * 1024,
        ),
    ];
    let warm: Vec<&(Outcome, f64)> = runs.iter().filter_map(|r| r.warm.as_ref()).collect();
    if !warm.is_empty() {
        let w = warm.len();
        let vis = warm.iter().filter(|(o, _)| o.visible).count();
        let all = warm.iter().filter(|(o, _)| o.regions).count();
        let ms: Vec<f64> = warm.iter().map(|(_, ms)| *ms).collect();
        let ms_max = ms.iter().copied().fold(0.0, f64::max);
        rows.push(
            Row::new(
                "map warm",
                what,
                format!("visible {}, all regions {}", pct(vis, w), pct(all, w)),
            )
            .note(format!(
                "warm map median {:.0} ms, max {ms_max:.0} ms",
                median(ms)
            ))
            .target(
                "visible ≥ 85%, all regions ≥ 45%, map ≤ 150 ms",
                vis * 100 >= 85 * w && all * 100 >= 45 * w && ms_max <= 150.0,
            ),
        );
    }
    rows
}
