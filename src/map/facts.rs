//! What the map knows of one file version (one blob): its definitions, the names it refers
//! to, and how often each term occurs in it. Names and terms are numbers into one [`Names`]
//! table, so the cache stays small and the ranker compares integers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use super::symbols::{DefKind, Extractor, FileSymbols, Lang};
use super::symfile::SymFile;
use super::terms;

/// Files longer than this have their words counted but are not parsed for symbols: a syntax
/// tree takes many times its file's size while it is walked, and each parsing thread holding
/// one of a project's largest files (generated parsers, amalgamations, vendored bundles) would
/// set a map's peak memory by itself. Hand-written source runs to about 250 KB (SQLAlchemy's
/// `selectable.py`, ripgrep's `defs.rs`) and must keep its definitions; at 512 KB a cold map of
/// duckdb peaked at 108 MB.
pub const MAX_PARSE_BYTES: usize = 256 * 1024;

/// Distinct terms kept per file: the most frequent ones (a generated file with 50,000
/// distinct words would otherwise dominate the cache).
const MAX_TERMS: usize = 4_000;

/// Interned strings: identifiers (case kept) and terms (lower case, stemmed).
///
/// The names a cache stored stay in its symbols file (`symfile.rs`), found by binary search
/// there: a warm map looks up a few names among hundreds of thousands, and copying them all
/// out, or hashing them, would cost more than the rest of the map. Only
/// names added since (ids after the file's) are held here, in a hash table.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// The names of the symbols file (ids below its count).
    base: Option<Arc<SymFile>>,
    /// How many names the symbols file holds.
    base_len: u32,
    /// The names added since, one after another.
    text: String,
    /// Where each added name ends in `text`.
    ends: Vec<u32>,
    /// The added names' ids, by the hash of their text (kept once, in `text`).
    added: hashbrown::HashTable<u32>,
    hasher: std::collections::hash_map::RandomState,
}

impl Names {
    /// The names of a symbols file, none added yet.
    pub fn on(base: Arc<SymFile>) -> Self {
        Names {
            base_len: u32::try_from(base.names()).unwrap_or(u32::MAX),
            base: Some(base),
            ..Names::default()
        }
    }

    /// The id of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        let hash = self.hash(s);
        if let Some(id) = self.find_added(hash, s) {
            return id;
        }
        if let Some(id) = self.base.as_ref().and_then(|b| b.lookup(s)) {
            return id;
        }
        let id = self
            .base_len
            .saturating_add(u32::try_from(self.ends.len()).unwrap_or(u32::MAX));
        self.text.push_str(s);
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        let (text, ends, base_len, hasher) = (&self.text, &self.ends, self.base_len, &self.hasher);
        let rehash = |&id: &u32| {
            std::hash::BuildHasher::hash_one(hasher, added_name(text, ends, base_len, id))
        };
        self.added.insert_unique(hash, id, rehash);
        id
    }

    fn hash(&self, s: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, s)
    }

    /// The id of added name `s`, whose hash is `hash`.
    fn find_added(&self, hash: u64, s: &str) -> Option<u32> {
        self.added
            .find(hash, |&id| {
                added_name(&self.text, &self.ends, self.base_len, id) == s
            })
            .copied()
    }

    /// The id of `s`, when known.
    pub fn lookup(&self, s: &str) -> Option<u32> {
        if let Some(id) = self.find_added(self.hash(s), s) {
            return Some(id);
        }
        self.base.as_ref()?.lookup(s)
    }

    /// The string of `id` (empty for an unknown id).
    pub fn get(&self, id: u32) -> Cow<'_, str> {
        if id < self.base_len {
            return self
                .base
                .as_ref()
                .and_then(|b| b.name(id))
                .unwrap_or_default();
        }
        Cow::Borrowed(added_name(&self.text, &self.ends, self.base_len, id))
    }

    /// These names with the symbols file's read whole into memory, for writing the next file
    /// from them (every name is read then); `None` when none are in a file (all are here).
    pub fn in_memory(&self) -> Option<Self> {
        let whole = self.base.as_ref()?.names_in_memory()?;
        let mut out = self.clone();
        out.base = Some(Arc::new(whole));
        Some(out)
    }

    /// Every id in string order: the symbols file's order merged with the added names'.
    pub fn sorted(&self) -> Vec<u32> {
        let mut added: Vec<u32> = (0..u32::try_from(self.ends.len()).unwrap_or(u32::MAX))
            .map(|i| self.base_len.saturating_add(i))
            .collect();
        added.sort_unstable_by(|&a, &b| self.get(a).cmp(&self.get(b)));
        let mut out = Vec::with_capacity(self.len());
        let mut added = added.into_iter().peekable();
        if let Some(base) = &self.base {
            for id in base.sorted() {
                while let Some(a) = added.next_if(|&a| self.get(a) < self.get(id)) {
                    out.push(a);
                }
                out.push(id);
            }
        }
        out.extend(added);
        out
    }

    /// How many names there are.
    pub fn len(&self) -> usize {
        self.base_len as usize + self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of those of `wanted` that are known.
    pub fn find_all(&self, wanted: &[&str]) -> HashMap<String, u32> {
        wanted
            .iter()
            .filter_map(|w| Some((w.to_string(), self.lookup(w)?)))
            .collect()
    }
}

