//! The ref names pai uses, in one place: session branches `pai/<id>` and pai's own
//! `refs/pai/...` namespace, which plain git leaves alone (no gc of reachable objects, no
//! clutter in `git branch`).

use git2::{Oid, Repository};

/// Prefix of session branches.
pub(crate) const BRANCH_PREFIX: &str = "refs/heads/pai/";

/// The ref a branch named `pai` would take: it leaves no room for `pai/<id>` branches.
pub(crate) const BRANCH_DIR: &str = "refs/heads/pai";

/// Every ref pai keeps outside its branches lies under this prefix.
pub(crate) const PAI_PREFIX: &str = "refs/pai/";

/// Prefix of the refs keeping undone plans: `refs/pai/undone/<session>/<plan>`.
pub(crate) const UNDONE_PREFIX: &str = "refs/pai/undone/";

/// Prefix of the sessions' metadata refs: `refs/pai/sessions/<session>`.
pub(crate) const SESSIONS_PREFIX: &str = "refs/pai/sessions/";

/// `pai/<session>`: a session branch's short name, as `git branch` shows it.
pub(crate) fn branch_name(session: &str) -> String {
    format!("pai/{session}")
}

/// `refs/heads/pai/<session>`.
pub(crate) fn branch_ref(session: &str) -> String {
    format!("{BRANCH_PREFIX}{session}")
}

/// The lock file git and libgit2 create beside a loose ref while they change it
/// (`<common dir>/<ref>.lock`); one left by a killed process blocks every later change of it.
pub(crate) fn ref_lock_path(repo: &Repository, refname: &str) -> std::path::PathBuf {
    repo.commondir().join(format!("{refname}.lock"))
}

/// A plan as its refs and records name it: its session and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanId<'a> {
    /// The session's id.
    pub session: &'a str,
    /// The plan's number in the session.
    pub plan: u32,
}

/// The session id of a `refs/heads/pai/<id>` ref, when it is one pai could have made (see
/// [`is_id`]): any other branch under `pai/` is not a session.
pub(crate) fn session_of_branch(refname: &str) -> Option<&str> {
    refname.strip_prefix(BRANCH_PREFIX).filter(|s| is_id(s))
}

/// Longest id pai makes (a session id is `YYYYMMDD_HHMMSS[-n]`).
const ID_MAX: usize = 64;

/// pai's id grammar for names it reads back from refs (session ids, and the names under
/// `refs/pai/`): 1 to 64 ASCII letters, digits, `_`, `-` or `.`, starting with a letter or
/// digit. A repository can name a ref anything git allows, `$(...)` and control characters
/// included; a name outside this grammar is refused, never printed into a command.
pub(crate) fn is_id(name: &str) -> bool {
    name.len() <= ID_MAX
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !name.contains("..")
}

/// Where an undone plan commit is kept for redo.
pub(crate) fn undone_ref(session: &str, plan: u32) -> String {
    format!("{UNDONE_PREFIX}{session}/{plan}")
}

/// The prefix of a session's undone plans: `refs/pai/undone/<session>/`.
pub(crate) fn undone_prefix(session: &str) -> String {
    format!("{UNDONE_PREFIX}{session}/")
}

/// Glob of every session's undone plans.
pub(crate) fn all_undone_glob() -> String {
    format!("{UNDONE_PREFIX}*")
}

/// The session and plan parts of `refs/pai/undone/<session>/<plan>`, as written in the
/// name: `None` for any other ref. Neither part is checked (see [`is_id`]).
pub(crate) fn undone_parts(refname: &str) -> Option<(&str, &str)> {
    refname.strip_prefix(UNDONE_PREFIX)?.rsplit_once('/')
}

/// The session part of a ref under `refs/pai/undone/`, unchecked.
pub(crate) fn session_of_undone(refname: &str) -> Option<&str> {
    refname.strip_prefix(UNDONE_PREFIX)?.split('/').next()
}

