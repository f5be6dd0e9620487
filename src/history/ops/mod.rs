//! The operation journal and its one executor: every history operation that changes more
//! than one thing — a plan commit, an undo, a redo, a discard — is a transaction that only
//! *builds* a record (`record.rs`): every ref it will move (old → new), HEAD's move, every
//! index entry it will change, and every work-tree file's move, each side the file's exact
//! bytes (a blob, worked out and stored while the record is built: `states.rs`), its mode, its
//! permission bits where they matter, and where the bytes come from (the stored blob, git's
//! checkout conversion, a copy pai kept). Before it takes the index lock it records its intent;
//! then [`Op::commit`] (`op.rs`) writes the full record, carries it out forward (`apply.rs`) and
//! deletes it; a failure in-process (a full disk, an I/O error) carries it out backward. A
//! record found later is an operation whose process died (a kill, a power cut): `recover.rs`
//! removes the lock files it left (`locks.rs`) and finishes it with the same forward call —
//! the record is the point of no return — and says so in one line. A plan's steps are
//! journaled from before the first one writes until the commit's record takes over
//! (`plan.rs`): a plan killed mid-way is rolled back.
//!
//! What each record covers besides: a plan commit's record moves the session's metadata ref
//! with a session's first plan and creates its branch and points HEAD at it (the session's
//! start), and drops the trash copies' ref when it is rolled back; undo's record puts HEAD
//! back on the branch the line started from (the session's end). A plan killed or abandoned
//! before its commit is rolled back by a record built from its journal (`plan.rs`), carried
//! out by the same executor. Moves each whole on its own go through the executor too, at once
//! and unjournaled ([`at_once`]): the pending snapshot ref `prepare` sets, a plan's trash
//! copies (written once, never over another copy, before the plan's steps write; undo reads
//! only the signed object-store tree, so a copy left by a rolled-back plan is an extra copy
//! of the user's file), the markers of notes given once and the session logs `pai gc` prunes
//! (`state_files.rs`, in `.pai_history`), HEAD attached to a session's branch by
//! `--continue`, `pai gc`'s pruning of refs, and a worktree session's branch, worktree (its
//! checkout on threads, its removal without following a link) and the files copied into it
//! from the user's checkout (`worktree/`; a half-made worktree is marked by its session's
//! `making` file until whole, and the next command tidies it). Project files are read and
//! written only through `WorkTree` (`work_tree.rs`), which the workspace gate implements.
//!
//! Left out, pai's own bookkeeping outside git and every project, each a single atomic write
//! or unlink whose leftover nothing misreads: undo's kept-for-redo and rewrite records
//! (`record/kept.rs`: blobs, then the id file by temp and rename, while the undo's intent
//! record stands and before its full record, whose refs keep the blobs reachable; redo reads
//! them only for a plan whose undone ref the journaled undo set) and the kept records `pai gc`
//! removes; worktree sessions' records (`worktrees/linked.rs`); these records themselves
//! (`journal_file.rs`). `tests/it/architecture.rs` (`history_moves_only_through_the_executor`)
//! lists each such write outside this folder, with why. A session that ends changes nothing
//! in git (its branch and metadata come with its first plan).
//!
//! Records live in the user's state directory (`user_state::dir(..)/ops/`), never in the
//! project, so a repository cannot plant one. Not the session log (`agent/journal.rs`).

mod apply;
pub(super) mod convert;
mod direction;
mod journal_file;
mod locks;
mod op;
mod plan;
mod record;
mod recover;
pub(super) mod scope;
mod state_files;
mod states;
pub(super) mod work_tree;
mod worktree;

pub(crate) use locks::remove_ref_locks;
pub(crate) use op::{Op, at_once};
pub use plan::StepWrites;
pub(crate) use plan::{Before, PlanAt, PlanJournal};
pub(crate) use record::{OpKind, Record, StateTo};
pub(crate) use recover::interrupted_in;
pub use recover::{interrupted, recover};
pub(crate) use state_files::at_once_in_state_dir;
pub(crate) use states::{copy_state, found, produced};
pub(crate) use worktree::{CopyKind, WorktreeMove};