/// The text of added name `id` (ids from `base_len` on), given the added names' `text` and
/// where each ends (empty for an unknown id).
fn added_name<'t>(text: &'t str, ends: &[u32], base_len: u32, id: u32) -> &'t str {
    let Some(i) = id.checked_sub(base_len).map(|i| i as usize) else {
        return "";
    };
    let Some(&end) = ends.get(i) else {
        return "";
    };
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    text.get(start..end as usize).unwrap_or("")
}

/// A definition, its name interned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DefRec {
    /// Name id.
    pub name: u32,
    /// What it defines.
    pub kind: DefKind,
    /// 1-based line of the name.
    pub line: u32,
    /// 1-based last line of the definition.
    pub end: u32,
    /// Its first line, trimmed, as a name id (interned like names, so loading a cache does
    /// not allocate a string per definition).
    pub signature: u32,
}

/// What one file version holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Facts {
    /// Definitions, by line.
    pub defs: Vec<DefRec>,
    /// Names referred to, each once, with how often.
    pub refs: Vec<(u32, u16)>,
    /// Term counts, sorted by term id: in the map's view only the request's terms (the words
    /// of every blob are kept on disk, `words.rs`), and never stored with the facts.
    #[serde(skip)]
    pub terms: Vec<(u32, u16)>,
    /// The distinct terms of the definitions' names, sorted.
    pub def_terms: Vec<u32>,
    /// Term occurrences in all.
    pub len: u32,
    /// Lines of text.
    pub lines: u32,
    /// Whether symbols were extracted (a known language that parsed).
    pub parsed: bool,
}

impl Facts {
    /// The count of term `id`.
    pub fn tf(&self, id: u32) -> u16 {
        self.terms
            .binary_search_by_key(&id, |(t, _)| *t)
            .map_or(0, |i| self.terms[i].1)
    }

    /// Whether it holds anything besides its size: definitions, references, or terms of
    /// definitions' names.
    pub fn has_symbols(&self) -> bool {
        !(self.defs.is_empty() && self.refs.is_empty() && self.def_terms.is_empty())
    }

    /// Whether every id in these facts is below `names` (a cache entry from a foreign or
    /// corrupt file fails this and is dropped).
    pub fn ids_below(&self, names: usize) -> bool {
        let ok = |id: u32| (id as usize) < names;
        self.defs.iter().all(|d| ok(d.name) && ok(d.signature))
            && self.refs.iter().all(|(id, _)| ok(*id))
            && self.terms.iter().all(|(id, _)| ok(*id))
            && self.def_terms.iter().all(|id| ok(*id))
    }
}

/// A file version's words with how often each occurs.
pub type WordCounts = Vec<(String, u16)>;

/// Facts of a file read on a worker thread, before interning.
#[derive(Debug, Default)]
pub struct RawFacts {
    symbols: FileSymbols,
    parsed: bool,
    terms: HashMap<String, u32>,
    lines: u32,
}

impl RawFacts {
    /// Read `text` (of a file at `path`): its symbols when the language is known and it is
    /// at most [`MAX_PARSE_BYTES`] long, its terms always.
    pub fn read(path: &str, text: &str, extractor: &mut Extractor) -> RawFacts {
        let lang = Lang::from_path(path).filter(|_| text.len() <= MAX_PARSE_BYTES);
        let (symbols, parsed) = match lang {
            Some(lang) => match extractor.extract(lang, text) {
                Ok(s) => (s, true),
                Err(_) => (FileSymbols::default(), false),
            },
            None => (FileSymbols::default(), false),
        };
        let mut counts: HashMap<String, u32> = HashMap::new();
        terms::for_each_term(text, |t| {
            if let Some(n) = counts.get_mut(t) {
                *n += 1;
            } else {
                counts.insert(t.to_string(), 1);
            }
        });
        RawFacts {
            symbols,
            parsed,
            terms: counts,
            lines: u32::try_from(text.lines().count()).unwrap_or(u32::MAX),
        }
    }

    /// Intern into `names`; the words are left out (see [`RawFacts::split`]).
    pub fn intern(self, names: &mut Names) -> Facts {
        self.split(names).0
    }

