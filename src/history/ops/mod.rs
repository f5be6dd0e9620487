//! The operation journal (issue 27): every history operation that changes more than one
//! thing — a plan commit, an undo, a redo, a discard — is a transaction. Before it takes the
//! index lock it records its intent; before it touches anything it records every ref it will
//! move (old → new), HEAD's move, every file it will write or remove (blob and mode before and
//! after) and every index entry it will change (`record.rs`), all of which is already in git's
//! object store. Then it applies the change and deletes the record. A record found later is an
//! operation whose process died (a kill, a power cut): `recover.rs` removes the lock files it
//! left (`locks.rs`) and finishes it — the record is the point of no return — and says so in
//! one line. An operation in progress is an [`Op`] (`op.rs`); one that fails in-process (a full disk, an I/O error) rolls itself back
//! through the same code run in the other direction (`apply.rs`). A plan's steps are
//! journaled from before the first one writes until the commit's record takes over
//! (`plan.rs`): a plan killed mid-way is rolled back.
//!
//! Records live in the user's state directory (`user_state::dir(..)/ops/`), never in the
//! project, so a repository cannot plant one. Not the session log (`agent/journal.rs`).

mod apply;
mod locks;
mod op;
mod plan;
mod record;
mod recover;

pub(crate) use apply::Direction;
pub(crate) use op::Op;
pub use plan::StepWrites;
pub(crate) use plan::{Before, PlanJournal};
pub(crate) use record::{OpKind, Record};
pub use recover::recover;
