//! What every section of the benchmark shares: the table row, timing helpers (medians, paired
//! runs for side-by-side ratios), formatting, and a hermetic `git` runner.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One line of the table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The area (`start-up`, `memory`, `model cost`, ...).
    pub area: String,
    /// What was measured.
    pub what: String,
    /// pai's figure.
    pub pai: String,
    /// The reference measured side by side in the same run (or a cited figure, marked so).
    pub reference: String,
    /// pai's figure over the reference's.
    pub ratio: String,
    /// The target, with ✓ or ✗ when it applies.
    pub target: String,
}

impl Row {
    /// A row of `area` about `what`, with pai's figure.
    pub fn new(area: &str, what: impl Into<String>, pai: impl Into<String>) -> Row {
        Row {
            area: area.into(),
            what: what.into(),
            pai: pai.into(),
            ..Row::default()
        }
    }

    /// Adds the reference and the ratio.
    pub fn vs(mut self, reference: impl Into<String>, ratio: f64) -> Row {
        self.reference = reference.into();
        self.ratio = format!("{ratio:.2}x");
        self
    }

    /// Adds a reference without a ratio.
    pub fn note(mut self, reference: impl Into<String>) -> Row {
        self.reference = reference.into();
        self
    }

    /// Adds a target and whether it was met.
    pub fn target(mut self, target: impl Into<String>, met: bool) -> Row {
        self.target = format!("{} {}", target.into(), if met { "✓" } else { "✗" });
        self
    }
}

/// Renders rows as one Markdown table, columns padded so it also reads well in a terminal.
pub fn markdown(rows: &[Row]) -> String {
    let header = [
        "area",
        "measurement",
        "pai",
        "reference (same run)",
        "ratio",
        "target",
    ];
    let cells = |r: &Row| {
        [
            r.area.clone(),
            r.what.clone(),
            r.pai.clone(),
            r.reference.clone(),
            r.ratio.clone(),
            r.target.clone(),
        ]
    };
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(cells(r)) {
            *w = (*w).max(width(&c));
        }
    }
    let line = |cols: &[String]| {
        let mut s = String::from("|");
        for (c, w) in cols.iter().zip(&widths) {
            let _ = write!(s, " {c}{} |", " ".repeat(w - width(c)));
        }
        s.push('\n');
        s
    };
    let mut out = line(&header.map(String::from));
    out.push('|');
    for w in &widths {
        let _ = write!(out, "{}|", "-".repeat(w + 2));
    }
    out.push('\n');
    let mut last_area = String::new();
    for r in rows {
        let mut c = cells(r);
        // The area is named once, where it starts.
        if c[0] == last_area {
            c[0].clear();
        } else {
            last_area = c[0].clone();
        }
        out.push_str(&line(&c));
    }
    out
}

/// Milliseconds with a precision that suits the size.
pub fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v < 10.0 {
        format!("{v:.2} ms")
    } else if v < 1000.0 {
        format!("{v:.1} ms")
    } else {
        format!("{:.2} s", v / 1e3)
    }
}

/// A duration as a fraction of another.
pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

/// Kibibytes as megabytes (as `ru_maxrss` counts them).
pub fn mb(kib: u64) -> String {
    format!("{:.1} MB", kib as f64 / 1024.0)
}

/// A count with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The median of some durations (the upper one for an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The median of some numbers.
pub fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Median wall time of `runs` runs of `f`, after one warm-up run.
pub fn median_of(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// Side by side: `a` and `b` run alternately `runs` times (after a warm-up each), so both
/// see the same machine load. Returns both medians and the median of the per-pair ratios a/b.
pub fn paired(runs: usize, a: &mut dyn FnMut(), b: &mut dyn FnMut()) -> (Duration, Duration, f64) {
    a();
    b();
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
        ratios.push(ratio(da, db));
    }
    (median(ta), median(tb), median_f64(ratios))
}

/// `git` in `dir` with no user or system configuration and a fixed identity.
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .stdin(Stdio::null());
    cmd
}

/// Runs git hermetically; panics with its error output unless it succeeds.
pub fn git(dir: &Path, args: &[&str]) -> Output {
    let out = git_command(dir, args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs git hermetically and returns its wall time.
pub fn timed_git(dir: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    git(dir, args);
    t.elapsed()
}
