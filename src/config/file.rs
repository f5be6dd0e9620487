//! The optional settings file, `config.toml` in the configuration directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::Error;

/// Settings as written in `config.toml`. Every field is optional; unknown fields are an error
/// so that a typo (`temprature = 0.2`) is reported instead of silently ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    /// `gemini`, `openai` or `anthropic`.
    pub provider: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Sampling temperature (clamped to 0.0–2.0).
    pub temperature: Option<f64>,
    /// Provider origin replacing the default.
    pub base_url: Option<String>,
    /// Diff-guard line threshold for MODIFY.
    pub modify_threshold: Option<i64>,
    /// Diff-guard ratio threshold for MODIFY.
    pub modify_max_ratio: Option<f64>,
    /// Tokens the first call of a turn may carry in a big project (the repository map).
    pub context_tokens: Option<i64>,
    /// How replies' JSON shape is asked for: `auto` (found per server and model, the
    /// default), `json_schema`, `json_object+schema`, `json_object` or `prompt`.
    pub structured_output: Option<String>,
    /// Seconds one model call may take.
    pub request_timeout_secs: Option<i64>,
    /// The output token limit asked for.
    pub max_output_tokens: Option<i64>,
    /// Days pai keeps undone plans, discarded sessions and session logs before `pai gc`
    /// prunes them (default 30).
    pub history_days: Option<u32>,
    /// Run every session in its own linked git worktree (as `pai -w` does) unless
    /// `--in-place` is given.
    pub worktree: Option<bool>,
    /// Extra deny-list patterns (added to the built-in list, which cannot be shrunk).
    #[serde(default)]
    pub deny: Vec<String>,
    /// RUN settings.
    #[serde(default)]
    pub run: RunFileSettings,
    /// Settings for one project, keyed by its root's absolute path (`[projects."/home/me/app"]`).
    /// They live here, in the user's own file, never in the repository: a cloned repository is
    /// not trusted to approve its own commands.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectFileSettings>,
    /// MCP servers (`[mcp_servers.<name>]`), the shape Codex uses.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, super::mcp_servers::UserServer>,
}

/// A `[projects."<root>"]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectFileSettings {
    /// The project's RUN settings.
    #[serde(default)]
    pub run: ProjectRunSettings,
    /// Ignored files and folders a worktree session needs (`.env`, `node_modules`), copied
    /// from the project into each new worktree; nothing is copied unless listed here.
    #[serde(default)]
    pub worktree_include: Vec<String>,
}

/// A `[projects."<root>".run]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectRunSettings {
    /// Command prefixes approved without asking in this project only.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The `[run]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFileSettings {
    /// Timeout for one RUN command, in seconds.
    pub timeout_secs: Option<u64>,
    /// Command prefixes approved without asking (e.g. `cargo test`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Refuse RUN where the kernel cannot confine it, instead of asking.
    pub require_sandbox: Option<bool>,
    /// Directories outside the project a confined command may also write to (tool caches such
    /// as `~/.cache/go-build` or `~/.npm`).
    #[serde(default)]
    pub writable: Vec<String>,
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

impl FileSettings {
    /// Read `path`; a missing file is empty settings, a malformed one is a configuration error
    /// that names the file and the problem.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(Error::config(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|span| {
                    let (line, col) = line_col(&text, span.start);
                    format!(" (line {line}, column {col})")
                })
                .unwrap_or_default();
            Error::config(format!(
                "{} is not valid{at}: {}",
                path.display(),
                e.message().trim()
            ))
            .with_hint(
                "fix or remove the file; see docs/configuration.md for the settings it accepts",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = \"m\"\n\n[run]\ntimout_secs = 5\n").unwrap();
        let err = FileSettings::load(&path).unwrap_err();
        let text = err.message().to_string();
        assert!(
            text.contains("config.toml is not valid (line 4, column 1)"),
            "{text}"
        );
        assert!(text.contains("timout_secs"), "{text}");
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\nçd", 5), (2, 2));
        assert_eq!(line_col("x", 99), (1, 2));
    }
}
