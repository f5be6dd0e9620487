//! Text handling shared by READ and MODIFY: binary detection, line-ending and BOM detection,
//! normalisation to `\n` for matching and diffing, and restoring the file's style on write.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

const BOM: &str = "\u{FEFF}";

/// How many leading bytes are inspected for a NUL when deciding whether a file is binary.
const SNIFF_BYTES: usize = 8192;

/// Whether bytes look binary: a NUL early on (what git and grep use).
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0)
}

/// The line-ending style of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    /// Only `\n` (or no line break at all).
    Lf,
    /// Every line break is `\r\n`.
    Crlf,
    /// Both styles occur; the text is edited as is, without normalising.
    Mixed,
}

/// A file's text split into the normalised body and the style needed to write it back.
#[derive(Debug, Clone)]
pub(crate) struct Styled<'a> {
    /// The text with `\r\n` turned into `\n` (unless mixed) and without a BOM; borrowed when
    /// nothing had to change.
    pub body: Cow<'a, str>,
    /// Line-ending style of the original.
    pub eol: Eol,
    /// Whether the original started with a UTF-8 byte-order mark.
    pub bom: bool,
}

/// Detect the line-ending style.
pub(crate) fn detect_eol(text: &str) -> Eol {
    let lf = text.bytes().filter(|&b| b == b'\n').count();
    let crlf = text.matches("\r\n").count();
    if crlf == 0 {
        Eol::Lf
    } else if crlf == lf {
        Eol::Crlf
    } else {
        Eol::Mixed
    }
}

/// Split a file's text into normalised body and style.
pub(crate) fn normalise(text: &str) -> Styled<'_> {
    let (bom, text) = match text.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let eol = detect_eol(text);
    let body = match eol {
        Eol::Crlf => Cow::Owned(text.replace("\r\n", "\n")),
        Eol::Lf | Eol::Mixed => Cow::Borrowed(text),
    };
    Styled { body, eol, bom }
}

/// Normalise text coming from the model (search, replace, whole content) to `\n`.
pub(crate) fn to_lf(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Put a normalised body back into the original style.
pub(crate) fn restore(body: &str, eol: Eol, bom: bool) -> String {
    let body = body.strip_prefix(BOM).unwrap_or(body);
    let mut out = String::with_capacity(body.len() + body.len() / 32 + 3);
    if bom {
        out.push_str(BOM);
    }
    match eol {
        Eol::Crlf => {
            // The body is LF-only here; a stray "\r\n" from the model is not doubled.
            let mut prev_cr = false;
            for c in body.chars() {
                if c == '\n' && !prev_cr {
                    out.push('\r');
                }
                prev_cr = c == '\r';
                out.push(c);
            }
        }
        Eol::Lf | Eol::Mixed => out.push_str(body),
    }
    out
}

/// 1-based line number of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Hex SHA-256 of some bytes: the content hash in [`super::FileChange`].
pub(crate) fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Format a count with thousands separators for messages ("100,000").
pub(crate) fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_round_trip() {
        let s = normalise("\u{FEFF}a\r\nb\r\n");
        assert_eq!(s.body, "a\nb\n");
        assert_eq!(s.eol, Eol::Crlf);
        assert!(s.bom);
        assert_eq!(restore("a\nc\n", s.eol, s.bom), "\u{FEFF}a\r\nc\r\n");
        assert_eq!(restore("a\r\nc", Eol::Crlf, false), "a\r\nc");
        assert_eq!(detect_eol("a\nb\r\n"), Eol::Mixed);
        assert_eq!(detect_eol("ab"), Eol::Lf);
    }

    #[test]
    fn counting() {
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(thousands(100000), "100,000");
        assert_eq!(thousands(999), "999");
        assert!(looks_binary(b"ab\0c"));
        assert!(!looks_binary(b"abc"));
    }
}
