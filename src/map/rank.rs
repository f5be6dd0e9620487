//! Rank every project file for one request, from signals a reviewer can see: the request's
//! words in the file's text (BM25), in its path and in the names it defines; identifiers the
//! request writes as code matched to definitions; the reference graph (a personalised
//! PageRank seeded by the lexical matches, as Aider's map does); and what the user is doing
//! (files named, touched by the last plan, changed and uncommitted, changed by recent
//! commits). Tests and docs rank below source unless the request is about them.

use std::collections::{HashMap, HashSet};

use super::facts::{BlobFacts, Facts, Names};
use super::files::MapFiles;
use super::paths::{self, PathFacts};
use super::score::{self, DefScore, TextScore};
use super::terms::{self, Query};

/// How much the reference graph adds, relative to the best lexical score.
const GRAPH_WEIGHT: f32 = 0.35;
/// Files seeding the graph walk.
const SEEDS: usize = 40;
/// The teleport probability of the personalised PageRank.
const ALPHA: f32 = 0.15;
/// Residual below which the walk stops pushing from a file.
const EPSILON: f32 = 1e-4;
/// A bound on the walk's work, whatever the graph.
const MAX_PUSHES: usize = 5_000;
/// A name defined in more files than this (`__init__`, `new`, `render`) says nothing about
/// which of them a reference means: it adds no edges.
const MAX_DEFINERS: usize = 12;

/// What the user is doing, beyond the request's words.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// Files the request names by path or file name.
    pub named: Vec<String>,
    /// Files the last plan changed.
    pub last_plan: Vec<String>,
    /// Files with uncommitted changes.
    pub uncommitted: HashSet<String>,
    /// Files recent commits changed, with how many of them.
    pub recent: HashMap<String, u32>,
}

/// Why a file ranks where it does.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Why {
    /// Request terms found in its text.
    pub words: Vec<String>,
    /// Request terms found in its path.
    pub path_words: Vec<String>,
    /// Its definitions the request's words or identifiers match.
    pub symbols: Vec<String>,
    /// Files whose references lead here (the strongest few).
    pub referenced_by: Vec<String>,
    /// Other signals: named, last plan, uncommitted, recent, test or doc, vendored, in the
    /// component the request's prefix names.
    pub signals: Vec<&'static str>,
    /// The parts of the score.
    pub text: f32,
    /// Path part.
    pub path: f32,
    /// Definitions part.
    pub defs: f32,
    /// Graph part.
    pub graph: f32,
    /// Indices of the query terms found in the text, in the path, and in defined names
    /// (identifiers after the terms), as the reasons are worked out, then turned into words.
    #[serde(skip)]
    hits: [Vec<u16>; 3],
}

/// Files whose reasons are spelled out (`pai map` shows 30).
const WHY_FOR: usize = 200;

/// One ranked file.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// Index into the map's files.
    pub file: u32,
    /// Its score (higher is more relevant).
    pub score: f32,
    /// Why (for the best [`WHY_FOR`] files only).
    pub why: Option<Box<Why>>,
}

/// Scores while ranking: a number per file, the user's signals as bits, and the graph's part
/// of the few files its walk reached. The reasons are worked out again for the best files
/// only (see [`score`]): a signal can hold for every file (a recent commit that touched them
/// all), and so can a request word (one in every path).
struct Board {
    score: Vec<f32>,
    signals: Vec<u8>,
    /// The graph's part of a file's score, and the file whose references led there most.
    graph: HashMap<usize, (f32, Option<usize>)>,
    /// The files the request names.
    named: HashSet<usize>,
}

/// The signals' bits in [`Board::signals`].
const NAMED: u8 = 1;
const LAST_PLAN: u8 = 2;
const UNCOMMITTED: u8 = 4;
const RECENT: u8 = 8;
const MINOR: u8 = 16;
const VENDORED: u8 = 32;
const COMPONENT: u8 = 64;

/// How much a file in the component a request's prefix names gains: its score is multiplied by
/// one plus this times the log of how few of the project's files the component holds.
const COMPONENT_WEIGHT: f32 = 0.3;

/// What a vendored file's score is multiplied by. Vendored code is changed by tools more than
/// by requests, per file several times less often than the project's own: in the history
/// fetched for the benchmark, moby's `vendor/` holds 75% of its files and 20% of its commits
/// since 2023 that change source touched it (58% of those dependency updates touching nothing
/// else), while its own code was touched by nearly all; duckdb's `third_party/` holds 4.3% of
/// its files and 6 of 496 such commits touched it (1.2%). Yet its words match requests as well
/// as the project's own code does.
pub(super) const VENDORED_DOWN: f32 = 0.25;

