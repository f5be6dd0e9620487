//! MODIFY's search/replace edits: exact matches, applied in order, each required to match
//! exactly once. When one does not, the error quotes the lines of the file that come closest,
//! so the model can correct the search text on its next attempt.

use super::error::quote_snippet;
use super::text::{line_of, to_lf};

/// One exact search/replace pair of a MODIFY step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Text that must occur exactly once in the file (after earlier edits are applied).
    pub search: String,
    /// What replaces it (may be empty to delete).
    pub replace: String,
}

/// What a MODIFY step does to an existing file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modification {
    /// Search/replace pairs applied in order.
    Edits(Vec<Edit>),
    /// Replace the whole content.
    Content(String),
}

/// How many match positions an ambiguity message lists.
const MAX_LISTED: usize = 8;
/// How many similar lines a not-found message quotes.
const MAX_CLOSEST: usize = 3;
/// Quoted snippets are cut at this many characters.
const QUOTE: usize = 80;

/// Apply `edits` to the normalised `text`. `Err` is the reason, ready to follow
/// "cannot modify <path>: ".
pub(crate) fn apply(text: &str, edits: &[Edit]) -> Result<String, String> {
    let mut cur = text.to_string();
    let n = edits.len();
    if n == 0 {
        return Err("no edits were given; send search/replace pairs or the whole content".into());
    }
    for (i, e) in edits.iter().enumerate() {
        let label = if n > 1 {
            format!("edit {} of {n}: ", i + 1)
        } else {
            String::new()
        };
        let later = if i > 0 {
            " (line numbers count the earlier edits as applied)"
        } else {
            ""
        };
        let search = to_lf(&e.search);
        let replace = to_lf(&e.replace);
        if search.is_empty() {
            return Err(format!(
                "{label}the search text is empty; quote the exact lines to replace, or send the \
                 whole file as content"
            ));
        }
        let mut positions = Vec::new();
        let mut count = 0usize;
        for (p, _) in cur.match_indices(search.as_ref()) {
            if positions.len() < MAX_LISTED {
                positions.push(p);
            }
            count += 1;
        }
        match count {
            0 => {
                return Err(format!(
                    "{label}search text not found: {}; {}{later}",
                    quote_search(&search),
                    closest(&cur, &search)
                ));
            }
            1 => {
                let p = positions[0];
                cur.replace_range(p..p + search.len(), &replace);
            }
            _ => {
                let mut lines: Vec<String> = positions
                    .iter()
                    .map(|&p| line_of(&cur, p).to_string())
                    .collect();
                if count > positions.len() {
                    lines.push("…".into());
                }
                return Err(format!(
                    "{label}search text {} matches {count} times (lines {}); include more \
                     surrounding lines so it matches exactly once{later}",
                    quote_search(&search),
                    lines.join(", ")
                ));
            }
        }
    }
    Ok(cur)
}

/// Quote a search text: its first non-blank line, plus how many lines follow.
fn quote_search(search: &str) -> String {
    let lines: Vec<&str> = search.trim_end_matches('\n').split('\n').collect();
    let first = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    let more = lines.len() - 1;
    let q = format!("`{}`", quote_snippet(lines[first].trim_end(), QUOTE));
    if more > 0 {
        format!("{q} (+{more} more lines)")
    } else {
        q
    }
}

