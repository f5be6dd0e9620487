//! The workspace's adversarial corpus: hostile paths, each its own test. Every case runs every
//! workspace operation on the path and asserts on the file system, not on the message: nothing
//! outside the project or on the deny-list is read, created, changed or removed. The messages
//! are checked too, for the words a user or model needs.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pai::workspace::{Edit, Modification, Workspace, WorkspaceConfig, WorkspaceError};

const SECRET: &str = "SECRET-CONTENT";
const PWNED: &str = "PWNED";

/// A project `base/proj` with protected files, next to `base/outside` holding a secret.
struct Fx {
    tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.txt"), SECRET).unwrap();
        fs::write(outside.join("victim.txt"), SECRET).unwrap();
        fs::write(outside.join("a.txt"), SECRET).unwrap();
        let fx = Fx { tmp, root, outside };
        for (p, c) in [
            ("src/main.py", "print('hi')\n"),
            (".git/config", SECRET),
            (".git/HEAD", SECRET),
            ("sub/.git/HEAD", SECRET),
            ("sub/ok.txt", "fine\n"),
            (".env", SECRET),
            (".env.local", SECRET),
            ("config/.env.production", SECRET),
            ("config/app.toml", "a = 1\n"),
            ("venv/bin/activate", SECRET),
            (".venv/lib/x.py", SECRET),
            ("node_modules/x", SECRET),
            (".pai_history/x", SECRET),
            ("id_rsa", SECRET),
            ("keys/id_ed25519.pub", SECRET),
            ("certs/server.pem", SECRET),
            (".netrc", SECRET),
            ("__pycache__/m.pyc", SECRET),
            (".vscode/settings.json", SECRET),
        ] {
            fx.put(p, c);
        }
        fx
    }

    fn put(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn ws(&self) -> Workspace {
        Workspace::open(&self.root, WorkspaceConfig::default()).unwrap()
    }

    fn link(&self, rel: &str, target: impl AsRef<Path>) {
        symlink(target, self.root.join(rel)).unwrap();
    }

    /// Everything under `base`: kind, content or link target, permission bits.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        snap(self.tmp.path(), &mut out);
        out
    }
}

fn snap(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let meta = fs::symlink_metadata(&p).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let desc = if meta.file_type().is_symlink() {
            format!("link -> {}", fs::read_link(&p).unwrap().display())
        } else if meta.is_dir() {
            format!("dir {mode:o}")
        } else {
            let bytes = fs::read(&p).unwrap_or_default();
            format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
        };
        out.insert(p.clone(), desc);
        if meta.is_dir() {
            snap(&p, out);
        }
    }
}

type Outcome = (&'static str, Result<(), WorkspaceError>);
type NamedOp<'a> = (
    &'static str,
    Box<dyn Fn() -> Result<(), WorkspaceError> + 'a>,
);

/// Every operation on `p`. `skip` leaves out operations that legitimately act on a symlink
/// itself rather than on its target (RM and MV of a link inside the project).
fn attempt_all(ws: &Workspace, p: &str, skip: &[&str]) -> Vec<Outcome> {
    let edit = Modification::Edits(vec![Edit {
        search: SECRET.into(),
        replace: PWNED.into(),
    }]);
    let all: Vec<NamedOp<'_>> = vec![
        ("check", Box::new(|| ws.check(p).map(drop))),
        ("read", Box::new(|| ws.read(p).map(drop))),
        ("write", Box::new(|| ws.write_new(p, PWNED).map(drop))),
        (
            "modify",
            Box::new(|| ws.modify(p, &Modification::Content(PWNED.into())).map(drop)),
        ),
        ("modify-edit", Box::new(|| ws.modify(p, &edit).map(drop))),
        ("touch", Box::new(|| ws.touch(p).map(drop))),
        ("mkdir", Box::new(|| ws.mkdir(p).map(drop))),
        ("rm", Box::new(|| ws.rm(p, true).map(drop))),
        ("mv-from", Box::new(|| ws.mv(p, "stolen").map(drop))),
        ("mv-to", Box::new(|| ws.mv("src/main.py", p).map(drop))),
        ("tree", Box::new(|| ws.tree(p).map(drop))),
        ("list", Box::new(|| ws.list_path(p).map(drop))),
        (
            "search",
            Box::new(|| ws.search("SECRET", Some(p)).map(drop)),
        ),
        (
            "write_bytes",
            Box::new(|| ws.write_bytes(p, PWNED.as_bytes(), None)),
        ),
        ("remove_file", Box::new(|| ws.remove_file(p))),
    ];
    all.into_iter()
        .filter(|(name, _)| !skip.contains(name))
        .map(|(name, f)| (name, f()))
        .collect()
}

