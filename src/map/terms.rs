//! Words of requests, paths and files as the map compares them: identifiers split at
//! `snake_case` and `camelCase` boundaries, lower-cased and stemmed (Snowball English), so
//! "parsing the config" meets `parse_config`, `ConfigParser` and `configs/parser.py`.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Words too common in requests and prose to say anything about a file.
const STOPWORDS: &[&str] = &[
    "a", "about", "actually", "after", "against", "all", "already", "also", "although", "am", "an",
    "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "both", "but",
    "by", "can", "could", "did", "do", "does", "doesn", "doing", "don", "during", "each", "eg",
    "etc", "even", "few", "for", "from", "further", "get", "had", "has", "have", "having", "he",
    "her", "here", "hers", "herself", "him", "himself", "his", "how", "however", "i", "ie", "if",
    "in", "into", "is", "it", "its", "itself", "just", "let", "like", "look", "looks", "make",
    "may", "maybe", "me", "more", "most", "much", "must", "my", "myself", "need", "no", "nor",
    "not", "now", "of", "on", "one", "only", "or", "other", "our", "ours", "out", "over", "own",
    "perhaps", "probably", "really", "same", "she", "should", "simply", "since", "so", "some",
    "still", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these",
    "they", "this", "those", "though", "through", "thus", "to", "too", "unless", "until", "up",
    "upon", "us", "use", "used", "using", "very", "via", "want", "wanted", "wants", "was", "we",
    "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "why", "will",
    "with", "would", "yet", "you", "your", "yours", "yourself",
];

/// Request words that describe the change rather than the code it is about.
const CHANGE_WORDS: &[&str] = &[
    "add",
    "added",
    "adds",
    "adding",
    "allow",
    "allows",
    "bug",
    "change",
    "changes",
    "correct",
    "correctly",
    "ensure",
    "fix",
    "fixed",
    "fixes",
    "fixing",
    "handle",
    "implement",
    "improve",
    "instead",
    "issue",
    "make",
    "makes",
    "properly",
    "remove",
    "removed",
    "removes",
    "support",
    "supports",
    "update",
    "updated",
    "updates",
    "work",
    "works",
    "please",
];

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Whether `w` (lower case) carries no meaning on its own.
pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// Whether `w` (lower case) only says what kind of change a request wants.
pub fn is_change_word(w: &str) -> bool {
    CHANGE_WORDS.contains(&w)
}

/// Maximal runs of letters, digits and `_`: the identifiers and words of a text.
pub fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The parts of an identifier: `parse_HTTPResponse2` gives `parse`, `HTTP`, `Response`, `2`.
pub fn split_identifier(ident: &str) -> Vec<&str> {
    identifier_parts(ident).collect()
}

/// [`split_identifier`]'s parts one by one, found as they are asked for: a ranking asks
/// whether each of the names it meets has more than one, tens of thousands a request.
pub fn identifier_parts(ident: &str) -> impl Iterator<Item = &str> {
    ident
        .split('_')
        .filter(|c| !c.is_empty())
        .flat_map(chunk_parts)
}

/// The parts of one non-empty run of an identifier between underscores: a part starts at a
/// lower-case letter followed by an upper-case one (`getUser`), at the last of several
/// capitals before a lower-case letter (`XMLParser`), and where letters and digits meet.
fn chunk_parts(chunk: &str) -> impl Iterator<Item = &str> {
    let mut chars = chunk.char_indices().peekable();
    let mut prev: Option<char> = None;
    let mut start = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        while let Some((at, c)) = chars.next() {
            let next_lower = chars.peek().is_some_and(|(_, n)| n.is_lowercase());
            let Some(prev) = prev.replace(c) else {
                continue;
            };
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic());
            if boundary {
                let part = &chunk[start..at];
                start = at;
                return Some(part);
            }
        }
        done = true;
        Some(&chunk[start..])
    })
}

/// The stem of one lower-case word.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// Whether a lower-case part is worth indexing: not a stopword, not a bare number, not one
/// letter.
fn meaningful(part: &str) -> bool {
    part.chars().count() >= 2 && !part.chars().all(|c| c.is_ascii_digit()) && !is_stopword(part)
}

