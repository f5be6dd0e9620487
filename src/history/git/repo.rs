//! Finding and opening the repository that holds a project's history, and the conditions under
//! which pai must not write to it (SPEC section 6, "Refuse to write").

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Repository, Signature};

pub(crate) use super::refusal::{Blocker, blocker, index_blocker, state_blocker};
use super::store;
use crate::history::error::{Context, HistoryError};

/// The project root for a session started in `cwd`: the work tree's top level when `cwd` is
/// inside a git work tree (linked worktrees included), else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    // A layout that would move the project elsewhere is refused (see `layout_blocker`); the
    // project stays the directory holding `.git`, where the user started pai.
    if !git_dir_from_env()
        && let Some(holder) = cwd.ancestors().find(|d| d.join(".git").exists())
        && layout_blocker(holder).is_some()
    {
        return holder.to_path_buf();
    }
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

/// The project root for a command started in `cwd` ([`project_root`]) and what [`find`] finds
/// there, with the repository opened once: `pai log` and the recovery check before it need
/// both, and each open reads git's config files anew.
pub(crate) fn locate(cwd: &Path) -> (PathBuf, Result<Found, HistoryError>) {
    if let Some((root, repo)) = found_from(cwd) {
        let found = opened(repo, &root).and_then(detached);
        return (root, found);
    }
    let root = project_root(cwd);
    let found = find(&root);
    (root, found)
}

/// The repository found upward from `cwd` and the project root it gives, when it is the one
/// [`find`] would open at that root after the same checks: no `GIT_DIR`, its work tree holds
/// the `.git` nearest `cwd` (whose layout moves nothing), and no special file in it.
fn found_from(cwd: &Path) -> Option<(PathBuf, Repository)> {
    if git_dir_from_env() {
        return None;
    }
    let holder = cwd.ancestors().find(|d| d.join(".git").exists())?;
    if layout_blocker(holder).is_some() {
        return None;
    }
    let repo = Repository::discover(cwd).ok()?;
    let root: PathBuf = linked_workdir(&repo, cwd)
        .as_deref()
        .or(repo.workdir())?
        .components()
        .collect();
    (root == holder && special_git_file(&root).is_none()).then_some((root, repo))
}

/// The repository for `dir`: found upward from it, or, when `GIT_DIR` is set, the one the
/// environment names (`GIT_DIR`, `GIT_WORK_TREE`, as git reads them).
fn open_repo(dir: &Path) -> Result<Repository, git2::Error> {
    if git_dir_from_env() {
        Repository::open_from_env()
    } else {
        Repository::discover(dir)
    }
}

/// Whether the user named the repository in the environment (`GIT_DIR`): then its layout is
/// the user's choice, not the repository's.
fn git_dir_from_env() -> bool {
    std::env::var_os("GIT_DIR").is_some_and(|v| !v.is_empty())
}

/// Why the git layout at `holder` (the directory holding `.git`) must not be used: a setting
/// shipped with the repository that would move the work tree, git directory or common
/// directory somewhere else. Accepted: a linked worktree whose administrative directory points
/// back at this `.git` file, a submodule (or any git directory) whose `core.worktree` points
/// back at `holder`, and a separate git directory (`git init --separate-git-dir`) that is no
/// other checkout's `.git`.
fn layout_blocker(holder: &Path) -> Option<Blocker> {
    let dot_git = holder.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let holder = std::fs::canonicalize(holder).ok()?;
    if meta.is_file() {
        return git_file_blocker(&holder, &dot_git);
    }
    let git_dir = std::fs::canonicalize(&dot_git).ok()?;
    git_dir_blocker(&holder, &git_dir, "core.worktree in .git/config")
}

