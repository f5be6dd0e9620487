//! A file's text as lines that each remember their own ending, so an edit can keep CRLF, LF
//! and mixed files exactly as they were outside the lines it replaces.

/// How one line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// No line break: the last line of a file without a final newline.
    None,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            End::Lf => "\n",
            End::CrLf => "\r\n",
            End::None => "",
        }
    }
}

/// One line: its text without the ending, and the ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Line {
    pub text: String,
    pub end: End,
}

/// Split a text into lines with their endings. An empty text has no lines.
pub(super) fn parse(text: &str) -> Vec<Line> {
    text.split_inclusive('\n')
        .map(|piece| {
            if let Some(t) = piece.strip_suffix("\r\n") {
                Line {
                    text: t.to_string(),
                    end: End::CrLf,
                }
            } else if let Some(t) = piece.strip_suffix('\n') {
                Line {
                    text: t.to_string(),
                    end: End::Lf,
                }
            } else {
                Line {
                    text: piece.to_string(),
                    end: End::None,
                }
            }
        })
        .collect()
}

/// The text again, every line with its own ending.
pub(super) fn render(lines: &[Line]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.text.len() + 2).sum());
    for l in lines {
        out.push_str(&l.text);
        out.push_str(l.end.as_str());
    }
    out
}

/// The text with every line break written as `\n`: what search texts are matched against.
pub(super) fn lf_view(lines: &[Line]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.text.len() + 1).sum());
    for l in lines {
        out.push_str(&l.text);
        if l.end != End::None {
            out.push('\n');
        }
    }
    out
}

/// The ending new lines get when they replace `lines[range]`: the first ending found there,
/// else the one just before, else `\n`.
pub(super) fn style_for(lines: &[Line], start: usize, end: usize) -> End {
    lines[start.min(lines.len())..end.min(lines.len())]
        .iter()
        .chain(lines[..start.min(lines.len())].iter().rev())
        .map(|l| l.end)
        .find(|e| *e != End::None)
        .unwrap_or(End::Lf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_shape() {
        for text in ["", "a", "a\n", "a\r\nb\n", "a\nb\r\nc", "\n\n", "x\r"] {
            assert_eq!(render(&parse(text)), text, "{text:?}");
        }
        assert_eq!(lf_view(&parse("a\r\nb\nc")), "a\nb\nc");
    }
}
