//! The files a plan commit changed, with their added and deleted line counts: diffed once,
//! when the commit is made, and recorded in its message (a `Files` section above the
//! trailers), so `pai log` lists plans from their messages alone, as `git log --oneline`
//! does, instead of reading two trees and every changed blob of every plan (which would make
//! `pai log`'s cost grow with every plan's changes).
//!
//! The record names the commit's tree and its parent's tree; when either differs (the commit
//! was rebased or amended with other content, or was made before the record existed), the
//! record is not used and the commit is diffed instead. `--patch` always diffs.

use git2::{Blob, Commit, DiffOptions, Patch, Repository, Tree};
use serde::Serialize;

use crate::history::error::{Context, HistoryError};
use crate::history::ops::scope::Entry;
use crate::history::record::revert;

/// One file of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileStat {
    /// Project-relative path.
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub status: &'static str,
    /// Lines added.
    pub added: usize,
    /// Lines deleted.
    pub deleted: usize,
    /// Whether git sees the file as binary (no line counts).
    pub binary: bool,
}

/// The heading of the section: `Files (tree <new> from <old>):`.
const HEADING: &str = "Files (tree ";
/// Hex digits of each tree id the heading records: enough to tell a rewritten commit.
const TREE_HEX: usize = 12;
/// The tree id of an empty tree (a root commit's parent side).
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// Plans that changed more files than this are not recorded (the message stays readable);
/// `pai log` diffs them.
const MAX_RECORDED: usize = 1_000;

const STATUSES: [&str; 3] = ["added", "modified", "deleted"];

/// The files `new` changed relative to `old` with their line counts: each changed blob
/// against its old version, found by comparing only the subtrees whose ids differ, so the
/// cost follows the plan, not the repository (a libgit2 tree diff limited by pathspecs walks
/// the whole tree when the paths share no directory).
pub(crate) fn stats(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: &Tree<'_>,
) -> Result<Vec<FileStat>, HistoryError> {
    let changed = revert::changed_paths(repo, old, Some(new))?;
    let blob = |side: Option<Entry>| -> Result<Option<Blob<'_>>, HistoryError> {
        side.map(|(id, _)| repo.find_blob(id).ctx(|| format!("cannot read blob {id}")))
            .transpose()
    };
    let mut files = Vec::with_capacity(changed.len());
    for c in changed {
        let (before, after) = (blob(c.before)?, blob(c.after)?);
        let path = crate::rawname::path(&c.path);
        let patch = Patch::from_buffers(
            content(&before),
            Some(&path),
            content(&after),
            Some(&path),
            None,
        )
        .ctx(|| format!("cannot diff {}", c.path))?;
        let (_, added, deleted) = patch.line_stats().ctx(|| "cannot count lines".into())?;
        let status = match (&before, &after) {
            (None, _) => "added",
            (_, None) => "deleted",
            _ => "modified",
        };
        files.push(FileStat {
            path: crate::rawname::display(&c.path).into_owned(),
            status,
            added,
            deleted,
            binary: patch.delta().flags().is_binary(),
        });
    }
    Ok(files)
}

/// A blob's bytes; nothing for a side that has no file.
fn content<'b>(blob: &'b Option<Blob<'_>>) -> &'b [u8] {
    blob.as_ref().map_or(&[][..], Blob::content)
}

/// The files `new` changed relative to `old` with their line counts, and their unified diff
/// (`pai log --patch`).
pub(crate) fn diff(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: &Tree<'_>,
) -> Result<(Vec<FileStat>, String), HistoryError> {
    // Limit libgit2's diff to the paths the plan changed.
    let changed = revert::changed_paths(repo, old, Some(new))?;
    if changed.is_empty() {
        return Ok((Vec::new(), String::new()));
    }
    let mut opts = DiffOptions::new();
    opts.disable_pathspec_match(true);
    for c in &changed {
        opts.pathspec(&c.path);
    }
    let diff = repo
        .diff_tree_to_tree(old, Some(new), Some(&mut opts))
        .ctx(|| "cannot diff a plan".into())?;
    let mut files = Vec::new();
    let mut patch_text = String::new();
    for i in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(i) else {
            continue;
        };
        let file = if delta.new_file().exists() {
            delta.new_file()
        } else {
            delta.old_file()
        };
        let path = file
            .path_bytes()
            .map(|p| crate::rawname::display(&crate::rawname::encode(p)).into_owned())
            .unwrap_or_default();
        let status = match (delta.old_file().exists(), delta.new_file().exists()) {
            (false, _) => "added",
            (_, false) => "deleted",
            _ => "modified",
        };
        let mut stat = FileStat {
            path,
            status,
            added: 0,
            deleted: 0,
            binary: delta.flags().is_binary(),
        };
        if let Some(mut patch) = Patch::from_diff(&diff, i).ctx(|| "cannot diff a plan".into())? {
            let (_, added, deleted) = patch.line_stats().ctx(|| "cannot count lines".into())?;
            stat.added = added;
            stat.deleted = deleted;
            stat.binary = stat.binary || patch.delta().flags().is_binary();
            let buf = patch.to_buf().ctx(|| "cannot format a patch".into())?;
            patch_text.push_str(&String::from_utf8_lossy(&buf));
        }
        files.push(stat);
    }
    Ok((files, patch_text))
}

