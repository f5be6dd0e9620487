//! The diff guard on MODIFY (SPEC section 5): a change is refused when added + removed lines
//! exceed the threshold *and* their ratio to the original line count exceeds the maximum ratio.
//! Texts arrive normalised to `\n`. The diff itself is [`super::diff`]'s; the guard stops it
//! early when the lower bound on the change already breaks both limits, so a whole-file rewrite
//! of a big file costs O(n).

use std::time::Duration;

use super::config::WorkspaceConfig;
use super::diff::{LineDiff, MYERS_BUDGET, Prepared, lines};
use super::error::WorkspaceError;

/// The guard's verdict when it refuses.
#[derive(Debug)]
pub(crate) struct Refusal {
    /// Added + removed (a lower bound when `lower_bound`).
    pub changed: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Lines of the original.
    pub original_lines: usize,
    /// The start of the unified diff.
    pub preview: String,
    /// The counts are a lower bound (the full diff was not needed to decide).
    pub lower_bound: bool,
}

/// Whether `changed` lines on an `original`-line file break both limits.
pub(crate) fn over_limits(cfg: &WorkspaceConfig, changed: usize, original: usize) -> bool {
    if changed <= cfg.modify_threshold {
        return false;
    }
    if original == 0 {
        return true;
    }
    changed as f64 / original as f64 > cfg.modify_max_ratio
}

/// The error MODIFY reports for a refusal.
pub(crate) fn refusal_error(cfg: &WorkspaceConfig, path: &str, r: Refusal) -> WorkspaceError {
    WorkspaceError::DiffGuard {
        path: super::error::display_path(path),
        changed: r.changed,
        added: r.added,
        removed: r.removed,
        original_lines: r.original_lines,
        threshold: cfg.modify_threshold,
        ratio_pct: format!("{:.0}", cfg.modify_max_ratio * 100.0),
        preview: if r.lower_bound {
            format!("{}(at least this many lines change)\n", r.preview)
        } else {
            r.preview
        },
    }
}

/// The error for a change that passes on its own but, with the plan's earlier steps on the
/// same file, rewrites too much of what the plan started from.
pub(crate) fn plan_refusal_error(cfg: &WorkspaceConfig, path: &str, r: Refusal) -> WorkspaceError {
    match refusal_error(cfg, path, r) {
        WorkspaceError::DiffGuard {
            path,
            changed,
            added,
            removed,
            original_lines,
            threshold,
            ratio_pct,
            preview,
        } => WorkspaceError::PlanGuard {
            path,
            changed,
            added,
            removed,
            original_lines,
            threshold,
            ratio_pct,
            preview,
        },
        other => other,
    }
}

/// Diff `old` against `new` and apply the guard. `Ok` carries the diff for display and counts.
pub(crate) fn guard<'a>(
    cfg: &WorkspaceConfig,
    old: &'a str,
    new: &'a str,
    path: &str,
) -> Result<LineDiff<'a>, Refusal> {
    guard_within(cfg, old, new, path, MYERS_BUDGET)
}

/// [`guard`] with the time exact Myers may take as a parameter.
fn guard_within<'a>(
    cfg: &WorkspaceConfig,
    old: &'a str,
    new: &'a str,
    path: &str,
    budget: Duration,
) -> Result<LineDiff<'a>, Refusal> {
    let Some(prepared) = Prepared::new(old, new) else {
        // Line positions are u32: refuse rather than diff with truncated positions.
        let (removed, added) = (lines(old).len(), lines(new).len());
        return Err(Refusal {
            changed: added + removed,
            added,
            removed,
            original_lines: removed,
            preview: String::new(),
            lower_bound: true,
        });
    };
    let original_lines = prepared.old_lines();
    let (lb_added, lb_removed) = prepared.lower_bound();
    if over_limits(cfg, lb_added + lb_removed, original_lines) {
        let d = prepared.preview(cfg.preview_lines.max(1) * 4);
        return Err(Refusal {
            changed: lb_added + lb_removed,
            added: lb_added,
            removed: lb_removed,
            original_lines,
            preview: d.unified(path, cfg.preview_lines),
            lower_bound: true,
        });
    }
    let d = prepared.finish(budget);
    if over_limits(cfg, d.added + d.removed, original_lines) {
        return Err(Refusal {
            changed: d.added + d.removed,
            added: d.added,
            removed: d.removed,
            original_lines,
            preview: d.unified(path, cfg.preview_lines),
            lower_bound: false,
        });
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(threshold: usize, ratio: f64) -> WorkspaceConfig {
        WorkspaceConfig {
            modify_threshold: threshold,
            modify_max_ratio: ratio,
            ..WorkspaceConfig::default()
        }
    }

    #[test]
    fn counts_and_renders() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nd\ne\n";
        let d = guard(&cfg(500, 0.5), old, new, "f.txt").unwrap();
        assert_eq!((d.added, d.removed), (2, 1));
        let u = d.unified("f.txt", 100);
        assert_eq!(
            u,
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n"
        );
    }

    #[test]
    fn both_limits_must_be_exceeded() {
        let old: String = (0..100).map(|i| format!("{i}\n")).collect();
        let new: String = (0..100).map(|i| format!("x{i}\n")).collect();
        // 200 changed lines: over a threshold of 10 and a ratio of 2.0 => refused.
        let r = guard(&cfg(10, 0.5), &old, &new, "f").unwrap_err();
        assert_eq!(r.changed, 200);
        assert!(r.preview.starts_with("--- a/f\n"));
        // Ratio not exceeded (2.0 > 3.0 is false) => allowed.
        assert!(guard(&cfg(10, 3.0), &old, &new, "f").is_ok());
        // Threshold not exceeded => allowed.
        assert!(guard(&cfg(200, 0.5), &old, &new, "f").is_ok());
        // Empty original: ratio is infinite.
        assert!(guard(&cfg(10, 100.0), "", &new, "f").is_err());
    }

    #[test]
    fn counts_are_minimal() {
        // Compare with similar's own line diff on the full texts, over pseudo-random inputs
        // drawn from a small alphabet (so lines repeat and move).
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let mut make = |n: u64| -> String {
                let len = next() % n;
                (0..len).map(|_| format!("l{}\n", next() % 6)).collect()
            };
            let (old, new) = (make(30), make(30));
            let d = guard_within(
                &cfg(usize::MAX, 0.5),
                &old,
                &new,
                "f",
                Duration::from_secs(30),
            )
            .unwrap();
            let reference = similar::TextDiff::from_lines(&old, &new);
            let (mut a, mut r) = (0, 0);
            for c in reference.iter_all_changes() {
                match c.tag() {
                    similar::ChangeTag::Insert => a += 1,
                    similar::ChangeTag::Delete => r += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            assert_eq!(d.added + d.removed, a + r, "{old:?} -> {new:?}");
            // The rendered diff, applied, turns old into new.
            let rebuilt = d.apply();
            assert_eq!(rebuilt, new);
        }
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let d = guard(&cfg(500, 0.5), "a\n", "a", "f").unwrap();
        assert_eq!((d.added, d.removed), (1, 1));
        assert!(d.unified("f", 100).contains("\\ No newline at end of file"));
    }

    #[test]
    fn preview_is_capped() {
        let new: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let d = LineDiff::whole("", &new);
        let u = d.unified("f", 10);
        assert!(u.ends_with("… (990 more diff lines not shown)\n"), "{u}");
    }
}
