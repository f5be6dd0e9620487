//! The tolerant stage: whole lines compared with trailing whitespace ignored, then with
//! indentation ignored, then with the search's typographic punctuation standing for ASCII
//! ([`punct`]). At the first level where the search matches, it must match exactly one window
//! of the file, and no other window may hold the same lines even with whitespace ignored and
//! both sides' punctuation folded, else the edit is refused as ambiguous. Lines the replacement
//! keeps unchanged are taken from the file byte for byte; only the lines it adds or changes are
//! written, re-indented to the file's indentation ([`indent`]).

use std::borrow::Cow;

use similar::{Algorithm, DiffOp};

use super::doc::{self, Line};
use super::indent;
use super::punct;

/// How loosely lines are compared, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    TrailingSpace,
    Indentation,
    Punctuation,
}

impl Level {
    const ALL: [Level; 3] = [Level::TrailingSpace, Level::Indentation, Level::Punctuation];

    /// What the user is told was tolerated.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Level::TrailingSpace => "trailing whitespace ignored",
            Level::Indentation => "indentation ignored",
            Level::Punctuation => "whitespace and typographic punctuation ignored",
        }
    }

    /// Whether a file line and a search line are the same at this level.
    fn same(self, file: &str, search: &str) -> bool {
        match self {
            Level::TrailingSpace => file.trim_end() == search.trim_end(),
            Level::Indentation => file.trim() == search.trim(),
            Level::Punctuation => punct::matches_whole(file.trim(), search.trim()),
        }
    }
}

/// A line with whitespace at its edges dropped and every typographic character folded: the
/// form in which two lines count as the same place for ambiguity.
fn loose(line: &str) -> Cow<'_, str> {
    let t = line.trim();
    if t.is_ascii() {
        Cow::Borrowed(t)
    } else {
        Cow::Owned(punct::fold_all(t))
    }
}

/// The outcome of looking for the search's lines.
pub(super) enum Found {
    /// One window, starting at this line.
    One(usize),
    /// Several windows (their first lines, 0-based) at this level.
    Many(Vec<usize>, Level),
    None,
}

/// Windows of `file` whose lines equal `search`'s at `level`.
fn windows(file: &[Line], search: &[&str], level: Level) -> Vec<usize> {
    let m = search.len();
    if m == 0 || m > file.len() {
        return Vec::new();
    }
    (0..=file.len() - m)
        .filter(|&start| {
            search
                .iter()
                .enumerate()
                .all(|(i, s)| level.same(&file[start + i].text, s))
        })
        .collect()
}

/// Windows of `file` that hold `search`'s lines with whitespace at the edges ignored and both
/// sides' typographic punctuation folded: every place the search could have been meant for.
pub(super) fn loose_windows(file: &[Line], search: &[&str]) -> Vec<usize> {
    let m = search.len();
    if m == 0 || m > file.len() {
        return Vec::new();
    }
    let keys: Vec<Cow<'_, str>> = search.iter().map(|s| loose(s)).collect();
    (0..=file.len() - m)
        .filter(|&start| {
            keys.iter()
                .enumerate()
                .all(|(i, k)| loose(&file[start + i].text) == *k)
        })
        .collect()
}

/// Find the search's lines in the file.
pub(super) fn find(file: &[Line], search: &[&str]) -> Found {
    for level in Level::ALL {
        let at = windows(file, search, level);
        match at.len() {
            0 => continue,
            1 => {
                // A window that only a looser comparison finds could still be the one meant.
                let loosest = loose_windows(file, search);
                return if loosest.len() > 1 {
                    Found::Many(loosest, Level::Punctuation)
                } else {
                    Found::One(at[0])
                };
            }
            _ => return Found::Many(at, level),
        }
    }
    Found::None
}

/// How the replacement's indentation maps onto the file's for the window at `start` (as long as
/// `search`); `None` when the matched lines disagree.
pub(super) fn mapping(
    file: &[Line],
    start: usize,
    search: &[&str],
    replace: &[&str],
) -> Option<indent::Mapping> {
    let window = &file[start..start + search.len()];
    let pairs: Vec<(&str, &str)> = window
        .iter()
        .map(|l| l.text.as_str())
        .zip(search.iter().copied())
        .collect();
    indent::infer(
        file.iter().map(|l| l.text.as_str()),
        &pairs,
        search,
        replace,
    )
}