/// Explain where the search text comes closest to the file.
fn closest(text: &str, search: &str) -> String {
    let file: Vec<&str> = text.split('\n').collect();
    let wanted: Vec<&str> = search.trim_end_matches('\n').split('\n').collect();
    let Some(first) = wanted.iter().position(|l| !l.trim().is_empty()) else {
        return "the search text is only whitespace".into();
    };
    let head = wanted[first].trim();
    // Where the first meaningful line occurs (ignoring indentation), find the first line that
    // then differs.
    for (idx, line) in file.iter().enumerate() {
        if line.trim() != head {
            continue;
        }
        let start = idx as isize - first as isize;
        if start < 0 {
            continue;
        }
        let start = start as usize;
        for (j, w) in wanted.iter().enumerate() {
            let Some(have) = file.get(start + j) else {
                return format!(
                    "it matches from line {} up to the end of the file, which is shorter than \
                     the search text",
                    start + 1
                );
            };
            if have != w {
                let detail = if have.trim() == w.trim() {
                    " (they differ only in whitespace or indentation)"
                } else {
                    ""
                };
                return format!(
                    "closest: from line {}, search line {} `{}` differs from line {}: `{}`{detail}",
                    start + 1,
                    j + 1,
                    quote_snippet(w, QUOTE),
                    start + j + 1,
                    quote_snippet(have, QUOTE)
                );
            }
        }
        // Every line equal yet no match: only the end of the text (final newline) differs.
        return format!(
            "closest: the lines at {} match, but the text around them (such as a final newline) \
             differs",
            start + 1
        );
    }
    let target = bigrams(head);
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (idx, line) in file.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.len() > head.len() * 4 + 16 || head.len() > t.len() * 4 + 16 {
            continue;
        }
        let s = dice(&target, &bigrams(t));
        if s >= 0.35 {
            scored.push((s, idx));
        }
    }
    if scored.is_empty() {
        return "no line of the file resembles it; READ the file to see its current content".into();
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let shown: Vec<String> = scored
        .iter()
        .take(MAX_CLOSEST)
        .map(|&(_, i)| format!("{}: `{}`", i + 1, quote_snippet(file[i].trim_end(), QUOTE)))
        .collect();
    format!("closest lines: {}", shown.join(", "))
}

fn bigrams(s: &str) -> Vec<(char, char)> {
    let cs: Vec<char> = s.chars().collect();
    let mut v: Vec<(char, char)> = cs.windows(2).map(|w| (w[0], w[1])).collect();
    v.sort_unstable();
    v
}

/// Sørensen–Dice similarity of two sorted bigram multisets.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str, r: &str) -> Edit {
        Edit {
            search: s.into(),
            replace: r.into(),
        }
    }

    #[test]
    fn applies_in_order() {
        let out = apply("a\nb\nc\n", &[e("b\n", "B\nB2\n"), e("B2\nc", "C")]).unwrap();
        assert_eq!(out, "a\nB\nC\n");
    }

    #[test]
    fn crlf_search_is_normalised() {
        assert_eq!(apply("a\nb\n", &[e("a\r\nb", "x")]).unwrap(), "x\n");
    }

    #[test]
    fn not_found_quotes_closest_line() {
        let text = "import os\n\ndef foo (x):\n    return x\n";
        let err = apply(text, &[e("def foo(", "def bar(")]).unwrap_err();
        assert!(
            err.starts_with("search text not found: `def foo(`; closest lines: 3: `def foo (x):`"),
            "{err}"
        );
    }

    #[test]
    fn not_found_points_at_differing_line() {
        let text = "def f():\n    a = 1\n    return a\n";
        let err = apply(text, &[e("def f():\n    a = 2\n", "")]).unwrap_err();
        assert!(
            err.contains("search line 2 `    a = 2` differs from line 2: `    a = 1`"),
            "{err}"
        );
        let err = apply(text, &[e("def f():\n  a = 1\n", "")]).unwrap_err();
        assert!(err.contains("only in whitespace"), "{err}");
    }

    #[test]
    fn ambiguous_lists_lines() {
        let err = apply("x\ny\nx\n", &[e("x", "z")]).unwrap_err();
        assert!(err.contains("matches 2 times (lines 1, 3)"), "{err}");
    }

    #[test]
    fn edit_number_is_named() {
        let err = apply("a\n", &[e("a", "b"), e("q", "r")]).unwrap_err();
        assert!(
            err.starts_with("edit 2 of 2: search text not found"),
            "{err}"
        );
        assert!(apply("a", &[e("", "b")]).unwrap_err().contains("empty"));
        assert!(apply("a", &[]).is_err());
    }
}
