//! The workspace's error type: every message names the path and says, in words a user or a
//! model can act on, why the operation did not happen.

use std::io;

/// Why a workspace operation failed. The `Display` text is meant to be shown to the user and fed
/// back to the model as is.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The gate refused the path: outside the project, protected, or malformed.
    #[error("refused: {path} {reason}")]
    Refused {
        /// The path as given (sanitised for display).
        path: String,
        /// Why, phrased to follow the path ("is outside the project").
        reason: String,
    },
    /// The path does not exist.
    #[error("cannot {op} {path}: it does not exist{hint}")]
    NotFound {
        /// The operation ("read", "modify", ...).
        op: &'static str,
        /// The path (sanitised for display).
        path: String,
        /// Extra advice, starting with "; " or empty.
        hint: String,
    },
    /// The target already exists where a new one was required.
    #[error("cannot {op} {path}: it already exists{hint}")]
    AlreadyExists {
        /// The operation.
        op: &'static str,
        /// The path (sanitised for display).
        path: String,
        /// Extra advice, starting with "; " or empty.
        hint: String,
    },
    /// The operation cannot be carried out for a reason other than the gate (wrong kind of
    /// file, an edit that does not apply, a size limit).
    #[error("cannot {op} {path}: {reason}")]
    Failed {
        /// The operation.
        op: &'static str,
        /// The path (sanitised for display).
        path: String,
        /// What is wrong and, where possible, what to do instead.
        reason: String,
    },
    /// MODIFY would change too much of the file at once (SPEC section 5, diff guard).
    #[error(
        "cannot modify {path}: the change touches {changed} lines (+{added} -{removed}) of a \
         {original_lines}-line file, over the limit of {threshold} lines and {ratio_pct}% of the \
         file; split it into several smaller MODIFY steps with search/replace edits.\n\
         Diff preview:\n{preview}"
    )]
    DiffGuard {
        /// The path.
        path: String,
        /// Added plus removed lines (a lower bound when the diff was cut short).
        changed: usize,
        /// Added lines.
        added: usize,
        /// Removed lines.
        removed: usize,
        /// Line count of the file before the change.
        original_lines: usize,
        /// The configured line threshold.
        threshold: usize,
        /// The configured ratio, in percent.
        ratio_pct: String,
        /// The start of the unified diff.
        preview: String,
    },
    /// The plan's steps on one file together (MODIFYs, or RM/MV then WRITE) would rewrite too
    /// much of what the plan started from: the diff guard over the whole plan.
    #[error(
        "cannot change {path}: together with this plan's earlier steps on it, the change \
         touches {changed} lines (+{added} -{removed}) of the {original_lines}-line file the plan \
         started from, over the limit of {threshold} lines and {ratio_pct}% of the file (removing \
         or moving a file and writing it again counts as rewriting it); keep the change smaller \
         and split it across plans.\n\
         Diff preview:\n{preview}"
    )]
    PlanGuard {
        /// The path.
        path: String,
        /// Added plus removed lines since the plan began.
        changed: usize,
        /// Added lines.
        added: usize,
        /// Removed lines.
        removed: usize,
        /// Line count of the file when the plan began.
        original_lines: usize,
        /// The configured line threshold.
        threshold: usize,
        /// The configured ratio, in percent.
        ratio_pct: String,
        /// The start of the unified diff against the plan's starting text.
        preview: String,
    },
    /// RM on a non-empty directory without permission to recurse; the caller should ask the
    /// user and retry with `allow_recursive`.
    #[error(
        "rm {path}: it is a directory holding {files} files and {dirs} subdirectories; \
         removing it needs confirmation"
    )]
    NeedsConfirmation {
        /// The directory.
        path: String,
        /// Files (and symlinks) inside, recursively.
        files: usize,
        /// Subdirectories inside, recursively.
        dirs: usize,
    },
    /// SEARCH was given a pattern that is not a valid regular expression.
    #[error("cannot search for `{pattern}`: {reason}")]
    InvalidPattern {
        /// The pattern (sanitised for display).
        pattern: String,
        /// The regex parser's explanation.
        reason: String,
    },
    /// A setting (environment variable or config entry) has an unusable value.
    #[error("invalid setting {name}={value}: {reason}")]
    Config {
        /// The variable or key.
        name: String,
        /// The value given.
        value: String,
        /// What is expected.
        reason: String,
    },
    /// An operating-system error while carrying out the operation.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path (sanitised for display).
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl WorkspaceError {
    /// True when the gate refused the path (as opposed to the operation failing).
    pub fn is_refusal(&self) -> bool {
        matches!(self, WorkspaceError::Refused { .. })
    }

    pub(crate) fn refused(path: &str, reason: impl Into<String>) -> Self {
        WorkspaceError::Refused {
            path: display_path(path),
            reason: reason.into(),
        }
    }

    pub(crate) fn failed(op: &'static str, path: &str, reason: impl Into<String>) -> Self {
        WorkspaceError::Failed {
            op,
            path: display_path(path),
            reason: reason.into(),
        }
    }

    pub(crate) fn not_found(op: &'static str, path: &str, hint: &str) -> Self {
        WorkspaceError::NotFound {
            op,
            path: display_path(path),
            hint: if hint.is_empty() {
                String::new()
            } else {
                format!("; {hint}")
            },
        }
    }

    pub(crate) fn exists(op: &'static str, path: &str, hint: &str) -> Self {
        WorkspaceError::AlreadyExists {
            op,
            path: display_path(path),
            hint: if hint.is_empty() {
                String::new()
            } else {
                format!("; {hint}")
            },
        }
    }

    /// Map an OS error to the most useful variant for `op` on `path`.
    pub(crate) fn io(op: &'static str, path: &str, source: io::Error) -> Self {
        match source.raw_os_error() {
            Some(libc::ENOENT) => Self::not_found(op, path, ""),
            Some(libc::EEXIST) => Self::exists(op, path, ""),
            Some(libc::ELOOP) => Self::refused(
                path,
                "changed while pai was using it (a symbolic link appeared on the path)",
            ),
            Some(libc::ENOTDIR) => {
                Self::failed(op, path, "a parent on the path is not a directory")
            }
            Some(libc::EISDIR) => Self::failed(op, path, "it is a directory"),
            _ => WorkspaceError::Io {
                op,
                path: display_path(path),
                source,
            },
        }
    }
}

/// A path made safe to print: control and invisible characters escaped, very long paths
/// shortened. `""` shows as `""` and the root as `.`.
pub(crate) fn display_path(path: &str) -> String {
    const MAX: usize = 120;
    if path.is_empty() {
        return "\"\"".to_string();
    }
    let mut out = String::new();
    for (chars, c) in path.chars().enumerate() {
        if chars >= MAX {
            let total = path.chars().count();
            out.push_str(&format!("… ({total} characters)"));
            break;
        }
        if c.is_control() || super::deny::is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Quote a snippet of text for an error message: first line only, bounded length, control
/// characters escaped.
pub(crate) fn quote_snippet(text: &str, max_chars: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first
        .chars()
        .take(max_chars)
        .flat_map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if first.chars().count() > max_chars {
        out.push('…');
    }
    out
}
