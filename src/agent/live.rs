//! A RUN command's output as it arrives: raw pieces from the pipe cut into lines for the
//! frontends (live panel, streamed text, `run_output` JSON events) and the session log.
//!
//! Lines are what a terminal would show: a carriage return (progress bars) keeps only what
//! follows it, invalid UTF-8 is replaced, and known secrets and credential-shaped text are redacted before a line leaves.
//! A line that never ends (a program printing without newlines) is cut every [`MAX_LINE`]
//! bytes so it still shows up while the command runs.

use std::sync::Mutex;

use super::events::{Event, Frontend, StepReport};

/// Bytes after which an unfinished line is emitted anyway.
pub const MAX_LINE: usize = 4096;

/// Cuts a byte stream into display lines.
#[derive(Debug, Default)]
pub struct LineSplitter {
    pending: Vec<u8>,
    redactor: crate::exec::LineRedactor,
}

impl LineSplitter {
    /// A splitter that redacts every secret of at least 8 characters and credential-shaped
    /// text (see [`crate::exec::redact`]).
    pub fn new(secrets: &[String]) -> Self {
        Self {
            pending: Vec::new(),
            redactor: crate::exec::LineRedactor::new(secrets),
        }
    }

    /// Feed a piece of output; returns the lines it completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.pending);
                lines.push(self.finish_line(&line));
            } else {
                self.pending.push(b);
                if self.pending.len() >= MAX_LINE {
                    let line = std::mem::take(&mut self.pending);
                    lines.push(self.finish_line(&line));
                }
            }
        }
        lines
    }

    /// The last, unterminated line, if any (at the end of the command).
    pub fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let line = std::mem::take(&mut self.pending);
        Some(self.finish_line(&line))
    }

    fn finish_line(&mut self, raw: &[u8]) -> String {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        // What a terminal shows after carriage returns: the text after the last one.
        let shown = match raw.iter().rposition(|&b| b == b'\r') {
            Some(i) => &raw[i + 1..],
            None => raw,
        };
        self.redactor.line(&String::from_utf8_lossy(shown))
    }
}

/// A running command's output on its way to the frontend (and so the session log), line by
/// line.
pub(super) struct LiveRun<'a> {
    frontend: &'a dyn Frontend,
    phase: u32,
    index: usize,
    state: Mutex<LineSplitter>,
}

impl<'a> LiveRun<'a> {
    /// Follow the RUN step `report` of `command`.
    pub(super) fn new(frontend: &'a dyn Frontend, report: &StepReport, secrets: &[String]) -> Self {
        Self {
            frontend,
            phase: report.phase,
            index: report.index,
            state: Mutex::new(LineSplitter::new(secrets)),
        }
    }

    /// A piece of output as read from the pipe.
    pub(super) fn feed(&self, bytes: &[u8]) {
        let lines = match self.state.lock() {
            Ok(mut st) => st.feed(bytes),
            Err(_) => return,
        };
        self.emit(lines);
    }

    /// The command ended: emit its unterminated last line.
    pub(super) fn finish(&self) {
        let last = match self.state.lock() {
            Ok(mut st) => st.finish(),
            Err(_) => None,
        };
        self.emit(last.into_iter().collect());
    }

    fn emit(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        for line in lines {
            self.frontend.event(&Event::RunOutput {
                phase: self.phase,
                index: self.index,
                line,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_wherever_the_pieces_end() {
        let mut s = LineSplitter::new(&[]);
        assert!(s.feed(b"hel").is_empty());
        assert_eq!(s.feed(b"lo\nwor"), vec!["hello"]);
        assert_eq!(s.feed(b"ld\r\n\n"), vec!["world", ""]);
        assert_eq!(s.feed(b"tail"), Vec::<String>::new());
        assert_eq!(s.finish().as_deref(), Some("tail"));
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn progress_bars_keep_their_last_state_and_secrets_are_redacted() {
        let mut s = LineSplitter::new(&["sk-secret-123456".to_string(), "short".to_string()]);
        assert_eq!(s.feed(b"10%\r50%\r100%\n"), vec!["100%"]);
        assert_eq!(
            s.feed(b"key=sk-secret-123456 short\n"),
            vec!["key=[REDACTED] short"]
        );
    }

    #[test]
    fn an_endless_line_still_shows_up() {
        let mut s = LineSplitter::new(&[]);
        let lines = s.feed(&vec![b'x'; MAX_LINE + 10]);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(s.finish().map(|l| l.len()), Some(10));
    }
}
