//! The record of which projects' `.mcp.json` files the user trusted: kept in the user's
//! configuration directory (never in the project, which could forge it), keyed by the
//! project's root path and pinned to the file's SHA-256, so a changed file asks again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The trust file's name inside the configuration directory.
pub const TRUST_FILE: &str = "mcp_trust.json";

/// Trusted project files: root path -> hash of the `.mcp.json` the user approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustStore {
    #[serde(default)]
    projects: BTreeMap<String, String>,
}

/// The hash a trust decision is pinned to.
pub fn file_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The pin of a trust decision for the project at `root` whose `.mcp.json` hashes to
/// `file_hash`: that hash alone when its servers name no file in the project, else a hash over
/// it and the bytes of every file they name (`python3 tools/mcp_server.py`), so a changed
/// script asks again like a changed `.mcp.json`. A directory counts by its name only.
pub fn pin(root: &Path, file_hash: &str) -> String {
    let files = crate::layout::mcp_files(root);
    if files.is_empty() {
        return file_hash.to_string();
    }
    let mut hasher = Sha256::new();
    hasher.update(file_hash.as_bytes());
    for (rel, _) in files {
        hasher.update(b"\0");
        hasher.update(rel.as_bytes());
        hasher.update(b"\0");
        // Read without following a link (a link named by a server is pinned as unreadable).
        let bytes = std::fs::symlink_metadata(root.join(&rel))
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|_| std::fs::read(root.join(&rel)).ok())
            .unwrap_or_default();
        hasher.update(Sha256::digest(&bytes));
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TrustStore {
    /// Read the store; a missing file trusts nothing. A corrupt file is an error (it is never
    /// silently replaced: the user may want to see what is in it).
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                format!(
                    "{} is not valid ({e}); remove it to forget every trusted project",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Whether the project at `root` trusted exactly this file content.
    pub fn is_trusted(&self, root: &Path, hash: &str) -> bool {
        self.projects
            .get(&root.display().to_string())
            .is_some_and(|h| h == hash)
    }

    /// Whether the project at `root` trusted some earlier version of its file.
    pub fn trusted_before(&self, root: &Path) -> bool {
        self.projects.contains_key(&root.display().to_string())
    }

    /// Trust this content of the project's file (replacing an older decision).
    pub fn trust(&mut self, root: &Path, hash: &str) {
        self.projects
            .insert(root.display().to_string(), hash.to_string());
    }

    /// Write the store atomically, private to the user (0600, directory 0700).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if !dir.exists() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(&dir).map_err(fail)?;
        }
        let text =
            serde_json::to_string_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(fail)?;
        tmp.write_all(text.as_bytes()).map_err(fail)?;
        tmp.as_file().sync_all().map_err(fail)?;
        tmp.persist(path).map_err(|e| fail(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_covers_the_files_a_server_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let hash = file_hash(b"{}");
        assert_eq!(
            pin(root, &hash),
            hash,
            "no named file: the file's hash as before"
        );
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/s.py"), "print(1)\n").unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"s": {"command": "python3", "args": ["tools/s.py"]}}}"#,
        )
        .unwrap();
        let first = pin(root, &hash);
        assert_ne!(first, hash);
        std::fs::write(root.join("tools/s.py"), "import os\n").unwrap();
        assert_ne!(pin(root, &hash), first, "a changed script keeps its pin");
    }

    #[test]
    fn a_changed_file_is_no_longer_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfg").join(TRUST_FILE);
        let root = Path::new("/home/me/app");
        let first = file_hash(br#"{"mcpServers": {}}"#);
        let mut store = TrustStore::load(&path).unwrap();
        assert!(!store.is_trusted(root, &first));
        store.trust(root, &first);
        store.save(&path).unwrap();

        let store = TrustStore::load(&path).unwrap();
        assert!(store.is_trusted(root, &first));
        let changed = file_hash(br#"{"mcpServers": {"x": {"command": "evil"}}}"#);
        assert!(!store.is_trusted(root, &changed));
        assert!(store.trusted_before(root));
        assert!(!store.is_trusted(Path::new("/home/me/other"), &first));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    #[test]
    fn a_corrupt_store_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRUST_FILE);
        std::fs::write(&path, "{nope").unwrap();
        assert!(TrustStore::load(&path).unwrap_err().contains("not valid"));
    }
}