/// The terms of a text, each occurrence once, in order: the stems of every identifier's
/// parts, and the whole identifier lower-cased when it has several parts (so an exact
/// `parse_config` scores above `parse` and `config` apart). Feeds the per-file counts.
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    let mut buf = String::new();
    for ident in identifiers(text) {
        if ident.len() > 64 {
            continue;
        }
        let parts = split_identifier(ident);
        if parts.len() > 1 {
            buf.clear();
            buf.extend(
                ident
                    .chars()
                    .filter(|c| *c != '_')
                    .flat_map(char::to_lowercase),
            );
            if buf.len() >= 3 {
                f(&buf);
            }
        }
        for p in parts {
            let lower = p.to_lowercase();
            if meaningful(&lower) {
                f(&stem(&lower));
            }
        }
    }
}

/// [`for_each_term`] for a text where only terms starting like one of `prefixes` (the first
/// three letters of the wanted terms) matter: other words are not stemmed at all, which makes
/// matching 100,000 paths against a request cheap.
pub fn for_each_term_like(text: &str, prefixes: &[String], mut f: impl FnMut(&str)) {
    let close = |lower: &str| prefixes.iter().any(|p| lower.starts_with(p.as_str()));
    for ident in identifiers(text) {
        if ident.len() > 64 {
            continue;
        }
        let parts = split_identifier(ident);
        for p in &parts {
            let lower = p.to_lowercase();
            if meaningful(&lower) && close(&lower) {
                f(&stem(&lower));
            }
        }
        if parts.len() > 1 {
            let whole: String = ident
                .chars()
                .filter(|c| *c != '_')
                .flat_map(char::to_lowercase)
                .collect();
            if whole.len() >= 3 && close(&whole) {
                f(&whole);
            }
        }
    }
}

