//! What a request's ranking needs from the files' paths alone: the request's words in each
//! path, which files are tests or docs, the folders the files
//! come in, and whether the paths are in byte order already. None of it needs the cache or
//! git, so it is worked out while git's index is read (a warm map's main thread would
//! otherwise wait for it), in one pass over the paths, and the ranking's passes over every
//! file are left with the files' facts.

use std::collections::HashMap;

use super::files::PathList;
use super::terms::{self, Prefixes, Query};
use super::{named, order};

/// The test bit of [`PathFacts::minor`].
pub const TEST: u8 = 1;
/// The doc-or-example bit of [`PathFacts::minor`].
pub const DOC: u8 = 2;
/// The vendored-code bit of [`PathFacts::minor`]: a file in a folder of third-party code.
pub const VENDORED: u8 = 4;

/// The request's words in one file's path: the file, the term, and whether the file's own
/// name holds it (folders' words first, as a reader meets them). Eight bytes: a word in every
/// path has a hit per file.
pub type PathHit = (u32, u16, bool);

/// What the paths tell, for one request.
#[derive(Debug, Default)]
pub struct PathFacts<'p> {
    /// Per file, [`TEST`], [`DOC`] and [`VENDORED`].
    pub minor: Vec<u8>,
    /// The runs of files in one folder: the folder (`""` at the root) and where its run
    /// starts; each run ends where the next starts (a folder whose files come in several runs
    /// has several).
    pub runs: Vec<(&'p str, usize)>,
    /// The request's terms in the paths.
    pub hits: Vec<PathHit>,
    /// Per query term, how many paths hold it.
    pub df: Vec<f32>,
    /// The files in path (byte) order, when their own order is another (a listing puts a
    /// folder's subfolders before its files): the order the ranking lists the files nothing
    /// matched in, sorted here rather than after the scores.
    pub by_path: Option<Vec<u32>>,
    /// How many paths.
    pub len: usize,
    /// Paths whose names may occur in the request (see [`PathFacts::of`]), in order.
    pub may_be_named: Vec<&'p str>,
}

impl<'p> PathFacts<'p> {
    /// Read `paths` (every file, in the map's order) for `query`.
    /// With `named`, the paths whose names may occur in a request (those whose adjacent
    /// bytes all do) are kept in [`PathFacts::may_be_named`].
    pub fn of(
        paths: &'p (impl PathList + ?Sized),
        query: &Query,
        named: Option<&named::Pairs>,
    ) -> Self {
        let len = paths.count();
        let mut out = PathFacts {
            df: vec![0.0; query.terms.len()],
            minor: Vec::with_capacity(len),
            len,
            ..PathFacts::default()
        };
        let mut words = PathWords::new(query);
        let mut minor = MinorPaths::default();
        // The folder of the files now: its path, its words, what kind of files it holds.
        let mut folder: (&str, Vec<u16>, FolderKind) = ("", Vec::new(), FolderKind::default());
        // Where each ascending run of paths starts: the listing is a few long ones.
        let mut runs: Vec<usize> = Vec::new();
        let mut last = ("", "");
        for i in 0..len {
            let path = paths.path(i);
            let (dir, name) = split_dir(path);
            let same_folder = i > 0 && folder.0 == dir;
            // In one folder, the names alone order the paths.
            if i == 0 || (same_folder && name < last.1) || (!same_folder && path < last.0) {
                runs.push(i);
            }
            last = (path, name);
            if !same_folder {
                out.runs.push((dir, i));
                folder = (dir, words.of_folder(dir), minor.folder(dir));
            }
            out.minor.push(MinorPaths::file(folder.2, name));
            words.hits(i, &folder.1, name, &mut out.hits);
            if named.is_some_and(|p| p.may_hold(name)) {
                out.may_be_named.push(path);
            }
        }
        for &(_, k, _) in &out.hits {
            out.df[k as usize] += 1.0;
        }
        if runs.len() > 1 {
            out.by_path = Some(order::by_path(len, &runs, &|i| paths.path(i)));
        }
        out
    }

    /// The files of each folder run: the folder, and the first and past-the-last file.
    pub fn folders(&self) -> impl Iterator<Item = (&'p str, std::ops::Range<usize>)> + '_ {
        self.runs.iter().enumerate().map(|(k, &(dir, start))| {
            let end = self.runs.get(k + 1).map_or(self.len, |&(_, next)| next);
            (dir, start..end)
        })
    }
}

/// The request's terms in folder and file names: each distinct name that may hold one is
/// split once, and only words that could match are stemmed.
struct PathWords<'q, 'p> {
    index: HashMap<&'q str, u16>,
    prefixes: Prefixes,
    parts: HashMap<&'p str, Vec<u16>>,
}

impl<'q, 'p> PathWords<'q, 'p> {
    fn new(query: &'q Query) -> Self {
        PathWords {
            index: query
                .terms
                .iter()
                .enumerate()
                .map(|(k, t)| (t.as_str(), k as u16))
                .collect(),
            prefixes: Prefixes::of(&query.terms),
            parts: HashMap::new(),
        }
    }

