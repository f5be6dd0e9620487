//! Styled text laid out for a terminal of a known width: spans with optional styles, word and
//! hard wrapping that never exceeds the width, and bordered panels. Everything here is pure so
//! renderings can be compared as strings in tests; colour is applied only when the theme says
//! so, and text from the model or from files is cleaned of control characters first (a reply
//! must not be able to move the cursor, clear the screen or retitle the terminal).

use console::Style;
use unicode_width::UnicodeWidthChar;

/// Widest a panel gets, however wide the terminal: long lines are harder to read.
pub const MAX_PANEL_WIDTH: usize = 100;
/// Narrowest layout attempted; a terminal narrower than this will wrap lines itself.
pub const MIN_WIDTH: usize = 24;
/// Spaces a tab becomes (a tab's width depends on its column, which breaks layout).
const TAB: &str = "    ";

/// How to draw: the terminal width, whether to use colour, and whether box-drawing characters
/// and marks like ✓ are safe (plain mode falls back to ASCII).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Columns available.
    pub width: usize,
    /// Emit colour escape sequences.
    pub color: bool,
    /// Use Unicode borders and marks.
    pub unicode: bool,
    /// The terminal takes 24-bit colour (`COLORTERM=truecolor`); otherwise 256 colours.
    pub truecolor: bool,
    /// Cut diff and command-output lines at the width (a terminal); otherwise they are
    /// printed whole, as the file or the command has them.
    pub wrap_code: bool,
}

impl Theme {
    /// No colour, ASCII only: the rendering tests compare against this.
    pub fn plain(width: usize) -> Self {
        Self {
            width,
            color: false,
            unicode: false,
            truecolor: false,
            wrap_code: true,
        }
    }

    /// Colour and Unicode.
    pub fn rich(width: usize) -> Self {
        Self {
            width,
            color: true,
            unicode: true,
            truecolor: false,
            wrap_code: true,
        }
    }

    /// The width layout works with: the terminal's, but never below [`MIN_WIDTH`].
    pub fn cols(&self) -> usize {
        self.width.max(MIN_WIDTH)
    }

    /// Total width of a panel, borders included.
    pub fn panel_width(&self) -> usize {
        self.cols().min(MAX_PANEL_WIDTH)
    }

    /// Width of a panel's content (inside `│ ` and ` │`).
    pub fn panel_inner(&self) -> usize {
        self.panel_width() - 4
    }

    /// Apply a style when colour is on.
    pub fn paint(&self, text: &str, style: &Style) -> String {
        if self.color {
            style.clone().force_styling(true).apply_to(text).to_string()
        } else {
            text.to_string()
        }
    }

    /// The success mark.
    pub fn ok_mark(&self) -> &'static str {
        if self.unicode { "✓" } else { "[ok]" }
    }

    /// The failure mark.
    pub fn fail_mark(&self) -> &'static str {
        if self.unicode { "✗" } else { "[FAIL]" }
    }

    /// A bullet for lists.
    pub fn bullet(&self) -> &'static str {
        if self.unicode { "•" } else { "-" }
    }

    /// The ellipsis.
    pub fn ellipsis(&self) -> &'static str {
        if self.unicode { "…" } else { "..." }
    }

    /// An arrow between tokens in and out.
    pub fn arrow(&self) -> &'static str {
        "->"
    }

    fn borders(&self) -> Borders {
        if self.unicode {
            Borders {
                top_left: "╭",
                top_right: "╮",
                bottom_left: "╰",
                bottom_right: "╯",
                horizontal: "─",
                vertical: "│",
            }
        } else {
            Borders {
                top_left: "+",
                top_right: "+",
                bottom_left: "+",
                bottom_right: "+",
                horizontal: "-",
                vertical: "|",
            }
        }
    }

    /// A horizontal rule with a label, the full layout width: `── label ─────`.
    pub fn rule(&self, label: &str, style: &Style) -> String {
        let b = self.borders();
        let label = truncate(&clean(label), self.cols().saturating_sub(4));
        let used = 3 + display_width(&label) + 1;
        let rest = self.cols().min(MAX_PANEL_WIDTH).saturating_sub(used);
        format!(
            "{}{}{}\n",
            self.paint(
                &format!("{}{} ", b.horizontal, b.horizontal),
                &Style::new().dim()
            ),
            self.paint(&label, style),
            self.paint(
                &format!(" {}", b.horizontal.repeat(rest)),
                &Style::new().dim()
            )
        )
    }
}

