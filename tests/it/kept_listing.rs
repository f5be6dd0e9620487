//! The project listing kept between runs (`Workspace::corpus_kept`): used only while every
//! folder and ignore file still has its stamp, and then exactly what a walk gives. The oracle
//! is a fresh walk (`Workspace::corpus`) after every change; "used" is checked by the
//! directory listings the call made (none when the kept listing holds).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::Duration;

use pai::workspace::{Workspace, WorkspaceConfig, sys_counts};

/// Timestamps come from a coarse clock; a pause longer than its tick keeps a change out of
/// the tick the listing was stamped in (the tests trust stamps older than zero seconds).
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

    /// The kept listing (trusting any stamp taken before the call), the walk's, and whether
    /// the kept one was used (no folder listed).
    fn both(&self, ws: &Workspace) -> (Vec<String>, Vec<String>, bool) {
        std::thread::sleep(TICK);
        let before = sys_counts().listings;
        let kept = ws.corpus_kept_with(Some(&self.cache), Duration::ZERO);
        let used = sys_counts().listings == before;
        let walked = ws.corpus();
        std::thread::sleep(TICK);
        let strings = |c: &pai::workspace::Corpus| c.iter().map(str::to_string).collect();
        (strings(&kept), strings(&walked), used)
    }

    /// The kept listing agrees with a walk, is then kept, and is used by the next call.
    fn agrees_and_is_kept(&self, ws: &Workspace, what: &str) -> Vec<String> {
        let (kept, walked, used) = self.both(ws);
        assert_eq!(kept, walked, "after {what}");
        assert!(!used, "after {what} the kept listing was used");
        let (kept, walked, used) = self.both(ws);
        assert_eq!(kept, walked, "after {what}, kept");
        assert!(used, "after {what} the listing was not kept");
        kept
    }
}

fn tree() -> Fx {
    let fx = Fx::new();
    fx.put("README.md", "r");
    fx.put("src/main.rs", "m");
    fx.put("src/deep/er/still/x.rs", "x");
    fx.put("src/gen/out.rs", "o");
    fx.put("build/artifact.o", "a");
    fx.put("app.log", "l");
    fx.put(".gitignore", "build/\n*.log\n");
    fx.put("src/.gitignore", "gen/\n");
    fx.put(".env", "SECRET=1");
    symlink("README.md", fx.root.join("link.md")).unwrap();
    fx
}

#[test]
fn a_kept_listing_is_used_only_while_nothing_it_came_from_changed() {
    let fx = tree();
    let ws = fx.ws();
    let first = fx.agrees_and_is_kept(&ws, "the first listing");
    assert!(first.contains(&"src/deep/er/still/x.rs".to_string()));
    for hidden in [
        "build/artifact.o",
        "app.log",
        "src/gen/out.rs",
        ".env",
        "link.md",
    ] {
        assert!(!first.contains(&hidden.to_string()), "{hidden}: {first:?}");
    }

    fx.put("src/deep/er/still/new.rs", "n");
    let l = fx.agrees_and_is_kept(&ws, "a file added four folders down");
    assert!(l.contains(&"src/deep/er/still/new.rs".to_string()));

    fs::remove_file(fx.root.join("src/main.rs")).unwrap();
    fx.agrees_and_is_kept(&ws, "a file removed");

    fs::rename(fx.root.join("src/deep"), fx.root.join("src/moved")).unwrap();
    let l = fx.agrees_and_is_kept(&ws, "a folder renamed");
    assert!(l.contains(&"src/moved/er/still/x.rs".to_string()));

    // Written in place: the folder's stamp stays, only the ignore file's own stamp tells.
    fx.put("src/.gitignore", "xyz\n");
    let l = fx.agrees_and_is_kept(&ws, "an ignore file rewritten in place");
    assert!(l.contains(&"src/gen/out.rs".to_string()), "{l:?}");

    fx.put("src/moved/.gitignore", "er/\n");
    let l = fx.agrees_and_is_kept(&ws, "an ignore file created below");
    assert!(!l.iter().any(|p| p.starts_with("src/moved/er/")), "{l:?}");

    fs::remove_file(fx.root.join("README.md")).unwrap();
    symlink("src/gen/out.rs", fx.root.join("README.md")).unwrap();
    let l = fx.agrees_and_is_kept(&ws, "a file replaced by a link");
    assert!(!l.contains(&"README.md".to_string()));

    fs::create_dir(fx.root.join("empty")).unwrap();
    fx.agrees_and_is_kept(&ws, "an empty folder added");
    fx.put("empty/now.txt", "n");
    let l = fx.agrees_and_is_kept(&ws, "a file in the new folder");
    assert!(l.contains(&"empty/now.txt".to_string()));
}

#[test]
fn rules_that_change_outside_the_folders_mean_a_fresh_walk() {
    let fx = tree();
    fs::create_dir_all(fx.root.join(".git/info")).unwrap();
    fx.agrees_and_is_kept(&fx.ws(), "the first listing");
    fs::write(fx.root.join(".git/info/exclude"), "*.md\n").unwrap();
    let l = fx.agrees_and_is_kept(&fx.ws(), "git's exclude file changed");
    assert!(!l.contains(&"README.md".to_string()), "{l:?}");
    let cfg = WorkspaceConfig {
        extra_deny: vec!["src".to_string()],
        ..WorkspaceConfig::default()
    };
    let ws = Workspace::open(&fx.root, cfg).unwrap();
    let l = fx.agrees_and_is_kept(&ws, "a deny pattern added");
    assert!(!l.iter().any(|p| p.starts_with("src/")), "{l:?}");
}

#[test]
fn a_listing_too_close_to_a_change_or_unreadable_is_not_kept() {
    let fx = tree();
    let ws = fx.ws();
    // The tree was made just now: within the default two seconds, nothing is trusted.
    let c = ws.corpus_kept(Some(&fx.cache));
    assert_eq!(c.len(), ws.corpus().len());
    assert!(!fx.cache.exists());

    fx.agrees_and_is_kept(&ws, "the first listing");
    for garbage in [&b""[..], b"\x01\x02\x03", &[0xff; 4096]] {
        fs::write(&fx.cache, garbage).unwrap();
        fx.agrees_and_is_kept(&ws, "a corrupt kept listing");
    }
}

#[test]
fn no_cache_file_walks_every_time() {
    let fx = tree();
    let ws = fx.ws();
    std::thread::sleep(TICK);
    for _ in 0..2 {
        let before = sys_counts().listings;
        let c = ws.corpus_kept_with(None, Duration::ZERO);
        assert!(sys_counts().listings > before);
        assert_eq!(c.len(), ws.corpus().len());
    }
}
