//! What a refused edit tells the model: the search quoted, and where the file comes closest
//! (the first line that differs, with line numbers), so one repair call can fix it.

use super::super::error::quote_snippet;

/// How many similar lines a not-found message quotes.
const MAX_CLOSEST: usize = 3;
/// Quoted snippets are cut at this many characters.
const QUOTE: usize = 80;

/// Quote a search text: its first non-blank line, plus how many lines follow.
pub(super) fn quote_search(search: &str) -> String {
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
pub(super) fn closest(text: &str, search: &str) -> String {
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
