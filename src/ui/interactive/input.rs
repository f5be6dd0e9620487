//! Reading requests. On a capable terminal, a line editor (rustyline): Enter submits,
//! Alt+Enter inserts a newline, Up/Down walk the history, Ctrl+C clears the line, Ctrl+D on an
//! empty line leaves. In plain mode (NO_COLOR, TERM=dumb, or no terminal) the editor would
//! still emit cursor escape sequences, so lines are read as they come, by a reader thread, and
//! a line ending in `\` (or in the ESC that Alt+Enter sends) continues on the next one. Both
//! keep the history in the same file format, one file per project.

use std::io::BufRead;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustyline::config::{Builder, Config, EditMode};
use rustyline::error::ReadlineError;
use rustyline::history::{FileHistory, History};
use rustyline::{Cmd, Editor, EventHandler, KeyCode, KeyEvent, Modifiers};
use tokio_util::sync::CancellationToken;

use super::history_file::HistoryFile;
use super::signals::Interrupts;
use crate::ui::prompt::LineSource;
use crate::ui::{blocking, print_out};

/// Entries kept in the history file.
const HISTORY_SIZE: usize = 1000;
/// How often plain reading looks for a line or a cancellation.
const POLL: Duration = Duration::from_millis(15);

/// What one read produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    /// A submitted request (possibly several lines).
    Line(String),
    /// Ctrl+C at the prompt, at this time.
    Interrupted(Instant),
    /// End of input (Ctrl+D, closed stdin).
    Eof,
}

/// The request reader of a session.
pub(crate) struct LineInput {
    mode: Mode,
    history: Option<HistoryFile>,
}

enum Mode {
    Editor(Box<Editor<(), FileHistory>>),
    Plain {
        lines: Arc<PlainLines>,
        history: Box<FileHistory>,
    },
}

fn config() -> Config {
    let builder = Builder::new()
        .auto_add_history(false)
        .edit_mode(EditMode::Emacs)
        .bracketed_paste(true);
    let builder = match builder.max_history_size(HISTORY_SIZE) {
        Ok(b) => b,
        Err(_) => Builder::new().auto_add_history(false),
    };
    builder.build()
}

impl LineInput {
    /// A reader: the line editor when `rich`, plain lines otherwise. `history`: the file to
    /// load and append to.
    pub(crate) fn new(rich: bool, history: Option<HistoryFile>) -> Self {
        let past = history
            .as_ref()
            .map(|h| h.load(HISTORY_SIZE))
            .unwrap_or_default();
        let mode = if rich {
            match Editor::<(), FileHistory>::with_config(config()) {
                Ok(mut editor) => {
                    editor.bind_sequence(
                        KeyEvent(KeyCode::Enter, Modifiers::ALT),
                        EventHandler::Simple(Cmd::Newline),
                    );
                    for entry in &past {
                        let _ = editor.add_history_entry(entry.as_str());
                    }
                    Mode::Editor(Box::new(editor))
                }
                Err(_) => Self::plain_mode(&past),
            }
        } else {
            Self::plain_mode(&past)
        };
        Self { mode, history }
    }

    fn plain_mode(past: &[String]) -> Mode {
        let mut file = FileHistory::with_config(&config());
        for entry in past {
            let _ = file.add(entry);
        }
        Mode::Plain {
            lines: PlainLines::start(),
            history: Box::new(file),
        }
    }

    /// Whether the line editor is active (Alt+Enter and history keys work).
    pub(crate) fn rich(&self) -> bool {
        matches!(self.mode, Mode::Editor(_))
    }

    /// Where plain approval answers come from (plain mode only: the editor's terminal is
    /// asked directly).
    pub(crate) fn line_source(&self) -> Option<Arc<dyn LineSource>> {
        match &self.mode {
            Mode::Editor(_) => None,
            Mode::Plain { lines, .. } => Some(Arc::clone(lines) as Arc<dyn LineSource>),
        }
    }

