//! Shared fixtures for the history tests: hermetic temp repositories driven by the `git`
//! command line (the independent oracle), and a plain std::fs `WorkTree` standing in for the
//! workspace gate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use pai::history::{CommitInfo, PlanRecord, Session, StartOptions, WorkEntry, WorkTree};

static HERMETIC: Once = Once::new();

/// Keep libgit2 away from the machine's global and system git config.
pub fn hermetic() {
    HERMETIC.call_once(|| {
        // One shared empty directory (never written to), so test runs do not pile up folders.
        let empty = std::env::temp_dir().join("pai-history-tests-empty-config");
        fs::create_dir_all(&empty).unwrap();
        for level in [
            git2::ConfigLevel::Global,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::System,
            git2::ConfigLevel::ProgramData,
        ] {
            // SAFETY: called once, before any repository is opened in this process.
            unsafe { git2::opts::set_search_path(level, &empty).unwrap() };
        }
    });
}

/// A temporary project directory with a helper to run `git` hermetically inside it.
pub struct Project {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    home: PathBuf,
}

impl Project {
    /// An empty directory (not a repository).
    pub fn plain() -> Project {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("project");
        let home = tmp.path().join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        let root = root.canonicalize().unwrap();
        Project {
            _tmp: tmp,
            root,
            home,
        }
    }

    /// `git init` with no commits (branch `main`, unborn).
    pub fn unborn() -> Project {
        let p = Project::plain();
        p.git(&["init", "-q", "-b", "main"]);
        p
    }

    /// A repository on `main` with one commit holding `a.txt`, `b.txt`, `c.txt`, `src/lib.py`.
    pub fn repo() -> Project {
        let p = Project::unborn();
        p.write("a.txt", "alpha\n");
        p.write("b.txt", "bravo\n");
        p.write("c.txt", "charlie\n");
        p.write("src/lib.py", "def f():\n    return 1\n");
        p.git(&["add", "-A"]);
        p.git(&["commit", "-q", "-m", "base"]);
        p
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        self.write_bytes(rel, text.as_bytes());
    }

    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn read_bytes(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    pub fn mode(&self, rel: &str) -> u32 {
        fs::metadata(self.path(rel)).unwrap().permissions().mode() & 0o777
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Tess Ter")
            .env("GIT_AUTHOR_EMAIL", "tess@example.com")
            .env("GIT_COMMITTER_NAME", "Tess Ter")
            .env("GIT_COMMITTER_EMAIL", "tess@example.com")
            .env("GIT_EDITOR", "true")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env("LC_ALL", "C")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
        cmd
    }

    /// Run git; panic with its output unless it succeeds; return stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.git_try(args);
        assert!(ok, "git {args:?} failed:\n{out}\n{err}");
        out
    }

    /// Run git and report (success, stdout, stderr).
    pub fn git_try(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Git against the private history repository of a non-git project.
    pub fn private_git(&self, args: &[&str]) -> String {
        let mut all = vec!["--git-dir=.pai_history/git", "--work-tree=."];
        all.extend_from_slice(args);
        self.git(&all)
    }

    /// `git status --porcelain` (untracked files listed individually).
    pub fn status(&self) -> String {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
    }

    pub fn rev(&self, rev: &str) -> String {
        self.git(&["rev-parse", rev]).trim().to_string()
    }

    pub fn head_ref(&self) -> String {
        self.git(&["symbolic-ref", "HEAD"]).trim().to_string()
    }

    /// A trailer of a commit, via `git log --format=%(trailers)`.
    pub fn trailer(&self, rev: &str, key: &str) -> String {
        self.git(&[
            "log",
            "-1",
            &format!("--format=%(trailers:key={key},valueonly)"),
            rev,
        ])
        .trim()
        .to_string()
    }

    /// Files changed by a commit, sorted, as `git show --name-status` says.
    pub fn changed(&self, rev: &str) -> Vec<String> {
        let out = self.git(&["show", "--format=", "--name-status", "--no-renames", rev]);
        let mut v: Vec<String> = out.lines().map(|l| l.replace('\t', " ")).collect();
        v.sort();
        v
    }

    pub fn wt(&self) -> FsWorkTree {
        FsWorkTree {
            root: self.root.clone(),
        }
    }

    pub fn start(&self) -> Session {
        Session::start(&self.root, StartOptions::now()).unwrap()
    }
}

/// The deny-list of SPEC section 5, as the workspace gate applies it to path segments.
pub fn denied(rel: &str) -> bool {
    rel.split('/').any(|seg| {
        matches!(
            seg,
            ".git"
                | ".env"
                | "venv"
                | ".venv"
                | "__pycache__"
                | ".pai_history"
                | ".idea"
                | ".vscode"
                | "node_modules"
                | ".netrc"
                | ".npmrc"
                | ".pypirc"
        ) || seg.starts_with(".env.")
            || seg.ends_with(".pem")
            || seg.starts_with("id_rsa")
            || seg.starts_with("id_ed25519")
    })
}

/// A std::fs work tree with atomic writes: the stand-in for the workspace gate.
pub struct FsWorkTree {
    pub root: PathBuf,
}

impl WorkTree for FsWorkTree {
    fn read(&self, rel: &str) -> io::Result<WorkEntry> {
        let p = self.root.join(rel);
        match fs::symlink_metadata(&p) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(WorkEntry::Absent),
            Err(e) => Err(e),
            Ok(m) if m.is_dir() => Ok(WorkEntry::Dir(
                fs::read_dir(&p)?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect::<io::Result<_>>()?,
            )),
            Ok(m) if m.is_file() => Ok(WorkEntry::File {
                bytes: fs::read(&p)?,
                executable: m.permissions().mode() & 0o111 != 0,
            }),
            Ok(_) => Ok(WorkEntry::Other),
        }
    }

