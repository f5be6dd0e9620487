//! Worktree sessions (`pai -w`), end to end with the real binary: sessions run at
//! the same time in their own linked worktrees and commit on their own branches while the
//! user's checkout stays byte for byte as it was; `pai sessions` previews their merges (two
//! sessions writing one file conflict); undo, redo, log, continue, resume and discard work per
//! session from the user's checkout and from inside a worktree; a session that carried out
//! nothing, or was killed, leaves no worktree, branch or stale `git worktree` entry behind.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support;

use pai::llm::ProviderKind;
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, TEST_KEY, git};
use support::session::task_plan;

const KIND: ProviderKind = ProviderKind::Gemini;

fn write_plan(path: &str, content: &str) -> Reply {
    Reply::plan(task_plan(
        "Writing it.",
        json!([{"action": "WRITE", "path": path, "content": content, "purpose": "a file"}]),
    ))
}

/// `pai run REQUEST --yes ARGS` against `mock`, started and not waited for.
fn spawn_run(p: &Project, mock: &MockLlm, request: &str, args: &[&str], cwd: &Path) -> Child {
    p.pai()
        .current_dir(cwd)
        .env(KIND.key_env_var(), TEST_KEY)
        .args(["run", request, "--yes", "--provider", KIND.name()])
        .args(["--base-url", &mock.base_url(KIND)])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `pai ARGS` in `cwd`: (exit code, stdout and stderr).
fn pai_in(p: &Project, cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = p
        .pai()
        .current_dir(cwd)
        .env(KIND.key_env_var(), TEST_KEY)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// `pai sessions --json`, parsed.
fn sessions(p: &Project) -> Vec<Value> {
    let out = p
        .pai()
        .args(["sessions", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Everything of the user's checkout the sessions must leave alone: HEAD, the index's bytes,
/// every file's bytes (outside `.git`), and `git status`.
fn checkout(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out.insert("<HEAD>".into(), fs::read(root.join(".git/HEAD")).unwrap());
    out.insert("<index>".into(), fs::read(root.join(".git/index")).unwrap());
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain", "--ignored", "-uall"])
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        // Reading the status must not rewrite the index it compares.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    out.insert("<status>".into(), status.stdout);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == ".git" {
            continue;
        }
        if path.is_dir() {
            out.insert(format!("{rel}/"), Vec::new());
            walk(root, &path, out);
        } else {
            out.insert(rel, fs::read(&path).unwrap());
        }
    }
}

/// A repository whose checkout has a committed file, an uncommitted edit, a staged change
/// and an untracked file: all of it must stay as it is.
fn busy_repo() -> Project {
    let p = Project::repo(None);
    fs::write(p.root.join("app.py"), "print('app')\n").unwrap();
    fs::write(p.root.join("staged.txt"), "v1\n").unwrap();
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "-m", "app"]);
    fs::write(p.root.join("app.py"), "print('app, edited')\n").unwrap();
    fs::write(p.root.join("staged.txt"), "v2\n").unwrap();
    git(&p.root, &["add", "staged.txt"]);
    fs::write(p.root.join("mine.txt"), "untracked\n").unwrap();
    p
}

fn by_file<'a>(p: &Project, views: &'a [Value], path: &str, content: &str) -> &'a Value {
    views
        .iter()
        .find(|v| {
            let branch = v["branch"].as_str().unwrap_or_default();
            !branch.is_empty()
                && std::process::Command::new("git")
                    .args(["show", &format!("{branch}:{path}")])
                    .current_dir(&p.root)
                    .output()
                    .is_ok_and(|o| o.stdout == content.as_bytes())
        })
        .unwrap_or_else(|| panic!("no session wrote {path} = {content:?}: {views:#?}"))
}

fn conflict_ids(v: &Value) -> Vec<(String, Vec<String>)> {
    serde_json::from_value(v["conflicts_with"].clone()).unwrap()
}

