//! The indentation rule as a property: for a file indented with unit U (a tab, two or four
//! spaces) and a search/replace written in unit V, shifted by any number of added or removed
//! levels and nesting new lines any number of levels deep, the result is the replacement
//! re-indented in U (an oracle built independently from the levels) or a refusal; no line of
//! the result mixes tabs and spaces in its indentation. When every line of the file is
//! distinct the edit must be made, so the property cannot hold by refusing everything.

use pai::workspace::{Edit, edit_text};
use proptest::prelude::*;

/// An indentation unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Tab,
    Two,
    Four,
}

impl Unit {
    fn render(self, levels: usize) -> String {
        match self {
            Unit::Tab => "\t".repeat(levels),
            Unit::Two => "  ".repeat(levels),
            Unit::Four => "    ".repeat(levels),
        }
    }
}

fn unit() -> impl Strategy<Value = Unit> {
    prop::sample::select(vec![Unit::Tab, Unit::Two, Unit::Four])
}

/// A file of `(level, content)` lines, as nested code is: each line at most one level deeper
/// than the one before, and at least one line indented (else the file has no unit).
fn levels(n: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..3, n).prop_map(|choices| {
        let mut out: Vec<usize> = Vec::with_capacity(choices.len());
        for c in choices {
            let prev = out.last().copied().unwrap_or(0);
            // 0: one level deeper, 1: same level, 2: one level out.
            let next = match c {
                0 if !out.is_empty() => prev + 1,
                2 => prev.saturating_sub(1),
                _ => prev,
            };
            out.push(next);
        }
        if out.iter().all(|&l| l == 0) && out.len() > 1 {
            out[1] = 1;
        }
        out
    })
}

/// Render `(level, content)` lines in a unit, shifted by `shift` levels.
fn render(lines: &[(usize, String)], unit: Unit, shift: isize) -> String {
    lines
        .iter()
        .map(|(l, c)| {
            let l = usize::try_from(*l as isize + shift).unwrap();
            format!("{}{c}\n", unit.render(l))
        })
        .collect()
}

fn has_mixed_indent(text: &str) -> bool {
    text.lines().any(|l| {
        let ind: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        ind.contains(' ') && ind.contains('\t')
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500),
        ..ProptestConfig::default()
    })]

    #[test]
    fn replacement_is_reindented_in_the_files_unit_or_refused(
        file_unit in unit(),
        edit_unit in unit(),
        file_levels in (3usize..14).prop_flat_map(levels),
        start_frac in 0.0f64..1.0,
        len in 1usize..5,
        shift_choice in 0usize..5,
        at in 0usize..5,
        nest in 0usize..4,
        outdent in any::<bool>(),
        distinct in prop::bool::weighted(0.8),
    ) {
        let n = file_levels.len();
        let start = ((n as f64) * start_frac) as usize % n;
        let len = len.min(n - start);
        let content = |i: usize| {
            if distinct { format!("step_{i}()") } else { format!("step_{}()", i % 3) }
        };
        let file: Vec<(usize, String)> =
            file_levels.iter().enumerate().map(|(i, &l)| (l, content(i))).collect();
        let block = &file[start..start + len];
        let lowest = block.iter().map(|(l, _)| *l).min().unwrap();
        // The search's levels: any number removed (down to none left) or up to two added.
        let shift = shift_choice as isize - lowest.min(2) as isize;
        let shift = shift.max(-(lowest as isize));

        // The replacement, in the file's levels.
        let at = at % len;
        let mut replacement: Vec<(usize, String)> = block[..=at].to_vec();
        let base = block[at].0;
        for k in 0..nest {
            replacement.push((base + 1 + k, format!("added_{k}()")));
        }
        for (j, (l, c)) in block[at + 1..].iter().enumerate() {
            // Taking a line one level out is a removed nesting level; never below what the
            // search's frame can write, nor more than one level out from the line before.
            let floor = (-shift).max(0) as usize;
            let next_fits = block.get(at + 2).is_none_or(|(nl, _)| nl <= l);
            let l = if outdent && j == 0 && *l > floor && next_fits { l - 1 } else { *l };
            replacement.push((l, c.clone()));
        }

        let original = render(&file, file_unit, 0);
        let search = render(block, edit_unit, shift);
        let replace = render(&replacement, edit_unit, shift);
        // A search that is the file's own text, indentation and all, with a replacement whose
        // every line stands on the file's grid (spaces in whole units of a spaces file, tabs
        // in a tabs file) is written as sent: its deeper lines may be nested levels or
        // continuations, and nothing says which. Otherwise its levels go into the file's unit.
        let on_grid = |level: usize| {
            let l = level as isize + shift;
            match (file_unit, edit_unit) {
                (a, b) if a == b => true,
                (Unit::Tab, _) | (_, Unit::Tab) => l == 0,
                (Unit::Two, Unit::Four) => true,
                (Unit::Four, _) => l % 2 == 0,
                (Unit::Two, _) => true,
            }
        };
        let as_sent = search == render(block, file_unit, 0)
            && replacement.iter().all(|(l, _)| on_grid(*l));
        let oracle = format!(
            "{}{}{}",
            render(&file[..start], file_unit, 0),
            if as_sent { replace.clone() } else { render(&replacement, file_unit, 0) },
            render(&file[start + len..], file_unit, 0)
        );
        let result = edit_text(&original, &[Edit { search: search.clone(), replace: replace.clone() }]);
        match &result {
            Ok(out) => {
                prop_assert!(!has_mixed_indent(out), "mixed indentation: {out:?}");
                prop_assert_eq!(out, &oracle, "search {:?} replace {:?}", search, replace);
            }
            Err(why) => prop_assert!(
                !distinct,
                "refused although every line is distinct: {why}\noriginal {original:?}\n\
                 search {search:?}\nreplace {replace:?}"
            ),
        }
    }
}

/// The neighbour and its own neighbours, by enumeration: every pair of units, the search
/// at the file's level, one level out and one level in, the replacement nesting one to three
/// levels.
#[test]
fn every_unit_pair_nests_new_levels_in_the_files_unit() {
    let units = [Unit::Tab, Unit::Two, Unit::Four];
    for file_unit in units {
        for edit_unit in units {
            for shift in [-1isize, 0, 1] {
                for nest in 1..=3 {
                    let file = vec![
                        (0, "def total(xs):".to_string()),
                        (1, "t = 0".to_string()),
                        (1, "for x in xs:".to_string()),
                        (2, "t += x".to_string()),
                        (1, "return t".to_string()),
                    ];
                    let block = &file[1..2];
                    let mut replacement = block.to_vec();
                    for k in 0..nest {
                        replacement.push((1 + k, format!("if x > {k}:")));
                    }
                    replacement.push((1 + nest, "t = 1".to_string()));
                    let original = render(&file, file_unit, 0);
                    let search = render(block, edit_unit, shift);
                    let replace = render(&replacement, edit_unit, shift);
                    let want = format!(
                        "{}{}{}",
                        render(&file[..1], file_unit, 0),
                        render(&replacement, file_unit, 0),
                        render(&file[2..], file_unit, 0)
                    );
                    let got = edit_text(&original, &[Edit { search, replace }]);
                    assert_eq!(
                        got.as_deref(),
                        Ok(want.as_str()),
                        "file {file_unit:?}, edit {edit_unit:?}, shift {shift}, nest {nest}"
                    );
                }
            }
        }
    }
}
