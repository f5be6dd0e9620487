//! Rendering and input: the only module that talks to the terminal.
//!
//! The agent reports what happens as [`crate::agent::protocol::Event`]s and asks for approvals
//! through [`crate::agent::protocol::Frontend`]; this module has three frontends over that one
//! stream: [`json::JsonFrontend`] (`pai run --json`), [`text::TextFrontend`] (`pai run`) and the
//! interactive session ([`interactive::run_interactive`], `pai` / `pai auto`), which drives a
//! session through the [`interactive::SessionDriver`] trait. All of them draw with the pure
//! functions of [`render`].

pub mod highlight;
pub mod interactive;
pub mod json;
pub mod layout;
pub mod leftover_text;
pub mod log_text;
pub mod output;
pub mod present;
mod prompt;
pub mod render;
pub mod safe;
pub mod session_end;
pub mod stream;
mod terminal;
pub mod text;

use std::path::PathBuf;

use crate::config::Env;

pub use interactive::{InteractiveOptions, SessionDriver, run_interactive};

/// What the welcome panel shows about the session.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// The project root.
    pub root: PathBuf,
    /// The provider (`gemini`).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The session branch (`pai/20250101_120000`), when the session can write.
    pub branch: Option<String>,
    /// Why the session is read-only, when it is.
    pub read_only: Option<String>,
}

/// How output should look, decided once from the environment: plain when `NO_COLOR` is set
/// (even empty) or `TERM=dumb`; 24-bit colour when `COLORTERM` says the terminal has it.
/// Whether stdout is a terminal is checked by each frontend on top of this.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Appearance {
    /// No colour, no spinner, no escape sequences, ASCII borders.
    pub plain: bool,
    /// The terminal takes 24-bit colour.
    pub truecolor: bool,
}

impl Appearance {
    /// Read `NO_COLOR`, `TERM` and `COLORTERM`.
    pub fn from_env(env: &Env) -> Self {
        Self {
            plain: env.is_set("NO_COLOR") || env.get("TERM") == Some("dumb"),
            truecolor: matches!(env.get("COLORTERM"), Some("truecolor" | "24bit")),
        }
    }
}

/// Write text to stdout and flush it; a closed stdout (a pipe whose reader left) is not an
/// error worth stopping a turn for.
fn print_out(text: &str) {
    stream::out(text);
}

/// The same for stderr.
fn print_err(text: &str) {
    stream::err(text);
}

/// The width of the terminal on stdout, if it is one. Asked before each rendering so a
/// resize mid-turn applies to what comes next.
fn stdout_width() -> Option<usize> {
    let term = console::Term::stdout();
    if !term.is_term() {
        return None;
    }
    term.size_checked().map(|(_, cols)| usize::from(cols))
}

/// Run a blocking call (the line editor, a prompt) from inside the runtime without stalling
/// its other tasks (the Ctrl+C listener among them). On a current-thread runtime, where that
/// is impossible, the call just blocks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Width used when stdout is not a terminal.
const DEFAULT_WIDTH: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appearance_follows_no_color_and_term() {
        let plain = |pairs: &[(&str, &str)]| {
            Appearance::from_env(&Env::from_pairs(pairs.iter().copied())).plain
        };
        assert!(plain(&[("NO_COLOR", "")]));
        assert!(plain(&[("NO_COLOR", "1")]));
        assert!(plain(&[("TERM", "dumb")]));
        assert!(!plain(&[("TERM", "xterm-256color")]));
        let env = Env::from_pairs([("COLORTERM", "truecolor")]);
        assert!(Appearance::from_env(&env).truecolor);
    }
}
