//! What pai believes of a commit's message: its `Pai-*` trailers, only when the commit's mark
//! verifies (`git::auth`); any other commit claims nothing, whatever its message says.

use git2::Commit;

use super::message;
use crate::history::git::auth;

/// The `Pai-*` trailers of `commit` when pai made it for this user; none (the default, no
/// kind) for any other commit, whatever its message says.
pub(crate) fn trailers(commit: &Commit<'_>) -> message::Trailers {
    if auth::verified(commit) {
        message::parse(commit.message().unwrap_or_default())
    } else {
        message::Trailers::default()
    }
}
