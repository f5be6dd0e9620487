//! Finding and opening the repository that holds a project's history, and the conditions under
//! which pai must not write to it (SPEC section 6, "Refuse to write").

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Repository, RepositoryState, Signature};

use super::error::{Context, HistoryError};
use super::store;

/// The project root for a session started in `cwd`: the work tree's top level when `cwd` is
/// inside a git work tree (linked worktrees included), else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    match open_repo(cwd) {
        Ok(repo) => match linked_workdir(&repo, cwd).as_deref().or(repo.workdir()) {
            Some(dir) => dir.components().collect(),
            None => cwd.to_path_buf(),
        },
        Err(e) if e.code() == ErrorCode::NotFound => cwd.to_path_buf(),
        // libgit2 found a repository but will not open it (ownership, unknown extension):
        // the project is still that work tree, which the session then treats as read-only.
        Err(_) => cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(cwd)
            .to_path_buf(),
    }
}

/// The repository for `dir`: found upward from it, or, when `GIT_DIR` is set, the one the
/// environment names (`GIT_DIR`, `GIT_WORK_TREE`, as git reads them).
fn open_repo(dir: &Path) -> Result<Repository, git2::Error> {
    if std::env::var_os("GIT_DIR").is_some_and(|v| !v.is_empty()) {
        Repository::open_from_env()
    } else {
        Repository::discover(dir)
    }
}

/// The work tree of a repository reached through a `.git` file (`git init
/// --separate-git-dir`, `git clone --separate-git-dir`) whose git directory names no
/// `core.worktree`: libgit2 then takes the git directory's parent as the work tree, and pai
/// would work outside the project. The work tree is the directory holding the `.git` file.
fn linked_workdir(repo: &Repository, cwd: &Path) -> Option<PathBuf> {
    let holder = cwd.ancestors().find(|d| d.join(".git").exists())?;
    if !holder.join(".git").is_file() {
        return None;
    }
    if repo.config().ok()?.get_string("core.worktree").is_ok() {
        return None;
    }
    let holder = std::fs::canonicalize(holder).ok()?;
    let current = repo.workdir().and_then(|w| std::fs::canonicalize(w).ok());
    (current.as_deref() != Some(holder.as_path())).then_some(holder)
}

/// A repository pai can record history in.
pub(crate) struct HistoryRepo {
    /// The repository (its work tree is the project root).
    pub repo: Repository,
    /// True for the private `.pai_history/git` repository used outside git.
    pub private: bool,
}

/// Why pai must not write: what is wrong and what the user can do about it.
#[derive(Debug, Clone)]
pub(crate) struct Blocker {
    /// What is wrong.
    pub what: String,
    /// What to do about it.
    pub todo: String,
}

impl Blocker {
    fn new(what: impl Into<String>, todo: impl Into<String>) -> Blocker {
        Blocker {
            what: what.into(),
            todo: todo.into(),
        }
    }

    /// One sentence for a read-only session.
    pub fn reason(&self) -> String {
        format!("{}; {}", self.what, self.todo)
    }

    /// A refusal of `action` (e.g. "undo").
    pub fn refusal(&self, action: &str) -> HistoryError {
        HistoryError::Refused {
            message: format!("cannot {action}: {}", self.what),
            hint: self.todo.clone(),
        }
    }
}

/// The result of looking for a repository at the project root.
pub(crate) enum Found {
    /// A git repository or the private one.
    Repo(HistoryRepo),
    /// A repository exists but pai must not write to it.
    Blocked(Blocker),
    /// No repository and no private history.
    Nothing,
}

/// Look for the repository of the project at `root`.
pub(crate) fn find(root: &Path) -> Result<Found, HistoryError> {
    let found = find_inner(root)?;
    if let Found::Repo(hr) = &found {
        detach_index(&hr.repo)?;
    }
    Ok(found)
}

/// Give libgit2 an empty in-memory index. pai reads and updates the user's index itself
/// (`index_file`); libgit2 would otherwise load all of it (150+ ms at 100,000 files) the first
/// time an attribute lookup consults the index, and again after each update.
fn detach_index(repo: &Repository) -> Result<(), HistoryError> {
    let mut index = git2::Index::new().ctx(|| "cannot create an in-memory index".into())?;
    repo.set_index(&mut index)
        .ctx(|| "cannot detach libgit2 from the index".into())
}

