//! The executor's moves in pai's state directory in the project (`.pai_history`): a plan's
//! trash copies, the markers of notes given once, the session logs `pai gc` prunes. Each is
//! whole on its own (a copy or marker written new by temp and link, a removal one unlink),
//! so these moves are carried out at once and never journaled; all go through the state
//! directory, which refuses a link planted on the way.

use git2::Repository;

use super::super::error::{Context as _, HistoryError};
use super::direction::{Applied, Direction};
use super::record::{Record, StateTo};
use crate::history::git::store;

/// Carry out `record`'s state-directory moves. Forward only: backward they stay (nothing
/// reads a copy but a person looking, and a plan's undo puts back only what its commit
/// recorded in the object store). A copy or marker found standing at its place is left and
/// named (the first copy is the user's version). `repo`: where the copies' bytes are; a
/// record with copies needs it.
pub(super) fn apply(
    repo: Option<&Repository>,
    record: &Record,
    dir: Direction,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    if dir == Direction::Back {
        return Ok(());
    }
    for m in &record.state_files {
        let label = m.parts.join("/");
        let parts: Vec<&str> = m.parts.iter().map(String::as_str).collect();
        let state = store::open(&m.root)?;
        let changed = match &m.to {
            StateTo::Copy(copy) => {
                let repo = repo.ok_or_else(|| HistoryError::Io {
                    context: format!("cannot write the copy {label}"),
                    source: std::io::Error::other("its bytes are in a repository not open here"),
                })?;
                let blob = repo
                    .find_blob(copy.id)
                    .ctx(|| format!("cannot read the copy {label} from git"))?;
                let perm = copy.perm.unwrap_or(0o644) & 0o7777;
                state
                    .write_new(&parts, blob.content(), perm)
                    .ctx(|| format!("cannot write the copy {label}"))?
            }
            StateTo::Mark(perm) => state
                .write_new(&parts, b"", perm & 0o7777)
                .ctx(|| format!("cannot write {label}"))?,
            StateTo::Removed => {
                state
                    .remove(&parts)
                    .ctx(|| format!("cannot remove {label}"))?;
                true
            }
        };
        if changed {
            out.changed += 1;
        } else {
            out.kept.push(label);
        }
    }
    Ok(())
}

/// Carry out a record that moves only files in pai's state directory (markers and removals:
/// no bytes from git), with no repository: where there may be none (outside git, or before
/// one is opened). A record with any other move is refused whole.
pub(crate) fn at_once_in_state_dir(record: &Record) -> Result<Applied, HistoryError> {
    let only_state = record.refs.is_empty()
        && record.head.is_none()
        && record.files.is_empty()
        && record.index.is_empty()
        && record.worktrees.is_empty()
        && record
            .state_files
            .iter()
            .all(|m| !matches!(m.to, StateTo::Copy(_)));
    if !only_state {
        return Err(HistoryError::Io {
            context: format!("cannot finish {}", record.describe()),
            source: std::io::Error::other("it moves more than pai's state directory"),
        });
    }
    let mut out = Applied::default();
    apply(None, record, Direction::Forward, &mut out)?;
    Ok(out)
}
