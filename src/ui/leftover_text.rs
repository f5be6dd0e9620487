//! A snapshot an earlier session left under no plan commit, told to the user as plain text
//! with the git commands that show, restore or forget it. History finds the snapshots
//! (`LeftoverSnapshot`) and renders none.

use crate::history::LeftoverSnapshot;

/// Most file names named in a report.
const MAX_FILES_SHOWN: usize = 5;

/// What to tell the user of `snapshot`: what it is, and the git commands to see, restore or
/// forget it.
pub fn leftover_snapshot_text(snapshot: &LeftoverSnapshot) -> String {
    let git = if snapshot.private {
        "git --git-dir=.pai_history/git --work-tree=."
    } else {
        "git"
    };
    let r = &snapshot.reference;
    let mut files = if snapshot.files.is_empty() {
        "no files".to_string()
    } else {
        snapshot.files[..snapshot.files.len().min(MAX_FILES_SHOWN)].join(", ")
    };
    let more = snapshot.files.len().saturating_sub(MAX_FILES_SHOWN);
    if more > 0 {
        files.push_str(&format!(", {more} more"));
    }
    format!(
        "a plan of session {} was never committed (pai stopped during it, or its branch moved); \
         the snapshot of your own changes taken before it is kept at {r} ({files}). \
         `{git} show --stat {r}` shows it, `{git} checkout {r} -- <file>` restores a file, \
         `{git} update-ref -d {r}` forgets it",
        snapshot.session
    )
}
