//! The Model Context Protocol client (SPEC section 12): servers from the user's config.toml
//! and, once trusted, a project's `.mcp.json`; their tools offered to the model in the system
//! prompt and called by TOOL steps. The agent decides approval; this module only connects,
//! lists and calls.
//!
//! Modules, one job each: `trust` (which projects' files the user trusted), `client` (one
//! connection through the official SDK), `hub` (every server of a session), `render` (the tool
//! list for the prompt). The two configuration shapes and `pai mcp add` / `remove` are
//! configuration: `config::mcp_servers` and `config::mcp_edit`.

pub mod client;
pub mod hub;
pub mod render;
pub mod trust;

pub use crate::config::mcp_servers::{Origin, ServerSpec, Transport, UserServer};
pub use client::{CallError, ToolResult};
pub use hub::{Hub, ProjectServers, Status, TrustRequest};
pub use render::ToolInfo;
