//! The string stage: the search text occurs in the file as a string (line breaks compared as
//! `\n`, the search's typographic punctuation standing for ASCII: see [`super::punct`]). The
//! only liberty taken is at the edges: a search and replacement that disagree on a leading or
//! trailing line break are reconciled so that no two lines are merged and no line is split by
//! accident.

use super::doc::{self, End, Line};
use super::punct::Span;

/// The replacement to splice in over `at`, with its edge line breaks made to agree with the
/// search's.
pub(super) fn reconcile(view: &str, at: Span, search: &str, replace: &str) -> String {
    let p = at.start;
    if replace.is_empty() {
        // Deleting text that holds a line break joins what stands left and right of it; when
        // both sides keep text on their lines, keep one break between them.
        let left_fragment = p > 0 && !view[..p].ends_with('\n');
        let rest = &view[at.end..];
        let right_fragment = !rest.is_empty() && !rest.starts_with('\n');
        let joins = search.contains('\n') && left_fragment && right_fragment;
        let both_edges = search.len() > 1 && search.starts_with('\n') && search.ends_with('\n');
        return if joins || both_edges {
            "\n".into()
        } else {
            String::new()
        };
    }
    let mut r = replace.to_string();
    match (search.ends_with('\n'), r.ends_with('\n')) {
        (true, false) => r.push('\n'),
        (false, true) => {
            r.pop();
        }
        _ => {}
    }
    match (search.starts_with('\n'), r.starts_with('\n')) {
        (true, false) => r.insert(0, '\n'),
        (false, true) => {
            r.remove(0);
        }
        _ => {}
    }
    r
}

/// When the match `at` covers whole lines (it may start after some of its first line's
/// indentation), the indentation left of it.
pub(super) fn whole_lines<'a>(view: &'a str, at: Span, search: &str) -> Option<&'a str> {
    let line_start = view[..at.start].rfind('\n').map_or(0, |i| i + 1);
    let left = &view[line_start..at.start];
    let rest = &view[at.end..];
    let ends_line = search.ends_with('\n') || rest.is_empty() || rest.starts_with('\n');
    (!search.starts_with('\n') && left.trim().is_empty() && ends_line).then_some(left)
}

/// Splice `replace` over the match `at` of `search` in the document's `\n` view.
/// Lines outside the replaced region are kept as they were, endings included; the region's
/// new lines keep the old lines' own endings when their number is unchanged, else the region's
/// style; the file's final-newline state is kept.
pub(super) fn splice(
    lines: &[Line],
    view: &str,
    at: Span,
    search: &str,
    replace: &str,
) -> Vec<Line> {
    let (p, end) = (at.start, at.end);
    let line_start = view[..p].rfind('\n').map_or(0, |i| i + 1);
    let line_end = if search.ends_with('\n') {
        end
    } else {
        view[end..].find('\n').map_or(view.len(), |i| end + i + 1)
    };
    let first = view[..line_start].matches('\n').count();
    let last_excl = first
        + view[line_start..line_end].matches('\n').count()
        + usize::from(!view[line_start..line_end].ends_with('\n') && line_end > line_start);
    let last_excl = last_excl.min(lines.len()).max(first);
    let mut middle = String::with_capacity(line_end - line_start + replace.len());
    middle.push_str(&view[line_start..p]);
    middle.push_str(replace);
    middle.push_str(&view[end..line_end]);
    let mut mid = doc::parse(&middle);
    let old = &lines[first..last_excl];
    let style = doc::style_for(lines, first, last_excl);
    // Lines the edit kept or changed in place keep their own endings; new lines take the
    // region's.
    let old_texts: Vec<String> = old.iter().map(|l| l.text.clone()).collect();
    let mid_texts: Vec<String> = mid.iter().map(|l| l.text.clone()).collect();
    let mut ends = vec![style; mid.len()];
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_texts, &mid_texts) {
        let (old_index, new_index, len) = match op {
            similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => (old_index, new_index, len),
            similar::DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, new_index, old_len.min(new_len)),
            _ => continue,
        };
        for k in 0..len {
            if old[old_index + k].end != End::None {
                ends[new_index + k] = old[old_index + k].end;
            }
        }
    }
    let region_end = old.last().map_or(End::Lf, |l| l.end);
    let at_file_end = last_excl == lines.len();
    let n = mid.len();
    for (i, (m, e)) in mid.iter_mut().zip(ends).enumerate() {
        m.end = if i + 1 == n && at_file_end && region_end == End::None {
            End::None
        } else {
            e
        };
    }
    let mut out = Vec::with_capacity(lines.len() + mid.len());
    out.extend_from_slice(&lines[..first]);
    let deleted_file_end = mid.is_empty()
        && last_excl == lines.len()
        && old.last().is_some_and(|l| l.end == End::None);
    out.extend(mid);
    out.extend_from_slice(&lines[last_excl..]);
    if deleted_file_end && let Some(l) = out.last_mut() {
        l.end = End::None;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, search: &str, replace: &str) -> String {
        let lines = doc::parse(text);
        let view = doc::lf_view(&lines);
        let (at, n) = super::super::punct::find(&view, search, 1);
        assert_eq!(n, 1);
        let r = reconcile(&view, at[0], search, replace);
        doc::render(&splice(&lines, &view, at[0], search, &r))
    }

    #[test]
    fn edge_newlines_never_join_or_split_lines() {
        assert_eq!(
            run("x = 1\ny = 2\n", "x = 1\n", "x = 10"),
            "x = 10\ny = 2\n"
        );
        assert_eq!(
            run("x = 1\ny = 2\n", "x = 1", "x = 10\n"),
            "x = 10\ny = 2\n"
        );
        assert_eq!(run("a\nx = 1\n", "\nx = 1", "x = 10"), "a\nx = 10\n");
        assert_eq!(run("a\nx = 1\nb\n", "\nx = 1\n", ""), "a\nb\n");
        assert_eq!(run("a\nx = 1\nb\n", "x = 1\n", ""), "a\nb\n");
        assert_eq!(run("x = 1\ny\n", "1\n", ""), "x = \ny\n");
    }

    #[test]
    fn mixed_endings_are_kept_per_line() {
        assert_eq!(
            run("a\r\nb\nc\r\nd\n", "b\nc\n", "B\nC\nC2\n"),
            "a\r\nB\nC\r\nC2\nd\n"
        );
        assert_eq!(run("a\r\nb\r\nc\n", "b", "B"), "a\r\nB\r\nc\n");
    }
}
