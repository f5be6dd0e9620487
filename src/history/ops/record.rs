//! One journal record: what an operation in progress will change, written before the
//! operation touches anything (`journal_file.rs`) and removed once it is done.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use git2::Oid;
use serde::{Deserialize, Serialize};

use super::super::error::{Context as _, HistoryError};
use super::worktree::moves::WorktreeMove;
use crate::history::git::names::Head;
use crate::history::ops::scope::{Entry, MODE_EXEC, MODE_FILE, WorkFile};

/// The record format; a record of another version is reported, never acted on.
const VERSION: u32 = 1;

/// Which operation a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OpKind {
    /// A plan's commit: the branch (and HEAD, for a new line) moved, the index synced.
    PlanCommit,
    /// `pai undo`.
    Undo,
    /// `pai redo`.
    Redo,
    /// `pai discard`'s last step: HEAD back to the base, the branch kept under `refs/pai/`.
    Discard,
    /// A plan whose steps are writing, until its commit's own record takes over: rolled
    /// back, never finished, when found (`plan.rs`).
    Plan,
    /// Preparing a plan: the pending snapshot ref set, a trash copy written (each carried
    /// out at once, never journaled: see [`super::at_once`]).
    Prepare,
    /// `pai --continue`: HEAD attached to the session's branch at the commit it is on.
    Continue,
    /// `pai gc`: refs no longer needed deleted.
    Gc,
    /// A note given once in a project: its marker written (carried out at once).
    Note,
    /// A worktree session's worktree added or removed (carried out at once).
    Worktree,
}

impl OpKind {
    /// The operation as the recovery line names it.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            OpKind::PlanCommit => "commit",
            OpKind::Undo => "undo",
            OpKind::Redo => "redo",
            OpKind::Discard => "discard",
            OpKind::Plan => "plan",
            OpKind::Prepare => "preparation",
            OpKind::Continue => "continue",
            OpKind::Gc => "gc",
            OpKind::Note => "note",
            OpKind::Worktree => "worktree",
        }
    }
}

/// A blob and its git mode, as a record spells them; for a work-tree file, the blob holds
/// the file's exact bytes, and the record says where they come from and, when they matter,
/// the file's permission bits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Blob {
    id: String,
    mode: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    perm: Option<u32>,
    #[serde(default, skip_serializing_if = "Source::is_stored")]
    from: Source,
}

/// Where a work-tree file's bytes come from. The executor writes the blob the record names
/// whatever its source: the bytes are worked out (and put in the object store) while the
/// record is built, so finishing an operation after a crash writes exactly what the live
/// operation would have, whatever the repository's configuration says by then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Source {
    /// A blob as git stores it, written as it is (no conversion applies to the path).
    #[default]
    Stored,
    /// git's checkout of a stored blob at the path (line endings, `ident`): the bytes the
    /// conversion gives.
    Checkout,
    /// A copy of exact bytes pai kept: a plan's trash copy, or what undo kept for redo.
    Copy,
    /// What stood in the work tree when the operation was built.
    Found,
}

impl Source {
    fn is_stored(&self) -> bool {
        *self == Source::Stored
    }
}

/// One state of a work-tree file in a record: its exact bytes (a blob in the object store),
/// its git mode, its permission bits when they are known (else the file keeps the bits it
/// has, with the execute bits as the mode says), and where the bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileState {
    /// The blob of the file's exact bytes.
    pub id: Oid,
    /// Its git mode.
    pub mode: i32,
    /// Its permission bits, when the state says them.
    pub perm: Option<u32>,
    /// Where the bytes come from.
    pub from: Source,
}

impl FileState {
    /// A stored blob written as it is, with its git mode.
    pub(crate) fn stored((id, mode): Entry) -> FileState {
        FileState {
            id,
            mode,
            perm: None,
            from: Source::Stored,
        }
    }

    /// The bytes `id` that git's checkout gives for a blob at the path, with its git mode.
    pub(crate) fn checkout(id: Oid, mode: i32) -> FileState {
        FileState {
            from: Source::Checkout,
            ..FileState::stored((id, mode))
        }
    }

    /// A copy pai kept (bytes `id`) with its permission bits.
    pub(crate) fn copy(id: Oid, perm: u32) -> FileState {
        let mode = if perm & 0o111 != 0 {
            MODE_EXEC
        } else {
            MODE_FILE
        };
        FileState {
            id,
            mode,
            perm: Some(perm),
            from: Source::Copy,
        }
    }

