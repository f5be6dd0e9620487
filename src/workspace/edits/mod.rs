//! MODIFY's search/replace edits, applied in order, each to the result of the one before, all
//! or nothing. One matcher, in this order:
//!
//! 1. a search that is empty or only whitespace is refused;
//! 2. the search as a string, anywhere in the file (line breaks compared as `\n`; a typographic
//!    character of the search also matches its ASCII stand-in, never the other way round:
//!    [`punct`]); its edge line breaks are reconciled with the replacement's so lines are never
//!    merged or split by accident. It must match exactly one place, and no other place may
//!    hold the same text once whitespace and both sides' punctuation are ignored;
//! 3. otherwise whole lines, compared with trailing whitespace ignored, then indentation
//!    ignored, then with the search's punctuation standing for ASCII ([`tolerant`]): the first
//!    level that matches must match exactly one window;
//! 4. the same again with the search's blank edge lines dropped, then with a ``` fence around
//!    it stripped.
//!
//! Whenever the match covers whole lines, the replacement's new lines are re-indented in the
//! file's own unit ([`indent`]), and what the replacement keeps of the search is taken from the
//! file. An edit that would leave a line indented with both tabs and spaces, in a file that has
//! no such line, is refused.
//!
//! There is no edit-distance matching: a near miss is a refusal that shows the closest lines
//! and their numbers. A wrong file reported as success is the worst outcome pai can have, so
//! whatever is not unambiguous is refused.

mod closest;
mod doc;
mod exact;
mod indent;
mod punct;
mod tolerant;

use super::text::{line_of, normalise, restore, to_lf};

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

/// Apply `edits` to a file's whole text, as MODIFY does: the byte-order mark and the line
/// ending style are kept. `Err` is the reason, ready to follow "cannot modify <path>: ".
pub fn edit_text(original: &str, edits: &[Edit]) -> Result<String, String> {
    let styled = normalise(original);
    let body = apply(&styled.body, edits)?;
    Ok(restore(&body, styled.eol, styled.bom))
}

/// Apply `edits` to a normalised body (see [`super::text::normalise`]). `Err` is the reason,
/// ready to follow "cannot modify <path>: ".
pub(crate) fn apply(text: &str, edits: &[Edit]) -> Result<String, String> {
    let n = edits.len();
    if n == 0 {
        return Err("no edits were given; send search/replace pairs or the whole content".into());
    }
    let mut lines = doc::parse(text);
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
        lines = apply_one(&lines, e).map_err(|why| format!("{label}{why}{later}"))?;
    }
    Ok(doc::render(&lines))
}

/// The forms of one edit that are tried, in order: as sent, without blank edge lines, without
/// a code fence around it.
fn variants(search: &str, replace: &str) -> Vec<(String, String)> {
    let mut out = vec![(search.to_string(), replace.to_string())];
    let (s, r) = (drop_blank_edges(search), drop_blank_edges(replace));
    if s != search {
        // Blank lines the replacement repeats at its edges go with the search's.
        let r = if r != replace && replace.starts_with('\n') == search.starts_with('\n') {
            r
        } else {
            replace.to_string()
        };
        out.push((s.clone(), r));
    }
    if let Some(inner) = strip_fence(&s) {
        let r = strip_fence(replace).unwrap_or_else(|| replace.to_string());
        out.push((inner, r));
    }
    out
}

/// The text without blank lines at its start and end (a final line break is kept).
fn drop_blank_edges(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => {
            let mut out = lines[a..=b].join("\n");
            if text.ends_with('\n') {
                out.push('\n');
            }
            out
        }
        _ => text.to_string(),
    }
}

/// The text inside a ``` fence that wraps all of it, if it is wrapped so.
fn strip_fence(text: &str) -> Option<String> {
    let t = text.trim_matches('\n');
    let (open, rest) = t.split_once('\n')?;
    let open = open.trim();
    let lang = open.strip_prefix("```")?;
    if !lang
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+-_.".contains(c))
    {
        return None;
    }
    let (inner, close) = rest.rsplit_once('\n')?;
    (close.trim() == "```").then(|| format!("{inner}\n"))
}

