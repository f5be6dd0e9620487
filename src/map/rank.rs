//! Rank every project file for one request, from signals a reviewer can see: the request's
//! words in the file's text (BM25), in its path and in the names it defines; identifiers the
//! request writes as code matched to definitions; the reference graph (a personalised
//! PageRank seeded by the lexical matches, as Aider's map does); and what the user is doing
//! (files named, touched by the last plan, changed and uncommitted, changed by recent
//! commits). Tests and docs rank below source unless the request is about them.

use std::collections::{HashMap, HashSet};

use super::facts::{Facts, Names};
use super::gather::MapFile;
use super::terms::{self, Query};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Weights of the lexical fields: a request word in the path or a defined name says more
/// than the same word somewhere in the text.
const PATH_WEIGHT: f32 = 1.6;
const DEF_WEIGHT: f32 = 1.0;
const IDENT_BONUS: f32 = 3.0;
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
    /// Other signals: named, last plan, uncommitted, recent, test or doc.
    pub signals: Vec<&'static str>,
    /// The parts of the score.
    pub text: f32,
    /// Path part.
    pub path: f32,
    /// Definitions part.
    pub defs: f32,
    /// Graph part.
    pub graph: f32,
    /// While scoring: indices of the query terms found in the text, in the path, and in
    /// defined names (identifiers after the terms), turned into words only for the files
    /// shown (common words hit most files).
    #[serde(skip)]
    hits: [Vec<u16>; 3],
}

/// Files whose reasons are spelled out (`pai map` shows 30).
const WHY_FOR: usize = 200;

/// One ranked file.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// Index into the map's files.
    pub file: usize,
    /// Its score (higher is more relevant).
    pub score: f32,
    /// Why.
    pub why: Why,
}