    /// The facts, names interned into `names`, and apart from them the file's words with
    /// their counts (the most frequent [`MAX_TERMS`], in no order), which the map keeps in its
    /// words index rather than among the names.
    pub fn split(self, names: &mut Names) -> (Facts, WordCounts) {
        let mut def_terms: Vec<u32> = Vec::new();
        for d in &self.symbols.defs {
            terms::for_each_term(&d.name, |t| def_terms.push(names.intern(t)));
        }
        def_terms.sort_unstable();
        def_terms.dedup();
        let defs = self
            .symbols
            .defs
            .into_iter()
            .map(|d| DefRec {
                name: names.intern(&d.name),
                kind: d.kind,
                line: d.line,
                end: d.end_line.max(d.line),
                signature: names.intern(&d.signature),
            })
            .collect();
        let mut refs: HashMap<u32, u16> = HashMap::new();
        for r in &self.symbols.refs {
            let n = refs.entry(names.intern(&r.name)).or_default();
            *n = n.saturating_add(1);
        }
        let mut refs: Vec<(u32, u16)> = refs.into_iter().collect();
        refs.sort_unstable();
        let len = self.terms.values().sum::<u32>();
        let mut counted: Vec<(String, u32)> = self.terms.into_iter().collect();
        if counted.len() > MAX_TERMS {
            counted.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            counted.truncate(MAX_TERMS);
        }
        let words = counted
            .into_iter()
            .map(|(t, n)| (t, u16::try_from(n).unwrap_or(u16::MAX)))
            .collect();
        let facts = Facts {
            defs,
            refs,
            terms: Vec::new(),
            def_terms,
            len,
            lines: self.lines,
            parsed: self.parsed,
        };
        (facts, words)
    }
}

/// The facts a ranking reads, by blob, loaded only as they are asked for: a warm map of a big
/// project ranks from the request's words, the few blobs they hit and the reference graph
/// near them, and never holds every blob's facts at once.
pub trait BlobFacts {
    /// How many blobs are numbered (every blob number is below it).
    fn count(&self) -> usize;
    /// The facts of blob `b` (its term counts: the request's terms only).
    fn facts(&self, b: u32) -> Option<&Facts>;
    /// The term occurrences of blob `b` ([`Facts::len`]), without loading its facts.
    fn len(&self, b: u32) -> Option<u32>;
    /// How often term `term` occurs in blob `b`'s text.
    fn tf(&self, b: u32, term: u32) -> u16;
    /// The blobs whose text holds one of the request's terms, in blob order.
    fn with_terms(&self) -> Vec<u32>;
    /// The blobs defining name `name`, in blob order.
    fn defining(&self, name: u32) -> Vec<u32>;
    /// The blobs defining a name that holds term `term`, in blob order.
    fn with_def_term(&self, term: u32) -> Vec<u32>;
}

/// Facts held whole, by blob number (tests, and small rankings built in memory).
impl BlobFacts for Vec<Facts> {
    fn count(&self) -> usize {
        Vec::len(self)
    }

    fn facts(&self, b: u32) -> Option<&Facts> {
        self.get(b as usize)
    }

    fn len(&self, b: u32) -> Option<u32> {
        self.get(b as usize).map(|f| f.len)
    }

    fn tf(&self, b: u32, term: u32) -> u16 {
        self.get(b as usize).map_or(0, |f| f.tf(term))
    }

    fn with_terms(&self) -> Vec<u32> {
        blobs_where(self, |f| !f.terms.is_empty())
    }

    fn defining(&self, name: u32) -> Vec<u32> {
        blobs_where(self, |f| f.defs.iter().any(|d| d.name == name))
    }

    fn with_def_term(&self, term: u32) -> Vec<u32> {
        blobs_where(self, |f| f.def_terms.binary_search(&term).is_ok())
    }
}

/// The numbers of the blobs of `all` that `keep` keeps.
fn blobs_where(all: &[Facts], keep: impl Fn(&Facts) -> bool) -> Vec<u32> {
    (0..u32::try_from(all.len()).unwrap_or(u32::MAX))
        .filter(|&b| keep(&all[b as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_interned_once_and_found_by_text_and_id() {
        let mut names = Names::default();
        let a = names.intern("alpha");
        let b = names.intern("beta");
        assert_eq!(names.intern("alpha"), a, "the same name, the same id");
        assert_ne!(a, b);
        assert_eq!(names.lookup("beta"), Some(b));
        assert_eq!(names.lookup("gamma"), None);
        assert_eq!(names.get(a), "alpha");
        assert_eq!(names.get(b), "beta");
        assert_eq!(names.get(99), "", "an unknown id");
        // Enough names for the table to grow and rehash them from their text.
        let ids: Vec<u32> = (0..5_000).map(|i| names.intern(&format!("n{i}"))).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(names.lookup(&format!("n{i}")), Some(*id));
        }
        assert_eq!(names.len(), 5_002);
        let sorted: Vec<String> = names
            .sorted()
            .iter()
            .map(|&id| names.get(id).into_owned())
            .collect();
        assert!(sorted.windows(2).all(|w| w[0] < w[1]), "in string order");
    }

    #[test]
    fn a_file_too_long_to_parse_keeps_its_words_but_no_symbols() {
        let mut extractor = Extractor::new();
        let short = "fn parse_header() {}\n";
        let raw = RawFacts::read("src/a.rs", short, &mut extractor);
        let (facts, words) = raw.split(&mut Names::default());
        assert!(facts.parsed && !facts.defs.is_empty());
        assert!(!words.is_empty());
        let long = short.repeat(MAX_PARSE_BYTES / short.len() + 1);
        let raw = RawFacts::read("src/a.rs", &long, &mut extractor);
        let (facts, words) = raw.split(&mut Names::default());
        assert!(!facts.parsed && facts.defs.is_empty());
        assert!(words.iter().any(|(w, _)| w == "header"), "{words:?}");
    }
}