/// The core assertion: every operation fails, the gate's message says `reason`, and the file
/// system under `base` is exactly as before.
fn assert_hostile(fx: &Fx, p: &str, reason: &str, skip: &[&str]) {
    let ws = fx.ws();
    let before = fx.snapshot();
    let outcomes = attempt_all(&ws, p, skip);
    for (op, r) in &outcomes {
        match r {
            Ok(()) => panic!("{op} on {p:?} was allowed"),
            Err(e) => {
                if *op == "check" {
                    let msg = e.to_string();
                    assert!(msg.starts_with("refused: "), "{op} {p:?}: {msg}");
                    assert!(msg.contains(reason), "{op} {p:?}: {msg:?} lacks {reason:?}");
                    assert!(!msg.contains(SECRET), "message leaks content: {msg}");
                }
            }
        }
    }
    let after = fx.snapshot();
    assert_eq!(before, after, "file system changed after hostile {p:?}");
    assert_no_pwned(fx.tmp.path());
    assert!(!fx.root.join("stolen").exists());
}

fn assert_no_pwned(dir: &Path) {
    let mut map = BTreeMap::new();
    snap(dir, &mut map);
    for (p, d) in map {
        assert!(!d.contains(PWNED), "{} was written", p.display());
    }
}

// ------------------------------------------------------------------ escapes

#[test]
fn parent_escape() {
    let fx = Fx::new();
    assert_hostile(&fx, "../x", "is outside the project", &[]);
    assert_hostile(&fx, "../outside/secret.txt", "is outside the project", &[]);
    assert!(!fx.tmp.path().join("x").exists());
}

#[test]
fn nested_parent_escape() {
    let fx = Fx::new();
    assert_hostile(&fx, "a/../../x", "is outside the project", &[]);
    assert_hostile(
        &fx,
        "src/../../outside/secret.txt",
        "is outside the project",
        &[],
    );
}

#[test]
fn absolute_etc_passwd() {
    let fx = Fx::new();
    let passwd = fs::read("/etc/passwd").ok();
    // Non-destructive operations on the real /etc/passwd; the destructive ones go through the
    // identical absolute-path rule on a file this test owns.
    let ws = fx.ws();
    for r in [
        ws.check("/etc/passwd").map(drop),
        ws.read("/etc/passwd").map(drop),
        ws.tree("/etc/passwd").map(drop),
        ws.list_path("/etc").map(drop),
        ws.search("root", Some("/etc/passwd")).map(drop),
        ws.write_new("/etc/passwd", PWNED).map(drop),
    ] {
        let e = r.unwrap_err();
        assert!(e.to_string().contains("is an absolute path"), "{e}");
    }
    assert_eq!(fs::read("/etc/passwd").ok(), passwd);
    let abs = fx.outside.join("secret.txt");
    assert_hostile(&fx, abs.to_str().unwrap(), "is an absolute path", &[]);
}

#[test]
fn double_slash_absolute() {
    let fx = Fx::new();
    let ws = fx.ws();
    assert!(ws.read("//etc/passwd").unwrap_err().is_refusal());
    let abs = format!("/{}", fx.outside.join("secret.txt").display());
    assert_hostile(&fx, &abs, "is an absolute path", &[]);
}

