//! Turning the event stream into terminal text, with the little state that needs: streamed
//! reply text is word-wrapped as it arrives and not repeated when the full reply follows, and a
//! header opens each phase's step results. Shared by the text and interactive frontends.

use super::layout::{Theme, clean, display_width};
use super::render;
use crate::agent::protocol::Event;

/// Word-wraps text that arrives in pieces, so streamed replies respect the width too. A word
/// (and the space before it) is held back until the space after it arrives, or
/// [`StreamWrap::finish`], since only then is it known whether it fits.
#[derive(Debug, Default)]
pub struct StreamWrap {
    width: usize,
    column: usize,
    word: String,
    space: bool,
}

impl StreamWrap {
    /// A wrapper for a terminal `width` columns wide.
    pub fn new(width: usize) -> Self {
        Self {
            width: width.max(1),
            ..Self::default()
        }
    }

    /// Feed a piece; returns what can be printed now.
    pub fn feed(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in clean(text).chars() {
            match c {
                '\n' => {
                    self.flush_word(&mut out);
                    out.push('\n');
                    self.column = 0;
                    self.space = false;
                }
                ' ' => {
                    self.flush_word(&mut out);
                    self.space = self.column > 0;
                }
                c => self.word.push(c),
            }
        }
        out
    }

    /// The held-back word and a final newline when the line is open.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.flush_word(&mut out);
        self.space = false;
        if self.column > 0 {
            out.push('\n');
            self.column = 0;
        }
        out
    }

    fn flush_word(&mut self, out: &mut String) {
        if self.word.is_empty() {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let w = display_width(&word);
        if self.space {
            if self.column + 1 + w <= self.width {
                out.push(' ');
                self.column += 1;
            } else {
                out.push('\n');
                self.column = 0;
            }
            self.space = false;
        }
        for c in word.chars() {
            let cw = display_width(c.encode_utf8(&mut [0; 4]));
            if self.column + cw > self.width && self.column > 0 {
                out.push('\n');
                self.column = 0;
            }
            out.push(c);
            self.column += cw;
        }
    }
}

/// Renders events in order, remembering what has been streamed and which phase's results are
/// being shown.
#[derive(Debug, Default)]
pub struct Presenter {
    stream: Option<StreamWrap>,
    streamed: bool,
    /// The text streamed since the last model call started: when the turn's final message
    /// is that same text (an answer in a later phase), it is not shown a second time.
    streamed_text: String,
    phase_shown: Option<u32>,
    /// The RUN step (phase, index) whose output lines were printed as they came: its result
    /// then shows only how the command ended, not the output again.
    live: Option<(u32, usize)>,
    /// Print a line for [`Event::Thinking`] (frontends without a spinner).
    pub thinking_lines: bool,
}

impl Presenter {
    /// A presenter; `thinking_lines` prints a line when a model call starts.
    pub fn new(thinking_lines: bool) -> Self {
        Self {
            thinking_lines,
            ..Self::default()
        }
    }

    /// Whether streamed text is being printed (a line is open).
    pub fn streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Close an open stream (before a prompt or an error is shown).
    pub fn end_stream(&mut self) -> String {
        match self.stream.take() {
            Some(mut s) => s.finish(),
            None => String::new(),
        }
    }

