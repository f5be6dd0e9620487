//! What the model wrote on the line of work a session continues: under `--yes`, an allow-list
//! rule covers a command only when the model has written nothing it could run. That memory
//! must outlive the turn and the process (a `py_compile.py` written in yesterday's `--yes`
//! session is still the model's), so it is read from the line itself: any plan commit pai made
//! for this user on it that the user has not merged into the branch the line started from.

use git2::Oid;

use super::message::Kind;
use super::session::{Session, State};
use crate::history::git::auth;
use crate::history::git::names;

/// Most commits looked at down the line (a line holds a few plans and snapshots each).
const MAX_COMMITS: usize = 10_000;

impl Session {
    /// Whether the line this session's plans go on holds a plan of pai's that changed files
    /// and is not merged into the base branch: what the model wrote there is in the project
    /// until the user reviews and merges it. `false` for a read-only session.
    pub fn line_holds_unmerged_plans(&self) -> bool {
        let State::Writable(w) = &self.state else {
            return false;
        };
        let Ok(Some(tip)) = w.line.tip(&w.repo, &w.branch) else {
            return false;
        };
        let merged_into = w
            .meta
            .base_branch
            .as_deref()
            .and_then(|b| names::target(&w.repo, b).ok().flatten());
        let mut at: Option<Oid> = Some(tip);
        for _ in 0..MAX_COMMITS {
            let Some(id) = at else { return false };
            if Some(id) == w.meta.base {
                return false;
            }
            let Ok(commit) = w.repo.find_commit(id) else {
                return false;
            };
            if auth::trailers(&commit).kind == Some(Kind::Plan) {
                let merged = merged_into
                    .is_some_and(|m| m == id || w.repo.graph_descendant_of(m, id).unwrap_or(false));
                return !merged;
            }
            at = commit.parent_id(0).ok();
        }
        true
    }
}
