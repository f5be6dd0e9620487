//! Re-indenting a replacement written in another indentation than the file's.
//!
//! Each side indents by a unit (a tab, or N spaces): the file's is read from the whole file,
//! the edit's from its search and replacement together, each as the most common step from a
//! line to the next deeper one. A line's indentation is then a number of levels of its side's
//! unit plus alignment spaces. The matched lines fix how many levels deeper the file stands
//! than the search, which must be the same on every one of them; each new line is written at its
//! own level plus that shift, in the file's unit. Whatever cannot be read so is a refusal,
//! never a guess. When both sides use the same number of spaces, the shift is counted in
//! columns instead, which also carries lines aligned off the unit grid.

/// How the search's indentation turns into the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mapping {
    /// The matched lines have the file's indentation; the replacement is written as sent.
    Same,
    /// Both sides indent with the same number of spaces; the file is `delta` columns deeper.
    Columns { delta: isize },
    /// The sides indent in different units; the file is `shift` levels deeper.
    Levels {
        from: Frame,
        to: Frame,
        shift: isize,
    },
}

/// One level of indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Tab,
    Spaces(usize),
}

/// How one side reads and writes indentation: its unit, and for spaces the column its levels
/// count from (a search quoted with part of its indentation dropped starts off the grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Frame {
    unit: Unit,
    origin: usize,
}

impl Frame {
    /// An indentation as (levels, alignment spaces), when it is made of this frame's units.
    fn read(self, indent: &str) -> Option<(usize, usize)> {
        match self.unit {
            Unit::Tab => {
                let tabs = indent.bytes().take_while(|&b| b == b'\t').count();
                let rest = &indent[tabs..];
                rest.bytes()
                    .all(|b| b == b' ')
                    .then_some((tabs, rest.len()))
            }
            Unit::Spaces(n) => {
                let w = spaces(indent)?.checked_sub(self.origin)?;
                Some((w / n, w % n))
            }
        }
    }

    fn write(self, levels: usize, align: usize) -> String {
        match self.unit {
            Unit::Tab => format!("{}{}", "\t".repeat(levels), " ".repeat(align)),
            Unit::Spaces(n) => " ".repeat(self.origin + levels * n + align),
        }
    }
}

/// The width of an indentation made only of spaces.
fn spaces(indent: &str) -> Option<usize> {
    indent.bytes().all(|b| b == b' ').then_some(indent.len())
}

/// The leading whitespace of a line.
pub(super) fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Whether a line's leading whitespace mixes tabs and spaces: a space before a tab, or tabs
/// followed by more than one space. Tabs followed by one space are tab indentation with
/// one-space alignment (a doc comment's ` * ` under its `/**`), as a one-space step is
/// alignment everywhere here.
pub(super) fn is_mixed(line: &str) -> bool {
    let ind = indent_of(line);
    let tabs = ind.bytes().take_while(|&b| b == b'\t').count();
    let rest = &ind.as_bytes()[tabs..];
    if rest.contains(&b'\t') {
        return true;
    }
    tabs > 0 && rest.len() > 1
}

/// The evidence for a text's unit: how often each step deeper (and, failing those, shallower)
/// occurs between consecutive non-blank lines, and which kinds of indentation occur at all.
#[derive(Debug, Default)]
struct Steps {
    deeper: Vec<(Unit, usize)>,
    shallower: Vec<(Unit, usize)>,
    tabs: bool,
    space_gcd: usize,
}

impl Steps {
    fn add<'a>(&mut self, lines: impl Iterator<Item = &'a str>) {
        let mut prev: Option<&str> = None;
        for line in lines {
            if line.trim().is_empty() {
                continue;
            }
            let ind = indent_of(line);
            if !ind.is_empty() {
                match spaces(ind) {
                    Some(w) => self.space_gcd = gcd(self.space_gcd, w),
                    None if ind.bytes().all(|b| b == b'\t') => self.tabs = true,
                    None => {}
                }
            }
            if let Some(p) = prev {
                if let Some(added) = ind.strip_prefix(p).filter(|a| !a.is_empty()) {
                    bump(&mut self.deeper, added);
                } else if let Some(removed) = p.strip_prefix(ind).filter(|r| !r.is_empty()) {
                    bump(&mut self.shallower, removed);
                }
            }
            prev = Some(ind);
        }
    }

    fn unit(&self) -> Option<Unit> {
        mode(&self.deeper)
            .or_else(|| mode(&self.shallower))
            .or(match (self.tabs, self.space_gcd) {
                (true, 0) => Some(Unit::Tab),
                // One space in common is alignment again, not a unit.
                (false, n) if n > 1 => Some(Unit::Spaces(n)),
                _ => None,
            })
    }
}

