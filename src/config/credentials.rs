//! The credentials file (SPEC section 2): `credentials.json`, mode 0600, written atomically,
//! version 2 (`{"version": 2, "keys": {"gemini": ..., "openai": ...}}`; the thesis' shape
//! `{"version": 2, "api_key": ...}` still loads as the Gemini key), version 1 migrated
//! automatically, a corrupt file reported and never overwritten without a `.bak` copy.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{ConfigDir, Env};
use crate::error::Error;
use crate::llm::ProviderKind;

/// An API key. Its `Debug` and `Display` never show the key, so it cannot leak into logs or
/// error messages by accident; [`ApiKey::expose`] is the one explicit way to get the text.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key, trimming surrounding whitespace (keys pasted from a browser often carry a
    /// newline). Returns `None` for an empty key.
    pub fn new(raw: &str) -> Option<Self> {
        let trimmed = raw.trim();
        (!trimmed.is_empty()).then(|| Self(trimmed.to_string()))
    }

    /// The key text, for the one place that must send it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The masked form shown to users, e.g. `AIzaSy...abcd`.
    pub fn masked(&self) -> String {
        mask_key(&self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({})", self.masked())
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

/// Mask a key for display: the first 6 and last 4 characters of a long key; short keys are
/// masked entirely because showing ten characters of them would show most of the secret.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 16 {
        return "****".to_string();
    }
    let head: String = chars[..6].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

/// Why a Gemini key does not look like one (`AIza` prefix, at least 20 characters), if it
/// does not. A warning on `set`, an error on `validate`.
pub fn gemini_key_shape_problem(key: &str) -> Option<String> {
    if !key.starts_with("AIza") {
        Some("Gemini keys start with `AIza`".to_string())
    } else if key.chars().count() < 20 {
        Some("Gemini keys are at least 20 characters long".to_string())
    } else {
        None
    }
}

/// Where the key in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An environment variable (named).
    Env(&'static str),
    /// The credentials file.
    File,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Env(var) => write!(f, "environment ({var})"),
            KeySource::File => f.write_str("credentials file"),
        }
    }
}

/// The keys stored in the credentials file, one per provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    keys: BTreeMap<&'static str, ApiKey>,
}

impl Credentials {
    /// The stored key for `provider`.
    pub fn get(&self, provider: ProviderKind) -> Option<&ApiKey> {
        self.keys.get(provider.name())
    }

    /// Providers with a stored key, in display order.
    pub fn providers(&self) -> Vec<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .filter(|p| self.keys.contains_key(p.name()))
            .collect()
    }

    /// Store `key` for `provider`, replacing any previous one.
    pub fn set(&mut self, provider: ProviderKind, key: ApiKey) {
        self.keys.insert(provider.name(), key);
    }

    /// Forget the key of `provider`; returns whether there was one.
    pub fn remove(&mut self, provider: ProviderKind) -> bool {
        self.keys.remove(provider.name()).is_some()
    }

    fn to_json(&self) -> Value {
        let mut keys = Map::new();
        for provider in self.providers() {
            if let Some(key) = self.get(provider) {
                keys.insert(
                    provider.name().to_string(),
                    Value::String(key.expose().to_string()),
                );
            }
        }
        let mut root = Map::new();
        root.insert("version".into(), Value::from(2));
        root.insert("keys".into(), Value::Object(keys));
        Value::Object(root)
    }
}

/// The credentials file and the operations on it.
#[derive(Debug, Clone)]
pub struct CredentialStore {
    dir: ConfigDir,
}

/// What loading found besides the keys: things the user should be told once.
#[derive(Debug, Default)]
pub struct LoadNotes {
    /// One-time notices (migration done, permissions tightened).
    pub notices: Vec<String>,
}

impl CredentialStore {
    /// The store in the located configuration directory.
    pub fn locate(env: &Env) -> Result<Self, Error> {
        Ok(Self {
            dir: ConfigDir::locate(env)?,
        })
    }

    /// The store inside `dir`.
    pub fn in_dir(dir: ConfigDir) -> Self {
        Self { dir }
    }

    /// The path of `credentials.json`.
    pub fn path(&self) -> PathBuf {
        self.dir.credentials_file()
    }

