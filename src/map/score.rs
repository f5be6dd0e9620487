//! The lexical parts of a file's score — the request's terms in its text (BM25), in its path,
//! and in the names it defines — each worked out the same way twice: for every file, adding
//! to its score alone, and again for the few best files, spelling out why. A ranking keeps no
//! reasons per file: a word in every path would give each of 100,000 files a record of its
//! reasons (about 240 bytes: 24 MB, and most of that ranking's time).

use super::facts::Facts;
use super::files::MapFiles;
use super::paths::{PathFacts, PathHit};
use super::store::BlobId;

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Weights of the lexical fields: a request word in the path or a defined name says more
/// than the same word somewhere in the text.
const PATH_WEIGHT: f32 = 1.6;
const DEF_WEIGHT: f32 = 1.0;
const IDENT_BONUS: f32 = 3.0;

/// The facts of a file whose facts index is `b`.
fn facts_of(blobs: &[(BlobId, Facts)], b: Option<u32>) -> Option<&Facts> {
    b.and_then(|b| blobs.get(b as usize)).map(|(_, x)| x)
}

/// A rarity weight: `df` of `n` hold the term.
fn idf(n: f32, df: usize) -> Option<f32> {
    let df = df as f32;
    (df > 0.0).then(|| ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
}

/// BM25 of the request's terms (`terms`: their name ids) over the files' text.
pub struct TextScore {
    idf: Vec<Option<f32>>,
    avg: f32,
    tfs: PerBlob,
}

impl TextScore {
    /// The statistics of `files` (none when the request has no known term).
    pub fn new(files: &MapFiles, blobs: &[(BlobId, Facts)], terms: &[u32]) -> Option<Self> {
        if terms.is_empty() {
            return None;
        }
        let facts = |b| facts_of(blobs, b);
        let n = files.blobs().filter_map(facts).count().max(1) as f32;
        let avg = files
            .blobs()
            .filter_map(facts)
            .map(|f| f.len as f32)
            .sum::<f32>()
            / n;
        let tfs = PerBlob::count(files, blobs, terms.len(), |f, k| f.tf(terms[k]));
        let idf = tfs
            .files_with(files)
            .into_iter()
            .map(|df| idf(n, df))
            .collect();
        Some(TextScore { idf, avg, tfs })
    }

    /// Each term's part of the score of a file with facts `f` (index `b`), in term order.
    pub fn each(&self, b: Option<u32>, f: &Facts, mut part: impl FnMut(u16, f32)) {
        if !self.tfs.any(b) {
            return;
        }
        for (k, idf) in self.idf.iter().enumerate() {
            let tf = f32::from(self.tfs.get(b, k));
            let Some(idf) = idf.filter(|_| tf > 0.0) else {
                continue;
            };
            let norm = K1 * (1.0 - B + B * f.len as f32 / self.avg.max(1.0));
            part(k as u16, idf * tf * (K1 + 1.0) / (tf + norm));
        }
    }
}

/// The request's terms in the names a file defines (`terms`), and its identifiers matched
/// exactly (`idents`), as name ids.
pub struct DefScore {
    idf: Vec<Option<f32>>,
    found: PerBlob,
    idents: usize,
}

impl DefScore {
    /// The statistics of `files` (none when the request has no known term or identifier).
    pub fn new(
        files: &MapFiles,
        blobs: &[(BlobId, Facts)],
        terms: &[u32],
        idents: &[u32],
    ) -> Option<Self> {
        let t = terms.len();
        if t + idents.len() == 0 {
            return None;
        }
        let n = files
            .blobs()
            .filter_map(|b| facts_of(blobs, b))
            .count()
            .max(1) as f32;
        let found = PerBlob::count(files, blobs, t + idents.len(), |f, k| {
            u16::from(match k.checked_sub(t) {
                None => f.def_terms.binary_search(&terms[k]).is_ok(),
                Some(j) => f.defs.iter().any(|d| d.name == idents[j]),
            })
        });
        let with = found.files_with(files);
        let idf = with[..t].iter().map(|&df| idf(n, df)).collect();
        Some(DefScore {
            idf,
            found,
            idents: idents.len(),
        })
    }

    /// Each part of the score of a file with facts index `b`: the terms (numbered as the
    /// request's), then the identifiers (numbered after the terms).
    pub fn each(&self, b: Option<u32>, mut part: impl FnMut(u16, f32)) {
        if !self.found.any(b) {
            return;
        }
        let terms = self.idf.len();
        for (k, idf) in self.idf.iter().enumerate() {
            if let Some(idf) = idf.filter(|_| self.found.get(b, k) > 0) {
                part(k as u16, DEF_WEIGHT * idf);
            }
        }
        for j in 0..self.idents {
            if self.found.get(b, terms + j) > 0 {
                part((terms + j) as u16, IDENT_BONUS);
            }
        }
    }
}

/// The part of one of the request's terms in a file's path (found by [`PathFacts::of`]),
/// weighted by how rare it is among the `n` paths; the file's own name counts more than its
/// folders'.
pub fn path_part(n: usize, paths: &PathFacts, hit: &PathHit) -> f32 {
    let n = n.max(1) as f32;
    let &(_, k, in_name) = hit;
    let d = paths.df.get(k as usize).copied().unwrap_or(0.0);
    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
    PATH_WEIGHT * idf * if in_name { 1.5 } else { 1.0 }
}

/// The path hits of `file` (the hits come file by file, in file order).
pub fn path_hits_of<'h>(paths: &'h PathFacts, file: usize) -> &'h [PathHit] {
    let from = paths.hits.partition_point(|h| (h.0 as usize) < file);
    let to = from + paths.hits[from..].partition_point(|h| h.0 as usize == file);
    &paths.hits[from..to]
}

