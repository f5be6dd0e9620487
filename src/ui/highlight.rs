//! Syntax highlighting of file views with syntect's bundled grammars and its pure-Rust regex
//! engine (no C library to build). The grammar set is loaded once, on the first file view, so a
//! session that never shows a file never pays for it.

use std::sync::OnceLock;

use console::{Color, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SyntaxTheme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use super::layout::{Line, Theme, clean};

/// The colour scheme: readable on the dark backgrounds most terminals use.
const SCHEME: &str = "base16-ocean.dark";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn scheme() -> Option<&'static SyntaxTheme> {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults).themes.get(SCHEME)
}

fn syntax_for<'a>(set: &'a SyntaxSet, path: &str, first_line: &str) -> Option<&'a SyntaxReference> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let by_name = match name.rsplit_once('.') {
        Some((_, ext)) => set
            .find_syntax_by_extension(ext)
            .or_else(|| set.find_syntax_by_extension(&ext.to_ascii_lowercase())),
        // Files like `Makefile` are registered under their whole name.
        None => set.find_syntax_by_extension(name),
    };
    by_name.or_else(|| set.find_syntax_by_first_line(first_line))
}

/// The first `max_lines` lines of `text`, highlighted for `path`'s language when the theme
/// has colour, plain otherwise or when the language is unknown.
pub fn highlight(path: &str, text: &str, max_lines: usize, theme: &Theme) -> Vec<Line> {
    let cleaned = clean(text);
    let lines: Vec<&str> = cleaned.split_inclusive('\n').take(max_lines).collect();
    let plain = || {
        lines
            .iter()
            .map(|l| Line::plain(l.trim_end_matches('\n')))
            .collect::<Vec<_>>()
    };
    if !theme.color {
        return plain();
    }
    let set = syntaxes();
    let (Some(syntax), Some(scheme)) = (
        syntax_for(set, path, lines.first().copied().unwrap_or_default()),
        scheme(),
    ) else {
        return plain();
    };
    let mut highlighter = HighlightLines::new(syntax, scheme);
    let mut out = Vec::with_capacity(lines.len());
    for raw in &lines {
        let Ok(regions) = highlighter.highlight_line(raw, set) else {
            return plain();
        };
        let mut line = Line::new();
        for (style, piece) in regions {
            let piece = piece.trim_end_matches('\n');
            if piece.is_empty() {
                continue;
            }
            line.push(piece, Some(convert(style, theme.truecolor)));
        }
        out.push(line);
    }
    out
}

fn convert(style: syntect::highlighting::Style, truecolor: bool) -> Style {
    let c = style.foreground;
    let color = if truecolor {
        Color::TrueColor(c.r, c.g, c.b)
    } else {
        Color::Color256(rgb_to_256(c.r, c.g, c.b))
    };
    let mut out = Style::new().fg(color);
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.bold();
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.italic();
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.underlined();
    }
    out
}

/// The nearest colour of the 256-colour palette: its 6x6x6 cube or its grey ramp.
pub fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            ((v - 35) / 40).min(5)
        }
    };
    let value = |l: u8| -> i32 { if l == 0 { 0 } else { 55 + 40 * i32::from(l) } };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let cube_err =
        sq(value(lr) - i32::from(r)) + sq(value(lg) - i32::from(g)) + sq(value(lb) - i32::from(b));
    let avg = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let grey_index = if avg > 238 {
        23
    } else {
        (avg.saturating_sub(3) / 10) as u8
    };
    let grey = 8 + 10 * i32::from(grey_index);
    let grey_err = sq(grey - i32::from(r)) + sq(grey - i32::from(g)) + sq(grey - i32::from(b));
    if grey_err < cube_err {
        232 + grey_index
    } else {
        cube
    }
}

fn sq(v: i32) -> i32 {
    v * v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_theme_gives_plain_lines() {
        let lines = highlight("a.py", "def f():\n    return 1\n", 20, &Theme::plain(80));
        let text: Vec<String> = lines.iter().map(|l| l.render(&Theme::plain(80))).collect();
        assert_eq!(text, ["def f():", "    return 1"]);
    }

    #[test]
    fn known_languages_get_colour_and_unknown_ones_do_not() {
        let theme = Theme::rich(80);
        let py = highlight("calc.py", "def add(a, b):\n    return a + b\n", 20, &theme);
        assert!(py[0].0.len() > 1, "python should be split into tokens");
        assert!(py[0].render(&theme).contains("\u{1b}[38;5;"));
        let unknown = highlight("notes.zzz", "just text\n", 20, &theme);
        assert_eq!(unknown[0].render(&theme), "just text");
    }

    #[test]
    fn stops_at_the_line_limit() {
        let text: String = (0..100).map(|i| format!("x = {i}\n")).collect();
        assert_eq!(highlight("a.py", &text, 20, &Theme::rich(80)).len(), 20);
    }

    #[test]
    fn escape_sequences_in_files_are_neutralised() {
        let theme = Theme::rich(80);
        let lines = highlight("a.py", "x = '\u{1b}[2J'\n", 20, &theme);
        let out = lines[0].render(&theme);
        assert!(!out.contains("\u{1b}[2J"), "{out:?}");
    }

    #[test]
    fn palette_mapping() {
        assert_eq!(rgb_to_256(0, 0, 0), 16);
        assert_eq!(rgb_to_256(255, 0, 0), 196);
        assert_eq!(rgb_to_256(128, 128, 128), 244);
    }
}