/// The files of `commit` against its first parent: from its message's record when that
/// record is there and names the trees the commit really has, else diffed.
pub(crate) fn of_commit(
    repo: &Repository,
    commit: &Commit<'_>,
    message: &str,
) -> Result<Vec<FileStat>, HistoryError> {
    if let Some(files) = recorded(commit, message) {
        return Ok(files);
    }
    let tree = commit.tree().ctx(|| "cannot read a plan's tree".into())?;
    let parent = revert::parent_tree(commit)?;
    stats(repo, parent.as_ref(), &tree)
}

/// `message` with the record of `files` (what `new` changed relative to `old`) as its
/// last section before the trailers.
pub(crate) fn with_record(
    message: String,
    old: Option<&Tree<'_>>,
    new: &Tree<'_>,
    files: &[FileStat],
) -> String {
    if files.len() > MAX_RECORDED {
        return message;
    }
    // The trailers are the message's last paragraph: the section goes just above them.
    let Some(cut) = message.trim_end().rfind("\n\n").map(|i| i + 2) else {
        return message;
    };
    let old = old.map_or_else(|| EMPTY_TREE.to_string(), |t| t.id().to_string());
    let new = new.id().to_string();
    let mut section = format!(
        "{HEADING}{} from {}):\n",
        &new[..TREE_HEX],
        &old[..TREE_HEX]
    );
    for f in files {
        let counts = if f.binary {
            "binary".to_string()
        } else {
            format!("+{} -{}", f.added, f.deleted)
        };
        section.push_str(&format!("{} {counts} {}\n", f.status, quoted(&f.path)));
    }
    section.push('\n');
    let mut out = message;
    out.insert_str(cut, &section);
    out
}

/// The recorded files of `commit`, when its message has a record of its own trees.
fn recorded(commit: &Commit<'_>, message: &str) -> Option<Vec<FileStat>> {
    let mut lines = message.lines().skip_while(|l| !l.starts_with(HEADING));
    let heading = lines.next()?.strip_prefix(HEADING)?.strip_suffix("):")?;
    let (new, old) = heading.split_once(" from ")?;
    if !commit.tree_id().to_string().starts_with(new) || new.len() != TREE_HEX {
        return None;
    }
    let parent_tree = match commit.parent_count() {
        0 => EMPTY_TREE.to_string(),
        _ => commit.parent(0).ok()?.tree_id().to_string(),
    };
    if !parent_tree.starts_with(old) || old.len() != TREE_HEX {
        return None;
    }
    let mut files = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        files.push(parse_line(line)?);
    }
    Some(files)
}

/// `modified +3 -1 src/main.rs` or `added binary logo.png`.
fn parse_line(line: &str) -> Option<FileStat> {
    let (status, rest) = line.split_once(' ')?;
    let status = STATUSES.into_iter().find(|s| *s == status)?;
    let (added, deleted, binary, path) = match rest.strip_prefix("binary ") {
        Some(path) => (0, 0, true, path),
        None => {
            let (added, rest) = rest.strip_prefix('+')?.split_once(' ')?;
            let (deleted, path) = rest.strip_prefix('-')?.split_once(' ')?;
            (added.parse().ok()?, deleted.parse().ok()?, false, path)
        }
    };
    Some(FileStat {
        path: unquoted(path)?,
        status,
        added,
        deleted,
        binary,
    })
}

/// A path as the record writes it: as is, or as a JSON string when it has characters that
/// would break the line (control characters, quotes, backslashes, edge spaces).
fn quoted(path: &str) -> String {
    let plain = !path.is_empty()
        && path.trim() == path
        && !path.starts_with('"')
        && !path.chars().any(|c| c.is_control() || c == '\\');
    if plain {
        path.to_string()
    } else {
        serde_json::to_string(path).unwrap_or_default()
    }
}

fn unquoted(path: &str) -> Option<String> {
    if path.starts_with('"') {
        serde_json::from_str(path).ok()
    } else {
        (!path.is_empty()).then(|| path.to_string())
    }
}

#[cfg(test)]
mod tests {
    use crate::history::plan::files::*;

    #[test]
    fn lines_round_trip_with_awkward_paths() {
        for path in [
            "src/main.rs",
            "with space.txt",
            " leading.txt",
            "line\nbreak.txt",
            "\"quoted\".txt",
            "back\\slash",
            "tab\there",
            "binary +1 -1 x",
        ] {
            for (binary, added, deleted) in [(false, 3, 1), (true, 0, 0)] {
                let f = FileStat {
                    path: path.to_string(),
                    status: "modified",
                    added,
                    deleted,
                    binary,
                };
                let counts = if binary {
                    "binary".into()
                } else {
                    format!("+{added} -{deleted}")
                };
                let line = format!("{} {counts} {}", f.status, quoted(&f.path));
                assert!(!line.contains('\n'), "{line:?}");
                assert_eq!(parse_line(&line), Some(f), "{line:?}");
            }
        }
        assert_eq!(parse_line("renamed +1 -1 a"), None);
        assert_eq!(parse_line("added +x -1 a"), None);
    }
}
