//! The request's exact words found in files the map has not read yet. A cold map of a large
//! project can parse only some of its files within its time budget; searching text for a few
//! literal strings is many times faster than parsing it, so before parsing, every file to be
//! read is searched (on every core, as ripgrep does) for the request's identifiers, paths and
//! words, and the files holding its rarest ones are parsed first. What is parsed then feeds the
//! ranking and the excerpts as always: an identifier the request names is found in a file no
//! path pointed to, even when most of the project is still unread.
//!
//! A needle matches where a word starts (after a non-alphanumeric byte or at a lower-to-upper
//! case change), case aside, so `estim` finds `CardinalityEstimator` but `read` does not find
//! `thread`. A request word is searched by the part its stem shares with it (`estimates`:
//! `estim`), so other forms of the word are found too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::facts::MAX_PARSE_BYTES;
use super::terms;
use crate::workspace::Workspace;

/// At most this many needles (one bit each in a file's mask).
const MAX_NEEDLES: usize = 64;
/// A request word shorter than this says too little to search for.
const MIN_WORD: usize = 4;
/// A path or dotted name shorter than this is not searched whole.
const MIN_PATH: usize = 5;
/// Weight of a plain word of the request.
const WORD: f32 = 1.0;
/// Weight of a path or dotted name (`ext/web`, `fs.read`).
const PATH: f32 = 2.0;
/// Weight of an identifier written as code (`uc_catalog`, `getCallSites`).
const IDENT: f32 = 3.0;

/// Searching threads per core: a file not in the page cache keeps its thread waiting on the
/// disk, and a new project's files often are not (a project cloned long ago, or one larger
/// than the cache), so more reads are kept in flight than there are cores to search them.
const THREADS_PER_CORE: usize = 4;
/// At most this many searching threads (each holds one file's text).
const MAX_THREADS: usize = 8;

/// What to search for: the request's literal strings, each with its weight.
pub struct Needles {
    list: Vec<String>,
    weights: Vec<f32>,
    matcher: AhoCorasick,
}

impl Needles {
    /// The needles of `request` (`None` when it has none worth searching for).
    pub fn of(request: &str) -> Option<Needles> {
        let mut found: Vec<(String, f32)> = Vec::new();
        let mut add = |needle: String, weight: f32| match found
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(&needle))
        {
            Some(seen) => seen.1 = seen.1.max(weight),
            None => found.push((needle, weight)),
        };
        for ident in terms::Query::parse(request).idents {
            // `fix(core): ...` reads as a call of `fix`: a change word, not code.
            if !terms::is_change_word(&ident.to_lowercase()) {
                add(ident, IDENT);
            }
        }
        for word in terms::identifiers(request) {
            // An acronym (`ALP`, `NRI`) names code as surely as an identifier does.
            let letters = word.chars().filter(char::is_ascii_uppercase).count();
            let caps = word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
            if caps && letters >= 2 && word.len() >= 3 {
                add(word.to_string(), IDENT);
            }
        }
        // A path ends at a bracket or quote: `fix(ext/node):` names `ext/node`.
        let paths = request
            .split(|c: char| c.is_whitespace() || "()[]{}<>`'\",;".contains(c))
            .filter(|token| !token.contains("://"));
        for token in paths {
            let token = token.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
            let inner = token.contains('/') || token.contains('.');
            if inner && token.len() >= MIN_PATH {
                add(token.to_string(), PATH);
            }
        }
        for ident in terms::identifiers(request) {
            for part in terms::split_identifier(ident) {
                let lower = part.to_lowercase();
                if let Some(needle) = word_needle(&lower) {
                    add(needle, WORD);
                }
            }
        }
        // The most telling first, should there be more than fit.
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.len().cmp(&a.0.len())));
        found.truncate(MAX_NEEDLES);
        if found.is_empty() {
            return None;
        }
        let (list, weights): (Vec<String>, Vec<f32>) = found.into_iter().unzip();
        let matcher = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&list)
            .ok()?;
        Some(Needles {
            list,
            weights,
            matcher,
        })
    }

    /// The needles, most telling first.
    pub fn list(&self) -> &[String] {
        &self.list
    }

    /// The bit of every needle that occurs in `text` where a word starts. Matches do not
    /// overlap (the longest needle wins where several start), which lets the search skip
    /// ahead with its prefilter.
    pub fn mask(&self, text: &[u8]) -> u64 {
        let all = if self.list.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.list.len()) - 1
        };
        let mut mask = 0u64;
        for m in self.matcher.find_iter(text) {
            let bit = 1u64 << m.pattern().as_usize();
            if mask & bit == 0 && starts_word(text, m.start()) {
                mask |= bit;
                if mask == all {
                    break;
                }
            }
        }
        mask
    }
}