#[test]
fn tilde_home_path() {
    let fx = Fx::new();
    assert_hostile(&fx, "~/.ssh/authorized_keys", "'~'", &[]);
}

// ------------------------------------------------------------------ the deny-list

#[test]
fn dot_slash_git_config() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "./.git/config",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn git_directory_itself() {
    let fx = Fx::new();
    assert_hostile(&fx, ".git", "is a protected path (git internals)", &[]);
}

#[test]
fn nested_git_head() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "sub/.git/HEAD",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn git_then_parent() {
    let fx = Fx::new();
    assert_hostile(&fx, ".git/../src/main.py", "is a protected path", &[]);
}

#[test]
fn dotenv() {
    let fx = Fx::new();
    assert_hostile(&fx, ".env", "is a protected path (secrets)", &[]);
}

#[test]
fn dotenv_local() {
    let fx = Fx::new();
    assert_hostile(&fx, ".env.local", "is a protected path (secrets)", &[]);
}

#[test]
fn dotenv_production_nested() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "config/.env.production",
        "is a protected path (secrets)",
        &[],
    );
}

#[test]
fn venv_activate() {
    let fx = Fx::new();
    assert_hostile(&fx, "venv/bin/activate", "is a protected path", &[]);
}

#[test]
fn dot_venv() {
    let fx = Fx::new();
    assert_hostile(&fx, ".venv/lib/x.py", "is a protected path", &[]);
}

#[test]
fn node_modules_entry() {
    let fx = Fx::new();
    assert_hostile(&fx, "node_modules/x", "is a protected path", &[]);
}

#[test]
fn pai_history_entry() {
    let fx = Fx::new();
    assert_hostile(&fx, ".pai_history/x", "is a protected path", &[]);
}

#[test]
fn ssh_private_key() {
    let fx = Fx::new();
    assert_hostile(&fx, "id_rsa", "is a protected path (key material", &[]);
}

#[test]
fn ed25519_public_key() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "keys/id_ed25519.pub",
        "is a protected path (key material",
        &[],
    );
}

#[test]
fn pem_certificate() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "certs/server.pem",
        "is a protected path (key material",
        &[],
    );
}

#[test]
fn netrc_credentials() {
    let fx = Fx::new();
    assert_hostile(&fx, ".netrc", "is a protected path", &[]);
    assert_hostile(&fx, ".npmrc", "is a protected path", &[]);
    assert_hostile(&fx, ".pypirc", "is a protected path", &[]);
}

#[test]
fn pycache_and_editor_dirs() {
    let fx = Fx::new();
    assert_hostile(&fx, "__pycache__/m.pyc", "is a protected path", &[]);
    assert_hostile(&fx, ".vscode/settings.json", "is a protected path", &[]);
    assert_hostile(&fx, ".idea/workspace.xml", "is a protected path", &[]);
}

#[test]
fn pai_temporary_name() {
    let fx = Fx::new();
    assert_hostile(&fx, "src/.pai-tmp-1-2-3", "is a protected path", &[]);
}

#[test]
fn configured_extra_deny() {
    let fx = Fx::new();
    fx.put("secrets/db.yml", SECRET);
    let ws = Workspace::open(
        &fx.root,
        WorkspaceConfig {
            // (`*.key` is built in; `*.vault` is a configured pattern of the same shape.)
            extra_deny: vec!["secrets".into(), "*.vault".into()],
            ..WorkspaceConfig::default()
        },
    )
    .unwrap();
    let before = fx.snapshot();
    for p in ["secrets/db.yml", "a/b.vault", "SECRETS/x"] {
        for (op, r) in attempt_all(&ws, p, &[]) {
            let e = r.expect_err(op);
            if op == "check" {
                assert!(e.to_string().contains("denied by configuration"), "{e}");
            }
        }
    }
    assert_eq!(before, fx.snapshot());
    // The built-in list still applies.
    assert!(ws.check(".env").is_err());
}

