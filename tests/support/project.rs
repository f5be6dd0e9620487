//! A temporary project for end-to-end tests: a git repository (or a plain directory) with a
//! private HOME, and the real `pai` binary run in it against the mock LLM server.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pai::llm::ProviderKind;
use serde_json::Value;

use super::mock_llm::MockLlm;

/// The key every test passes; the mock requires it, and tests check it never leaks.
pub const TEST_KEY: &str = "AIzaTESTKEY-never-leak-0123456789";

/// A temporary project.
pub struct Project {
    _dir: tempfile::TempDir,
    /// The project root.
    pub root: PathBuf,
    /// The private HOME.
    pub home: PathBuf,
}

/// The outcome of one `pai` run.
pub struct Run {
    /// The process output.
    pub output: Output,
    /// The JSON events, when run with `--json`.
    pub events: Vec<Value>,
}

impl Run {
    /// stdout and stderr together.
    pub fn text(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }

    /// Events of one kind.
    pub fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["event"] == kind).collect()
    }

    /// The final event.
    pub fn finished(&self) -> &Value {
        self.events_of("finished")
            .into_iter()
            .last()
            .unwrap_or_else(|| panic!("no finished event:\n{}", self.text()))
    }

    /// The final status (`success`, `failed`, ...).
    pub fn status(&self) -> String {
        self.finished()["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// Run a git command in `dir` hermetically and return its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Project {
    /// Give the `pai` binary run in this project the secret the library in this test
    /// process marks its state with: state made in-process (a session that stopped mid-plan,
    /// say) is then the same user's state to the binary, as it is for a real user.
    pub fn share_secret(&self) {
        use std::os::unix::fs::PermissionsExt;
        let ours = dirs::config_dir().unwrap().join("pai-code/secret");
        let theirs = self.home.join(".config/pai-code");
        fs::create_dir_all(&theirs).unwrap();
        fs::copy(&ours, theirs.join("secret")).unwrap();
        fs::set_permissions(theirs.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// An empty directory (not a repository).
    pub fn plain() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir.path().join("project");
        let home = dir.path().join("home");
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        Project {
            _dir: dir,
            root,
            home,
        }
    }

    /// A git repository with one commit holding the files of `fixtures/trees/<tree>` (or an
    /// empty commit when `tree` is `None`).
    pub fn repo(tree: Option<&str>) -> Self {
        let p = Self::plain();
        git(&p.root, &["init", "-q", "-b", "main"]);
        if let Some(tree) = tree {
            p.copy_tree(tree);
            git(&p.root, &["add", "-A"]);
            git(&p.root, &["commit", "-q", "-m", "initial"]);
        } else {
            git(&p.root, &["commit", "-q", "--allow-empty", "-m", "initial"]);
        }
        p
    }

    /// Copy `fixtures/trees/<tree>` into the project.
    pub fn copy_tree(&self, tree: &str) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/trees")
            .join(tree);
        for entry in fs::read_dir(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
            let entry = entry.unwrap_or_else(|e| panic!("{e}"));
            fs::copy(entry.path(), self.root.join(entry.file_name()))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// A file's contents.
    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The `pai` command with a hermetic environment.
    pub fn pai(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pai"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .current_dir(&self.root);
        cmd
    }

    /// `pai run <request> --yes --allow-run --json` against `mock` speaking `kind`.
    pub fn run(&self, mock: &MockLlm, kind: ProviderKind, request: &str, extra: &[&str]) -> Run {
        let mut cmd = self.pai();
        cmd.env(kind.key_env_var(), TEST_KEY)
            .args([
                "run",
                request,
                "--json",
                "--provider",
                kind.name(),
                "--base-url",
                &mock.base_url(kind),
            ])
            .args(extra);
        let output = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run pai: {e}"));
        let events = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        Run { output, events }
    }

    /// Every file under `.pai_history` and the full git history as text, for leak checks.
    pub fn all_records(&self) -> String {
        let mut text = String::new();
        let hist = self.root.join(".pai_history");
        if hist.is_dir() {
            for entry in fs::read_dir(&hist).unwrap_or_else(|e| panic!("{e}")) {
                let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
                if path.is_file() {
                    text.push_str(&fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        if self.root.join(".git").exists() {
            text.push_str(&git(&self.root, &["log", "--all", "-p"]));
        }
        text
    }
}