struct Borders {
    top_left: &'static str,
    top_right: &'static str,
    bottom_left: &'static str,
    bottom_right: &'static str,
    horizontal: &'static str,
    vertical: &'static str,
}

/// A run of text in one style.
#[derive(Debug, Clone, Default)]
pub struct Span {
    /// The text (already cleaned, no newlines).
    pub text: String,
    /// Its style, if any.
    pub style: Option<Style>,
}

/// One line of styled spans.
#[derive(Debug, Clone, Default)]
pub struct Line(pub Vec<Span>);

impl Line {
    /// An empty line.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// A line of unstyled text.
    pub fn plain(text: &str) -> Self {
        Self::new().text(text)
    }

    /// A line of text in one style.
    pub fn styled(text: &str, style: Style) -> Self {
        Self::new().with(text, style)
    }

    /// Append unstyled text (cleaned; newlines become spaces).
    pub fn text(mut self, text: &str) -> Self {
        self.push(text, None);
        self
    }

    /// Append styled text.
    pub fn with(mut self, text: &str, style: Style) -> Self {
        self.push(text, Some(style));
        self
    }

    /// Append text in place.
    pub fn push(&mut self, text: &str, style: Option<Style>) {
        let text = clean(text).replace('\n', " ");
        if !text.is_empty() {
            self.0.push(Span { text, style });
        }
    }

    /// Columns the line takes.
    pub fn width(&self) -> usize {
        self.0.iter().map(|s| display_width(&s.text)).sum()
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|s| s.text.is_empty())
    }

    /// The line as terminal text (no newline).
    pub fn render(&self, theme: &Theme) -> String {
        let mut out = String::new();
        for span in &self.0 {
            match &span.style {
                Some(style) => out.push_str(&theme.paint(&span.text, style)),
                None => out.push_str(&span.text),
            }
        }
        out
    }
}

/// Make text safe to print: tabs become spaces, carriage returns go, and every other control
/// character (ESC included, so no escape sequence survives) and bidirectional override becomes
/// `?`. Newlines are kept.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\r' => {}
            c if c.is_control() => out.push('?'),
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' => {
                out.push('?')
            }
            c => out.push(c),
        }
    }
    out
}

