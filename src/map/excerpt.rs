//! Which lines of the best-ranked files the first call carries. Each file is cut into units —
//! its definitions (functions, methods, classes' heads), its imports, and its top-level code
//! between them — and each unit is scored for the request (BM25 of its words against the other
//! units', the request's terms in its name, the identifiers the request writes as code, the
//! definitions the best units call); a file's imports score a share of its best unit, as a
//! change to its code often changes them. The text budget is spent across files by how likely
//! each is to change (its share of the ranking's weight), and within a file on its best units
//! for their length (of two units scored alike, the shorter first), whole; a small file is
//! shown whole, and a unit too long to show whole shows its signature, the lines the request
//! hits and the blocks around them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::symbols::DefKind;
use super::terms::{self, Query};

/// A file at most this long (in characters) is shown whole rather than cut.
pub const SMALL_FILE_CHARS: usize = 2_400;
/// A file whose whole text costs at most this many times its share of the budget is shown
/// whole: cutting it would save little and could hide what changes.
const WHOLE_STRETCH: f32 = 2.0;
/// What a file's head (the code above its first definition) scores without the request's
/// words in it.
const HEAD_SCORE: f32 = 0.3;
/// Units longer than this (lines) are shown elided.
const LONG_UNIT_LINES: u32 = 90;
/// A unit costing more than this share of its file's allocation is shown elided.
const LONG_UNIT_SHARE: f32 = 0.6;
/// Top-level code between definitions is cut into chunks of at most this many lines.
const GAP_CHUNK_LINES: u32 = 30;
/// Lines of other code that end a file's block of imports.
const IMPORTS_GAP: u32 = 8;
/// The lines of a file's head (its first top-level code: a licence, a package line, the start
/// of its imports) considered as one unit; the imports are a unit of their own as well.
const HEAD_LINES: u32 = 40;
/// An enclosing block up to this many lines is shown whole around a hit.
const BLOCK_LINES: u32 = 24;
/// Lines shown on each side of a hit whose enclosing block is too long.
const HIT_CONTEXT: u32 = 3;
/// Lines between two excerpts of a file shown to join them.
const GAP_FILL: u32 = 3;
/// Characters each shown range costs beyond its lines (`lines a-b:` and the fence).
const RANGE_COST: usize = 24;
/// BM25's parameters.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// What a request term in a unit's name adds, in units of the term's idf.
const NAME_BONUS: f32 = 1.5;
/// What a unit named exactly like an identifier the request writes as code adds.
const IDENT_NAME_BONUS: f32 = 8.0;
/// Share of a best unit's score that a definition it calls gets.
const CALLEE_SHARE: f32 = 0.25;
/// Units whose calls are followed.
const CALLERS: usize = 3;
/// Share of a file's best unit's score that its imports get.
const IMPORTS_SHARE: f32 = 0.5;
/// A unit next to a chosen one, with nothing of the request, scores this much.
const NEIGHBOUR_SCORE: f32 = 0.05;
/// Units are taken in the order of their score over their length (in lines, at most
/// [`LONG_UNIT_LINES`]) to this power: of two units scored alike, the shorter one leaves room
/// for another.
const LENGTH_POWER: f32 = 0.15;

/// A definition of a file, as excerpts need it.
#[derive(Debug, Clone)]
pub struct DefSpan {
    /// The defined name.
    pub name: String,
    /// What it defines.
    pub kind: DefKind,
    /// 1-based line of its name.
    pub line: u32,
    /// 1-based last line.
    pub end: u32,
}

/// One file excerpts may come from.
pub struct Candidate<'a> {
    /// Project-relative path.
    pub path: &'a str,
    /// Its text.
    pub text: &'a str,
    /// Its definitions.
    pub defs: Vec<DefSpan>,
    /// How likely it is to change, relative to the others (above zero).
    pub weight: f32,
}

/// What a unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    /// A definition with no definition inside.
    Definition,
    /// The head of a definition holding others (a class up to its first method).
    Head,
    /// Code outside any definition.
    TopLevel,
    /// The file's import statements (the block above its first definition).
    Imports,
}

/// A piece of a file that may be shown, with its score for the request.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unit {
    /// First line (1-based).
    pub start: u32,
    /// Last line (1-based, inclusive).
    pub end: u32,
    /// What it is.
    pub kind: UnitKind,
    /// The name it defines.
    pub name: Option<String>,
    /// Its score for the request: the sum of the parts below.
    pub score: f32,
    /// BM25 of its words for the request's.
    pub text: f32,
    /// The request's terms in its name, and an identifier the request names it by.
    pub name_part: f32,
    /// A share of the score of the best unit that calls it.
    pub called: f32,
    /// The name of that unit.
    pub called_by: Option<String>,
    /// For the file's imports, a share of the score of its best unit.
    pub with_code: f32,
    /// The request's terms and identifiers found in it.
    pub hits: Vec<String>,
    /// Whether it was shown elided (signature, hit lines and their blocks).
    pub elided: bool,
    /// Last line of its signature (the name's line, up to where the body opens).
    #[serde(skip)]
    sig_end: u32,
    /// The room it was elided within (so it is elided the same way when shown).
    #[serde(skip)]
    shown_cost: usize,
}

impl Unit {
    /// Lines `lines` of kind `kind`, before the request has scored it.
    fn unscored(
        lines: std::ops::RangeInclusive<u32>,
        kind: UnitKind,
        name: Option<String>,
        sig_end: u32,
    ) -> Unit {
        Unit {
            start: *lines.start(),
            end: *lines.end(),
            kind,
            name,
            score: 0.0,
            text: 0.0,
            name_part: 0.0,
            called: 0.0,
            called_by: None,
            with_code: 0.0,
            hits: Vec::new(),
            elided: false,
            sig_end,
            shown_cost: 0,
        }
    }
}

/// What is shown of one file, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Chosen {
    /// Project-relative path.
    pub path: String,
    /// The file's share of the text budget by its ranking weight (0..1).
    pub share: f32,
    /// Shown whole.
    pub whole: bool,
    /// Lines shown (1-based, inclusive, merged, in order); the whole file when `whole`.
    pub ranges: Vec<(u32, u32)>,
    /// The units chosen, best first (empty when whole).
    pub units: Vec<Unit>,
    /// Lines in the file.
    pub lines: u32,
}

/// The request as excerpts match it: term → index, identifier → index.
struct Wanted<'q> {
    terms: HashMap<&'q str, usize, Hasher>,
    idents: HashMap<&'q str, usize, Hasher>,
    names: Vec<&'q str>,
    /// The wanted terms each identifier met so far yields: the candidate files repeat the
    /// same identifiers line after line, and splitting and stemming them is most of the work
    /// of reading a file for the request.
    seen: RefCell<HashMap<Box<str>, Box<[u16]>, Hasher>>,
}

