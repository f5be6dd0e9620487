//! Shared helpers for the integration tests: the mock LLM server and temporary projects.
#![allow(dead_code)]

pub mod history;
pub mod mock_llm;
pub mod project;
pub mod pty;
pub mod session;