    /// Read the stored keys. A missing file is no keys. A version-1 file is migrated to version 2
    /// on disk (the original kept as `credentials.json.v1.bak`) with a notice; permissions wider
    /// than 0600 are tightened with a notice; a corrupt or unreadable file is an error that
    /// leaves the file as it is.
    pub fn load(&self) -> Result<(Credentials, LoadNotes), Error> {
        let mut notes = LoadNotes {
            notices: self.dir.check_existing()?,
        };
        let path = self.path();
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Credentials::default(), notes));
            }
            Err(e) => {
                return Err(Error::config(format!(
                    "cannot access {}: {e}",
                    path.display()
                )));
            }
        };
        if !meta.is_file() {
            return Err(
                Error::config(format!("{} is not a regular file", path.display()))
                    .with_hint("move it away; pai stores keys only in a regular file it owns"),
            );
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(|e| {
                Error::config(format!(
                    "cannot restrict permissions of {}: {e}",
                    path.display()
                ))
            })?;
            notes.notices.push(format!(
                "{} was readable by others (mode {mode:04o}); tightened it to 0600",
                path.display()
            ));
        }
        let text = fs::read_to_string(&path).map_err(|e| {
            Error::config(format!("cannot read {}: {e}", path.display()))
                .with_hint("check the file's owner and permissions (it should be yours, mode 0600)")
        })?;
        let parsed = parse(&text).map_err(|reason| corrupt(&path, &reason))?;
        match parsed {
            Parsed::Current(creds) => Ok((creds, notes)),
            Parsed::MigratedFromV1 { creds, chosen } => {
                let backup = backup_path(&path, "v1.bak");
                fs::copy(&path, &backup).map_err(|e| {
                    Error::config(format!(
                        "cannot back up {} before migrating it: {e}",
                        path.display()
                    ))
                })?;
                fs::set_permissions(&backup, fs::Permissions::from_mode(0o600)).map_err(|e| {
                    Error::config(format!(
                        "cannot set permissions of {}: {e}",
                        backup.display()
                    ))
                })?;
                self.write(&creds)?;
                notes.notices.push(format!(
                    "migrated {} from version 1 to version 2: the key `{chosen}` is now the Gemini key (the old file is kept as {})",
                    path.display(),
                    backup.display()
                ));
                Ok((creds, notes))
            }
        }
    }

    /// Load for modification: like [`CredentialStore::load`], except that a corrupt file is
    /// copied to `credentials.json.bak` and treated as empty, with a notice, so that `config set`
    /// can repair the situation without losing the old bytes.
    pub fn load_for_update(&self) -> Result<(Credentials, LoadNotes), Error> {
        match self.load() {
            Ok(found) => Ok(found),
            Err(err) if err.message().contains("is corrupt") => {
                let path = self.path();
                let backup = backup_path(&path, "bak");
                fs::copy(&path, &backup).map_err(|e| {
                    Error::config(format!(
                        "cannot back up the corrupt {}: {e}",
                        path.display()
                    ))
                })?;
                fs::set_permissions(&backup, fs::Permissions::from_mode(0o600)).map_err(|e| {
                    Error::config(format!(
                        "cannot set permissions of {}: {e}",
                        backup.display()
                    ))
                })?;
                let notes = LoadNotes {
                    notices: vec![format!(
                        "{} was corrupt; its old contents are kept in {}",
                        path.display(),
                        backup.display()
                    )],
                };
                Ok((Credentials::default(), notes))
            }
            Err(err) => Err(err),
        }
    }

    /// Write `creds` atomically: a temporary file in the same directory with mode 0600, fsync,
    /// rename over the target, fsync the directory.
    pub fn write(&self, creds: &Credentials) -> Result<(), Error> {
        self.dir.ensure()?;
        let path = self.path();
        let fail = |what: &str, e: &dyn fmt::Display| {
            Error::config(format!("cannot {what} {}: {e}", path.display()))
        };
        let mut text =
            serde_json::to_string_pretty(&creds.to_json()).map_err(|e| fail("encode", &e))?;
        text.push('\n');
        // tempfile creates the file with mode 0600 already, so the key is never readable by
        // others, not even for the instant before the rename.
        let mut tmp = tempfile::Builder::new()
            .prefix(".credentials.")
            .suffix(".tmp")
            .tempfile_in(self.dir.path())
            .map_err(|e| fail("write", &e))?;
        tmp.write_all(text.as_bytes())
            .map_err(|e| fail("write", &e))?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(|e| fail("write", &e))?;
        tmp.as_file().sync_all().map_err(|e| fail("write", &e))?;
        tmp.persist(&path).map_err(|e| fail("replace", &e.error))?;
        if let Ok(dir) = fs::File::open(self.dir.path()) {
            // Without the directory fsync the rename may not survive a power cut; a failure
            // here leaves a complete file either way, so it is not worth failing the command.
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

enum Parsed {
    Current(Credentials),
    MigratedFromV1 { creds: Credentials, chosen: String },
}

fn corrupt(path: &Path, reason: &str) -> Error {
    Error::config(format!("the credentials file {} is corrupt: {reason}", path.display())).with_hint(format!(
        "the file was left untouched; fix it by hand, or run `pai config set` to store a new key (the old file will be kept as {})",
        backup_path(path, "bak").display()
    ))
}

/// `credentials.json.<suffix>`, or `.<suffix>.2`, `.3`, … when taken: an older backup is never
/// overwritten.
fn backup_path(path: &Path, suffix: &str) -> PathBuf {
    let base = format!("{}.{suffix}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 2;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}.{n}"));
        n += 1;
    }
    candidate
}