/// The hasher of [`Wanted`]'s tables, looked up for every identifier of every line read:
/// foldhash, seeded per process (the identifiers are the repository's).
type Hasher = foldhash::fast::RandomState;

/// Identifiers whose terms are kept at most (a bound on the memory of one request's reading).
const SEEN_MAX: usize = 1 << 17;

impl<'q> Wanted<'q> {
    fn of(query: &'q Query) -> Self {
        let terms: HashMap<&str, usize, Hasher> = query
            .terms
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i))
            .collect();
        let n = query.terms.len();
        let idents = query
            .idents
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), n + i))
            .collect();
        let names = query
            .terms
            .iter()
            .chain(&query.idents)
            .map(String::as_str)
            .collect();
        Wanted {
            terms,
            idents,
            names,
            seen: RefCell::default(),
        }
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    /// The wanted terms and identifiers on one line (indices, an occurrence each).
    fn on_line(&self, line: &str, out: &mut Vec<u16>) {
        out.clear();
        if self.names.is_empty() {
            return;
        }
        // The terms of a line are those of its identifiers in turn (`for_each_term`).
        let mut seen = self.seen.borrow_mut();
        for ident in terms::identifiers(line) {
            if let Some(found) = seen.get(ident) {
                out.extend_from_slice(found);
                continue;
            }
            let from = out.len();
            terms::for_each_term(ident, |t| {
                if let Some(&i) = self.terms.get(t) {
                    out.push(i as u16);
                }
            });
            if seen.len() < SEEN_MAX {
                seen.insert(ident.into(), out[from..].into());
            }
        }
        if !self.idents.is_empty() {
            for w in terms::identifiers(line) {
                if let Some(&i) = self.idents.get(w) {
                    out.push(i as u16);
                }
            }
        }
    }
}

/// One candidate file, read for the request.
struct FileView<'a> {
    lines: Vec<&'a str>,
    /// Wanted indices found on each line.
    hits: Vec<Vec<u16>>,
    units: Vec<Unit>,
}

/// Choose what to show of `cands` (best first) for `query` within `budget` characters.
pub fn choose(cands: &[Candidate<'_>], query: &Query, budget: usize) -> Vec<Chosen> {
    let wanted = Wanted::of(query);
    let mut views = read_files(cands, query);
    let idf = idf_of(&views, wanted.len());
    for view in &mut views {
        score_units(view, &wanted, &idf);
    }
    let mut plan = Plan {
        chosen: vec![None; cands.len()],
        taken: vec![Vec::new(); cands.len()],
        remaining: budget,
        total_weight: cands.iter().map(|c| c.weight.max(0.0)).sum(),
    };
    plan.by_share(cands, &mut views);
    plan.fill(cands, &mut views);
    plan.finish(cands, &views)
}

/// What is chosen so far, and the budget left.
struct Plan {
    /// Files shown whole, or (at the end) as excerpts.
    chosen: Vec<Option<Chosen>>,
    /// Per file, the units taken.
    taken: Vec<Vec<usize>>,
    remaining: usize,
    total_weight: f32,
}

impl Plan {
    /// A file's share of the budget by weight.
    fn share(&self, cand: &Candidate<'_>) -> f32 {
        cand.weight.max(0.0) / self.total_weight.max(f32::MIN_POSITIVE)
    }

    /// Each file in rank order gets its share of what is left, by weight (whole when it costs
    /// little more, else its best units); what it does not use passes to the next.
    fn by_share(&mut self, cands: &[Candidate<'_>], views: &mut [FileView<'_>]) {
        let mut weight_left = self.total_weight;
        for (i, cand) in cands.iter().enumerate() {
            let w = cand.weight.max(0.0);
            let share = if weight_left > 0.0 {
                w / weight_left
            } else {
                0.0
            };
            weight_left -= w;
            let alloc = (self.remaining as f32 * share) as usize;
            let whole_cost = whole_cost(cand.path, cand.text);
            if (cand.text.len() <= SMALL_FILE_CHARS
                || whole_cost as f32 <= alloc as f32 * WHOLE_STRETCH)
                && whole_cost <= self.remaining
            {
                self.remaining -= whole_cost;
                self.chosen[i] = Some(whole(cand, &views[i], self.share(cand)));
                continue;
            }
            let view = &mut views[i];
            let mut used = header_cost(cand.path);
            if used >= alloc {
                continue;
            }
            let mut order: Vec<usize> = (0..view.units.len())
                .filter(|&u| view.units[u].score > 0.0)
                .collect();
            order.sort_by(|&a, &b| claim(&view.units[b]).total_cmp(&claim(&view.units[a])));
            for u in order {
                let got = take_unit(view, u, alloc.saturating_sub(used), alloc);
                if got > 0 {
                    used += got;
                    self.taken[i].push(u);
                }
            }
            if !self.taken[i].is_empty() {
                self.remaining = self.remaining.saturating_sub(used);
            }
        }
    }

    /// What is left goes to the best units not yet shown, across files, by the file's weight
    /// times the unit's score; a unit beside a shown one counts a little.
    fn fill(&mut self, cands: &[Candidate<'_>], views: &mut [FileView<'_>]) {
        let mut rest: Vec<(f32, usize, usize)> = Vec::new();
        for (i, view) in views.iter().enumerate() {
            if self.chosen[i].is_some() {
                continue;
            }
            let w = cands[i].weight.max(0.0);
            for (u, unit) in view.units.iter().enumerate() {
                if self.taken[i].contains(&u) {
                    continue;
                }
                let beside = self.taken[i].iter().any(|&t| {
                    let o = &view.units[t];
                    unit.end + 1 >= o.start && o.end + 1 >= unit.start
                });
                let s = unit.score + if beside { NEIGHBOUR_SCORE } else { 0.0 };
                if s > 0.0 {
                    rest.push((w * s / length_factor(unit), i, u));
                }
            }
        }
        rest.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, i, u) in rest {
            if self.remaining < RANGE_COST * 4 {
                break;
            }
            let opening = if self.taken[i].is_empty() {
                header_cost(cands[i].path)
            } else {
                0
            };
            let room = self.remaining.saturating_sub(opening);
            let got = take_unit(&mut views[i], u, room, room);
            if got > 0 {
                self.remaining = self.remaining.saturating_sub(got + opening);
                self.taken[i].push(u);
            }
        }
    }

    /// The files shown, in rank order: whole, or their units' lines merged.
    fn finish(mut self, cands: &[Candidate<'_>], views: &[FileView<'_>]) -> Vec<Chosen> {
        for (i, cand) in cands.iter().enumerate() {
            if self.chosen[i].is_some() || self.taken[i].is_empty() {
                continue;
            }
            let view = &views[i];
            let units: Vec<Unit> = self.taken[i]
                .iter()
                .map(|&u| view.units[u].clone())
                .collect();
            let ranges = merge(units.iter().flat_map(|u| shown_of(view, u)).collect());
            let ranges = fill_gaps(&view.lines, ranges, &mut self.remaining);
            let ranges = with_blank_above(&view.lines, ranges, &mut self.remaining);
            self.chosen[i] = Some(Chosen {
                path: cand.path.to_string(),
                share: self.share(cand),
                whole: false,
                ranges,
                units,
                lines: view.lines.len() as u32,
            });
        }
        self.chosen.into_iter().flatten().collect()
    }
}

