//! The walk for the project listing keeps what it read of each folder between runs
//! (`Workspace::corpus_kept`): a folder is read again only when it, its `.gitignore` or an
//! ancestor's `.gitignore` changed, and the listing is always exactly what a full walk gives.
//! The oracle is a fresh walk (`Workspace::corpus`) after every change; the folders read
//! again are counted by the directory listings the call made.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::Duration;

use pai::workspace::{Keeping, Workspace, WorkspaceConfig, sys_counts};

/// Timestamps come from a coarse clock; a pause longer than its tick keeps a change out of
/// the tick the walk stamped (the tests trust any stamp taken before the walk).
const TICK: Duration = Duration::from_millis(30);

struct Fx {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cache: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir(&root).unwrap();
        let cache = tmp.path().join("cache/listing.bin");
        Fx {
            _tmp: tmp,
            root,
            cache,
        }
    }

    fn put(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn ws(&self) -> Workspace {
        Workspace::open(&self.root, WorkspaceConfig::default()).unwrap()
    }

    /// The listing through the kept one (trusting stamps older than `racy`), a full walk's,
    /// and how many folders the first call read.
    fn both_with(&self, ws: &Workspace, racy: Duration) -> (Vec<String>, Vec<String>, u64) {
        std::thread::sleep(TICK);
        let before = sys_counts().listings;
        let keeping = Keeping {
            racy,
            min_entries: 0,
        };
        let kept = ws.corpus_kept_with(Some(&self.cache), keeping);
        let read = sys_counts().listings - before;
        let walked = ws.corpus();
        std::thread::sleep(TICK);
        let strings = |c: &pai::workspace::Corpus| c.iter().map(str::to_string).collect();
        (strings(&kept), strings(&walked), read)
    }

    fn both(&self, ws: &Workspace) -> (Vec<String>, Vec<String>, u64) {
        self.both_with(ws, Duration::ZERO)
    }

    /// After a change: the listing agrees with a full walk having read `reads` folders, and
    /// the next one reads none.
    fn agrees(&self, ws: &Workspace, what: &str, reads: u64) -> Vec<String> {
        let (kept, walked, read) = self.both(ws);
        assert_eq!(kept, walked, "after {what}");
        assert_eq!(read, reads, "folders read after {what}");
        let (kept, walked, read) = self.both(ws);
        assert_eq!(kept, walked, "after {what}, again");
        assert_eq!(read, 0, "folders read again after {what}");
        kept
    }
}

/// Folders walked: the root, src, src/deep, src/deep/er, src/deep/er/still.
fn tree() -> Fx {
    let fx = Fx::new();
    fx.put("README.md", "r");
    fx.put("src/main.rs", "m");
    fx.put("src/deep/er/still/x.rs", "x");
    fx.put("src/gen/out.rs", "o");
    fx.put("build/artifact.o", "a");
    fx.put("app.log", "l");
    fx.put(".gitignore", "build/\n*.log\n");
    // An ignore file that ignores itself still holds rules for the folders below.
    fx.put("src/.gitignore", "gen/\n*.tmp\n.gitignore\n");
    fx.put(".env", "SECRET=1");
    symlink("README.md", fx.root.join("link.md")).unwrap();
    fx
}

fn has(list: &[String], path: &str) -> bool {
    list.iter().any(|p| p == path)
}

