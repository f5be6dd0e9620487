//! Per-session facts that git alone cannot tell later — the base commit and the branch the
//! session started from — kept as a small blob at `refs/pai/sessions/<id>`, so `pai log` and the
//! merge hints work from a fresh process.

use git2::{Oid, Repository};

use super::auth;
use super::names;
use crate::history::error::{Context, HistoryError};

/// The MAC domain of session facts.
const DOMAIN: &str = "pai-session-meta-v1";

/// Where a session started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The commit HEAD was at; `None` on an unborn branch.
    pub base: Option<Oid>,
    /// The branch HEAD was on (`refs/heads/...`); `None` when detached.
    pub base_branch: Option<String>,
    /// The branch the session's plans went on when it is not `pai/<id>`: a session started
    /// on HEAD of another session's branch continues that line of work on it.
    pub branch: Option<String>,
}

/// The ref holding a session's metadata.
pub(crate) fn ref_name(session: &str) -> String {
    names::meta_ref(session)
}

/// The blob the session's ref (`ref_name`) points at, stored: the record of the plan commit
/// that starts a session sets the ref, so a crash between the branch's creation and this
/// ref is finished with it (the blob is the same each time: the
/// text and its tag depend on nothing else).
pub(crate) fn blob(repo: &Repository, session: &str, meta: &Meta) -> Result<Oid, HistoryError> {
    let mut text = format!(
        "session {session}\nbase {}\nbase-branch {}\n",
        meta.base
            .map(|o| o.to_string())
            .unwrap_or_else(|| "-".into()),
        meta.base_branch.as_deref().unwrap_or("-")
    );
    if let Some(branch) = &meta.branch {
        text.push_str(&format!("branch {branch}\n"));
    }
    // pai's mark: a ref a repository ships under refs/pai/sessions/ is never read as pai's.
    if let Some(tag) = auth::tag(DOMAIN, &[session.as_bytes(), text.as_bytes()]) {
        text.push_str(&format!("auth {tag}\n"));
    }
    repo.blob(text.as_bytes())
        .ctx(|| format!("cannot record session {session}"))
}

/// Read the metadata of `session`, if recorded.
pub(crate) fn read(repo: &Repository, session: &str) -> Option<Meta> {
    let reference = repo.find_reference(&ref_name(session)).ok()?;
    read_blob(repo, session, reference.target()?)
}

/// [`read`] from the blob the session's ref points at (`blob`), found already.
pub(crate) fn read_blob(repo: &Repository, session: &str, blob: Oid) -> Option<Meta> {
    let blob = repo.find_blob(blob).ok()?;
    let text = std::str::from_utf8(blob.content()).ok()?;
    let (text, tag) = text.strip_suffix('\n')?.rsplit_once('\n')?;
    let text = format!("{text}\n");
    if !names::is_id(session)
        || !auth::check(
            DOMAIN,
            &[session.as_bytes(), text.as_bytes()],
            tag.strip_prefix("auth ")?,
        )
    {
        return None;
    }
    let mut meta = Meta::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("base ") {
            meta.base = Oid::from_str(v).ok();
        } else if let Some(v) = line.strip_prefix("base-branch ") {
            meta.base_branch = (v != "-").then(|| v.to_string());
        } else if let Some(v) = line.strip_prefix("branch ") {
            // Only a session branch: anything else is not a line of pai's work.
            meta.branch = names::session_of_branch(v).map(|_| v.to_string());
        }
    }
    Some(meta)
}

/// The branch holding `session`'s plans: the line it continued, else `refs/heads/pai/<id>`.
pub(crate) fn branch_of(repo: &Repository, session: &str) -> String {
    read(repo, session)
        .and_then(|m| m.branch)
        .unwrap_or_else(|| names::branch_ref(session))
}