fn key_from(value: &Value, field: &str) -> Result<Option<ApiKey>, String> {
    match value {
        Value::String(s) => Ok(ApiKey::new(s)),
        Value::Null => Ok(None),
        other => Err(format!(
            "`{field}` must be a string, found {}",
            type_name(other)
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse(text: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON ({e})"))?;
    let Value::Object(root) = value else {
        return Err(format!(
            "expected a JSON object, found {}",
            type_name(&value)
        ));
    };
    let version = match root.get("version") {
        None => return Err("the `version` field is missing".to_string()),
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| format!("`version` must be 1 or 2, found {n}"))?,
        Some(other) => {
            return Err(format!(
                "`version` must be a number, found {}",
                type_name(other)
            ));
        }
    };
    match version {
        1 => parse_v1(&root),
        2 => parse_v2(&root).map(Parsed::Current),
        other => Err(format!(
            "unsupported version {other} (this pai reads versions 1 and 2)"
        )),
    }
}

fn parse_v2(root: &Map<String, Value>) -> Result<Credentials, String> {
    let mut creds = Credentials::default();
    if let Some(value) = root.get("api_key")
        && let Some(key) = key_from(value, "api_key")?
    {
        creds.set(ProviderKind::Gemini, key);
    }
    match root.get("keys") {
        None | Some(Value::Null) => {}
        Some(Value::Object(keys)) => {
            for (name, value) in keys {
                let provider: ProviderKind = name.parse().map_err(|e| format!("in `keys`: {e}"))?;
                if let Some(key) = key_from(value, &format!("keys.{name}"))? {
                    creds.set(provider, key);
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "`keys` must be an object, found {}",
                type_name(other)
            ));
        }
    }
    Ok(creds)
}

fn parse_v1(root: &Map<String, Value>) -> Result<Parsed, String> {
    let keys = match root.get("keys") {
        Some(Value::Object(keys)) => keys,
        Some(other) => {
            return Err(format!(
                "`keys` must be an object, found {}",
                type_name(other)
            ));
        }
        None => return Err("a version-1 file needs a `keys` object".to_string()),
    };
    let default = match root.get("default") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.as_str()),
        Some(other) => {
            return Err(format!(
                "`default` must be a string, found {}",
                type_name(other)
            ));
        }
    };
    for (id, value) in keys {
        if !value.is_string() {
            return Err(format!(
                "`keys.{id}` must be a string, found {}",
                type_name(value)
            ));
        }
    }
    // The default key when it names one, else the first in the file's own order.
    let chosen = default
        .and_then(|id| keys.get_key_value(id))
        .or_else(|| keys.iter().next())
        .ok_or_else(|| "a version-1 file with no keys cannot be migrated".to_string())?;
    let key = key_from(chosen.1, &format!("keys.{}", chosen.0))?
        .ok_or_else(|| format!("the key `{}` is empty", chosen.0))?;
    let mut creds = Credentials::default();
    creds.set(ProviderKind::Gemini, key);
    Ok(Parsed::MigratedFromV1 {
        creds,
        chosen: chosen.0.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_long_keys_and_hides_short_ones() {
        assert_eq!(mask_key("AIzaSyA1234567890abcdefghijkl"), "AIzaSy...ijkl");
        assert_eq!(mask_key("short-key"), "****");
    }

    #[test]
    fn thesis_v2_shape_loads_as_gemini() {
        let Ok(Parsed::Current(creds)) =
            parse(r#"{"version": 2, "api_key": "AIzaSy0123456789abcdefgh"}"#)
        else {
            panic!("v2 thesis shape must parse");
        };
        assert_eq!(
            creds.get(ProviderKind::Gemini).map(ApiKey::expose),
            Some("AIzaSy0123456789abcdefgh")
        );
    }

    #[test]
    fn v1_prefers_default_then_first() {
        let text = r#"{"version": 1, "keys": {"b": "KEY-B", "a": "KEY-A"}, "default": "a"}"#;
        let Ok(Parsed::MigratedFromV1 { creds, chosen }) = parse(text) else {
            panic!("v1 must migrate")
        };
        assert_eq!(chosen, "a");
        assert_eq!(
            creds.get(ProviderKind::Gemini).map(ApiKey::expose),
            Some("KEY-A")
        );
        let text = r#"{"version": 1, "keys": {"zeta": "KEY-Z", "alpha": "KEY-A"}}"#;
        let Ok(Parsed::MigratedFromV1 { chosen, .. }) = parse(text) else {
            panic!("v1 must migrate")
        };
        assert_eq!(chosen, "zeta", "file order, not alphabetical order");
    }

    #[test]
    fn rejects_wrong_types_and_versions() {
        for bad in [
            "not json",
            "[]",
            r#"{"api_key": "x"}"#,
            r#"{"version": "2"}"#,
            r#"{"version": 9}"#,
            r#"{"version": 2, "api_key": 5}"#,
            r#"{"version": 2, "keys": []}"#,
            r#"{"version": 2, "keys": {"nope": "x"}}"#,
            r#"{"version": 1, "keys": {"a": 3}}"#,
        ] {
            assert!(parse(bad).is_err(), "should reject {bad}");
        }
    }
}