/// Apply one edit: the matcher of the module documentation. Each form of the edit (see
/// [`variants`]) is tried exactly, then line by line, and the first form that matches anywhere
/// decides: it is applied if it matches once and refused if it is ambiguous, never passed
/// over for a later, looser form.
fn apply_one(lines: &[doc::Line], e: &Edit) -> Result<Vec<doc::Line>, String> {
    let search = to_lf(&e.search);
    let replace = to_lf(&e.replace);
    refuse_blank_search(&search)?;
    let view = doc::lf_view(lines);
    for (s, r) in variants(&search, &replace) {
        if s.trim().is_empty() {
            continue;
        }
        if let Some(done) = apply_exact(lines, &view, &s, &r)? {
            return refuse_new_mixed_indentation(lines, done);
        }
        if let Some(done) = apply_tolerant(lines, &s, &r)? {
            return refuse_new_mixed_indentation(lines, done);
        }
    }
    Err(format!(
        "search text not found: {}; {}",
        closest::quote_search(&search),
        punctuation_hint(lines, &view, &search).unwrap_or_else(|| closest::closest(&view, &search))
    ))
}

/// Where the search would match if the file's own typographic characters were read as ASCII:
/// the one near miss that a repair fixes by copying those characters.
fn punctuation_hint(lines: &[doc::Line], view: &str, search: &str) -> Option<String> {
    if view.is_ascii() {
        return None;
    }
    let core = drop_blank_edges(search);
    let mut at: Vec<usize> = tolerant::loose_windows(lines, &split_lines(&core))
        .into_iter()
        .map(|w| w + 1)
        .collect();
    let (folded, places) = punct::loose_places(view, search);
    at.extend(places.into_iter().map(|p| line_of(&folded, p)));
    at.sort_unstable();
    at.dedup();
    if at.is_empty() {
        return None;
    }
    let listed: Vec<String> = at.iter().take(MAX_LISTED).map(|n| n.to_string()).collect();
    Some(format!(
        "it matches at line {} only if the file's typographic characters (curly quotes, dashes, \
         non-breaking spaces) are read as plain ones; copy those characters exactly as the file \
         has them",
        listed.join(", ")
    ))
}

/// An edit must not leave a line indented with both tabs and spaces in a file that had none:
/// that is a replacement written in another indentation than the file's, placed wrongly.
fn refuse_new_mixed_indentation(
    before: &[doc::Line],
    after: Vec<doc::Line>,
) -> Result<Vec<doc::Line>, String> {
    if before.iter().any(|l| indent::is_mixed(&l.text)) {
        return Ok(after);
    }
    match after.iter().position(|l| indent::is_mixed(&l.text)) {
        Some(i) => Err(format!(
            "the replacement would indent line {} with both tabs and spaces, which the file \
             never does; indent the replacement as the file is indented",
            i + 1
        )),
        None => Ok(after),
    }
}

/// Step 1: a search that is empty or only whitespace would match everywhere (or nowhere
/// meaningful), so it is refused before any matching.
fn refuse_blank_search(search: &str) -> Result<(), String> {
    if search.trim().is_empty() {
        return Err(if search.is_empty() {
            "the search text is empty; quote the exact lines to replace, or send the whole file \
             as content"
                .into()
        } else {
            "the search text is only whitespace; quote the exact lines to replace".into()
        });
    }
    Ok(())
}

/// Step 2, for one form of the edit: `Ok(None)` when the search does not occur (the caller
/// goes on to the line stage), the edited lines when it occurs once, and a refusal naming the
/// lines when it occurs several times.
fn apply_exact(
    lines: &[doc::Line],
    view: &str,
    s: &str,
    r: &str,
) -> Result<Option<Vec<doc::Line>>, String> {
    let (at, count) = punct::find(view, s, MAX_LISTED);
    match count {
        0 => Ok(None),
        1 => apply_exact_once(lines, view, at[0], s, r).map(Some),
        _ => {
            let mut where_: Vec<String> = at
                .iter()
                .map(|p| line_of(view, p.start).to_string())
                .collect();
            if count > at.len() {
                where_.push("…".into());
            }
            Err(format!(
                "search text {} matches {count} times (lines {}); include more surrounding \
                 lines so it matches exactly once",
                closest::quote_search(s),
                where_.join(", ")
            ))
        }
    }
}

