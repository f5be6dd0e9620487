//! What the map knows of one file version (one blob): its definitions, the names it refers
//! to, and how often each term occurs in it. Names and terms are numbers into one [`Names`]
//! table, so the cache stays small and the ranker compares integers.

use std::collections::HashMap;

use super::symbols::{DefKind, Extractor, FileSymbols, Lang};
use super::terms;

/// Distinct terms kept per file: the most frequent ones (a generated file with 50,000
/// distinct words would otherwise dominate the cache).
const MAX_TERMS: usize = 4_000;

/// Interned strings: identifiers (case kept) and terms (lower case, stemmed).
///
/// A warm map loads tens of thousands of names and interns a few new ones: building a hash
/// table of every name for that would cost more than the rest of the map, so the names the
/// cache stored are found by binary search in `sorted` (their ids in string order, written
/// with the cache), and only names added since are in the hash table.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Names {
    /// Every name, one after another (one allocation to load, not one per name).
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<u32>,
    /// Ids of the names in string order, as of the last [`Names::reindex`].
    sorted: Vec<u32>,
    /// Names added since the last [`Names::reindex`].
    #[serde(skip)]
    added: HashMap<String, u32>,
}

impl Names {
    /// The id of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.lookup(s) {
            return id;
        }
        let id = u32::try_from(self.ends.len()).unwrap_or(u32::MAX);
        self.text.push_str(s);
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        self.added.insert(s.to_string(), id);
        id
    }

    /// The id of `s`, when known.
    pub fn lookup(&self, s: &str) -> Option<u32> {
        if let Some(&id) = self.added.get(s) {
            return Some(id);
        }
        self.sorted
            .binary_search_by(|&id| self.get(id).cmp(s))
            .ok()
            .and_then(|k| self.sorted.get(k).copied())
    }

    /// Sort the index over every name (before the names are stored).
    pub fn reindex(&mut self) {
        let mut sorted: Vec<u32> =
            (0..u32::try_from(self.ends.len()).unwrap_or(u32::MAX)).collect();
        sorted.sort_unstable_by(|&a, &b| self.get(a).cmp(self.get(b)));
        self.sorted = sorted;
        self.added.clear();
    }

    /// Whether the stored names are whole (every name a slice of `text` on character
    /// boundaries) and the index covers each exactly once, in order. A cache whose names are
    /// not whole is dropped; one whose index is not is reindexed.
    pub fn is_whole(&self) -> bool {
        let mut start = 0usize;
        self.ends.iter().all(|&end| {
            let end = end as usize;
            let ok = start <= end && self.text.get(start..end).is_some();
            start = end;
            ok
        }) && start == self.text.len()
    }

    /// Whether the index covers every name exactly once, in string order.
    pub fn index_is_sound(&self) -> bool {
        self.sorted.len() == self.ends.len()
            && self
                .sorted
                .iter()
                .all(|&id| (id as usize) < self.ends.len())
            && self
                .sorted
                .windows(2)
                .all(|w| self.get(w[0]) < self.get(w[1]))
    }

    /// The string of `id` (empty for an unknown id).
    pub fn get(&self, id: u32) -> &str {
        let i = id as usize;
        let Some(&end) = self.ends.get(i) else {
            return "";
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.text.get(start..end as usize).unwrap_or("")
    }

    /// How many names there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The ids of those of `wanted` that are known.
    pub fn find_all(&self, wanted: &[&str]) -> HashMap<String, u32> {
        wanted
            .iter()
            .filter_map(|w| Some((w.to_string(), self.lookup(w)?)))
            .collect()
    }
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
    /// Read `text` (of a file at `path`): its symbols when the language is known, its terms
    /// always.
    pub fn read(path: &str, text: &str, extractor: &mut Extractor) -> RawFacts {
        let (symbols, parsed) = match Lang::from_path(path) {
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