// ------------------------------------------------------------------ symlinks

#[test]
fn symlink_to_tmp_then_child() {
    let fx = Fx::new();
    fx.link("link", "/tmp");
    let name = format!("pai-adv-{}-child", std::process::id());
    let p = format!("link/{name}");
    assert_hostile(
        &fx,
        &p,
        "is outside the project (link is a symbolic link to /tmp)",
        &[],
    );
    assert!(!Path::new("/tmp").join(&name).exists());
}

#[test]
fn symlink_to_tmp_itself() {
    let fx = Fx::new();
    fx.link("link", "/tmp");
    // RM/MV of the link act on the link inside the project, never on /tmp.
    assert_hostile(
        &fx,
        "link",
        "is outside the project",
        &["rm", "mv-from", "remove_file"],
    );
    fx.ws().rm("link", true).unwrap();
    assert!(Path::new("/tmp").is_dir());
    assert!(!fx.root.join("link").exists());
}

#[test]
fn symlinked_parent_directory() {
    let fx = Fx::new();
    fx.link("pdir", "../outside");
    assert_hostile(&fx, "pdir/secret.txt", "is outside the project", &[]);
    assert_hostile(&fx, "pdir/new.txt", "is outside the project", &[]);
    assert_hostile(&fx, "pdir/", "is outside the project", &[]);
    assert!(!fx.outside.join("new.txt").exists());
}

#[test]
fn absolute_symlink_outside() {
    let fx = Fx::new();
    fx.link("abs", &fx.outside);
    assert_hostile(&fx, "abs/secret.txt", "is outside the project", &[]);
}

#[test]
fn chained_symlinks_outside() {
    let fx = Fx::new();
    fx.link("hop2", "../outside");
    fx.link("hop1", "hop2");
    fs::create_dir_all(fx.root.join("deep")).unwrap();
    fx.link("deep/up", "../hop1");
    assert_hostile(&fx, "deep/up/secret.txt", "is outside the project", &[]);
}

#[test]
fn dangling_symlink_outside() {
    let fx = Fx::new();
    let target = fx.outside.join("not-yet-there.txt");
    fx.link("dangle", &target);
    assert_hostile(
        &fx,
        "dangle",
        "is outside the project",
        &["rm", "mv-from", "remove_file"],
    );
    assert!(!target.exists());
}

#[test]
fn dangling_symlink_into_git() {
    let fx = Fx::new();
    fx.link("hook", ".git/hooks/pre-commit");
    assert_hostile(
        &fx,
        "hook",
        "is a protected path (it resolves to .git/hooks/pre-commit",
        &["rm", "mv-from", "remove_file"],
    );
    assert!(!fx.root.join(".git/hooks").exists());
}

#[test]
fn symlink_to_git_config() {
    let fx = Fx::new();
    fx.link("cfg", ".git");
    assert_hostile(
        &fx,
        "cfg/config",
        "is a protected path (it resolves to .git/config",
        &[],
    );
}

#[test]
fn symlink_loop() {
    let fx = Fx::new();
    fx.link("loop1", "loop2");
    fx.link("loop2", "loop1");
    assert_hostile(&fx, "loop1/x", "too many levels of symbolic links", &[]);
}

#[test]
fn symlink_climbing_above_root() {
    let fx = Fx::new();
    fs::create_dir_all(fx.root.join("a")).unwrap();
    fx.link("a/up", "../../outside");
    assert_hostile(&fx, "a/up/secret.txt", "is outside the project", &[]);
}

#[test]
fn search_and_listings_do_not_follow_symlinks_out() {
    let fx = Fx::new();
    fx.link("pdir", "../outside");
    let ws = fx.ws();
    let out = ws.search("SECRET", None).unwrap();
    assert!(out.starts_with("no matches"), "{out}");
    let tree = ws.tree(".").unwrap();
    assert!(tree.contains("pdir@"), "{tree}");
    assert!(!tree.contains("secret.txt"), "{tree}");
    for hidden in [
        ".git",
        ".env",
        "venv",
        "node_modules",
        "id_rsa",
        ".pai_history",
    ] {
        assert!(!tree.contains(hidden), "{hidden} shown:\n{tree}");
    }
    let (files, _) = ws.project_files(1000);
    assert!(files.iter().all(|f| !f.contains("secret")), "{files:?}");
}