    /// The terms in one folder or file name (borrowed from the table of names already split:
    /// a word in every path would otherwise copy a list for every file).
    fn of_part(&mut self, part: &'p str) -> &[u16] {
        // Most names hold no request word's prefix: they are turned away before hashing.
        if self.index.is_empty() || !self.prefixes.may_hold(part) {
            return &[];
        }
        let (index, prefixes) = (&self.index, &self.prefixes);
        self.parts.entry(part).or_insert_with(|| {
            let mut v: Vec<u16> = Vec::new();
            terms::for_each_term_like(part, prefixes.list(), |t| {
                if let Some(&k) = index.get(t)
                    && !v.contains(&k)
                {
                    v.push(k);
                }
            });
            v
        })
    }

    /// The terms in a folder's path, each once, in the order met.
    fn of_folder(&mut self, dir: &'p str) -> Vec<u16> {
        let mut ks: Vec<u16> = Vec::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            for &k in self.of_part(part) {
                if !ks.contains(&k) {
                    ks.push(k);
                }
            }
        }
        ks
    }

    /// The hits of file `i`, named `name`, in a folder whose terms are `in_folder`.
    fn hits(&mut self, i: usize, in_folder: &[u16], name: &'p str, out: &mut Vec<PathHit>) {
        let in_name = self.of_part(name);
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        for &k in in_folder {
            out.push((i, k, in_name.contains(&k)));
        }
        for &k in in_name.iter().filter(|k| !in_folder.contains(k)) {
            out.push((i, k, true));
        }
    }
}

/// Whether a path is a test, fixture, doc or example rather than source.
pub fn is_test_path(path: &str) -> bool {
    let (dir, name) = split_dir(path);
    dir.split('/').any(is_test_folder) || is_test_name(name)
}

/// Whether a path is documentation or an example.
pub fn is_doc_path(path: &str) -> bool {
    let (dir, name) = split_dir(path);
    dir.split('/').any(is_doc_folder) || is_doc_name(name)
}

/// Whether a path is in a folder of vendored third-party code (`vendor/`, `third_party/`,
/// `node_modules/`; the folders GitHub's linguist and Dependabot take for vendored code):
/// code the project carries but does not write, which a request changes only by naming it.
pub fn is_vendored_path(path: &str) -> bool {
    is_vendored_folder(split_dir(path).0)
}

fn is_vendored_folder(dir: &str) -> bool {
    // `deps/` is vendored only at the root (`deps/` under a package is often its own code).
    dir.split('/')
        .next()
        .is_some_and(|top| top.eq_ignore_ascii_case("deps"))
        || dir.split('/').any(|c| {
            is_one_of(
                c,
                &[
                    "vendor",
                    "vendors",
                    "vendored",
                    "third_party",
                    "third-party",
                    "thirdparty",
                    "3rd_party",
                    "3rd-party",
                    "3rdparty",
                    "extern",
                    "external",
                    "externals",
                    "node_modules",
                    "bower_components",
                ],
            )
        })
}

fn is_one_of(s: &str, list: &[&str]) -> bool {
    list.iter().any(|w| s.eq_ignore_ascii_case(w))
}

