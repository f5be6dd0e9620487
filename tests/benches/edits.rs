//! MODIFY's matcher: the edit corpus figure (correct / refused / wrong) and the matcher's time
//! on a 1 MB file, for an exact edit, an edit quoted without its indentation, and a search that
//! is not there (the refusal scans the whole file for the closest lines).

use std::time::Duration;

use pai::workspace::{Edit, edit_text};

use crate::common::{Row, median_of, ms};
use crate::corpus;

const AREA: &str = "edits";
const RUNS: usize = 15;

/// The corpus row and the matcher's timing rows.
pub fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let ((correct, refused, wrong), _) = corpus::score();
    let meant = corpus::corpus()
        .iter()
        .filter(|(_, case)| case.refuse.is_some())
        .count();
    rows.push(
        Row::new(
            AREA,
            format!(
                "edit corpus, {} cases (fixtures/edits)",
                correct + refused + wrong
            ),
            format!("{correct} correct · {refused} refused · {wrong} wrong"),
        )
        .note(format!(
            "{meant} of the cases are meant to be refused (ambiguous, invalid, near misses, \
             typographic characters the file has itself)"
        ))
        .target("0 wrong, >= 95 correct", wrong == 0 && correct >= 95),
    );
    // About 1 MB of Python-like code, every line distinct.
    let file: String = (0..27_000)
        .map(|i| {
            if i % 6 == 0 {
                format!("def handler_{i}(request):\n")
            } else {
                format!("    value_{i} = compute({i}, request)\n")
            }
        })
        .collect();
    let near_end = 26_000;
    let exact = Edit {
        search: format!("    value_{near_end} = compute({near_end}, request)\n"),
        replace: format!("    value_{near_end} = compute({near_end}, request, cached=True)\n"),
    };
    let dedented = Edit {
        search: format!(
            "value_{} = compute({}, request)\nvalue_{} = compute({}, request)\n",
            near_end + 1,
            near_end + 1,
            near_end + 2,
            near_end + 2
        ),
        replace: format!("value_{} = None\n", near_end + 1),
    };
    let missing = Edit {
        search: "    value_x = compute(x, request)\n".into(),
        replace: "pass\n".into(),
    };
    for (what, edit, should_apply) in [
        ("exact edit", exact, true),
        ("edit quoted without its indentation", dedented, true),
        (
            "search not in the file (refusal with closest lines)",
            missing,
            false,
        ),
    ] {
        let mut ok = false;
        let t = median_of(RUNS, || {
            ok = edit_text(&file, std::slice::from_ref(&edit)).is_ok();
        });
        assert_eq!(ok, should_apply, "{what}");
        rows.push(
            Row::new(
                AREA,
                format!(
                    "matcher on a {:.1} MB file: {what}",
                    file.len() as f64 / 1e6
                ),
                ms(t),
            )
            .target("< 50 ms", t < Duration::from_millis(50)),
        );
    }
    rows
}
