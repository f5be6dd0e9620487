//! The map as the model reads it, within a character budget: the best files' text first (whole
//! when it fits, else the definitions and lines the request's words hit, with their line
//! numbers), then the ranked files with their key definitions (`line: signature`), then more
//! paths while room lasts. What is left out is counted so the model knows to look.

use std::collections::HashSet;

use super::excerpt::{self, Candidate, DefSpan};
use super::facts::{BlobFacts, DefRec, Facts, Names};
use super::files::MapFiles;
use super::rank::Ranking;
use super::symbols::DefKind;
use super::terms::{self, Query};

/// Share of the budget the files' text may take; the map gets the rest.
const TEXT_SHARE: f32 = 0.85;
/// Files whose text (whole or excerpts) is considered.
const TEXT_FILES: usize = 8;
/// A file's share of the text budget goes as its score (over the best one's) to this power.
const WEIGHT_POWER: f32 = 4.0;
/// Definitions listed under the first files, and under the next ones.
const DEFS_FIRST: usize = 12;
const DEFS_NEXT: usize = 5;
const FILES_WITH_DEFS: usize = 40;
/// Files whose paths are listed before any definition takes their room: a file ranked 120th
/// is changed more often than a 10th file's twelfth definition is needed (a change's second
/// or third file often ranks 60–120th on real commits, and a path costs a line, where a file's
/// definitions cost a dozen).
const PATHS_KEPT: usize = 150;
/// Scored files beside the best one (in its folder or the folder above) whose paths are kept
/// too when ranked below [`PATHS_KEPT`]: a change to the best file often touches a file beside
/// it that the request's words rank low (a sibling module, the generated file it feeds).
const NEIGHBOURS: usize = 8;
/// Room the listing keeps for its last line (how many files it leaves out).
const FOOTER_ROOM: usize = 80;

/// What the model was shown, for `pai map` and the benchmark.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Shown {
    /// Files whose path is in the map, in the order shown.
    pub listed: Vec<String>,
    /// Files sent whole.
    pub whole: Vec<String>,
    /// Files sent as excerpts, with the line ranges (1-based, inclusive).
    pub excerpts: Vec<(String, Vec<(u32, u32)>)>,
    /// Files left out of the map.
    pub omitted: usize,
    /// What was shown of each file's text, and why.
    pub chosen: Vec<excerpt::Chosen>,
}

/// What rendering needs.
pub struct Input<'a> {
    /// Every file.
    pub files: &'a MapFiles<'a>,
    /// The ranking, best first.
    pub ranked: &'a Ranking,
    /// Facts by blob index, read for the files shown.
    pub blobs: &'a dyn BlobFacts,
    /// Names.
    pub names: &'a Names,
    /// The request.
    pub query: &'a Query,
    /// Characters to spend.
    pub budget: usize,
    /// A file's current text, through the gate.
    pub text_of: &'a dyn Fn(&str) -> Option<String>,
}

impl Input<'_> {
    fn facts(&self, file: usize) -> Option<&Facts> {
        self.blobs.facts(self.files.blob(file)?)
    }
}

/// Render the map section; returns the text and what it shows.
pub fn render(input: &Input<'_>) -> (String, Shown) {
    let mut shown = Shown::default();
    let text_budget = (input.budget as f32 * TEXT_SHARE) as usize;
    let texts = render_texts(input, text_budget, &mut shown);
    let map_budget = input.budget.saturating_sub(texts.len());
    let map = render_listing(input, map_budget, &mut shown);
    (format!("{map}{texts}"), shown)
}

