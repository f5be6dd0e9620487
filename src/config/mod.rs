//! Credentials and settings.
//!
//! Settings are resolved once, at start, into one typed [`Settings`] value with the precedence
//! of SPEC section 1: flags > environment > config file > defaults. The environment is read in
//! exactly one place ([`Env::from_process`]); everything else receives the snapshot, so tests
//! can drive resolution with a fabricated environment.

mod credentials;
mod env;
mod file;
pub mod mcp_edit;
pub mod mcp_servers;
mod model_call;
mod paths;
pub mod rules;
mod settings;

pub use credentials::{
    ApiKey, CredentialStore, Credentials, KeySource, gemini_key_shape_problem, mask_key,
};
pub use env::Env;
pub use file::FileSettings;
pub use model_call::{
    DEFAULT_LOCAL_REQUEST_TIMEOUT, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_REQUEST_TIMEOUT, ModelCall,
};
pub use paths::ConfigDir;
pub use settings::{DEFAULT_CONTEXT_TOKENS, Flags, Settings, Source};