/// The needle of a lower-case request word: the part it shares with its stem (so other forms
/// of the word match), or nothing for a stopword, a change word, a number or a short word.
fn word_needle(lower: &str) -> Option<String> {
    if lower.len() < MIN_WORD
        || lower.chars().all(|c| c.is_ascii_digit())
        || terms::is_stopword(lower)
        || terms::is_change_word(lower)
    {
        return None;
    }
    let stem = terms::stem(lower);
    if terms::is_change_word(&stem) {
        return None;
    }
    let shared = lower
        .char_indices()
        .zip(stem.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((at, c), _)| at + c.len_utf8());
    Some(if shared >= MIN_WORD {
        lower[..shared].to_string()
    } else {
        lower.to_string()
    })
}

/// Whether a word starts at `at` in `text`: at its start, after a byte that is not a letter
/// or digit, or where a lower-case letter is followed by a capital.
fn starts_word(text: &[u8], at: usize) -> bool {
    let Some(&prev) = at.checked_sub(1).and_then(|p| text.get(p)) else {
        return true;
    };
    let here = text.get(at).copied().unwrap_or(0);
    !prev.is_ascii_alphanumeric() || (prev.is_ascii_lowercase() && here.is_ascii_uppercase())
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Found {
    /// Files searched before the deadline.
    pub searched: usize,
    /// Per file holding a needle (its place in the list searched): which needles it holds,
    /// and its length in bytes.
    pub masks: Vec<(usize, u64, usize)>,
}

impl Found {
    /// How telling each file's needles are: the weights of the needles it holds, each times
    /// how rare it is among the files searched (a needle in every file tells nothing), and
    /// less for a file longer than most, as BM25 weighs it: a long file holds many words by
    /// chance, and parsing it costs as much as many short ones, so a file is worth by what it
    /// holds per byte. A long file holding the request's rarest words still comes early (a
    /// 100 KB header defining what the request names); one holding only common words comes
    /// after the short files holding them, where it can't take the parse budget.
    pub fn scores(&self, needles: &Needles) -> HashMap<usize, f32> {
        let mut df = vec![0usize; needles.list.len()];
        for (_, mask, _) in &self.masks {
            for (k, n) in df.iter_mut().enumerate() {
                *n += usize::from(mask & (1 << k) != 0);
            }
        }
        let total = self.searched as f32;
        let worth: Vec<f32> = df
            .iter()
            .zip(&needles.weights)
            .map(|(&n, w)| w * ((total + 1.0) / (n as f32 + 1.0)).ln().max(0.0))
            .collect();
        let mean =
            self.masks.iter().map(|m| read_cost(m.2)).sum::<f32>() / self.masks.len().max(1) as f32;
        self.masks
            .iter()
            .map(|&(at, mask, len)| {
                let len = read_cost(len);
                let score: f32 = worth
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| mask & (1 << k) != 0)
                    .map(|(_, w)| w)
                    .sum();
                (at, score / (0.25 + 0.75 * len / mean.max(1.0)))
            })
            .filter(|(_, s)| *s > 0.0)
            .collect()
    }
}

/// What reading a file of `len` bytes for the map costs, in bytes of a parsed file: a file
/// over [`MAX_PARSE_BYTES`] has only its words counted, which takes a fraction of parsing it.
fn read_cost(len: usize) -> f32 {
    if len > MAX_PARSE_BYTES {
        len as f32 / WORDS_ONLY_SPEEDUP
    } else {
        len as f32
    }
}