/// The ranked files with their definitions, then bare paths, within `budget`. The paths of
/// the first [`PATHS_KEPT`] files are kept room for before any definition is listed: a file
/// ranked 30th is changed more often than a 10th file's twelfth definition is needed.
fn render_listing(input: &Input<'_>, budget: usize, shown: &mut Shown) -> String {
    let mut out = listing_header(input.files.len());
    // The room the kept paths ranked after each rank take.
    let kept = kept_ranks(input);
    let kept_after = |rank: usize| {
        kept.iter()
            .filter(|&&(r, _)| r > rank)
            .map(|&(_, len)| len)
            .sum::<usize>()
    };
    let mut bare = false;
    for (rank, (file, score)) in input.ranked.iter().enumerate() {
        let path = input.files.path(file);
        // A path after the first ones is listed only when the neighbours after it still fit.
        let neighbours_after = rank >= PATHS_KEPT && kept.last().is_some_and(|&(r, _)| r > rank);
        if neighbours_after
            && !kept.iter().any(|&(r, _)| r == rank)
            && out.len() + path.len() + 1 + FOOTER_ROOM + kept_after(rank) > budget
        {
            continue;
        }
        let mut entry = format!("{path}\n");
        // A file shown whole shows its definitions there.
        let whole = shown.whole.iter().any(|w| w == path);
        if !bare && !whole && rank < FILES_WITH_DEFS && score > 0.0 {
            let limit = if rank < 10 { DEFS_FIRST } else { DEFS_NEXT };
            let room = budget.saturating_sub(out.len() + FOOTER_ROOM + kept_after(rank));
            for d in key_defs(input, file, limit) {
                let line = format!(
                    "  {}: {}\n",
                    d.line,
                    one_line(&input.names.get(d.signature))
                );
                if entry.len() + line.len() > room {
                    // Out of room for definitions: paths only from here on.
                    bare = true;
                    break;
                }
                entry.push_str(&line);
            }
        }
        if out.len() + entry.len() + FOOTER_ROOM > budget {
            break;
        }
        if !bare && rank >= FILES_WITH_DEFS {
            bare = true;
        }
        out.push_str(&entry);
        shown.listed.push(path.to_string());
    }
    shown.omitted = input.files.len() - shown.listed.len();
    if shown.omitted > 0 {
        out.push_str(&format!("({} more files not listed)\n", shown.omitted));
    }
    out
}

/// The listing's first line, for a project of `files` files.
fn listing_header(files: usize) -> String {
    format!(
        "Repository map: {files} files, ranked for this request (most relevant first); under a file, its main definitions as `line: signature`. READ a file for the rest, TREE or SEARCH for files not listed.\n"
    )
}

/// The ranks whose paths are kept room for, with what each path costs: the first
/// [`PATHS_KEPT`], then up to [`NEIGHBOURS`] scored files after them beside the best one.
fn kept_ranks(input: &Input<'_>) -> Vec<(usize, usize)> {
    let path_of = |file: usize| input.files.path(file);
    let mut kept: Vec<(usize, usize)> = input
        .ranked
        .iter()
        .take(PATHS_KEPT)
        .enumerate()
        .map(|(rank, (file, _))| (rank, path_of(file).len() + 1))
        .collect();
    let Some((best, _)) = input.ranked.iter().next() else {
        return kept;
    };
    let folder = parent(path_of(best));
    let above = folder.map(|f| parent(f).unwrap_or(""));
    let beside = |path: &str| {
        let p = parent(path);
        p == folder || (p.is_some() && p == above) || (p.is_none() && above == Some(""))
    };
    kept.extend(
        input
            .ranked
            .iter()
            .enumerate()
            .skip(PATHS_KEPT)
            .take_while(|&(_, (_, score))| score > 0.0)
            .filter(|&(_, (file, _))| beside(path_of(file)))
            .take(NEIGHBOURS)
            .map(|(rank, (file, _))| (rank, path_of(file).len() + 1)),
    );
    kept
}

/// The folder holding `path` (`None` for a file at the top).
fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(folder, _)| folder)
}

/// A signature on one line.
fn one_line(s: &str) -> String {
    let line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    terms_cut(&line, 160)
}

fn terms_cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &s[..cut])
}

/// The definitions worth a line: those the request's words match first, then types and
/// top-level functions, in line order.
fn key_defs<'a>(input: &'a Input<'_>, file: usize, limit: usize) -> Vec<&'a DefRec> {
    let Some(f) = input.facts(file) else {
        return Vec::new();
    };
    let wanted: HashSet<&str> = input.query.terms.iter().map(String::as_str).collect();
    let idents: HashSet<&str> = input.query.idents.iter().map(String::as_str).collect();
    let matches = |d: &DefRec| {
        let name = input.names.get(d.name);
        let name = name.as_ref();
        let mut hit = idents.contains(name);
        if !hit {
            terms::for_each_term(name, |t| hit |= wanted.contains(t));
        }
        hit
    };
    let weight = |d: &DefRec| match d.kind {
        DefKind::Class | DefKind::Struct | DefKind::Trait | DefKind::Interface | DefKind::Enum => 1,
        DefKind::Function | DefKind::Module | DefKind::Type | DefKind::Macro => 2,
        DefKind::Method => 3,
        DefKind::Constant | DefKind::Other => 4,
    };
    // Each definition's name is read and split once: a file can define thousands.
    let (mut picked, mut rest): (Vec<&DefRec>, Vec<&DefRec>) =
        f.defs.iter().partition(|d| matches(d));
    picked.truncate(limit);
    rest.sort_by_key(|d| (weight(d), d.line));
    picked.extend(rest.into_iter().take(limit.saturating_sub(picked.len())));
    picked.sort_by_key(|d| d.line);
    picked
}