// ------------------------------------------------------------------ symlink swapped after the check

/// A workspace whose gate hook replaces `dir` (inside the project) by a symlink to `outside`
/// right after the first check of a path starting with `trigger`.
fn swapping_ws(fx: &Fx, trigger: &'static str, dir: &'static str) -> Workspace {
    let root = fx.root.clone();
    let outside = fx.outside.clone();
    let done = Arc::new(AtomicBool::new(false));
    fx.ws().with_after_check_hook(move |rel| {
        if rel.as_str().starts_with(trigger) && !done.swap(true, Ordering::SeqCst) {
            let d = root.join(dir);
            let meta = fs::symlink_metadata(&d).unwrap();
            if meta.is_dir() {
                fs::rename(&d, root.join(format!("{dir}.moved"))).unwrap();
            } else {
                fs::remove_file(&d).unwrap();
            }
            let target = if dir.ends_with(".txt") {
                outside.join("secret.txt")
            } else {
                outside.clone()
            };
            symlink(target, &d).unwrap();
        }
    })
}

fn outside_untouched(fx: &Fx) {
    let mut names: Vec<String> = fs::read_dir(&fx.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "secret.txt", "victim.txt"]);
    for n in names {
        assert_eq!(fs::read_to_string(fx.outside.join(n)).unwrap(), SECRET);
    }
}

fn assert_swap_refused(e: WorkspaceError) {
    let msg = e.to_string();
    assert!(
        msg.contains("changed after it was checked") || msg.contains("symbolic link"),
        "{msg}"
    );
    assert!(!msg.contains(SECRET));
}

#[test]
fn swap_parent_before_write() {
    let fx = Fx::new();
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(ws.write_new("sub/new.txt", PWNED).unwrap_err());
    outside_untouched(&fx);
}

#[test]
fn swap_parent_before_write_bytes() {
    let fx = Fx::new();
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(
        ws.write_bytes("sub/secret.txt", PWNED.as_bytes(), None)
            .unwrap_err(),
    );
    outside_untouched(&fx);
}

#[test]
fn swap_file_before_modify() {
    let fx = Fx::new();
    fx.put("f.txt", "hello\n");
    let ws = swapping_ws(&fx, "f.txt", "f.txt");
    assert_swap_refused(
        ws.modify("f.txt", &Modification::Content(PWNED.into()))
            .unwrap_err(),
    );
    outside_untouched(&fx);
}

#[test]
fn swap_file_before_read() {
    let fx = Fx::new();
    fx.put("f.txt", "hello\n");
    let ws = swapping_ws(&fx, "f.txt", "f.txt");
    assert_swap_refused(ws.read("f.txt").unwrap_err());
}

#[test]
fn swap_parent_before_rm() {
    let fx = Fx::new();
    fx.put("sub/victim.txt", "mine");
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(ws.rm("sub/victim.txt", true).unwrap_err());
    outside_untouched(&fx);
}

#[test]
fn swap_parent_before_mv() {
    let fx = Fx::new();
    fx.put("sub/a.txt", "mine");
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(ws.mv("sub/a.txt", "b.txt").unwrap_err());
    outside_untouched(&fx);
    assert!(!fx.root.join("b.txt").exists());
}

#[test]
fn swap_parent_before_mkdir_and_touch() {
    let fx = Fx::new();
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(ws.mkdir("sub/newdir").unwrap_err());
    outside_untouched(&fx);
    let fx = Fx::new();
    let ws = swapping_ws(&fx, "sub/", "sub");
    assert_swap_refused(ws.touch("sub/t.txt").unwrap_err());
    outside_untouched(&fx);
}