fn is_test_folder(c: &str) -> bool {
    is_one_of(
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
}

fn is_doc_folder(c: &str) -> bool {
    is_one_of(
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
}

/// Whether `name` holds "test" or "spec", case aside: every test name does, and most names
/// do not (a pass over the bytes, where the full test searches the name several times).
fn may_be_test_name(name: &str) -> bool {
    // One pass, the last four bytes in a word, case folded by one bit: of all bytes only the
    // letters' two cases fold to these letters, so this is "holds test or spec, in any case".
    const TEST: u32 = u32::from_be_bytes(*b"test");
    const SPEC: u32 = u32::from_be_bytes(*b"spec");
    let mut last4: u32 = 0;
    for (i, &c) in name.as_bytes().iter().enumerate() {
        last4 = (last4 << 8) | u32::from(c | 0x20);
        if i >= 3 && (last4 == TEST || last4 == SPEC) {
            return true;
        }
    }
    false
}

fn is_test_name(name: &str) -> bool {
    if !may_be_test_name(name) {
        return false;
    }
    let stem = name.split('.').next().unwrap_or(name);
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
    starts(stem, "test_")
        || ends(stem, "_test")
        || ends(stem, "_spec")
        || (ends(stem, "test") && ends(name, ".java"))
        || name.contains(".test.")
        || name.contains(".spec.")
}

fn is_doc_name(name: &str) -> bool {
    name.bytes()
        .rposition(|b| b == b'.')
        .and_then(|at| name.get(at + 1..))
        .is_some_and(|ext| is_one_of(ext, &["md", "rst", "txt", "adoc"]))
}

/// What a folder's path says of the files in it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FolderKind {
    test: bool,
    doc: bool,
    vendored: bool,
}

/// Test, doc or vendored for many paths, each folder judged once (a project has a few hundred
/// folders and tens of thousands of files, which come folder by folder: the last folder is
/// checked before the table).
#[derive(Default)]
pub(super) struct MinorPaths<'a> {
    folders: HashMap<&'a str, FolderKind>,
    last: Option<(&'a str, FolderKind)>,
}

impl<'a> MinorPaths<'a> {
    /// What the folder `dir` holds: tests, docs or examples, vendored code.
    pub(super) fn folder(&mut self, dir: &'a str) -> FolderKind {
        match self.last {
            Some((last, judged)) if last == dir => judged,
            _ => {
                let judged = *self.folders.entry(dir).or_insert_with(|| FolderKind {
                    test: dir.split('/').any(is_test_folder),
                    doc: dir.split('/').any(is_doc_folder),
                    vendored: is_vendored_folder(dir),
                });
                self.last = Some((dir, judged));
                judged
            }
        }
    }

    /// The [`TEST`], [`DOC`] and [`VENDORED`] bits of the file `name` in a folder judged
    /// `folder`.
    pub(super) fn file(folder: FolderKind, name: &str) -> u8 {
        let test = folder.test || is_test_name(name);
        let doc = folder.doc || is_doc_name(name);
        (u8::from(test) * TEST) | (u8::from(doc) * DOC) | (u8::from(folder.vendored) * VENDORED)
    }
}

/// A path's folder (`""` at the root) and file name: the last `/` found by a plain loop from
/// the end (a name is a few bytes; the general reverse search cost more than the rest of
/// the paths pass's work on a name).
pub(super) fn split_dir(path: &str) -> (&str, &str) {
    match path.bytes().rposition(|b| b == b'/') {
        Some(at) => {
            let (dir, name) = path.split_at(at);
            (dir, name.get(1..).unwrap_or_default())
        }
        None => ("", path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_quick_test_name_filter_is_a_case_blind_search_for_test_or_spec(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "test", "TeSt", "SPEC", "spec", "tes", "te", "t", "T", "s", "pe", "Sp", "c",
                    "ec", "e", "x", "_", ".", "@", "`", "\u{7f}", "é", "ŧ", "4", "-",
                ]),
                0..10,
            ),
        ) {
            let name = parts.concat();
            let lower = name.to_ascii_lowercase();
            prop_assert_eq!(
                may_be_test_name(&name),
                lower.contains("test") || lower.contains("spec"),
                "{:?}", name
            );
        }
    }

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

    #[test]
    fn vendored_folders_are_told_at_any_depth_and_in_any_case() {
        for p in [
            "vendor/github.com/a/b.go",
            "Vendor/x.rb",
            "extension/icu/third_party/icu/i18n/x.h",
            "lib/Third-Party/x.js",
            "src/3rdparty/zlib/deflate.c",
            "web/node_modules/react/index.js",
            "static/bower_components/jq/jq.js",
            "extern/glfw/src/x.c",
            "libs/externals/x.cpp",
            "deps/uv/src/unix/core.c",
        ] {
            assert!(is_vendored_path(p), "{p}");
        }
        for p in [
            "vendor.go",
            "src/vendoring.rs",
            "src/vendor_api/x.py",
            "src/external_api.py",
            "pkg/deps/resolve.go",
            "src/third/party.c",
            "third_party.md",
        ] {
            assert!(!is_vendored_path(p), "{p}");
        }
    }

    #[test]
    fn folders_come_in_runs_and_order_is_checked() {
        let paths = ["a/x.py", "a/y.py", "a/b/z.py", "a/w.py", "top.md"];
        let q = Query::parse("fix y");
        let f = PathFacts::of(&paths[..], &q, None);
        let runs: Vec<(&str, std::ops::Range<usize>)> = f.folders().collect();
        assert_eq!(
            runs,
            [("a", 0..2), ("a/b", 2..3), ("a", 3..4), ("", 4..5)],
            "a folder split by a subfolder has two runs"
        );
        assert_eq!(f.by_path, Some(vec![2, 3, 0, 1, 4]), "a/b/z.py sorts first");
        assert_eq!(f.minor, [0, 0, 0, 0, DOC]);
        let sorted = ["a/b/z.py", "a/w.py", "a/x.py", "tests/test_a.py"];
        let f = PathFacts::of(&sorted[..], &Query::parse(""), None);
        assert_eq!(f.by_path, None, "in order already");
        assert_eq!(f.minor, [0, 0, 0, TEST]);
        let vendored = ["src/a.py", "vendor/lib/tests/test_b.py", "vendor/lib/c.py"];
        let f = PathFacts::of(&vendored[..], &Query::parse(""), None);
        assert_eq!(f.minor, [0, VENDORED | TEST, VENDORED]);
    }
}