/// Apply the one match at `at` of `view`, after checking it is the only place the search
/// could mean.
fn apply_exact_once(
    lines: &[doc::Line],
    view: &str,
    at: punct::Span,
    s: &str,
    r: &str,
) -> Result<Vec<doc::Line>, String> {
    refuse_loose_duplicates(lines, view, at, s)?;
    // From here on the search is the file's own text: what the replacement keeps of it is
    // taken from the file, so the search's typographic characters are gone from both.
    let matched = &view[at.start..at.end];
    let r = &punct::keep_from_file(matched, s, r);
    let s = matched;
    // Whole lines: placed as the line stage places them, re-indented in the file's unit, when
    // the search was quoted without (part of) its indentation or the replacement is written
    // in another unit than the file's. A search quoted whole makes the replacement's lines
    // the file's own frame unless one of them is off the file's grid: a deeper line on it
    // (a continuation indented twice, four spaces in a file of two) is written as sent, as
    // nothing says it is another unit.
    let first = line_of(view, at.start) - 1;
    if let Some(left) = exact::whole_lines(view, at, s) {
        let (sl, rl) = (split_lines(s), split_lines(r));
        let moves = match tolerant::mapping(lines, first, &sl, &rl) {
            Some(m) => {
                !left.is_empty()
                    || (indent::off_grid(lines.iter().map(|l| l.text.as_str()), &rl)
                        && rl
                            .iter()
                            .any(|l| indent::apply(&m, l).is_none_or(|new| new != *l)))
            }
            None => !left.is_empty(),
        };
        if moves && let Ok(done) = tolerant::splice(lines, first, &sl, &rl) {
            return Ok(done);
        }
    }
    let r = exact::reconcile(view, at, s, r);
    Ok(exact::splice(lines, view, at, s, &r))
}

/// A match is trusted only when no other place of the file holds the same text once
/// whitespace and both sides' punctuation are ignored: a search that dropped its indentation
/// can match inside another line byte for byte, and a typographic search can stand for text
/// written two ways.
fn refuse_loose_duplicates(
    lines: &[doc::Line],
    view: &str,
    at: punct::Span,
    s: &str,
) -> Result<(), String> {
    // Compared from the first line with content: blank edge lines are not content.
    let lead = s.find(|c: char| !c.is_whitespace()).unwrap_or(0);
    let content_line = line_of(view, at.start + lead.min(at.end - at.start)) - 1;
    let core = drop_blank_edges(s);
    let mut elsewhere: Vec<usize> = tolerant::loose_windows(lines, &split_lines(&core))
        .into_iter()
        .filter(|&w| w != content_line)
        .collect();
    if !(view.is_ascii() && s.is_ascii()) {
        // Counted, not located: the leftmost folded occurrence may start a little before the
        // match it stands for (`..` then `…` folds to dots that also start earlier).
        let (folded, places) = punct::loose_places(view, s);
        if places.len() > 1 {
            elsewhere.extend(places.into_iter().map(|p| line_of(&folded, p) - 1));
        }
    }
    elsewhere.sort_unstable();
    elsewhere.dedup();
    if !elsewhere.is_empty() {
        let mut listed: Vec<String> = elsewhere
            .iter()
            .take(MAX_LISTED)
            .map(|w| (w + 1).to_string())
            .collect();
        if elsewhere.len() > MAX_LISTED {
            listed.push("…".into());
        }
        return Err(format!(
            "search text {} matches at line {}, but the same text also stands at line {} \
             when whitespace and punctuation are ignored; copy the text exactly and include \
             more surrounding lines so it matches once",
            closest::quote_search(s),
            content_line + 1,
            listed.join(", ")
        ));
    }
    Ok(())
}

/// Step 3, for one form of the edit: whole lines compared ever more loosely ([`tolerant`]).
/// `Ok(None)` when no level matches; a refusal naming the windows when the first level that
/// matches finds several.
fn apply_tolerant(lines: &[doc::Line], s: &str, r: &str) -> Result<Option<Vec<doc::Line>>, String> {
    let s_lines = split_lines(s);
    let r_lines = split_lines(r);
    match tolerant::find(lines, &s_lines) {
        tolerant::Found::One(start) => tolerant::splice(lines, start, &s_lines, &r_lines).map(Some),
        tolerant::Found::Many(starts, level) => {
            let mut where_: Vec<String> = starts
                .iter()
                .take(MAX_LISTED)
                .map(|s| (s + 1).to_string())
                .collect();
            if starts.len() > MAX_LISTED {
                where_.push("…".into());
            }
            Err(format!(
                "search text {} matches {} places with {} (starting at lines {}); copy the \
                 lines exactly and include more surrounding lines so it matches once",
                closest::quote_search(s),
                starts.len(),
                level.describe(),
                where_.join(", ")
            ))
        }
        tolerant::Found::None => Ok(None),
    }
}