#[test]
fn swap_parent_before_listing() {
    let fx = Fx::new();
    fs::create_dir_all(fx.root.join("sub/inner")).unwrap();
    let ws = swapping_ws(&fx, "sub/inner", "sub");
    // Swapped during the call, then already swapped at the next check: refused both times.
    assert_swap_refused(ws.tree("sub/inner").unwrap_err());
    let e = fx.ws().tree("sub/inner").unwrap_err();
    assert!(e.to_string().contains("is outside the project"), "{e}");
}

#[test]
fn symlink_race_against_writes() {
    // A thread keeps swapping `race` between a real directory and a symlink to `outside`
    // while writes go to `race/f.txt`: none may ever land outside.
    let fx = Fx::new();
    let race = fx.root.join("race");
    let real = fx.root.join("race.real");
    fs::create_dir(&race).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let (race, real, outside, stop) =
            (race.clone(), real.clone(), fx.outside.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::rename(&race, &real);
                let _ = symlink(&outside, &race);
                std::thread::yield_now();
                let _ = fs::remove_file(&race);
                let _ = fs::rename(&real, &race);
                // Stay a real directory a little longer so that checks pass and the swap lands
                // between check and use.
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        })
    };
    let ws = fx.ws();
    let (mut ok, mut refused) = (0, 0);
    for i in 0..3000 {
        let r = match i % 3 {
            0 => ws.write_bytes("race/f.txt", PWNED.as_bytes(), None),
            1 => ws.touch("race/g.txt").map(drop),
            _ => ws.mkdir("race/d").map(drop),
        };
        match r {
            Ok(()) => ok += 1,
            Err(_) => refused += 1,
        }
    }
    eprintln!("race: {ok} operations went through, {refused} were refused");
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    outside_untouched(&fx);
    assert!(
        ok > 0,
        "the race never let a write through; the test proves nothing"
    );
}

// ------------------------------------------------------------------ malformed paths

#[test]
fn nul_byte() {
    let fx = Fx::new();
    assert_hostile(&fx, "src/main.py\0.txt", "contains a NUL byte", &[]);
}

#[test]
fn empty_path() {
    let fx = Fx::new();
    assert_hostile(&fx, "", "is empty", &[]);
}

#[test]
fn dot_is_the_root_and_never_mutated() {
    let fx = Fx::new();
    let ws = fx.ws();
    let before = fx.snapshot();
    assert!(ws.check(".").unwrap().is_root());
    for (op, r) in [
        ("write", ws.write_new(".", PWNED).map(drop)),
        (
            "modify",
            ws.modify(".", &Modification::Content(PWNED.into()))
                .map(drop),
        ),
        ("touch", ws.touch(".").map(drop)),
        ("rm", ws.rm(".", true).map(drop)),
        ("rm ./", ws.rm("./", true).map(drop)),
        ("rm src/..", ws.rm("src/..", true).map(drop)),
        ("mv", ws.mv(".", "elsewhere").map(drop)),
        ("read", ws.read(".").map(drop)),
        ("write_bytes", ws.write_bytes(".", b"x", None)),
        ("remove_file", ws.remove_file(".")),
    ] {
        assert!(r.is_err(), "{op} on . was allowed");
    }
    assert_eq!(before, fx.snapshot());
    assert!(
        ws.rm(".", true)
            .unwrap_err()
            .to_string()
            .contains("pai never removes it")
    );
}

#[test]
fn path_of_5000_characters() {
    let fx = Fx::new();
    let p = "a/".repeat(2500);
    assert_eq!(p.len(), 5000);
    assert_hostile(&fx, &p, "is too long (5000 bytes", &[]);
    let err = fx.ws().check(&p).unwrap_err().to_string();
    assert!(err.len() < 400, "message stays short: {} bytes", err.len());
}

