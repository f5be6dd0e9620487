//! History's footing in git: the repository pai works in and when it must not write to it
//! (`repo`, `refusal`), every ref name pai builds or reads back (`names`, `ref_index`), a session's
//! metadata ref (`meta`), the per-work-tree lock (`lock`), pai's own state directories
//! (`store` in the project, `user_state` outside it), project paths as git paths (`paths`),
//! and pai's mark on what it wrote (`auth`) with what it says of state it cannot verify
//! (`forged`, `unverified`).

pub(super) mod auth;
pub(super) mod lock;
pub(super) mod meta;
pub(super) mod names;
pub(super) mod paths;
pub(super) mod ref_index;
pub(super) mod refusal;
pub(super) mod repo;
pub(super) mod store;
pub(super) mod tree_edit;
pub(super) mod user_state;
