//! The map as the model reads it, within a character budget: the best files' text first (whole
//! when it fits, else the definitions and lines the request's words hit, with their line
//! numbers), then the ranked files with their key definitions (`line: signature`), then more
//! paths while room lasts. What is left out is counted so the model knows to look.

use std::collections::HashSet;

use super::facts::{DefRec, Facts, Names};
use super::files::MapFiles;
use super::rank::Ranking;
use super::symbols::DefKind;
use super::terms::{self, Query};

/// Share of the budget the files' text may take; the map gets the rest.
const TEXT_SHARE: f32 = 0.55;
/// Files whose text (whole or excerpts) is considered.
const TEXT_FILES: usize = 8;
/// Lines around a hit outside any definition, and most lines of one excerpt.
const CONTEXT_LINES: u32 = 10;
const MAX_EXCERPT_LINES: u32 = 70;
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
}

/// What rendering needs.
pub struct Input<'a> {
    /// Every file.
    pub files: &'a MapFiles<'a>,
    /// The ranking, best first.
    pub ranked: &'a Ranking,
    /// Facts by blob index.
    pub blobs: &'a [(super::store::BlobId, Facts)],
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
        let b = self.files.blob(file)?;
        self.blobs.get(b as usize).map(|(_, f)| f)
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
        if !bare && rank < FILES_WITH_DEFS && score > 0.0 {
            let limit = if rank < 10 { DEFS_FIRST } else { DEFS_NEXT };
            for d in key_defs(input, file, limit) {
                entry.push_str(&format!(
                    "  {}: {}\n",
                    d.line,
                    one_line(input.names.get(d.signature))
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

/// The best files' text within `budget`: whole when small, else excerpts.
fn render_texts(input: &Input<'_>, budget: usize, shown: &mut Shown) -> String {
    let mut out = String::new();
    for (file, score) in input.ranked.iter().take(TEXT_FILES) {
        if score <= 0.0 || budget.saturating_sub(out.len()) < 400 {
            break;
        }
        let path = input.files.path(file);
        let Some(text) = (input.text_of)(path) else {
            continue;
        };
        let room = budget - out.len();
        if text.len() + path.len() + 40 <= room && text.len() <= budget * 3 / 5 {
            out.push_str(&format!("\nCurrent contents of {path}:\n```\n{text}"));
            if !text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("```\n");
            shown.whole.push(path.to_string());
            continue;
        }
        let ranges = excerpt_ranges(input, file, &text);
        let block = excerpt_block(path, &text, &ranges, room);
        if let Some((block, used)) = block {
            out.push_str(&block);
            shown.excerpts.push((path.to_string(), used));
        }
    }
    out
}

/// Line ranges worth showing: the definitions with the most lines that hit the request's
/// words, else windows around the hits.
fn excerpt_ranges(input: &Input<'_>, file: usize, text: &str) -> Vec<(u32, u32)> {
    let wanted: HashSet<&str> = input.query.terms.iter().map(String::as_str).collect();
    let idents: HashSet<&str> = input.query.idents.iter().map(String::as_str).collect();
    let mut hits: Vec<(u32, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut n = 0;
        terms::for_each_term(line, |t| n += usize::from(wanted.contains(t)));
        n += terms::identifiers(line)
            .filter(|w| idents.contains(w))
            .count()
            * 3;
        if n > 0 {
            hits.push((i as u32 + 1, n));
        }
    }
    let defs: Vec<&DefRec> = input
        .facts(file)
        .map(|f| f.defs.iter().collect())
        .unwrap_or_default();
    let mut scored: Vec<((u32, u32), usize)> = Vec::new();
    for (line, n) in &hits {
        // The innermost definition around the hit, if it is short enough to show whole.
        let inner = defs
            .iter()
            .filter(|d| d.line <= *line && *line <= d.end && d.end - d.line < MAX_EXCERPT_LINES)
            .min_by_key(|d| d.end - d.line);
        let range = match inner {
            Some(d) => (d.line, d.end),
            None => (
                line.saturating_sub(CONTEXT_LINES).max(1),
                line + CONTEXT_LINES,
            ),
        };
        match scored.iter_mut().find(|(r, _)| *r == range) {
            Some((_, total)) => *total += n,
            None => scored.push((range, *n)),
        }
    }
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(r, _)| r).collect()
}

/// The excerpts of `text` at `ranges` (best first), merged and in line order, within `room`.
fn excerpt_block(
    path: &str,
    text: &str,
    ranges: &[(u32, u32)],
    room: usize,
) -> Option<(String, Vec<(u32, u32)>)> {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len() as u32;
    let header = format!("\nExcerpts of {path} ({total} lines; READ it for the rest):\n");
    let mut used: Vec<(u32, u32)> = Vec::new();
    let mut size = header.len();
    for &(a, b) in ranges.iter().take(6) {
        let b = b.min(total);
        if a > b || used.iter().any(|&(x, y)| a >= x && b <= y) {
            continue;
        }
        let cost: usize = lines[(a - 1) as usize..b as usize]
            .iter()
            .map(|l| l.len() + 1)
            .sum::<usize>()
            + 40;
        if size + cost > room {
            continue;
        }
        size += cost;
        used.push((a, b));
    }
    if used.is_empty() {
        return None;
    }
    used.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in used {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut out = header;
    for &(a, b) in &merged {
        out.push_str(&format!("lines {a}-{b}:\n```\n"));
        for l in &lines[(a - 1) as usize..b as usize] {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("```\n");
    }
    Some((out, merged))
}
