//! MODIFY's matcher against the edits real models send: the corpus in `fixtures/edits/` and a
//! property test of perturbed copies. A wrong file reported as success is the one outcome that
//! is never allowed.

use crate::corpus;

#[path = "../edits_corpus/indent_props.rs"]
mod indent_props;
#[path = "../edits_corpus/punct_props.rs"]
mod punct_props;

use std::fs;

use corpus::{corpus, edits, score};
use pai::workspace::{Edit, Modification, Workspace, WorkspaceConfig, edit_text};
use proptest::prelude::*;

#[test]
fn corpus_has_no_wrong_file_and_at_least_95_correct() {
    let cases = corpus();
    assert!(cases.len() >= 131, "only {} cases", cases.len());
    let ((correct, refused, wrong), table) = score();
    let report = table.join("\n");
    eprintln!("edit corpus: {correct} correct, {refused} refused, {wrong} wrong\n{report}");
    assert_eq!(wrong, 0, "{report}");
    assert!(correct >= 95, "{correct} correct\n{report}");
    // Every case meant to be refused is refused (and none meant to succeed is counted wrong).
    for (name, case) in &cases {
        if case.refuse.is_some() {
            assert!(
                edit_text(&case.original, &edits(case)).is_err(),
                "{name} should be refused"
            );
        }
    }
}

#[test]
fn corpus_through_the_workspace_writes_the_same_bytes_or_nothing() {
    // MODIFY on disk must do exactly what the matcher does: same bytes on success, an untouched
    // file on refusal.
    let tmp = tempfile::tempdir().unwrap();
    let ws = Workspace::open(tmp.path(), WorkspaceConfig::default()).unwrap();
    for (i, (name, case)) in corpus().into_iter().enumerate() {
        let file = format!("case{i}.txt");
        fs::write(tmp.path().join(&file), &case.original).unwrap();
        let got = ws.modify(&file, &Modification::Edits(edits(&case)));
        let on_disk = fs::read_to_string(tmp.path().join(&file)).unwrap();
        match edit_text(&case.original, &edits(&case)) {
            Ok(want) => {
                assert!(got.is_ok(), "{name}: {got:?}");
                assert_eq!(on_disk, want, "{name}");
            }
            Err(_) => {
                assert!(got.is_err(), "{name}");
                assert_eq!(
                    on_disk, case.original,
                    "{name}: a refused edit changed the file"
                );
            }
        }
    }
}

// ---- property test -------------------------------------------------------------------------

/// A generated file line: its indentation level, words, whether it carries typographic quotes,
/// and trailing spaces.
#[derive(Debug, Clone)]
struct GenLine {
    level: usize,
    words: String,
    smart: bool,
    trailing: usize,
}

impl GenLine {
    fn text(&self, indent: &str) -> String {
        let body = if self.smart {
            format!("{} = \u{201C}{}\u{201D}", self.words, self.words)
        } else {
            self.words.clone()
        };
        format!(
            "{}{body}{}",
            indent.repeat(self.level),
            " ".repeat(self.trailing)
        )
    }
    /// The line as a model would copy it: quotes folded to ASCII.
    fn folded(&self, indent: &str) -> String {
        self.text(indent).replace(['\u{201C}', '\u{201D}'], "\"")
    }
}

fn gen_line() -> impl Strategy<Value = GenLine> {
    (
        0usize..3,
        prop::sample::select(vec!["a", "b", "x = 1", "call()", "return y", "pass", "}"]),
        0usize..3,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(level, w, n, smart, trailing)| GenLine {
            level,
            words: format!("{w}{n}"),
            smart,
            trailing: if trailing { 2 } else { 0 },
        })
}

/// How the model's copy differs from the file.
#[derive(Debug, Clone, Copy)]
enum Perturb {
    None,
    DropTrailing,
    AddTrailing,
    Dedent,
    Indent,
    Tabs,
    Crlf,
    FoldQuotes,
    LeadingBlank,
    Fence,
}

fn perturb() -> impl Strategy<Value = Vec<Perturb>> {
    prop::collection::vec(
        prop::sample::select(vec![
            Perturb::None,
            Perturb::DropTrailing,
            Perturb::AddTrailing,
            Perturb::Dedent,
            Perturb::Indent,
            Perturb::Tabs,
            Perturb::Crlf,
            Perturb::FoldQuotes,
            Perturb::LeadingBlank,
            Perturb::Fence,
        ]),
        0..3,
    )
}