/// The first three characters of each term (all of a shorter one).
pub fn prefixes(terms: &[String]) -> Vec<String> {
    let mut out: Vec<String> = terms.iter().map(|t| t.chars().take(3).collect()).collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `text` could hold a word [`for_each_term_like`] passes for `prefixes`: one of them
/// occurs in it, case and underscores aside. A cheap test before splitting and stemming (a
/// project has tens of thousands of file names; a request matches few).
pub fn may_hold_prefix(text: &str, prefixes: &[String]) -> bool {
    if !text.is_ascii() {
        return true;
    }
    if !text.contains('_') {
        // Folding only lowers the case: compared as it is, with no copy.
        let hay = text.as_bytes();
        return prefixes.iter().any(|p| {
            let p = p.as_bytes();
            p.is_empty()
                || hay
                    .windows(p.len())
                    .any(|w| w[0].to_ascii_lowercase() == p[0] && lower_is(w, p))
        });
    }
    without_underscores(text, u8::to_ascii_lowercase, |folded| {
        prefixes
            .iter()
            .any(|p| p.is_empty() || folded.windows(p.len()).any(|w| w == p.as_bytes()))
    })
}

/// `f` of `text`'s bytes with its underscores left out and the others mapped by `map`: on the
/// stack for a name up to 128 bytes (the test runs for every file name), else in a copy.
fn without_underscores<R>(text: &str, map: impl Fn(&u8) -> u8, f: impl FnOnce(&[u8]) -> R) -> R {
    const SHORT: usize = 128;
    let kept = text.bytes().filter(|b| *b != b'_').map(|b| map(&b));
    if text.len() > SHORT {
        return f(&kept.collect::<Vec<u8>>());
    }
    let mut short = [0u8; SHORT];
    let mut n = 0;
    for (slot, b) in short.iter_mut().zip(kept) {
        *slot = b;
        n += 1;
    }
    f(&short[..n])
}

/// The wanted terms' prefixes, with the pairs of bytes they start with: most names of a big
/// project hold none of those pairs, which one pass over a name's bytes finds (testing each
/// prefix in turn passes over the name once per prefix, for every file of the project).
#[derive(Debug, Clone, Default)]
pub struct Prefixes {
    list: Vec<String>,
    /// A bit per pair of bytes some prefix starts with, in any case (`None` when a prefix is
    /// shorter than two bytes: any name may then hold one).
    pairs: Option<Box<Pairs>>,
    /// The prefixes that can occur in a folded name (none is empty, none holds an ASCII
    /// capital), found in one pass over a name whatever their number: a long request has
    /// dozens, and a name holding one of their first pairs was tested against each in turn.
    /// `None` when one is empty (every name holds it) or the automaton cannot be built.
    finder: Option<aho_corasick::AhoCorasick>,
}

impl Prefixes {
    /// The [`prefixes`] of `terms`.
    pub fn of(terms: &[String]) -> Self {
        let list = prefixes(terms);
        let mut pairs = Box::new([0u64; 1 << 10]);
        let mut whole = true;
        for p in &list {
            match p.as_bytes() {
                [a, b, ..] => {
                    // In every case, so that a name is tested as it is, not lowered first.
                    for a in [a.to_ascii_lowercase(), a.to_ascii_uppercase()] {
                        for b in [b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
                            let k = pair(a, b);
                            pairs[k >> 6] |= 1 << (k & 63);
                        }
                    }
                }
                _ => whole = false,
            }
        }
        let finder = if list.iter().any(String::is_empty) {
            None
        } else {
            // A prefix with a capital never equals a lowered window of a name.
            let can_occur = list
                .iter()
                .filter(|p| !p.bytes().any(|b| b.is_ascii_uppercase()));
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(can_occur)
                .ok()
        };
        Prefixes {
            list,
            pairs: whole.then_some(pairs),
            finder,
        }
    }

    /// The prefixes.
    pub fn list(&self) -> &[String] {
        &self.list
    }

    /// [`may_hold_prefix`] for these prefixes: false for every name in which none occurs.
    pub fn may_hold(&self, text: &str) -> bool {
        if let Some(pairs) = &self.pairs
            && !holds_pair(text, pairs)
        {
            return false;
        }
        let Some(finder) = self.finder.as_ref().filter(|_| text.is_ascii()) else {
            return may_hold_prefix(text, &self.list);
        };
        if !text.contains('_') {
            return finder.is_match(text);
        }
        // Folded as [`may_hold_prefix`] folds it, but for the case the automaton ignores.
        without_underscores(text, |b| *b, |folded| finder.is_match(folded))
    }
}

/// A bit per pair of bytes.
type Pairs = [u64; 1 << 10];

/// A pair of bytes as a bit number.
fn pair(a: u8, b: u8) -> usize {
    usize::from(a) << 8 | usize::from(b)
}

/// Whether `pairs` holds bit `k` (below 65,536: the table's size, so no bounds are checked).
fn has(pairs: &Pairs, k: usize) -> bool {
    pairs[(k >> 6) & 1023] & (1 << (k & 63)) != 0
}

/// Whether `text`, lowered with its underscores left out (as [`may_hold_prefix`] folds it),
/// holds one of `pairs`; true for any text that is not ASCII (it is not folded so simply).
fn holds_pair(text: &str, pairs: &Pairs) -> bool {
    let b = text.as_bytes();
    if !b.iter().any(|&c| !c.is_ascii() || c == b'_') {
        // Most names: nothing to fold (the table holds every case), and every pair tested on
        // its own (no byte depends on the one before, as skipping underscores makes it).
        return b.windows(2).any(|w| has(pairs, pair(w[0], w[1])));
    }
    let mut prev: Option<u8> = None;
    for &b in b {
        if !b.is_ascii() {
            return true;
        }
        if b == b'_' {
            continue;
        }
        let c = b.to_ascii_lowercase();
        if let Some(p) = prev
            && has(pairs, pair(p, c))
        {
            return true;
        }
        prev = Some(c);
    }
    false
}

/// Whether `w` lowered is `p` (byte for byte: `p` may hold capitals no lowered text has).
fn lower_is(w: &[u8], p: &[u8]) -> bool {
    w.iter().map(u8::to_ascii_lowercase).eq(p.iter().copied())
}

/// The distinct terms of a text, sorted.
pub fn term_set(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for_each_term(text, |t| {
        out.insert(t.to_string());
    });
    out
}

/// What a request asks about, as the ranker uses it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Distinct terms (stemmed parts and whole multi-part identifiers), change words left out.
    pub terms: Vec<String>,
    /// Identifiers written as code (`snake_case`, `camelCase`, `Dotted.name`, backticked, or
    /// followed by `()`): matched exactly against definitions.
    pub idents: Vec<String>,
    /// Whether the request is about tests (so test files are not ranked down).
    pub about_tests: bool,
    /// Whether the request is about documentation or examples.
    pub about_docs: bool,
    /// The components a commit-style prefix names (`resources: ...`, `fix(client): ...`,
    /// `ext/web: ...`), each as its lower-case path segments.
    pub components: Vec<Vec<String>>,
}