/// The ref holding a session's metadata (see `meta`).
pub(crate) fn meta_ref(session: &str) -> String {
    format!("{SESSIONS_PREFIX}{session}")
}

/// Glob of a session's undone plans.
pub(crate) fn undone_glob(session: &str) -> String {
    format!("{UNDONE_PREFIX}{session}/*")
}

/// Where `pai undo --force` saves the state it overwrites.
pub(crate) fn saved_ref(session: &str, plan: u32, n: u32) -> String {
    if n <= 1 {
        format!("refs/pai/saved/{session}/{plan}")
    } else {
        format!("refs/pai/saved/{session}/{plan}-{n}")
    }
}

/// The ref keeping a discarded session's branch.
pub(crate) fn discarded_ref(session: &str) -> String {
    format!("{DISCARDED_PREFIX}{session}")
}

/// Where snapshots of the user's changes wait while a plan runs (crash safety).
pub(crate) fn pending_ref(session: &str) -> String {
    format!("refs/pai/pending/{session}")
}

/// `refs/heads/main` -> `main`.
pub(crate) fn short(refname: &str) -> &str {
    refname.strip_prefix("refs/heads/").unwrap_or(refname)
}

/// What HEAD points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Head {
    /// A branch (which may be unborn).
    Branch(String),
    /// A commit.
    Detached(Oid),
}

impl Head {
    /// Human wording: "`main`" or "detached HEAD at 1a2b3c4".
    pub(crate) fn describe(&self) -> String {
        match self {
            Head::Branch(name) => format!("`{}`", short(name)),
            Head::Detached(oid) => format!("detached HEAD at {}", short_id(*oid)),
        }
    }
}

/// Read HEAD without resolving it.
pub(crate) fn head(repo: &Repository) -> Result<Head, git2::Error> {
    let head = repo.find_reference("HEAD")?;
    if let Some(target) = head.symbolic_target()? {
        return Ok(Head::Branch(target.to_string()));
    }
    match head.target() {
        Some(oid) => Ok(Head::Detached(oid)),
        None => Err(git2::Error::from_str(
            "HEAD is neither a branch nor a commit",
        )),
    }
}

/// The commit a ref points at, `None` when it does not exist (an unborn branch).
pub(crate) fn target(repo: &Repository, refname: &str) -> Result<Option<Oid>, git2::Error> {
    match repo.find_reference(refname) {
        Ok(r) => Ok(r.resolve()?.target()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Seven hex digits, for messages.
pub(crate) fn short_id(oid: Oid) -> String {
    let mut s = oid.to_string();
    s.truncate(7);
    s
}

/// The ref keeping a plan's recorded trash copies (a tree) reachable.
pub(crate) fn trash_ref(session: &str, plan: u32) -> String {
    format!("{TRASH_PREFIX}{session}/{plan}")
}

/// Where trash copies are kept: `refs/pai/trash/<session>/<plan>`.
pub(crate) const TRASH_PREFIX: &str = "refs/pai/trash/";

/// Where the trees undo and redo wrote over are kept reachable: `refs/pai/kept/...`.
pub(crate) const KEPT_PREFIX: &str = "refs/pai/kept/";

/// Where discarded sessions' branches are kept: `refs/pai/discarded/<session>`.
pub(crate) const DISCARDED_PREFIX: &str = "refs/pai/discarded/";

/// The ref keeping the tree an undo wrote over reachable.
pub(crate) fn kept_ref(session: &str, plan: u32) -> String {
    format!("{KEPT_PREFIX}{session}/{plan}")
}

/// The ref keeping the files a redo writes back reachable.
pub(crate) fn kept_rewrite_ref(session: &str, plan: u32) -> String {
    format!("{KEPT_PREFIX}{session}/{plan}-rewrite")
}

/// The session and plan parts of `refs/pai/kept/<session>/<plan>[-rewrite]`, unchecked.
pub(crate) fn kept_parts(refname: &str) -> Option<(&str, &str)> {
    refname.strip_prefix(KEPT_PREFIX)?.rsplit_once('/')
}