/// How many times faster counting a file's words is than parsing it for definitions.
const WORDS_ONLY_SPEEDUP: f32 = 4.0;

/// Search `paths` (most promising first) for `needles` on every core until `deadline`; files
/// over `limit` bytes are not read.
pub fn search(
    ws: &Workspace,
    paths: &[&str],
    needles: &Needles,
    limit: usize,
    deadline: Instant,
) -> Found {
    if paths.is_empty() {
        return Found::default();
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .saturating_mul(THREADS_PER_CORE)
        .clamp(1, MAX_THREADS)
        .min(paths.len());
    let next = AtomicUsize::new(0);
    let searched = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, u64, usize)>();
    let mut masks = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, searched) = (&next, &searched);
            let work = move || {
                while Instant::now() < deadline {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(k) else {
                        return;
                    };
                    let (mask, len) = ws.read_stamped(path, limit).map_or((0, 0), |(text, _)| {
                        (needles.mask(text.as_bytes()), text.len())
                    });
                    searched.fetch_add(1, Ordering::Relaxed);
                    if mask != 0 && tx.send((k, mask, len)).is_err() {
                        return;
                    }
                }
            };
            let spawned = std::thread::Builder::new()
                .name("pai-map-grep".into())
                .spawn_scoped(s, work);
            if spawned.is_err() {
                break;
            }
        }
        drop(tx);
        masks.extend(rx);
    });
    masks.sort_unstable();
    Found {
        searched: searched.into_inner(),
        masks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(request: &str) -> Vec<String> {
        Needles::of(request)
            .map(|n| n.list().to_vec())
            .unwrap_or_default()
    }

    #[test]
    fn a_request_gives_identifiers_paths_and_word_stems() {
        let n = needles("libnet/bridge: use `uc_catalog` in getCallSites for better estimates");
        assert!(n.contains(&"uc_catalog".to_string()), "{n:?}");
        assert!(n.contains(&"getCallSites".to_string()), "{n:?}");
        assert!(n.contains(&"libnet/bridge".to_string()), "{n:?}");
        assert!(n.contains(&"estim".to_string()), "{n:?}");
        assert!(n.contains(&"catalog".to_string()), "{n:?}");
        // Stopwords, change words and short words are not searched.
        for gone in ["use", "for", "in", "get"] {
            assert!(!n.iter().any(|x| x == gone), "{gone} in {n:?}");
        }
        assert_eq!(n[0..2], ["getCallSites", "uc_catalog"], "identifiers first");
        assert!(needles("fix a bug").is_empty());
        assert!(
            needles("see https://example.com/a/b")
                .iter()
                .all(|x| !x.contains("//"))
        );
    }

    #[test]
    fn needles_match_where_words_start_case_aside() {
        let n = Needles::of("the thread estimates").unwrap();
        let bit = |needle: &str| 1u64 << n.list().iter().position(|x| x == needle).unwrap();
        let (thread, estim) = (bit("thread"), bit("estim"));
        assert_eq!(n.mask(b"let e = CardinalityEstimator::new();"), estim);
        assert_eq!(n.mask(b"cardinality_estimate(x)"), estim);
        assert_eq!(n.mask(b"THREAD_POOL and reestimate"), thread);
        assert_eq!(n.mask(b"spawn_thread; Estimates"), thread | estim);
        assert_eq!(n.mask(b"nothing here"), 0);
        // A match inside a word is not one, even when the same needle starts a word later.
        assert_eq!(n.mask(b"subthread thread"), thread);
        let acronym = Needles::of("[ALP] Fix bug in ALP RD size").unwrap();
        assert_eq!(acronym.list()[0], "ALP", "{:?}", acronym.list());
    }

    #[test]
    fn rare_needles_outscore_common_ones() {
        let n = Needles::of("the catalog writer uc_catalog").unwrap();
        let bit = |needle: &str| 1u64 << n.list().iter().position(|x| x == needle).unwrap();
        let found = Found {
            searched: 100,
            masks: (0..60)
                .map(|k| (k, bit("writer"), 100))
                .chain([
                    (60, bit("uc_catalog"), 100),
                    (61, bit("catalog") | bit("writer"), 100),
                    (62, bit("catalog") | bit("writer"), 10_000),
                ])
                .collect(),
        };
        let scores = found.scores(&n);
        assert!(scores[&60] > scores[&61], "{scores:?}");
        assert!(scores[&61] > scores[&0], "{scores:?}");
        assert!(
            scores[&61] > scores[&62],
            "a long file counts less: {scores:?}"
        );
    }

    #[test]
    fn a_long_file_holding_a_rare_identifier_outscores_short_files_holding_a_common_word() {
        let n = Needles::of("the catalog of uc_catalog").unwrap();
        let bit = |needle: &str| 1u64 << n.list().iter().position(|x| x == needle).unwrap();
        let found = Found {
            searched: 1_000,
            masks: (0..500)
                .map(|k| (k, bit("catalog"), 4_000))
                .chain([(500, bit("uc_catalog") | bit("catalog"), 100_000)])
                .chain([(501, bit("catalog"), 100_000)])
                .collect(),
        };
        let scores = found.scores(&n);
        assert!(
            scores[&500] > scores[&0],
            "{:?} {:?}",
            scores[&500],
            scores[&0]
        );
        // A long file holding only the common word comes after the short ones holding it.
        assert!(scores[&501] < scores[&0], "{:?}", scores[&501]);
    }

    /// A file too long to parse only has its words counted, a fraction of what parsing a
    /// file of its length costs: it is weighed by that cost, ahead of a shorter file that
    /// would be parsed, holding the same words.
    #[test]
    fn a_file_too_long_to_parse_is_weighed_by_what_reading_its_words_costs() {
        let n = Needles::of("the catalog of uc_catalog").unwrap();
        let bit = |needle: &str| 1u64 << n.list().iter().position(|x| x == needle).unwrap();
        let both = bit("uc_catalog") | bit("catalog");
        let over = MAX_PARSE_BYTES + 24_000;
        let found = Found {
            searched: 1_000,
            masks: (0..200)
                .map(|k| (k, bit("catalog"), 8_000))
                .chain([(200, both, over), (201, both, MAX_PARSE_BYTES - 1_000)])
                .collect(),
        };
        let scores = found.scores(&n);
        assert!(scores[&200] > scores[&201], "{scores:?}");
        // Still weighed down against a short file holding the same.
        let short = Found {
            searched: 1_000,
            masks: vec![(0, both, 8_000), (1, both, over)],
        };
        let scores = short.scores(&n);
        assert!(scores[&0] > scores[&1], "{scores:?}");
    }

    #[test]
    fn a_conventional_commit_prefix_gives_its_path_not_its_change_word() {
        let n = needles("fix(ext/node): `fs.read` and `fs.write` promisify");
        assert!(n.contains(&"ext/node".to_string()), "{n:?}");
        assert!(n.contains(&"fs.read".to_string()), "{n:?}");
        assert!(!n.iter().any(|x| x.contains('(')), "{n:?}");
        assert!(!n.iter().any(|x| x == "fix"), "{n:?}");
        let n = needles("fix(core): deactivate idle TTY write handles");
        assert!(!n.iter().any(|x| x == "fix"), "{n:?}");
        assert!(n.contains(&"TTY".to_string()), "{n:?}");
    }

    #[test]
    fn a_search_finds_the_files_holding_a_needle_before_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn uc_catalog() {}\n").unwrap();
        std::fs::write(dir.path().join("b.rs"), "fn other() {}\n").unwrap();
        std::fs::write(dir.path().join("c.bin"), b"uc_catalog\0\x01").unwrap();
        let ws = Workspace::open(dir.path(), crate::workspace::WorkspaceConfig::default()).unwrap();
        let n = Needles::of("`uc_catalog`").unwrap();
        let paths = ["a.rs", "b.rs", "c.bin", "missing.rs"];
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let found = search(&ws, &paths, &n, 1024, later);
        assert_eq!(found.searched, 4);
        let holding: Vec<usize> = found.masks.iter().map(|m| m.0).collect();
        assert_eq!(holding, [0], "binary and missing files hold nothing");
        let past = Instant::now();
        assert_eq!(search(&ws, &paths, &n, 1024, past).searched, 0);
    }
}