/// What each signal's bit says, in the order a reader sees them.
const SIGNALS: [(u8, &str); 7] = [
    (NAMED, "named in the request"),
    (LAST_PLAN, "changed by the last plan"),
    (UNCOMMITTED, "uncommitted changes"),
    (RECENT, "changed by recent commits"),
    (MINOR, "test or doc: ranked down"),
    (VENDORED, "vendored code: ranked down"),
    (COMPONENT, "in the component the request's prefix names"),
];

impl Board {
    fn new(files: usize) -> Self {
        Board {
            score: vec![0.0; files],
            signals: vec![0; files],
            graph: HashMap::new(),
            named: HashSet::new(),
        }
    }
}

/// The lexical scorers of one ranking, kept to spell out the best files' reasons.
struct Lexical<'r> {
    files: &'r MapFiles<'r>,
    blobs: &'r dyn BlobFacts,
    paths: &'r PathFacts<'r>,
    text: Option<TextScore>,
    defs: Option<DefScore>,
}

impl Lexical<'_> {
    /// Add every file's lexical parts to its score: text, then path, then definitions (the
    /// order its reasons add them in, so the sums are the same to the bit).
    fn score(&self, out: &mut Board) {
        if let Some(text) = &self.text {
            for (i, b) in self.files.blobs().enumerate() {
                if let Some(len) = b.filter(|_| text.hits(b)).and_then(|b| self.blobs.len(b)) {
                    text.each(b, len, |_, s| out.score[i] += s);
                }
            }
        }
        for hit in &self.paths.hits {
            out.score[hit.0 as usize] += score::path_part(self.files.len(), self.paths, hit);
        }
        if let Some(defs) = &self.defs {
            for (i, b) in self.files.blobs().enumerate() {
                if defs.hits(b) {
                    defs.each(b, |_, s| out.score[i] += s);
                }
            }
        }
    }

    /// Why `file` scores what it does: its lexical parts as [`Lexical::score`] added them,
    /// the graph's, and the signals in `bits`.
    fn why(&self, file: usize, board: &Board) -> Why {
        let mut why = Why::default();
        let b = self.files.blob(file);
        let len = b.and_then(|b| self.blobs.len(b));
        if let (Some(text), Some(len)) = (&self.text, len) {
            text.each(b, len, |k, s| {
                why.text += s;
                why.hits[0].push(k);
            });
        }
        for hit in score::path_hits_of(self.paths, file) {
            why.path += score::path_part(self.files.len(), self.paths, hit);
            why.hits[1].push(hit.1);
        }
        if let Some(defs) = &self.defs {
            defs.each(b, |k, s| {
                why.defs += s;
                why.hits[2].push(k);
            });
        }
        if let Some(&(s, from)) = board.graph.get(&file) {
            why.graph += s;
            if let Some(from) = from {
                why.referenced_by.push(self.files.path(from).to_string());
            }
        }
        let bits = board.signals.get(file).copied().unwrap_or(0);
        why.signals = SIGNALS
            .iter()
            .filter(|(bit, _)| bits & bit != 0)
            .map(|(_, said)| *said)
            .collect();
        why
    }
}

/// The query's terms and identifiers as ids of `names` (those the cache knows).
struct QueryIds {
    terms: Vec<(String, u32)>,
    idents: Vec<(String, u32)>,
}

fn query_ids(q: &Query, names: &Names) -> QueryIds {
    let wanted: Vec<&str> = q
        .terms
        .iter()
        .chain(&q.idents)
        .map(String::as_str)
        .collect();
    let found = names.find_all(&wanted);
    let ids = |list: &[String]| -> Vec<(String, u32)> {
        list.iter()
            .filter_map(|t| found.get(t).map(|id| (t.clone(), *id)))
            .collect()
    };
    QueryIds {
        terms: ids(&q.terms),
        idents: ids(&q.idents),
    }
}

/// A ranking: the files some signal scored, best first, then the rest in path order.
#[derive(Debug)]
pub struct Ranking {
    /// The files with a score above zero, best first, ties in path order; the first
    /// [`WHY_FOR`] with their reasons.
    pub scored: Vec<Ranked>,
    /// Every file's score.
    score: Vec<f32>,
    /// The files in path order, when that is not their own.
    by_path: Option<Vec<u32>>,
    /// The files the request names.
    named: HashSet<usize>,
}