/// `pai run -w` three times at once (a.py, b.py, a.py again); their outputs, and whether
/// `pai sessions` saw all three running at the same moment.
fn three_at_once(p: &Project) -> (Vec<std::process::Output>, bool) {
    // Each model holds its answer until the test has seen the three sessions running at the
    // same time (a fixed pause raced the start of the third on a loaded machine).
    let signals = tempfile::tempdir().unwrap();
    let go = signals.path().join("go");
    let mocks: Vec<MockLlm> = [
        ("a.py", "print('a')\n"),
        ("b.py", "print('b')\n"),
        ("a.py", "print('c')\n"),
    ]
    .iter()
    .map(|(path, content)| {
        MockLlm::start(Script::with_replies([Reply::await_file(
            &go,
            60_000,
            write_plan(path, content),
        )]))
    })
    .collect();
    let children: Vec<Child> = mocks
        .iter()
        .zip(["write a.py", "write b.py", "write a.py differently"])
        .map(|(mock, request)| spawn_run(p, mock, request, &["-w"], &p.root))
        .collect();
    let start = Instant::now();
    let mut all_running = false;
    while start.elapsed() < Duration::from_secs(50) && !all_running {
        let views = sessions(p);
        all_running = views.len() == 3 && views.iter().all(|v| v["running"] == true);
        if !all_running {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    fs::write(&go, "").unwrap();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    (outputs, all_running)
}

#[test]
fn three_sessions_at_once_leave_the_checkout_untouched_and_preview_their_merges() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let head_before = git(&p.root, &["rev-parse", "HEAD"]);
    let (outputs, all_running) = three_at_once(&p);
    for out in &outputs {
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("in its own worktree"), "{text}");
        assert!(text.contains("git diff main...pai/"), "{text}");
        assert!(text.contains("git switch main && git merge pai/"), "{text}");
        assert!(text.contains("it merges cleanly into main"), "{text}");
    }
    assert!(all_running, "the three sessions never ran at the same time");

    // The user's checkout: HEAD, index, every file, git status, and nothing new in it.
    assert_eq!(checkout(&p.root), before);
    assert_eq!(git(&p.root, &["rev-parse", "HEAD"]), head_before);
    assert!(!p.root.join(".pai_history").exists());

    let views = sessions(&p);
    assert_eq!(views.len(), 3, "{views:#?}");
    let a = by_file(&p, &views, "a.py", "print('a')\n");
    let b = by_file(&p, &views, "b.py", "print('b')\n");
    let c = by_file(&p, &views, "a.py", "print('c')\n");
    for v in [a, b, c] {
        assert_eq!(v["running"], false, "{v:#}");
        assert_eq!(v["plans"], 1, "{v:#}");
        assert_eq!(v["ahead"], 1, "{v:#}");
        assert_eq!(v["behind"], 0, "{v:#}");
        assert_eq!(v["base"], "main", "{v:#}");
        assert_eq!(v["conflicts_with_base"], json!([]), "{v:#}");
        assert!(Path::new(v["worktree"].as_str().unwrap()).is_dir());
        assert!(
            !Path::new(v["worktree"].as_str().unwrap()).starts_with(&p.root),
            "the worktree is inside the user's checkout"
        );
    }
    let id = |v: &Value| v["id"].as_str().unwrap().to_string();
    assert_eq!(conflict_ids(a), vec![(id(c), vec!["a.py".to_string()])]);
    assert_eq!(conflict_ids(c), vec![(id(a), vec!["a.py".to_string()])]);
    assert_eq!(conflict_ids(b), vec![]);
    let (code, text) = pai_in(&p, &p.root, &["sessions"]);
    eprintln!(
        "DEBUG\n{text}\n{}",
        String::from_utf8_lossy(&outputs[0].stderr)
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!("conflicts with session {} in: a.py", id(c))),
        "{text}"
    );
    assert!(text.contains("merges cleanly into main"), "{text}");
    // git itself sees three valid worktrees besides the checkout, none prunable.
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 4, "{list}");
    assert!(!list.contains("prunable"), "{list}");
}

/// One worktree session with one plan writing `notes.txt`: its id and worktree.
fn one_session(p: &Project) -> (String, PathBuf) {
    let mock = MockLlm::start(Script::with_replies([write_plan("notes.txt", "one\n")]));
    let out = spawn_run(p, &mock, "write the notes", &["--worktree=notes"], &p.root)
        .wait_with_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let views = sessions(p);
    assert_eq!(views.len(), 1, "{views:#?}");
    (
        views[0]["id"].as_str().unwrap().to_string(),
        PathBuf::from(views[0]["worktree"].as_str().unwrap()),
    )
}

