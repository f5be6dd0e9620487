//! Files a request names: by project-relative path, or by file name when that picks one file
//! — or, when several files share the name (`mod.rs`, `utils.py`), the ones whose folders the
//! request also mentions. Found by lookup in the whole file list, whatever the project's size.

use std::collections::HashMap;

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Whether `request` mentions `needle` as a whole word-like token (so `main.py` does not match
/// `domain.py`, nor `main.python`).
pub fn mentions(request: &str, needle: &str) -> bool {
    if needle.len() < 3 {
        return false;
    }
    let mut start = 0;
    while let Some(pos) = request[start..].find(needle) {
        let at = start + pos;
        let before = request[..at].chars().next_back();
        let rest = &request[at + needle.len()..];
        let after = rest.chars().next();
        let boundary_before = before.is_none_or(|c| !is_word_char(c) && c != '.' && c != '/');
        let continues_name =
            matches!(after, Some('.') if rest[1..].starts_with(|c: char| c.is_alphanumeric()));
        let boundary_after = after.is_none_or(|c| !is_word_char(c) && c != '/') && !continues_name;
        if boundary_before && boundary_after {
            return true;
        }
        start = at + needle.len();
    }
    false
}

/// The pairs of adjacent bytes in a request, as bits: a name none of whose pairs is missing
/// from the request may occur in it. Most of a big project's names have a pair the request
/// lacks, found within their first few bytes, without hashing the name or searching.
pub struct Pairs {
    bits: Vec<u64>,
    bytes: [bool; 256],
}

impl Pairs {
    /// The pairs of `request`.
    pub fn of(request: &str) -> Self {
        let mut pairs = Pairs {
            bits: vec![0; 1 << 10],
            bytes: [false; 256],
        };
        let r = request.as_bytes();
        for w in r.windows(2) {
            let k = usize::from(w[0]) << 8 | usize::from(w[1]);
            pairs.bits[k >> 6] |= 1 << (k & 63);
        }
        for &b in r {
            pairs.bytes[usize::from(b)] = true;
        }
        pairs
    }

    /// False when `name` cannot occur in the request.
    pub fn may_hold(&self, name: &str) -> bool {
        let n = name.as_bytes();
        if n.len() < 2 {
            return n.iter().all(|&b| self.bytes[usize::from(b)]);
        }
        n.windows(2).all(|w| {
            let k = usize::from(w[0]) << 8 | usize::from(w[1]);
            self.bits[k >> 6] & (1 << (k & 63)) != 0
        })
    }
}

/// Files the request names, in the order of `files`: exact paths first, then file names.
pub fn named_files<S: AsRef<str>>(request: &str, files: &[S]) -> Vec<String> {
    named_in(request, files.iter().map(AsRef::as_ref))
}

/// [`named_files`] over any list of paths.
pub fn named_in<'a>(request: &str, files: impl Iterator<Item = &'a str>) -> Vec<String> {
    // A file's path or name can be mentioned only if its name is in the request at all: that
    // test, made once per distinct name that passes the pairs' test, spares the rest of the
    // work for nearly every file of a big project.
    let pairs = Pairs::of(request);
    let mut present: HashMap<&str, bool> = HashMap::new();
    let mut found: Vec<String> = Vec::new();
    let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
    for f in files {
        let name = f.rsplit_once('/').map_or(f, |(_, name)| name);
        if !pairs.may_hold(name) {
            continue;
        }
        if !*present
            .entry(name)
            .or_insert_with(|| request.contains(name))
        {
            continue;
        }
        if mentions(request, f) {
            found.push(f.to_string());
        }
        by_name.entry(name).or_default().push(f);
    }
    let mut names: Vec<(&str, Vec<&str>)> = by_name
        .into_iter()
        .filter(|(name, _)| mentions(request, name))
        .collect();
    names.sort();
    for (_, candidates) in names {
        for f in pick(request, &candidates) {
            if !found.iter().any(|x| x == f) {
                found.push(f.to_string());
            }
        }
    }
    found
}

/// Of the files sharing a mentioned name, the one alone, or those whose folders the request
/// mentions most (none when it mentions none of them: guessing would be worse).
fn pick<'a>(request: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    if candidates.len() == 1 {
        return candidates.to_vec();
    }
    let score = |f: &str| {
        let dirs: Vec<&str> = f.split('/').collect();
        dirs[..dirs.len() - 1]
            .iter()
            .filter(|d| mentions(request, d))
            .count()
    };
    let best = candidates.iter().map(|f| score(f)).max().unwrap_or(0);
    if best == 0 {
        return Vec::new();
    }
    candidates
        .iter()
        .filter(|f| score(f) == best)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_the_request_holds_passes_the_pairs_test() {
        let request = "fix src/Parser.py, then a.b and x";
        let pairs = Pairs::of(request);
        for start in 0..request.len() {
            for end in start + 1..=request.len() {
                assert!(
                    pairs.may_hold(&request[start..end]),
                    "{}",
                    &request[start..end]
                );
            }
        }
        for name in ["parser.py", "file000.py", "z", "Parser.pyc"] {
            assert!(!pairs.may_hold(name), "{name}");
        }
    }

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_are_matched_as_words() {
        let files = list(&["main.py", "domain.py", "src/util.rs"]);
        assert_eq!(named_files("run main.py and fix it", &files), ["main.py"]);
        assert_eq!(named_files("fix util.rs please", &files), ["src/util.rs"]);
        assert!(named_files("the main.python file", &files).is_empty());
    }

    #[test]
    fn shared_names_are_resolved_by_the_folders_the_request_gives() {
        let files = list(&[
            "src/agent/mod.rs",
            "src/map/mod.rs",
            "a/utils.py",
            "b/utils.py",
        ]);
        assert_eq!(
            named_files("in the map module, mod.rs needs a doc", &files),
            ["src/map/mod.rs"]
        );
        assert!(named_files("fix utils.py", &files).is_empty());
        assert_eq!(named_files("fix b/utils.py", &files), ["b/utils.py"]);
    }
}
