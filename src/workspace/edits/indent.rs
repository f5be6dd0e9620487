//! Re-indenting a replacement that was matched with different indentation. The mapping from
//! the search's indentation to the file's is inferred from the matched lines and must be
//! consistent on every one of them; a replacement line it cannot map is a refusal, never a
//! guess.

/// How the search's indentation turns into the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mapping {
    /// Every search indentation starts with `from`; the file's has `to` in its place.
    Prefix { from: String, to: String },
    /// Both sides indent in whole units (a tab, or N spaces); the file is `shift` levels deeper.
    Units { from: Unit, to: Unit, shift: isize },
}

/// One level of indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Tab,
    Spaces(usize),
}

/// The leading whitespace of a line.
pub(super) fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Infer the mapping from `(file line, search line)` pairs that matched. Blank lines say
/// nothing about indentation.
pub(super) fn infer<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Option<Mapping> {
    let shaped: Vec<(&str, &str)> = pairs
        .filter(|(f, s)| !f.trim().is_empty() && !s.trim().is_empty())
        .map(|(f, s)| (indent_of(f), indent_of(s)))
        .collect();
    let Some(&(f0, s0)) = shaped.first() else {
        return Some(Mapping::Prefix {
            from: String::new(),
            to: String::new(),
        });
    };
    let prefix_fits = shaped
        .iter()
        .all(|(f, s)| match (f.strip_prefix(f0), s.strip_prefix(s0)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        });
    if prefix_fits {
        return Some(Mapping::Prefix {
            from: s0.to_string(),
            to: f0.to_string(),
        });
    }
    let from = unit_of(shaped.iter().map(|p| p.1))?;
    let to = unit_of(shaped.iter().map(|p| p.0))?;
    let mut shift = None;
    for (f, s) in &shaped {
        let d = level(f, to)? as isize - level(s, from)? as isize;
        if *shift.get_or_insert(d) != d {
            return None;
        }
    }
    Some(Mapping::Units {
        from,
        to,
        shift: shift.unwrap_or(0),
    })
}

/// The unit a set of indentations is made of, when they are all tabs or all spaces and at
/// least one is not empty.
fn unit_of<'a>(indents: impl Iterator<Item = &'a str>) -> Option<Unit> {
    let mut tabs = false;
    let mut spaces = 0usize;
    for i in indents {
        if i.is_empty() {
            continue;
        }
        if i.bytes().all(|b| b == b'\t') {
            tabs = true;
        } else if i.bytes().all(|b| b == b' ') {
            spaces = gcd(spaces, i.len());
        } else {
            return None;
        }
    }
    match (tabs, spaces) {
        (true, 0) => Some(Unit::Tab),
        (false, n) if n > 0 => Some(Unit::Spaces(n)),
        _ => None,
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// How many units an indentation is, when it is made of whole units.
fn level(indent: &str, unit: Unit) -> Option<usize> {
    match unit {
        Unit::Tab => indent.bytes().all(|b| b == b'\t').then_some(indent.len()),
        Unit::Spaces(n) => (indent.bytes().all(|b| b == b' ') && indent.len().is_multiple_of(n))
            .then_some(indent.len() / n),
    }
}

fn render(unit: Unit, levels: usize) -> String {
    match unit {
        Unit::Tab => "\t".repeat(levels),
        Unit::Spaces(n) => " ".repeat(n * levels),
    }
}

/// Re-indent one replacement line; `None` when the mapping cannot say where it goes.
pub(super) fn apply(m: &Mapping, line: &str) -> Option<String> {
    if line.trim().is_empty() {
        return Some(String::new());
    }
    let ind = indent_of(line);
    let body = &line[ind.len()..];
    match m {
        Mapping::Prefix { from, to } => {
            if let Some(rest) = ind.strip_prefix(from.as_str()) {
                return Some(format!("{to}{rest}{body}"));
            }
            // A line less indented than the search's first line: width arithmetic is exact
            // only when everything is spaces.
            let spaces = |s: &str| s.bytes().all(|b| b == b' ');
            if spaces(ind) && spaces(from) && spaces(to) {
                let w = (ind.len() + to.len()).checked_sub(from.len())?;
                return Some(format!("{}{body}", " ".repeat(w)));
            }
            None
        }
        Mapping::Units { from, to, shift } => {
            let l = level(ind, *from)? as isize + shift;
            (l >= 0).then(|| format!("{}{body}", render(*to, l as usize)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistent_offsets_map_and_inconsistent_ones_refuse() {
        let m =
            infer([("        a", "    a"), ("            b", "        b")].into_iter()).unwrap();
        assert_eq!(apply(&m, "        c").unwrap(), "            c");
        assert_eq!(apply(&m, "  d").unwrap(), "      d");
        let tabs = infer([("\ta", "    a"), ("\t\tb", "        b")].into_iter()).unwrap();
        assert_eq!(apply(&tabs, "        c").unwrap(), "\t\tc");
        assert!(infer([("a", "a"), ("    b", "b")].into_iter()).is_none());
    }
}