/// `ranges` with the few lines between two of them shown too, while `remaining` lasts: a
/// line or two left out between excerpts saves little and hides where they join.
fn fill_gaps(lines: &[&str], ranges: Vec<(u32, u32)>, remaining: &mut usize) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        if let Some(last) = out.last_mut()
            && a > last.1 + 1
            && a - last.1 - 1 <= GAP_FILL
        {
            let between = cost_of(lines, &[(last.1 + 1, a - 1)]).saturating_sub(RANGE_COST);
            // Joining saves the second range's heading.
            let cost = between.saturating_sub(RANGE_COST);
            if cost <= *remaining {
                *remaining -= cost;
                last.1 = b;
                continue;
            }
        }
        out.push((a, b));
    }
    out
}

/// `ranges` each starting at the blank line above it, while `remaining` lasts: a definition
/// is often added in the blank line before another, and an edit there is anchored on it.
fn with_blank_above(
    lines: &[&str],
    ranges: Vec<(u32, u32)>,
    remaining: &mut usize,
) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (mut a, b) in ranges {
        let prev = out.last().map_or(0, |r| r.1);
        let above = a.checked_sub(2).and_then(|i| lines.get(i as usize));
        if let Some(line) = above
            && a - 1 > prev
            && line.trim().is_empty()
            && line.len() < *remaining
        {
            *remaining -= line.len() + 1;
            a -= 1;
        }
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A file shown whole.
fn whole(cand: &Candidate<'_>, view: &FileView<'_>, share: f32) -> Chosen {
    let n = view.lines.len() as u32;
    Chosen {
        path: cand.path.to_string(),
        share,
        whole: true,
        ranges: if n > 0 { vec![(1, n)] } else { Vec::new() },
        units: Vec::new(),
        lines: n,
    }
}

/// How strongly a unit claims its file's room: its score over its length to
/// [`LENGTH_POWER`]. BM25 already weighs a long unit's words down, but not what showing it
/// costs: a 100-line definition scored a little above a 4-line one would take the room of
/// many like the latter.
fn claim(unit: &Unit) -> f32 {
    unit.score / length_factor(unit)
}

/// A unit's length (in lines, at most what a long unit shows elided) to [`LENGTH_POWER`].
fn length_factor(unit: &Unit) -> f32 {
    let lines = (unit.end - unit.start + 1).min(LONG_UNIT_LINES) as f32;
    lines.powf(LENGTH_POWER)
}

/// Mark unit `u` of `view` taken when it fits in `room` (whole, or elided when long or
/// dear against `alloc`); returns what it costs (0: not taken).
fn take_unit(view: &mut FileView<'_>, u: usize, room: usize, alloc: usize) -> usize {
    let unit = &view.units[u];
    let full = cost_of(&view.lines, &[(unit.start, unit.end)]);
    let long =
        unit.end - unit.start + 1 > LONG_UNIT_LINES || full as f32 > alloc as f32 * LONG_UNIT_SHARE;
    if !long && full <= room {
        return full;
    }
    if unit.kind != UnitKind::Definition && unit.kind != UnitKind::Head {
        return 0;
    }
    let ranges = elide(&view.lines, &view.hits, unit, room);
    if ranges.is_empty() {
        return 0;
    }
    let cost = cost_of(&view.lines, &ranges);
    if cost > room {
        return 0;
    }
    view.units[u].elided = true;
    view.units[u].shown_cost = room;
    cost
}

/// The lines a chosen unit shows.
fn shown_of(view: &FileView<'_>, unit: &Unit) -> Vec<(u32, u32)> {
    if unit.elided {
        elide(&view.lines, &view.hits, unit, unit.shown_cost)
    } else {
        vec![(unit.start, unit.end)]
    }
}

/// What showing `text` whole costs.
fn whole_cost(path: &str, text: &str) -> usize {
    path.len() + 40 + text.len()
}

/// What a file's excerpt header costs.
fn header_cost(path: &str) -> usize {
    path.len() + 60
}

/// What showing `ranges` of `lines` costs.
fn cost_of(lines: &[&str], ranges: &[(u32, u32)]) -> usize {
    ranges
        .iter()
        .map(|&(a, b)| {
            let (a, b) = (a.max(1) as usize, (b as usize).min(lines.len()));
            let text: usize = lines
                .get(a - 1..b)
                .map_or(0, |ls| ls.iter().map(|l| l.len() + 1).sum());
            text + RANGE_COST
        })
        .sum()
}

/// Overlapping or touching ranges merged, in order.
pub fn merge(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Read every candidate ([`read_file`]), in order: the second half of their text on a thread
/// of its own when there is a second core. Reading is most of choosing, and each file is read
/// on its own (each half has its own [`Wanted`], whose memory of identifiers changes no
/// result), so the views are the same either way.
fn read_files<'a>(cands: &[Candidate<'a>], query: &Query) -> Vec<FileView<'a>> {
    /// Below this much text a thread costs more than it saves.
    const SPLIT_FROM: usize = 64 * 1024;
    let read = |part: &[Candidate<'a>]| -> Vec<FileView<'a>> {
        let wanted = Wanted::of(query);
        part.iter().map(|c| read_file(c, &wanted)).collect()
    };
    let total: usize = cands.iter().map(|c| c.text.len()).sum();
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !two_cores || total < SPLIT_FROM {
        return read(cands);
    }
    let mut first_half = 0;
    let mut at = 0;
    for c in cands {
        if first_half * 2 >= total {
            break;
        }
        first_half += c.text.len();
        at += 1;
    }
    let (front, back) = cands.split_at(at);
    std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("pai-map-read".into())
            .spawn_scoped(s, || read(back));
        let mut views = read(front);
        // A thread that could not start or failed leaves its half to this one.
        match other.map(|t| t.join()) {
            Ok(Ok(rest)) => views.extend(rest),
            _ => views.extend(read(back)),
        }
        views
    })
}

/// Read a candidate: its lines, the request's hits on each, and its units.
fn read_file<'a>(cand: &Candidate<'a>, wanted: &Wanted<'_>) -> FileView<'a> {
    let lines: Vec<&str> = cand.text.lines().collect();
    let mut buf = Vec::new();
    let hits = lines
        .iter()
        .map(|l| {
            wanted.on_line(l, &mut buf);
            buf.clone()
        })
        .collect();
    let units = units_of(&lines, &cand.defs);
    FileView { lines, hits, units }
}

