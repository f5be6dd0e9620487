//! The integration tests in one binary (one link step instead of one per file): each module
//! runs the real `pai` binary, or the library in-process, against temporary projects and the
//! mock LLM server. The git-history tests that set libgit2's process-wide config search path
//! live in `tests/history/`, and the environment tests that change this process's variables in
//! `tests/exec_env.rs`, so neither can disturb these.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../edits_corpus/corpus.rs"]
mod corpus;
#[path = "../eval/core.rs"]
mod eval_core;
/// The map replay's oracle model, whose reading of pai's requests is tested here (the
/// benchmark that drives it runs without a test harness).
#[allow(dead_code)]
#[path = "../benches/map_oracle.rs"]
mod map_oracle;
#[path = "../support/mod.rs"]
mod support;

mod agent_inprocess;
mod agent_scenarios;
mod approvals;
mod architecture;
mod cli_config;
mod crash_suite;
mod edits_corpus;
mod eval_mock;
mod exec_allow;
mod exec_run;
mod exec_sandbox;
mod git_fidelity;
mod hard_stop;
mod kept_listing;
mod line_of_work;
mod live_run;
mod llm_providers;
mod map_symbols;
mod mcp;
mod output_streams;
mod plan_preview;
mod repo_map;
mod resume;
mod rough_edges;
mod rough_edges_two;
mod security_corpus;
mod security_state;
mod session_pty;
mod turn_outcome;
mod ui_pty;
mod ui_render;
mod workspace_adversarial;
mod workspace_crash;
mod workspace_ops;
mod workspace_proptest;
mod workspace_scan;
mod worktree_sessions;
