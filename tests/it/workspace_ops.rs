//! Behaviour of the workspace commands (SPEC section 4) on real directories: what they return,
//! what they leave on disk, and the words of their errors.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use pai::workspace::{
    ChangeKind, Edit, LinesShown, Modification, ReadContent, Workspace, WorkspaceConfig,
    WorkspaceError,
};

struct Fx {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir(&root).unwrap();
        Fx { _tmp: tmp, root }
    }
    fn put(&self, rel: &str, content: &str) -> &Fx {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
        self
    }
    fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap()
    }
    fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).symlink_metadata().is_ok()
    }
    fn ws(&self) -> Workspace {
        Workspace::open(&self.root, WorkspaceConfig::default()).unwrap()
    }
    fn ws_with(&self, cfg: WorkspaceConfig) -> Workspace {
        Workspace::open(&self.root, cfg).unwrap()
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn edit(s: &str, r: &str) -> Edit {
    Edit {
        search: s.into(),
        replace: r.into(),
    }
}

fn edits(list: &[(&str, &str)]) -> Modification {
    Modification::Edits(list.iter().map(|(s, r)| edit(s, r)).collect())
}

fn temps_in(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walk(dir) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(".pai-tmp-") {
            out.push(e.display().to_string());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

// ---------------------------------------------------------------- open / root

#[test]
fn open_canonicalises_root() {
    let fx = Fx::new();
    let link = fx._tmp.path().join("alias");
    symlink(&fx.root, &link).unwrap();
    let ws = Workspace::open(&link, WorkspaceConfig::default()).unwrap();
    assert_eq!(ws.root(), fs::canonicalize(&fx.root).unwrap());
}

#[test]
fn open_fails_on_missing_or_file_root() {
    let fx = Fx::new();
    let err = Workspace::open(&fx.root.join("nope"), WorkspaceConfig::default()).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    fx.put("f", "x");
    let err = Workspace::open(&fx.root.join("f"), WorkspaceConfig::default()).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn open_refuses_unshrinking_deny_entries() {
    let fx = Fx::new();
    let cfg = WorkspaceConfig {
        extra_deny: vec!["!.env".into()],
        ..WorkspaceConfig::default()
    };
    let err = Workspace::open(&fx.root, cfg).unwrap_err();
    assert!(err.to_string().contains("can only be extended"), "{err}");
}

#[test]
fn open_removes_stale_temporaries_of_dead_processes_only() {
    let fx = Fx::new();
    // A pid far above any in use: the process that made it is gone.
    fx.put(".pai-tmp-999999999-1-abc", "half");
    fx.put("deep/er/.pai-tmp-999999998-7-abc", "half");
    // pid 1 is alive: its temporary may be in flight and must stay.
    fx.put(".pai-tmp-1-1-abc", "live");
    // Inside a denied directory pai never writes, so it never looks there.
    fx.put("node_modules/.pai-tmp-999999999-2-abc", "x");
    let ws = fx.ws();
    assert_eq!(ws.stale_temps_removed(), 2);
    assert!(!fx.exists(".pai-tmp-999999999-1-abc"));
    assert!(!fx.exists("deep/er/.pai-tmp-999999998-7-abc"));
    assert!(fx.exists(".pai-tmp-1-1-abc"));
    assert!(fx.exists("node_modules/.pai-tmp-999999999-2-abc"));
    // Temporaries never show in listings.
    assert!(!ws.list_path(".").unwrap().contains(".pai-tmp"));
}

#[test]
fn open_unswept_leaves_stale_temporaries_until_asked() {
    let fx = Fx::new();
    fx.put("deep/er/.pai-tmp-999999998-7-abc", "half");
    let ws = Workspace::open_unswept(&fx.root, WorkspaceConfig::default()).unwrap();
    // Nothing walks the tree behind the caller's back: the temporary is still there after
    // a listing, a corpus and a search have come and gone.
    let _ = ws.list_path(".").unwrap();
    let _ = ws.corpus();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(fx.exists("deep/er/.pai-tmp-999999998-7-abc"));
    // Asked for, the sweep runs then, and only once.
    assert_eq!(ws.stale_temps_removed(), 1);
    assert!(!fx.exists("deep/er/.pai-tmp-999999998-7-abc"));
    assert_eq!(ws.stale_temps_removed(), 1);
}

/// With a state directory, a workspace sweeps only when a process that wrote died without
/// removing its record (or the registry is new): a stale temporary planted while every writer
/// ended cleanly stays, and goes once a dead writer's record says a crash happened.
#[test]
fn open_sweeps_only_after_a_writer_died() {
    let fx = Fx::new();
    let state = tempfile::tempdir().unwrap();
    let cfg = || WorkspaceConfig {
        state_dir: Some(state.path().to_path_buf()),
        ..WorkspaceConfig::default()
    };
    let temp = "deep/er/.pai-tmp-999999998-7-abc";
    fx.put(temp, "half");
    // A new registry: earlier pai versions kept none, so this first open sweeps.
    let ws = Workspace::open(&fx.root, cfg()).unwrap();
    assert_eq!(ws.stale_temps_removed(), 1);
    // A writer that ends cleanly leaves no record behind.
    ws.write_new("a.txt", "one\n").unwrap();
    let records = state.path().join("writers");
    assert_eq!(
        fs::read_dir(&records).unwrap().count(),
        1,
        "registered while it writes"
    );
    drop(ws);
    assert_eq!(
        fs::read_dir(&records).unwrap().count(),
        0,
        "record removed when done"
    );
    fx.put(temp, "half");
    let ws = Workspace::open(&fx.root, cfg()).unwrap();
    assert_eq!(ws.stale_temps_removed(), 0, "no writer died: no walk");
    assert!(fx.exists(temp));
    drop(ws);
    // A writer that died (a pid no process has) left its record: the next open sweeps, and
    // forgets the record.
    fs::write(records.join("999999998-12345"), "").unwrap();
    let ws = Workspace::open(&fx.root, cfg()).unwrap();
    assert_eq!(ws.stale_temps_removed(), 1);
    assert!(!fx.exists(temp));
    assert_eq!(fs::read_dir(&records).unwrap().count(), 0);
}

/// `stamps_of` stamps many files a folder at a time, as `stamp_of` does one: regular files
/// only, no link followed, nothing outside the project.
#[test]
fn stamps_of_agrees_with_stamp_of_and_refuses_what_it_refuses() {
    let fx = Fx::new();
    fx.put("top.txt", "a");
    fx.put("src/a.py", "b");
    fx.put("src/b.py", "c");
    fx.put("other/c.py", "d");
    symlink("top.txt", fx.root.join("src/link.txt")).unwrap();
    let ws = fx.ws();
    let paths = [
        "top.txt",
        "src/a.py",
        "src/b.py",
        "src/link.txt",
        "src/gone.py",
        "other/c.py",
        "../outside.txt",
        "src/..",
        ".env",
    ];
    let got = ws.stamps_of(&paths);
    for (path, stamp) in paths.iter().zip(&got) {
        assert_eq!(*stamp, ws.stamp_of(path), "{path}");
    }
    let known: Vec<&str> = paths
        .iter()
        .zip(&got)
        .filter(|(_, s)| s.is_some())
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(known, ["top.txt", "src/a.py", "src/b.py", "other/c.py"]);
    // Enough files for several threads, each taking a run of the list.
    let many: Vec<String> = (0..9_000)
        .map(|i| format!("many/d{:02}/f{i}.txt", i / 300))
        .collect();
    for p in &many {
        fx.put(p, "x");
    }
    let mut paths: Vec<&str> = many.iter().map(String::as_str).collect();
    paths.insert(4_500, "many/d15/missing.txt");
    let got = ws.stamps_of(&paths);
    assert_eq!(got.len(), paths.len());
    for (path, stamp) in paths.iter().zip(&got) {
        assert_eq!(*stamp, ws.stamp_of(path), "{path}");
    }
    assert_eq!(got.iter().filter(|s| s.is_none()).count(), 1);
}

// ---------------------------------------------------------------- READ

#[test]
fn read_returns_text_with_lf() {
    let fx = Fx::new();
    fx.put("a.txt", "one\r\ntwo\r\n");
    let out = fx.ws().read("a.txt").unwrap();
    assert_eq!(out.text(), Some("one\ntwo\n"));
    assert_eq!(out.size, 10);
    assert_eq!(out.to_string(), "one\ntwo\n");
}

#[test]
fn read_truncates_big_files_and_says_so() {
    let fx = Fx::new();
    let body: String = (0..100).map(|i| format!("line {i}\n")).collect();
    fx.put("big.txt", &body);
    let ws = fx.ws_with(WorkspaceConfig {
        max_read_bytes: 50,
        ..WorkspaceConfig::default()
    });
    let out = ws.read("big.txt").unwrap();
    match &out.content {
        ReadContent::Text { text, truncated } => {
            assert!(*truncated);
            assert!(text.len() <= 50);
            assert!(text.ends_with('\n'), "cut at a line boundary: {text:?}");
            assert!(body.starts_with(text.as_str()));
        }
        other => panic!("{other:?}"),
    }
    let shown = out.to_string();
    assert!(
        shown.contains(
            "[truncated by pai: showing the first 49 of 790 bytes of big.txt (lines 1-7); \
             READ it with \"lines\" from line 8 for more]"
        ),
        "{shown}"
    );
}

#[test]
fn read_lines_reaches_past_the_read_limit_in_the_files_own_numbering() {
    let fx = Fx::new();
    // CRLF, and longer than READ's limit: line numbers are the file's, endings are `\n`.
    let body: String = (1..=100).map(|i| format!("line {i}\r\n")).collect();
    fx.put("big.txt", &body);
    let ws = fx.ws_with(WorkspaceConfig {
        max_read_bytes: 50,
        ..WorkspaceConfig::default()
    });
    let out = ws.read_lines("big.txt", 90, Some(92)).unwrap();
    assert_eq!(out.text(), Some("line 90\nline 91\nline 92\n"));
    assert_eq!(
        out.lines,
        Some(LinesShown {
            first: 90,
            last: 92,
            total: 100
        })
    );
    assert_eq!(out.size, body.len() as u64);
    // To the end, and a last line past the end, stop at the file's last line.
    for last in [None, Some(500)] {
        let out = ws.read_lines("big.txt", 97, last).unwrap();
        assert_eq!(out.text(), Some("line 97\nline 98\nline 99\nline 100\n"));
        assert_eq!(out.lines.map(|l| l.last), Some(100));
    }
    // More than the limit at once: whole lines up to it, marked with where to go on.
    let out = ws.read_lines("big.txt", 10, None).unwrap();
    match &out.content {
        ReadContent::Text { text, truncated } => {
            assert!(*truncated);
            assert!(text.len() <= 50 && text.starts_with("line 10\n") && text.ends_with('\n'));
            let n = text.lines().count();
            assert_eq!(out.lines.map(|l| l.last), Some(9 + n));
            assert!(
                out.to_string().contains(&format!(
                    "READ it with \"lines\" from line {} for more]",
                    10 + n
                )),
                "{out}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn read_lines_refuses_lines_the_file_does_not_have_and_the_gates_refusals_hold() {
    let fx = Fx::new();
    fx.put("a.txt", "one\ntwo\n");
    fx.put("bin.dat", "a\0b\n");
    fx.put(".env", "SECRET=1\n");
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "x\n").unwrap();
    symlink(outside.path().join("secret.txt"), fx.root.join("link.txt")).unwrap();
    let ws = fx.ws();
    let e = ws.read_lines("a.txt", 3, Some(4)).unwrap_err().to_string();
    assert!(
        e.contains("it has 2 lines; ask for lines between 1 and 2"),
        "{e}"
    );
    assert!(ws.read_lines("a.txt", 0, None).is_err());
    assert_eq!(
        ws.read_lines("bin.dat", 1, None).unwrap().content,
        ReadContent::Binary
    );
    for refused in [".env", "link.txt", "../outside.txt", "."] {
        assert!(ws.read_lines(refused, 1, Some(2)).is_err(), "{refused}");
    }
}

#[test]
fn read_never_returns_binary() {
    let fx = Fx::new();
    fs::write(fx.path("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    fs::write(fx.path("latin1.txt"), b"caf\xe9\n").unwrap();
    let ws = fx.ws();
    for p in ["img.png", "latin1.txt"] {
        let out = ws.read(p).unwrap();
        assert_eq!(out.content, ReadContent::Binary);
        assert!(
            out.to_string().starts_with("[binary file, not shown:"),
            "{out}"
        );
    }
}

#[test]
fn read_errors_name_path_and_reason() {
    let fx = Fx::new();
    fs::create_dir(fx.path("dir")).unwrap();
    let ws = fx.ws();
    assert_eq!(
        ws.read("nope.txt").unwrap_err().to_string(),
        "cannot read nope.txt: it does not exist"
    );
    assert_eq!(
        ws.read("dir").unwrap_err().to_string(),
        "cannot read dir: it is a directory; use TREE or LIST_PATH to see what it holds"
    );
}

#[test]
fn read_of_fifo_does_not_block() {
    let fx = Fx::new();
    let c = std::ffi::CString::new(fx.path("pipe").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let err = fx.ws().read("pipe").unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn read_follows_symlink_inside_project() {
    let fx = Fx::new();
    fx.put("real/a.txt", "hello\n");
    symlink("real", fx.path("alias")).unwrap();
    assert_eq!(fx.ws().read("alias/a.txt").unwrap().text(), Some("hello\n"));
}

// ---------------------------------------------------------------- WRITE

#[test]
fn write_creates_file_and_parents() {
    let fx = Fx::new();
    let ws = fx.ws();
    let c = ws.write_new("src/pkg/mod.py", "a = 1\nb = 2\n").unwrap();
    assert_eq!(fx.get("src/pkg/mod.py"), "a = 1\nb = 2\n");
    assert_eq!(c.path, "src/pkg/mod.py");
    assert_eq!(c.kind, ChangeKind::Created);
    assert_eq!((c.added, c.removed), (2, 0));
    assert_eq!(c.before, None);
    assert_eq!(c.after.as_deref().map(str::len), Some(64));
    assert!(c.diff.contains("+a = 1\n+b = 2\n"), "{}", c.diff);
    assert!(temps_in(&fx.root).is_empty());
}

#[test]
fn write_refuses_existing_file() {
    let fx = Fx::new();
    fx.put("a.py", "old");
    let err = fx.ws().write_new("a.py", "new").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot write a.py: it already exists; use MODIFY to change an existing file"
    );
    assert_eq!(fx.get("a.py"), "old");
}

#[test]
fn write_new_file_gets_default_mode() {
    let fx = Fx::new();
    fx.ws().write_new("n.txt", "x").unwrap();
    let mode = fs::metadata(fx.path("n.txt")).unwrap().permissions().mode() & 0o777;
    // 0666 less the umask; never executable, never more open than 0666.
    assert_eq!(mode & 0o111, 0);
    assert!(mode & 0o600 == 0o600, "{mode:o}");
}

// ---------------------------------------------------------------- MODIFY

#[test]
fn modify_applies_edits_in_order() {
    let fx = Fx::new();
    fx.put("m.py", "def a():\n    return 1\n\ndef b():\n    return 2\n");
    let c = fx
        .ws()
        .modify(
            "m.py",
            &edits(&[
                ("return 1", "return 10"),
                ("return 10\n\ndef b", "return 10\n\ndef c"),
            ]),
        )
        .unwrap();
    assert_eq!(
        fx.get("m.py"),
        "def a():\n    return 10\n\ndef c():\n    return 2\n"
    );
    assert_eq!(c.kind, ChangeKind::Modified);
    assert_eq!((c.added, c.removed), (2, 2));
    assert_ne!(c.before, c.after);
    assert!(
        c.diff.starts_with("--- a/m.py\n+++ b/m.py\n@@"),
        "{}",
        c.diff
    );
}

#[test]
fn modify_not_found_quotes_closest_lines() {
    let fx = Fx::new();
    let mut body = String::new();
    for i in 1..=11 {
        body.push_str(&format!("x{i} = {i}\n"));
    }
    body.push_str("def foo (x):\n    return x\n");
    fx.put("src/x.py", &body);
    let err = fx
        .ws()
        .modify("src/x.py", &edits(&[("def foo(", "def bar(")]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot modify src/x.py: search text not found: `def foo(`; closest lines: 12: `def foo (x):`"
    );
    assert_eq!(fx.get("src/x.py"), body);
}

#[test]
fn modify_ambiguous_search_says_where() {
    let fx = Fx::new();
    fx.put("a.py", "x = 1\ny = 2\nx = 1\n");
    let err = fx
        .ws()
        .modify("a.py", &edits(&[("x = 1", "x = 3")]))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot modify a.py: search text `x = 1` matches 2 times (lines 1, 3)"),
        "{err}"
    );
    assert_eq!(fx.get("a.py"), "x = 1\ny = 2\nx = 1\n");
}

#[test]
fn modify_failing_second_edit_changes_nothing() {
    let fx = Fx::new();
    fx.put("a.py", "a\nb\n");
    let err = fx
        .ws()
        .modify("a.py", &edits(&[("a", "A"), ("zzz", "q")]))
        .unwrap_err();
    assert!(err.to_string().contains("edit 2 of 2"), "{err}");
    assert_eq!(fx.get("a.py"), "a\nb\n");
}

#[test]
fn modify_whole_content() {
    let fx = Fx::new();
    fx.put("a.txt", "a\nb\n");
    let c = fx
        .ws()
        .modify("a.txt", &Modification::Content("a\nc\n".into()))
        .unwrap();
    assert_eq!(fx.get("a.txt"), "a\nc\n");
    assert_eq!((c.added, c.removed), (1, 1));
}

#[test]
fn modify_missing_file_points_to_write() {
    let fx = Fx::new();
    let ws = fx.ws();
    for p in ["nope.py", "no/dir/nope.py"] {
        let err = ws
            .modify(p, &Modification::Content("x".into()))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot modify {p}: it does not exist; use WRITE to create a new file")
        );
    }
    assert!(!fx.exists("nope.py") && !fx.exists("no"));
}

#[test]
fn modify_refuses_binary() {
    let fx = Fx::new();
    fs::write(fx.path("b.bin"), b"ab\0cd").unwrap();
    let err = fx
        .ws()
        .modify("b.bin", &Modification::Content("x".into()))
        .unwrap_err();
    assert!(err.to_string().contains("binary or non-UTF-8"), "{err}");
    assert_eq!(fs::read(fx.path("b.bin")).unwrap(), b"ab\0cd");
}

#[test]
fn modify_keeps_what_another_program_wrote_meanwhile() {
    // An editor saves the file after pai read it and before pai replaces it: pai's edit is
    // refused with a clear message, the editor's version stays, no temporary is left, and the
    // same edit goes through once nothing interferes.
    for (how, same_size) in [
        ("in place", false),
        ("in place, same size", true),
        ("by rename", false),
    ] {
        let fx = Fx::new();
        fx.put("app.py", "def run():\n    return 1\n");
        let target = fx.path("app.py");
        let dir = fx.root.clone();
        let saved = if same_size {
            "def run():\n    return 7\n"
        } else {
            "def run():\n    return 1  # edited by the user\n"
        };
        let by_rename = how == "by rename";
        let interfere = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = interfere.clone();
        let ws = fx.ws().with_before_replace_hook(move |_| {
            if flag.swap(false, std::sync::atomic::Ordering::SeqCst) {
                if by_rename {
                    fs::write(dir.join("swap.tmp"), saved).unwrap();
                    fs::rename(dir.join("swap.tmp"), &target).unwrap();
                } else {
                    fs::write(&target, saved).unwrap();
                }
            }
        });
        let err = ws
            .modify("app.py", &edits(&[("return 1", "return 2")]))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("app.py") && msg.contains("another program changed it"),
            "{how}: {msg}"
        );
        assert_eq!(fx.get("app.py"), saved, "{how}");
        assert!(temps_in(&fx.root).is_empty(), "{how}");
        if !same_size {
            let c = ws
                .modify("app.py", &edits(&[("return 1", "return 2")]))
                .unwrap();
            assert_eq!(c.kind, ChangeKind::Modified, "{how}");
            assert!(fx.get("app.py").contains("return 2"), "{how}");
        }
    }
}

#[test]
fn modify_keeps_modes_0755_and_0600() {
    let fx = Fx::new();
    fx.put("run.sh", "#!/bin/sh\necho a\n");
    fx.put("secret.cfg", "k=1\n");
    fs::set_permissions(fx.path("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(fx.path("secret.cfg"), fs::Permissions::from_mode(0o600)).unwrap();
    let ws = fx.ws();
    ws.modify("run.sh", &edits(&[("echo a", "echo b")]))
        .unwrap();
    ws.modify("secret.cfg", &Modification::Content("k=2\n".into()))
        .unwrap();
    let mode = |p: &str| fs::metadata(fx.path(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(mode("secret.cfg"), 0o600);
    assert_eq!(fx.get("run.sh"), "#!/bin/sh\necho b\n");
    assert_eq!(fx.get("secret.cfg"), "k=2\n");
}

#[test]
fn modify_keeps_crlf_and_bom() {
    let fx = Fx::new();
    fs::write(fx.path("w.txt"), "\u{FEFF}one\r\ntwo\r\nthree\r\n").unwrap();
    let ws = fx.ws();
    // The model speaks LF; the search still matches and the file stays CRLF.
    let c = ws
        .modify("w.txt", &edits(&[("two\nthree", "TWO\nthree\nfour")]))
        .unwrap();
    assert_eq!(
        fs::read_to_string(fx.path("w.txt")).unwrap(),
        "\u{FEFF}one\r\nTWO\r\nthree\r\nfour\r\n"
    );
    // Normalised before diffing: only the real changes count.
    assert_eq!((c.added, c.removed), (2, 1));
    ws.modify("w.txt", &Modification::Content("a\nb\n".into()))
        .unwrap();
    assert_eq!(
        fs::read_to_string(fx.path("w.txt")).unwrap(),
        "\u{FEFF}a\r\nb\r\n"
    );
}

#[test]
fn modify_keeps_lf_when_model_sends_crlf() {
    let fx = Fx::new();
    fx.put("u.txt", "a\nb\n");
    fx.ws()
        .modify("u.txt", &edits(&[("a\r\nb", "x\r\ny")]))
        .unwrap();
    assert_eq!(fx.get("u.txt"), "x\ny\n");
}

#[test]
fn modify_identical_text_does_not_touch_file() {
    let fx = Fx::new();
    fx.put("s.txt", "same\n");
    let ino = fs::metadata(fx.path("s.txt")).unwrap().ino();
    let c = fx
        .ws()
        .modify("s.txt", &edits(&[("same", "same")]))
        .unwrap();
    assert_eq!(c.kind, ChangeKind::Unchanged);
    assert!(!c.is_change());
    assert_eq!(c.before, c.after);
    assert_eq!(fs::metadata(fx.path("s.txt")).unwrap().ino(), ino);
}

#[test]
fn modify_replaces_inode_atomically() {
    let fx = Fx::new();
    fx.put("s.txt", "a\n");
    let ino = fs::metadata(fx.path("s.txt")).unwrap().ino();
    fx.ws()
        .modify("s.txt", &Modification::Content("b\n".into()))
        .unwrap();
    assert_ne!(fs::metadata(fx.path("s.txt")).unwrap().ino(), ino);
    assert!(temps_in(&fx.root).is_empty());
}

// ---------------------------------------------------------------- diff guard

fn numbered(n: usize, tag: &str) -> String {
    (0..n).map(|i| format!("{tag} line {i}\n")).collect()
}

#[test]
fn diff_guard_refuses_big_rewrite_with_preview() {
    let fx = Fx::new();
    let old = numbered(1000, "old");
    fx.put("big.py", &old);
    let err = fx
        .ws()
        .modify("big.py", &Modification::Content(numbered(1000, "new")))
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WorkspaceError::DiffGuard { .. }));
    assert!(
        msg.starts_with("cannot modify big.py: the change touches 2000 lines (+1000 -1000) of a 1000-line file, over the limit of 500 lines and 50% of the file; split it into several smaller MODIFY steps"),
        "{msg}"
    );
    assert!(
        msg.contains("Diff preview:\n--- a/big.py\n+++ b/big.py\n@@"),
        "{msg}"
    );
    assert!(msg.contains("-old line 0\n"), "{msg}");
    assert!(msg.lines().count() < 80, "preview is bounded");
    assert_eq!(fx.get("big.py"), old);
}

#[test]
fn diff_guard_needs_both_limits() {
    let fx = Fx::new();
    // 2000-line file, 300 lines replaced: 600 changed (> 500) but ratio 0.3 (< 0.5) => allowed.
    let old = numbered(2000, "old");
    fx.put("a.py", &old);
    let mut new = numbered(300, "new");
    new.push_str(
        &old.lines()
            .skip(300)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let c = fx.ws().modify("a.py", &Modification::Content(new)).unwrap();
    assert_eq!((c.added, c.removed), (300, 300));
    // 20-line file fully rewritten: ratio 2.0 but only 40 lines (< 500) => allowed.
    fx.put("small.py", &numbered(20, "old"));
    fx.ws()
        .modify("small.py", &Modification::Content(numbered(20, "new")))
        .unwrap();
    assert_eq!(fx.get("small.py"), numbered(20, "new"));
}

#[test]
fn diff_guard_honours_overrides() {
    let fx = Fx::new();
    fx.put("a.py", &numbered(20, "old"));
    let cfg = WorkspaceConfig::default()
        .with_overrides(|n| match n {
            "PAI_MODIFY_THRESHOLD" => Some("5".into()),
            "PAI_MODIFY_MAX_RATIO" => Some("0.1".into()),
            _ => None,
        })
        .unwrap();
    let mut new = numbered(20, "old");
    new = new
        .replacen("old line 1\n", "x\n", 1)
        .replacen("old line 2\n", "y\n", 1);
    let ws = fx.ws_with(cfg);
    // 4 changed lines: under the threshold of 5.
    ws.modify("a.py", &Modification::Content(new.clone()))
        .unwrap();
    // 6 changed lines: over the threshold, and 6/20 is over 10%.
    let newer = new
        .replacen("old line 3\n", "z\n", 1)
        .replacen("old line 4\n", "w\n", 1)
        .replacen("old line 5\n", "v\n", 1);
    let err = ws
        .modify("a.py", &Modification::Content(newer))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("over the limit of 5 lines and 10%"),
        "{err}"
    );
    assert_eq!(fx.get("a.py"), new);
}

#[test]
fn diff_guard_counts_empty_original() {
    let fx = Fx::new();
    fx.put("e.txt", "");
    let err = fx
        .ws()
        .modify("e.txt", &Modification::Content(numbered(501, "n")))
        .unwrap_err();
    assert!(matches!(err, WorkspaceError::DiffGuard { .. }), "{err}");
}

// ---------------------------------------------------------------- TREE / LIST_PATH

fn sample(fx: &Fx) {
    fx.put(".gitignore", "build/\n*.log\n!keep.log\n");
    fx.put("README.md", "r");
    fx.put("app.log", "x");
    fx.put("keep.log", "x");
    fx.put("build/out.o", "x");
    fx.put("src/main.py", "print(1)\n");
    fx.put("src/util/helpers.py", "def h(): pass\n");
    fx.put("src/util/.gitignore", "*.tmp\n");
    fx.put("src/util/scratch.tmp", "x");
    fx.put("src/__pycache__/main.pyc", "x");
    fx.put(".env", "SECRET=1");
    fx.put(".git/config", "[core]");
    fx.put("node_modules/pkg/index.js", "x");
    fs::create_dir_all(fx.path("empty")).unwrap();
    symlink("src/main.py", fx.path("main_link")).unwrap();
}

#[test]
fn list_path_is_filtered_and_directories_first() {
    let fx = Fx::new();
    sample(&fx);
    let out = fx.ws().list_path(".").unwrap();
    assert_eq!(
        out,
        "empty/\nsrc/\nsrc/util/\nsrc/util/.gitignore\nsrc/util/helpers.py\nsrc/main.py\n\
         .gitignore\nREADME.md\nkeep.log\nmain_link@\n"
    );
    assert_eq!(
        fx.ws().list_path("src/util").unwrap(),
        "src/util/.gitignore\nsrc/util/helpers.py\n"
    );
    assert_eq!(fx.ws().list_path("empty").unwrap(), "(empty directory)\n");
    assert_eq!(fx.ws().list_path("src/main.py").unwrap(), "src/main.py\n");
}

#[test]
fn tree_is_drawn_filtered_and_directories_first() {
    let fx = Fx::new();
    sample(&fx);
    let out = fx.ws().tree(".").unwrap();
    assert_eq!(
        out,
        "./\n\
         ├── empty/\n\
         ├── src/\n\
         │   ├── util/\n\
         │   │   ├── .gitignore\n\
         │   │   └── helpers.py\n\
         │   └── main.py\n\
         ├── .gitignore\n\
         ├── README.md\n\
         ├── keep.log\n\
         └── main_link@\n"
    );
    assert_eq!(
        fx.ws().tree("src/").unwrap(),
        "src/\n├── util/\n│   ├── .gitignore\n│   └── helpers.py\n└── main.py\n"
    );
}

#[test]
fn listings_cap_output_and_count_the_rest() {
    let fx = Fx::new();
    for d in 0..5 {
        for f in 0..30 {
            fx.put(&format!("d{d}/f{f:02}.txt"), "x");
        }
    }
    let ws = fx.ws_with(WorkspaceConfig {
        max_list_entries: 10,
        max_tree_entries: 20,
        max_tree_dir_entries: 8,
        ..WorkspaceConfig::default()
    });
    let list = ws.list_path(".").unwrap();
    assert_eq!(list.lines().count(), 11);
    assert!(
        list.ends_with("… 145 more entries not shown (141 files, 4 directories); LIST_PATH a subdirectory to see them\n"),
        "{list}"
    );
    let tree = ws.tree(".").unwrap();
    assert!(
        tree.contains("│   └── … 22 more entries not shown (22 files, 0 directories)\n"),
        "{tree}"
    );
    assert!(
        tree.ends_with("… 91 more entries not shown (89 files, 2 directories); TREE a subdirectory to see more\n"),
        "{tree}"
    );
    let drawn = tree.lines().filter(|l| !l.contains('…')).count() - 1;
    assert_eq!(drawn, 20);
}

#[test]
fn listing_a_missing_path_fails_clearly() {
    let fx = Fx::new();
    let err = fx.ws().tree("nope").unwrap_err();
    assert_eq!(err.to_string(), "cannot tree nope: it does not exist");
}

#[test]
fn project_files_for_context() {
    let fx = Fx::new();
    sample(&fx);
    let (files, omitted) = fx.ws().project_files(100);
    assert_eq!(
        files,
        [
            "src/util/.gitignore",
            "src/util/helpers.py",
            "src/main.py",
            ".gitignore",
            "README.md",
            "keep.log"
        ]
    );
    assert_eq!(omitted, 0);
    let (files, omitted) = fx.ws().project_files(2);
    assert_eq!(files.len(), 2);
    assert_eq!(omitted, 4);
}

#[test]
fn git_info_exclude_is_honoured() {
    let fx = Fx::new();
    fx.put(".git/info/exclude", "secret_notes.md\n");
    fx.put("secret_notes.md", "x");
    fx.put("a.md", "x");
    assert_eq!(fx.ws().list_path(".").unwrap(), "a.md\n");
}

// ---------------------------------------------------------------- SEARCH

#[test]
fn search_finds_lines_and_honours_ignores() {
    let fx = Fx::new();
    sample(&fx);
    fx.put("src/b.py", "import os\nprint(2)\r\nx = print\n");
    fs::write(fx.path("src/bin.dat"), b"print(\0)").unwrap();
    let out = fx.ws().search(r"print\(\d\)$", None).unwrap();
    assert_eq!(
        out,
        "src/b.py:2: print(2)\nsrc/main.py:1: print(1)\n2 matching lines in 2 files\n(skipped 1 binary and 0 oversized files)\n"
    );
    let out = fx.ws().search("SECRET|core|index", None).unwrap();
    assert!(
        out.starts_with("no matches for `SECRET|core|index` in the project"),
        "{out}"
    );
    let out = fx.ws().search("h", Some("src/util/helpers.py")).unwrap();
    assert_eq!(
        out,
        "src/util/helpers.py:1: def h(): pass\n1 matching lines in 1 files\n"
    );
}

#[test]
fn search_is_bounded() {
    let fx = Fx::new();
    fx.put("many.txt", &"hit\n".repeat(1000));
    let ws = fx.ws_with(WorkspaceConfig {
        max_search_matches: 5,
        ..WorkspaceConfig::default()
    });
    let out = ws.search("hit", None).unwrap();
    assert_eq!(out.lines().count(), 6);
    assert!(out.ends_with("… showing the first 5 of 1,000 matching lines (in 1 files); narrow the pattern or the path\n"), "{out}");
}

#[test]
fn search_rejects_bad_regex() {
    let fx = Fx::new();
    let err = fx.ws().search("(unclosed", None).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot search for `(unclosed`:"),
        "{err}"
    );
    assert!(fx.ws().search("", None).is_err());
}

// ---------------------------------------------------------------- MKDIR / TOUCH

#[test]
fn mkdir_creates_parents_and_tolerates_existing() {
    let fx = Fx::new();
    let ws = fx.ws();
    let c = ws.mkdir("a/b/c").unwrap();
    assert_eq!(c.kind, ChangeKind::DirCreated);
    assert_eq!(c.path, "a/b/c");
    assert!(fx.path("a/b/c").is_dir());
    assert_eq!(ws.mkdir("a/b").unwrap().kind, ChangeKind::Unchanged);
    fx.put("f", "x");
    let err = ws.mkdir("f/g").unwrap_err();
    assert_eq!(err.to_string(), "cannot mkdir f/g: f is not a directory");
}

#[test]
fn touch_creates_or_updates() {
    let fx = Fx::new();
    let ws = fx.ws();
    let c = ws.touch("t/new.txt").unwrap();
    assert_eq!(c.kind, ChangeKind::Created);
    assert_eq!(fx.get("t/new.txt"), "");
    fx.put("old.txt", "keep");
    let old = fs::File::open(fx.path("old.txt")).unwrap();
    old.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
    drop(old);
    assert_eq!(ws.touch("old.txt").unwrap().kind, ChangeKind::Unchanged);
    assert_eq!(fx.get("old.txt"), "keep");
    let m = fs::metadata(fx.path("old.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(m > std::time::SystemTime::UNIX_EPOCH);
}

// ---------------------------------------------------------------- RM

#[test]
fn rm_file_reports_content() {
    let fx = Fx::new();
    fx.put("a.py", "x\ny\n");
    let c = fx.ws().rm("a.py", false).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].kind, ChangeKind::Deleted);
    assert_eq!(c[0].removed, 2);
    assert!(c[0].before.is_some() && c[0].after.is_none());
    assert!(!fx.exists("a.py"));
}

#[test]
fn rm_non_empty_directory_needs_confirmation() {
    let fx = Fx::new();
    fx.put("d/a.txt", "a");
    fx.put("d/e/b.txt", "b");
    fx.put("d/__pycache__/c.pyc", "c");
    let ws = fx.ws();
    let err = ws.rm("d", false).unwrap_err();
    assert!(
        matches!(
            err,
            WorkspaceError::NeedsConfirmation {
                files: 3,
                dirs: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "rm d: it is a directory holding 3 files and 2 subdirectories; removing it needs confirmation"
    );
    assert!(fx.exists("d/e/b.txt"));
    let changes = ws.rm("d", true).unwrap();
    assert!(!fx.exists("d"));
    let deleted: Vec<_> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Deleted)
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(deleted.len(), 3);
    assert!(deleted.contains(&"d/e/b.txt"));
    // Empty directories need no confirmation.
    fs::create_dir(fx.path("empty")).unwrap();
    ws.rm("empty", false).unwrap();
    assert!(!fx.exists("empty"));
}

#[test]
fn rm_symlink_removes_link_not_target() {
    let fx = Fx::new();
    fx.put("target/keep.txt", "k");
    symlink("target", fx.path("link")).unwrap();
    fx.ws().rm("link", true).unwrap();
    assert!(!fx.exists("link"));
    assert_eq!(fx.get("target/keep.txt"), "k");
}

// ---------------------------------------------------------------- MV

#[test]
fn mv_file_and_into_directory() {
    let fx = Fx::new();
    fx.put("a.txt", "a");
    fs::create_dir(fx.path("dest")).unwrap();
    let ws = fx.ws();
    let c = ws.mv("a.txt", "b.txt").unwrap();
    assert_eq!(
        c[0].kind,
        ChangeKind::Renamed {
            from: "a.txt".into()
        }
    );
    assert_eq!(c[0].path, "b.txt");
    assert_eq!(c[0].before, c[0].after);
    let c = ws.mv("b.txt", "dest").unwrap();
    assert_eq!(c[0].path, "dest/b.txt");
    assert_eq!(fx.get("dest/b.txt"), "a");
    let c = ws.mv("dest/b.txt", "new/dir/c.txt").unwrap();
    assert_eq!(c[0].path, "new/dir/c.txt");
    assert_eq!(fx.get("new/dir/c.txt"), "a");
}

#[test]
fn mv_never_overwrites() {
    let fx = Fx::new();
    fx.put("a.txt", "a");
    fx.put("b.txt", "b");
    let err = fx.ws().mv("a.txt", "b.txt").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot mv to b.txt: it already exists; remove it first or choose another name"
    );
    assert_eq!(fx.get("a.txt"), "a");
    assert_eq!(fx.get("b.txt"), "b");
}

#[test]
fn mv_directory_reports_each_file() {
    let fx = Fx::new();
    fx.put("old/a.txt", "a");
    fx.put("old/s/b.txt", "b");
    let ws = fx.ws();
    let c = ws.mv("old", "new").unwrap();
    assert_eq!(c[0].kind, ChangeKind::DirRenamed { from: "old".into() });
    let mut renamed: Vec<(String, String)> = c[1..]
        .iter()
        .map(|c| match &c.kind {
            ChangeKind::Renamed { from } => (from.clone(), c.path.clone()),
            k => panic!("{k:?}"),
        })
        .collect();
    renamed.sort();
    assert_eq!(
        renamed,
        [
            ("old/a.txt".to_string(), "new/a.txt".to_string()),
            ("old/s/b.txt".to_string(), "new/s/b.txt".to_string())
        ]
    );
    let err = ws.mv("new", "new/inner").unwrap_err();
    assert!(err.to_string().contains("cannot move into itself"), "{err}");
}

// ---------------------------------------------------------------- history primitives

#[test]
fn write_bytes_and_remove_file() {
    let fx = Fx::new();
    let ws = fx.ws();
    ws.write_bytes("r/x.sh", b"#!/bin/sh\n", Some(0o750))
        .unwrap();
    assert_eq!(fx.get("r/x.sh"), "#!/bin/sh\n");
    let mode = fs::metadata(fx.path("r/x.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o750);
    ws.write_bytes("r/x.sh", b"v2", None).unwrap();
    let mode = fs::metadata(fx.path("r/x.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o750, "None keeps the existing mode");
    ws.remove_file("r/x.sh").unwrap();
    assert!(!fx.exists("r/x.sh"));
    assert!(matches!(
        ws.remove_file("r/x.sh").unwrap_err(),
        WorkspaceError::NotFound { .. }
    ));
    assert!(ws.remove_file("r").is_err());
    assert!(fx.exists("r"));
    assert!(
        ws.write_bytes(".git/HEAD", b"x", None)
            .unwrap_err()
            .is_refusal()
    );
}

#[test]
fn is_denied_for_history() {
    let fx = Fx::new();
    let ws = fx.ws_with(WorkspaceConfig {
        extra_deny: vec!["*.secret".into()],
        ..WorkspaceConfig::default()
    });
    for p in [
        ".env",
        "a/.env.local",
        ".git/HEAD",
        "x/node_modules/y",
        "k.secret",
        "a/.GIT/x",
        "id_rsa.pub",
    ] {
        assert!(ws.is_denied(p), "{p}");
    }
    for p in ["src/main.rs", ".gitignore", "env.py", "README.md"] {
        assert!(!ws.is_denied(p), "{p}");
    }
}

#[test]
fn check_reports_resolved_path() {
    let fx = Fx::new();
    fx.put("real/a.txt", "x");
    symlink("real", fx.path("alias")).unwrap();
    let ws = fx.ws();
    let r = ws.check("./alias//a.txt").unwrap();
    assert_eq!(r.as_str(), "alias/a.txt");
    assert_eq!(r.resolved(), "real/a.txt");
    assert!(ws.check(".").unwrap().is_root());
}

#[test]
fn concurrent_listings_agree() {
    // The root descriptor is shared; listings must not share its read offset.
    let fx = Fx::new();
    for d in 0..20 {
        for f in 0..20 {
            fx.put(&format!("d{d:02}/f{f:02}.txt"), "x");
        }
    }
    let ws = std::sync::Arc::new(fx.ws_with(WorkspaceConfig {
        max_list_entries: usize::MAX,
        ..WorkspaceConfig::default()
    }));
    let expected = ws.list_path(".").unwrap();
    assert_eq!(expected.lines().count(), 420);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let ws = ws.clone();
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| ws.list_path(".").unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for out in h.join().unwrap() {
            assert_eq!(out, expected);
        }
    }
}

// ---- the diff guard over a whole plan ------------------------------------------------------

/// A 20-line file and a guard that refuses changing more than 4 lines and 25% of it.
fn guarded_plan() -> (Fx, Workspace) {
    let fx = Fx::new();
    let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    fx.put("app.py", &body);
    let ws = fx.ws_with(WorkspaceConfig {
        modify_threshold: 4,
        modify_max_ratio: 0.25,
        ..WorkspaceConfig::default()
    });
    ws.begin_plan();
    (fx, ws)
}

fn rewritten() -> String {
    (1..=20).map(|i| format!("other {i}\n")).collect()
}

#[test]
fn rm_then_write_of_the_same_file_is_judged_as_one_rewrite() {
    let (fx, ws) = guarded_plan();
    ws.rm("app.py", false).unwrap();
    let err = ws.write_new("app.py", &rewritten()).unwrap_err();
    assert!(matches!(err, WorkspaceError::PlanGuard { .. }), "{err}");
    assert!(err.to_string().contains("counts as rewriting it"), "{err}");
    assert!(!fx.exists("app.py"), "nothing was written");
    // A small net change through RM+WRITE passes.
    let mut small: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    small.push_str("line 21\n");
    ws.write_new("app.py", &small).unwrap();
    assert_eq!(fx.get("app.py"), small);
}

#[test]
fn moving_a_file_away_and_writing_or_moving_over_it_is_judged_as_one_rewrite() {
    let (fx, ws) = guarded_plan();
    ws.mv("app.py", "old.py").unwrap();
    let err = ws.write_new("app.py", &rewritten()).unwrap_err();
    assert!(matches!(err, WorkspaceError::PlanGuard { .. }), "{err}");
    ws.write_new("other.py", &rewritten()).unwrap();
    let err = ws.mv("other.py", "app.py").unwrap_err();
    assert!(matches!(err, WorkspaceError::PlanGuard { .. }), "{err}");
    assert!(
        fx.exists("other.py") && !fx.exists("app.py"),
        "the move did not happen"
    );
    // The moved file carries its origin: rewriting it under the new name is refused too.
    let err = ws
        .modify("old.py", &Modification::Content(rewritten()))
        .unwrap_err();
    assert!(
        matches!(
            err,
            WorkspaceError::DiffGuard { .. } | WorkspaceError::PlanGuard { .. }
        ),
        "{err}"
    );
}

#[test]
fn many_small_modifies_add_up_over_the_plan_and_a_new_plan_starts_afresh() {
    let (fx, ws) = guarded_plan();
    let mut refused_at = None;
    for i in 1..=20 {
        let r = ws.modify(
            "app.py",
            &edits(&[(&format!("line {i}\n"), &format!("other {i}\n"))]),
        );
        if let Err(e) = r {
            assert!(matches!(e, WorkspaceError::PlanGuard { .. }), "{e}");
            refused_at = Some(i);
            break;
        }
    }
    // Each edit changes 2 diff lines, far under the limit alone; over the plan, 2 edits make 4
    // (at the threshold), the 3rd makes 6 lines and 30% of the file: refused.
    let at = refused_at.expect("the small edits never added up to a refusal");
    assert_eq!(at, 3);
    let before_new_plan = fx.get("app.py");
    // A new plan judges against what is there now.
    ws.begin_plan();
    ws.modify(
        "app.py",
        &edits(&[(&format!("line {at}\n"), &format!("other {at}\n"))]),
    )
    .unwrap();
    assert_ne!(fx.get("app.py"), before_new_plan);
}

#[test]
fn a_file_the_plan_created_can_be_rewritten_in_the_same_plan() {
    let (fx, ws) = guarded_plan();
    ws.write_new("new.py", "a\nb\nc\nd\ne\nf\ng\nh\n").unwrap();
    ws.rm("new.py", false).unwrap();
    ws.write_new("new.py", &rewritten()).unwrap();
    assert_eq!(fx.get("new.py"), rewritten());
}