    /// Read one request after showing `prompt`.
    pub(crate) async fn read(&mut self, prompt: &str, interrupts: &mut Interrupts) -> Read {
        match &mut self.mode {
            Mode::Editor(editor) => loop {
                match blocking(|| editor.readline(prompt)) {
                    Ok(line) => return Read::Line(line),
                    Err(ReadlineError::Interrupted) => return Read::Interrupted(Instant::now()),
                    Err(ReadlineError::Signal(_)) => continue,
                    Err(_) => return Read::Eof,
                }
            },
            Mode::Plain { lines, .. } => {
                // Presses from before the prompt appeared belong to the turn that just ended.
                while interrupts.try_next().is_some() {}
                print_out(prompt);
                let mut text = String::new();
                loop {
                    let line = tokio::select! {
                        line = lines.next() => line,
                        at = interrupts.next() => {
                            print_out("\n");
                            return Read::Interrupted(at);
                        }
                    };
                    let Some(line) = line else {
                        if text.is_empty() {
                            return Read::Eof;
                        }
                        return Read::Line(text);
                    };
                    match continued(&line) {
                        Some(head) => {
                            text.push_str(head);
                            text.push('\n');
                        }
                        None => {
                            text.push_str(&line);
                            return Read::Line(text);
                        }
                    }
                }
            }
        }
    }

    /// Add a submitted line to the history and append it to the file.
    pub(crate) fn remember(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        match &mut self.mode {
            Mode::Editor(editor) => {
                let _ = editor.add_history_entry(line);
            }
            Mode::Plain { history, .. } => {
                let _ = history.add(line);
            }
        }
        if let Some(file) = &self.history {
            file.append(line);
        }
    }
}

/// The text before a continuation mark (`\` or the ESC of Alt+Enter in cooked mode), if the
/// line ends with one.
fn continued(line: &str) -> Option<&str> {
    line.strip_suffix('\\')
        .or_else(|| line.strip_suffix('\u{1b}'))
}

/// Lines of stdin read by a thread, so waiting for one can be combined with Ctrl+C and
/// cancellation. `None` marks the end of input.
pub(crate) struct PlainLines {
    rx: Mutex<Receiver<Option<String>>>,
    ended: Mutex<bool>,
}

impl PlainLines {
    fn start() -> Arc<Self> {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.lock().read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        break;
                    }
                    Ok(_) => {
                        let line = line.trim_end_matches(['\n', '\r']).to_string();
                        if tx.send(Some(line)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Arc::new(Self {
            rx: Mutex::new(rx),
            ended: Mutex::new(false),
        })
    }

    /// A line if one is ready: `Some(Some(line))`, `Some(None)` at the end of input.
    fn poll(&self) -> Option<Option<String>> {
        if self.ended.lock().map(|e| *e).unwrap_or(false) {
            return Some(None);
        }
        let got = match self.rx.lock() {
            Ok(rx) => rx.try_recv(),
            Err(_) => Err(TryRecvError::Disconnected),
        };
        match got {
            Ok(Some(line)) => Some(Some(line)),
            Ok(None) | Err(TryRecvError::Disconnected) => {
                if let Ok(mut ended) = self.ended.lock() {
                    *ended = true;
                }
                Some(None)
            }
            Err(TryRecvError::Empty) => None,
        }
    }

    async fn next(&self) -> Option<String> {
        loop {
            if let Some(line) = self.poll() {
                return line;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl LineSource for PlainLines {
    fn read_line(&self, cancel: Option<&CancellationToken>) -> Option<String> {
        loop {
            if let Some(line) = self.poll() {
                return line;
            }
            if cancel.is_some_and(CancellationToken::is_cancelled) {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_marks() {
        assert_eq!(continued("first \\"), Some("first "));
        assert_eq!(continued("first\u{1b}"), Some("first"));
        assert_eq!(continued("done"), None);
    }
}
