//! Notes given once in a project (the missing git identity): each remembered by an empty
//! marker in pai's state directory, which the executor writes.

use std::path::Path;

use crate::history::ops::{OpKind, Record, StateTo, at_once_in_state_dir};

/// Whether the note `name` is yet to be given in this project: `true` the first time (the
/// executor then writes the marker `.pai_history/<name>`), `false` after. A marker that
/// cannot be written lets the note be given again, which is harmless.
pub fn note_once(root: &Path, name: &str) -> bool {
    let mut record = Record::new(OpKind::Note);
    record.state_file(root, vec![name.to_string()], StateTo::Mark(0o600));
    at_once_in_state_dir(&record).is_ok_and(|done| done.kept.is_empty())
}
