//! pai: a terminal coding agent.
//!
//! The crate is a library so that the agent, the workspace gate and the git history can be
//! driven by tests and benchmarks without a terminal; `src/main.rs` is a thin binary over it.
//! Data flows one way: `ui` -> `agent` -> (`llm`, `workspace`, `exec`, `history`).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod cli;
pub mod config;
pub mod error;
pub mod exec;
pub mod fence;
pub mod hard_stop;
pub mod heap;
pub mod history;
pub mod layout;
pub mod llm;
pub mod map;
pub mod mcp;
pub mod private_file;
pub mod procfs;
pub mod rawname;
pub mod shell;
pub mod ui;
pub mod workspace;

pub use error::{Error, Result};
