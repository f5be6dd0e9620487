//! The Model Context Protocol client (SPEC section 12): servers from the user's config.toml
//! and, once trusted, a project's `.mcp.json`; their tools offered to the model in the system
//! prompt and called by TOOL steps. The agent decides approval; this module only connects,
//! lists and calls.
//!
//! Modules, one job each: `config` (the two configuration shapes), `trust` (which projects'
//! files the user trusted), `client` (one connection through the official SDK), `hub` (every
//! server of a session), `render` (the tool list for the prompt), `edit` (`pai mcp add` /
//! `remove` in config.toml).

pub mod client;
pub mod config;
pub mod edit;
pub mod hub;
pub mod render;
pub mod trust;

pub use client::{CallError, ToolResult};
pub use config::{Origin, ServerSpec, Transport, UserServer};
pub use hub::{Hub, ProjectServers, Status, TrustRequest};
pub use render::ToolInfo;