#[test]
fn undo_redo_log_and_continue_per_session_from_the_checkout_and_from_the_worktree() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let (id, wt) = one_session(&p);
    assert_eq!(fs::read_to_string(wt.join("notes.txt")).unwrap(), "one\n");

    // From the user's checkout, by id and by name.
    let (code, text) = pai_in(&p, &p.root, &["log", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("write the notes"), "{text}");
    let (code, text) = pai_in(&p, &p.root, &["undo", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!wt.join("notes.txt").exists(), "{text}");
    let (code, text) = pai_in(&p, &p.root, &["redo", "notes"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(fs::read_to_string(wt.join("notes.txt")).unwrap(), "one\n");
    assert_eq!(checkout(&p.root), before);

    // From inside the worktree, with no id: the session whose worktree it is.
    let (code, text) = pai_in(&p, &wt, &["undo"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!wt.join("notes.txt").exists());
    let (code, text) = pai_in(&p, &wt, &["redo"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(wt.join("notes.txt").exists());

    // --continue inside the worktree continues that session on its branch.
    let mock = MockLlm::start(Script::with_replies([write_plan("more.txt", "two\n")]));
    let out = spawn_run(&p, &mock, "write more", &["--continue"], &wt)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("Continuing session {id}")), "{text}");
    let log = git(&p.root, &["log", "--format=%s", &format!("pai/{id}")]);
    assert!(
        log.starts_with("pai: write more\npai: write the notes\n"),
        "{log}"
    );
    assert_eq!(checkout(&p.root), before);

    // An unknown session is refused; an in-place id that HEAD is not on too.
    let (code, text) = pai_in(&p, &p.root, &["undo", "19990101_000000"]);
    assert_eq!(code, Some(2), "{text}");
}

#[test]
fn resume_a_worktree_session_from_the_checkout() {
    let p = Project::repo(None);
    let (id, wt) = one_session(&p);
    let mock = MockLlm::start(Script::with_replies([Reply::chat("It holds one line.")]));
    let mut pty = support::session::start_session(&p, &mock, false, &["resume", &id]);
    assert!(
        pty.text().contains(&format!("Continuing session {id}")),
        "{}",
        pty.text()
    );
    pty.send_line("what is in the file?");
    pty.expect("It holds one line.");
    support::session::exit_session(&mut pty);
    // The model was told about the session's last turn, and the worktree is still there.
    let sent = mock.generation_requests()[0]
        .last_user_text()
        .unwrap()
        .to_string();
    assert!(sent.contains("write the notes"), "{sent}");
    assert!(wt.join("notes.txt").exists());
    assert!(!p.root.join(".pai_history").exists());
}

#[test]
fn discard_removes_the_worktree_and_refuses_over_uncommitted_work() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let (id, wt) = one_session(&p);
    // A change in no commit: refused, nothing changed.
    fs::write(wt.join("scratch.txt"), "mine\n").unwrap();
    let (code, text) = pai_in(&p, &p.root, &["discard", &id]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("scratch.txt"), "{text}");
    assert!(wt.join("notes.txt").exists());
    assert_eq!(sessions(&p).len(), 1);
    fs::remove_file(wt.join("scratch.txt")).unwrap();

    let (code, text) = pai_in(&p, &p.root, &["discard", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!wt.exists(), "{text}");
    assert!(sessions(&p).is_empty());
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    // The plans are kept where discard keeps them; the branch is gone.
    let refs = git(&p.root, &["for-each-ref", "--format=%(refname)"]);
    assert!(refs.contains(&format!("refs/pai/discarded/{id}")), "{refs}");
    assert!(!refs.contains(&format!("refs/heads/pai/{id}")), "{refs}");
    assert_eq!(checkout(&p.root), before);
}

#[test]
fn a_session_that_carries_out_nothing_leaves_no_worktree() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let mock = MockLlm::start(Script::with_replies([Reply::chat("Hello.")]));
    let out = spawn_run(&p, &mock, "hello", &["-w"], &p.root)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("carried out nothing"), "{text}");
    assert!(sessions(&p).is_empty());
    assert!(git(&p.root, &["branch", "--list", "pai/*"]).is_empty());
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert_eq!(checkout(&p.root), before);
}

#[test]
fn a_killed_session_leaves_no_lock_and_no_orphaned_worktree() {
    let p = Project::repo(None);
    // Killed while waiting for the model: it carried out nothing, so the next command
    // removes what it left.
    let mock = MockLlm::start(Script::with_replies([Reply::delay(
        30_000,
        write_plan("a.py", "x\n"),
    )]));
    let mut child = spawn_run(&p, &mock, "write a.py", &["-w"], &p.root);
    support::session::wait_until(Duration::from_secs(20), "the session to start", || {
        sessions(&p).first().is_some_and(|v| v["running"] == true)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sessions(&p).is_empty());
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(git(&p.root, &["branch", "--list", "pai/*"]).is_empty());

    // Killed in the middle of a plan (its RUN step): the session is finished, its worktree
    // kept with what the plan did, and the next pai there writes history (no stale lock).
    let mock = MockLlm::start(Script::with_replies([Reply::plan(task_plan(
        "On it.",
        json!([
            {"action": "WRITE", "path": "a_new.py", "content": "x\n"},
            {"action": "RUN", "command": "touch started.flag; sleep 30"},
            {"action": "FINISH", "message": "done"}
        ]),
    ))]));
    let mut child = spawn_run(&p, &mock, "write and wait", &["-w", "--allow-run"], &p.root);
    let mut wt = PathBuf::new();
    support::session::wait_until(Duration::from_secs(30), "the RUN step", || {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("pai ended before its RUN step ({status}):\n{err}");
        }
        wt = sessions(&p)
            .first()
            .map(|v| PathBuf::from(v["worktree"].as_str().unwrap_or_default()))
            .unwrap_or_default();
        wt.join("started.flag").exists()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let views = sessions(&p);
    assert_eq!(views.len(), 1, "{views:#?}");
    assert_eq!(views[0]["running"], false);
    assert!(wt.join("a_new.py").exists());
    let mock = MockLlm::start(Script::with_replies([write_plan("b.py", "y\n")]));
    let out = spawn_run(&p, &mock, "write b.py", &[], &wt)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("read-only"), "{text}");
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert!(!list.contains("prunable"), "{list}");
}

#[test]
fn a_session_killed_while_its_worktree_was_checked_out_is_removed_whole() {
    let p = busy_repo();
    let mock = MockLlm::start(Script::with_replies([Reply::delay(
        30_000,
        write_plan("a.py", "x\n"),
    )]));
    let mut child = spawn_run(&p, &mock, "write a.py", &["-w"], &p.root);
    let mut view = Value::Null;
    // Running, and its worktree whole (no longer marked as being made).
    let making_of = |view: &Value| {
        let wt = PathBuf::from(view["worktree"].as_str().unwrap_or_default());
        let records = wt
            .parent()
            .and_then(Path::parent)
            .unwrap_or(&wt)
            .join("sessions");
        let id = view["id"].as_str().unwrap_or_default();
        (
            wt,
            records.join(format!("{id}.json")),
            records.join(format!("{id}.making")),
        )
    };
    support::session::wait_until(Duration::from_secs(30), "the session to start", || {
        view = sessions(&p).first().cloned().unwrap_or_default();
        view["running"] == true && !making_of(&view).2.exists()
    });
    // What a kill in the middle of the checkout leaves: the mark that the worktree is being
    // made, a worktree missing files and its index, and the branch at the base.
    let (wt, record, making) = making_of(&view);
    let id = view["id"].as_str().unwrap();
    assert!(record.is_file());
    fs::write(&making, "").unwrap();
    fs::remove_file(wt.join("app.py")).unwrap();
    let admin = p.root.join(".git/worktrees").join(format!("pai-{id}"));
    fs::remove_file(admin.join("index")).unwrap();
    // And the lock of its branch, as a kill while the branch was being created leaves it.
    let branch_lock = p.root.join(format!(".git/refs/heads/pai/{id}.lock"));
    fs::write(&branch_lock, "").unwrap();
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(sessions(&p), Vec::<Value>::new());
    assert!(!wt.exists());
    assert!(!record.exists());
    assert!(!making.exists());
    assert!(!branch_lock.exists());
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(git(&p.root, &["branch", "--list", "pai/*"]).is_empty());
}

/// A lock left on a session branch's name (a session killed while creating its branch, or a
/// git command under way) is not pai's to break when no session of pai's claims it: a new
/// session takes the next free id instead of failing on the lock.
#[test]
fn a_locked_branch_name_makes_the_session_take_the_next_id() {
    let p = Project::repo(None);
    let heads = p.root.join(".git/refs/heads/pai");
    fs::create_dir_all(&heads).unwrap();
    // Every id the session could be given in the next minute, taken by a lock.
    let now = chrono::Local::now();
    let planted: Vec<PathBuf> = (0..60)
        .map(|s| now + chrono::Duration::seconds(s))
        .map(|t| heads.join(format!("{}.lock", t.format("%Y%m%d_%H%M%S"))))
        .collect();
    for lock in &planted {
        fs::write(lock, "").unwrap();
    }
    let mock = MockLlm::start(Script::with_replies([write_plan("a.py", "x\n")]));
    let out = spawn_run(&p, &mock, "write a.py", &["-w"], &p.root)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    let views = sessions(&p);
    assert_eq!(views.len(), 1, "{views:#?}");
    let id = views[0]["id"].as_str().unwrap();
    assert!(id.ends_with("-2"), "{id}");
    assert!(
        planted.iter().all(|l| l.exists()),
        "a lock pai does not own was removed"
    );
}

#[test]
fn carry_brings_the_uncommitted_changes_and_undo_gives_them_back_exactly() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let mock = MockLlm::start(Script::with_replies([Reply::plan(task_plan(
        "Editing it.",
        json!([{"action": "MODIFY", "path": "app.py",
                "edits": [{"search": "app, edited", "replace": "app, by pai"}]}]),
    ))]));
    let out = spawn_run(&p, &mock, "edit app.py", &["-w", "--carry"], &p.root)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("carried into the worktree"), "{text}");
    let views = sessions(&p);
    let id = views[0]["id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(views[0]["worktree"].as_str().unwrap());
    assert_eq!(
        fs::read_to_string(wt.join("app.py")).unwrap(),
        "print('app, by pai')\n"
    );
    assert_eq!(
        fs::read_to_string(wt.join("mine.txt")).unwrap(),
        "untracked\n"
    );
    assert_eq!(fs::read_to_string(wt.join("staged.txt")).unwrap(), "v2\n");
    // The user's version went in as a snapshot below the plan, so the plan holds only pai's.
    let kinds = git(
        &p.root,
        &[
            "log",
            "--format=%(trailers:key=Pai-Kind,valueonly,separator=)",
            &format!("pai/{id}"),
        ],
    );
    assert!(kinds.starts_with("plan\nuser\n"), "{kinds}");

    let (code, text) = pai_in(&p, &p.root, &["undo", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        fs::read_to_string(wt.join("app.py")).unwrap(),
        "print('app, edited')\n"
    );
    // What was carried and not changed since is still in the user's checkout: discard may
    // remove the worktree.
    let (code, text) = pai_in(&p, &p.root, &["discard", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!wt.exists());
    assert_eq!(checkout(&p.root), before);
}

#[test]
fn an_interactive_session_in_its_worktree() {
    let p = busy_repo();
    let before = checkout(&p.root);
    let mock = MockLlm::start(Script::with_replies([write_plan("notes.txt", "one\n")]));
    let mut pty = support::session::start_session(&p, &mock, false, &["-w", "--yes"]);
    pty.send_line("write the notes");
    let mut wt = PathBuf::new();
    support::session::wait_until(Duration::from_secs(20), "the plan", || {
        wt = sessions(&p)
            .first()
            .map(|v| PathBuf::from(v["worktree"].as_str().unwrap_or_default()))
            .unwrap_or_default();
        wt.join("notes.txt").exists()
    });
    pty.expect(support::session::PROMPT);
    support::session::exit_session(&mut pty);
    let text = pty.text();
    assert!(text.contains("in its own worktree"), "{text}");
    assert!(text.contains("git switch main && git merge pai/"), "{text}");
    assert_eq!(checkout(&p.root), before);
    assert_eq!(sessions(&p).len(), 1);
}

#[test]
fn worktree_setting_makes_it_the_default_and_copies_what_the_project_includes() {
    let p = busy_repo();
    fs::write(p.root.join(".gitignore"), ".env\n").unwrap();
    fs::write(p.root.join(".env"), "TOKEN=1\n").unwrap();
    let config = p.home.join(".config/pai-code");
    fs::create_dir_all(&config).unwrap();
    fs::write(
        config.join("config.toml"),
        format!(
            "worktree = true\n[projects.\"{}\"]\nworktree_include = [\".env\"]\n",
            p.root.canonicalize().unwrap().display()
        ),
    )
    .unwrap();
    let before = checkout(&p.root);
    let mock = MockLlm::start(Script::with_replies([write_plan("notes.txt", "one\n")]));
    let out = spawn_run(&p, &mock, "write the notes", &[], &p.root)
        .wait_with_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let views = sessions(&p);
    assert_eq!(views.len(), 1, "{views:#?}");
    let wt = PathBuf::from(views[0]["worktree"].as_str().unwrap());
    assert_eq!(fs::read_to_string(wt.join(".env")).unwrap(), "TOKEN=1\n");
    assert_eq!(checkout(&p.root), before);

    // --in-place: this one runs in the checkout.
    let mock = MockLlm::start(Script::with_replies([write_plan("here.txt", "here\n")]));
    let out = spawn_run(&p, &mock, "write here", &["--in-place"], &p.root)
        .wait_with_output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(p.root.join("here.txt").exists());
    assert_eq!(sessions(&p).len(), 1);
}

#[test]
fn discard_inside_the_worktree_discards_that_session() {
    let p = Project::repo(None);
    let (id, wt) = one_session(&p);
    let (code, text) = pai_in(&p, &wt, &["discard"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!wt.exists(), "{text}");
    assert!(sessions(&p).is_empty());
    let refs = git(&p.root, &["for-each-ref", "--format=%(refname)"]);
    assert!(refs.contains(&format!("refs/pai/discarded/{id}")), "{refs}");
}

#[test]
fn a_session_that_cannot_start_leaves_no_worktree() {
    let p = Project::repo(None);
    // No API key: the session fails before its first turn.
    let out = p
        .pai()
        .args(["run", "hello", "--yes", "-w"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let list = git(&p.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(git(&p.root, &["branch", "--list", "pai/*"]).is_empty());
}

/// Every entry below `root` (its `.git` file and pai's `.pai_history` aside), by its raw path: its kind, permission
/// bits and bytes (a link: its target, not followed).
fn tree_state(root: &Path) -> BTreeMap<Vec<u8>, (String, u32, Vec<u8>)> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            if rel == b".git" || rel == b".pai_history" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            let perm = meta.permissions().mode() & 0o7777;
            let state = if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                ("link".into(), 0, target.as_os_str().as_bytes().to_vec())
            } else if meta.is_dir() {
                dirs.push(path);
                ("dir".into(), perm, Vec::new())
            } else {
                ("file".into(), perm, fs::read(&path).unwrap())
            };
            out.insert(rel, state);
        }
    }
    out
}

/// A repository with what a checkout must get right: exec bits, links (to a file, a folder,
/// out of the tree, dangling), CRLF bytes stored as they are, `eol=crlf` and `ident` from a
/// root and a nested `.gitattributes`, a submodule's gitlink, names that are not UTF-8 and
/// unicode ones, empty files, deep folders; and `special`, a name pai leaves to libgit2's
/// checkout (which then checks out the whole tree), if any.
fn checkout_corpus(p: &Project, special: Option<&str>) {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{PermissionsExt, symlink};
    let put = |rel: &[u8], bytes: &[u8]| {
        let path = p.root.join(OsStr::from_bytes(rel));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    };
    put(b"run.sh", b"#!/bin/sh\necho hi\n");
    fs::set_permissions(p.root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    put(b"win.txt", b"one\r\ntwo\r\n");
    put(b".gitattributes", b"*.crlf text eol=crlf\n*.id ident\n");
    put(b"lf.crlf", b"a\nb\n");
    put(b"version.id", b"$Id$\n");
    put(b"nested/.gitattributes", b"*.txt eol=crlf\n");
    put(b"nested/notes.txt", b"x\ny\n");
    put(b"nested/raw.bin", b"\x00\x01\r\n");
    put(b"deep/a/b/c/d/e.py", b"x = 1\n");
    put(b"empty", b"");
    put(b"deep/empty.txt", b"");
    put(b"caf\xe9.txt", b"latin-1 name\n");
    put("naïve/日本語.md".as_bytes(), b"unicode\n");
    symlink("run.sh", p.root.join("to_file")).unwrap();
    symlink("deep/a", p.root.join("to_dir")).unwrap();
    symlink("/etc/passwd", p.root.join("out_of_tree")).unwrap();
    symlink("missing/nowhere", p.root.join("deep/dangling")).unwrap();
    if let Some(name) = special {
        put(name.as_bytes(), b"special\n");
    }
    git(&p.root, &["add", "-A"]);
    let head = git(&p.root, &["rev-parse", "HEAD"]);
    git(
        &p.root,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},sub", head.trim()),
        ],
    );
    git(&p.root, &["commit", "-q", "-m", "corpus"]);
}

/// A session started with `-w` whose model call `mock` holds, once its worktree is whole:
/// the process and the worktree.
fn held_worktree(p: &Project, mock: &MockLlm) -> (Child, PathBuf) {
    let child = spawn_run(p, mock, "hold", &["-w"], &p.root);
    let mut ours = PathBuf::new();
    support::session::wait_until(Duration::from_secs(60), "the worktree", || {
        let Some(view) = sessions(p).first().cloned() else {
            return false;
        };
        ours = PathBuf::from(view["worktree"].as_str().unwrap_or_default());
        let making = ours
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .join("sessions")
            .join(format!(
                "{}.making",
                view["id"].as_str().unwrap_or_default()
            ));
        view["running"] == true && !making.exists()
    });
    (child, ours)
}

/// git finds the worktree `ours` clean: from the index's stat data alone (`git diff-files`
/// reads no file whose stat data matches), in `git status` and against HEAD.
fn assert_clean_to_git(ours: &Path, case: &str) {
    let quiet = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(ours)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(quiet(&["diff-files", "--name-status"]), "", "{case}");
    assert_eq!(quiet(&["status", "--porcelain", "-uall"]), "", "{case}");
    assert_eq!(quiet(&["diff", "HEAD", "--stat"]), "", "{case}");
}

/// The worktree pai made for a running session (`-w`, its model call held) compared with
/// the one `git worktree add` makes of the same commit: every file's bytes, mode and link
/// target the same, and git finds it clean from the index's stat data alone (`git
/// diff-files` reads no file whose stat data matches), with `core.autocrlf` off and on, and
/// when a name makes libgit2 check the tree out.
#[test]
fn a_worktree_is_checked_out_as_git_checks_it_out() {
    for (autocrlf, special) in [
        ("false", None),
        ("true", None),
        ("false", Some("at 10:30.txt")),
    ] {
        let p = Project::repo(None);
        git(&p.root, &["config", "core.autocrlf", autocrlf]);
        checkout_corpus(&p, special);
        let theirs = p.root.parent().unwrap().join("git-worktree");
        git(
            &p.root,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                &theirs.to_string_lossy(),
            ],
        );
        let mock = MockLlm::start(Script::with_replies([Reply::delay(
            30_000,
            write_plan("a.py", "x\n"),
        )]));
        let (mut child, ours) = held_worktree(&p, &mock);
        let (mine, git_made) = (tree_state(&ours), tree_state(&theirs));
        assert!(mine.len() > 20, "{mine:?}");
        for (path, state) in &git_made {
            assert_eq!(
                mine.get(path),
                Some(state),
                "autocrlf={autocrlf}: {}",
                String::from_utf8_lossy(path)
            );
        }
        let extra: Vec<String> = mine
            .keys()
            .filter(|k| !git_made.contains_key(*k))
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        assert_eq!(extra, Vec::<String>::new(), "autocrlf={autocrlf}");
        assert_clean_to_git(&ours, autocrlf);
        let list = git(&p.root, &["worktree", "list", "--porcelain"]);
        assert!(!list.contains("locked"), "{list}");
        child.kill().unwrap();
        child.wait().unwrap();
        // The next command tidies the killed session's worktree away, links and all.
        assert_eq!(sessions(&p), Vec::<Value>::new());
        assert!(!ours.exists());
        assert!(fs::symlink_metadata("/etc/passwd").is_ok());
    }
}