/// The best files' text within `budget`: whole when small, else their definitions chosen for
/// the request (see [`excerpt`](super::excerpt)), the budget spent by how likely each file is
/// to change.
fn render_texts(input: &Input<'_>, budget: usize, shown: &mut Shown) -> String {
    let top = input
        .ranked
        .iter()
        .take(TEXT_FILES)
        .take_while(|&(_, score)| score > 0.0)
        .collect::<Vec<_>>();
    if top.is_empty() {
        return String::new();
    }
    let weight = text_weights(input.ranked, &top);
    let texts: Vec<(usize, f32, String)> = top
        .iter()
        .zip(weight)
        .filter_map(|(&(file, _), weight)| {
            let text = (input.text_of)(input.files.path(file))?;
            Some((file, weight, text))
        })
        .collect();
    let cands: Vec<Candidate<'_>> = texts
        .iter()
        .map(|(file, weight, text)| Candidate {
            path: input.files.path(*file),
            text,
            defs: def_spans(input, *file),
            weight: *weight,
        })
        .collect();
    let chosen = excerpt::choose(&cands, input.query, budget);
    let mut out = String::new();
    for c in &chosen {
        let Some(cand) = cands.iter().find(|k| k.path == c.path) else {
            continue;
        };
        if c.whole {
            let fence = crate::fence::for_text(cand.text);
            out.push_str(&format!(
                "\nCurrent contents of {}:\n{fence}\n{}",
                c.path, cand.text
            ));
            if !cand.text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&fence);
            out.push('\n');
            shown.whole.push(c.path.clone());
        } else {
            out.push_str(&excerpt_block(&c.path, cand.text, &c.ranges));
            shown.excerpts.push((c.path.clone(), c.ranges.clone()));
        }
    }
    shown.chosen = chosen;
    out
}

/// Each of the `top` files' claim on the text budget: its score over the best file's the
/// request does not name, to [`WEIGHT_POWER`]; a file the request names claims as much as
/// that best one. Naming a file ranks it first, but says nothing of how likely the files the
/// request does not name are to change (a request naming the test to update changes the code
/// it tests too): weighed against the named file's score, they would get no text at all.
fn text_weights(ranked: &Ranking, top: &[(usize, f32)]) -> Vec<f32> {
    let unnamed = |&&(file, _): &&(usize, f32)| !ranked.is_named(file);
    let best = top
        .iter()
        .filter(unnamed)
        .map(|&(_, score)| score)
        .fold(0.0_f32, f32::max);
    top.iter()
        .map(|&(file, score)| {
            if best <= 0.0 {
                (score / top[0].1).powf(WEIGHT_POWER)
            } else if ranked.is_named(file) {
                1.0
            } else {
                (score / best).min(1.0).powf(WEIGHT_POWER)
            }
        })
        .collect()
}

