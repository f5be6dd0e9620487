//! The operation journal: every history operation that changes more than one
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
//! What each record covers besides: a plan commit's record moves the session's metadata ref
//! with a session's first plan and creates its branch and points HEAD at it (the session's
//! start), and drops the trash copies' ref when it is rolled back; undo's record puts HEAD
//! back on the branch the line started from (the session's end). Left out, each a single
//! atomic write whose leftover nothing reads: the trash folder's copies (written once, by
//! temp and rename, before the plan's steps write; undo reads only the signed object-store
//! tree, so a copy left by a rolled-back plan is an extra copy of the user's file); undo's
//! kept-for-redo and rewrite records (`kept.rs`: blobs, then a ref, then the id file by temp
//! and rename, all while the undo's intent record stands and before its full record; redo
//! reads them only for a plan whose undone ref the journaled undo set); and a session that
//! ends changes nothing in git (its branch and metadata come with its first plan).
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
pub(crate) use record::{FileState, OpKind, Record};
pub(crate) use recover::interrupted_in;
pub use recover::{interrupted, recover};
