//! Git fidelity, table-driven: each situation is a repository users really have, a plan run by
//! the real binary against the mock model, and git itself as the independent oracle. After the
//! plan, `git fsck` must pass; `pai undo` must then give back exactly the state before the plan
//! (every file's bytes and mode, `git ls-files -s` and `-v`, and `git status --porcelain`), and
//! `pai redo` exactly the state after it. Adding a situation is one entry in `situations!`.
//!
//! Every situation runs twice: in the user's checkout (`in_place::`) and in the worktree of a
//! worktree session (`in_worktree::`, `pai -w`), where the situation sets up and runs its
//! plans inside the worktree and the user's checkout must stay exactly as it was.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use pai::llm::ProviderKind;
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::TEST_KEY;

const KIND: ProviderKind = ProviderKind::Gemini;

struct Repo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    log: Vec<String>,
    /// Environment given to git and pai alike (`GIT_DIR`, `GIT_WORK_TREE`, ...).
    env: Vec<(String, PathBuf)>,
    /// In worktree mode: the user's checkout and its state, which must not change.
    main: Option<(PathBuf, State)>,
}

/// Everything the oracle compares.
#[derive(Debug, PartialEq, Eq)]
struct State {
    files: BTreeMap<String, String>,
    staged: String,
    flags: String,
    status: String,
}

impl Repo {
    fn new() -> Repo {
        let r = Repo::unborn();
        r.put("README.md", "# demo\n");
        r.put("app.py", "def main():\n    print('hi')\n");
        r.git(&["add", "-A"]);
        r.git(&["commit", "-q", "-m", "initial"]);
        r
    }