    /// The text for one event.
    pub fn event(&mut self, event: &Event, theme: &Theme) -> String {
        if render::is_silent(event) {
            return String::new();
        }
        if let Event::TextDelta { text } = event {
            self.streamed = true;
            self.streamed_text.push_str(text);
            let stream = self
                .stream
                .get_or_insert_with(|| StreamWrap::new(theme.cols()));
            return stream.feed(text);
        }
        let mut out = self.end_stream();
        match event {
            Event::Thinking { phase } => {
                self.streamed = false;
                self.streamed_text.clear();
                if self.thinking_lines {
                    out.push_str(&render::thinking(*phase, theme));
                }
            }
            Event::Answer { text } => {
                if !self.streamed {
                    out.push_str(&render::reply(text, theme));
                }
            }
            Event::Plan {
                phase,
                reply,
                analysis,
                complexity,
                steps,
                observe,
            } => {
                if !self.streamed && !reply.trim().is_empty() {
                    out.push_str(&render::reply(reply, theme));
                }
                out.push_str(&render::plan(
                    *phase,
                    analysis,
                    *complexity,
                    steps,
                    *observe,
                    theme,
                ));
            }
            Event::Step(report) => {
                self.phase_header(report.phase, theme, &mut out);
                if self.live.take() == Some((report.phase, report.index)) {
                    let mut shown = report.clone();
                    shown.output = without_output(&report.output);
                    out.push_str(&render::step(&shown, theme));
                } else {
                    out.push_str(&render::step(report, theme));
                }
            }
            Event::RunStarted { phase, command, .. } => {
                self.phase_header(*phase, theme, &mut out);
                out.push_str(&render::run_started(command, theme));
            }
            Event::RunOutput { phase, index, line } => {
                self.live = Some((*phase, *index));
                out.push_str(&render::run_output_line(line, theme));
            }
            Event::Finished { message, .. } => {
                self.phase_shown = None;
                self.streamed = false;
                let streamed = std::mem::take(&mut self.streamed_text);
                if !message.trim().is_empty() && message.trim() == streamed.trim() {
                    let mut shown = event.clone();
                    if let Event::Finished { message, .. } = &mut shown {
                        message.clear();
                    }
                    out.push_str(&render::event(&shown, theme));
                } else {
                    out.push_str(&render::event(event, theme));
                }
            }
            other => out.push_str(&render::event(other, theme)),
        }
        out
    }
}

impl Presenter {
    /// The phase header before a RUN whose output a live panel shows (instead of the
    /// streamed lines [`Presenter::event`] would print), with any open stream closed.
    pub fn run_header(&mut self, phase: u32, theme: &Theme) -> String {
        let mut out = self.end_stream();
        self.phase_header(phase, theme, &mut out);
        out
    }

    fn phase_header(&mut self, phase: u32, theme: &Theme, out: &mut String) {
        if self.phase_shown != Some(phase) {
            self.phase_shown = Some(phase);
            out.push_str(&render::execution_header(phase, theme));
        }
    }
}

/// A RUN result without the output already shown live: how it ended (and the sandbox note).
fn without_output(summary: &str) -> String {
    let head = match summary.find("\noutput:\n") {
        Some(i) => &summary[..i],
        None => summary,
    };
    head.strip_suffix("\nno output").unwrap_or(head).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_all(width: usize, pieces: &[&str]) -> String {
        let mut s = StreamWrap::new(width);
        let mut out: String = pieces.iter().map(|p| s.feed(p)).collect();
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn streamed_text_wraps_at_words_whatever_the_pieces() {
        let text = "the quick brown fox jumps over the lazy dog";
        let whole = stream_all(12, &[text]);
        assert_eq!(whole, "the quick\nbrown fox\njumps over\nthe lazy dog\n");
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(stream_all(12, &refs), whole);
    }

    #[test]
    fn streamed_lines_never_exceed_the_width() {
        let out = stream_all(10, &["a ", &"x".repeat(35), " bb\ncc dd"]);
        for line in out.lines() {
            assert!(display_width(line) <= 10, "{line:?}");
        }
        assert!(out.ends_with("cc dd\n"));
    }

    #[test]
    fn streamed_escape_sequences_are_neutralised() {
        assert!(!stream_all(80, &["hi \u{1b}[2J there"]).contains('\u{1b}'));
    }

    #[test]
    fn a_streamed_answer_is_not_repeated() {
        let theme = Theme::plain(60);
        let mut p = Presenter::new(false);
        let mut out = p.event(&Event::Thinking { phase: 1 }, &theme);
        out.push_str(&p.event(
            &Event::TextDelta {
                text: "Hello there".into(),
            },
            &theme,
        ));
        out.push_str(&p.event(
            &Event::Answer {
                text: "Hello there".into(),
            },
            &theme,
        ));
        assert_eq!(out, "Hello there\n");
        // The next turn's answer, not streamed, is shown in full.
        p.event(&Event::Thinking { phase: 1 }, &theme);
        let out = p.event(&Event::Answer { text: "Hi".into() }, &theme);
        assert!(out.contains("| Hi"), "{out}");
    }
}