impl Query {
    /// Read a request.
    pub fn parse(request: &str) -> Query {
        let mut terms = BTreeSet::new();
        for_each_term(request, |t| {
            if !is_change_word(t) {
                terms.insert(t.to_string());
            }
        });
        // Change words are dropped unstemmed too ("fixes" stems to "fix").
        terms.retain(|t| !is_change_word(t));
        let lower = request.to_lowercase();
        let words: BTreeSet<&str> = identifiers(&lower).collect();
        let any = |list: &[&str]| list.iter().any(|w| words.contains(w));
        Query {
            terms: terms.into_iter().collect(),
            idents: code_identifiers(request),
            about_tests: any(&[
                "test", "tests", "testing", "spec", "specs", "fixture", "fixtures",
            ]),
            about_docs: any(&[
                "doc",
                "docs",
                "documentation",
                "readme",
                "example",
                "examples",
                "tutorial",
                "guide",
            ]),
            components: components(request),
        }
    }
}

/// Words a commit-style prefix uses for the kind of change, not for where it is
/// (`fix: ...`, `feat(client): ...`).
const CHANGE_KINDS: &[&str] = &[
    "build", "bugfix", "chore", "ci", "cleanup", "deps", "doc", "docs", "feat", "feature", "fix",
    "fixes", "hotfix", "patch", "perf", "polish", "refactor", "release", "revert", "style", "test",
    "tests", "wip",
];

/// The components a request's commit-style prefix names: the scope of `kind(scope): ...`
/// (several with `,` or `+`), or the paths before the colon of `a/b, c: ...`, unless they
/// only say what kind of change it is. Each is its lower-case path segments.
fn components(request: &str) -> Vec<Vec<String>> {
    let request = request.trim_start();
    let is_path_char = |c: char| c.is_alphanumeric() || "_./-".contains(c);
    let head_len = request
        .find(|c: char| !(is_path_char(c) || c == ',' || c == ' '))
        .unwrap_or(request.len());
    let (head, rest) = request.split_at(head_len);
    // A head of words with spaces is a sentence that happens to hold a colon.
    let head_ok = head
        .split(',')
        .all(|t| !t.trim().is_empty() && !t.trim().contains(' '));
    if !head_ok {
        return Vec::new();
    }
    let (named, rest) = match rest.strip_prefix('(') {
        Some(scoped) => match scoped.split_once(')') {
            Some((scope, after)) => (scope, after),
            None => return Vec::new(),
        },
        None => (head, rest),
    };
    let rest = rest.strip_prefix('!').unwrap_or(rest);
    let ends = rest
        .strip_prefix(':')
        .is_some_and(|after| after.is_empty() || after.starts_with(char::is_whitespace));
    if !ends {
        return Vec::new();
    }
    named
        .split([',', '+', ' '])
        .map(str::trim)
        .filter(|c| !c.is_empty() && c.chars().all(is_path_char))
        .filter(|c| !CHANGE_KINDS.contains(&c.to_lowercase().as_str()))
        .map(|c| {
            c.split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_lowercase)
                .collect::<Vec<String>>()
        })
        .filter(|segments| !segments.is_empty() && segments.iter().all(|s| s.len() >= 2))
        .collect()
}

