//! State that looks like pai's but that pai cannot verify (see `auth`): a commit with `Pai-*`
//! trailers and no valid `Pai-Auth` mark, a `refs/pai/*` ref whose name or target is not
//! what pai would have written. pai never acts on it; here is what it says instead, and the
//! checks the refs get before anything reads them.

use git2::{Commit, Repository};

use crate::history::error::HistoryError;
use crate::history::git::auth;
use crate::history::git::names;
use crate::history::record::message;
use crate::history::record::message::Kind;
use crate::history::record::verified;

/// Why pai does not take `commit` for its own although its message carries pai's trailers:
/// `None` when it carries none (an ordinary commit) or its mark verifies (pai's own).
///
/// A commit whose `Pai-Auth` mark is present but wrong was most likely pai's and then changed:
/// the mark covers its tree, parents and message, so amending or rebasing it (even onto
/// an updated branch, with no conflict) breaks it, as does another user's pai (another
/// secret). Without a mark it was made by a pai older than the mark, or imitates pai.
pub(crate) fn why_unverified(commit: &Commit<'_>) -> Option<&'static str> {
    let message = commit.message().unwrap_or_default();
    if message::parse(message).kind.is_none() || auth::verified(commit) {
        return None;
    }
    let marked = message.lines().any(|l| {
        l.strip_prefix(auth::TRAILER)
            .is_some_and(|r| r.starts_with(": "))
    });
    Some(if marked {
        "it was changed after pai made it (amended or rebased: its mark covers its tree, parents \
         and message), or made by another user's pai"
    } else {
        "it has no pai mark: it was made by a pai older than the mark, or imitates pai"
    })
}

/// The refusal of `action` on `commit` when it carries pai's trailers but not pai's mark for
/// this user; `None` when it carries no trailers (an ordinary commit: the caller's own
/// refusal fits) or is pai's own.
pub(crate) fn refusal(commit: &Commit<'_>, action: &str) -> Option<HistoryError> {
    let why = why_unverified(commit)?;
    let short = names::short_id(commit.id());
    let word = crate::shell::quote(&short);
    Some(HistoryError::Refused {
        message: format!(
            "cannot {action}: commit {short} \"{}\" looks like a pai plan but was not made by pai for this user: {why}",
            commit.summary().ok().flatten().unwrap_or_default()
        ),
        hint: format!(
            "pai acts only on commits exactly as it made and marked them with your secret (a Pai-Auth trailer). To take this commit's change out, revert it yourself: `git revert {word}` (look at it first with `git show {word}`)"
        ),
    })
}

/// The plan number an undone ref `refname` (`refs/pai/undone/<session>/<n>`) keeps, when
/// its target is a plan commit pai made for this user, of that session and number: anything
/// else under the name (planted by a repository, or moved) is not a plan to redo.
pub(crate) fn undone_plan(commit: &Commit<'_>, refname: &str) -> Option<u32> {
    undone_plan_of(&verified::trailers(commit), refname)
}

/// [`undone_plan`] given the target's verified trailers (`verified::trailers`), for a caller
/// that reads many refs to the same commits and verifies each commit once.
pub(crate) fn undone_plan_of(
    t: &crate::history::record::message::Trailers,
    refname: &str,
) -> Option<u32> {
    let (session, number) = names::undone_parts(refname)?;
    let number: u32 = number.parse().ok()?;
    if !names::is_id(session) {
        return None;
    }
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
    let t = verified::trailers(&commit);
    t.kind == Some(Kind::User) && t.session.as_deref() == Some(session)
}