    /// The work file `file` as found, with its permission bits `perm` when known.
    pub(crate) fn found(file: &WorkFile, perm: Option<u32>) -> FileState {
        FileState {
            id: file.id,
            mode: file.mode,
            perm,
            from: Source::Found,
        }
    }

    /// Whether the work file `file`, whose permission bits are `perm` (when known), is in
    /// this state: the same bytes, the same execute bit, and the same permission bits where
    /// the state says them.
    pub(crate) fn holds(&self, file: &WorkFile, perm: Option<u32>) -> bool {
        file.id == self.id
            && file.mode == self.mode
            && match (self.perm, perm) {
                (Some(want), Some(is)) => want == is,
                _ => true,
            }
    }

    fn spelled(&self) -> Blob {
        Blob {
            id: self.id.to_string(),
            mode: self.mode,
            perm: self.perm,
            from: self.from,
        }
    }
}

fn blob_of(entry: Option<Entry>) -> Option<Blob> {
    entry.map(|e| FileState::stored(e).spelled())
}

fn state_of(blob: Option<&Blob>) -> Result<Option<FileState>, HistoryError> {
    blob.map(|b| {
        Ok(FileState {
            id: parse_oid(&b.id)?,
            mode: b.mode,
            perm: b.perm,
            from: b.from,
        })
    })
    .transpose()
}

fn entry_of(blob: Option<&Blob>) -> Result<Option<Entry>, HistoryError> {
    blob.map(|b| Ok((parse_oid(&b.id)?, b.mode))).transpose()
}

fn parse_oid(text: &str) -> Result<Oid, HistoryError> {
    Oid::from_str(text).ctx(|| format!("the operation journal names a bad object id {text}"))
}

/// A ref the operation moves; `None` is "absent".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RefMove {
    /// The full ref name.
    pub name: String,
    old: Option<String>,
    new: Option<String>,
}

impl RefMove {
    /// `name` from `old` to `new`.
    pub(crate) fn new(name: &str, old: Option<Oid>, new: Option<Oid>) -> RefMove {
        RefMove {
            name: name.to_string(),
            old: old.map(|o| o.to_string()),
            new: new.map(|o| o.to_string()),
        }
    }

    /// (old, new), parsed.
    pub(crate) fn states(&self) -> Result<(Option<Oid>, Option<Oid>), HistoryError> {
        let parse = |s: &Option<String>| s.as_deref().map(parse_oid).transpose();
        Ok((parse(&self.old)?, parse(&self.new)?))
    }
}

/// HEAD's move: each side a branch's full name (`ref: <name>`) or a commit id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeadMove {
    old: String,
    new: String,
}

fn spell_head(head: &Head) -> String {
    match head {
        Head::Branch(name) => format!("ref: {name}"),
        Head::Detached(oid) => oid.to_string(),
    }
}

fn parse_head(text: &str) -> Result<Head, HistoryError> {
    Ok(match text.strip_prefix("ref: ") {
        Some(name) => Head::Branch(name.to_string()),
        None => Head::Detached(parse_oid(text)?),
    })
}

impl HeadMove {
    /// HEAD from `old` to `new`.
    pub(crate) fn new(old: &Head, new: &Head) -> HeadMove {
        HeadMove {
            old: spell_head(old),
            new: spell_head(new),
        }
    }

    /// (old, new), parsed.
    pub(crate) fn states(&self) -> Result<(Head, Head), HistoryError> {
        Ok((parse_head(&self.old)?, parse_head(&self.new)?))
    }
}

/// A work-tree file or an index entry the operation changes; `None` is "absent".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileMove {
    /// Project-relative path.
    pub path: String,
    before: Option<Blob>,
    after: Option<Blob>,
}

impl FileMove {
    /// `path` from `before` to `after`.
    pub(crate) fn new(path: &str, before: Option<Entry>, after: Option<Entry>) -> FileMove {
        FileMove {
            path: path.to_string(),
            before: blob_of(before),
            after: blob_of(after),
        }
    }

    /// (before, after), parsed.
    pub(crate) fn states(&self) -> Result<(Option<Entry>, Option<Entry>), HistoryError> {
        Ok((
            entry_of(self.before.as_ref())?,
            entry_of(self.after.as_ref())?,
        ))
    }

