//! The agent turn: context building, the structured plan call, approval, phases, repair.
//! It never prints: it emits events to a frontend and asks it for approvals.

mod approve;
mod bridge;
pub mod context;
pub mod events;
pub mod journal;
pub mod listing;
pub mod live;
pub mod plan;
pub mod prompt;
pub mod protocol;
pub mod repo_map;
mod side_effects;
pub mod task;
pub mod turn;