/// The model's version of some lines, under the perturbations (applied alike to search and
/// replacement, as a model that re-typed the block would).
fn model_text(lines: &[String], ps: &[Perturb], base_level: usize) -> String {
    let mut ls: Vec<String> = lines.to_vec();
    for p in ps {
        ls = ls
            .into_iter()
            .map(|l| match p {
                Perturb::DropTrailing => l.trim_end().to_string(),
                Perturb::AddTrailing if !l.is_empty() => format!("{l} "),
                Perturb::Dedent => {
                    let cut = base_level * 4;
                    let ind = l.len() - l.trim_start_matches(' ').len();
                    l[ind.min(cut)..].to_string()
                }
                Perturb::Indent if !l.is_empty() => format!("    {l}"),
                Perturb::Tabs => {
                    let ind = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}", "\t".repeat(ind / 4), &l[ind - ind % 4..])
                }
                Perturb::FoldQuotes => l.replace(['\u{201C}', '\u{201D}'], "\""),
                _ => l,
            })
            .collect();
    }
    let mut text = ls.join("\n");
    text.push('\n');
    for p in ps {
        match p {
            Perturb::Crlf => text = text.replace('\n', "\r\n"),
            Perturb::LeadingBlank => text.insert(0, '\n'),
            Perturb::Fence => text = format!("```\n{text}```\n"),
            _ => {}
        }
    }
    text
}

fn eol_of(style: u8, i: usize) -> &'static str {
    match style {
        0 => "\n",
        1 => "\r\n",
        _ if i.is_multiple_of(3) => "\r\n",
        _ => "\n",
    }
}

