//! Commits on a session's branch that claim to be the session's (its `Pai-*` trailers name it)
//! but whose mark does not verify: most often a plan the user amended or rebased, since pai's
//! mark covers the commit's tree, parents and message. `pai log` lists them, marked, so a
//! rebased session does not silently lose its plans from view; pai takes no action on them
//! (undo, redo and discard refuse them, `forged::refusal`), and nothing they claim is shown
//! or believed: only their id, time and why they do not verify.

use chrono::{DateTime, FixedOffset};
use git2::Commit;
use serde::Serialize;

use crate::history::record::message;

use crate::history::git::names;

/// One commit `pai log` shows as not verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnverifiedCommit {
    /// Abbreviated commit id.
    pub commit: String,
    /// Full commit id.
    pub id: String,
    /// Commit time, RFC 3339 with the committer's offset.
    pub time: String,
    /// Why pai does not take it for its own.
    pub reason: String,
    /// The command that takes its change out.
    pub revert: String,
}

/// `commit` as an unverified commit of `session`, when its trailers claim that session and its
/// mark does not verify; `None` for pai's own commits and for commits claiming nothing or
/// another session.
pub(in crate::history) fn of_session(
    commit: &Commit<'_>,
    session: &str,
) -> Option<UnverifiedCommit> {
    let claimed = message::parse(commit.message().unwrap_or_default());
    if claimed.session.as_deref() != Some(session) {
        return None;
    }
    let reason = super::forged::why_unverified(commit)?;
    let short = names::short_id(commit.id());
    let time = commit.time();
    let when = FixedOffset::east_opt(time.offset_minutes() * 60)
        .and_then(|tz| DateTime::from_timestamp(time.seconds(), 0).map(|d| d.with_timezone(&tz)))
        .map(|d| d.to_rfc3339())
        .unwrap_or_default();
    Some(UnverifiedCommit {
        revert: format!("git revert {}", crate::shell::quote(&short)),
        commit: short,
        id: commit.id().to_string(),
        time: when,
        reason: reason.to_string(),
    })
}