    /// `path` from the work-file state `before` to `after`.
    pub(crate) fn work(
        path: &str,
        before: Option<FileState>,
        after: Option<FileState>,
    ) -> FileMove {
        FileMove {
            path: path.to_string(),
            before: before.map(|s| s.spelled()),
            after: after.map(|s| s.spelled()),
        }
    }

    /// (before, after) as work-file states: exact bytes, mode, permission bits.
    pub(crate) fn file_states(
        &self,
    ) -> Result<(Option<FileState>, Option<FileState>), HistoryError> {
        Ok((
            state_of(self.before.as_ref())?,
            state_of(self.after.as_ref())?,
        ))
    }

    /// A plan's record: what the path holds now that a step wrote it.
    pub(crate) fn set_after(&mut self, after: Option<Entry>) {
        self.after = blob_of(after);
    }
}

/// A file in pai's state directory in the project (`.pai_history`), moved through the state
/// directory so a link planted on the way is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateMove {
    /// The project root whose state directory holds the file.
    pub root: PathBuf,
    /// The file's path components below the state directory.
    pub parts: Vec<String>,
    /// What the move leaves there.
    pub to: StateTo,
}

/// What a [`StateMove`] leaves at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateTo {
    /// A copy pai keeps (a plan's trash copy): its bytes (a blob in the object store) and
    /// permission bits, written once, never over another copy (the first is the user's
    /// version).
    Copy(FileState),
    /// An empty marker with these permission bits (a note given once), written once.
    Mark(u32),
    /// Nothing: the file removed (a session log `pai gc` prunes); absent already is done.
    Removed,
}

/// What an operation in progress changes. A record with no moves at all is an intent: the
/// operation had taken the index lock and was still checking, so recovery only frees the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    version: u32,
    /// The operation.
    pub kind: OpKind,
    /// The session whose plan it concerns.
    pub session: String,
    /// The plan number (0 when none).
    pub plan: u32,
    /// When it started (local time, for the recovery line).
    pub started: String,
    /// The process that ran it.
    pub pid: u32,
    /// Refs moved, in order.
    pub refs: Vec<RefMove>,
    /// HEAD's move.
    pub head: Option<HeadMove>,
    /// Work-tree files written or removed.
    pub files: Vec<FileMove>,
    /// Index entries changed.
    pub index: Vec<FileMove>,
    /// A plan's record only: the paths the step under way writes (a folder stands for the
    /// files under it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writing: Vec<String>,
    /// A plan's record only: the step under way may write anywhere (a RUN, a TOOL call).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writing_all: bool,
    /// A plan's record only: the folders that stood before the plan wrote into them, where
    /// removing a file it created stops (only folders the plan made are removed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_dirs: Vec<String>,
    /// What the refs' logs say of the moves (`pai: undo plan 3 (abc1234)`); empty: the
    /// operation as [`Record::describe`] names it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reflog: String,
    /// A plan's record only: the permission bits of the files it recorded, to put back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub perms: BTreeMap<String, u32>,
    /// Files moved in pai's state directory: only in records carried out at once
    /// (`at_once`), never journaled, so never read back.
    #[serde(skip)]
    pub state_files: Vec<StateMove>,
    /// Worktrees added or removed: only in records carried out at once, never journaled.
    #[serde(skip)]
    pub worktrees: Vec<WorktreeMove>,
}

impl Record {
    /// An empty record of `kind`; [`Record::name`] says which plan once that is known.
    pub(crate) fn new(kind: OpKind) -> Record {
        Record {
            version: VERSION,
            kind,
            session: String::new(),
            plan: 0,
            started: chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string(),
            pid: std::process::id(),
            refs: Vec::new(),
            head: None,
            files: Vec::new(),
            index: Vec::new(),
            writing: Vec::new(),
            writing_all: false,
            kept_dirs: Vec::new(),
            reflog: String::new(),
            perms: BTreeMap::new(),
            state_files: Vec::new(),
            worktrees: Vec::new(),
        }
    }

    /// Whether it names any change (else it is an intent only).
    pub(crate) fn has_moves(&self) -> bool {
        !(self.refs.is_empty()
            && self.head.is_none()
            && self.files.is_empty()
            && self.index.is_empty()
            && self.state_files.is_empty()
            && self.worktrees.is_empty())
    }

    /// Name the session and plan the operation concerns (plan 0: none).
    pub(crate) fn name(&mut self, session: &str, plan: u32) {
        self.session = session.to_string();
        self.plan = plan;
    }