/// A text's lines for the line-level stage; a final line break ends the last line rather than
/// starting an empty one.
fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let t = text.strip_suffix('\n').unwrap_or(text);
    t.split('\n').collect()
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
    fn a_function_inserted_after_a_blank_line_takes_its_place_when_both_sides_keep_it() {
        // Both sides end with the blank line's newline: the new function goes between the
        // blank line and the doc comment, with no blank line of its own after it. (Without the
        // newline on the replacement, the edge rule keeps lines whole: see `exact.rs`.)
        let text = "    .collect()\n}\n\n/// P\nfn p() {}\n";
        let out = apply(
            text,
            &[e(
                "    .collect()\n}\n\n",
                "    .collect()\n}\n\nfn x() {\n}\n",
            )],
        )
        .unwrap();
        assert_eq!(out, "    .collect()\n}\n\nfn x() {\n}\n/// P\nfn p() {}\n");
    }

    #[test]
    fn applies_in_order() {
        let out = apply("a\nb\nc\n", &[e("b\n", "B\nB2\n"), e("B2\nc", "C")]).unwrap();
        assert_eq!(out, "a\nB\nC\n");
    }

    #[test]
    fn crlf_search_is_normalised() {
        assert_eq!(apply("a\nb\n", &[e("a\r\nb", "x")]).unwrap(), "x\n");
        assert_eq!(
            edit_text("a\r\nb\r\n", &[e("a\nb\n", "x\n")]).unwrap(),
            "x\r\n"
        );
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
    fn ambiguous_lists_lines() {
        let err = apply("x\ny\nx\n", &[e("x", "z")]).unwrap_err();
        assert!(err.contains("matches 2 times (lines 1, 3)"), "{err}");
    }

    #[test]
    fn whitespace_only_and_empty_searches_are_refused() {
        assert!(
            apply("a\n\nb\n", &[e("\n", "x")])
                .unwrap_err()
                .contains("only whitespace")
        );
        assert!(apply("a", &[e("", "b")]).unwrap_err().contains("empty"));
        assert!(apply("a", &[]).is_err());
    }

    #[test]
    fn edit_number_is_named() {
        let err = apply("a\n", &[e("a", "b"), e("q", "r")]).unwrap_err();
        assert!(
            err.starts_with("edit 2 of 2: search text not found"),
            "{err}"
        );
    }

    #[test]
    fn fences_and_blank_edges_are_tolerated() {
        let text = "def f():\n    return 1\n";
        let fenced = "```python\ndef f():\n    return 1\n```\n";
        let out = apply(
            text,
            &[e(fenced, "```python\ndef f():\n    return 2\n```\n")],
        )
        .unwrap();
        assert_eq!(out, "def f():\n    return 2\n");
        let out = apply(text, &[e("\n\ndef f():\n", "def g():\n")]).unwrap();
        assert_eq!(out, "def g():\n    return 1\n");
    }

    /// A real commit's hunk (fmt's base.h): a statement split with its continuation indented
    /// four spaces in a file indented by two, the search quoted whole at one level. The
    /// continuation is on the file's grid, so it is written as sent, not read as one level
    /// of a four-space unit and re-indented to two (which made a file other than the commit).
    #[test]
    fn a_continuation_twice_the_files_unit_is_written_as_sent() {
        let file = "auto parse(const Char* begin) -> const Char* {\n  if (c) {\n    if (begin != end) {\n      auto align = parse_align(to_ascii(*fill_end));\n      enter_state(state::align, align != align::none);\n      specs.fill = {begin, to_unsigned(fill_end - begin)};\n      specs.align = align;\n      begin = fill_end + 1;\n    }\n  }\n}\n";
        let search = "      auto align = parse_align(to_ascii(*fill_end));\n      enter_state(state::align, align != align::none);\n      specs.fill = {begin, to_unsigned(fill_end - begin)};\n      specs.align = align;\n      begin = fill_end + 1;";
        let replace = "      auto align = parse_align(to_ascii(*fill_end));\n      enter_state(state::align, align != align::none);\n      specs.fill =\n          basic_string_view<Char>(begin, to_unsigned(fill_end - begin));\n      specs.align = align;\n      begin = fill_end + 1;";
        let out = edit_text(
            file,
            &[Edit {
                search: search.into(),
                replace: replace.into(),
            }],
        );
        assert_eq!(out, Ok(file.replacen(search, replace, 1)));
    }
}