#[test]
fn name_longer_than_255_bytes() {
    let fx = Fx::new();
    let p = format!("src/{}.py", "n".repeat(300));
    assert_hostile(&fx, &p, "longer than 255 bytes", &[]);
}

#[test]
fn trailing_slash_on_protected_and_escaping_paths() {
    let fx = Fx::new();
    assert_hostile(&fx, ".git/", "is a protected path", &[]);
    assert_hostile(&fx, ".env/", "is a protected path", &[]);
    assert_hostile(&fx, "../x/", "is outside the project", &[]);
}

#[test]
fn trailing_slash_on_a_file_name() {
    let fx = Fx::new();
    let ws = fx.ws();
    let before = fx.snapshot();
    for r in [
        ws.write_new("new.txt/", "x").map(drop),
        ws.touch("new.txt/").map(drop),
        ws.write_bytes("new.txt/", b"x", None),
        ws.modify("src/main.py/", &Modification::Content(PWNED.into()))
            .map(drop),
        ws.rm("src/main.py/", true).map(drop),
    ] {
        let e = r.unwrap_err();
        assert!(
            e.to_string().contains("'/'") || e.to_string().contains("not a directory"),
            "{e}"
        );
    }
    assert_eq!(before, fx.snapshot());
}

#[test]
fn windows_separators() {
    let fx = Fx::new();
    assert_hostile(&fx, "..\\..\\outside\\secret.txt", "uses a backslash", &[]);
    assert_hostile(&fx, ".git\\config", "uses a backslash", &[]);
}

#[test]
fn windows_drive_path() {
    let fx = Fx::new();
    assert_hostile(&fx, "C:/Windows/win.ini", "Windows drive", &[]);
}

#[test]
fn control_characters() {
    let fx = Fx::new();
    assert_hostile(&fx, "src/evil\nname.py", "control character (U+000A)", &[]);
    assert_hostile(
        &fx,
        "src/\u{1b}[31mred.py",
        "control character (U+001B)",
        &[],
    );
    assert_hostile(&fx, "src/x\u{85}.py", "control character (U+0085)", &[]);
}

#[test]
fn bidi_override_name() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "src/\u{202E}yp.exe",
        "invisible character (U+202E)",
        &[],
    );
}

// ------------------------------------------------------------------ lookalikes of .git

#[test]
fn lookalike_cyrillic_i() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".g\u{0456}t/config",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn lookalike_fullwidth() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        "\u{FF0E}git/config",
        "is a protected path (git internals)",
        &[],
    );
    assert_hostile(
        &fx,
        ".\u{FF47}\u{FF49}\u{FF54}/config",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn lookalike_zero_width() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".g\u{200B}it/config",
        "invisible character (U+200B)",
        &[],
    );
}

#[test]
fn lookalike_uppercase() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".GIT/config",
        "is a protected path (git internals)",
        &[],
    );
    assert_hostile(&fx, ".Env", "is a protected path (secrets)", &[]);
}

#[test]
fn lookalike_trailing_dot_and_space() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".git./config",
        "is a protected path (git internals)",
        &[],
    );
    assert_hostile(
        &fx,
        ".git /config",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn lookalike_combining_mark() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".gi\u{0307}t/config",
        "is a protected path (git internals)",
        &[],
    );
}

#[test]
fn lookalike_script_g() {
    let fx = Fx::new();
    assert_hostile(
        &fx,
        ".\u{0261}it/HEAD",
        "is a protected path (git internals)",
        &[],
    );
    assert_hostile(&fx, ".\u{0435}nv", "is a protected path (secrets)", &[]);
}

// ------------------------------------------------------------------ directories holding protected paths

#[test]
fn rm_directory_holding_git() {
    let fx = Fx::new();
    let before = fx.snapshot();
    let e = fx.ws().rm("sub", true).unwrap_err();
    assert!(
        e.to_string().contains("holds sub/.git, a protected path"),
        "{e}"
    );
    assert_eq!(before, fx.snapshot());
}