/// Files git (and libgit2) open while pai works: a FIFO, socket or device planted at one of
/// them would make the open block forever, so such a repository is refused up front.
const GIT_FILES: &[&str] = &[
    ".git/config",
    ".git/HEAD",
    ".git/index",
    ".git/packed-refs",
    ".git/info/exclude",
    ".git/info/attributes",
    ".git/info/sparse-checkout",
    ".git/info/grafts",
    ".git/commondir",
    ".git/objects/info/alternates",
    ".git/shallow",
    ".git/description",
    ".git/FETCH_HEAD",
    ".git/ORIG_HEAD",
    ".git/MERGE_HEAD",
    ".gitignore",
    ".gitattributes",
];

/// The first of [`GIT_FILES`] under `root` that exists and is neither a regular file nor a
/// symbolic link (which git itself may use), without opening anything.
fn special_git_file(root: &Path) -> Option<String> {
    GIT_FILES.iter().find_map(|rel| {
        let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
        let t = meta.file_type();
        (!t.is_file() && !t.is_symlink() && !t.is_dir()).then(|| (*rel).to_string())
    })
}

fn find_inner(root: &Path) -> Result<Found, HistoryError> {
    if let Some(rel) = special_git_file(root) {
        return Ok(Found::Blocked(Blocker::new(
            format!(
                "{} is a FIFO, socket or device, not a file: reading it would hang",
                root.join(&rel).display()
            ),
            format!(
                "remove it (`rm {}`) and start pai again",
                root.join(&rel).display()
            ),
        )));
    }
    match open_repo(root) {
        Ok(repo) => {
            if let Some(dir) = linked_workdir(&repo, root) {
                repo.set_workdir(&dir, false)
                    .ctx(|| format!("cannot use {} as the work tree", dir.display()))?;
            }
            if repo.is_bare() || repo.workdir().is_none() {
                return Ok(Found::Blocked(Blocker::new(
                    format!(
                        "the repository at {} is bare (it has no work tree)",
                        repo.path().display()
                    ),
                    "run pai in a clone or a worktree of it (`git worktree add <dir>`)",
                )));
            }
            Ok(Found::Repo(HistoryRepo {
                repo,
                private: false,
            }))
        }
        Err(e) if e.code() == ErrorCode::NotFound => {
            let git_dir = store::private_git_dir(root);
            if !git_dir.exists() {
                return Ok(Found::Nothing);
            }
            let repo = Repository::open_bare(&git_dir)
                .ctx(|| format!("cannot open pai's private history {}", git_dir.display()))?;
            repo.set_workdir(root, false)
                .ctx(|| format!("cannot use {} as the work tree", root.display()))?;
            Ok(Found::Repo(HistoryRepo {
                repo,
                private: true,
            }))
        }
        Err(e) if e.code() == ErrorCode::Owner => Ok(Found::Blocked(Blocker::new(
            format!(
                "git refuses to open the repository at {} because another user owns it",
                root.display()
            ),
            format!(
                "if you trust it, run `git config --global --add safe.directory {}` and start pai again",
                root.display()
            ),
        ))),
        Err(e) => Ok(Found::Blocked(Blocker::new(
            format!(
                "libgit2 cannot open the repository at {}: {}",
                root.display(),
                e.message()
            ),
            "pai will not write history it cannot read back; work in a clone that plain git tools (libgit2) can open",
        ))),
    }
}

/// Whether `repo` is pai's private history (`.pai_history/git`, used outside git).
pub(crate) fn is_private(repo: &Repository) -> bool {
    let dir = repo.path();
    dir.ends_with(Path::new(store::DIR).join("git"))
}

/// Open the project's history for a new session, creating the private repository when the
/// project is not in git.
pub(crate) fn find_or_create(root: &Path) -> Result<Found, HistoryError> {
    match find(root)? {
        Found::Nothing => {
            store::ensure_dir(root)?;
            let git_dir = store::private_git_dir(root);
            let repo = Repository::init_bare(&git_dir)
                .ctx(|| format!("cannot create pai's private history {}", git_dir.display()))?;
            // Recorded so plain git (`git --git-dir=.pai_history/git`) finds the work tree too;
            // pai itself sets it explicitly on every open.
            let mut config = repo
                .config()
                .ctx(|| format!("cannot configure {}", git_dir.display()))?;
            config
                .set_bool("core.bare", false)
                .and_then(|()| config.set_str("core.worktree", "../.."))
                .ctx(|| format!("cannot configure {}", git_dir.display()))?;
            repo.set_workdir(root, false)
                .ctx(|| format!("cannot use {} as the work tree", root.display()))?;
            detach_index(&repo)?;
            Ok(Found::Repo(HistoryRepo {
                repo,
                private: true,
            }))
        }
        found => Ok(found),
    }
}