#[test]
fn only_the_folders_that_changed_are_read_again() {
    let fx = tree();
    let ws = fx.ws();
    let first = fx.agrees(&ws, "the first walk", 5);
    assert!(has(&first, "src/deep/er/still/x.rs"));
    for hidden in [
        "build/artifact.o",
        "app.log",
        "src/gen/out.rs",
        "src/.gitignore",
        ".env",
        "link.md",
    ] {
        assert!(!has(&first, hidden), "{hidden}: {first:?}");
    }

    fx.put("src/deep/er/still/new.rs", "n");
    fx.put("src/deep/er/still/scratch.tmp", "t");
    let l = fx.agrees(&ws, "files added four folders down", 1);
    assert!(has(&l, "src/deep/er/still/new.rs"));
    assert!(!has(&l, "src/deep/er/still/scratch.tmp"), "{l:?}");

    fs::remove_file(fx.root.join("src/main.rs")).unwrap();
    fx.agrees(&ws, "a file removed", 1);

    fs::rename(fx.root.join("src/deep"), fx.root.join("src/moved")).unwrap();
    let l = fx.agrees(&ws, "a folder renamed", 4);
    assert!(has(&l, "src/moved/er/still/x.rs"));

    // Written in place: the folder keeps its stamp, only the ignore file's own tells, and
    // every folder below it is read again under the new rules.
    fx.put("src/.gitignore", "xyz\n");
    let l = fx.agrees(&ws, "an ignore file rewritten in place", 5);
    assert!(has(&l, "src/gen/out.rs"), "{l:?}");
    assert!(has(&l, "src/moved/er/still/scratch.tmp"), "{l:?}");

    fx.put("src/moved/.gitignore", "er/\n");
    let l = fx.agrees(&ws, "an ignore file created below", 1);
    assert!(!l.iter().any(|p| p.starts_with("src/moved/er/")), "{l:?}");

    fs::remove_file(fx.root.join("README.md")).unwrap();
    symlink("src/gen/out.rs", fx.root.join("README.md")).unwrap();
    let l = fx.agrees(&ws, "a file replaced by a link", 1);
    assert!(!has(&l, "README.md"));

    fs::create_dir(fx.root.join("empty")).unwrap();
    fx.agrees(&ws, "an empty folder added", 2);
    fx.put("empty/now.txt", "n");
    let l = fx.agrees(&ws, "a file in the new folder", 1);
    assert!(has(&l, "empty/now.txt"));
}

#[test]
fn a_walk_of_unchanged_folders_stats_each_once_and_only_the_ignore_files_there_are() {
    let fx = tree();
    let ws = fx.ws();
    fx.agrees(&ws, "the first walk", 5);
    std::thread::sleep(TICK);
    let before = sys_counts();
    let keeping = Keeping {
        racy: Duration::ZERO,
        min_entries: 0,
    };
    ws.corpus_kept_with(Some(&fx.cache), keeping);
    let now = sys_counts();
    assert_eq!(now.listings - before.listings, 0);
    // Five folders stamped, and the two `.gitignore`s there are stamped (their in-place
    // rewrites would not show in their folders' stamps) and read (their rules pass to the
    // folders below): a folder without one still has none while its stamp holds, so it is
    // not looked for.
    assert_eq!(now.stats - before.stats, 5 + 2 * 2);
}

#[test]
fn a_kept_folder_with_a_name_that_is_not_utf8_lists_as_a_walk_does() {
    use std::os::unix::ffi::OsStrExt;
    let fx = tree();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(fx.root.join("src").join(odd), "x").unwrap();
    // A name that is UTF-8 but holds a character pai's spelling reserves for other bytes.
    let reserved = "x\u{10FF80}.txt";
    fs::write(fx.root.join("src").join(reserved), "y").unwrap();
    let ws = fx.ws();
    let first = fx.agrees(&ws, "the first walk", 5);
    // Both spelled losslessly, as every path pai shows, so each names its file.
    for raw in [
        &b"src/caf\xe9.txt"[..],
        format!("src/{reserved}").as_bytes(),
    ] {
        let spelled = pai::rawname::encode(raw).into_owned();
        assert!(has(&first, &spelled), "{spelled:?} in {first:?}");
        assert!(ws.read(&spelled).is_ok(), "{spelled:?}");
    }
    // Reused: the folder's names are not all their own spelling, so they are taken one by one.
    fx.put("src/deep/er/still/new.rs", "n");
    fx.agrees(&ws, "a file added below it", 1);
}