    /// A repository with no commit yet.
    fn unborn() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        let home = tmp.path().join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        let r = Repo {
            _tmp: tmp,
            root,
            home,
            log: Vec::new(),
            env: Vec::new(),
            main: None,
        };
        r.git(&["init", "-q", "-b", "main"]);
        r
    }

    /// A repository like [`Repo::new`] with a worktree session (`pai -w`, one plan writing
    /// `seed.txt`) whose worktree is where the situation then works; `None` for a situation
    /// that cannot apply to a worktree ([`IN_PLACE_ONLY`]).
    fn in_worktree(situation: &str) -> Option<Repo> {
        if IN_PLACE_ONLY.iter().any(|(name, _)| *name == situation) {
            return None;
        }
        let mut r = Repo::new();
        let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
            "intent": "task", "reply": "On it.", "observe": false,
            "steps": [write("seed.txt", "seed\n"), {"action": "FINISH", "message": "done"}]
        }))]));
        let out = r
            .pai()
            .args(["run", "seed", "--json", "--yes", "-w"])
            .args([
                "--provider",
                KIND.name(),
                "--base-url",
                &mock.base_url(KIND),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = r.pai().args(["sessions", "--json"]).output().unwrap();
        let views: Value = serde_json::from_slice(&out.stdout).unwrap();
        let worktree = PathBuf::from(views[0]["worktree"].as_str().unwrap());
        let main = (r.root.clone(), r.state());
        r.root = worktree;
        r.main = Some(main);
        Some(r)
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn put(&self, rel: &str, text: &str) {
        let p = self.p(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn chmod(&self, rel: &str, mode: u32) {
        fs::set_permissions(self.p(rel), fs::Permissions::from_mode(mode)).unwrap();
    }

    fn git(&self, args: &[&str]) -> String {
        let out = self.git_cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn git_cmd(&self) -> Command {
        let mut c = Command::new("git");
        c.current_dir(&self.root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    fn commit_all(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn pai(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pai"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env(KIND.key_env_var(), TEST_KEY)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.root);
        cmd
    }

    /// Run one plan of `steps` (FINISH appended) with `--yes --allow-run`; whether it exited 0.
    fn plan(&mut self, steps: Value) -> bool {
        let mut steps = steps.as_array().cloned().unwrap_or_default();
        steps.push(json!({"action": "FINISH", "message": "done"}));
        let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
            "intent": "task", "reply": "On it.", "observe": false, "steps": steps
        }))]));
        let out = self
            .pai()
            .args(["run", "do the task", "--json", "--yes", "--allow-run"])
            .args([
                "--provider",
                KIND.name(),
                "--base-url",
                &mock.base_url(KIND),
            ])
            .output()
            .unwrap();
        self.log.push(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        out.status.success()
    }

    fn cmd(&mut self, args: &[&str]) -> bool {
        let out = self.pai().args(args).output().unwrap();
        self.log.push(format!(
            "pai {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        out.status.success()
    }

    fn shown(&self) -> String {
        self.log.join("\n---\n")
    }

    fn fsck(&self) {
        let out = self
            .git_cmd()
            .args(["fsck", "--no-progress", "--no-dangling"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git fsck: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.shown()
        );
    }

    fn state(&self) -> State {
        let mut files = BTreeMap::new();
        walk(&self.root, &self.root, &mut files);
        State {
            files,
            staged: self.git(&["ls-files", "-s"]),
            flags: self.git(&["ls-files", "-v"]),
            status: self
                .git(&["status", "--porcelain", "--ignored", "-uall"])
                .lines()
                .filter(|l| !l.contains(".pai_history"))
                .map(|l| format!("{l}\n"))
                .collect(),
        }
    }
}

/// Situations that cannot apply in a worktree, and why.
const IN_PLACE_ONLY: &[(&str, &str)] = &[
    (
        "git_index_file_from_the_environment",
        "it copies `.git/index`, and a linked worktree's `.git` is a file",
    ),
    (
        "a_held_index_lock_fails_the_plan_loudly_and_leaves_the_lock",
        "it writes `.git/index.lock`, and a linked worktree's `.git` is a file",
    ),
    (
        "second_session_undo_walks_back_into_the_first_sessions_plan",
        "in the worktree the line of work starts with the session's seed plan, so a third undo goes on into it",
    ),
    (
        "discard_gives_back_the_state_before_the_session",
        "it expects HEAD back on main, which is checked out in the user's checkout; discarding a worktree session removes its worktree (tests/it/worktree_sessions.rs)",
    ),
    (
        "separate_git_dir_keeps_writes_in_the_work_tree",
        "it builds its own repository, with no worktree session",
    ),
    (
        "git_dir_and_work_tree_from_the_environment",
        "it builds its own repository, with no worktree session",
    ),
];

/// A situation left out of worktree mode is one that exists: a renamed one is not skipped
/// by mistake.
#[test]
fn in_place_only_names_real_situations() {
    for (name, _) in IN_PLACE_ONLY {
        assert!(SITUATIONS.contains(name), "{name} is not a situation");
    }
    assert!(SITUATIONS.len() > IN_PLACE_ONLY.len() * 5);
}

impl Drop for Repo {
    /// In worktree mode, whatever the situation did in the worktree: the user's checkout is
    /// exactly as it was.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Some((main, before)) = self.main.take() {
            let worktree = std::mem::replace(&mut self.root, main);
            let now = self.state();
            self.root = worktree;
            assert_eq!(now, before, "the user's checkout changed\n{}", self.shown());
        }
    }
}

/// Every entry under `dir` but git's and pai's own: bytes and mode, link targets, empty
/// directories.
fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    if entries.is_empty() && dir != root {
        let rel = format!("{:?}", dir.strip_prefix(root).unwrap());
        out.insert(rel, "empty dir".into());
    }
    for e in entries {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap();
        if rel == Path::new(".git") || rel == Path::new(".pai_history") {
            continue;
        }
        let meta = fs::symlink_metadata(&path).unwrap();
        let key = format!("{rel:?}");
        if meta.file_type().is_symlink() {
            out.insert(key, format!("link {:?}", fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            if path.join(".git").exists() {
                out.insert(key.clone(), "nested repository".into());
            }
            walk(root, &path, out);
        } else {
            let mode = meta.permissions().mode() & 0o777;
            let bytes = fs::read(&path).unwrap();
            out.insert(
                key,
                format!("{mode:o} {:?}", String::from_utf8_lossy(&bytes)),
            );
        }
    }
}

fn write(path: &str, content: &str) -> Value {
    json!({"action": "WRITE", "path": path, "content": content})
}

fn modify(path: &str, search: &str, replace: &str) -> Value {
    json!({"action": "MODIFY", "path": path, "edits": [{"search": search, "replace": replace}]})
}

fn rm(path: &str) -> Value {
    json!({"action": "RM", "path": path})
}

fn run(command: &str) -> Value {
    json!({"action": "RUN", "command": command})
}

fn mv(from: &str, to: &str) -> Value {
    json!({"action": "MV", "path": from, "to": to})
}

/// The oracle every situation is held to: the plan ran and left a consistent repository; undo
/// gives back the state before it exactly, redo the state after it.
fn round_trip(r: &mut Repo, steps: Value) {
    let before = r.state();
    assert!(r.plan(steps), "the plan failed\n{}", r.shown());
    r.fsck();
    let after = r.state();
    assert_ne!(
        before.files,
        after.files,
        "the plan changed nothing\n{}",
        r.shown()
    );
    assert!(r.cmd(&["undo"]), "undo failed\n{}", r.shown());
    r.fsck();
    let undone = r.state();
    assert_eq!(undone, before, "undo is not exact\n{}", r.shown());
    assert!(r.cmd(&["redo"]), "redo failed\n{}", r.shown());
    r.fsck();
    assert_eq!(
        r.state().files,
        after.files,
        "redo is not exact\n{}",
        r.shown()
    );
}

/// Files git converts on the way in: the plan's result is held to the same edit made by hand
/// with plain git in a twin repository (`setup` run in both; the bytes pai left at `path`
/// written there and `git add`ed and committed): the same tree, the same index (`git ls-files
/// -s`, so the same blobs), the same `git status`, and no `git diff`. Then undo gives back the
/// exact state before (the user's bytes, whatever git's checkout would make of the blob), and
/// redo the state after.
fn converted_round_trip(setup: fn(&Repo), steps: Value, path: &str) {
    let mut r = Repo::new();
    setup(&r);
    let twin = Repo::new();
    setup(&twin);
    let before = r.state();
    assert_eq!(before, twin.state(), "the twin differs before the plan");
    assert!(r.plan(steps), "the plan failed\n{}", r.shown());
    r.fsck();
    let after = r.state();
    assert_ne!(
        before.files,
        after.files,
        "the plan changed nothing\n{}",
        r.shown()
    );
    // The plan's preview announces a snapshot of the user's edits only where git sees one.
    assert_eq!(
        r.shown().contains("\"snapshot\":true"),
        before.status.contains(&format!(" M {path}")),
        "{}",
        r.shown()
    );
    fs::write(twin.p(path), fs::read(r.p(path)).unwrap()).unwrap();
    twin.git(&["add", path]);
    twin.git(&["commit", "-q", "-m", "the same edit by hand"]);
    let by_hand = twin.state();
    assert_eq!(
        r.git(&["rev-parse", "HEAD^{tree}"]),
        twin.git(&["rev-parse", "HEAD^{tree}"]),
        "pai committed other blobs than git would\n{}",
        r.shown()
    );
    assert_eq!(after.staged, by_hand.staged, "{}", r.shown());
    assert_eq!(after.status, by_hand.status, "{}", r.shown());
    assert_eq!(r.git(&["diff", "--stat"]), "", "{}", r.shown());
    assert!(r.cmd(&["undo"]), "undo failed\n{}", r.shown());
    r.fsck();
    assert_eq!(r.state(), before, "undo is not exact\n{}", r.shown());
    assert!(r.cmd(&["redo"]), "redo failed\n{}", r.shown());
    r.fsck();
    assert_eq!(r.state(), after, "redo is not exact\n{}", r.shown());
}

macro_rules! situations {
    ($($name:ident => |$r:ident| $body:block)*) => {
        /// Every situation's name.
        const SITUATIONS: &[&str] = &[$(stringify!($name)),*];

        /// Each situation in the user's checkout.
        mod in_place {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let mut $r = Repo::new();
                    $body
                }
            )*
        }
        /// Each situation in a worktree session's worktree; the user's checkout is checked
        /// unchanged when the repository is dropped.
        mod in_worktree {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let Some(mut $r) = Repo::in_worktree(stringify!($name)) else {
                        return;
                    };
                    $body
                }
            )*
        }
    };
}