/// A file's definitions with their names, for excerpts.
fn def_spans(input: &Input<'_>, file: usize) -> Vec<DefSpan> {
    input
        .facts(file)
        .map(|f| {
            f.defs
                .iter()
                .map(|d| DefSpan {
                    name: input.names.get(d.name).to_string(),
                    kind: d.kind,
                    line: d.line,
                    end: d.end,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The excerpts of `text` at `ranges` (merged, in line order), each headed by its lines.
fn excerpt_block(path: &str, text: &str, ranges: &[(u32, u32)]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let mut out = format!("\nExcerpts of {path} ({total} lines; READ it for the rest):\n");
    for &(a, b) in ranges {
        let (a, b) = (a.max(1) as usize, (b as usize).min(total));
        let Some(part) = lines.get(a - 1..b) else {
            continue;
        };
        let fence = crate::fence::for_text(&part.join("\n"));
        out.push_str(&format!("lines {a}-{b}:\n{fence}\n"));
        for l in part {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(&fence);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks `paths` for `request`, the request naming `named`; returns the weights of the
    /// scored files' text, by path.
    fn weights(paths: &[&str], request: &str, named: &[&str]) -> Vec<(String, f32)> {
        use super::super::facts::Facts;
        use super::super::paths::PathFacts;
        use super::super::rank::{self, Signals};
        let paths = paths.to_vec();
        let files = MapFiles::new(&paths);
        let query = Query::parse(request);
        let signals = Signals {
            named: named.iter().map(|p| p.to_string()).collect(),
            ..Signals::default()
        };
        let ranked = rank::rank(
            &files,
            &Vec::<Facts>::new(),
            &Names::default(),
            &query,
            &signals,
            PathFacts::of(&paths[..], &query, None),
        );
        let top: Vec<(usize, f32)> = ranked.iter().take_while(|&(_, s)| s > 0.0).collect();
        top.iter()
            .map(|&(f, _)| files.path(f).to_string())
            .zip(text_weights(&ranked, &top))
            .collect()
    }

    /// A named file ranks first, but the files the request does not name share the text
    /// budget as if it named none: the best of them claims as much as the named file.
    #[test]
    fn a_named_file_does_not_take_the_text_of_the_files_it_outranks() {
        let paths = [
            "src/invoice.py",
            "src/invoice_total.py",
            "tests/invoice_test.py",
        ];
        let request = "fix the invoice total rounding and update invoice_test.py";
        let named = weights(&paths, request, &["tests/invoice_test.py"]);
        assert_eq!(named[0], ("tests/invoice_test.py".to_string(), 1.0));
        assert_eq!(named[1], ("src/invoice_total.py".to_string(), 1.0));
        let unnamed = weights(&paths, request, &[]);
        let of = |list: &[(String, f32)], p: &str| {
            list.iter().find(|(q, _)| q == p).map(|(_, w)| *w).unwrap()
        };
        assert_eq!(unnamed[0], ("src/invoice_total.py".to_string(), 1.0));
        // The files it does not name keep their weights relative to each other.
        let (a, b) = (of(&named, "src/invoice.py"), of(&unnamed, "src/invoice.py"));
        assert!(a > 0.0 && (a - b).abs() < 1e-6, "{a} vs {b}");
    }

    /// More files than [`PATHS_KEPT`] a request's word ranks, each defining twelve functions:
    /// the paths of the first [`PATHS_KEPT`] are all listed before definitions fill the
    /// budget, and the first files still list theirs.
    #[test]
    fn the_first_files_paths_are_listed_before_more_definitions() {
        use super::super::facts::{DefRec, Facts};
        use super::super::paths::PathFacts;
        use super::super::rank::{self, Signals};
        let paths: Vec<String> = (0..PATHS_KEPT + 10)
            .map(|i| format!("src/billing/part_{i:03}.py"))
            .collect();
        let mut files = MapFiles::new(&paths);
        let mut names = Names::default();
        let mut blobs = Vec::new();
        for i in 0..paths.len() {
            let defs = (0..12u32)
                .map(|k| DefRec {
                    name: names.intern(&format!("compute_{i}_{k}")),
                    kind: DefKind::Function,
                    line: 1 + k * 10,
                    end: 9 + k * 10,
                    signature: names.intern(&format!(
                        "def compute_{i}_{k}(invoice, customer, currency, rounding, options):"
                    )),
                })
                .collect();
            blobs.push(Facts {
                defs,
                len: 100,
                lines: 120,
                parsed: true,
                ..Facts::default()
            });
            files.set_blob(i, i as u32);
        }
        let query = Query::parse("billing");
        let ranked = rank::rank(
            &files,
            &blobs,
            &names,
            &query,
            &Signals::default(),
            PathFacts::of(&paths, &query, None),
        );
        let input = Input {
            files: &files,
            ranked: &ranked,
            blobs: &blobs,
            names: &names,
            query: &query,
            budget: 8_000,
            text_of: &|_| None,
        };
        let mut shown = Shown::default();
        let out = render_listing(&input, input.budget, &mut shown);
        assert!(out.len() <= input.budget, "{}", out.len());
        assert!(shown.listed.len() >= PATHS_KEPT, "{}", shown.listed.len());
        let first = input.files.path(ranked.iter().next().unwrap().0);
        let under_first = out
            .lines()
            .skip_while(|l| *l != first)
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .count();
        assert_eq!(under_first, DEFS_FIRST, "{out}");
    }

    /// Under a tight budget, the scored files beside the best one (its folder and the folder
    /// above) ranked after the first [`PATHS_KEPT`] are listed, the best [`NEIGHBOURS`] of
    /// them, before files ranked above them elsewhere; files in a subfolder are not beside it.
    #[test]
    fn the_files_beside_the_best_one_are_listed_though_ranked_low() {
        let mut paths: Vec<String> = vec!["src/app/main.py".into()];
        let mut scores = vec![2000.0_f32];
        for i in 0..PATHS_KEPT + 10 {
            paths.push(format!("lib/m{i:03}.py"));
            scores.push(1000.0 - i as f32);
        }
        for i in 0..10 {
            paths.push(format!("src/app/s{i}.py"));
            scores.push(10.0 - i as f32 * 0.5);
        }
        paths.push("src/other.py".into());
        scores.push(7.2);
        paths.push("src/app/sub/deep.py".into());
        scores.push(9.9);
        paths.push("unscored/z.py".into());
        scores.push(0.0);
        let files = MapFiles::new(&paths);
        let ranked = Ranking::of_scores(scores);
        let query = Query::parse("app");
        let blobs: Vec<Facts> = Vec::new();
        let names = Names::default();
        let path_of = |f: usize| files.path(f);
        let first: Vec<&str> = ranked
            .iter()
            .take(PATHS_KEPT)
            .map(|(f, _)| path_of(f))
            .collect();
        // The neighbours by rank: s0..s5 (10.0..7.5), src/other.py (7.2), s6 (7.0).
        let neighbours = [
            "src/app/s0.py",
            "src/app/s1.py",
            "src/app/s2.py",
            "src/app/s3.py",
            "src/app/s4.py",
            "src/app/s5.py",
            "src/other.py",
            "src/app/s6.py",
        ];
        assert_eq!(neighbours.len(), NEIGHBOURS);
        let header = listing_header(paths.len());
        let room = |ps: &[&str]| ps.iter().map(|p| p.len() + 1).sum::<usize>();
        let budget = header.len() + room(&first) + room(&neighbours) + FOOTER_ROOM + 5;
        let input = Input {
            files: &files,
            ranked: &ranked,
            blobs: &blobs,
            names: &names,
            query: &query,
            budget,
            text_of: &|_| None,
        };
        let mut shown = Shown::default();
        let out = render_listing(&input, budget, &mut shown);
        assert!(out.len() <= budget, "{} > {budget}", out.len());
        let mut want: Vec<&str> = first.clone();
        want.extend(neighbours);
        assert_eq!(shown.listed, want, "{out}");
        assert!(
            !out.contains("deep.py")
                && !out.contains("s7.py")
                && !out.contains(&format!("lib/m{PATHS_KEPT:03}.py"))
        );
        // With room to spare the ranking's order is kept and more paths are listed.
        let mut shown = Shown::default();
        render_listing(&input, 100_000, &mut shown);
        assert_eq!(shown.listed.len(), paths.len());
        assert_eq!(&shown.listed[..PATHS_KEPT], &first[..]);
    }

    /// An excerpt whose lines hold a fence of their own is fenced with a longer one, so the
    /// model reads every line as the file's.
    #[test]
    fn an_excerpt_holding_a_fence_is_not_closed_by_it() {
        let text = "# Usage\n\n```sh\npai run\n```\n\nMore prose.\n";
        let block = excerpt_block("README.md", text, &[(1, 7)]);
        assert!(block.contains("lines 1-7:\n````\n# Usage\n"), "{block}");
        assert!(block.ends_with("More prose.\n````\n"), "{block}");
        let plain = excerpt_block("a.py", "x = 1\n", &[(1, 1)]);
        assert!(plain.contains("lines 1-1:\n```\nx = 1\n```\n"), "{plain}");
    }
}