#[test]
fn rules_that_change_outside_the_folders_mean_every_folder_is_read() {
    let fx = tree();
    fs::create_dir_all(fx.root.join(".git/info")).unwrap();
    fx.agrees(&fx.ws(), "the first walk", 5);
    fs::write(fx.root.join(".git/info/exclude"), "*.md\n").unwrap();
    let l = fx.agrees(&fx.ws(), "git's exclude file changed", 5);
    assert!(!has(&l, "README.md"), "{l:?}");
    let cfg = WorkspaceConfig {
        extra_deny: vec!["src".to_string()],
        ..WorkspaceConfig::default()
    };
    let ws = Workspace::open(&fx.root, cfg).unwrap();
    let l = fx.agrees(&ws, "a deny pattern added", 1);
    assert!(!l.iter().any(|p| p.starts_with("src/")), "{l:?}");
}

#[test]
fn stamps_too_close_to_the_walk_and_corrupt_files_are_not_trusted() {
    let fx = tree();
    let ws = fx.ws();
    // The tree was made just now: within the default two seconds nothing is trusted, so the
    // next walk reads every folder again.
    for _ in 0..2 {
        let (kept, walked, read) = fx.both_with(&ws, Duration::from_secs(2));
        assert_eq!(kept, walked);
        assert_eq!(read, 5);
    }
    fx.agrees(&ws, "stamps trusted", 5);
    for garbage in [&b""[..], b"\x01\x02\x03", &[0xff; 4096]] {
        fs::write(&fx.cache, garbage).unwrap();
        fx.agrees(&ws, "a corrupt kept listing", 5);
    }
}

#[test]
fn without_a_cache_file_every_folder_is_read() {
    let fx = tree();
    let ws = fx.ws();
    std::thread::sleep(TICK);
    for _ in 0..2 {
        let before = sys_counts().listings;
        let c = ws.corpus_kept_with(None, Keeping::default());
        assert_eq!(sys_counts().listings - before, 5);
        assert_eq!(c.len(), ws.corpus().len());
    }
}

#[test]
fn a_small_tree_is_not_kept() {
    let fx = tree();
    std::thread::sleep(TICK);
    let ws = fx.ws();
    let keeping = Keeping {
        racy: Duration::ZERO,
        min_entries: 100,
    };
    for _ in 0..2 {
        let before = sys_counts().listings;
        let c = ws.corpus_kept_with(Some(&fx.cache), keeping);
        assert_eq!(sys_counts().listings - before, 5);
        assert_eq!(c.len(), ws.corpus().len());
    }
    assert!(!fx.cache.exists());
}

#[test]
fn a_few_entries_read_again_are_not_worth_rewriting_the_kept_listing() {
    let fx = Fx::new();
    for i in 0..100 {
        fx.put(&format!("big/file_{i:03}.rs"), "x");
    }
    fx.put("top.txt", "t");
    let ws = fx.ws();
    fx.agrees(&ws, "the first walk", 2);
    let written = fs::metadata(&fx.cache).unwrap().modified().unwrap();

    // Two entries read again against a hundred kept: the file stays, and the next walk
    // reads the root again (it is cheap), always agreeing with a full walk.
    fx.put("new.txt", "n");
    for _ in 0..2 {
        let (kept, walked, read) = fx.both(&ws);
        assert_eq!(kept, walked);
        assert_eq!(read, 1);
    }
    assert_eq!(
        fs::metadata(&fx.cache).unwrap().modified().unwrap(),
        written
    );

    // Many entries read again: kept anew.
    for i in 0..20 {
        fx.put(&format!("more_{i}.txt"), "m");
    }
    let l = fx.agrees(&ws, "twenty files added", 1);
    assert!(has(&l, "more_7.txt") && has(&l, "new.txt"));
    assert_ne!(
        fs::metadata(&fx.cache).unwrap().modified().unwrap(),
        written
    );
}