/// The first line of a definition: its name's line, or above it the decorators, attributes
/// and comments that belong to it.
fn def_start(lines: &[&str], line: u32, floor: u32) -> u32 {
    let mut start = line;
    while start > floor + 1 {
        let Some(prev) = lines.get(start as usize - 2) else {
            break;
        };
        let t = prev.trim_start();
        let attached = t.starts_with('@')
            || t.starts_with("#[")
            || t.starts_with("//")
            || t.starts_with("/*")
            || t.starts_with('*')
            || (t.starts_with('#') && !t.starts_with("#include") && !t.starts_with("#define"));
        if t.is_empty() || !attached {
            break;
        }
        start -= 1;
    }
    start
}

/// The last line of a signature starting at `line`: where the body opens, at most a few
/// lines down.
fn sig_end(lines: &[&str], line: u32, end: u32) -> u32 {
    let mut k = line;
    while k < end && k < line + 6 {
        let t = lines.get(k as usize - 1).map_or("", |l| l.trim_end());
        if t.ends_with(':') || t.ends_with('{') || t.ends_with(';') || t.ends_with("=>") {
            break;
        }
        let opens = t.matches(['(', '[']).count();
        let closes = t.matches([')', ']']).count();
        if opens <= closes && k > line {
            break;
        }
        k += 1;
    }
    k
}

/// A file's units: each definition without definitions inside, whole; the head of each one
/// with definitions inside (up to its first inner one); and the code outside them in chunks.
fn units_of(lines: &[&str], defs: &[DefSpan]) -> Vec<Unit> {
    let n = lines.len() as u32;
    let mut spans: Vec<DefSpan> = defs
        .iter()
        .filter(|d| d.line >= 1 && d.line <= n)
        .map(|d| DefSpan {
            end: d.end.clamp(d.line, n),
            ..d.clone()
        })
        .collect();
    spans.sort_by_key(|d| (d.line, std::cmp::Reverse(d.end)));
    spans.dedup_by(|b, a| a.line == b.line && a.end == b.end);
    let mut covered = vec![false; n as usize + 1];
    let mut units = Vec::new();
    for (k, d) in spans.iter().enumerate() {
        let inner: Vec<&DefSpan> = spans[k + 1..]
            .iter()
            .take_while(|o| o.line <= d.end)
            .filter(|o| o.end <= d.end)
            .collect();
        // Where the enclosing definition's previous child ended, so comments above this one
        // are not taken from it.
        let floor = spans[..k]
            .iter()
            .filter(|o| o.end < d.line)
            .map(|o| o.end)
            .max()
            .unwrap_or(0);
        let start = def_start(lines, d.line, floor);
        let end = match inner.first() {
            None => d.end,
            Some(first) => {
                let child_start = def_start(lines, first.line, d.line);
                child_start.saturating_sub(1).max(d.line)
            }
        };
        let kind = if inner.is_empty() {
            UnitKind::Definition
        } else {
            UnitKind::Head
        };
        // The blank lines after a definition go with it: code is often added there.
        let mut end = end;
        if kind == UnitKind::Definition {
            while end < n && lines[end as usize].trim().is_empty() {
                end += 1;
            }
        }
        for c in covered
            .iter_mut()
            .take(end as usize + 1)
            .skip(start as usize)
        {
            *c = true;
        }
        let sig_end = sig_end(lines, d.line, end);
        units.push(Unit::unscored(
            start..=end,
            kind,
            Some(d.name.clone()),
            sig_end,
        ));
        // A definition's tail after its last inner one (a closing brace, trailing statements)
        // is left to the top-level chunks.
    }
    top_level_units(lines, &covered, &mut units);
    // Imports sit above the first definition with a body (a one-line one, such as C's include
    // guard, may come first).
    let first_def = spans
        .iter()
        .find(|d| d.end > d.line + 1)
        .map_or(n, |d| def_start(lines, d.line, 0).saturating_sub(1));
    if let Some((a, b)) = imports_block(lines, first_def) {
        units.push(Unit::unscored(a..=b, UnitKind::Imports, None, a));
    }
    units.sort_by_key(|u| (u.start, u.end));
    units
}

/// Whether `line` starts an import statement in one of the languages the map reads.
fn is_import(line: &str) -> bool {
    // At the top level only: an import inside a function is that function's.
    if line.starts_with(char::is_whitespace) {
        return false;
    }
    // C's preprocessor allows space after the `#` (`#  include <tuple>`).
    // A `#` comment (`# import the rest`) is not: the name that follows is quoted or bracketed.
    if let Some(rest) = line.strip_prefix('#') {
        let rest = rest.trim_start();
        if let Some(name) = rest
            .strip_prefix("include")
            .or_else(|| rest.strip_prefix("import"))
        {
            return name.trim_start().starts_with(['<', '"']);
        }
        return false;
    }
    const STARTS: [&str; 11] = [
        "import ",
        "import{",
        "import(",
        "use ",
        "pub use ",
        "pub(crate) use ",
        "extern crate ",
        "require ",
        "require_relative",
        "using ",
        "@import ",
    ];
    STARTS.iter().any(|p| line.starts_with(p))
        || (line.starts_with("from ") && line.contains(" import"))
        || (["const ", "let ", "var "]
            .iter()
            .any(|p| line.starts_with(p))
            && line.contains("= require("))
}

/// The lines from the first import statement above line `limit` to the end of the last one
/// (a statement's parentheses or braces followed to their close).
fn imports_block(lines: &[&str], limit: u32) -> Option<(u32, u32)> {
    let limit = limit.min(lines.len() as u32);
    let mut first = None;
    let mut last = 0u32;
    let mut k = 1u32;
    while k <= limit {
        let line = lines[k as usize - 1];
        // The block ends where code other than imports runs for a while.
        if first.is_some() && k > last + IMPORTS_GAP {
            break;
        }
        if !is_import(line) {
            k += 1;
            continue;
        }
        first.get_or_insert(k);
        let mut depth: i32 = 0;
        let mut end = k;
        loop {
            let l = lines[end as usize - 1];
            depth += l.matches(['(', '{']).count() as i32 - l.matches([')', '}']).count() as i32;
            if depth <= 0 || end >= limit {
                break;
            }
            end += 1;
        }
        last = end;
        k = end + 1;
    }
    let first = first?;
    // The blank lines after the last one go with it: an import is often added there.
    let n = lines.len() as u32;
    while last < n && lines[last as usize].trim().is_empty() {
        last += 1;
    }
    Some((first, last))
}