/// Identifiers the request writes as code: with an inner `_` or a lower-to-upper case change,
/// inside backticks, or before `(`. Plain words are not identifiers.
fn code_identifiers(request: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let backticked: Vec<&str> = request.split('`').skip(1).step_by(2).collect();
    for chunk in &backticked {
        for id in identifiers(chunk) {
            if id.len() >= 3 {
                out.insert(id.to_string());
            }
        }
    }
    for id in identifiers(request) {
        let parts = split_identifier(id);
        let has_inner_underscore = id.trim_matches('_').contains('_');
        let camel = parts.len() > 1 && !has_inner_underscore;
        let called = request
            .match_indices(id)
            .any(|(at, _)| request[at + id.len()..].starts_with('('));
        if id.len() >= 3 && (has_inner_underscore || camel || called) {
            out.insert(id.to_string());
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_style_prefix_names_its_components() {
        let of =
            |r: &str| -> Vec<String> { components(r).into_iter().map(|c| c.join("/")).collect() };
        for (request, named) in [
            ("resources: Remove debug statement", vec!["resources"]),
            (
                "markup/goldmark: Change the default",
                vec!["markup/goldmark"],
            ),
            ("fix(ext/node): `fs.read` compat", vec!["ext/node"]),
            ("fix(client+server): records", vec!["client", "server"]),
            ("fix(fastify adapter): parsers", vec!["fastify", "adapter"]),
            ("feat(server)!: breaking", vec!["server"]),
            ("cmd, caddyhttp: log the address", vec!["cmd", "caddyhttp"]),
            ("  Printer: trailing", vec!["printer"]),
            ("./src/: odd", vec!["src"]),
        ] {
            assert_eq!(of(request), named, "{request}");
        }
        for request in [
            "fix: the kind only",
            "Docs: the kind only",
            "feat(fix): a kind for a scope",
            "Fix nilpointer on ToC heading",
            "Improve error logging by logging the error. Improved logging: full",
            "see https://example.com: a link",
            "fix(unclosed: scope",
            "note:no space after the colon",
            "a: one letter",
            "",
        ] {
            assert_eq!(of(request), Vec::<String>::new(), "{request}");
        }
    }

    #[test]
    fn a_name_holds_a_prefix_whatever_its_case_and_underscores() {
        let prefixes = prefixes(&["parser".to_string(), "invoic".to_string()]);
        for (name, holds) in [
            ("parser.py", true),
            ("Parser.java", true),
            ("JSONPARSER.ts", true),
            ("pa_rser.rs", true),
            ("in_voice.py", true),
            ("part0", true),
            ("file000.py", false),
            ("pa.rser", false),
            ("p", false),
            ("", false),
        ] {
            assert_eq!(may_hold_prefix(name, &prefixes), holds, "{name}");
        }
        assert!(may_hold_prefix("café.py", &prefixes), "not ASCII: kept");
        assert!(
            may_hold_prefix("x", &[String::new()]),
            "an empty prefix is in every name"
        );
    }
    use crate::map::terms;

    proptest::proptest! {
        /// The automaton answers as testing each prefix in turn does, whatever the terms (of
        /// any case, with digits, underscores, letters that are not ASCII, empty) and names
        /// (long ones folded off the stack, underscores, capitals).
        #[test]
        fn the_prefix_automaton_answers_as_each_prefix_in_turn(
            terms in proptest::collection::vec("[a-cA-C0-9_\\u{e9}]{0,5}", 0..12),
            name in "[a-cA-C0-9_.\\u{e9}]{0,140}",
        ) {
            let p = Prefixes::of(&terms);
            let one_by_one = Prefixes { finder: None, ..p.clone() };
            proptest::prop_assert_eq!(p.may_hold(&name), one_by_one.may_hold(&name));
            let expected = p.pairs.as_ref().is_none_or(|pairs| holds_pair(&name, pairs))
                && may_hold_prefix(&name, p.list());
            proptest::prop_assert_eq!(p.may_hold(&name), expected);
        }
    }

    #[test]
    fn the_pairs_test_turns_away_only_names_the_full_test_does() {
        let terms = ["parser", "invoic", "ab", "ré", "x"].map(String::from);
        for wanted in [&terms[..2], &terms[..3], &terms[2..4], &terms[..]] {
            let p = Prefixes::of(wanted);
            for name in [
                "parser.py",
                "Parser.java",
                "JSONPARSER.ts",
                "pa_rser.rs",
                "in_voice.py",
                "IN__VOICE",
                "part0",
                "file000.py",
                "pa.rser",
                "a_b.c",
                "AB",
                "p",
                "",
                "café.py",
                "rébus",
                "x.rs",
            ] {
                assert_eq!(
                    p.may_hold(name),
                    may_hold_prefix(name, p.list()),
                    "{name} for {wanted:?}"
                );
            }
        }
    }

    #[test]
    fn the_prefix_test_never_drops_a_word_the_full_test_keeps() {
        let prefixes = prefixes(&["render".to_string(), "ledger".to_string()]);
        for text in [
            "mod_000123.py",
            "LedgerView.tsx",
            "re_nder.py",
            "x_Rend.go",
            "ünï_rend",
        ] {
            let mut found = false;
            for_each_term_like(text, &prefixes, |_| found = true);
            assert!(!found || may_hold_prefix(text, &prefixes), "{text}");
        }
        assert!(!may_hold_prefix("mod_000123.py", &prefixes));
        assert!(may_hold_prefix("LedgerView.tsx", &prefixes));
    }

    #[test]
    fn identifiers_split_at_case_and_underscores() {
        assert_eq!(
            split_identifier("parse_HTTPResponse2"),
            ["parse", "HTTP", "Response", "2"]
        );
        assert_eq!(split_identifier("getUserName"), ["get", "User", "Name"]);
        assert_eq!(split_identifier("__init__"), ["init"]);
        assert_eq!(split_identifier("XMLParser"), ["XML", "Parser"]);
    }

    /// The parts as the first implementation found them, all at once: the oracle for the
    /// lazy one.
    fn split_identifier_at_once(ident: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        for chunk in ident.split('_').filter(|c| !c.is_empty()) {
            let chars: Vec<(usize, char)> = chunk.char_indices().collect();
            let mut start = 0;
            for i in 1..chars.len() {
                let (at, c) = chars[i];
                let prev = chars[i - 1].1;
                let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
                let boundary = (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                    || (prev.is_alphabetic() && c.is_ascii_digit())
                    || (prev.is_ascii_digit() && c.is_alphabetic());
                if boundary {
                    parts.push(&chunk[start..at]);
                    start = at;
                }
            }
            parts.push(&chunk[start..]);
        }
        parts
    }

    proptest::proptest! {
        #[test]
        fn identifier_parts_are_the_parts_found_at_once(
            ident in "[a-zA-Z0-9_\\u{e9}\\u{c9}\\u{3b1}\\u{391}\\u{4e2d}\\u{661}]{0,24}"
        ) {
            proptest::prop_assert_eq!(split_identifier(&ident), split_identifier_at_once(&ident));
            proptest::prop_assert_eq!(
                identifier_parts(&ident).nth(1).is_some(),
                split_identifier_at_once(&ident).len() > 1
            );
        }
    }

    #[test]
    fn terms_are_stemmed_and_keep_whole_identifiers() {
        let t = term_set("fn parse_configs(parsing: Config)");
        // "parse", "parsing" and "parser" share a stem; "configs" meets "config".
        assert_eq!(terms::stem("parsing"), terms::stem("parse"));
        assert!(t.contains(&terms::stem("parse")), "{t:?}");
        assert!(t.contains("parseconfigs"), "{t:?}");
        assert!(t.contains("config"), "{t:?}");
    }

    #[test]
    fn a_request_drops_change_words_and_finds_code() {
        let q = Query::parse("Fix crash in `load_settings` when parseConfig() gets an empty file");
        assert!(!q.terms.iter().any(|t| t == "fix"), "{:?}", q.terms);
        assert!(q.terms.iter().any(|t| t == "crash"), "{:?}", q.terms);
        assert_eq!(q.idents, ["load_settings", "parseConfig"]);
        assert!(!q.about_tests);
        assert!(Query::parse("add a test for the parser").about_tests);
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }
}
