//! What a plan needs of the session it belongs to: the session's id and project root and,
//! when it may write, its [`Writer`]. The session implements [`PlanHost`]; the plan's steps
//! take it, so the plan sits below the session that begins it.

use std::path::Path;

use git2::{Oid, Repository};

use crate::history::error::HistoryError;
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::meta::Meta;
use crate::history::record::line::Line;

/// The session a plan belongs to, as the plan's steps see it.
pub trait PlanHost {
    /// The session id.
    fn id(&self) -> &str;
    /// The project root.
    fn root(&self) -> &Path;
    /// Why the session cannot record history; `None` when it can.
    fn read_only_reason(&self) -> Option<&str>;
    /// The session's writer, or the read-only refusal.
    fn writer(&mut self) -> Result<&mut Writer, HistoryError>;
}

/// Everything a writable session keeps between plans.
pub struct Writer {
    pub(in crate::history) repo: Repository,
    pub(in crate::history) private: bool,
    /// Where the plans go: `refs/heads/pai/<id>`, or the session branch HEAD was on when
    /// the session started (it continues that line of work).
    pub(in crate::history) branch: String,
    /// Whether that branch exists yet, and where HEAD must be until it does.
    pub(in crate::history) line: Line,
    pub(in crate::history) meta: Meta,
    pub(in crate::history) identity: Option<(String, String)>,
    /// The number the next plan commit gets (plan numbers only grow within a session).
    pub(in crate::history) next_plan: u32,
    /// For a new session (not a continued one): the commit HEAD was at when it started. None
    /// of the session's commits can be reachable from it, so counting them stops there.
    pub(in crate::history) started_at: Option<Oid>,
    pub(in crate::history) _lock: WorkTreeLock,
}
