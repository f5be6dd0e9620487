//! The lexical parts of a file's score — the request's terms in its text (BM25), in its path,
//! and in the names it defines — each worked out the same way twice: for every file, adding
//! to its score alone, and again for the few best files, spelling out why. A ranking keeps no
//! reasons per file: a word in every path would give each of 100,000 files a record of its
//! reasons (about 240 bytes: 24 MB, and most of that ranking's time).

use super::facts::BlobFacts;
use super::files::MapFiles;
use super::paths::{PathFacts, PathHit};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Weights of the lexical fields: a request word in the path or a defined name says more
/// than the same word somewhere in the text.
const PATH_WEIGHT: f32 = 1.6;
const DEF_WEIGHT: f32 = 1.0;
const IDENT_BONUS: f32 = 3.0;

/// A rarity weight: `df` of `n` hold the term.
fn idf(n: f32, df: usize) -> Option<f32> {
    let df = df as f32;
    (df > 0.0).then(|| ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
}

/// How many of `files` have facts: the documents of BM25's statistics.
fn documents(files: &MapFiles, blobs: &dyn BlobFacts) -> usize {
    files
        .blobs()
        .filter(|b| b.and_then(|b| blobs.len(b)).is_some())
        .count()
}

/// BM25 of the request's terms (`terms`: their name ids) over the files' text.
pub struct TextScore {
    idf: Vec<Option<f32>>,
    avg: f32,
    tfs: PerBlob,
}

impl TextScore {
    /// The statistics of `files` (none when the request has no known term): the counts of
    /// the blobs the terms occur in, and every file's length, which its facts need not be
    /// loaded for.
    pub fn new(files: &MapFiles, blobs: &dyn BlobFacts, terms: &[u32]) -> Option<Self> {
        if terms.is_empty() {
            return None;
        }
        let n = documents(files, blobs).max(1) as f32;
        let avg = files
            .blobs()
            .filter_map(|b| blobs.len(b?))
            .map(|len| len as f32)
            .sum::<f32>()
            / n;
        let tfs = PerBlob::count(blobs.count(), &blobs.with_terms(), terms.len(), |b, k| {
            blobs.tf(b, terms[k])
        });
        let idf = tfs
            .files_with(files)
            .into_iter()
            .map(|df| idf(n, df))
            .collect();
        Some(TextScore { idf, avg, tfs })
    }

    /// Whether the file whose facts index is `b` holds any of the terms.
    pub fn hits(&self, b: Option<u32>) -> bool {
        self.tfs.any(b)
    }

    /// Each term's part of the score of a file of `len` term occurrences (facts index `b`),
    /// in term order.
    pub fn each(&self, b: Option<u32>, len: u32, mut part: impl FnMut(u16, f32)) {
        if !self.tfs.any(b) {
            return;
        }
        for (k, idf) in self.idf.iter().enumerate() {
            let tf = f32::from(self.tfs.get(b, k));
            let Some(idf) = idf.filter(|_| tf > 0.0) else {
                continue;
            };
            let norm = K1 * (1.0 - B + B * len as f32 / self.avg.max(1.0));
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
    /// The statistics of `files` (none when the request has no known term or identifier),
    /// from the symbols' inverted indexes: no blob's facts are loaded.
    pub fn new(
        files: &MapFiles,
        blobs: &dyn BlobFacts,
        terms: &[u32],
        idents: &[u32],
    ) -> Option<Self> {
        let t = terms.len();
        if t + idents.len() == 0 {
            return None;
        }
        let n = documents(files, blobs).max(1) as f32;
        let lists: Vec<Vec<u32>> = terms
            .iter()
            .map(|&term| blobs.with_def_term(term))
            .chain(idents.iter().map(|&id| blobs.defining(id)))
            .collect();
        let mut candidates: Vec<u32> = lists.iter().flatten().copied().collect();
        candidates.sort_unstable();
        candidates.dedup();
        let found = PerBlob::count(blobs.count(), &candidates, t + idents.len(), |b, k| {
            u16::from(lists[k].binary_search(&b).is_ok())
        });
        let with = found.files_with(files);
        let idf = with[..t].iter().map(|&df| idf(n, df)).collect();
        Some(DefScore {
            idf,
            found,
            idents: idents.len(),
        })
    }

    /// Whether the file whose facts index is `b` matches any term or identifier.
    pub fn hits(&self, b: Option<u32>) -> bool {
        self.found.any(b)
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

/// A count per blob and query term, worked out only for the `candidates` (the blobs an
/// inverted index says may count above zero); every other blob counts zero. Files of one
/// content (copies, generated or vendored files) share a blob, counted once.
struct PerBlob {
    k: usize,
    counts: Vec<u16>,
    /// Per blob, whether any of its counts is above zero.
    hit: Vec<bool>,
}

impl PerBlob {
    fn count(blobs: usize, candidates: &[u32], k: usize, of: impl Fn(u32, usize) -> u16) -> Self {
        let mut counts = vec![0u16; blobs * k];
        let mut hit = vec![false; blobs];
        for &b in candidates {
            let Some(seen) = hit.get_mut(b as usize) else {
                continue;
            };
            for t in 0..k {
                let n = of(b, t);
                counts[b as usize * k + t] = n;
                *seen |= n > 0;
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