/// The checks for a git directory `git_dir` serving the work tree `holder`: its `core.worktree`
/// (relative to the git directory, as git reads it) must be `holder`, and a `commondir` (which
/// makes git use another repository's refs and objects) is refused.
fn git_dir_blocker(holder: &Path, git_dir: &Path, setting: &str) -> Option<Blocker> {
    let named = |what: String| {
        Some(Blocker::new(
            what,
            "pai works only in the directory you started it in; remove the setting (or start pai \
             where it points, or name the repository yourself with GIT_DIR and GIT_WORK_TREE)",
        ))
    };
    if let Some(worktree) = local_config_value(git_dir, "core", "worktree") {
        let target = std::fs::canonicalize(git_dir.join(&worktree)).ok();
        if target.as_deref() != Some(holder) {
            return named(format!(
                "the repository's {setting} is `{worktree}`, which moves the work tree out of {}",
                holder.display()
            ));
        }
    }
    let commondir = git_dir.join("commondir");
    if std::fs::symlink_metadata(&commondir).is_ok() {
        let text = read_small_file(&commondir).unwrap_or_default();
        return named(format!(
            "{} names `{}` as the common directory, which would make pai change another \
             repository's refs and index",
            commondir.display(),
            text.trim()
        ));
    }
    None
}