/// One change to a project, as a user or a tool makes them.
#[derive(Debug, Clone)]
enum Change {
    AddFile(usize, usize),
    AddDir(usize, usize),
    Remove(usize, usize),
    RenameDir(usize, usize),
    WriteIgnore(usize, usize),
    Link(usize, usize),
}

const DIRS: [&str; 6] = ["", "a", "a/b", "a/b/c", "d", "d/gen"];
const NAMES: [&str; 6] = ["x.rs", "y.log", "z.tmp", "gen", "build", "keep.log"];
const PATTERNS: [&str; 6] = [
    "*.log\n",
    "gen/\n",
    "*.tmp\n",
    "*.log\n!keep.log\n",
    "b/\n",
    "xyz\n",
];

fn change() -> impl proptest::strategy::Strategy<Value = Change> {
    use proptest::prelude::*;
    let pick = || (0..DIRS.len(), 0..NAMES.len());
    prop_oneof![
        pick().prop_map(|(d, n)| Change::AddFile(d, n)),
        pick().prop_map(|(d, n)| Change::AddDir(d, n)),
        pick().prop_map(|(d, n)| Change::Remove(d, n)),
        pick().prop_map(|(d, n)| Change::RenameDir(d, n)),
        (0..DIRS.len(), 0..PATTERNS.len()).prop_map(|(d, p)| Change::WriteIgnore(d, p)),
        pick().prop_map(|(d, n)| Change::Link(d, n)),
    ]
}

impl Fx {
    /// Make `c` (a change that cannot be made, such as a rename of a missing folder, is
    /// simply not made).
    fn make(&self, c: &Change) {
        let at = |d: usize, n: usize| self.root.join(DIRS[d]).join(NAMES[n]);
        let _ = match *c {
            Change::AddFile(d, n) => {
                fs::create_dir_all(self.root.join(DIRS[d])).and_then(|()| fs::write(at(d, n), "f"))
            }
            Change::AddDir(d, n) => fs::create_dir_all(at(d, n)),
            Change::Remove(d, n) => {
                fs::remove_file(at(d, n)).or_else(|_| fs::remove_dir_all(at(d, n)))
            }
            Change::RenameDir(d, n) if !DIRS[d].is_empty() => {
                let from = self.root.join(DIRS[d]);
                fs::rename(&from, from.with_file_name(NAMES[n]))
            }
            Change::RenameDir(..) => Ok(()),
            Change::WriteIgnore(d, p) => fs::create_dir_all(self.root.join(DIRS[d]))
                .and_then(|()| fs::write(self.root.join(DIRS[d]).join(".gitignore"), PATTERNS[p])),
            Change::Link(d, n) => symlink("x.rs", at(d, n)),
        };
    }
}

/// Files the rules hide or show in folders several levels below the rules' own folders, so
/// a rule changed above a folder that did not change shows in it.
fn spread_tree() -> Fx {
    let fx = Fx::new();
    for f in [
        "a/b/c/y.log",
        "a/b/c/x.rs",
        "a/b/z.tmp",
        "a/keep.log",
        "d/gen/x.rs",
        "d/y.log",
        "x.rs",
    ] {
        fx.put(f, "f");
    }
    fx.put(".gitignore", "*.log\n");
    fx.put("a/.gitignore", "*.tmp\n");
    fx
}

#[test]
fn after_any_changes_the_kept_listing_is_what_a_walk_gives() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let changes = proptest::collection::vec(change(), 1..8);
    runner
        .run(&changes, |changes| {
            let fx = spread_tree();
            let ws = fx.ws();
            let (kept, walked, _) = fx.both(&ws);
            assert_eq!(kept, walked);
            for c in &changes {
                fx.make(c);
                let (kept, walked, _) = fx.both(&ws);
                assert_eq!(kept, walked, "after {c:?} in {changes:?}");
            }
            Ok(())
        })
        .unwrap();
}
