//! One module per command (or command family), as `pai <command>` names them. Each turns the
//! parsed arguments into calls on the layers below and prints the result; what they share
//! lives in `super::assemble`.

pub(crate) mod config;
pub(crate) mod discard;
pub(crate) mod gc;
pub(crate) mod log;
pub(crate) mod map;
pub(crate) mod mcp;
pub(crate) mod redo;
pub(crate) mod run;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod undo;
