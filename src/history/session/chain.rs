//! What the model wrote on the line of work a session continues: under `--yes`, an allow-list
//! rule covers a command only when the model has written nothing it could run. That memory
//! must outlive the turn and the process (a `py_compile.py` written in yesterday's `--yes`
//! session is still the model's), so it is read from the line itself: any plan commit pai made
//! for this user on it that the user has not merged into the branch the line started from.

use git2::{Oid, Repository};

use crate::history::git::meta::Meta;
use crate::history::git::names;
use crate::history::record::message::Kind;
use crate::history::record::verified;

/// Most commits looked at down the line (a line holds a few plans and snapshots each).
const MAX_COMMITS: usize = 10_000;

/// Whether the line whose tip is `tip` (its metadata `meta`) holds a plan of pai's that
/// changed files and is not merged into the base branch: what the model wrote there is in
/// the project until the user reviews and merges it.
pub(in crate::history) fn holds_unmerged_plans(repo: &Repository, tip: Oid, meta: &Meta) -> bool {
    let merged_into = meta
        .base_branch
        .as_deref()
        .and_then(|b| names::target(repo, b).ok().flatten());
    let mut at: Option<Oid> = Some(tip);
    for _ in 0..MAX_COMMITS {
        let Some(id) = at else { return false };
        if Some(id) == meta.base {
            return false;
        }
        let Ok(commit) = repo.find_commit(id) else {
            return false;
        };
        if verified::trailers(&commit).kind == Some(Kind::Plan) {
            // A base branch still where the line started holds nothing the line added: the
            // plan, met going down from the tip before that commit, lies above it. (A line
            // reset below where it started could hold a plan merged before it; that plan
            // counts as unmerged, the side that asks the user.) Asking git instead walks the
            // base branch's history out of the pack, 2 MB resident in a large repository.
            let merged = merged_into.is_some_and(|m| {
                m == id
                    || (Some(m) != meta.base && repo.graph_descendant_of(m, id).unwrap_or(false))
            });
            return !merged;
        }
        at = commit.parent_id(0).ok();
    }
    true
}
