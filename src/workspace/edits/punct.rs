//! Typographic punctuation in a search. Models type curly quotes, typographic apostrophes,
//! en and em dashes, non-breaking spaces and ellipses where a file has plain ASCII; one rule
//! covers them all: a typographic character of the *search* also matches its ASCII stand-in in
//! the file. The file's own characters are never folded, so where the file has a typographic
//! character only that same character matches it.
//!
//! Whether a match is unique is judged more loosely ([`loose_count`]: the file's typographic
//! characters folded too), so a search never picks one place while another differs from it
//! only in punctuation.

/// The ASCII text a typographic character stands for, if it is one.
fn ascii_of(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => "-",
        '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2007}' | '\u{2009}' | '\u{200A}'
        | '\u{202F}' | '\u{3000}' => " ",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// Whether a text holds a character [`ascii_of`] folds.
pub(super) fn has_typographic(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(|c| ascii_of(c).is_some())
}

/// The text with every typographic character replaced by its ASCII text.
pub(super) fn fold_all(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match ascii_of(c) {
            Some(a) => out.push_str(a),
            None => out.push(c),
        }
    }
    out
}

/// Match `search` at byte `at` of `text`; the end of the matched text and, for each search
/// character, where its match ends in `text`.
fn match_at(text: &str, at: usize, search: &str, ends: &mut Vec<usize>) -> Option<usize> {
    ends.clear();
    let mut p = at;
    for c in search.chars() {
        let rest = &text[p..];
        let mut buf = [0u8; 4];
        let own: &str = c.encode_utf8(&mut buf);
        if rest.starts_with(own) {
            p += own.len();
        } else if let Some(a) = ascii_of(c)
            && rest.starts_with(a)
        {
            p += a.len();
        } else {
            return None;
        }
        ends.push(p);
    }
    Some(p)
}

/// One place `search` matches in a text: its byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub start: usize,
    pub end: usize,
}

/// The non-overlapping places `search` matches in `text`, leftmost first, as
/// `(the first keep of them, how many there are)`.
pub(super) fn find(text: &str, search: &str, keep: usize) -> (Vec<Span>, usize) {
    let mut found = Vec::new();
    let mut count = 0;
    if search.is_empty() {
        return (found, 0);
    }
    if !has_typographic(search) {
        for (p, m) in text.match_indices(search) {
            if found.len() < keep {
                found.push(Span {
                    start: p,
                    end: p + m.len(),
                });
            }
            count += 1;
        }
        return (found, count);
    }
    let mut ends = Vec::new();
    let mut p = 0;
    while p < text.len() {
        if let Some(end) = match_at(text, p, search, &mut ends) {
            if found.len() < keep {
                found.push(Span { start: p, end });
            }
            count += 1;
            p = end.max(p + 1);
        } else {
            p += text[p..].chars().next().map_or(1, char::len_utf8);
        }
        while !text.is_char_boundary(p) {
            p += 1;
        }
    }
    (found, count)
}

/// Whether all of `file` matches all of `search`.
pub(super) fn matches_whole(file: &str, search: &str) -> bool {
    if file == search {
        return true;
    }
    let mut ends = Vec::new();
    match_at(file, 0, search, &mut ends) == Some(file.len())
}

/// The byte offsets of the places `search` stands in `text` once the typographic characters of
/// both are folded: every place a search could be meant for, to refuse ambiguity (offsets are
/// into the folded text; line breaks are never folded, so its line numbers are the text's).
pub(super) fn loose_places(text: &str, search: &str) -> (String, Vec<usize>) {
    let folded_text = if text.is_ascii() {
        text.to_string()
    } else {
        fold_all(text)
    };
    let folded_search = fold_all(search);
    let at = folded_text
        .match_indices(folded_search.as_str())
        .map(|(p, _)| p)
        .collect();
    (folded_text, at)
}

/// The replacement for `matched` (the file's text that `search` matched with its typographic
/// characters standing for ASCII): what the replacement keeps of the search is taken from the
/// file, so quotes it did not change stay as the file writes them; what it changes is written
/// as sent.
pub(super) fn keep_from_file(matched: &str, search: &str, replace: &str) -> String {
    if matched == search {
        return replace.to_string();
    }
    let mut ends = Vec::new();
    if match_at(matched, 0, search, &mut ends) != Some(matched.len()) {
        return replace.to_string();
    }
    let s: Vec<char> = search.chars().collect();
    let r: Vec<char> = replace.chars().collect();
    let start_of = |i: usize| if i == 0 { 0 } else { ends[i - 1] };
    let mut out = String::with_capacity(replace.len());
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &s, &r) {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                out.push_str(&matched[start_of(old_index)..start_of(old_index + len)]);
            }
            similar::DiffOp::Delete { .. } => {}
            similar::DiffOp::Insert {
                new_index, new_len, ..
            }
            | similar::DiffOp::Replace {
                new_index, new_len, ..
            } => out.extend(&r[new_index..new_index + new_len]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_folds_and_the_file_does_not() {
        let (at, n) = find("print(\"total:\", t)", "“total:”", 4);
        assert_eq!(n, 1);
        assert_eq!((at[0].start, at[0].end), (6, 14));
        assert_eq!(find("s = “x”", "s = \"x\"", 4).1, 0);
        assert_eq!(find("s = ‘x’", "s = ’x’", 4).1, 0);
        assert_eq!(loose_places("s = “x”\ns = \"x\"", "s = ’x’").1.len(), 0);
        assert_eq!(loose_places("s = “x”\ns = \"x\"", "s = \"x\"").1.len(), 2);
        assert_eq!(find("wait...", "wait…", 4).1, 1);
        assert!(matches_whole("a - b", "a – b"));
        assert!(!matches_whole("a – b", "a - b"));
    }

    #[test]
    fn kept_characters_come_from_the_file() {
        assert_eq!(
            keep_from_file("\"total:\"", "“total:”", "“sum:”"),
            "\"sum:\""
        );
        assert_eq!(keep_from_file("a...", "a…", "b…"), "b...");
        assert_eq!(keep_from_file("x", "x", "“y”"), "“y”");
    }
}
