//! Snapshots of the user's own changes that an earlier session took before a plan and never
//! placed under a plan commit: pai stopped during the plan (a crash, a kill, a power cut), or
//! the session branch moved under it. The snapshot ref is then the only copy of what the user
//! had before that plan, so a new session reports it instead of leaving it unseen.

use std::collections::BTreeSet;

use git2::{Oid, Repository};

use crate::history::git::names;
use crate::history::record::message::Kind;

/// Most snapshot commits followed down one pending ref (a plan takes one or two).
const MAX_SNAPSHOT_COMMITS: usize = 64;

/// A snapshot an earlier session left at `refs/pai/pending/<session>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverSnapshot {
    /// The session that took it.
    pub session: String,
    /// The ref that keeps it.
    pub reference: String,
    /// The files it recorded.
    pub files: Vec<String>,
    /// The history is the private `.pai_history/git` (git needs to be told where it is).
    pub private: bool,
}

/// Snapshots earlier sessions left behind (see the module documentation), oldest session
/// first. Empty whenever the repository cannot be read:
/// this is a report, never a reason to fail.
pub(in crate::history) fn snapshots(
    id: &str,
    repo: &Repository,
    private: bool,
) -> Vec<LeftoverSnapshot> {
    let prefix = names::pending_ref("");
    let Ok(refs) = repo.references_glob(&format!("{prefix}*")) else {
        return Vec::new();
    };
    let mut out: Vec<LeftoverSnapshot> = refs
        .flatten()
        .filter_map(|r| {
            let name = r.name().ok()?.to_string();
            let session = name.strip_prefix(&prefix)?.to_string();
            if session == id {
                return None;
            }
            let top = r.target()?;
            // A ref pai did not write (a name outside its grammar, a snapshot without
            // its mark) is not reported: its name would go into a suggested command.
            if !crate::history::record::forged::pending_is_pais(repo, &session, top) {
                return None;
            }
            Some(LeftoverSnapshot {
                files: snapshot_files(repo, top),
                session,
                reference: name,
                private,
            })
        })
        .collect();
    out.sort_by(|a, b| a.session.cmp(&b.session));
    out
}

/// The files the `Pai-Kind: user` commits from `top` down record (each against its parent).
fn snapshot_files(repo: &Repository, top: Oid) -> Vec<String> {
    let mut files = BTreeSet::new();
    let mut next = repo.find_commit(top).ok();
    for _ in 0..MAX_SNAPSHOT_COMMITS {
        let Some(commit) = next.take() else { break };
        if crate::history::record::verified::trailers(&commit).kind != Some(Kind::User) {
            break;
        }
        let parent = commit.parent(0).ok();
        let (Ok(tree), parent_tree) = (commit.tree(), parent.as_ref().map(|p| p.tree())) else {
            break;
        };
        let parent_tree = parent_tree.and_then(Result::ok);
        if let Ok(diff) = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None) {
            for delta in diff.deltas() {
                if let Some(p) = delta
                    .new_file()
                    .path_bytes()
                    .or(delta.old_file().path_bytes())
                {
                    files.insert(crate::rawname::display(&crate::rawname::encode(p)).into_owned());
                }
            }
        }
        next = parent;
    }
    files.into_iter().collect()
}