impl Ranking {
    /// Every file, best first, as (file, score): the scored ones, then the rest in path
    /// order, found as they are read (a map reads a few hundred of a big project's files).
    pub fn iter(&self) -> impl Iterator<Item = (usize, f32)> + '_ {
        let in_path_order = (0..self.score.len()).map(|k| match &self.by_path {
            Some(order) => order.get(k).map_or(k, |&i| i as usize),
            None => k,
        });
        let rest = in_path_order
            .map(|i| (i, self.score.get(i).copied().unwrap_or(0.0)))
            .filter(|&(_, s)| !positive(s));
        self.scored
            .iter()
            .map(|r| (r.file as usize, r.score))
            .chain(rest)
    }

    /// Whether the request names `file`.
    pub fn is_named(&self, file: usize) -> bool {
        self.named.contains(&file)
    }

    /// A ranking of files scored `score` (by index), for tests of what reads a ranking.
    #[cfg(test)]
    pub(super) fn of_scores(score: Vec<f32>) -> Ranking {
        let board = Board {
            score,
            ..Board::new(0)
        };
        sort_best_first(board, None, &|_, _| Why::default())
    }
}

/// Whether a score ranks a file among the scored ones.
fn positive(score: f32) -> bool {
    score > 0.0
}

/// Rank `files` (with facts from `blobs`, read only for the files some signal reaches) for
/// `query`; `paths` is what their paths tell ([`PathFacts::of`] the same files, for the same
/// query; worked out here when it is of another list).
pub fn rank(
    files: &MapFiles,
    blobs: &dyn BlobFacts,
    names: &Names,
    query: &Query,
    signals: &Signals,
    paths: PathFacts,
) -> Ranking {
    let mut paths = if paths.len == files.len() {
        paths
    } else {
        PathFacts::of(files.paths(), query, None)
    };
    let by_path = paths.by_path.take();
    let facts = |b: Option<u32>| b.and_then(|b| blobs.facts(b));
    let ids = query_ids(query, names);
    let terms: Vec<u32> = ids.terms.iter().map(|(_, id)| *id).collect();
    let idents: Vec<u32> = ids.idents.iter().map(|(_, id)| *id).collect();
    let lexical = Lexical {
        files,
        blobs,
        paths: &paths,
        text: TextScore::new(files, blobs, &terms),
        defs: DefScore::new(files, blobs, &terms, &idents),
    };
    let mut board = Board::new(files.len());
    lexical.score(&mut board);
    let seeds = Seeds::of(&board.score);
    score_graph(files, blobs, &facts, &ids, names, &seeds, &mut board);
    apply_signals(files, query, signals, &paths, &mut board);
    apply_components(files, query, &paths, &mut board);
    let mut out = sort_best_first(board, by_path, &|f, b| lexical.why(f, b));
    for r in out.scored.iter_mut().take(WHY_FOR) {
        if let Some(why) = r.why.as_deref_mut() {
            spell_out(why, query, &ids);
        }
    }
    out
}

/// Best score first, ties by path. The files are taken in path order (`order`, when that is
/// not their own) and sorted by score alone with a stable sort, so ties keep that order: no
/// path is compared here, however many files a common word scores (a word in every path).
/// Files that scored nothing are left in path order, read from `order` when asked for.
fn sort_best_first(
    board: Board,
    order: Option<Vec<u32>>,
    why_of: &dyn Fn(usize, &Board) -> Why,
) -> Ranking {
    let score = &board.score;
    let is_scored = |i: u32| score.get(i as usize).is_some_and(|s| positive(*s));
    let mut scored: Vec<u32> = match &order {
        Some(order) => order.iter().copied().filter(|&i| is_scored(i)).collect(),
        None => (0..u32::try_from(score.len()).unwrap_or(u32::MAX))
            .filter(|&i| is_scored(i))
            .collect(),
    };
    scored.sort_by(|&a, &b| score[b as usize].total_cmp(&score[a as usize]));
    let scored = scored
        .into_iter()
        .enumerate()
        .map(|(at, file)| Ranked {
            file,
            score: board.score[file as usize],
            // Only the best are ever explained.
            why: (at < WHY_FOR).then(|| Box::new(why_of(file as usize, &board))),
        })
        .collect();
    Ranking {
        scored,
        score: board.score,
        by_path: order,
        named: board.named,
    }
}