/// The code outside the definitions (`covered` marks theirs): runs of other lines, cut into
/// chunks at blank lines, the file's head as one.
fn top_level_units(lines: &[&str], covered: &[bool], units: &mut Vec<Unit>) {
    let n = lines.len() as u32;
    let mut k = 1u32;
    while k <= n {
        if covered[k as usize] {
            k += 1;
            continue;
        }
        let start = k;
        let limit = if start == 1 {
            HEAD_LINES
        } else {
            GAP_CHUNK_LINES
        };
        let mut end = k;
        while end < n && !covered[end as usize + 1] && end - start + 1 < limit {
            end += 1;
        }
        // Prefer to cut a long run at a blank line.
        if end < n
            && !covered[end as usize + 1]
            && let Some(blank) = (start + limit / 2..=end)
                .rev()
                .find(|&l| lines[l as usize - 1].trim().is_empty())
        {
            end = blank;
        }
        let blank = (start..=end).all(|l| lines[l as usize - 1].trim().is_empty());
        if !blank {
            units.push(Unit::unscored(start..=end, UnitKind::TopLevel, None, start));
        }
        k = end + 1;
    }
}

/// The inverse document frequency of each wanted term over the lines of every candidate.
fn idf_of(views: &[FileView<'_>], n_wanted: usize) -> Vec<f32> {
    let mut df = vec![0usize; n_wanted];
    let mut lines = 0usize;
    let mut seen = Vec::new();
    for v in views {
        for h in &v.hits {
            lines += 1;
            seen.clear();
            seen.extend(h.iter().copied());
            seen.sort_unstable();
            seen.dedup();
            for &i in &seen {
                if let Some(d) = df.get_mut(i as usize) {
                    *d += 1;
                }
            }
        }
    }
    df.iter()
        .map(|&d| (1.0 + (lines as f32 - d as f32 + 0.5) / (d as f32 + 0.5)).ln())
        .collect()
}

/// Score each unit of `view`: BM25 of its lines, the request's terms in its name, an
/// identifier the request names it by, and a share of the score of the best units that call
/// it.
fn score_units(view: &mut FileView<'_>, wanted: &Wanted<'_>, idf: &[f32]) {
    if wanted.len() == 0 || view.units.is_empty() {
        return;
    }
    let avg = view
        .units
        .iter()
        .map(|u| (u.end - u.start + 1) as f32)
        .sum::<f32>()
        / view.units.len() as f32;
    let n_terms = wanted.terms.len();
    let mut tf = vec![0u32; wanted.len()];
    for unit in &mut view.units {
        tf.iter_mut().for_each(|x| *x = 0);
        for h in &view.hits[unit.start as usize - 1..unit.end as usize] {
            for &i in h {
                tf[i as usize] += 1;
            }
        }
        let len = (unit.end - unit.start + 1) as f32;
        let norm = K1 * (1.0 - B + B * len / avg.max(1.0));
        let mut score = 0.0;
        let mut hits = Vec::new();
        for (i, &n) in tf.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let n = n as f32;
            let weight = if i >= n_terms { 2.0 } else { 1.0 };
            score += weight * idf[i] * n * (K1 + 1.0) / (n + norm);
            hits.push(wanted.names[i].to_string());
        }
        let mut name_part = 0.0;
        if let Some(name) = &unit.name {
            let mut in_name = Vec::new();
            terms::for_each_term(name, |t| {
                if let Some(&i) = wanted.terms.get(t) {
                    in_name.push(i);
                }
            });
            // Summed in the request's order: a float sum in a hash set's order differs in its
            // last bits from run to run, and a tie between two units with it.
            in_name.sort_unstable();
            in_name.dedup();
            name_part += in_name.iter().map(|&i| NAME_BONUS * idf[i]).sum::<f32>();
            if wanted.idents.contains_key(name.as_str()) {
                name_part += IDENT_NAME_BONUS;
            }
        }
        unit.text = score;
        unit.name_part = name_part;
        unit.score = score + name_part;
        if unit.kind == UnitKind::TopLevel && unit.start == 1 {
            // A file's head changes with much of its code.
            unit.score += HEAD_SCORE;
        }
        unit.hits = hits;
    }
    score_callees(view);
    score_imports(view);
}

/// A file's imports get a share of its best unit's score: a change to its code often adds or
/// drops an import (a new call, a type no longer used), and a model that does not see them
/// must READ the file again to write that line.
fn score_imports(view: &mut FileView<'_>) {
    let best = view
        .units
        .iter()
        .filter(|u| u.kind != UnitKind::Imports)
        .map(|u| u.score)
        .fold(0.0_f32, f32::max);
    for unit in view
        .units
        .iter_mut()
        .filter(|u| u.kind == UnitKind::Imports)
    {
        unit.with_code = IMPORTS_SHARE * best;
        unit.score += unit.with_code;
    }
}

/// The definitions the best units of `view` call get a share of their score.
fn score_callees(view: &mut FileView<'_>) {
    let mut best: Vec<usize> = (0..view.units.len())
        .filter(|&u| view.units[u].score > 0.0)
        .collect();
    best.sort_by(|&a, &b| view.units[b].score.total_cmp(&view.units[a].score));
    best.truncate(CALLERS);
    let defined: HashMap<&str, Vec<usize>> = {
        let mut m: HashMap<&str, Vec<usize>> = HashMap::new();
        for (u, unit) in view.units.iter().enumerate() {
            if let Some(name) = &unit.name
                && unit.kind == UnitKind::Definition
            {
                m.entry(name.as_str()).or_default().push(u);
            }
        }
        m
    };
    let mut extra: Vec<(f32, Option<usize>)> = vec![(0.0, None); view.units.len()];
    for &b in &best {
        let unit = &view.units[b];
        let mut called = HashSet::new();
        for l in &view.lines[unit.start as usize - 1..unit.end as usize] {
            for w in terms::identifiers(l) {
                if let Some(us) = defined.get(w) {
                    called.extend(us.iter().copied().filter(|&c| c != b));
                }
            }
        }
        for c in called {
            let (part, by) = &mut extra[c];
            *part += CALLEE_SHARE * unit.score;
            by.get_or_insert(b);
        }
    }
    let callers: Vec<Option<String>> = extra
        .iter()
        .map(|(_, by)| by.and_then(|b| view.units[b].name.clone()))
        .collect();
    for ((unit, (part, _)), by) in view.units.iter_mut().zip(extra).zip(callers) {
        unit.called = part;
        unit.score += part;
        unit.called_by = by;
    }
}

/// The indentation of a line (a tab counts 4).
fn indent(line: &str) -> usize {
    let mut n = 0;
    for c in line.chars() {
        match c {
            ' ' => n += 1,
            '\t' => n += 4,
            _ => break,
        }
    }
    n
}

