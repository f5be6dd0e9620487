//! Plain line output for non-interactive commands: results on stdout, warnings and errors on
//! stderr, colour only on a terminal without `NO_COLOR`. A closed pipe (`pai log | head`) is
//! not an error, and no write can panic: everything goes through [`super::stream`].

use std::io::IsTerminal;

use console::style;

use crate::config::Env;
use crate::error::Error;

use super::safe::terminal_text;
use super::stream;

/// Where non-interactive commands print.
#[derive(Debug, Clone)]
pub struct Output {
    color_out: bool,
    color_err: bool,
}

impl Output {
    /// Decide colour once, from the environment and whether the streams are terminals.
    pub fn new(env: &Env) -> Self {
        let plain = env.is_set("NO_COLOR") || env.get("TERM") == Some("dumb");
        Self {
            color_out: !plain && std::io::stdout().is_terminal(),
            color_err: !plain && std::io::stderr().is_terminal(),
        }
    }

    /// Whether stdout gets colour.
    pub fn color(&self) -> bool {
        self.color_out
    }

    /// One line of results on stdout (made safe for the terminal: [`terminal_text`]).
    pub fn line(&self, text: &str) {
        stream::out(&format!("{}\n", terminal_text(text)));
    }

    /// One line of JSON on stdout: its encoding already escapes every control character, and
    /// its strings must stay as they are.
    pub fn json_line(&self, json: &str) {
        stream::out(&format!("{json}\n"));
    }

    /// Text on stdout as it is, but made safe for the terminal ([`terminal_text`]): what came
    /// from the repository or the model (`pai log`, a server's tool list).
    pub fn text(&self, text: &str) {
        stream::out(&terminal_text(text));
    }

    /// Bytes on stdout as they are (completion scripts, never text from a repository).
    pub fn raw(&self, bytes: &[u8]) {
        stream::write(stream::Stream::Out, bytes);
    }

    /// A warning on stderr.
    pub fn warning(&self, text: &str) {
        let label = if self.color_err {
            style("warning:").yellow().bold().to_string()
        } else {
            "warning:".into()
        };
        stream::err(&format!("{label} {}\n", terminal_text(text)));
    }

    /// Several warnings.
    pub fn warnings(&self, texts: &[String]) {
        for text in texts {
            self.warning(text);
        }
    }

    /// A progress line on stderr, rewritten in place on a terminal (an empty text clears it);
    /// nothing when stderr is not a terminal, where a rewritten line would only be noise.
    pub fn progress(&self, text: &str) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        stream::err(&format!("\r\x1b[2K{}", crate::ui::layout::clean(text)));
    }

    /// An informational note on stderr.
    pub fn note(&self, text: &str) {
        let label = if self.color_err {
            style("note:").cyan().to_string()
        } else {
            "note:".into()
        };
        stream::err(&format!("{label} {}\n", terminal_text(text)));
    }

    /// An error and its hint on stderr.
    pub fn error(&self, err: &Error) {
        let label = if self.color_err {
            style("error:").red().bold().to_string()
        } else {
            "error:".into()
        };
        stream::err(&format!("{label} {}\n", terminal_text(err.message())));
        if let Some(hint) = err.hint() {
            let label = if self.color_err {
                style("hint:").cyan().to_string()
            } else {
                "hint:".into()
            };
            stream::err(&format!("  {label} {}\n", terminal_text(hint)));
        }
    }
}