/// Turn a file's hits into the words a reader sees.
fn spell_out(why: &mut Why, query: &Query, ids: &QueryIds) {
    let [text, path, defs] = std::mem::take(&mut why.hits);
    let term = |k: u16| ids.terms.get(k as usize).map(|(t, _)| t.clone());
    why.words = text.into_iter().filter_map(term).collect();
    why.path_words = path
        .into_iter()
        .filter_map(|k| query.terms.get(k as usize).cloned())
        .collect();
    why.symbols = defs
        .into_iter()
        .filter_map(|k| match term(k) {
            Some(t) => Some(format!("~{t}")),
            None => ids
                .idents
                .get(k as usize - ids.terms.len())
                .map(|(i, _)| i.clone()),
        })
        .collect();
}

/// The best lexical matches, which seed the graph walk: the [`SEEDS`] best files, ties in
/// file order, with their scores.
struct Seeds(Vec<(usize, f32)>);

impl Seeds {
    /// Taken from `lexical`, before anything else is scored (the walk reads no other file's
    /// lexical score, so the scores are not copied).
    fn of(lexical: &[f32]) -> Self {
        let n = u32::try_from(lexical.len()).unwrap_or(u32::MAX);
        let mut seeds: Vec<u32> = (0..n).filter(|&i| lexical[i as usize] > 0.0).collect();
        // Best first, ties in file order: what a stable sort of every match by score gives,
        // without sorting every match of a common word.
        let order = |a: &u32, b: &u32| {
            let (sa, sb) = (lexical[*a as usize], lexical[*b as usize]);
            sb.total_cmp(&sa).then(a.cmp(b))
        };
        if seeds.len() > SEEDS {
            seeds.select_nth_unstable_by(SEEDS - 1, order);
            seeds.truncate(SEEDS);
        }
        seeds.sort_by(order);
        Seeds(
            seeds
                .into_iter()
                .map(|i| (i as usize, lexical[i as usize]))
                .collect(),
        )
    }
}

/// A personalised PageRank over "file references a name another file defines", seeded by the
/// best lexical matches, computed by local pushes from the seeds (only the part of the graph
/// near them is touched).
fn score_graph<'a>(
    files: &MapFiles,
    blobs: &dyn BlobFacts,
    facts: &impl Fn(Option<u32>) -> Option<&'a Facts>,
    ids: &QueryIds,
    names: &Names,
    seeds: &Seeds,
    out: &mut Board,
) {
    let Some(&(_, top)) = seeds.0.first() else {
        return;
    };
    let mut definers = Definers::of(files, blobs);
    let wanted: HashSet<u32, foldhash::fast::FixedState> = ids
        .idents
        .iter()
        .chain(&ids.terms)
        .map(|(_, id)| *id)
        .collect();
    let total: f32 = seeds.0.iter().map(|&(_, s)| s).sum();
    // Dense per-file arrays: a walk touches thousands of files, and tables keyed by file
    // cost more than the walk itself.
    let n = files.len();
    let mut residual = vec![0.0_f32; n];
    for &(s, lexical) in &seeds.0 {
        residual[s] = lexical / total;
    }
    let mut queue: std::collections::VecDeque<usize> = seeds.0.iter().map(|&(s, _)| s).collect();
    let mut rank: Vec<Option<f32>> = vec![None; n];
    let mut via: Vec<Option<(f32, usize)>> = vec![None; n];
    let mut edges_of: Vec<Option<Vec<(usize, f32)>>> = vec![None; n];
    let mut pushes = 0;
    while let Some(u) = queue.pop_front() {
        let r = std::mem::take(&mut residual[u]);
        *rank[u].get_or_insert(0.0) += ALPHA * r;
        pushes += 1;
        if pushes > MAX_PUSHES {
            break;
        }
        let Some(x) = facts(files.blob(u)) else {
            continue;
        };
        let edges =
            edges_of[u].get_or_insert_with(|| out_edges(u, x, &mut definers, names, &wanted));
        let sum: f32 = edges.iter().map(|(_, w)| w).sum();
        if sum <= 0.0 {
            continue;
        }
        for &(v, w) in edges.iter() {
            let share = (1.0 - ALPHA) * r * w / sum;
            let before = residual[v];
            residual[v] = before + share;
            if before <= EPSILON && before + share > EPSILON {
                queue.push_back(v);
            }
            let best = via[v].get_or_insert((0.0, u));
            if share > best.0 {
                *best = (share, u);
            }
        }
    }
    let max = rank.iter().flatten().copied().fold(0.0_f32, f32::max);
    if max <= 0.0 {
        return;
    }
    for (i, p) in rank.into_iter().enumerate() {
        let Some(p) = p else { continue };
        let s = GRAPH_WEIGHT * top * p / max;
        out.score[i] += s;
        let from = via[i].map(|(_, from)| from).filter(|&from| from != i);
        out.graph.insert(i, (s, from));
    }
}