/// The nearest line above `h` (not above `floor`) indented less than `h`: the head of the
/// block holding it.
fn block_head(lines: &[&str], h: u32, floor: u32) -> u32 {
    let Some(line) = lines.get(h as usize - 1) else {
        return floor;
    };
    let own = indent(line);
    let mut k = h;
    while k > floor {
        k -= 1;
        let l = lines[k as usize - 1];
        if !l.trim().is_empty() && indent(l) < own {
            return k;
        }
    }
    floor
}

/// The last line of the block headed by `head` (not past `ceiling`): the lines indented more
/// than it, and a closing line at its own indentation.
fn block_end(lines: &[&str], head: u32, ceiling: u32) -> u32 {
    let own = indent(lines[head as usize - 1]);
    let mut k = head;
    while k < ceiling {
        let l = lines[k as usize];
        if l.trim().is_empty() || indent(l) > own {
            k += 1;
            continue;
        }
        let t = l.trim_start();
        if t.starts_with('}') || t.starts_with(')') || t.starts_with(']') || t == "end" {
            k += 1;
        }
        break;
    }
    while k > head && lines[k as usize - 1].trim().is_empty() {
        k -= 1;
    }
    k
}

/// A long unit elided within `room`: its signature, then for each line the request hits (the
/// most hits first) the block holding it when short, else the line with a few around it, and
/// the heads of the blocks above it.
fn elide(lines: &[&str], hits: &[Vec<u16>], unit: &Unit, room: usize) -> Vec<(u32, u32)> {
    let mut picked = vec![(unit.start, unit.sig_end.clamp(unit.start, unit.end))];
    if cost_of(lines, &picked) > room {
        return Vec::new();
    }
    let mut hit_lines: Vec<(usize, u32)> = (unit.sig_end + 1..=unit.end)
        .filter_map(|l| {
            let n = hits.get(l as usize - 1)?.len();
            (n > 0).then_some((n, l))
        })
        .collect();
    hit_lines.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, h) in hit_lines {
        let head = block_head(lines, h, unit.start);
        let mut piece = vec![];
        if head > unit.start {
            let end = block_end(lines, head, unit.end);
            if end - head < BLOCK_LINES {
                piece.push((head, end));
            }
        }
        if piece.is_empty() {
            piece.push((
                h.saturating_sub(HIT_CONTEXT).max(unit.start),
                (h + HIT_CONTEXT).min(unit.end),
            ));
        }
        // The heads of the blocks above, one line each.
        let mut k = piece[0].0;
        while k > unit.sig_end + 1 {
            let up = block_head(lines, k, unit.start);
            if up <= unit.sig_end {
                break;
            }
            piece.push((up, up));
            k = up;
        }
        let mut trial = picked.clone();
        trial.extend(piece);
        let trial = merge(trial);
        if cost_of(lines, &trial) <= room {
            picked = trial;
        }
    }
    // The definition's last line (its closing brace or `end`) when it is short.
    let last = lines.get(unit.end as usize - 1).map_or("", |l| l.trim());
    if last.len() <= 3 {
        let mut trial = picked.clone();
        trial.push((unit.end, unit.end));
        let trial = merge(trial);
        if cost_of(lines, &trial) <= room {
            picked = trial;
        }
    }
    merge(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, kind: DefKind, line: u32, end: u32) -> DefSpan {
        DefSpan {
            name: name.into(),
            kind,
            line,
            end,
        }
    }

    /// A Python module: imports, a small helper, a class with two methods, one long.
    fn module() -> (String, Vec<DefSpan>) {
        let mut t = String::from("import os\nimport sys\n\n\n");
        // lines 5-7
        t.push_str("def helper(x):\n    \"\"\"Unrelated.\"\"\"\n    return x + 1\n\n\n");
        // line 10: class, 11-13 first method
        t.push_str("class Invoice:\n    def compute_tax(self, rate):\n        value = self.total * rate\n        return value\n\n");
        // line 15: a long method, 120 lines, with one hit in the middle
        t.push_str("    def render(self):\n");
        for i in 0..60 {
            t.push_str(&format!("        filler_{i} = {i}\n"));
        }
        t.push_str("        if self.discount:\n            total = self.discount_total()\n            return total\n");
        for i in 60..117 {
            t.push_str(&format!("        filler_{i} = {i}\n"));
        }
        let defs = vec![
            def("helper", DefKind::Function, 5, 7),
            def("Invoice", DefKind::Class, 10, 195),
            def("compute_tax", DefKind::Method, 11, 13),
            def("render", DefKind::Method, 15, 195),
        ];
        (t, defs)
    }

    fn cand<'a>(path: &'a str, text: &'a str, defs: Vec<DefSpan>, weight: f32) -> Candidate<'a> {
        Candidate {
            path,
            text,
            defs,
            weight,
        }
    }

    /// A unit whose name holds many of the request's words, each of another weight, scores
    /// the same bits every time: the map is the same text for the same request and project.
    #[test]
    fn a_units_name_scores_the_same_bits_every_time() {
        let words = [
            "apportion",
            "ledger",
            "rounding",
            "invoice",
            "currency",
            "total",
        ];
        let mut text = format!("def {}(x):\n    return x\n\n", words.join("_"));
        // Each word on another number of lines, so each has its own idf.
        for (k, w) in words.iter().enumerate() {
            for i in 0..=k * 3 {
                text.push_str(&format!("def other_{k}_{i}():\n    return {w}_{i}\n\n"));
            }
        }
        let mut defs = vec![def(&words.join("_"), DefKind::Function, 1, 2)];
        let mut line = 4;
        for (k, _) in words.iter().enumerate() {
            for i in 0..=k * 3 {
                defs.push(def(
                    &format!("other_{k}_{i}"),
                    DefKind::Function,
                    line,
                    line + 1,
                ));
                line += 3;
            }
        }
        let q = Query::parse(&words.join(" "));
        let bits = || {
            let c = choose(&[cand("ledger.py", &text, defs.clone(), 1.0)], &q, 300);
            c[0].units
                .iter()
                .map(|u| (u.start, u.name_part.to_bits(), u.score.to_bits()))
                .collect::<Vec<_>>()
        };
        let first = bits();
        assert!(
            first
                .iter()
                .any(|&(start, part, _)| start == 1 && f32::from_bits(part) > 0.0)
        );
        for _ in 0..40 {
            assert_eq!(bits(), first);
        }
    }

    #[test]
    fn the_definition_the_request_is_about_is_shown_whole_with_its_lines() {
        let (text, defs) = module();
        let q = Query::parse("the invoice tax is computed with the wrong rate");
        // Room for the method and its class's line, not for the rest.
        let c = choose(&[cand("billing.py", &text, defs, 1.0)], &q, 260);
        assert_eq!(c.len(), 1);
        assert!(!c[0].whole);
        // compute_tax (11-13) whole, the unit of greatest score.
        assert_eq!(c[0].units[0].name.as_deref(), Some("compute_tax"));
        assert!(
            c[0].ranges.iter().any(|&(a, b)| a <= 11 && b >= 13),
            "{:?}",
            c[0].ranges
        );
        // Nothing of the unrelated helper.
        assert!(
            !c[0].ranges.iter().any(|&(a, b)| a <= 6 && b >= 6),
            "{:?}",
            c[0].ranges
        );
    }

    #[test]
    fn a_long_definition_is_elided_to_its_signature_and_the_block_the_request_hits() {
        let (text, defs) = module();
        let q = Query::parse("render applies the discount total twice");
        let c = choose(&[cand("billing.py", &text, defs, 1.0)], &q, 1_200);
        let render = c[0]
            .units
            .iter()
            .find(|u| u.name.as_deref() == Some("render"))
            .expect("render chosen");
        assert!(render.elided);
        let r = &c[0].ranges;
        let shows = |l: u32| r.iter().any(|&(a, b)| a <= l && l <= b);
        // The signature, the `if` block with the hits (lines 76-78), not the filler between.
        assert!(shows(15), "{r:?}");
        assert!(shows(76) && shows(77) && shows(78), "{r:?}");
        assert!(!shows(40), "{r:?}");
        assert!(!shows(150), "{r:?}");
    }

    #[test]
    fn an_excerpt_starts_at_the_blank_line_above_it() {
        let lines = ["a", "", "def f():", "    pass", "x", "", "def g():"];
        let mut remaining = 100;
        let r = with_blank_above(&lines, vec![(3, 4), (7, 7)], &mut remaining);
        assert_eq!(r, vec![(2, 4), (6, 7)]);
        assert_eq!(remaining, 98);
        // A line of code above is not taken, nor anything without room.
        let mut remaining = 100;
        assert_eq!(
            with_blank_above(&lines, vec![(5, 5)], &mut remaining),
            vec![(5, 5)]
        );
        let mut none = 0;
        assert_eq!(
            with_blank_above(&lines, vec![(3, 4)], &mut none),
            vec![(3, 4)]
        );
    }

    #[test]
    fn a_small_file_is_shown_whole() {
        let text = "def add(a, b):\n    return a + b\n";
        let q = Query::parse("add numbers");
        let defs = vec![def("add", DefKind::Function, 1, 2)];
        let c = choose(&[cand("small.py", text, defs, 1.0)], &q, 2_000);
        assert!(c[0].whole);
        assert_eq!(c[0].ranges, vec![(1, 2)]);
    }

    #[test]
    fn the_budget_is_respected_and_spent_by_weight() {
        let (text, defs) = module();
        let q = Query::parse("invoice tax rate render discount helper");
        for budget in [300, 800, 2_000, 5_000] {
            let cands = [
                cand("a.py", &text, defs.clone(), 1.0),
                cand("b.py", &text, defs.clone(), 0.2),
            ];
            let c = choose(&cands, &q, budget);
            let lines: Vec<&str> = text.lines().collect();
            let spent: usize = c
                .iter()
                .map(|f| header_cost(&f.path) + cost_of(&lines, &f.ranges))
                .sum();
            assert!(spent <= budget, "{spent} > {budget}: {c:?}");
            let shown = |p: &str| {
                c.iter()
                    .find(|f| f.path == p)
                    .map_or(0, |f| cost_of(&lines, &f.ranges))
            };
            assert!(shown("a.py") >= shown("b.py"), "{budget}: {c:?}");
        }
    }

    /// A unit scored a little above another but many times longer claims less of the file's
    /// room; one scored far above it, or as long, keeps its place; past what a long unit
    /// shows elided, length no longer counts.
    #[test]
    fn a_short_unit_scored_alike_goes_before_a_long_one() {
        let unit = |lines: u32, score: f32| Unit {
            score,
            ..Unit::unscored(1..=lines, UnitKind::Definition, None, 1)
        };
        assert!(claim(&unit(4, 9.0)) > claim(&unit(100, 10.0)));
        assert!(claim(&unit(4, 5.0)) < claim(&unit(100, 10.0)));
        assert!(claim(&unit(20, 9.0)) < claim(&unit(20, 10.0)));
        assert_eq!(claim(&unit(90, 10.0)), claim(&unit(400, 10.0)));
    }

    /// Reading a line through the identifiers already met gives the wanted terms reading the
    /// whole line afresh gives, in the same order, for every shape of identifier.
    #[test]
    fn terms_of_a_line_read_through_the_seen_identifiers_are_those_of_the_line() {
        let q = Query::parse("parse_config fails when the HTTPResponse has no body `read_body`");
        let wanted = Wanted::of(&q);
        let long = format!("config_{}", "x".repeat(70));
        let lines = [
            "def parse_config(path): return read_body(path)",
            "    cfg = parse_config(read_body(body))  # parse the config body",
            "let r: HTTPResponse = parseConfig(body_bytes); // ünïcode_body config2",
            &long,
            "PARSE_CONFIG = parse_config; parse_config = None; parses configs",
            "",
            "    ",
        ];
        let mut got = Vec::new();
        // Twice over, so that the second pass reads every identifier from what was kept.
        for line in lines.iter().chain(lines.iter()) {
            wanted.on_line(line, &mut got);
            let mut fresh = Vec::new();
            terms::for_each_term(line, |t| {
                if let Some(&i) = wanted.terms.get(t) {
                    fresh.push(i as u16);
                }
            });
            for w in terms::identifiers(line) {
                if let Some(&i) = wanted.idents.get(w) {
                    fresh.push(i as u16);
                }
            }
            assert_eq!(got, fresh, "{line}");
        }
        assert!(!wanted.seen.borrow().is_empty());
    }

    /// A file whose long method scores a little above a short one: with room for the short
    /// one and part of the long one, the short one is shown whole and the long one elided,
    /// rather than the long one's hits taking the room.
    #[test]
    fn a_long_unit_scored_a_little_higher_leaves_room_for_a_short_one() {
        let mut t = String::from("class Ledger:\n");
        // lines 2-61: a long method that mentions the tax now and then
        t.push_str("    def tax_report(self):\n");
        for i in 0..58 {
            if i % 2 == 0 {
                t.push_str(&format!("        line_{i} = self.tax_lines[{i}]\n"));
            } else {
                t.push_str(&format!("        filler_{i} = {i}\n"));
            }
        }
        t.push_str("        return line_0\n");
        // lines 62-64: a short method
        t.push_str("    def apply_tax(self, total):\n        return total * self.rate\n\n");
        let defs = vec![
            def("Ledger", DefKind::Class, 1, 64),
            def("tax_report", DefKind::Method, 2, 61),
            def("apply_tax", DefKind::Method, 62, 63),
        ];
        let q = Query::parse("the tax is wrong");
        let lines: Vec<&str> = t.lines().collect();
        let wanted = Wanted::of(&q);
        let mut view = read_file(&cand("ledger.py", &t, defs.clone(), 1.0), &wanted);
        let idf = idf_of(std::slice::from_ref(&view), wanted.len());
        score_units(&mut view, &wanted, &idf);
        let score = |name: &str| {
            view.units
                .iter()
                .find(|u| u.name.as_deref() == Some(name))
                .map(|u| u.score)
                .unwrap()
        };
        assert!(score("tax_report") > score("apply_tax"), "{:?}", view.units);
        let budget = header_cost("ledger.py") + cost_of(&lines, &[(62, 64), (2, 8)]);
        let c = choose(&[cand("ledger.py", &t, defs, 1.0)], &q, budget);
        let shows = |l: u32| c[0].ranges.iter().any(|&(a, b)| a <= l && l <= b);
        assert!(shows(62) && shows(63), "{:?}", c[0].ranges);
        assert!(!shows(40), "{:?}", c[0].ranges);
    }

    #[test]
    fn decorators_and_comments_above_a_definition_belong_to_it() {
        let text = "import x\n\n# Compute the tax.\n@cached\ndef tax(rate):\n    return rate\n";
        let units = units_of(
            &text.lines().collect::<Vec<_>>(),
            &[def("tax", DefKind::Function, 5, 6)],
        );
        let tax = units.iter().find(|u| u.name.is_some()).unwrap();
        assert_eq!((tax.start, tax.end), (3, 6));
        let head = units.iter().find(|u| u.kind == UnitKind::TopLevel).unwrap();
        assert_eq!((head.start, head.end), (1, 2));
    }

    /// A file's imports in each language the map reads: from the first import to the end of
    /// the last (a statement over several lines followed to its close), with the blank lines
    /// after it; an include guard's one-line definition may come first; an import inside a
    /// function is not the file's.
    #[test]
    fn a_files_imports_are_found_in_each_language() {
        // What, the file's text, its definitions, the imports' lines.
        type Case = (&'static str, &'static str, Vec<DefSpan>, Option<(u32, u32)>);
        let cases: [Case; 8] = [
            (
                "python",
                "\"\"\"Doc.\"\"\"\nimport os\nfrom typing import (\n    Any,\n    List,\n)\n\n\ndef f():\n    import json\n    return 1\n",
                vec![def("f", DefKind::Function, 9, 11)],
                Some((2, 8)),
            ),
            (
                "rust",
                "//! Doc.\n\nuse std::io;\npub use crate::a::{\n    B,\n    C,\n};\n\nfn main() {\n    use std::fmt;\n}\n",
                vec![def("main", DefKind::Function, 9, 11)],
                Some((3, 8)),
            ),
            (
                "go",
                "package x\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc F() {\n\tfmt.Println()\n}\n",
                vec![def("F", DefKind::Function, 8, 10)],
                Some((3, 7)),
            ),
            (
                "typescript",
                "import { a,\n  b } from \"./a\";\nimport * as c from \"c\";\nconst d = require(\"d\");\n\nexport function f() {\n  return 1;\n}\n",
                vec![def("f", DefKind::Function, 6, 8)],
                Some((1, 5)),
            ),
            (
                "c++ behind an include guard",
                "// Copyright\n#ifndef A_H_\n#define A_H_\n\n#ifndef MODULE\n#  include <tuple>\n#endif\n\n#include \"b.h\"\n\nnamespace a {\nint f() {\n  return 1;\n}\n}\n",
                vec![
                    def("A_H_", DefKind::Constant, 3, 3),
                    def("f", DefKind::Function, 12, 14),
                ],
                Some((6, 10)),
            ),
            (
                "java",
                "package a;\n\nimport java.util.List;\nimport static b.C.d;\n\npublic class A {\n  void f() {\n  }\n}\n",
                vec![
                    def("A", DefKind::Class, 6, 9),
                    def("f", DefKind::Method, 7, 8),
                ],
                Some((3, 5)),
            ),
            (
                "code between two imports ends the block",
                "import a\nx = 1\nx = 2\nx = 3\nx = 4\nx = 5\nx = 6\nx = 7\nx = 8\nx = 9\nimport b\n",
                vec![],
                Some((1, 1)),
            ),
            (
                "only an import inside a function",
                "def f():\n    import os\n    return os\n",
                vec![def("f", DefKind::Function, 1, 3)],
                None,
            ),
        ];
        for (what, text, defs, want) in cases {
            let lines: Vec<&str> = text.lines().collect();
            let units = units_of(&lines, &defs);
            let got = units
                .iter()
                .find(|u| u.kind == UnitKind::Imports)
                .map(|u| (u.start, u.end));
            assert_eq!(got, want, "{what}");
        }
    }

    /// Lines that only look like imports are not: a word that begins like one, an import in
    /// a string or a comment, an indented one.
    #[test]
    fn lines_that_only_look_like_imports_are_not() {
        for line in [
            "imports = []",
            "user = load()",
            "useful()",
            "  import os",
            "\tuse std::io;",
            "# import os",
            "# use the cache",
            "#[derive(Debug)]",
            "// #include <a.h>",
            "\"import x\"",
            "const d = load(\"require(x)\");",
            "from_ = 3",
        ] {
            assert!(!is_import(line), "{line:?}");
        }
        for line in [
            "import os",
            "from . import a",
            "use a::b;",
            "pub(crate) use a::b;",
            "#include <a.h>",
            "# include \"a.h\"",
            "#import <Foundation/Foundation.h>",
            "require 'json'",
            "using System;",
            "let fs = require(\"fs\");",
        ] {
            assert!(is_import(line), "{line:?}");
        }
    }

    /// The definition the request is about comes first; its file's imports come with it, for
    /// a share of its score, and the unrelated helper does not.
    #[test]
    fn a_files_imports_are_shown_with_its_code() {
        let (text, defs) = module();
        let q = Query::parse("the invoice tax is computed with the wrong rate");
        let c = choose(&[cand("billing.py", &text, defs, 1.0)], &q, 400);
        let best = &c[0].units[0];
        assert_eq!(best.name.as_deref(), Some("compute_tax"));
        let imports = c[0]
            .units
            .iter()
            .find(|u| u.kind == UnitKind::Imports)
            .unwrap_or_else(|| panic!("{:?}", c[0].units));
        assert_eq!((imports.start, imports.end), (1, 4));
        assert!((imports.with_code - IMPORTS_SHARE * best.score).abs() < 1e-4);
        let shows = |l: u32| c[0].ranges.iter().any(|&(a, b)| a <= l && l <= b);
        assert!(shows(1) && shows(2) && shows(12), "{:?}", c[0].ranges);
        assert!(!shows(6), "{:?}", c[0].ranges);
    }
}