/// Open the existing history at `root` for undo, redo or log.
pub(crate) fn open_existing(root: &Path) -> Result<HistoryRepo, HistoryError> {
    match find(root)? {
        Found::Repo(repo) => Ok(repo),
        Found::Blocked(blocker) => Err(HistoryError::ReadOnly {
            reason: blocker.reason(),
        }),
        Found::Nothing => Err(HistoryError::NoHistory {
            root: root.to_path_buf(),
        }),
    }
}

/// Why pai must not write to `repo` now: an operation in progress or unresolved conflicts.
pub(crate) fn blocker(repo: &Repository) -> Option<Blocker> {
    if let Some(b) = state_blocker(repo) {
        return Some(b);
    }
    match super::index_file::load(repo) {
        Ok(index) => index_blocker(&index),
        Err(e) => Some(unreadable_index(&e)),
    }
}

/// The blocker for an index pai cannot read.
pub(crate) fn unreadable_index(e: &HistoryError) -> Blocker {
    Blocker::new(
        e.to_string(),
        "pai will not write history with an index it cannot update; check the repository with `git status`",
    )
}

/// Unresolved conflicts in `index`.
pub(crate) fn index_blocker(index: &super::index_file::IndexFile) -> Option<Blocker> {
    let files = index.conflicts();
    if files.is_empty() {
        return None;
    }
    Some(Blocker::new(
        format!("the index has unresolved conflicts ({})", files.join(", ")),
        "resolve them and `git add` the files, then try again",
    ))
}

/// A merge, rebase, cherry-pick, revert, bisect or `git am` in progress.
pub(crate) fn state_blocker(repo: &Repository) -> Option<Blocker> {
    let in_progress = |what: &str, todo: &str| {
        Some(Blocker::new(
            format!("{what} is in progress"),
            todo.to_string(),
        ))
    };
    match repo.state() {
        RepositoryState::Clean => {}
        RepositoryState::Merge => {
            return in_progress(
                "a merge",
                "finish it (`git commit`) or abort it (`git merge --abort`), then try again",
            );
        }
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => {
            return in_progress(
                "a rebase",
                "finish it (`git rebase --continue`) or abort it (`git rebase --abort`), then try again",
            );
        }
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => {
            return in_progress(
                "a cherry-pick",
                "finish it (`git cherry-pick --continue`) or abort it (`git cherry-pick --abort`), then try again",
            );
        }
        RepositoryState::Revert | RepositoryState::RevertSequence => {
            return in_progress(
                "a revert",
                "finish it (`git revert --continue`) or abort it (`git revert --abort`), then try again",
            );
        }
        RepositoryState::Bisect => {
            return in_progress("a bisect", "end it with `git bisect reset`, then try again");
        }
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
            return in_progress(
                "`git am`",
                "finish it (`git am --continue`) or abort it (`git am --abort`), then try again",
            );
        }
    }
    None
}

/// The identity pai commits with: the user's git identity (config, or `GIT_AUTHOR_*` /
/// `GIT_COMMITTER_*` like git itself), else `pai <pai@localhost>`; never written to config.
pub(crate) fn signatures(
    repo: &Repository,
    identity: Option<&(String, String)>,
) -> Result<(Signature<'static>, Signature<'static>), HistoryError> {
    if let Some((name, email)) = identity {
        let sig =
            Signature::now(name, email).ctx(|| format!("invalid identity {name} <{email}>"))?;
        return Ok((sig.clone(), sig));
    }
    let fallback = || Signature::now("pai", "pai@localhost");
    let author = repo.author_from_env().or_else(|_| fallback());
    let committer = repo.committer_from_env().or_else(|_| fallback());
    match (author, committer) {
        (Ok(a), Ok(c)) => Ok((a, c)),
        (Err(e), _) | (_, Err(e)) => Err(e).ctx(|| "cannot build a commit signature".to_string()),
    }
}