/// Count one step, when it is whole tabs or whole spaces. A step of one space is alignment
/// (the ` * ` of a doc comment under its `/**`, a continuation line), never a level: counted
/// as a unit, a replacement with more comment lines than code would read as indented by one
/// space, and be re-indented although it matched the file exactly.
fn bump(counts: &mut Vec<(Unit, usize)>, step: &str) {
    let unit = if step.bytes().all(|b| b == b'\t') {
        Unit::Tab
    } else if let Some(n) = spaces(step).filter(|&n| n > 1) {
        Unit::Spaces(n)
    } else {
        return;
    };
    match counts.iter_mut().find(|(u, _)| *u == unit) {
        Some((_, c)) => *c += 1,
        None => counts.push((unit, 1)),
    }
}

/// The most frequent step; a tie goes to the smallest.
fn mode(counts: &[(Unit, usize)]) -> Option<Unit> {
    let width = |u: &Unit| match u {
        Unit::Tab => 0,
        Unit::Spaces(n) => *n,
    };
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(width(&b.0).cmp(&width(&a.0))))
        .map(|(u, _)| *u)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Infer the mapping from the file's lines (`file`, for its unit), the matched
/// `(file line, search line)` pairs and the edit's search and replacement lines. `None` when
/// the matched lines disagree on it.
pub(super) fn infer<'a>(
    file: impl Iterator<Item = &'a str>,
    pairs: &[(&str, &str)],
    search: &[&str],
    replace: &[&str],
) -> Option<Mapping> {
    let shaped: Vec<(&str, &str)> = pairs
        .iter()
        .filter(|(f, s)| !f.trim().is_empty() && !s.trim().is_empty())
        .map(|(f, s)| (indent_of(f), indent_of(s)))
        .collect();
    let same = shaped.iter().all(|(f, s)| f == s);
    let mut text = Steps::default();
    text.add(search.iter().copied());
    text.add(replace.iter().copied());
    let mut own = Steps::default();
    own.add(file);
    let v = text.unit().or(own.unit());
    let u = own.unit().or(v);
    let mapping = match (u, v) {
        (Some(Unit::Spaces(a)), Some(Unit::Spaces(b))) if a == b => columns(&shaped),
        (Some(to), Some(from)) => levels(&shaped, from, to, search, replace),
        _ => None,
    };
    mapping.or(same.then_some(Mapping::Same))
}

/// Both sides in the same spaces: one column offset on every matched line.
fn columns(shaped: &[(&str, &str)]) -> Option<Mapping> {
    let mut delta = None;
    for (f, s) in shaped {
        let d = spaces(f)? as isize - spaces(s)? as isize;
        if *delta.get_or_insert(d) != d {
            return None;
        }
    }
    Some(Mapping::Columns {
        delta: delta.unwrap_or(0),
    })
}

/// Different units: one level shift on every matched line, alignment kept.
fn levels(
    shaped: &[(&str, &str)],
    from: Unit,
    to: Unit,
    search: &[&str],
    replace: &[&str],
) -> Option<Mapping> {
    let origin = match from {
        Unit::Tab => 0,
        Unit::Spaces(n) => {
            search
                .iter()
                .chain(replace)
                .filter(|l| !l.trim().is_empty())
                .filter_map(|l| spaces(indent_of(l)))
                .min()
                .unwrap_or(0)
                % n
        }
    };
    let from = Frame { unit: from, origin };
    let to = Frame {
        unit: to,
        origin: 0,
    };
    let mut shift = None;
    for (f, s) in shaped {
        let (lf, af) = to.read(f)?;
        let (ls, as_) = from.read(s)?;
        let d = lf as isize - ls as isize;
        if af != as_ || *shift.get_or_insert(d) != d {
            return None;
        }
    }
    Some(Mapping::Levels {
        from,
        to,
        shift: shift.unwrap_or(0),
    })
}