/// What the walk knows of each name it has met: the files defining it (the symbols' index
/// gives the blobs defining it, [`BlobFiles`] the files holding each blob) and its text's
/// shape. Worked out once a name, in one table hashed by foldhash: the walk meets the same
/// names in file after file, hundreds of thousands of times on a large project, and the ids
/// are the cache's own, not the repository's.
struct Definers<'b> {
    blobs: &'b dyn BlobFacts,
    files: BlobFiles,
    known: HashMap<u32, Definer, foldhash::fast::FixedState>,
}

/// One name as the walk sees it.
struct Definer {
    /// The files defining it, in file order.
    files: Box<[u32]>,
    /// Its text's shape, when it is defined in few enough files to add edges (only then is
    /// its text read).
    shape: Option<NameShape>,
}

/// What a name's text tells an edge's weight.
#[derive(Clone, Copy)]
struct NameShape {
    /// Private (a leading underscore).
    private: bool,
    /// Long and of several parts (a name specific enough to mean one thing).
    specific: bool,
}

impl NameShape {
    fn of(text: &str) -> Self {
        NameShape {
            private: text.starts_with('_'),
            specific: text.len() >= 8 && terms::identifier_parts(text).nth(1).is_some(),
        }
    }
}

impl<'b> Definers<'b> {
    fn of(files: &MapFiles, blobs: &'b dyn BlobFacts) -> Self {
        Definers {
            blobs,
            files: BlobFiles::of(files, blobs.count()),
            known: HashMap::default(),
        }
    }

    /// Name `name` as the walk sees it, worked out the first time.
    fn get(&mut self, name: u32, names: &Names) -> &Definer {
        let (blobs, files) = (self.blobs, &self.files);
        self.known.entry(name).or_insert_with(|| {
            let mut out: Vec<u32> = blobs
                .defining(name)
                .into_iter()
                .flat_map(|b| files.holding(b).iter().copied())
                .collect();
            out.sort_unstable();
            out.dedup();
            let adds_edges = !out.is_empty() && out.len() <= MAX_DEFINERS;
            Definer {
                shape: adds_edges.then(|| NameShape::of(names.get(name).as_ref())),
                files: out.into(),
            }
        })
    }
}

/// The files holding each blob, in file order: blob `b`'s are `files[starts[b]..starts[b + 1]]`.
struct BlobFiles {
    starts: Vec<u32>,
    files: Vec<u32>,
}

impl BlobFiles {
    fn of(files: &MapFiles, blobs: usize) -> Self {
        let mut starts = vec![0u32; blobs + 1];
        let known = |b: Option<u32>| b.filter(|&b| (b as usize) < blobs);
        for b in files.blobs().filter_map(known) {
            starts[b as usize + 1] += 1;
        }
        for b in 0..blobs {
            starts[b + 1] += starts[b];
        }
        let mut next = starts.clone();
        let mut out = vec![0u32; starts[blobs] as usize];
        for (i, b) in files.blobs().enumerate() {
            if let Some(b) = known(b) {
                out[next[b as usize] as usize] = u32::try_from(i).unwrap_or(u32::MAX);
                next[b as usize] += 1;
            }
        }
        BlobFiles { starts, files: out }
    }

