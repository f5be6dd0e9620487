//! The repositories the scale bench measures besides its one-line generated one: a
//! prose-heavy generated one, and a real repository the user checked out.
//!
//! The prose repository: files of 1–4 KB of words (`.md`, `.txt`, `.json`, `.py`, `.js`, in
//! turn), a hundred to a folder, from a fixed vocabulary drawn with a skewed frequency (a few
//! words common, most rare, as in text), all from a seeded generator: the same bytes on every
//! machine and every run.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::git;

/// A small deterministic generator (SplitMix64): the bench needs the same text everywhere, not
/// randomness.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Syllables the vocabulary's words are made of.
const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ren", "tor", "va", "shi", "pel", "dun", "gra", "fo", "nix", "sel", "bri",
    "quo", "ta", "mur", "zen", "hal", "cor", "vi", "dra", "ple", "os",
];

/// Words in the vocabulary.
const VOCABULARY: usize = 20_000;

/// The vocabulary: two- to four-syllable words, each distinct.
fn vocabulary() -> Vec<String> {
    let mut words = Vec::with_capacity(VOCABULARY);
    let mut seen = std::collections::HashSet::new();
    let mut mix = Mix(7);
    while words.len() < VOCABULARY {
        let n = 2 + mix.below(3);
        let w: String = (0..n)
            .map(|_| SYLLABLES[mix.below(SYLLABLES.len())])
            .collect();
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

/// A word drawn with a skewed frequency: the square of a uniform draw favours the first words.
fn word<'v>(mix: &mut Mix, vocab: &'v [String]) -> &'v str {
    let u = mix.below(1 << 16) as f64 / f64::from(1u32 << 16);
    &vocab[((u * u * u) * vocab.len() as f64) as usize % vocab.len()]
}

/// A sentence of 6–16 words.
fn sentence(mix: &mut Mix, vocab: &[String]) -> String {
    let n = 6 + mix.below(11);
    let words: Vec<&str> = (0..n).map(|_| word(mix, vocab)).collect();
    let mut s = words.join(" ");
    if let Some(first) = s.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    s.push('.');
    s
}

/// The extensions, in turn.
const EXTENSIONS: [&str; 5] = ["md", "txt", "json", "py", "js"];

/// The path of prose file `i`.
pub fn prose_path(i: usize) -> String {
    format!(
        "p{:02}/s{:03}/f{i:06}.{}",
        i / 10_000,
        (i / 100) % 100,
        EXTENSIONS[i % EXTENSIONS.len()]
    )
}

/// The text of prose file `i`: 1–4 KB of words, dressed as its extension's kind of file.
fn prose_text(i: usize, vocab: &[String]) -> String {
    let mut mix = Mix(i as u64 ^ 0x5EED);
    let size = 1024 + mix.below(3 * 1024);
    let mut out = String::with_capacity(size + 256);
    let ext = EXTENSIONS[i % EXTENSIONS.len()];
    match ext {
        "json" => out.push_str("{\n  \"entries\": [\n"),
        "md" => {
            let _ = writeln!(out, "# {}\n", sentence(&mut mix, vocab));
        }
        _ => {}
    }
    // Code files are mostly prose too: a paragraph of comment or docstring to each
    // function, as in well-commented code.
    let mut n = 0;
    while out.len() < size {
        let paragraph: Vec<String> = (0..3 + mix.below(4))
            .map(|_| sentence(&mut mix, vocab))
            .collect();
        let paragraph = paragraph.join(" ");
        let name = format!("{}_{}", word(&mut mix, vocab), word(&mut mix, vocab));
        let _ = match ext {
            "json" => writeln!(out, "    {{\"{name}\": \"{paragraph}\"}},"),
            "py" => writeln!(
                out,
                "def {name}(value):\n    \"\"\"{paragraph}\"\"\"\n    return value\n"
            ),
            "js" => writeln!(
                out,
                "/* {paragraph} */\nfunction {name}(value) {{\n  return value;\n}}\n"
            ),
            _ => {
                n += 1;
                writeln!(
                    out,
                    "{paragraph}\n{}",
                    if n % 3 == 0 { "\n## More\n" } else { "" }
                )
            }
        };
    }
    if ext == "json" {
        out.push_str("    {}\n  ]\n}\n");
    } else {
        out.push('\n');
    }
    out
}

/// Generate the prose repository of `files` files at `root` once (kept: a `.git` says it is
/// there), committed, with git's caches warm.
pub fn generate_prose(root: &Path, files: usize) {
    if root.join(".git").exists() {
        return;
    }
    let _ = fs::remove_dir_all(root);
    let vocab = vocabulary();
    for i in 0..files {
        let path = root.join(prose_path(i));
        if i % 100 == 0 {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        fs::write(path, prose_text(i, &vocab)).unwrap();
    }
    fs::write(root.join("README.md"), "A generated repository of prose.\n").unwrap();
    git(root, &["init", "-q", "-b", "main", "."]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "generated"]);
    git(root, &["status", "--porcelain"]);
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
}

/// The real repository's checkout (`PAI_BENCH_SCALE_REAL`): a git work tree the user made
/// once, outside any project pai works on; the bench commits its plans there (in refs of its
/// own, and a `log/` folder) and leaves the rest as it found it.
pub fn real_checkout() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("PAI_BENCH_SCALE_REAL")?);
    dir.join(".git").exists().then_some(dir)
}

/// How many files git tracks in `root`.
pub fn tracked_files(root: &Path) -> usize {
    let out = git(root, &["ls-files", "-z"]);
    out.stdout.iter().filter(|&&b| b == 0).count()
}
