//! The edit corpus in `fixtures/edits/` (one JSON file per case: the original file, the edits,
//! and the expected file or `refuse`), and how a result is judged. Shared by the corpus test
//! and the benchmark.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use pai::workspace::{Edit, edit_text};
use serde::Deserialize;

#[derive(Deserialize)]
pub struct Case {
    pub class: String,
    pub original: String,
    edits: Vec<CaseEdit>,
    pub expected: Option<String>,
    pub refuse: Option<String>,
}

#[derive(Deserialize)]
struct CaseEdit {
    search: String,
    replace: String,
}

pub fn corpus() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/edits");
    let mut names: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let case: Case = serde_json::from_str(&fs::read_to_string(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(
                case.expected.is_some() != case.refuse.is_some(),
                "{}: give expected or refuse",
                p.display()
            );
            (p.file_stem().unwrap().to_string_lossy().into_owned(), case)
        })
        .collect()
}

pub fn edits(case: &Case) -> Vec<Edit> {
    case.edits
        .iter()
        .map(|e| Edit {
            search: e.search.clone(),
            replace: e.replace.clone(),
        })
        .collect()
}

/// How one case came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Correct,
    Refused,
    Wrong,
}

/// Judge one result: success must be the expected file; a refusal must name where the file
/// comes closest (a line number), and for a case meant to be refused, say what it was told to.
pub fn judge(case: &Case, result: &Result<String, String>) -> (Outcome, String) {
    match (result, &case.expected) {
        (Ok(out), Some(want)) if out == want => (Outcome::Correct, String::new()),
        (Ok(out), _) => (Outcome::Wrong, format!("wrote {out:?}")),
        (Err(msg), _) => {
            let names_place = msg.contains("line");
            let says = case
                .refuse
                .as_deref()
                .is_none_or(|needle| msg.contains(needle));
            if names_place && says {
                (Outcome::Refused, msg.clone())
            } else {
                (
                    Outcome::Wrong,
                    format!("refusal does not say where or why: {msg}"),
                )
            }
        }
    }
}

/// The corpus figure: (correct, refused, wrong) and the lines of the table by class.
pub fn score() -> ((usize, usize, usize), Vec<String>) {
    let mut by_class: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    let mut details = Vec::new();
    for (name, case) in corpus() {
        let (outcome, why) = judge(&case, &edit_text(&case.original, &edits(&case)));
        let slot = by_class.entry(case.class.clone()).or_default();
        slot[outcome as usize] += 1;
        if outcome != Outcome::Correct {
            details.push(format!("{outcome:?} {name}: {why}"));
        }
    }
    let mut totals = (0, 0, 0);
    for [c, r, w] in by_class.values() {
        totals.0 += c;
        totals.1 += r;
        totals.2 += w;
    }
    let mut table: Vec<String> = by_class
        .iter()
        .map(|(k, [c, r, w])| format!("{k:<10} correct {c:>3}  refused {r:>3}  wrong {w:>3}"))
        .collect();
    table.extend(details);
    (totals, table)
}