/// Whether some of `lines` are indented off the file's grid: tabs where the file indents with
/// spaces, spaces where it indents with tabs (beyond one space of alignment), or a width that
/// is no whole number of its unit plus one space of alignment. A line on the grid may be a
/// nested level or a continuation; only one off it shows another unit than the file's.
pub(super) fn off_grid<'a>(file: impl Iterator<Item = &'a str>, lines: &[&str]) -> bool {
    let mut own = Steps::default();
    own.add(file);
    let Some(unit) = own.unit() else {
        return false;
    };
    lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
        .any(|ind| match unit {
            Unit::Tab => ind.starts_with(' ') || is_mixed(ind),
            Unit::Spaces(n) => spaces(ind).is_none_or(|w| w % n > 1),
        })
}

/// Re-indent one replacement line; `None` when the mapping cannot say where it goes.
pub(super) fn apply(m: &Mapping, line: &str) -> Option<String> {
    if line.trim().is_empty() {
        return Some(String::new());
    }
    let ind = indent_of(line);
    let body = &line[ind.len()..];
    match m {
        Mapping::Same => Some(line.to_string()),
        Mapping::Columns { delta } => {
            let w = usize::try_from(spaces(ind)? as isize + delta).ok()?;
            Some(format!("{}{body}", " ".repeat(w)))
        }
        Mapping::Levels { from, to, shift } => {
            let (k, align) = from.read(ind)?;
            let k = usize::try_from(k as isize + shift).ok()?;
            Some(format!("{}{body}", to.write(k, align)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(file: &str, pairs: &[(&str, &str)], search: &[&str], replace: &[&str]) -> Mapping {
        infer(file.lines(), pairs, search, replace).unwrap()
    }

    #[test]
    fn same_spaces_shift_by_columns() {
        let file = "def f():\n    a\n        b\n";
        let m = map(
            file,
            &[("        a", "    a"), ("            b", "        b")],
            &["    a", "        b"],
            &["    a", "        c", "  d"],
        );
        assert_eq!(apply(&m, "        c").unwrap(), "            c");
        assert_eq!(apply(&m, "  d").unwrap(), "      d");
    }

    #[test]
    fn a_tab_level_becomes_the_files_spaces_however_deep() {
        let file = "def f():\n    x = 1\n        y\n";
        let m = map(
            file,
            &[("    x = 1", "\tx = 1")],
            &["\tx = 1"],
            &["\tx = 1", "\tif x:", "\t\tx += 1"],
        );
        assert_eq!(apply(&m, "\t\tx += 1").unwrap(), "        x += 1");
        assert_eq!(apply(&m, "\t\t\tz").unwrap(), "            z");
    }

    #[test]
    fn spaces_become_tabs_and_two_spaces_become_four() {
        let tabs = map(
            "f {\n\tx\n}\n",
            &[("\tx", "    x")],
            &["    x"],
            &["    x", "    if y {", "        z", "    }"],
        );
        assert_eq!(apply(&tabs, "        z").unwrap(), "\t\tz");
        let four = map(
            "a:\n    b\n",
            &[("    b", "  b")],
            &["  b"],
            &["  b", "    c"],
        );
        assert_eq!(apply(&four, "    c").unwrap(), "        c");
    }

    #[test]
    fn inconsistent_levels_refuse() {
        let file = "if a:\n    b\n    c\n";
        assert!(
            infer(
                file.lines(),
                &[("if a:", "if a:"), ("    b", "    b"), ("    c", "c")],
                &["if a:", "    b", "c"],
                &["if a:", "    b", "d"],
            )
            .is_none()
        );
    }

    #[test]
    fn mixed_leading_whitespace_is_recognised() {
        assert!(is_mixed("    \tx"));
        assert!(is_mixed("\t  x"));
        assert!(!is_mixed("\t\tx"));
        assert!(!is_mixed("    x \t y"));
    }
}
