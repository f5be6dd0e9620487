//! State that looks like pai's but that pai cannot verify (see `auth`): a commit with `Pai-*`
//! trailers and no valid `Pai-Auth` mark, a `refs/pai/*` ref whose name or target is not
//! what pai would have written. pai never acts on it; here is what it says instead, and the
//! checks the refs get before anything reads them.

use git2::{Commit, Repository};

use super::error::HistoryError;
use super::message::Kind;
use super::{auth, message, names};

/// The refusal of `action` on `commit` when it carries pai's trailers but not pai's mark for
/// this user; `None` when it carries no trailers (an ordinary commit: the caller's own
/// refusal fits) or is pai's own.
pub(crate) fn refusal(commit: &Commit<'_>, action: &str) -> Option<HistoryError> {
    let claims = message::parse(commit.message().unwrap_or_default()).kind;
    if claims.is_none() || auth::verified(commit) {
        return None;
    }
    let short = names::short_id(commit.id());
    Some(HistoryError::Refused {
        message: format!(
            "cannot {action}: commit {short} \"{}\" looks like a pai plan but was not made by pai for this user",
            commit.summary().ok().flatten().unwrap_or_default()
        ),
        hint: format!(
            "pai acts only on commits it marked with your secret (a Pai-Auth trailer); a repository can ship commits that imitate pai's. Look at it with `git show {short}`, and revert it yourself with `git revert {short}` if you want its change gone"
        ),
    })
}

/// The plan number an undone ref `refname` (`refs/pai/undone/<session>/<n>`) keeps, when
/// its target is a plan commit pai made for this user, of that session and number: anything
/// else under the name (planted by a repository, or moved) is not a plan to redo.
pub(crate) fn undone_plan(commit: &Commit<'_>, refname: &str) -> Option<u32> {
    let (session, number) = refname.strip_prefix("refs/pai/undone/")?.rsplit_once('/')?;
    let number: u32 = number.parse().ok()?;
    if !names::is_id(session) {
        return None;
    }
    let t = auth::trailers(commit);
    (t.kind == Some(Kind::Plan) && t.session.as_deref() == Some(session) && t.plan == Some(number))
        .then_some(number)
}

/// Whether the pending ref of `session` points at a snapshot pai took for this user in that
/// session (a `Pai-Kind: user` commit whose mark verifies).
pub(crate) fn pending_is_pais(repo: &Repository, session: &str, top: git2::Oid) -> bool {
    if !names::is_id(session) {
        return false;
    }
    let Ok(commit) = repo.find_commit(top) else {
        return false;
    };
    let t = auth::trailers(&commit);
    t.kind == Some(Kind::User) && t.session.as_deref() == Some(session)
}
