//! Which way the executor carries a record out, and what it found doing so.

/// Which way to carry out a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// To the `new`/`after` states: finish the operation.
    Forward,
    /// To the `old`/`before` states: roll it back.
    Back,
}

impl Direction {
    /// (the state to leave, the target) of a move.
    pub(super) fn pick<T>(self, old: T, new: T) -> (T, T) {
        match self {
            Direction::Forward => (old, new),
            Direction::Back => (new, old),
        }
    }
}

/// What applying a record found: the things left as they were because they were in neither
/// of the record's states, and how many things it changed.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Paths and ref names left untouched.
    pub kept: Vec<String>,
    /// Files, refs, HEAD and index entries changed.
    pub changed: usize,
}
