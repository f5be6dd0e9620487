//! The one error type the binary reports. Every module has its own precise error enum; they
//! convert into [`Error`], whose kind decides the exit code (SPEC section 1: 0 success, 1 the
//! request failed, 2 usage or configuration error) and which may carry a hint telling the user
//! what to do next.

use std::fmt;

/// Result alias used across pai.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure this is; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command line was wrong or the feature is not available (exit 2).
    Usage,
    /// Settings or credentials are missing or broken (exit 2).
    Config,
    /// The request itself failed: provider, workspace, git, I/O (exit 1).
    Failed,
}

impl ErrorKind {
    /// The process exit code for this kind of failure.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Usage | ErrorKind::Config => 2,
            ErrorKind::Failed => 1,
        }
    }
}

/// A failure with a message a user can act on and an optional hint.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    hint: Option<String>,
    silent: bool,
}

impl Error {
    /// A usage error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }

    /// A configuration or credentials error (exit code 2).
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// A failed request (exit code 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hint: None,
            silent: false,
        }
    }

    /// A failure already reported to the user (e.g. by the turn's final status): only its exit
    /// code remains to be returned.
    pub fn silent(code: i32) -> Self {
        let kind = if code == 2 {
            ErrorKind::Usage
        } else {
            ErrorKind::Failed
        };
        Self {
            kind,
            message: String::new(),
            hint: None,
            silent: true,
        }
    }

    /// Whether the failure was already reported.
    pub fn is_silent(&self) -> bool {
        self.silent
    }

    /// Attach a hint: what the user can do about it.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without the hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The hint, if any.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The exit code this error maps to.
    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