    fn holding(&self, b: u32) -> &[u32] {
        let b = b as usize;
        match (self.starts.get(b), self.starts.get(b + 1)) {
            (Some(&from), Some(&to)) => self.files.get(from as usize..to as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// The files `u` refers to, weighted as Aider weighs references: names the request mentions
/// count ten times, private names and names defined in many files a tenth.
fn out_edges(
    u: usize,
    x: &Facts,
    definers: &mut Definers,
    names: &Names,
    wanted: &HashSet<u32, foldhash::fast::FixedState>,
) -> Vec<(usize, f32)> {
    let mut edges: Vec<(usize, f32)> = Vec::new();
    for (name, count) in &x.refs {
        let definer = definers.get(*name, names);
        let Some(shape) = definer.shape else {
            continue;
        };
        let defs = &definer.files;
        let mut mul = 1.0;
        if wanted.contains(name) {
            mul *= 10.0;
        }
        if shape.private {
            mul *= 0.1;
        }
        if defs.len() > 5 {
            mul *= 0.1;
        }
        if shape.specific {
            mul *= 2.0;
        }
        let w = mul * f32::from(*count).sqrt() / defs.len() as f32;
        edges.extend(
            defs.iter()
                .filter(|&&v| v as usize != u)
                .map(|&v| (v as usize, w)),
        );
    }
    // One edge per file, in file order (so the walk is the same on every run).
    edges.sort_by_key(|(v, _)| *v);
    edges.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    edges
}

/// Named files first, then the user's recent work; tests and docs below source.
fn apply_signals(
    files: &MapFiles,
    query: &Query,
    signals: &Signals,
    paths: &PathFacts,
    out: &mut Board,
) {
    let top = out.score.iter().copied().fold(1.0_f32, f32::max);
    let by_folder = SignalsByFolder::new(signals);
    // Files come folder by folder: only the folders some signal names are looked into.
    for (dir, run) in paths.folders() {
        let Some(here) = by_folder.0.get(dir) else {
            continue;
        };
        let skip = dir.len() + usize::from(!dir.is_empty());
        for i in run {
            let name = files.path(i).get(skip..).unwrap_or_default();
            let mut add = |bit: u8, s: f32| {
                out.score[i] += s;
                out.signals[i] |= bit;
                if bit == NAMED {
                    out.named.insert(i);
                }
            };
            for s in here.iter().filter(|s| s.name == name) {
                if s.bits & NAMED != 0 {
                    add(NAMED, 10.0 * top);
                }
                if s.bits & LAST_PLAN != 0 {
                    add(LAST_PLAN, 0.5 * top);
                }
                if s.bits & UNCOMMITTED != 0 {
                    add(UNCOMMITTED, 0.15 * top);
                }
                if s.bits & RECENT != 0 {
                    add(RECENT, 0.05 * top * (1.0 + s.recent as f32).ln());
                }
            }
        }
    }
    // After a file's signals, so that a minor file's signals are halved with the rest.
    let down =
        (u8::from(!query.about_tests) * paths::TEST) | (u8::from(!query.about_docs) * paths::DOC);
    for (i, &minor) in paths.minor.iter().enumerate() {
        if minor & down != 0 {
            out.score[i] *= 0.5;
            out.signals[i] |= MINOR;
        }
        if minor & paths::VENDORED != 0 {
            out.score[i] *= VENDORED_DOWN;
            out.signals[i] |= VENDORED;
        }
    }
}

/// Files in the components a commit-style prefix names (`resources: ...`, `fix(client): ...`)
/// score more, the more so the fewer of the project's files the components hold: the folder
/// (or file) a maintainer names in front of a change holds it far more often than not.
fn apply_components(files: &MapFiles, query: &Query, paths: &PathFacts, out: &mut Board) {
    if query.components.is_empty() {
        return;
    }
    let mut held: Vec<usize> = Vec::new();
    for (dir, run) in paths.folders() {
        let dir: Vec<String> = dir
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_lowercase)
            .collect();
        if query.components.iter().any(|c| names_folder(c, &dir)) {
            held.extend(run);
            continue;
        }
        for i in run {
            let (_, name) = paths::split_dir(files.path(i));
            let stem = name.split('.').next().unwrap_or(name);
            if query.components.iter().any(|c| names_file(c, &dir, stem)) {
                held.push(i);
            }
        }
    }
    let all = files.len();
    if held.is_empty() || held.len() * 2 > all {
        return;
    }
    let factor = 1.0 + COMPONENT_WEIGHT * (all as f32 / held.len() as f32).ln();
    for i in held {
        if let (Some(score), Some(bits)) = (out.score.get_mut(i), out.signals.get_mut(i)) {
            *score *= factor;
            *bits |= COMPONENT;
        }
    }
}

/// Whether the folder `dir` (its lower-case segments) is or is inside `component`: the
/// component's segments come in it in a row, the last one whole or as a `-` or `_` part of
/// a folder's name (`parser` names `babel-parser`).
fn names_folder(component: &[String], dir: &[String]) -> bool {
    let n = component.len();
    let Some((last, before)) = component.split_last() else {
        return false;
    };
    (0..(dir.len() + 1).saturating_sub(n)).any(|at| {
        let seg = &dir[at..at + n];
        seg[..n - 1] == *before
            && (seg[n - 1] == *last || seg[n - 1].split(['-', '_']).any(|p| p == last))
    })
}

/// Whether a file named `stem` (without its extension) in `dir` is the file `component` names:
/// its last segment is the stem, case aside, the others end the folder's path (`fix(tree)`
/// names `tree.go`, `complete/fish` names `flags/complete/fish.rs`). Compared without lowering
/// a copy: every file of the project is asked.
fn names_file(component: &[String], dir: &[String], stem: &str) -> bool {
    let Some((last, before)) = component.split_last() else {
        return false;
    };
    last.eq_ignore_ascii_case(stem) && dir.ends_with(before)
}

/// One file some signal names: its name in its folder, the signals' bits, and how many
/// recent commits changed it.
struct Signalled<'s> {
    name: &'s str,
    bits: u8,
    recent: u32,
}

/// The signals by folder: a ranking looks each folder up once, not each of its files (a
/// lookup per file hashed every path of a big project once per signal).
struct SignalsByFolder<'s>(HashMap<&'s str, Vec<Signalled<'s>>>);

impl<'s> SignalsByFolder<'s> {
    fn new(signals: &'s Signals) -> Self {
        let mut by: HashMap<&str, Vec<Signalled>> = HashMap::new();
        let mut add = |path: &'s str, bit: u8, recent: u32| {
            let (dir, name) = paths::split_dir(path);
            let list = by.entry(dir).or_default();
            match list.iter_mut().find(|s| s.name == name) {
                Some(s) => {
                    s.bits |= bit;
                    s.recent = s.recent.max(recent);
                }
                None => list.push(Signalled {
                    name,
                    bits: bit,
                    recent,
                }),
            }
        };
        signals.named.iter().for_each(|p| add(p, NAMED, 0));
        signals.last_plan.iter().for_each(|p| add(p, LAST_PLAN, 0));
        signals
            .uncommitted
            .iter()
            .for_each(|p| add(p, UNCOMMITTED, 0));
        signals.recent.iter().for_each(|(p, &n)| add(p, RECENT, n));
        SignalsByFolder(by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranking of `paths` (the files `files` holds, with no facts read) for `query`, on
    /// their paths and the request alone.
    fn rank_on_paths<S: AsRef<str> + Sync>(
        files: &MapFiles,
        paths: &[S],
        query: &Query,
    ) -> Ranking {
        rank(
            files,
            &Vec::<Facts>::new(),
            &Names::default(),
            query,
            &Signals::default(),
            PathFacts::of(paths, query, None),
        )
    }

    #[test]
    fn a_word_in_the_file_name_counts_more_than_in_its_folders() {
        let paths = [
            "src/invoice/helpers.py",
            "src/billing/invoice.py",
            "lib/billing/invoice/invoice_data.py",
            "src/shipping/rates.py",
        ];
        let paths = paths.to_vec();
        let files = MapFiles::new(&paths);
        let query = Query::parse("billing invoice");
        let ranked = rank_on_paths(&files, &paths, &query);
        let of = |p: &str| {
            ranked
                .scored
                .iter()
                .find(|r| files.path(r.file as usize) == p)
                .unwrap()
        };
        let in_folder = of("src/invoice/helpers.py").score;
        assert!(in_folder > 0.0);
        // "billing" in a folder of both others, "invoice" in the name of the second.
        let billing_invoice = of("src/billing/invoice.py");
        let why = billing_invoice.why.as_deref().unwrap();
        assert_eq!(why.path_words, ["bill", "invoic"], "folders' words first");
        let billing_alone = billing_invoice.score - 1.5 * in_folder;
        let deep = of("lib/billing/invoice/invoice_data.py");
        assert!(
            (deep.score - (billing_alone + 1.5 * in_folder)).abs() < 1e-4,
            "a word in a folder and the name counts once, as in the name: {} vs {}",
            deep.score,
            billing_alone + 1.5 * in_folder
        );
        let rates = ranked
            .iter()
            .find(|(f, _)| files.path(*f) == "src/shipping/rates.py");
        assert_eq!(rates.map(|(_, s)| s), Some(0.0));
        assert_eq!(ranked.iter().count(), paths.len());
    }

    #[test]
    fn signals_are_spelled_out_for_the_best_files_only() {
        // Every file was changed by a recent commit (a project's first commit): each gets the
        // signal's score, and the best ones say so, in the reader's order.
        let paths: Vec<String> = (0..WHY_FOR + 50)
            .map(|i| format!("src/m{i:03}.py"))
            .chain(["tests/test_billing.py".into(), "src/billing.py".into()])
            .collect();
        let files = MapFiles::new(&paths);
        let signals = Signals {
            named: vec!["src/billing.py".to_string()],
            last_plan: Vec::new(),
            uncommitted: ["src/billing.py".to_string()].into(),
            recent: paths.iter().map(|p| (p.clone(), 1)).collect(),
        };
        let query = Query::parse("fix the billing rounding");
        let ranked = rank(
            &files,
            &Vec::<Facts>::new(),
            &Names::default(),
            &query,
            &signals,
            PathFacts::default(),
        );
        let ranked = ranked.scored;
        let best = &ranked[0];
        assert_eq!(files.path(best.file as usize), "src/billing.py");
        let why = best.why.as_deref().expect("the best file says why");
        assert_eq!(
            why.signals,
            [
                "named in the request",
                "uncommitted changes",
                "changed by recent commits"
            ]
        );
        let test = ranked
            .iter()
            .position(|r| files.path(r.file as usize) == "tests/test_billing.py")
            .expect("ranked");
        let why = ranked[test]
            .why
            .as_deref()
            .expect("a test among the best says why");
        assert!(why.signals.contains(&"test or doc: ranked down"), "{why:?}");
        assert!(
            ranked.iter().skip(WHY_FOR).all(|r| r.why.is_none()),
            "files past the best are never explained"
        );
    }

    #[test]
    fn the_component_a_prefix_names_lifts_its_files_the_more_the_fewer_they_are() {
        let mut paths: Vec<String> = (0..60).map(|i| format!("other/m{i:02}/debug.go")).collect();
        paths.extend([
            "resources/transform.go".to_string(),
            "resources/images/debug.go".to_string(),
            "tpl/tree.go".to_string(),
        ]);
        let files = MapFiles::new(&paths);
        let score_of = |request: &str, path: &str| {
            let query = Query::parse(request);
            let ranked = rank_on_paths(&files, &paths, &query);
            let at = paths.iter().position(|p| p == path).unwrap();
            let found = ranked.scored.iter().find(|r| r.file as usize == at);
            found.map_or(0.0, |r| r.score)
        };
        // The same words, but not as a prefix.
        let plain = score_of(
            "Remove debug statement in resources",
            "resources/images/debug.go",
        );
        let named = score_of(
            "resources: Remove debug statement",
            "resources/images/debug.go",
        );
        let factor = 1.0 + COMPONENT_WEIGHT * (63.0_f32 / 2.0).ln();
        assert!(plain > 0.0);
        assert!(
            (named - plain * factor).abs() < 1e-3,
            "a file in the folder gains by how few files it holds: {named} vs {plain} x {factor}"
        );
        assert_eq!(
            score_of("other: Remove debug statement", "other/m01/debug.go"),
            score_of("Remove debug statement", "other/m01/debug.go"),
            "a component holding most files tells nothing"
        );
        assert_eq!(
            score_of("resources: Remove debug statement", "other/m01/debug.go"),
            score_of("Remove debug statement in resources", "other/m01/debug.go"),
            "files outside it are left as they were"
        );
        assert!(names_file(&["tree".into()], &["tpl".into()], "tree"));
        assert!(names_folder(
            &["parser".into()],
            &["packages".into(), "babel-parser".into()]
        ));
        assert!(!names_folder(
            &["parse".into()],
            &["packages".into(), "babel-parser".into()]
        ));
        assert!(names_folder(
            &["ext".into(), "node".into()],
            &["ext".into(), "node".into(), "polyfills".into()]
        ));
        assert!(!names_folder(
            &["ext".into(), "node".into()],
            &["node".into()]
        ));
    }

    #[test]
    fn vendored_code_ranks_below_the_projects_own_code_with_the_same_words() {
        let paths = [
            "third_party/icu/conversion.h",
            "src/cast/conversion.cpp",
            "vendor/github.com/x/conversion/conversion.go",
            "extern/lib/src/conversion.c",
        ];
        let paths = paths.to_vec();
        let files = MapFiles::new(&paths);
        let query = Query::parse("fix the conversion warnings");
        let ranked = rank_on_paths(&files, &paths, &query);
        let order: Vec<&str> = ranked
            .scored
            .iter()
            .map(|r| files.path(r.file as usize))
            .collect();
        assert_eq!(order[0], "src/cast/conversion.cpp", "{order:?}");
        assert_eq!(order.len(), 4, "vendored files are ranked down, not out");
        let own = ranked.scored[0].score;
        let icu = ranked
            .scored
            .iter()
            .find(|r| files.path(r.file as usize) == "third_party/icu/conversion.h")
            .expect("ranked");
        assert!(
            (icu.score - own * VENDORED_DOWN).abs() < 1e-4,
            "the same words, a quarter of the score: {} vs {own}",
            icu.score
        );
        let why = icu.why.as_deref().expect("explained");
        assert!(
            why.signals.contains(&"vendored code: ranked down"),
            "{why:?}"
        );
    }
}