#[test]
fn mv_directory_holding_env() {
    let fx = Fx::new();
    let before = fx.snapshot();
    let e = fx.ws().mv("config", "cfg2").unwrap_err();
    assert!(
        e.to_string().contains("holds config/.env.production"),
        "{e}"
    );
    assert_eq!(before, fx.snapshot());
}

#[test]
fn mv_into_protected_destination() {
    let fx = Fx::new();
    assert_hostile(&fx, ".git/hooks/pre-commit", "is a protected path", &[]);
    let before = fx.snapshot();
    assert!(
        fx.ws()
            .mv("src/main.py", ".git/hooks/x")
            .unwrap_err()
            .is_refusal()
    );
    assert!(fx.ws().mv("src/main.py", ".git").unwrap_err().is_refusal());
    assert_eq!(before, fx.snapshot());
}

#[test]
fn mv_out_through_symlinked_destination() {
    let fx = Fx::new();
    fx.link("pdir", "../outside");
    let before = fx.snapshot();
    assert!(
        fx.ws()
            .mv("src/main.py", "pdir/main.py")
            .unwrap_err()
            .is_refusal()
    );
    // `pdir` itself names the link: moving onto it never replaces or follows it.
    assert!(fx.ws().mv("src/main.py", "pdir").is_err());
    assert_eq!(before, fx.snapshot());
    outside_untouched(&fx);
}

#[test]
fn portable_resolution_refuses_the_same() {
    // The slow path used where openat2 is unavailable gives the same answers.
    let fx = Fx::new();
    fx.link("pdir", "../outside");
    fx.link("cfg", ".git");
    let ws = fx.ws().with_portable_resolution();
    let before = fx.snapshot();
    for p in ["pdir/secret.txt", "cfg/config", "../x", ".git/HEAD"] {
        for (op, r) in attempt_all(&ws, p, &[]) {
            assert!(r.is_err(), "{op} {p}");
        }
    }
    assert_eq!(before, fx.snapshot());
    assert_eq!(ws.check("src/main.py").unwrap().resolved(), "src/main.py");
}

#[test]
fn walks_never_follow_a_directory_swapped_for_a_symlink_mid_walk() {
    // A thread keeps turning `flip` from a directory into a symlink to `outside` and back while
    // LIST_PATH, TREE, SEARCH and the project file list walk the tree, each on several
    // threads, again and again. Whatever moment the swap hits (between reading `flip`'s parent
    // and opening `flip`, or between SEARCH's two passes), nothing from `outside` may appear.
    let fx = Fx::new();
    for d in 0..40 {
        for f in 0..8 {
            fx.put(&format!("d{d:02}/f{f}.txt"), "needle inside\n");
        }
    }
    fx.put("flip/inner.txt", "needle inside\n");
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, root, outside) = (stop.clone(), fx.root.clone(), fx.outside.clone());
        std::thread::spawn(move || {
            let (flip, real) = (root.join("flip"), root.join("flip.real"));
            let mut swaps = 0u32;
            while !stop.load(Ordering::SeqCst) {
                fs::rename(&flip, &real).unwrap();
                symlink(&outside, &flip).unwrap();
                std::thread::yield_now();
                fs::remove_file(&flip).unwrap();
                fs::rename(&real, &flip).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let ws = Workspace::open(
        &fx.root,
        WorkspaceConfig {
            max_list_entries: usize::MAX,
            ..WorkspaceConfig::default()
        },
    )
    .unwrap();
    for _ in 0..60 {
        let outputs = [
            ws.list_path(".").unwrap(),
            ws.tree(".").unwrap(),
            ws.search("needle|SECRET", None).unwrap(),
            ws.project_files(usize::MAX).0.join("\n"),
        ];
        for out in outputs {
            assert!(!out.contains(SECRET), "{out}");
            assert!(
                !out.contains("secret.txt") && !out.contains("victim.txt"),
                "{out}"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    assert!(flipper.join().unwrap() > 0);
    outside_untouched(&fx);
}
