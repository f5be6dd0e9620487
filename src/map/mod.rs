//! The repository map: what the first model call sees of a project too large to send whole.
//! Source files are parsed for their definitions and references ([`symbols`]), so files can be
//! ranked for a request and shown by their key definitions.

pub mod symbols;
