//! Shared helpers for the integration tests: the mock LLM server.

pub mod mock_llm;
