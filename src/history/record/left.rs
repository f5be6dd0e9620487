//! What a plan left at the paths it saved trash copies of (ignored or LFS files git does not
//! keep, so the plan commit's tree cannot say): recorded beside the copies in the plan's
//! `Pai-Trash` tree (a `left` blob, one `<blob id or -> <path>` line each), so that undo can
//! check, before its first write, that each such file still holds exactly what the plan left
//! and refuse (or, with `--force`, keep the current bytes for redo) when it does not.

use std::collections::BTreeMap;

use git2::{Oid, Repository};

use crate::history::error::{Context as _, HistoryError};
use crate::history::ops::scope;
use crate::history::ops::work_tree::WorkTree;

/// The entry of the trash tree holding the list.
pub(crate) const NAME: &str = "left";

/// The `left` blob for the paths of `copies`, read from the work tree as the plan leaves it
/// (a link or special file there is not listed, so not checked). `None` without copies.
pub(crate) fn record(
    repo: &Repository,
    wt: &dyn WorkTree,
    copies: &BTreeMap<String, (Oid, u32)>,
) -> Result<Option<Oid>, HistoryError> {
    if copies.is_empty() {
        return Ok(None);
    }
    let mut text = String::new();
    for path in copies.keys().filter(|p| !p.contains('\n')) {
        match scope::work_file(wt, path)? {
            Ok(Some(f)) => text.push_str(&format!("{} {path}\n", f.id)),
            Ok(None) => text.push_str(&format!("- {path}\n")),
            Err(()) => {}
        }
    }
    let blob = repo
        .blob(text.as_bytes())
        .ctx(|| "cannot record what the plan left".to_string())?;
    Ok(Some(blob))
}

/// What the plan left at each path, from its trash tree: the blob id, or `None` where it left
/// nothing. Empty for a tree without the list.
pub(crate) fn read(repo: &Repository, trash_tree: Oid) -> BTreeMap<String, Option<Oid>> {
    let Some(text) = repo
        .find_tree(trash_tree)
        .ok()
        .and_then(|t| t.get_name(NAME).map(|e| e.id()))
        .and_then(|id| repo.find_blob(id).ok())
        .map(|b| String::from_utf8_lossy(b.content()).into_owned())
    else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| {
            let (id, path) = l.split_once(' ')?;
            let id = if id == "-" {
                None
            } else {
                Some(Oid::from_str(id).ok()?)
            };
            Some((path.to_string(), id))
        })
        .collect()
}