/// The text of a small regular file git keeps a pointer in (`.git`, `commondir`, `gitdir`),
/// or `None`. Opened without following a symlink and without blocking, and read only when it
/// is a regular file: a FIFO planted at one of these names must not hang pai.
fn read_small_file(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const MAX: u64 = 64 * 1024;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The checks for a `.git` file (`gitdir: <dir>`) at `dot_git` in `holder`.
fn git_file_blocker(holder: &Path, dot_git: &Path) -> Option<Blocker> {
    let text = read_small_file(dot_git)?;
    let named = text
        .lines()
        .next()?
        .strip_prefix("gitdir:")?
        .trim()
        .to_string();
    let refuse = |why: String| {
        Some(Blocker::new(
            format!(
                "the `.git` file in {} says `gitdir: {named}`: {why}",
                holder.display()
            ),
            "pai works only in the directory you started it in; remove the `.git` file, or \
             name the repository yourself with GIT_DIR and GIT_WORK_TREE",
        ))
    };
    let Ok(git_dir) = std::fs::canonicalize(holder.join(&named)) else {
        return None;
    };
    // A linked worktree: its administrative directory names this `.git` file.
    let back = git_dir.join("gitdir");
    if std::fs::symlink_metadata(&back).is_ok() {
        let pointer = read_small_file(&back).unwrap_or_default();
        let pointer = git_dir.join(pointer.trim());
        let verified = std::fs::canonicalize(pointer).ok() == std::fs::canonicalize(dot_git).ok();
        return if verified {
            None
        } else {
            refuse(
                "it is a worktree of another checkout (its back-pointer names another `.git` file)"
                    .into(),
            )
        };
    }
    if local_config_value(&git_dir, "core", "worktree").is_some() {
        // A submodule's git directory names its work tree: it must be this one.
        return git_dir_blocker(holder, &git_dir, "core.worktree");
    }
    if git_dir.file_name().is_some_and(|n| n == ".git")
        && let Some(owner) = git_dir.parent()
        && owner != holder
    {
        return refuse(format!(
            "that is the git directory of another checkout ({})",
            owner.display()
        ));
    }
    git_dir_blocker(holder, &git_dir, "core.worktree")
}

/// A value of the repository's own `config` file (not the user's or the system's), read by
/// libgit2 from that one file.
fn local_config_value(git_dir: &Path, section: &str, key: &str) -> Option<String> {
    let path = git_dir.join("config");
    std::fs::symlink_metadata(&path).ok()?;
    let config = git2::Config::open(&path).ok()?;
    config.get_string(&format!("{section}.{key}")).ok()
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
    detached(find_inner(root)?)
}

/// `found`, its repository (if any) given an in-memory index ([`detach_index`]).
fn detached(found: Found) -> Result<Found, HistoryError> {
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
                crate::shell::quote_path(&root.join(&rel))
            ),
        )));
    }
    if !git_dir_from_env()
        && let Some(b) = layout_blocker(root)
    {
        return Ok(Found::Blocked(b));
    }
    match open_repo(root) {
        Ok(repo) => opened(repo, root),
        Err(e) if e.code() == ErrorCode::NotFound => {
            let git_dir = store::private_git_dir(root);
            if std::fs::symlink_metadata(&git_dir).is_err() {
                return Ok(Found::Nothing);
            }
            if let Some(b) = unrecognised_private_history(root, &git_dir) {
                return Ok(Found::Blocked(b));
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
                crate::shell::quote_path(root)
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

/// The git repository opened for the project at `root`: its work tree set to `root` when
/// libgit2 would take another ([`linked_workdir`]), refused when it has none.
fn opened(repo: Repository, root: &Path) -> Result<Found, HistoryError> {
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

/// Where pai records the private histories it created: in the user's state directory
/// (`$XDG_STATE_HOME/pai/private-history/`), which no repository can write, one file per
/// project named by the hash of its path.
fn private_history_record(root: &Path) -> Option<PathBuf> {
    use sha2::Digest as _;
    let root = std::fs::canonicalize(root).ok()?;
    let digest = sha2::Sha256::digest(root.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(dirs::state_dir()?.join("pai/private-history").join(name))
}

/// What the record says of the private history at `git_dir`: the project's path and the
/// identity (device and inode) of the directory pai created, so a directory unpacked later at
/// the same path is not taken for it.
fn private_history_identity(root: &Path, git_dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(git_dir).ok()?;
    Some(format!(
        "{}\n{}:{}\n",
        root.display(),
        meta.dev(),
        meta.ino()
    ))
}

/// Record that pai created the private history at `git_dir`.
fn record_private_history(root: &Path, git_dir: &Path) -> std::io::Result<()> {
    let missing = || std::io::Error::other("no state directory");
    let path = private_history_record(root).ok_or_else(missing)?;
    let identity = private_history_identity(root, git_dir).ok_or_else(missing)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, identity)
}

/// Why a `.pai_history/git` must not be adopted: pai did not create it here (a repository can
/// ship one, with a `commondir` or `core.worktree` of its own), or it shares another
/// repository's refs through a `commondir`.
fn unrecognised_private_history(root: &Path, git_dir: &Path) -> Option<Blocker> {
    let mut shipped = git_dir.as_os_str().to_owned();
    shipped.push(".shipped");
    let todo = format!(
        "pai keeps its own history only in a `.pai_history/git` it created; move this one \
         aside (`mv {} {}`) and start pai again",
        crate::shell::quote_path(git_dir),
        crate::shell::quote_path(Path::new(&shipped))
    );
    if std::fs::symlink_metadata(git_dir.join("commondir")).is_ok() {
        return Some(Blocker::new(
            format!(
                "{} has a `commondir`, which would make pai change another repository",
                git_dir.display()
            ),
            todo,
        ));
    }
    let recorded = private_history_record(root).and_then(|p| read_small_file(&p));
    if recorded.is_some() && recorded == private_history_identity(root, git_dir) {
        return None;
    }
    Some(Blocker::new(
        format!(
            "{} was not created by pai for this project on this machine (a copied or cloned \
             project can ship one)",
            git_dir.display()
        ),
        todo,
    ))
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
            // Best effort: without a state directory this session works, and the next one
            // refuses the history it cannot recognise (saying so).
            let _ = record_private_history(root, &git_dir);
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
    existing(find(root)?, root)
}

/// The history [`find`] found at `root`, or why there is none to read.
pub(crate) fn existing(found: Found, root: &Path) -> Result<HistoryRepo, HistoryError> {
    match found {
        Found::Repo(repo) => Ok(repo),
        Found::Blocked(blocker) => Err(HistoryError::ReadOnly {
            reason: blocker.reason(),
        }),
        Found::Nothing => Err(HistoryError::NoHistory {
            root: root.to_path_buf(),
        }),
    }
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