    fn write(&self, rel: &str, bytes: &[u8], executable: bool) -> io::Result<()> {
        let p = self.root.join(rel);
        let dir = p.parent().unwrap();
        fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        let mode = if executable { 0o755 } else { 0o644 };
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))?;
        tmp.persist(&p).map_err(|e| e.error)?;
        Ok(())
    }

    fn remove(&self, rel: &str) -> io::Result<()> {
        let path = self.root.join(rel);
        match fs::remove_file(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        }
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.root || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    fn is_denied(&self, rel: &str) -> bool {
        denied(rel)
    }
}

/// One step of a simulated plan.
pub enum Op<'a> {
    Write(&'a str, &'a [u8]),
    WriteExec(&'a str, &'a [u8]),
    Remove(&'a str),
    Move(&'a str, &'a str),
}

/// Run a simulated plan the way the agent will: prepare the touched paths, apply the steps
/// through the work tree, commit.
pub fn run_plan(
    session: &mut Session,
    wt: &FsWorkTree,
    request: &str,
    ops: &[Op<'_>],
) -> Option<CommitInfo> {
    let mut touched = Vec::new();
    let mut steps = Vec::new();
    for op in ops {
        match op {
            Op::Write(p, _) | Op::WriteExec(p, _) => {
                touched.push(p.to_string());
                steps.push(format!("WRITE {p}"));
            }
            Op::Remove(p) => {
                touched.push(p.to_string());
                steps.push(format!("RM {p}"));
            }
            Op::Move(a, b) => {
                touched.push(a.to_string());
                touched.push(b.to_string());
                steps.push(format!("MV {a} {b}"));
            }
        }
    }
    let mut plan = session.begin_plan();
    plan.prepare(session, wt, &touched).unwrap();
    for op in ops {
        match op {
            Op::Write(p, bytes) => wt.write(p, bytes, false).unwrap(),
            Op::WriteExec(p, bytes) => wt.write(p, bytes, true).unwrap(),
            Op::Remove(p) => {
                let full = wt.root.join(p);
                if full.is_dir() {
                    fs::remove_dir_all(full).unwrap();
                } else {
                    wt.remove(p).unwrap();
                }
            }
            Op::Move(a, b) => {
                let to = wt.root.join(b);
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::rename(wt.root.join(a), to).unwrap();
            }
        }
    }
    let record = PlanRecord {
        request: request.to_string(),
        steps,
        touched,
        side_effects: vec![],
        failed: vec![],
        model: "test-model".into(),
        calls: 1,
        input_tokens: 1200,
        output_tokens: 340,
        cached_tokens: 1000,
        reasoning_tokens: 20,
    };
    plan.commit(session, wt, &record).unwrap()
}

/// Path of `file` relative to the project, for messages.
pub fn rel(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}
