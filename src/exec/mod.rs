//! RUN: executing a shell command for the agent (SPEC section 7).
//!
//! A command runs as `/bin/sh -c <command>` in the project root, in a session and process group
//! of its own, with stdin closed, a timeout that kills the whole group, output capped to its head
//! and tail, an environment cleared of provider keys and `PAI_*` secrets, and, where the kernel
//! supports it, a Landlock ruleset that lets it write only inside the project and the temporary
//! directories. Approval is not decided here: the agent asks the user, and [`is_preapproved`]
//! tells it when a configured allow-list already covers the command.
//!
//! Modules, one job each: `runner` (spawn, wait, timeout, cancellation), `group` (signalling
//! and watching the process group), `output` (the head+tail cap), `env` (environment
//! scrubbing), `environ` (pai's own environment hidden from `/proc`), `sandbox` (Landlock),
//! `allow` (the pre-approval allow-list).

mod allow;
mod env;
mod environ;
mod group;
mod hidden;
mod output;
mod reach;
mod redact;
mod runner;
mod sandbox;
mod shield;

use std::io;
use std::path::PathBuf;

pub use allow::{is_preapproved, only_looks, rule_for};
pub use env::{carries_secret, child_environment, scrub_environment};
pub use environ::hide_from_proc;
pub use hidden::private_dirs;
pub use reach::{ChildGuard, refusal};
pub use redact::{LineRedactor, REDACTED, redact, secret_forms};
pub use runner::{RunOptions, RunOutcome, run_command, run_command_streaming};
/// Output bytes kept of a RUN command (and of an MCP tool's result): head and tail, with a
/// marker where the middle was dropped.
pub const OUTPUT_CAP: usize = runner::DEFAULT_OUTPUT_CAP;

/// `bytes` capped to `cap` bytes the way RUN output is: head and tail kept, a marker saying how
/// many bytes were dropped between them.
pub fn cap_output(bytes: &[u8], cap: usize) -> String {
    let mut kept = output::OutputCap::new(cap);
    kept.push(bytes);
    kept.finish().0
}

pub use sandbox::{
    SandboxMode, SandboxSupport, landlock_abi, sandbox_support, unconfined_reason, writable_paths,
};

/// Why a command could not be run (or could not be followed to its end).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Confinement is required by configuration but this kernel cannot provide it; nothing ran.
    #[error(
        "refusing to run `{command}`: the configuration requires a sandbox, but {reason}; \
         nothing was run"
    )]
    SandboxRequired {
        /// The command (shortened for display).
        command: String,
        /// Why Landlock is unavailable.
        reason: String,
    },
    /// Landlock is available but the ruleset for this run could not be built; nothing ran.
    #[error("cannot prepare the Landlock sandbox for `{command}`: {reason}; nothing was run")]
    SandboxSetup {
        /// The command (shortened for display).
        command: String,
        /// What went wrong.
        reason: String,
    },
    /// The project root cannot serve as the working directory.
    #[error("cannot run commands in {}: {source}", path.display())]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The underlying failure.
        source: io::Error,
    },
    /// The shell could not be started (or the sandbox could not be applied in the child).
    #[error("cannot start `{command}`{}: {source}", if *confined { " in the Landlock sandbox" } else { "" })]
    Spawn {
        /// The command (shortened for display).
        command: String,
        /// Whether the start included confining the child with Landlock.
        confined: bool,
        /// The underlying failure.
        source: io::Error,
    },
    /// Reading the command's output or waiting for it failed.
    #[error("lost track of `{command}` while it ran: {source}")]
    Io {
        /// The command (shortened for display).
        command: String,
        /// The underlying failure.
        source: io::Error,
    },
}

/// The command as shown in messages: its first line, at most 80 characters.
fn display_command(command: &str) -> String {
    const MAX: usize = 80;
    let first = command.trim().lines().next().unwrap_or("");
    let more_lines = command.trim().lines().nth(1).is_some();
    match first.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if more_lines => format!("{first} …"),
        None => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_command_shortens_long_and_multiline_commands() {
        assert_eq!(display_command("  cargo test  "), "cargo test");
        assert_eq!(display_command("echo a\necho b"), "echo a …");
        let long = "x".repeat(100);
        let shown = display_command(&long);
        assert_eq!(shown.chars().count(), 81);
        assert!(shown.ends_with('…'));
        assert_eq!(display_command("é".repeat(90).as_str()).chars().count(), 81);
    }

    #[test]
    fn refusals_say_what_was_refused_and_why() {
        let err = ExecError::SandboxRequired {
            command: "cargo test".into(),
            reason: "Landlock is not enabled in this kernel".into(),
        };
        assert_eq!(
            err.to_string(),
            "refusing to run `cargo test`: the configuration requires a sandbox, but Landlock is \
             not enabled in this kernel; nothing was run"
        );
        let err = ExecError::Spawn {
            command: "x".into(),
            confined: true,
            source: io::Error::from_raw_os_error(libc::E2BIG),
        };
        assert!(
            err.to_string()
                .starts_with("cannot start `x` in the Landlock sandbox: ")
        );
    }
}
