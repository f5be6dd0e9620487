//! Settings of the workspace: extra deny patterns, the diff-guard thresholds and the output caps
//! that keep READ, TREE, LIST_PATH and SEARCH bounded on huge projects.

use super::error::WorkspaceError;

/// Environment variable overriding [`WorkspaceConfig::modify_threshold`].
pub const ENV_MODIFY_THRESHOLD: &str = "PAI_MODIFY_THRESHOLD";
/// Environment variable overriding [`WorkspaceConfig::modify_max_ratio`].
pub const ENV_MODIFY_MAX_RATIO: &str = "PAI_MODIFY_MAX_RATIO";

/// Workspace settings. `Default` gives the values of SPEC section 5.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceConfig {
    /// Extra deny patterns (segment globs like `*.key`, or paths like `config/prod/**`). They
    /// add to the built-in list, which cannot be shrunk.
    pub extra_deny: Vec<String>,
    /// Diff guard: MODIFY is refused when added + removed lines exceed this...
    pub modify_threshold: usize,
    /// ...and also exceed this fraction of the file's original line count.
    pub modify_max_ratio: f64,
    /// READ returns at most this many bytes of a file, marked as truncated.
    pub max_read_bytes: usize,
    /// MODIFY refuses files larger than this (they are read whole).
    pub max_edit_bytes: usize,
    /// LIST_PATH shows at most this many entries.
    pub max_list_entries: usize,
    /// TREE shows at most this many entries in total...
    pub max_tree_entries: usize,
    /// ...and at most this many per directory.
    pub max_tree_dir_entries: usize,
    /// SEARCH shows at most this many matching lines.
    pub max_search_matches: usize,
    /// SEARCH skips files larger than this.
    pub max_search_file_bytes: usize,
    /// The unified diff in a [`super::FileChange`] is cut after this many lines.
    pub max_diff_lines: usize,
    /// The diff-guard refusal shows this many diff lines.
    pub preview_lines: usize,
    /// pai's per-project state directory (outside the project), where a process that writes
    /// registers itself so the next one sweeps temporaries only after a crash; `None`: every
    /// [`super::Workspace::open`] sweeps.
    pub state_dir: Option<std::path::PathBuf>,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig {
            extra_deny: Vec::new(),
            modify_threshold: 500,
            modify_max_ratio: 0.5,
            max_read_bytes: 100_000,
            max_edit_bytes: 8 << 20,
            max_list_entries: 1_000,
            max_tree_entries: 500,
            max_tree_dir_entries: 100,
            max_search_matches: 200,
            max_search_file_bytes: 4 << 20,
            max_diff_lines: 2_000,
            preview_lines: 60,
            state_dir: None,
        }
    }
}

impl WorkspaceConfig {
    /// Apply the overrides from any lookup (the environment in production, a map in tests).
    /// Empty values are ignored; unparsable ones are an error naming the variable.
    pub fn with_overrides(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, WorkspaceError> {
        if let Some(v) = lookup(ENV_MODIFY_THRESHOLD).filter(|v| !v.trim().is_empty()) {
            self.modify_threshold = v.trim().parse().map_err(|_| WorkspaceError::Config {
                name: ENV_MODIFY_THRESHOLD.into(),
                value: v.clone(),
                reason: "expected a whole number of lines, e.g. 500".into(),
            })?;
        }
        if let Some(v) = lookup(ENV_MODIFY_MAX_RATIO).filter(|v| !v.trim().is_empty()) {
            let ratio: f64 = v.trim().parse().map_err(|_| WorkspaceError::Config {
                name: ENV_MODIFY_MAX_RATIO.into(),
                value: v.clone(),
                reason: "expected a number such as 0.5".into(),
            })?;
            if !ratio.is_finite() || ratio < 0.0 {
                return Err(WorkspaceError::Config {
                    name: ENV_MODIFY_MAX_RATIO.into(),
                    value: v,
                    reason: "expected a non-negative number such as 0.5".into(),
                });
            }
            self.modify_max_ratio = ratio;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_and_validate() {
        let cfg = WorkspaceConfig::default()
            .with_overrides(|n| match n {
                ENV_MODIFY_THRESHOLD => Some("20".into()),
                ENV_MODIFY_MAX_RATIO => Some(" 0.25 ".into()),
                _ => None,
            })
            .unwrap();
        assert_eq!(cfg.modify_threshold, 20);
        assert_eq!(cfg.modify_max_ratio, 0.25);
        let err = WorkspaceConfig::default()
            .with_overrides(|n| (n == ENV_MODIFY_THRESHOLD).then(|| "lots".into()))
            .unwrap_err();
        assert!(
            err.to_string().contains("PAI_MODIFY_THRESHOLD=lots"),
            "{err}"
        );
        assert!(
            WorkspaceConfig::default()
                .with_overrides(|n| (n == ENV_MODIFY_MAX_RATIO).then(|| "-1".into()))
                .is_err()
        );
        let unchanged = WorkspaceConfig::default()
            .with_overrides(|_| Some(String::new()))
            .unwrap();
        assert_eq!(unchanged, WorkspaceConfig::default());
    }
}
