//! Which files of a plan hold the user's own edits, told with the plan before approval: what
//! preparing it would snapshot. Reads only; takes the session branch's tip, so the session
//! can ask without a plan under way.

use git2::{Oid, Repository};

use crate::history::index;
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Class};
use crate::history::ops::work_tree::WorkTree;

/// Which of `paths` (files) hold changes of the user's that the session branch does not:
/// what [`super::PlanUnderWay::prepare`] would commit as a snapshot before a plan touches them. Told
/// with the plan, before approval. Empty when nothing can be read.
pub(in crate::history) fn user_edits_in(
    repo: &Repository,
    tip: Option<Oid>,
    wt: &dyn WorkTree,
    paths: &[String],
) -> Vec<String> {
    // A plan that names no file (a RUN) needs no read of the index.
    if paths.is_empty() {
        return Vec::new();
    }
    let tree = tip.and_then(|t| repo.find_commit(t).ok()?.tree().ok());
    let Ok(index) = index::load_shared(repo) else {
        return Vec::new();
    };
    paths
        .iter()
        .filter(|p| !wt.is_denied(p))
        .filter(|p| {
            let Ok(in_tree) = scope::tree_file(tree.as_ref(), p) else {
                return false;
            };
            // Compared as git stores it: a CRLF file git keeps as LF is no edit.
            let Ok(Ok(file)) = convert::work_file(repo, wt, p, index.get(p)) else {
                return false;
            };
            let class = scope::classify(repo, wt, tree.as_ref(), &index, p);
            if matches!(class, Class::Ignored | Class::Lfs | Class::Filtered) {
                return false;
            }
            let in_work = scope::entry_of(file.as_ref());
            in_work != in_tree || index.get(p) != in_tree
        })
        .cloned()
        .collect()
}
