//! Git's administrative entry of a linked worktree, as `git worktree add` writes it: the
//! folder `<common dir>/worktrees/<name>` with `gitdir` (the worktree's `.git` file),
//! `commondir` and `HEAD` (the branch), the worktree's `.git` file pointing back, and a
//! `locked` file ("initializing") while its files are checked out, so a `git worktree prune`
//! run meanwhile leaves it alone.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::Repository;

use crate::history::error::HistoryError;

/// A worktree's administrative entry.
#[derive(Debug)]
pub(crate) struct Admin {
    /// `<common dir>/worktrees/<name>`.
    pub dir: PathBuf,
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> HistoryError {
    move |source| HistoryError::Io { context, source }
}

/// Write a new file (it must not exist) holding `text`.
fn write_new(path: &Path, text: &[u8]) -> Result<(), HistoryError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text))
        .map_err(io(format!("cannot write {}", path.display())))
}

/// Create the entry `name` for the worktree `worktree` (a directory that must not exist yet;
/// it is created) checked out on `branch_ref`, locked until [`Admin::unlock`].
pub(crate) fn add(
    repo: &Repository,
    name: &str,
    worktree: &Path,
    branch_ref: &str,
) -> Result<Admin, HistoryError> {
    let worktrees = repo.commondir().join("worktrees");
    std::fs::create_dir_all(&worktrees)
        .map_err(io(format!("cannot create {}", worktrees.display())))?;
    let dir = worktrees.join(name);
    std::fs::create_dir(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let dir = std::fs::canonicalize(&dir).map_err(io(format!("cannot read {}", dir.display())))?;
    write_new(&dir.join("locked"), b"initializing\n")?;
    std::fs::create_dir(worktree).map_err(io(format!("cannot create {}", worktree.display())))?;
    let worktree = std::fs::canonicalize(worktree)
        .map_err(io(format!("cannot read {}", worktree.display())))?;
    let line = |prefix: &[u8], path: &Path| {
        let mut text = prefix.to_vec();
        text.extend_from_slice(path.as_os_str().as_bytes());
        text.push(b'\n');
        text
    };
    write_new(&worktree.join(".git"), &line(b"gitdir: ", &dir))?;
    write_new(&dir.join("commondir"), b"../..\n")?;
    write_new(&dir.join("gitdir"), &line(b"", &worktree.join(".git")))?;
    write_new(&dir.join("HEAD"), format!("ref: {branch_ref}\n").as_bytes())?;
    Ok(Admin { dir })
}

impl Admin {
    /// The worktree's index file.
    pub fn index_path(&self) -> PathBuf {
        self.dir.join("index")
    }

    /// The worktree is whole: drop the `locked` mark.
    pub fn unlock(&self) -> Result<(), HistoryError> {
        let locked = self.dir.join("locked");
        std::fs::remove_file(&locked).map_err(io(format!("cannot remove {}", locked.display())))
    }
}
