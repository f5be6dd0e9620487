//! The git-history tests in one binary, driving `pai::history` in-process. They set libgit2's
//! process-wide config search path (`support::history::hermetic`), so they do not share a
//! process with the other integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod history_commit;
mod history_gc_kept;
mod history_index;
mod history_log;
mod history_run;
mod history_undo;
mod history_unverified;