proptest! {
    // PROPTEST_CASES raises the count for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600),
        ..ProptestConfig::default()
    })]

    /// Random files and random edits copied from them, perturbed in whitespace, indentation,
    /// line endings and punctuation, give the intended file or leave it untouched: never
    /// another file.
    #[test]
    fn perturbed_edits_give_the_intended_file_or_none(
        file in prop::collection::vec(gen_line(), 2..24),
        start_frac in 0.0f64..1.0,
        len in 1usize..5,
        change_at in 0usize..5,
        insert in any::<bool>(),
        eol_style in 0u8..3,
        final_newline in any::<bool>(),
        ps in perturb(),
    ) {
        let n = file.len();
        let start = ((n as f64) * start_frac) as usize % n;
        let len = len.min(n - start);
        let ind = "    ";
        let texts: Vec<String> = file.iter().map(|l| l.text(ind)).collect();
        let mut original = String::new();
        for (i, t) in texts.iter().enumerate() {
            original.push_str(t);
            if i + 1 < n || final_newline {
                original.push_str(eol_of(eol_style, i));
            }
        }
        // The replacement in the file's own frame: one line changed, maybe one inserted.
        let window = &file[start..start + len];
        let change = change_at % len;
        let base = window.iter().map(|l| l.level).min().unwrap_or(0);
        let mut intended_window: Vec<String> = Vec::new();
        let mut search_lines: Vec<String> = Vec::new();
        let mut replace_lines: Vec<String> = Vec::new();
        for (k, l) in window.iter().enumerate() {
            search_lines.push(l.text(ind));
            if k == change {
                let new = format!("{}changed_{k}()", ind.repeat(l.level));
                intended_window.push(new.clone());
                replace_lines.push(new);
                if insert {
                    let extra = format!("{}inserted()", ind.repeat(l.level));
                    intended_window.push(extra.clone());
                    replace_lines.push(extra);
                }
            } else {
                intended_window.push(texts[start + k].clone());
                // A model re-typing the block folds the quotes of lines it keeps too.
                replace_lines.push(if ps.iter().any(|p| matches!(p, Perturb::FoldQuotes)) {
                    l.folded(ind)
                } else {
                    l.text(ind)
                });
            }
        }
        let search = model_text(&search_lines, &ps, base);
        let replace = model_text(&replace_lines, &ps, base);
        let intended: Vec<String> = texts[..start]
            .iter()
            .cloned()
            .chain(intended_window)
            .chain(texts[start + len..].iter().cloned())
            .collect();
        let result = edit_text(&original, &[Edit { search, replace }]);
        if let Ok(out) = result {
            let out_lf = out.replace("\r\n", "\n");
            let got: Vec<&str> = out_lf.strip_suffix('\n').unwrap_or(&out_lf).split('\n').collect();
            // Trailing whitespace of the changed lines is the model's to choose; everything
            // else must be exactly the intended file.
            let got_cmp: Vec<String> = got.iter().map(|l| l.trim_end().to_string()).collect();
            let want_cmp: Vec<String> = intended.iter().map(|l| l.trim_end().to_string()).collect();
            prop_assert_eq!(&got_cmp, &want_cmp, "original {:?}", original);
            // Lines outside the window are byte for byte what they were, endings included.
            let orig_lines: Vec<&str> = original.split_inclusive('\n').collect();
            let out_lines: Vec<&str> = out.split_inclusive('\n').collect();
            prop_assert_eq!(&out_lines[..start], &orig_lines[..start]);
            let tail = n - start - len;
            prop_assert_eq!(
                &out_lines[out_lines.len() - tail..],
                &orig_lines[orig_lines.len() - tail..]
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        ..ProptestConfig::default()
    })]

    /// A search that matches the file exactly, indentation and all, gives exactly the
    /// replacement as sent, for any indent unit, any depth and any number of aligned lines in
    /// it (a doc comment's ` * ` one space under its `/**`): one-space alignment is never read
    /// as the replacement's unit and the replacement re-indented.
    #[test]
    fn an_exact_match_with_aligned_comment_lines_is_written_as_sent(
        unit in prop::sample::select(vec!["  ", "    ", "\t"]),
        depth in 0usize..3,
        searched in 1usize..4,
        comment_lines in 1usize..6,
        body_lines in 0usize..3,
    ) {
        let at = |level: usize| unit.repeat(level);
        let mut file = Vec::new();
        if depth > 0 {
            file.push(format!("{}export class Service {{", at(depth - 1)));
        }
        let search: Vec<String> =
            (0..searched).map(|i| format!("{}import{i} = {i}", at(depth))).collect();
        file.extend(search.iter().cloned());
        file.push(format!("{}tail = 0", at(depth)));
        if depth > 0 {
            file.push(format!("{}}}", at(depth - 1)));
        }
        let mut replace = search.clone();
        replace.push(String::new());
        replace.push(format!("{}/**", at(depth)));
        for i in 0..comment_lines {
            replace.push(format!("{} * line {i} of the comment", at(depth)));
        }
        replace.push(format!("{} */", at(depth)));
        if body_lines == 0 {
            replace.push(format!("{}type Methods = `${{string}}`", at(depth)));
        } else {
            replace.push(format!("{}run() {{", at(depth)));
            for i in 0..body_lines {
                replace.push(format!("{}step{i}()", at(depth + 1)));
            }
            replace.push(format!("{}}}", at(depth)));
        }
        let original = file.join("\n") + "\n";
        let intended = original.replacen(&search.join("\n"), &replace.join("\n"), 1);
        let out = edit_text(
            &original,
            &[Edit { search: search.join("\n"), replace: replace.join("\n") }],
        );
        prop_assert_eq!(out, Ok(intended));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        ..ProptestConfig::default()
    })]

    /// A search quoted whole, indentation and all, with a step of the file's unit in it (a
    /// block's closing line), and a replacement that adds lines at any further
    /// step (a continuation indented twice the unit, or four spaces in a file of two, an
    /// aligned argument) is written exactly as sent: the search's steps are the edit's unit,
    /// and a new line's step is not evidence of another.
    #[test]
    fn new_lines_at_any_step_under_an_exact_search_are_written_as_sent(
        unit in prop::sample::select(vec!["  ", "    ", "\t"]),
        depth in 0usize..3,
        step_at in 0usize..5,
        before in 0usize..3,
        after in 1usize..3,
        continued in 1usize..3,
    ) {
        let steps: &[&str] = if unit == "\t" {
            &["\t", "\t\t", "\t "]
        } else {
            &["  ", "    ", "      ", "        ", " "]
        };
        let step = steps[step_at % steps.len()];
        let at = |level: usize| unit.repeat(level);
        // The search starts inside the block and ends with its closing line: its only step is
        // a shallower one, and the replacement's continuation is the only deeper step.
        let mut file = vec![
            "auto parse(const Char* begin) -> const Char* {".to_string(),
            format!("{}if (begin != end) {{", at(depth)),
        ];
        let mut search = Vec::new();
        for i in 0..before {
            search.push(format!("{}auto a{i} = begin;", at(depth + 1)));
        }
        let changed = format!("{}specs.fill = {{begin, to_unsigned(end - begin)}};", at(depth + 1));
        search.push(changed.clone());
        for i in 0..after {
            search.push(format!("{}specs.b{i} = align;", at(depth + 1)));
        }
        search.push(format!("{}}}", at(depth)));
        file.extend(search.iter().cloned());
        file.push(format!("{}return begin;", at(depth + 1)));
        file.push("}".to_string());
        let mut replace: Vec<String> = search.iter().filter(|l| **l != changed).cloned().collect();
        let mut new = vec![format!("{}specs.fill =", at(depth + 1))];
        for i in 0..continued {
            new.push(format!("{}{step}basic_string_view<Char>(begin, n{i});", at(depth + 1)));
        }
        replace.splice(before..before, new);
        let original = file.join("\n") + "\n";
        let intended = original.replacen(&search.join("\n"), &replace.join("\n"), 1);
        let out = edit_text(
            &original,
            &[Edit { search: search.join("\n"), replace: replace.join("\n") }],
        );
        prop_assert_eq!(out, Ok(intended));
    }
}
