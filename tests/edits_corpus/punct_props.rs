//! The typographic punctuation rule as a property. A search is a fragment of a generated file
//! (anywhere in a line, or whole lines) with some of its plain quotes, apostrophes, hyphens,
//! spaces and dots typed typographically; the replacement inserts a marker into it. An
//! independent oracle (a regular expression in which each typographic character of the search
//! is itself or its ASCII stand-in) counts the places it matches, and a second count folds both
//! sides' typographic characters. The edit must be made exactly when the first count is one
//! and the second is one, at that place, keeping the file's own characters around the marker;
//! otherwise it must be refused. Files also carry typographic characters of their own, which
//! only the same character matches.

use pai::workspace::{Edit, edit_text};
use proptest::prelude::*;
use regex::Regex;

/// Each ASCII text and the typographic characters a model types for it.
const FORMS: &[(&str, &[char])] = &[
    ("'", &['\u{2018}', '\u{2019}']),
    ("\"", &['\u{201C}', '\u{201D}', '\u{201E}']),
    ("-", &['\u{2013}', '\u{2014}', '\u{2212}']),
    (" ", &['\u{00A0}', '\u{202F}']),
    ("...", &['\u{2026}']),
];

fn ascii_of(c: char) -> Option<&'static str> {
    FORMS
        .iter()
        .find(|(_, forms)| forms.contains(&c))
        .map(|(a, _)| *a)
}

fn fold(s: &str) -> String {
    s.chars()
        .map(|c| ascii_of(c).map_or_else(|| c.to_string(), str::to_string))
        .collect()
}

/// Pieces lines are made of: code with plain punctuation, and prose with typographic.
const PIECES: &[&str] = &[
    "print(",
    "\"total:\"",
    ", t)",
    "x = ",
    "'a'",
    "n-1",
    " - ",
    "it's",
    "wait...",
    " ",
    "total",
    "\u{201C}total:\u{201D}",
    "it\u{2019}s",
    "a\u{2013}b",
    "\u{2026}",
];

/// Replace the `k`-th plain punctuation (by the choice list) with a typographic form.
fn typographic(fragment: &str, choices: &[(bool, usize)]) -> String {
    let mut out = String::new();
    let mut rest = fragment;
    let mut i = 0;
    while let Some(c) = rest.chars().next() {
        let form = FORMS
            .iter()
            .find(|(a, _)| rest.starts_with(a) && (a.len() == 1 || rest.len() >= a.len()));
        let (swap, pick) = choices
            .get(i % choices.len().max(1))
            .copied()
            .unwrap_or((false, 0));
        match form {
            Some((a, forms)) if swap => {
                out.push(forms[pick % forms.len()]);
                rest = &rest[a.len()..];
                i += 1;
            }
            Some(_) => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                i += 1;
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// The oracle's pattern: each typographic character of the search is itself or its ASCII.
fn pattern(search: &str) -> String {
    search
        .chars()
        .map(|c| match ascii_of(c) {
            Some(a) => format!("(?:{}|{})", regex::escape(&c.to_string()), regex::escape(a)),
            None => regex::escape(&c.to_string()),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_typographic_search_matches_its_one_place_or_is_refused(
        lines in prop::collection::vec(
            prop::collection::vec(prop::sample::select(PIECES.to_vec()), 1..6), 1..7),
        line_frac in 0.0f64..1.0,
        from_frac in 0.0f64..1.0,
        to_frac in 0.0f64..1.0,
        whole_lines in prop::bool::weighted(0.2),
        choices in prop::collection::vec((any::<bool>(), 0usize..3), 1..6),
        marker_frac in 0.0f64..1.0,
    ) {
        // Lines without whitespace at their edges: lines that differ only there are the
        // whitespace rule's ambiguity, not this one's.
        let lines: Vec<String> = lines
            .iter()
            .map(|ps| match ps.concat().trim() {
                "" => "x".to_string(),
                t => t.to_string(),
            })
            .collect();
        let original: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let li = ((lines.len() as f64) * line_frac) as usize % lines.len();
        let line = &lines[li];
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        // A fragment without whitespace at its edges (a search with blank edges is the line
        // stage's business), anywhere in the line, or the whole line with its line break.
        let fragment = if whole_lines {
            format!("{line}\n")
        } else {
            let a = ((chars.len() as f64) * from_frac) as usize % chars.len();
            let b = a + 1 + ((chars.len() - a) as f64 * to_frac) as usize % (chars.len() - a);
            let lo = chars[a].0;
            let hi = chars.get(b).map_or(line.len(), |(p, _)| *p);
            line[lo..hi].trim().to_string()
        };
        prop_assume!(!fragment.trim().is_empty());
        let search = typographic(&fragment, &choices);
        let k = {
            let cs: Vec<usize> = search.char_indices().map(|(p, _)| p).chain([search.len()]).collect();
            let k = cs[((cs.len() as f64) * marker_frac) as usize % cs.len()];
            // The marker goes before the final line break of a whole-line search.
            if whole_lines && k == search.len() { k - 1 } else { k }
        };
        let replace = format!("{}ZZ{}", &search[..k], &search[k..]);

        let re = Regex::new(&format!("({})({})", pattern(&search[..k]), pattern(&search[k..]))).unwrap();
        let places: Vec<regex::Captures> = re.captures_iter(&original).collect();
        let loose = fold(&original).matches(fold(&search).as_str()).count();
        let result = edit_text(&original, &[Edit { search: search.clone(), replace }]);
        if places.len() == 1 && loose == 1 {
            let m = places[0].get(0).unwrap();
            let split = places[0].get(1).unwrap().end();
            let want = format!(
                "{}ZZ{}",
                &original[..split],
                &original[split..]
            );
            prop_assert_eq!(
                result.as_deref(),
                Ok(want.as_str()),
                "search {:?} in {:?} (match {}..{})", search, original, m.start(), m.end()
            );
        } else {
            prop_assert!(
                result.is_err(),
                "search {:?} matches {} places ({} loosely) in {:?}, yet wrote {:?}",
                search, places.len(), loose, original, result
            );
        }
    }
}

/// The neighbour at every position in a line: the fragment at the start, the middle and
/// the end of the line, with curly double or single quotes, with text around it or alone.
#[test]
fn a_quoted_fragment_matches_at_any_position_in_a_line() {
    for (file_q, open, close) in [
        ('"', '\u{201C}', '\u{201D}'),
        ('\'', '\u{2018}', '\u{2019}'),
    ] {
        for line in [
            "print(QtotalQ, total)",
            "QtotalQ",
            "x = QtotalQ",
            "QtotalQ + y",
            "f(a, QtotalQ)",
        ] {
            let line = line.replace('Q', &file_q.to_string());
            let original = format!("def show(total):\n    {line}\n    return total\n");
            let search = format!("{open}total{close}");
            let got = edit_text(
                &original,
                &[Edit {
                    search: search.clone(),
                    replace: format!("{file_q}sum{file_q}"),
                }],
            );
            let want = original.replacen(
                &format!("{file_q}total{file_q}"),
                &format!("{file_q}sum{file_q}"),
                1,
            );
            assert_eq!(got.as_deref(), Ok(want.as_str()), "{search:?} in {line:?}");
        }
    }
}