situations! {
    clean_tree_write_a_new_file => |r| {
        round_trip(&mut r, json!([write("new.py", "x = 1\n")]));
    }
    clean_tree_modify_a_tracked_file => |r| {
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    dirty_tracked_file_the_plan_modifies => |r| {
        r.put("app.py", "def main():\n    print('hi')\n# mine\n");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    dirty_tracked_file_the_plan_does_not_touch => |r| {
        r.put("README.md", "# demo\nmy notes\n");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    staged_change_on_the_file_the_plan_modifies => |r| {
        r.put("app.py", "def main():\n    print('hi')\n# staged\n");
        r.git(&["add", "app.py"]);
        r.put("app.py", "def main():\n    print('hi')\n# staged\n# and more\n");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    untracked_file_removed_by_the_plan => |r| {
        r.put("notes.txt", "mine\n");
        round_trip(&mut r, json!([rm("notes.txt")]));
    }
    private_untracked_file_keeps_mode_0600 => |r| {
        r.put("secret_notes.txt", "mine\n");
        r.chmod("secret_notes.txt", 0o600);
        round_trip(&mut r, json!([rm("secret_notes.txt")]));
    }
    ignored_file_removed_with_a_tracked_change => |r| {
        r.put(".gitignore", "*.log\n");
        r.commit_all("ignore logs");
        r.put("app.log", "log\n");
        round_trip(&mut r, json!([rm("app.log"), modify("app.py", "'hi'", "'hello'")]));
    }
    executable_file_modified_keeps_its_mode => |r| {
        r.put("run.sh", "#!/bin/sh\necho hi\n");
        r.chmod("run.sh", 0o755);
        r.commit_all("script");
        round_trip(&mut r, json!([modify("run.sh", "echo hi", "echo hello")]));
    }
    tracked_file_moved => |r| {
        round_trip(&mut r, json!([mv("app.py", "main.py")]));
    }
    untracked_file_moved => |r| {
        r.put("draft.txt", "draft\n");
        round_trip(&mut r, json!([mv("draft.txt", "final.txt")]));
    }
    tracked_file_removed => |r| {
        round_trip(&mut r, json!([rm("app.py")]));
    }
    new_nested_directories_leave_nothing_after_undo => |r| {
        round_trip(&mut r, json!([write("src/pkg/deep/mod.py", "x = 1\n")]));
    }
    crlf_file_modified_keeps_its_line_endings => |r| {
        r.put("win.txt", "one\r\ntwo\r\n");
        r.commit_all("crlf");
        round_trip(&mut r, json!([modify("win.txt", "two", "three")]));
    }
    file_without_a_final_newline => |r| {
        r.put("end.txt", "no newline");
        r.commit_all("no newline");
        round_trip(&mut r, json!([modify("end.txt", "no newline", "still none")]));
    }
    run_changes_an_untracked_file => |r| {
        r.put("data.txt", "original\n");
        round_trip(&mut r, json!([run("echo changed > data.txt")]));
    }
    run_changes_a_tracked_file_with_uncommitted_edits => |r| {
        r.put("README.md", "# demo\nmy uncommitted notes\n");
        round_trip(&mut r, json!([run("echo rewritten > README.md")]));
    }
    run_creates_a_file => |r| {
        round_trip(&mut r, json!([run("echo new > made.txt")]));
    }
    run_deletes_a_tracked_file => |r| {
        round_trip(&mut r, json!([run("rm app.py")]));
    }
    skip_worktree_file_keeps_its_bit_and_local_change => |r| {
        r.put("config.ini", "a=1\n");
        r.commit_all("config");
        r.git(&["update-index", "--skip-worktree", "config.ini"]);
        r.put("config.ini", "a=local\n");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    assume_unchanged_file_keeps_its_bit => |r| {
        r.put("config.ini", "a=1\n");
        r.commit_all("config");
        r.git(&["update-index", "--assume-unchanged", "config.ini"]);
        r.put("config.ini", "a=local\n");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    intent_to_add_entry_is_kept => |r| {
        r.put("later.py", "y = 2\n");
        r.git(&["add", "-N", "later.py"]);
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    sparse_checkout_keeps_entries_outside_the_cone => |r| {
        r.put("inside/a.py", "a\n");
        r.put("outside/b.py", "b\n");
        r.commit_all("two dirs");
        r.git(&["sparse-checkout", "set", "inside"]);
        round_trip(&mut r, json!([write("inside/c.py", "c\n")]));
        assert!(r.git(&["ls-files"]).contains("outside/b.py"));
    }
    eol_crlf_attribute_file_modified_as_git_would => |_r| {
        // Stored with LF, checked out with CRLF (`gradlew.bat`).
        converted_round_trip(|r| {
            r.put(".gitattributes", "*.bat text eol=crlf\n");
            r.put("run.bat", "@echo off\necho hi\n");
            r.commit_all("attrs");
            r.git(&["rm", "-q", "--cached", "run.bat"]);
            r.git(&["reset", "-q", "--hard"]);
            assert_eq!(fs::read(r.p("run.bat")).unwrap(), b"@echo off\r\necho hi\r\n");
        }, json!([modify("run.bat", "echo hi", "echo hello")]), "run.bat");
    }
    eol_crlf_attribute_new_file_written_as_git_would => |_r| {
        converted_round_trip(|r| {
            r.put(".gitattributes", "*.bat text eol=crlf\n");
            r.commit_all("attrs");
        }, json!([write("build.bat", "@echo off\r\necho built\r\n")]), "build.bat");
    }
    eol_lf_attribute_file_with_crlf_bytes_comes_back_exactly => |_r| {
        // git's checkout of the stored blob gives LF: only the kept copy gives back CRLF.
        converted_round_trip(|r| {
            r.put(".gitattributes", "*.txt text eol=lf\n");
            r.put("notes.txt", "one\ntwo\n");
            r.commit_all("attrs");
            // CRLF bytes git stores as the same LF blob: `git add` changes only the stat.
            r.put("notes.txt", "one\r\ntwo\r\n");
            r.git(&["add", "notes.txt"]);
            assert_eq!(r.git(&["status", "--porcelain"]), "");
        }, json!([modify("notes.txt", "two", "three")]), "notes.txt");
    }
    autocrlf_file_modified_as_git_would => |_r| {
        converted_round_trip(|r| {
            r.git(&["config", "core.autocrlf", "true"]);
            r.put("notes.txt", "one\r\ntwo\r\n");
            r.commit_all("notes");
        }, json!([modify("notes.txt", "two", "three")]), "notes.txt");
    }
    autocrlf_file_with_a_pattern_in_its_name_a_command_rewrites => |_r| {
        converted_round_trip(|r| {
            r.git(&["config", "core.autocrlf", "true"]);
            r.put("notes[1]*.txt", "one\r\ntwo\r\n");
            r.commit_all("notes");
        }, json!([run("printf 'one\\r\\nthree\\r\\n' > 'notes[1]*.txt'")]), "notes[1]*.txt");
    }
    autocrlf_file_a_command_rewrites_as_git_would => |_r| {
        converted_round_trip(|r| {
            r.git(&["config", "core.autocrlf", "true"]);
            r.put("notes.txt", "one\r\ntwo\r\n");
            r.commit_all("notes");
        }, json!([run("printf 'one\\r\\nthree\\r\\n' > notes.txt")]), "notes.txt");
    }
    autocrlf_file_with_the_users_edit_comes_back_unstaged_and_exact => |_r| {
        converted_round_trip(|r| {
            r.git(&["config", "core.autocrlf", "true"]);
            r.put("notes.txt", "one\r\ntwo\r\n");
            r.commit_all("notes");
            r.put("notes.txt", "one\r\ntwo\r\nmine\r\n");
            assert_eq!(r.git(&["status", "--porcelain"]), " M notes.txt\n");
        }, json!([modify("notes.txt", "two", "three")]), "notes.txt");
    }
    text_auto_with_crlf_in_the_index_is_kept_as_git_keeps_it => |_r| {
        // Committed with CRLF before `text=auto`: git does not normalise a file whose indexed
        // blob has CRLF, and neither does pai.
        converted_round_trip(|r| {
            r.put("win.txt", "one\r\ntwo\r\n");
            r.commit_all("crlf");
            r.put(".gitattributes", "* text=auto\n");
            r.commit_all("text=auto");
            assert!(r.git(&["ls-files", "--eol", "win.txt"]).contains("i/crlf"));
        }, json!([modify("win.txt", "two", "three")]), "win.txt");
    }
    ident_file_modified_as_git_would => |_r| {
        converted_round_trip(|r| {
            r.put(".gitattributes", "*.c ident\n");
            r.put("id.c", "/* $Id$ */\nint x;\n");
            r.commit_all("ident");
            r.git(&["rm", "-q", "--cached", "id.c"]);
            r.git(&["reset", "-q", "--hard"]);
            assert!(fs::read_to_string(r.p("id.c")).unwrap().starts_with("/* $Id: "));
        }, json!([modify("id.c", "int x;", "int y;")]), "id.c");
    }
    file_mode_false_ignores_a_chmod => |r| {
        r.git(&["config", "core.fileMode", "false"]);
        r.chmod("app.py", 0o755);
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    tracked_symlink_is_left_as_a_link => |r| {
        symlink("app.py", r.p("link.py")).unwrap();
        r.commit_all("link");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'")]));
    }
    file_turned_into_a_directory => |r| {
        r.put("thing", "a file\n");
        r.commit_all("thing");
        round_trip(&mut r, json!([rm("thing"), write("thing/inside.txt", "now a dir\n")]));
    }
    directory_turned_into_a_file => |r| {
        r.put("box/only.txt", "only\n");
        r.commit_all("box");
        round_trip(&mut r, json!([run("rm -r box && printf 'now a file\\n' > box")]));
    }
    detached_head => |r| {
        let head = r.git(&["rev-parse", "HEAD"]);
        r.git(&["checkout", "-q", "--detach", head.trim()]);
        round_trip(&mut r, json!([write("new.py", "x\n")]));
    }
    index_version_4 => |r| {
        r.git(&["update-index", "--index-version", "4"]);
        round_trip(&mut r, json!([write("new.py", "x\n"), modify("app.py", "'hi'", "'hello'")]));
    }
    linked_worktree => |r| {
        r.git(&["worktree", "add", "-q", "../wt", "-b", "feature"]);
        let wt = r.root.parent().unwrap().join("wt");
        r.root = wt;
        round_trip(&mut r, json!([write("new.py", "x\n")]));
    }
    two_plans_then_undo_only_the_last => |r| {
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        round_trip(&mut r, json!([write("two.py", "2\n")]));
        assert!(r.p("one.py").exists());
    }
    unicode_and_space_in_names => |r| {
        r.put("docs/naïve café.md", "bonjour\n");
        r.commit_all("unicode");
        round_trip(&mut r, json!([modify("docs/naïve café.md", "bonjour", "salut"), write("ünï côdé.txt", "x\n")]));
    }
    untracked_file_with_a_non_utf8_name_removed_with_its_directory => |r| {
        use std::os::unix::ffi::OsStrExt as _;
        fs::create_dir_all(r.p("old")).unwrap();
        fs::write(r.p("old").join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "latin-1 name\n").unwrap();
        fs::write(r.p("old/plain.txt"), "plain\n").unwrap();
        round_trip(&mut r, json!([run("rm -r old")]));
    }
    directory_holding_a_non_utf8_name_moved => |r| {
        use std::os::unix::ffi::OsStrExt as _;
        fs::create_dir_all(r.p("old")).unwrap();
        fs::write(r.p("old").join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "latin-1 name\n").unwrap();
        r.put("old/plain.txt", "plain\n");
        r.commit_all("old");
        fs::write(r.p("old").join(std::ffi::OsStr::from_bytes(b"\xff\xfe.bin")), [0u8, 1, 2]).unwrap();
        round_trip(&mut r, json!([mv("old", "new")]));
    }
    run_removes_an_untracked_file_with_a_non_utf8_name => |r| {
        use std::os::unix::ffi::OsStrExt as _;
        fs::write(r.p(".").join(std::ffi::OsStr::from_bytes(b"r\xe9sum\xe9.txt")), "mine\n").unwrap();
        round_trip(&mut r, json!([run("rm -f r*sum*.txt"), write("done.txt", "x\n")]));
    }
    binary_untracked_file_removed => |r| {
        fs::write(r.p("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
        round_trip(&mut r, json!([rm("blob.bin")]));
    }
    move_into_a_new_directory => |r| {
        round_trip(&mut r, json!([mv("app.py", "src/deep/app.py")]));
    }
    run_touches_many_files => |r| {
        r.put("keep/a.txt", "a\n");
        r.commit_all("keep");
        round_trip(&mut r, json!([run("for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > gen_$i.txt; done; rm -r keep; echo x >> README.md")]));
    }
    run_sets_an_executable_bit => |r| {
        r.put("tool.sh", "echo hi\n");
        r.commit_all("tool");
        round_trip(&mut r, json!([run("chmod +x tool.sh")]));
    }
    second_session_undo_walks_back_into_the_first_sessions_plan => |r| {
        let before = r.state();
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        let after_one = r.state();
        assert!(r.plan(json!([modify("one.py", "1", "2")])), "{}", r.shown());
        let after_two = r.state();
        assert!(r.cmd(&["undo"]), "{}", r.shown());
        assert_eq!(r.state(), after_one, "{}", r.shown());
        // Both plans are one line of work: undo goes on into the first session's plan,
        // back to the base, and stops there.
        assert!(r.cmd(&["undo"]), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        assert!(!r.cmd(&["undo"]), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        assert!(r.cmd(&["redo"]), "{}", r.shown());
        assert_eq!(r.state(), after_one, "{}", r.shown());
        assert!(r.cmd(&["redo"]), "{}", r.shown());
        assert_eq!(r.state().files, after_two.files, "{}", r.shown());
        r.fsck();
    }
    unborn_branch => |_r| {
        let mut r = Repo::unborn();
        r.put("notes.md", "mine\n");
        round_trip(&mut r, json!([write("first.py", "x = 1\n")]));
    }
    plan_touching_only_an_ignored_file_undoes_itself_not_the_previous_plan => |r| {
        r.put(".gitignore", "*.log\n");
        r.commit_all("ignore");
        r.put("build.log", "old log\n");
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        let before = r.state();
        assert!(r.plan(json!([modify("build.log", "old", "new")])), "{}", r.shown());
        assert!(r.cmd(&["undo"]), "{}", r.shown());
        assert_eq!(r.state(), before, "undo reverted the wrong plan\n{}", r.shown());
    }
    write_inside_a_submodule_is_refused => |r| {
        let sub = r.root.parent().unwrap().join("libsrc");
        fs::create_dir_all(&sub).unwrap();
        let sub_git = |args: &[&str]| {
            let mut c = r.git_cmd();
            c.current_dir(&sub).args(args);
            assert!(c.output().unwrap().status.success(), "git {args:?}");
        };
        sub_git(&["init", "-q", "-b", "main"]);
        fs::write(sub.join("lib.py"), "v = 1\n").unwrap();
        sub_git(&["add", "-A"]);
        sub_git(&["commit", "-q", "-m", "lib"]);
        r.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.to_str().unwrap(), "lib"]);
        r.git(&["commit", "-q", "-m", "submodule"]);
        let before = r.state();
        let ok = r.plan(json!([modify("lib/lib.py", "v = 1", "v = 2"), write("lib/new.py", "x\n")]));
        assert!(!ok, "{}", r.shown());
        assert!(r.shown().contains("another git repository"), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        r.fsck();
    }
    write_inside_an_embedded_repository_is_refused => |r| {
        let inner = r.p("vendor/tool");
        fs::create_dir_all(&inner).unwrap();
        let mut c = r.git_cmd();
        assert!(c.current_dir(&inner).args(["init", "-q"]).output().unwrap().status.success());
        fs::write(inner.join("tool.py"), "t = 1\n").unwrap();
        let before = r.state();
        let ok = r.plan(json!([write("vendor/tool/extra.py", "x\n")]));
        assert!(!ok, "{}", r.shown());
        assert!(r.shown().contains("another git repository"), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        r.fsck();
    }
    discard_gives_back_the_state_before_the_session => |r| {
        r.put("README.md", "# demo\nmy uncommitted notes\n");
        r.put("scratch.txt", "untracked\n");
        let before = r.state();
        assert!(r.plan(json!([modify("README.md", "notes", "NOTES"), rm("scratch.txt"), write("new.py", "x\n")])), "{}", r.shown());
        let session = r.git(&["symbolic-ref", "--short", "HEAD"]).trim().trim_start_matches("pai/").to_string();
        assert!(r.cmd(&["discard"]), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        assert_eq!(r.git(&["symbolic-ref", "--short", "HEAD"]).trim(), "main");
        assert!(r.git(&["branch", "--list", "pai/*"]).trim().is_empty());
        let kept = format!("refs/pai/discarded/{session}");
        assert!(r.git(&["log", "--format=%s", &kept]).contains("pai:"), "{}", r.shown());
        r.fsck();
    }
    discard_refuses_over_a_commit_of_the_users => |r| {
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        r.put("mine.txt", "user work\n");
        r.commit_all("the user's own commit on the session branch");
        let before = r.state();
        let head = r.git(&["rev-parse", "HEAD"]);
        assert!(!r.cmd(&["discard"]), "{}", r.shown());
        assert!(r.shown().contains("a commit pai did not make"), "{}", r.shown());
        assert_eq!(r.state(), before);
        assert_eq!(r.git(&["rev-parse", "HEAD"]), head);
    }
    write_to_a_path_with_a_filter_driver_is_refused => |r| {
        r.put(".gitattributes", "*.secret filter=crypt\n");
        r.put("keys.secret", "ciphertext\n");
        r.commit_all("filtered");
        let before = r.state();
        assert!(!r.plan(json!([modify("keys.secret", "ciphertext", "plaintext"), write("new.py", "x\n")])), "{}", r.shown());
        assert!(r.shown().contains("git filter `crypt`"), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        r.fsck();
    }
    tracked_symlink_to_a_directory_is_not_written_through => |r| {
        r.put("real/a.txt", "a\n");
        symlink("real", r.p("alias")).unwrap();
        r.commit_all("alias");
        let before = r.state();
        let _ = r.plan(json!([write("alias/b.txt", "b\n")]));
        r.fsck();
        // Either refused, or written to the real directory and recorded there, never as
        // a file under the link in the index.
        let staged = r.git(&["ls-files", "-s"]);
        assert!(!staged.contains("alias/"), "{staged}\n{}", r.shown());
        if r.state().files != before.files {
            assert!(r.cmd(&["undo"]), "{}", r.shown());
            assert_eq!(r.state(), before, "{}", r.shown());
        }
    }
    separate_git_dir_keeps_writes_in_the_work_tree => |_r| {
        let tmp = tempfile::tempdir().unwrap();
        let wt = tmp.path().join("work");
        let gd = tmp.path().join("meta.git");
        let home = tmp.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let out = Command::new("git").args(["init", "-q", "-b", "main", "--separate-git-dir"]).arg(&gd).arg(&wt)
            .env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_CONFIG_NOSYSTEM", "1").output().unwrap();
        assert!(out.status.success());
        let mut r = Repo { _tmp: tmp, root: wt, home, log: Vec::new(), env: Vec::new(), main: None };
        r.put("app.py", "x = 1\n");
        r.commit_all("initial");
        round_trip(&mut r, json!([write("new.py", "y\n"), modify("app.py", "x = 1", "x = 2")]));
        assert!(!r.root.parent().unwrap().join("new.py").exists(), "a write landed outside the work tree");
    }
    a_held_index_lock_fails_the_plan_loudly_and_leaves_the_lock => |r| {
        fs::write(r.p(".git/index.lock"), "").unwrap();
        let ok = r.plan(json!([write("new.py", "x\n")]));
        assert!(!ok, "exit 0 although nothing could be committed\n{}", r.shown());
        assert!(r.shown().contains("index.lock"), "{}", r.shown());
        // The other program's lock is not pai's to remove.
        assert!(r.p(".git/index.lock").exists());
        fs::remove_file(r.p(".git/index.lock")).unwrap();
        r.fsck();
    }
    git_dir_and_work_tree_from_the_environment => |_r| {
        let tmp = tempfile::tempdir().unwrap();
        let wt = tmp.path().join("work");
        let gd = tmp.path().join("store.git");
        let home = tmp.path().join("home");
        fs::create_dir_all(&wt).unwrap();
        fs::create_dir_all(&home).unwrap();
        let env = vec![("GIT_DIR".to_string(), gd.clone()), ("GIT_WORK_TREE".to_string(), wt.clone())];
        let mut r = Repo { _tmp: tmp, root: wt, home, log: Vec::new(), env, main: None };
        r.git(&["init", "-q", "-b", "main"]);
        r.put("app.py", "x = 1\n");
        r.commit_all("initial");
        round_trip(&mut r, json!([write("new.py", "y\n"), modify("app.py", "x = 1", "x = 2")]));
        assert!(!r.root.parent().unwrap().join("new.py").exists(), "a write landed outside the work tree");
        assert!(!r.root.join(".git").exists());
    }
    git_index_file_from_the_environment => |r| {
        let alt = r.root.parent().unwrap().join("alt-index");
        fs::copy(r.p(".git/index"), &alt).unwrap();
        r.env.push(("GIT_INDEX_FILE".to_string(), alt.clone()));
        let main_index = fs::read(r.p(".git/index")).unwrap();
        round_trip(&mut r, json!([write("new.py", "y\n"), modify("app.py", "'hi'", "'hello'")]));
        assert_eq!(fs::read(r.p(".git/index")).unwrap(), main_index, "the default index was written");
    }
    sigterm_during_a_plan_leaves_a_consistent_repository => |r| {
        for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
            let before = r.state();
            let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
                "intent": "task", "reply": "On it.", "observe": false,
                "steps": [write("a_new.py", "x\n"), run("touch started.flag; sleep 30"),
                          {"action": "FINISH", "message": "done"}]
            }))]));
            let mut child = r
                .pai()
                .args(["run", "do the task", "--json", "--yes", "--allow-run"])
                .args(["--provider", KIND.name(), "--base-url", &mock.base_url(KIND)])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let start = std::time::Instant::now();
            while !r.p("started.flag").exists() && start.elapsed().as_secs() < 20 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            // SAFETY: a plain kill(2) on the child we spawned.
            assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
            let sent = std::time::Instant::now();
            let status = child.wait().unwrap();
            assert!(sent.elapsed().as_secs() < 10, "{name}: pai took {:?}", sent.elapsed());
            assert_ne!(status.code(), Some(0), "{name}");
            assert!(!r.p(".git/index.lock").exists(), "{name} left the index locked");
            r.fsck();
            // What the interrupted plan did is recorded, so undo takes it back exactly.
            assert!(r.cmd(&["undo"]), "{name}\n{}", r.shown());
            assert_eq!(r.state(), before, "{name}\n{}", r.shown());
        }
    }
    run_with_an_untracked_secret_file_present => |r| {
        r.put(".env", "TOKEN=abc\n");
        r.put("notes.txt", "mine\n");
        round_trip(&mut r, json!([run("echo changed > notes.txt")]));
        assert_eq!(fs::read_to_string(r.p(".env")).unwrap(), "TOKEN=abc\n");
        assert!(!r.git(&["log", "--all", "-p"]).contains("TOKEN=abc"), "the secret was committed");
    }
    autocrlf_file_and_a_plain_file_in_one_plan => |r| {
        r.git(&["config", "core.autocrlf", "true"]);
        r.put("notes.txt", "one\r\ntwo\r\n");
        r.commit_all("notes");
        round_trip(&mut r, json!([modify("notes.txt", "two", "three"), modify("app.py", "'hi'", "'hello'")]));
        assert_eq!(r.git(&["status", "--porcelain"]), "", "{}", r.shown());
    }
    run_changes_a_dirty_file_again => |r| {
        r.put("README.md", "# demo\nmy notes\n");
        round_trip(&mut r, json!([run("echo more >> README.md")]));
    }
    run_puts_a_dirty_file_back_to_its_committed_content => |r| {
        r.put("README.md", "# demo\nmy notes\n");
        round_trip(&mut r, json!([run("printf '# demo\\n' > README.md")]));
    }
    user_commit_between_plans_is_never_absorbed => |r| {
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        r.put("mine.txt", "user work\n");
        r.commit_all("the user's own commit");
        let user_commit = r.git(&["rev-parse", "HEAD"]);
        r.cmd(&["undo"]);
        // Either undo refused, or it undid without losing the user's commit.
        assert!(r.p("mine.txt").exists(), "{}", r.shown());
        assert!(r.git(&["cat-file", "-t", user_commit.trim()]).contains("commit"));
        r.fsck();
    }
    ignored_file_the_plan_creates_is_removed_by_undo => |r| {
        r.put(".gitignore", "build/\n");
        r.commit_all("ignore build");
        round_trip(&mut r, json!([write("build/out.txt", "made\n"), modify("app.py", "'hi'", "'hello'")]));
    }
    ignored_file_the_plan_creates_beside_the_users_own_is_removed_by_undo => |r| {
        r.put(".gitignore", "build/\n");
        r.commit_all("ignore build");
        r.put("build/keep.o", "mine\n");
        round_trip(&mut r, json!([write("build/out.txt", "made\n"), modify("app.py", "'hi'", "'hello'")]));
        assert!(r.p("build/keep.o").exists());
    }
    plan_creating_only_an_ignored_file_undoes_itself_not_the_previous_plan => |r| {
        r.put(".gitignore", "build/\n");
        r.commit_all("ignore build");
        assert!(r.plan(json!([write("one.py", "1\n")])), "{}", r.shown());
        round_trip(&mut r, json!([write("build/out.txt", "made\n")]));
        assert!(r.p("one.py").exists(), "{}", r.shown());
    }
    ignored_file_changed_since_the_plan_stops_undo => |r| {
        r.put(".gitignore", "build/\n");
        r.commit_all("ignore build");
        assert!(r.plan(json!([write("build/out.txt", "made\n"), modify("app.py", "'hi'", "'hello'")])), "{}", r.shown());
        r.put("build/out.txt", "the user's now\n");
        let before = r.state();
        assert!(!r.cmd(&["undo"]), "{}", r.shown());
        assert!(r.shown().contains("build/out.txt (changed since the plan)"), "{}", r.shown());
        assert_eq!(r.state(), before, "{}", r.shown());
        // Forced, undo takes the plan back and leaves the user's file alone.
        assert!(r.cmd(&["undo", "--force"]), "{}", r.shown());
        assert_eq!(fs::read_to_string(r.p("build/out.txt")).unwrap(), "the user's now\n");
        assert_eq!(fs::read_to_string(r.p("app.py")).unwrap(), "def main():\n    print('hi')\n");
    }
    users_empty_folder_stays_after_undo => |r| {
        fs::create_dir_all(r.p("mine")).unwrap();
        // The state before holds `mine` as an empty folder: undo keeps it, and takes away
        // `mine/new`, which the plan made.
        round_trip(&mut r, json!([write("mine/new/d.txt", "d\n"), write("mine/e.txt", "e\n")]));
    }
    run_creating_a_folder_in_the_users_empty_folder_leaves_it_after_undo => |r| {
        fs::create_dir_all(r.p("mine")).unwrap();
        // The command makes `mine/new/d.txt`: undo takes away `mine/new`, which it made, and
        // keeps `mine`, which the user had (the state before holds it as an empty folder).
        round_trip(&mut r, json!([run("mkdir -p mine/new && echo d > mine/new/d.txt")]));
    }
    ignored_files_a_run_creates_are_removed_by_undo => |r| {
        r.put(".gitignore", "build/\n*.log\n");
        r.commit_all("ignore build and logs");
        r.put("keep.log", "the user's own ignored file\n");
        // A new ignored folder (all of it the command's), an ignored file in a new folder and
        // one beside the user's: undo takes away the command's and keeps the user's.
        round_trip(
            &mut r,
            json!([run("mkdir -p build/gen out && echo made > build/gen/out.txt && echo o > build/new.o && echo log > out/run.log && echo log > run.log")]),
        );
        assert!(r.p("keep.log").exists());
    }
    ignored_file_a_run_creates_beside_a_tracked_change_is_removed_by_undo => |r| {
        r.put(".gitignore", "*.log\n");
        r.commit_all("ignore logs");
        round_trip(&mut r, json!([modify("app.py", "'hi'", "'hello'"), run("echo log > run.log")]));
    }
    failed_step_leaves_the_users_edit_unstaged_after_undo => |r| {
        r.put("b.txt", "b\n");
        r.commit_all("b");
        r.put("b.txt", "b\nmine\n");
        let before = r.state();
        assert_eq!(before.status, " M b.txt\n");
        // The MODIFY of b.txt fails after its file was snapshotted; the WRITE succeeds.
        let _ = r.plan(json!([write("new.txt", "n\n"), modify("b.txt", "no such text", "x")]));
        r.fsck();
        assert!(r.shown().contains("no such text") || r.shown().contains("failed"), "{}", r.shown());
        let after = r.state();
        assert!(r.cmd(&["undo"]), "undo failed\n{}", r.shown());
        r.fsck();
        assert_eq!(r.state(), before, "undo is not exact\n{}", r.shown());
        assert!(r.cmd(&["redo"]), "redo failed\n{}", r.shown());
        assert_eq!(r.state(), after, "redo is not exact\n{}", r.shown());
    }
}