/// Whether a path is a test, fixture, doc or example rather than source.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    let is = |s: &str, list: &[&str]| list.iter().any(|w| s.eq_ignore_ascii_case(w));
    let folders = path.split('/').take(path.matches('/').count());
    let ends = |s: &str, suffix: &str| {
        s.len() >= suffix.len()
            && s.is_char_boundary(s.len() - suffix.len())
            && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    let starts = |s: &str, prefix: &str| {
        s.len() >= prefix.len()
            && s.is_char_boundary(prefix.len())
            && s[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    let mut folders = folders;
    folders.any(|c| {
        is(
            c,
            &[
                "test",
                "tests",
                "testing",
                "__tests__",
                "spec",
                "specs",
                "fixtures",
                "testdata",
            ],
        )
    }) || starts(stem, "test_")
        || ends(stem, "_test")
        || ends(stem, "_spec")
        || (ends(stem, "test") && ends(name, ".java"))
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Whether a path is documentation or an example.
pub fn is_doc_path(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("");
    let is = |s: &str, list: &[&str]| list.iter().any(|w| s.eq_ignore_ascii_case(w));
    let folders = path.split('/').take(path.matches('/').count());
    is(ext, &["md", "rst", "txt", "adoc"])
        || folders.into_iter().any(|c| {
            is(
                c,
                &[
                    "doc",
                    "docs",
                    "documentation",
                    "example",
                    "examples",
                    "benches",
                    "bench",
                    "benchmarks",
                ],
            )
        })
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

/// Rank `files` (with facts from `blobs`) for `query`.
pub fn rank(
    files: &[MapFile],
    blobs: &[(super::store::BlobId, Facts)],
    names: &Names,
    query: &Query,
    signals: &Signals,
) -> Vec<Ranked> {
    let facts = |f: &MapFile| f.blob.and_then(|b| blobs.get(b as usize)).map(|(_, x)| x);
    let ids = query_ids(query, names);
    let mut out: Vec<Ranked> = (0..files.len())
        .map(|file| Ranked {
            file,
            score: 0.0,
            why: Why::default(),
        })
        .collect();
    score_text(files, &facts, &ids, &mut out);
    score_paths(files, query, &mut out);
    score_defs(files, &facts, &ids, names, &mut out);
    let lexical: Vec<f32> = out.iter().map(|r| r.score).collect();
    score_graph(files, &facts, &ids, names, &lexical, &mut out);
    apply_signals(files, query, signals, &mut out);
    out.sort_unstable_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| files[a.file].path.cmp(&files[b.file].path))
    });
    for r in out.iter_mut().take(WHY_FOR) {
        spell_out(&mut r.why, query, &ids);
    }
    out
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

/// BM25 of the request's terms over the files' text.
fn score_text<'a>(
    files: &'a [MapFile],
    facts: &impl Fn(&'a MapFile) -> Option<&'a Facts>,
    ids: &QueryIds,
    out: &mut [Ranked],
) {
    let indexed: Vec<Option<&Facts>> = files.iter().map(facts).collect();
    let n = indexed.iter().flatten().count().max(1) as f32;
    let avg = indexed.iter().flatten().map(|f| f.len as f32).sum::<f32>() / n;
    for (k, (_, id)) in ids.terms.iter().enumerate() {
        let df = indexed.iter().flatten().filter(|f| f.tf(*id) > 0).count() as f32;
        if df == 0.0 {
            continue;
        }
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for (r, f) in out.iter_mut().zip(&indexed) {
            let Some(f) = f else { continue };
            let tf = f32::from(f.tf(*id));
            if tf == 0.0 {
                continue;
            }
            let norm = K1 * (1.0 - B + B * f.len as f32 / avg.max(1.0));
            let s = idf * tf * (K1 + 1.0) / (tf + norm);
            r.score += s;
            r.why.text += s;
            r.why.hits[0].push(k as u16);
        }
    }
}

/// The request's terms in the files' paths, weighted by how rare they are among paths; the
/// file's own name counts more than its folders'.
fn score_paths(files: &[MapFile], query: &Query, out: &mut [Ranked]) {
    if query.terms.is_empty() {
        return;
    }
    let index: HashMap<&str, u16> = query
        .terms
        .iter()
        .enumerate()
        .map(|(k, t)| (t.as_str(), k as u16))
        .collect();
    // Each distinct folder or file name is split once, and only words that could match are
    // stemmed.
    let prefixes = terms::prefixes(&query.terms);
    let mut parts: HashMap<&str, Vec<u16>> = HashMap::new();
    let mut hits: Vec<Vec<(u16, bool)>> = Vec::with_capacity(files.len());
    let mut df = vec![0.0_f32; query.terms.len()];
    for f in files {
        let mut found: Vec<(u16, bool)> = Vec::new();
        let comps: Vec<&str> = f.path.split('/').collect();
        for (i, part) in comps.iter().enumerate() {
            let ks = parts.entry(part).or_insert_with(|| {
                let mut v: Vec<u16> = Vec::new();
                terms::for_each_term_like(part, &prefixes, |t| {
                    if let Some(&k) = index.get(t)
                        && !v.contains(&k)
                    {
                        v.push(k);
                    }
                });
                v
            });
            let in_name = i + 1 == comps.len();
            for &k in ks.iter() {
                match found.iter_mut().find(|(x, _)| *x == k) {
                    Some(hit) => hit.1 |= in_name,
                    None => found.push((k, in_name)),
                }
            }
        }
        for (k, _) in &found {
            df[*k as usize] += 1.0;
        }
        hits.push(found);
    }
    let n = files.len().max(1) as f32;
    for (r, found) in out.iter_mut().zip(hits) {
        for (k, in_name) in found {
            let d = df[k as usize];
            let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
            let s = PATH_WEIGHT * idf * if in_name { 1.5 } else { 1.0 };
            r.score += s;
            r.why.path += s;
            r.why.hits[1].push(k);
        }
    }
}

/// The request's terms in the names a file defines, and its identifiers matched exactly.
fn score_defs<'a>(
    files: &'a [MapFile],
    facts: &impl Fn(&'a MapFile) -> Option<&'a Facts>,
    ids: &QueryIds,
    names: &Names,
    out: &mut [Ranked],
) {
    let indexed: Vec<Option<&Facts>> = files.iter().map(facts).collect();
    let n = indexed.iter().flatten().count().max(1) as f32;
    for (k, (_, id)) in ids.terms.iter().enumerate() {
        let df = indexed
            .iter()
            .flatten()
            .filter(|f| f.def_terms.binary_search(id).is_ok())
            .count() as f32;
        if df == 0.0 {
            continue;
        }
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for (r, f) in out.iter_mut().zip(&indexed) {
            if f.is_some_and(|f| f.def_terms.binary_search(id).is_ok()) {
                r.score += DEF_WEIGHT * idf;
                r.why.defs += DEF_WEIGHT * idf;
                r.why.hits[2].push(k as u16);
            }
        }
    }
    for (k, (_, id)) in ids.idents.iter().enumerate() {
        for (r, f) in out.iter_mut().zip(&indexed) {
            if f.is_some_and(|f| f.defs.iter().any(|d| d.name == *id)) {
                r.score += IDENT_BONUS;
                r.why.defs += IDENT_BONUS;
                r.why.hits[2].push((ids.terms.len() + k) as u16);
            }
        }
    }
    let _ = names;
}

/// A personalised PageRank over "file references a name another file defines", seeded by the
/// best lexical matches, computed by local pushes from the seeds (only the part of the graph
/// near them is touched).
fn score_graph<'a>(
    files: &'a [MapFile],
    facts: &impl Fn(&'a MapFile) -> Option<&'a Facts>,
    ids: &QueryIds,
    names: &Names,
    lexical: &[f32],
    out: &mut [Ranked],
) {
    let mut seeds: Vec<usize> = (0..files.len()).filter(|&i| lexical[i] > 0.0).collect();
    seeds.sort_by(|&a, &b| lexical[b].total_cmp(&lexical[a]));
    seeds.truncate(SEEDS);
    let Some(&best) = seeds.first() else { return };
    let top = lexical[best];
    let mut definers: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(x) = facts(f) {
            for d in &x.defs {
                let v = definers.entry(d.name).or_default();
                if v.last() != Some(&(i as u32)) {
                    v.push(i as u32);
                }
            }
        }
    }
    let wanted: HashSet<u32> = ids
        .idents
        .iter()
        .chain(&ids.terms)
        .map(|(_, id)| *id)
        .collect();
    let total: f32 = seeds.iter().map(|&s| lexical[s]).sum();
    let mut residual: HashMap<usize, f32> =
        seeds.iter().map(|&s| (s, lexical[s] / total)).collect();
    let mut queue: std::collections::VecDeque<usize> = seeds.iter().copied().collect();
    let mut rank: HashMap<usize, f32> = HashMap::new();
    let mut via: HashMap<usize, (f32, usize)> = HashMap::new();
    let mut edges_of: HashMap<usize, Vec<(usize, f32)>> = HashMap::new();
    let mut pushes = 0;
    while let Some(u) = queue.pop_front() {
        let r = residual.remove(&u).unwrap_or(0.0);
        *rank.entry(u).or_default() += ALPHA * r;
        pushes += 1;
        if pushes > MAX_PUSHES {
            break;
        }
        let Some(x) = facts(&files[u]) else { continue };
        let edges = edges_of
            .entry(u)
            .or_insert_with(|| out_edges(u, x, &definers, names, &wanted));
        let sum: f32 = edges.iter().map(|(_, w)| w).sum();
        if sum <= 0.0 {
            continue;
        }
        for &(v, w) in edges.iter() {
            let share = (1.0 - ALPHA) * r * w / sum;
            let before = residual.get(&v).copied().unwrap_or(0.0);
            residual.insert(v, before + share);
            if before <= EPSILON && before + share > EPSILON {
                queue.push_back(v);
            }
            let best = via.entry(v).or_insert((0.0, u));
            if share > best.0 {
                *best = (share, u);
            }
        }
    }
    let max = rank.values().copied().fold(0.0_f32, f32::max);
    if max <= 0.0 {
        return;
    }
    for (i, p) in rank {
        let s = GRAPH_WEIGHT * top * p / max;
        out[i].score += s;
        out[i].why.graph += s;
        if let Some((_, from)) = via.get(&i)
            && *from != i
        {
            out[i].why.referenced_by.push(files[*from].path.clone());
        }
    }
}

/// The files `u` refers to, weighted as Aider weighs references: names the request mentions
/// count ten times, private names and names defined in many files a tenth.
fn out_edges(
    u: usize,
    x: &Facts,
    definers: &HashMap<u32, Vec<u32>>,
    names: &Names,
    wanted: &HashSet<u32>,
) -> Vec<(usize, f32)> {
    let mut edges: HashMap<usize, f32> = HashMap::new();
    for (name, count) in &x.refs {
        let Some(defs) = definers.get(name).filter(|d| d.len() <= MAX_DEFINERS) else {
            continue;
        };
        let text = names.get(*name);
        let mut mul = 1.0;
        if wanted.contains(name) {
            mul *= 10.0;
        }
        if text.starts_with('_') {
            mul *= 0.1;
        }
        if defs.len() > 5 {
            mul *= 0.1;
        }
        if text.len() >= 8 && terms::split_identifier(text).len() > 1 {
            mul *= 2.0;
        }
        let w = mul * f32::from(*count).sqrt() / defs.len() as f32;
        for &v in defs {
            if v as usize != u {
                *edges.entry(v as usize).or_default() += w;
            }
        }
    }
    edges.into_iter().collect()
}

/// Named files first, then the user's recent work; tests and docs below source.
fn apply_signals(files: &[MapFile], query: &Query, signals: &Signals, out: &mut [Ranked]) {
    let top = out.iter().map(|r| r.score).fold(1.0_f32, f32::max);
    for r in out.iter_mut() {
        let path = files[r.file].path.as_str();
        let mut add = |why: &'static str, s: f32| {
            r.score += s;
            r.why.signals.push(why);
        };
        if signals.named.iter().any(|n| n == path) {
            add("named in the request", 10.0 * top);
        }
        if signals.last_plan.iter().any(|n| n == path) {
            add("changed by the last plan", 0.5 * top);
        }
        if signals.uncommitted.contains(path) {
            add("uncommitted changes", 0.15 * top);
        }
        if let Some(&n) = signals.recent.get(path) {
            add(
                "changed by recent commits",
                0.05 * top * (1.0 + n as f32).ln(),
            );
        }
        if (is_test_path(path) && !query.about_tests) || (is_doc_path(path) && !query.about_docs) {
            r.score *= 0.5;
            r.why.signals.push("test or doc: ranked down");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_and_docs_are_told_from_source() {
        for p in [
            "tests/test_app.py",
            "src/__tests__/a.js",
            "pkg/handler_test.go",
            "lib/x.spec.ts",
            "src/test/java/FooTest.java",
            "Spec/models_spec.rb",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/app.py",
            "contest/main.go",
            "src/latest.rs",
            "testament.py",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
        for p in ["README.md", "docs/index.html", "Examples/demo.py"] {
            assert!(is_doc_path(p), "{p}");
        }
        assert!(!is_doc_path("src/docstring.py"));
    }
}