    /// Record that the work-tree file `path` goes from `before` to `after`.
    #[cfg(test)]
    pub(crate) fn file(&mut self, path: &str, before: Option<Entry>, after: Option<Entry>) {
        if before != after {
            self.files.push(FileMove::new(path, before, after));
        }
    }

    /// Record that the work-tree file `path` goes from the state `before` to `after` (see
    /// [`FileState`]).
    pub(crate) fn work_file(
        &mut self,
        path: &str,
        before: Option<FileState>,
        after: Option<FileState>,
    ) {
        if before != after {
            self.files.push(FileMove::work(path, before, after));
        }
    }

    /// Record that the index entry of `path` goes from `before` to `after`.
    pub(crate) fn entry(&mut self, path: &str, before: Option<Entry>, after: Option<Entry>) {
        if before != after {
            self.index.push(FileMove::new(path, before, after));
        }
    }

    /// Record that the ref `name` goes from `old` to `new`.
    pub(crate) fn move_ref(&mut self, name: &str, old: Option<Oid>, new: Option<Oid>) {
        if old != new {
            self.refs.push(RefMove::new(name, old, new));
        }
    }

    /// Record that the copy at `parts` below `root`'s state directory is written with the
    /// blob `id` and permission bits `perm`, unless a copy stands there already.
    pub(crate) fn copy(&mut self, root: &Path, parts: Vec<String>, id: Oid, perm: u32) {
        self.state_file(root, parts, StateTo::Copy(FileState::copy(id, perm)));
    }

    /// Record that the file at `parts` below `root`'s state directory goes `to`.
    pub(crate) fn state_file(&mut self, root: &Path, parts: Vec<String>, to: StateTo) {
        self.state_files.push(StateMove {
            root: root.to_path_buf(),
            parts,
            to,
        });
    }

    /// Record a worktree added or removed.
    pub(crate) fn move_worktree(&mut self, m: WorktreeMove) {
        self.worktrees.push(m);
    }

    /// Record that HEAD goes from `old` to `new`.
    pub(crate) fn move_head(&mut self, old: &Head, new: &Head) {
        if old != new {
            self.head = Some(HeadMove::new(old, new));
        }
    }

    /// The operation as the recovery line names it: "the undo of plan 3 of session X".
    pub(crate) fn describe(&self) -> String {
        let what = self.kind.noun();
        if self.session.is_empty() {
            return format!("a pai {what}");
        }
        match (self.kind, self.plan) {
            (OpKind::Plan, n) => format!("plan {n} of session {}", self.session),
            (OpKind::Discard, _) => format!("the discard of session {}", self.session),
            (_, 0) => format!("the {what} of session {}", self.session),
            _ => format!(
                "the {what} of plan {} of session {}",
                self.plan, self.session
            ),
        }
    }

    /// Read the record at `path`.
    pub(crate) fn read(path: &Path) -> Result<Record, HistoryError> {
        let text = fs::read(path).ctx(|| format!("cannot read {}", path.display()))?;
        let record: Record = serde_json::from_slice(&text)
            .map_err(std::io::Error::other)
            .ctx(|| {
                format!(
                    "the operation journal {} is unreadable; move it aside",
                    path.display()
                )
            })?;
        if record.version != VERSION {
            return Err(std::io::Error::other("written by another version of pai"))
                .ctx(|| format!("cannot use the operation journal {}", path.display()));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ops::journal_file::{remove, write_atomic};

    #[test]
    fn a_record_round_trips_and_another_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("op.json");
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let mut rec = Record::new(OpKind::Redo);
        rec.name("s1", 2);
        rec.move_ref("refs/heads/pai/s1", None, Some(id));
        rec.move_head(
            &Head::Detached(id),
            &Head::Branch("refs/heads/pai/s1".into()),
        );
        rec.file("a.txt", Some((id, 0o100755)), None);
        write_atomic(&path, &rec).unwrap();
        let back = Record::read(&path).unwrap();
        assert_eq!(back, rec);
        assert_eq!(back.describe(), "the redo of plan 2 of session s1");
        assert!(!dir.path().join("op.tmp").exists());
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("\"version\": 1", "\"version\": 99");
        std::fs::write(&path, text).unwrap();
        assert!(Record::read(&path).is_err());
        remove(&path).unwrap();
        assert!(!path.exists());
    }
}
