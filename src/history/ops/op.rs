//! An operation in progress ([`Op`]): its intent, its full record, and its end — the record
//! deleted, after a roll back when the operation failed in-process.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::super::error::HistoryError;
use super::apply;
use super::direction::{Applied, Direction};
use super::journal_file;
use super::record::{OpKind, Record};
use crate::history::index::LockedIndex;
use crate::history::ops::work_tree::WorkTree;

/// An operation in progress: its record is on disk until [`Op::close`].
pub(crate) struct Op {
    path: PathBuf,
    record: Record,
}

impl Op {
    /// Record the intent of `kind` (for `session`'s plan `plan`, when known: an undo learns
    /// which plan it takes back only later, see [`Record::name`]) before the operation takes the index lock: a crash from
    /// here on leaves a record, so the lock it leaves is known to be pai's.
    pub(crate) fn intent(
        repo: &Repository,
        root: &Path,
        kind: OpKind,
        session: &str,
        plan: u32,
    ) -> Result<Op, HistoryError> {
        let path = journal_file::path_for(repo, root)?;
        let mut record = Record::new(kind);
        record.name(session, plan);
        journal_file::write_atomic(&path, &record)?;
        Ok(Op { path, record })
    }

    /// The record being filled in.
    pub(crate) fn record_mut(&mut self) -> &mut Record {
        &mut self.record
    }

    /// Write the filled-in record: from here on, the operation is finished by whoever finds
    /// it (every blob, tree and commit it names must already be in the object store).
    pub(crate) fn begin(&self) -> Result<(), HistoryError> {
        journal_file::write_atomic(&self.path, &self.record)
    }

    /// Carry the filled-in record out: write it (from here on, whoever finds it finishes the
    /// operation), apply it forward (the same call recovery makes), and remove it; a failure
    /// on the way rolls back what was applied, backwards through the same moves. `index`:
    /// git's index as the operation checked it, still locked (see `apply_holding`).
    pub(crate) fn commit(
        self,
        repo: &Repository,
        wt: &dyn WorkTree,
        index: Option<LockedIndex>,
    ) -> Result<Applied, HistoryError> {
        if let Err(e) = self.begin() {
            // The record on disk is still the intent: nothing was moved.
            drop(index);
            self.end(repo, wt, None)?;
            return Err(e);
        }
        self.carry_out(repo, wt, index)
    }

    /// [`Op::commit`] for a record already written ([`Op::begin`]): apply it forward and
    /// remove it, rolling back on a failure.
    pub(crate) fn carry_out(
        self,
        repo: &Repository,
        wt: &dyn WorkTree,
        index: Option<LockedIndex>,
    ) -> Result<Applied, HistoryError> {
        let result = apply::apply_holding(repo, wt, &self.record, Direction::Forward, index);
        self.close(repo, wt, result)
    }

    /// End the operation: on success, drop the record; on failure, roll back what was
    /// applied (the same moves, backwards), then drop it. A roll back that fails itself
    /// leaves the record, and the next pai command finishes the operation.
    pub(crate) fn close<T>(
        self,
        repo: &Repository,
        wt: &dyn WorkTree,
        result: Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let failed = result.is_err().then_some(Direction::Back);
        let ended = self.end(repo, wt, failed);
        let value = result?;
        ended?;
        Ok(value)
    }

    /// End the operation; after a failure, first carry the record out `towards` a whole
    /// state (back to the start, or on to the end when the operation had passed the point
    /// where it cannot go back). The record stays when that fails: the next command finishes.
    pub(crate) fn end(
        self,
        repo: &Repository,
        wt: &dyn WorkTree,
        towards: Option<Direction>,
    ) -> Result<(), HistoryError> {
        if let Some(dir) = towards
            && apply::apply(repo, wt, &self.record, dir).is_err()
        {
            return Ok(());
        }
        journal_file::remove(&self.path)
    }
}

/// Carry `record` out forward at once, with no journal: for moves each whole on its own
/// (the pending snapshot ref set, a trash copy written, HEAD attached to a branch at the
/// commit it is on, refs pruned), where a crash between two leaves each done or not and
/// nothing reads them as a set. The same executor as every operation's. `wt`: the project's
/// files, for a record that moves some (`None`: it moves none).
pub(crate) fn at_once(
    repo: &Repository,
    wt: Option<&dyn WorkTree>,
    record: &Record,
) -> Result<Applied, HistoryError> {
    apply::apply(repo, wt.unwrap_or(&NoFiles), record, Direction::Forward)
}

/// The work tree of a record that moves no project file: any read is refused.
struct NoFiles;

impl WorkTree for NoFiles {
    fn read(&self, rel: &str) -> std::io::Result<crate::history::ops::work_tree::WorkEntry> {
        Err(std::io::Error::other(format!(
            "{rel}: this operation moves no project file"
        )))
    }
    fn write(&self, rel: &str, _: &[u8], _: bool) -> std::io::Result<()> {
        self.read(rel).map(|_| ())
    }
    fn remove(&self, rel: &str) -> std::io::Result<()> {
        self.read(rel).map(|_| ())
    }
    fn is_denied(&self, _: &str) -> bool {
        true
    }
}
