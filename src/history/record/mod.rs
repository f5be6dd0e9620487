//! What history writes down besides the moves themselves: commit messages and their `Pai-*`
//! trailers (`message`), a plan's trash copies and their record in the object store
//! (`trash`), what a plan made that its tree will not say (`made`), and what undo replaced,
//! kept for redo (`kept`), and the markers of notes given once (`note`).

pub(super) mod forged;
pub(super) mod holders;
pub(super) mod kept;
pub(super) mod left;
pub(super) mod line;
pub(super) mod made;
pub(super) mod message;
pub(super) mod note;
pub(super) mod revert;
pub(super) mod trash;
pub(super) mod unverified;
pub(super) mod verified;
