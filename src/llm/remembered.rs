//! What each OpenAI-compatible server and model was found to accept, remembered across runs in
//! a small file of the user's (its path comes from the settings: pai's state directory), so a
//! server that refuses the strongest structured-output mode costs one refused call once, not
//! on every run.
//!
//! A record is keyed by base URL and model. It is trusted for [`FRESH_FOR`]; after that, or
//! when a remembered setting is refused, the server is probed again from the strongest mode.
//! A file that cannot be read or written only means negotiating again: it is never an error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::compat::Compat;

/// How long a record is trusted without a probe from the strongest mode.
pub(crate) const FRESH_FOR: Duration = Duration::from_secs(14 * 24 * 3600);

/// Most servers kept; the oldest records go first.
const MAX_RECORDS: usize = 64;

/// The whole file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    servers: BTreeMap<String, Record>,
}

/// One server and model.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    compat: Compat,
    /// Seconds since the Unix epoch when a call last succeeded with `compat` found anew.
    checked: u64,
}

/// The record of one server and model.
pub(crate) struct Memory {
    file: Option<PathBuf>,
    key: String,
}

impl Memory {
    /// The record for `base` and `model` in `file` (`None`: remember nothing).
    pub(crate) fn new(file: Option<PathBuf>, base: &str, model: &str) -> Self {
        Self {
            file,
            key: format!("{base} {model}"),
        }
    }

    /// The settings found for this server and model, while fresh.
    pub(crate) fn recall(&self) -> Option<Compat> {
        let record = self.read().servers.remove(&self.key)?;
        let age = now().saturating_sub(record.checked);
        (age < FRESH_FOR.as_secs()).then_some(record.compat)
    }

    /// Remember `compat` as what works now.
    pub(crate) fn store(&self, compat: Compat) {
        let Some(path) = &self.file else { return };
        let mut file = self.read();
        file.servers.insert(
            self.key.clone(),
            Record {
                compat,
                checked: now(),
            },
        );
        while file.servers.len() > MAX_RECORDS {
            let oldest = file
                .servers
                .iter()
                .min_by_key(|(_, r)| r.checked)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => file.servers.remove(&k),
                None => break,
            };
        }
        if let Ok(bytes) = serde_json::to_vec_pretty(&file) {
            // Not remembering only costs a refused call next time.
            let _ = crate::private_file::write_atomic(path, &bytes);
        }
    }

    /// Forget this server's record (it stopped working).
    pub(crate) fn forget(&self) {
        let Some(path) = &self.file else { return };
        let mut file = self.read();
        if file.servers.remove(&self.key).is_some()
            && let Ok(bytes) = serde_json::to_vec_pretty(&file)
        {
            let _ = crate::private_file::write_atomic(path, &bytes);
        }
    }

    fn read(&self) -> File {
        self.file
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::compat::FormatMode;

    #[test]
    fn a_record_is_kept_per_server_and_model_and_forgotten_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        let a = Memory::new(Some(path.clone()), "http://127.0.0.1:8000/v1", "gemma");
        let b = Memory::new(Some(path.clone()), "http://127.0.0.1:8000/v1", "qwen");
        assert!(a.recall().is_none());
        let mut c = Compat::initial("http://127.0.0.1:8000/v1", FormatMode::JsonSchema);
        c.format = FormatMode::JsonObjectSchema;
        a.store(c);
        assert_eq!(a.recall().unwrap().format, FormatMode::JsonObjectSchema);
        assert!(b.recall().is_none());
        a.forget();
        assert!(a.recall().is_none());
    }

    #[test]
    fn stale_or_unreadable_records_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        std::fs::write(&path, "not json").unwrap();
        let m = Memory::new(Some(path.clone()), "http://h/v1", "m");
        assert!(m.recall().is_none());
        let c = Compat::initial("http://h/v1", FormatMode::JsonObject);
        let old = now() - FRESH_FOR.as_secs() - 1;
        let file = serde_json::json!({"servers": {"http://h/v1 m": {"compat": c, "checked": old}}});
        std::fs::write(&path, file.to_string()).unwrap();
        assert!(m.recall().is_none());
        Memory::new(None, "http://h/v1", "m").store(c);
    }
}