/// A replacement line changed in place, with what it keeps of the search line taken from the
/// file line where the search's typographic punctuation stood for the file's ASCII.
fn keep_punctuation<'a>(file: &str, search: &str, replace: &'a str) -> Cow<'a, str> {
    let (f, s) = (file.trim(), search.trim());
    if f == s || !punct::matches_whole(f, s) {
        return Cow::Borrowed(replace);
    }
    let ind = indent::indent_of(replace);
    let body = replace[ind.len()..].trim_end();
    Cow::Owned(format!("{ind}{}", punct::keep_from_file(f, s, body)))
}

/// Replace the window at `start` (as long as `search`) by `replace`'s lines. `Err` says why the
/// replacement cannot be placed.
pub(super) fn splice(
    file: &[Line],
    start: usize,
    search: &[&str],
    replace: &[&str],
) -> Result<Vec<Line>, String> {
    let window = &file[start..start + search.len()];
    let mapping = mapping(file, start, search, replace);
    let style = doc::style_for(file, start, start + search.len());
    let mut new: Vec<Line> = Vec::with_capacity(replace.len());
    for op in similar::capture_diff_slices(Algorithm::Myers, search, replace) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                new.extend_from_slice(&window[old_index..old_index + len]);
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => {
                // A line changed in place keeps the ending of the line it replaces.
                let in_place = match op {
                    DiffOp::Replace {
                        old_index, old_len, ..
                    } => Some((old_index, old_len)),
                    _ => None,
                };
                for (k, line) in replace[new_index..new_index + new_len].iter().enumerate() {
                    let end = match in_place {
                        Some((o, len)) if k < len && window[o + k].end != doc::End::None => {
                            window[o + k].end
                        }
                        _ => style,
                    };
                    let line = match in_place {
                        Some((o, len)) if k < len => {
                            keep_punctuation(&window[o + k].text, search[o + k], line)
                        }
                        _ => Cow::Borrowed(*line),
                    };
                    let text = match &mapping {
                        Some(m) => indent::apply(m, &line),
                        None if line.trim().is_empty() => Some(String::new()),
                        None => None,
                    }
                    .ok_or_else(|| {
                        format!(
                            "the search matches lines {}-{} only with different indentation, and \
                             the replacement's indentation cannot be mapped onto the file's \
                             consistently; copy the lines exactly as they are in the file",
                            start + 1,
                            start + search.len()
                        )
                    })?;
                    new.push(Line { text, end });
                }
            }
        }
    }
    let at_end = start + search.len() == file.len();
    let region_end = window.last().map_or(doc::End::Lf, |l| l.end);
    // Lines taken from the file keep their own endings, except where the region's shape says
    // otherwise (the file's unterminated last line).
    let n = new.len();
    for (i, l) in new.iter_mut().enumerate() {
        let last = i + 1 == n;
        if last && at_end && region_end == doc::End::None {
            l.end = doc::End::None;
        } else if l.end == doc::End::None {
            l.end = style;
        }
    }
    let mut out = Vec::with_capacity(file.len() + n);
    out.extend_from_slice(&file[..start]);
    out.extend(new);
    out.extend_from_slice(&file[start + search.len()..]);
    if n == 0
        && at_end
        && region_end == doc::End::None
        && let Some(l) = out.last_mut()
    {
        l.end = doc::End::None;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<Line> {
        doc::parse(s)
    }

    #[test]
    fn levels_are_tried_strictest_first() {
        let f = lines("def f():\n    x = 1  \n    return x\n");
        assert!(matches!(find(&f, &["    x = 1"]), Found::One(1)));
        assert!(matches!(find(&f, &["x = 1", "return x"]), Found::One(1)));
        let q = lines("s = \"hi\"\n");
        assert!(matches!(
            find(&q, &["s = \u{201C}hi\u{201D}"]),
            Found::One(0)
        ));
        // The file's own typographic characters are never folded.
        let t = lines("s = \u{201C}hi\u{201D}\n");
        assert!(matches!(find(&t, &["s = \"hi\""]), Found::None));
    }

    #[test]
    fn a_window_the_loosest_level_also_finds_is_ambiguous() {
        let f = lines("  a\na \n");
        assert!(matches!(
            find(&f, &["a"]),
            Found::Many(_, Level::Punctuation)
        ));
    }

    #[test]
    fn unchanged_lines_come_from_the_file_and_new_ones_are_reindented() {
        let f = lines("class A:\n    def f(self):\n        return 1  \n");
        let out = splice(
            &f,
            1,
            &["def f(self):", "    return 1"],
            &["def f(self):", "    x = 2", "    return x"],
        )
        .unwrap();
        assert_eq!(
            doc::render(&out),
            "class A:\n    def f(self):\n        x = 2\n        return x\n"
        );
    }
}
