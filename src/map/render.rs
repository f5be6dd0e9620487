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
const TEXT_SHARE: f32 = 0.8;
/// Files whose text (whole or excerpts) is considered.
const TEXT_FILES: usize = 8;
/// A file's share of the text budget goes as its score (over the best one's) to this power.
const WEIGHT_POWER: f32 = 4.0;
/// Definitions listed under the first files, and under the next ones.
const DEFS_FIRST: usize = 12;
const DEFS_NEXT: usize = 5;
const FILES_WITH_DEFS: usize = 40;

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

/// The ranked files with their definitions, then bare paths, within `budget`.
fn render_listing(input: &Input<'_>, budget: usize, shown: &mut Shown) -> String {
    let mut out = format!(
        "Repository map: {} files, ranked for this request (most relevant first); under a file, its main definitions as `line: signature`. READ a file for the rest, TREE or SEARCH for files not listed.\n",
        input.files.len()
    );
    let footer_room = 80;
    let mut bare = false;
    for (rank, (file, score)) in input.ranked.iter().enumerate() {
        let path = input.files.path(file);
        let mut entry = format!("{path}\n");
        // A file shown whole shows its definitions there.
        let whole = shown.whole.iter().any(|w| w == path);
        if !bare && !whole && rank < FILES_WITH_DEFS && score > 0.0 {
            let limit = if rank < 10 { DEFS_FIRST } else { DEFS_NEXT };
            for d in key_defs(input, file, limit) {
                entry.push_str(&format!(
                    "  {}: {}\n",
                    d.line,
                    one_line(&input.names.get(d.signature))
                ));
            }
        }
        if out.len() + entry.len() + footer_room > budget {
            if !bare && entry.contains('\n') && out.len() + path.len() + 1 + footer_room <= budget {
                // Out of room for definitions: paths only from here on.
                bare = true;
                entry = format!("{path}\n");
            } else {
                break;
            }
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
        idents.contains(name)
            || terms::term_set(name)
                .iter()
                .any(|t| wanted.contains(t.as_str()))
    };
    let weight = |d: &DefRec| match d.kind {
        DefKind::Class | DefKind::Struct | DefKind::Trait | DefKind::Interface | DefKind::Enum => 1,
        DefKind::Function | DefKind::Module | DefKind::Type | DefKind::Macro => 2,
        DefKind::Method => 3,
        DefKind::Constant | DefKind::Other => 4,
    };
    let mut picked: Vec<&DefRec> = f.defs.iter().filter(|d| matches(d)).collect();
    picked.truncate(limit);
    let mut rest: Vec<&DefRec> = f.defs.iter().filter(|d| !matches(d)).collect();
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
    let Some(&(_, best)) = top.first() else {
        return String::new();
    };
    let texts: Vec<(usize, f32, String)> = top
        .iter()
        .filter_map(|&(file, score)| {
            let text = (input.text_of)(input.files.path(file))?;
            Some((file, score, text))
        })
        .collect();
    let cands: Vec<Candidate<'_>> = texts
        .iter()
        .map(|(file, score, text)| Candidate {
            path: input.files.path(*file),
            text,
            defs: def_spans(input, *file),
            weight: (score / best).powf(WEIGHT_POWER),
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