/// Columns a string takes (no escape sequences expected).
pub fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Cut text to at most `width` columns, marking the cut with `...`.
pub fn truncate(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(3);
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w > keep {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push_str(&"...".chars().take(width.min(3)).collect::<String>());
    out
}

/// Lines of text, one [`Line`] per newline-separated line, all in one style.
pub fn paragraphs(text: &str, style: Option<Style>) -> Vec<Line> {
    clean(text)
        .trim_end_matches('\n')
        .split('\n')
        .map(|l| {
            let mut line = Line::new();
            line.push(l, style.clone());
            line
        })
        .collect()
}

/// Word-wrap a line to `width` columns. Continuation lines start with `indent` spaces; words
/// longer than a line are split. Leading spaces of the first line are kept (indentation means
/// something in lists), spaces at a break are dropped.
pub fn wrap(line: &Line, width: usize, indent: usize) -> Vec<Line> {
    let width = width.max(1);
    // A continuation line must have room for at least one wide character after its indent.
    let indent = if indent + 2 > width { 0 } else { indent };
    let mut lines = Vec::new();
    let mut current = Line::new();
    let mut used = 0;
    let mut continuation = false;

    let new_line = |lines: &mut Vec<Line>, current: &mut Line, used: &mut usize| {
        lines.push(std::mem::take(current));
        current.0.push(Span {
            text: " ".repeat(indent),
            style: None,
        });
        *used = indent;
    };

    for span in &line.0 {
        for token in tokens(&span.text) {
            let tw = display_width(token);
            let is_space = token.starts_with(' ');
            if is_space {
                if continuation && used == indent {
                    continue;
                }
                if used + tw <= width {
                    push_span(&mut current, token, &span.style);
                    used += tw;
                } else {
                    new_line(&mut lines, &mut current, &mut used);
                    continuation = true;
                }
                continue;
            }
            if used + tw > width && used > if continuation { indent } else { 0 } {
                trim_trailing_spaces(&mut current);
                new_line(&mut lines, &mut current, &mut used);
                continuation = true;
            }
            if used + tw <= width {
                push_span(&mut current, token, &span.style);
                used += tw;
                continue;
            }
            // A word longer than the line: split it by characters.
            for c in token.chars() {
                let cw = char_width(c);
                if used + cw > width && used > if continuation { indent } else { 0 } {
                    new_line(&mut lines, &mut current, &mut used);
                    continuation = true;
                }
                push_span(&mut current, &c.to_string(), &span.style);
                used += cw;
            }
        }
    }
    trim_trailing_spaces(&mut current);
    lines.push(current);
    lines
}

/// [`wrap_hard`] on a terminal; the line whole when the theme does not cut code lines.
pub fn wrap_code(line: &Line, theme: &Theme, indent: usize) -> Vec<Line> {
    if theme.wrap_code {
        wrap_hard(line, theme.cols(), indent)
    } else {
        vec![line.clone()]
    }
}

/// Wrap a line at exactly `width` columns without looking for word breaks (code, diffs).
pub fn wrap_hard(line: &Line, width: usize, indent: usize) -> Vec<Line> {
    let width = width.max(1);
    // A continuation line must have room for at least one wide character after its indent.
    let indent = if indent + 2 > width { 0 } else { indent };
    let mut lines = Vec::new();
    let mut current = Line::new();
    let mut used = 0;
    for span in &line.0 {
        for c in span.text.chars() {
            let cw = char_width(c);
            if used + cw > width && used > 0 {
                lines.push(std::mem::take(&mut current));
                current.0.push(Span {
                    text: " ".repeat(indent),
                    style: None,
                });
                used = indent;
            }
            push_span(&mut current, &c.to_string(), &span.style);
            used += cw;
        }
    }
    lines.push(current);
    lines
}

fn push_span(line: &mut Line, text: &str, style: &Option<Style>) {
    if let Some(last) = line.0.last_mut()
        && styles_equal(&last.style, style)
    {
        last.text.push_str(text);
        return;
    }
    line.0.push(Span {
        text: text.to_string(),
        style: style.clone(),
    });
}

fn styles_equal(a: &Option<Style>, b: &Option<Style>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn trim_trailing_spaces(line: &mut Line) {
    while let Some(last) = line.0.last_mut() {
        let trimmed = last.text.trim_end_matches(' ').len();
        if trimmed == 0 {
            line.0.pop();
        } else {
            last.text.truncate(trimmed);
            break;
        }
    }
}

/// Split text into alternating runs of spaces and of other characters.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space: Option<bool> = None;
    for (i, c) in text.char_indices() {
        let space = c == ' ';
        if in_space.is_some_and(|prev| prev != space) {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Lines joined into terminal text, each ending with a newline.
pub fn join(lines: &[Line], theme: &Theme) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.render(theme));
        out.push('\n');
    }
    out
}

/// A bordered panel: the title in the top border, the body word-wrapped inside.
/// `accent` colours the border and title.
pub fn panel(title: &str, body: &[Line], theme: &Theme, accent: &Style) -> String {
    let b = theme.borders();
    let width = theme.panel_width();
    let inner = theme.panel_inner();
    let border = accent.clone();
    let title = truncate(&clean(title).replace('\n', " "), width.saturating_sub(6));
    let mut out = String::new();

    // `╭─ title ` + fill + `╮`, or `╭──` + fill + `╮` without a title.
    let fill = if title.is_empty() {
        width.saturating_sub(4)
    } else {
        width.saturating_sub(5 + display_width(&title))
    };
    out.push_str(&theme.paint(&format!("{}{}", b.top_left, b.horizontal), &border));
    if title.is_empty() {
        out.push_str(&theme.paint(b.horizontal, &border));
    } else {
        out.push(' ');
        out.push_str(&theme.paint(&title, &accent.clone().bold()));
        out.push(' ');
    }
    out.push_str(&theme.paint(
        &format!("{}{}", b.horizontal.repeat(fill), b.top_right),
        &border,
    ));
    out.push('\n');

    for line in body {
        for piece in wrap(line, inner, 0) {
            let pad = inner.saturating_sub(piece.width());
            out.push_str(&theme.paint(b.vertical, &border));
            out.push(' ');
            out.push_str(&piece.render(theme));
            out.push_str(&" ".repeat(pad));
            out.push(' ');
            out.push_str(&theme.paint(b.vertical, &border));
            out.push('\n');
        }
    }

    out.push_str(&theme.paint(
        &format!(
            "{}{}{}",
            b.bottom_left,
            b.horizontal.repeat(width - 2),
            b.bottom_right
        ),
        &border,
    ));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.render(&Theme::plain(80))).collect()
    }

    #[test]
    fn wraps_at_word_boundaries_with_a_hanging_indent() {
        let line = Line::plain("the quick brown fox jumps over the lazy dog");
        assert_eq!(
            texts(&wrap(&line, 15, 2)),
            ["the quick brown", "  fox jumps", "  over the lazy", "  dog"]
        );
    }

    #[test]
    fn splits_words_longer_than_the_line() {
        let line = Line::plain("aaaaaaaaaaaaaaaaaaaa bb");
        let out = texts(&wrap(&line, 8, 0));
        assert_eq!(out, ["aaaaaaaa", "aaaaaaaa", "aaaa bb"]);
    }

    #[test]
    fn never_exceeds_the_width_even_with_wide_characters() {
        let line = Line::plain("日本語のテキストと emoji 🎉🎉🎉 mixed with ascii words here");
        for width in 1..30 {
            for piece in wrap(&line, width, 2) {
                assert!(piece.width() <= width.max(2), "{width}: {:?}", piece);
            }
            for piece in wrap_hard(&line, width, 0) {
                assert!(piece.width() <= width.max(2), "{width}: {:?}", piece);
            }
        }
    }

    #[test]
    fn keeps_styles_across_breaks() {
        let line = Line::new()
            .with("red words here", Style::new().red())
            .text(" plain");
        let theme = Theme::rich(80);
        let out: Vec<String> = wrap(&line, 9, 0).iter().map(|l| l.render(&theme)).collect();
        assert!(out[0].contains("\u{1b}[31m"), "{out:?}");
        assert!(out[1].contains("\u{1b}[31m"), "{out:?}");
    }

    #[test]
    fn control_characters_are_neutralised() {
        let dirty = "a\u{1b}[2Jb\u{7}c\rd\u{9b}e\u{202E}f\tg";
        assert_eq!(clean(dirty), "a?[2Jb?cd?e?f    g");
        let line = Line::plain("x\u{1b}]0;owned\u{7}");
        assert!(!line.render(&Theme::rich(80)).contains('\u{1b}'));
    }

    #[test]
    fn panels_fit_the_width_exactly() {
        let body = [Line::plain(&"word ".repeat(40))];
        for width in [24, 40, 60, 80, 200] {
            let theme = Theme::plain(width);
            let out = panel("A title", &body, &theme, &Style::new());
            for line in out.lines() {
                assert_eq!(display_width(line), width.min(MAX_PANEL_WIDTH), "{line}");
            }
        }
    }

    #[test]
    fn a_plain_panel() {
        let out = panel(
            "Title",
            &[Line::plain("hello world")],
            &Theme::plain(24),
            &Style::new(),
        );
        assert_eq!(
            out,
            "+- Title --------------+\n\
             | hello world          |\n\
             +----------------------+\n"
        );
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdefghij", 6), "abc...");
        assert_eq!(truncate("abc", 6), "abc");
    }
}
