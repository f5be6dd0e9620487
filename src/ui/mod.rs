//! Rendering and input: the only module that talks to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod output;