/// A count per blob and query term, each blob's facts read once for all the terms and only
/// for blobs some file has. Files of one content (copies, generated or vendored files) share
/// a blob; a table per file would read every file's facts once per term: most of a
/// ranking's time, and a 100,000-row table at 100,000 files.
struct PerBlob {
    k: usize,
    counts: Vec<u16>,
    /// Per blob, whether any of its counts is above zero.
    hit: Vec<bool>,
}

impl PerBlob {
    fn count(
        files: &MapFiles,
        blobs: &[(BlobId, Facts)],
        k: usize,
        of: impl Fn(&Facts, usize) -> u16,
    ) -> Self {
        let mut counts = vec![0u16; blobs.len() * k];
        let mut hit = vec![false; blobs.len()];
        let mut done = vec![false; blobs.len()];
        for b in files.blobs().flatten() {
            let b = b as usize;
            let (Some(seen), Some((_, f))) = (done.get_mut(b), blobs.get(b)) else {
                continue;
            };
            if std::mem::replace(seen, true) {
                continue;
            }
            for t in 0..k {
                let n = of(f, t);
                counts[b * k + t] = n;
                hit[b] |= n > 0;
            }
        }
        PerBlob { k, counts, hit }
    }

    /// The count of term `term` in `blob` (0 for a file without facts).
    fn get(&self, blob: Option<u32>, term: usize) -> u16 {
        blob.and_then(|b| self.counts.get(b as usize * self.k + term))
            .copied()
            .unwrap_or(0)
    }

    /// Whether any count of `blob` is above zero.
    fn any(&self, blob: Option<u32>) -> bool {
        blob.and_then(|b| self.hit.get(b as usize))
            .copied()
            .unwrap_or(false)
    }

    /// Per term, how many of `files` count it above zero.
    fn files_with(&self, files: &MapFiles) -> Vec<usize> {
        let mut with = vec![0usize; self.k];
        for b in files.blobs().filter(|&b| self.any(b)) {
            for (t, n) in with.iter_mut().enumerate() {
                *n += usize::from(self.get(b, t) > 0);
            }
        }
        with
    }
}
