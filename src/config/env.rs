//! A snapshot of the process environment, taken once at start.

use std::collections::BTreeMap;

/// The environment variables pai cares about, captured once so that nothing else in the
/// program reads the environment behind the settings' back.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// Capture the current process environment (variables that are not valid UTF-8 are skipped:
    /// none of the ones pai reads can usefully hold such a value).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// Build an environment from explicit pairs (tests, embedding).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`, if set and not empty (an empty variable counts as unset, as shells
    /// make it easy to export one by accident).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether `name` is set at all, even to the empty string (`NO_COLOR` semantics).
    pub fn is_set(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }
}
