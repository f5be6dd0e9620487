//! The history module's error type. Refusals (undo on the wrong branch, files changed since a
//! plan, ...) are ordinary values with a message naming the files and a hint saying what to do;
//! the command line maps them into `pai::error::Error` with [`HistoryError::hint`].

use std::path::PathBuf;

/// Everything that can go wrong in the git history, including deliberate refusals.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The session cannot write history; the reason says why and what to do.
    #[error("git history is read-only: {reason}")]
    ReadOnly {
        /// Why, and what the user can do about it.
        reason: String,
    },
    /// Neither a git repository nor a private `.pai_history/git` exists at the project root.
    #[error("no pai history in {}: not a git repository and no .pai_history/git", root.display())]
    NoHistory {
        /// The project root that was searched.
        root: PathBuf,
    },
    /// Another pai process holds the work-tree lock.
    #[error("another pai session{} is writing this work tree", pid_text(*pid))]
    Busy {
        /// The other process, when its lock file names it.
        pid: Option<u32>,
    },
    /// `pai undo` / `pai redo` was refused; nothing was changed.
    #[error("{message}")]
    Refused {
        /// What was refused and why, naming the files or refs involved.
        message: String,
        /// What the user can do instead.
        hint: String,
    },
    /// `pai undo` / `redo` / `discard` where HEAD is not on a session branch: the command
    /// does not apply here (a usage error), nothing was changed.
    #[error("{message}")]
    NoSession {
        /// What was asked and where HEAD is.
        message: String,
        /// Where the user can find a session.
        hint: String,
    },
    /// HEAD no longer points at the session branch (the user switched branches mid-session).
    #[error(
        "HEAD moved from {expected} to {found} during the session; the plan's changes are left uncommitted in the work tree"
    )]
    HeadMoved {
        /// The session branch.
        expected: String,
        /// What HEAD points at now.
        found: String,
    },
    /// A path handed to history is not a plain relative path inside the project.
    #[error("invalid project path `{path}`: {why}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Reading or writing a project file through the workspace failed.
    #[error("cannot {action} {path}: {source}")]
    WorkTree {
        /// `read`, `write` or `remove`.
        action: &'static str,
        /// The project-relative path.
        path: String,
        /// The workspace's error.
        source: std::io::Error,
    },
    /// The git index could not be read or updated.
    #[error("cannot use the git index {}: {why}", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A file of pai's own (`.pai_history/...`) could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What pai was doing, naming the file.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A lock file of git's blocks the operation: another git command is writing, or one
    /// (or a pai process) was killed while writing and left it.
    #[error(
        "git: {context}: {lock} exists: another git command is running, or one was killed while holding it"
    )]
    Locked {
        /// What pai was doing.
        context: String,
        /// The lock file.
        lock: String,
        /// The command that frees it.
        hint: String,
    },
    /// libgit2 failed.
    #[error("git: {context}: {}", source.message())]
    Git {
        /// What pai was doing.
        context: String,
        /// libgit2's error.
        source: git2::Error,
    },
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

impl HistoryError {
    /// What the user can do about this error, when pai knows.
    pub fn hint(&self) -> Option<&str> {
        match self {
            HistoryError::Refused { hint, .. }
            | HistoryError::NoSession { hint, .. }
            | HistoryError::Locked { hint, .. } => Some(hint),
            HistoryError::Busy { .. } => {
                Some("use /undo inside that session, or wait until it ends")
            }
            HistoryError::HeadMoved { .. } => Some(
                "switch back to the session branch to keep recording plans, or commit the changes yourself",
            ),
            HistoryError::NoHistory { .. } => {
                Some("pai records history only for plans it carried out in this directory")
            }
            _ => None,
        }
    }

    /// Whether this is a deliberate refusal (nothing changed) rather than a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            HistoryError::Refused { .. }
                | HistoryError::NoSession { .. }
                | HistoryError::ReadOnly { .. }
                | HistoryError::Busy { .. }
        )
    }
}

/// Attach context to libgit2 and I/O errors without ceremony.
pub(crate) trait Context<T> {
    /// Wrap the error with a description of what pai was doing.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, HistoryError>;
}

impl<T> Context<T> for Result<T, git2::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, HistoryError> {
        self.map_err(|source| match lock_file(&source) {
            Some(lock) => HistoryError::Locked {
                context: context(),
                hint: format!(
                    "if no git command is running, remove it: `rm {}`",
                    crate::shell::quote_path(std::path::Path::new(&lock))
                ),
                lock,
            },
            None => HistoryError::Git {
                context: context(),
                source,
            },
        })
    }
}

/// The lock file a libgit2 "locked" error names ("failed to create locked file '<path>'").
fn lock_file(e: &git2::Error) -> Option<String> {
    if e.code() != git2::ErrorCode::Locked {
        return None;
    }
    let msg = e.message();
    let start = msg.find('\'')? + 1;
    let len = msg[start..].find('\'')?;
    Some(msg[start..start + len].to_string())
}

impl<T> Context<T> for Result<T, std::io::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, HistoryError> {
        self.map_err(|source| HistoryError::Io {
            context: context(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_libgit2_cannot_take_is_named_with_the_command_that_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let id = repo.commit(None, &sig, &sig, "c", &tree, &[]).unwrap();
        let lock = repo.path().join("refs/heads/pai-x.lock");
        std::fs::write(&lock, "").unwrap();
        let err = repo
            .reference("refs/heads/pai-x", id, true, "test")
            .map(|_| ())
            .ctx(|| "cannot move pai-x".into())
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("pai-x.lock exists"), "{text}");
        let hint = err.hint().unwrap_or_default();
        assert!(hint.contains(&format!("`rm {}`", lock.display())), "{hint}");
    }
}
