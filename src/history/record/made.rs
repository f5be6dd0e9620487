//! What a plan made that its commit's tree cannot say, so undo removes exactly what the plan
//! made: the ignored files it created (git's tree never holds them, so undo would leave them
//! behind) and the user's own empty folders it wrote into (undo removes the folders a plan
//! created, as git does, and only those). Recorded in the plan commit as one `Pai-Made`
//! trailer (compact JSON), present only when there is something to say; read back by undo.

use std::collections::{BTreeMap, BTreeSet};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::history::error::{Context, HistoryError};
use crate::history::ops::scope::{self, MODE_EXEC};
use crate::history::ops::work_tree::{WorkEntry, WorkTree};

/// The trailer's key.
const TRAILER: &str = "Pai-Made";

/// What one plan made beyond its tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Made {
    /// Folders that stood empty before the plan wrote into them: the user's, kept by undo.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub kept: BTreeSet<String>,
    /// Ignored files the plan created, with the blob id of what it left there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ignored: BTreeMap<String, String>,
}

impl Made {
    /// Before a plan writes `paths`: each one that does not exist yet, whose nearest existing
    /// folder is empty, names that folder as one undo must keep. Folders this plan made
    /// earlier (a repair phase writing beside its first phase's files) are not empty by then.
    pub(crate) fn note_before(&mut self, wt: &dyn WorkTree, paths: &[String]) {
        for path in paths {
            if !matches!(wt.read(path), Ok(WorkEntry::Absent)) {
                continue;
            }
            let mut dir = path.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                match wt.read(parent) {
                    Ok(WorkEntry::Absent) => dir = parent,
                    Ok(WorkEntry::Dir(names)) if names.is_empty() => {
                        self.kept.insert(parent.to_string());
                        break;
                    }
                    _ => break,
                }
            }
        }
    }

    /// At the plan commit: the ignored files the plan touched (`ignored`) that stand in the
    /// work tree although the plan saved no trash copy of them (`trash`: what stood there
    /// before), with what the plan left there. Their blobs are stored, so that the ids name
    /// what undo compares against.
    pub(crate) fn note_ignored<'p>(
        &mut self,
        repo: &Repository,
        wt: &dyn WorkTree,
        ignored: impl Iterator<Item = &'p str>,
        trash: &BTreeMap<String, (Oid, u32)>,
    ) -> Result<(), HistoryError> {
        for path in ignored {
            if trash.contains_key(path) {
                continue;
            }
            let Ok(Some(file)) = scope::work_file(wt, path)? else {
                continue;
            };
            let id = repo
                .blob(&file.bytes)
                .ctx(|| format!("cannot store {path}"))?;
            self.ignored.insert(path.to_string(), id.to_string());
        }
        Ok(())
    }

    /// The trailer line (newline included) to end the plan commit's message with; empty
    /// when there is nothing to record.
    pub(crate) fn trailer(&self) -> String {
        if self.kept.is_empty() && self.ignored.is_empty() {
            return String::new();
        }
        match serde_json::to_string(self) {
            Ok(json) => format!("{TRAILER}: {json}\n"),
            Err(_) => String::new(),
        }
    }

    /// What a plan commit's message recorded (nothing for a commit without the trailer).
    pub(crate) fn of_message(message: &str) -> Made {
        let Ok(trailers) = git2::message_trailers_strs(message) else {
            return Made::default();
        };
        trailers
            .iter()
            .find(|(key, _)| *key == TRAILER)
            .and_then(|(_, value)| serde_json::from_str(value.trim()).ok())
            .unwrap_or_default()
    }

    /// Undo's check: the ignored files the plan made that are no longer what it left
    /// (`path (what changed)`), for the refusal that names what undo would overwrite. A file
    /// already gone is nothing to remove.
    pub(crate) fn drift(&self, wt: &dyn WorkTree) -> Result<Vec<String>, HistoryError> {
        let mut changed = Vec::new();
        for (path, id) in &self.ignored {
            match scope::work_file(wt, path)? {
                Ok(None) => {}
                Ok(Some(file)) if file.id.to_string() == *id => {}
                Ok(Some(_)) => changed.push(format!("{path} (changed since the plan)")),
                Err(()) => changed.push(format!("{path} (no longer a regular file)")),
            }
        }
        Ok(changed)
    }

    /// Undo, before it writes: the ignored files the plan made that still hold what it left,
    /// put in the object store for redo to write back (see `kept::save_rewrite`): path,
    /// blob, permission bits.
    pub(crate) fn kept_for_redo(
        &self,
        repo: &git2::Repository,
        wt: &dyn WorkTree,
    ) -> Result<BTreeMap<String, (git2::Oid, u32)>, HistoryError> {
        let mut keep = BTreeMap::new();
        for path in self.still_left(wt)? {
            let Ok(Some(file)) = scope::work_file(wt, &path)? else {
                continue;
            };
            let default = if file.mode == MODE_EXEC { 0o755 } else { 0o644 };
            let perm = wt.permissions(&path).unwrap_or(default);
            let blob = repo.blob(&file.bytes).map_err(|source| HistoryError::Git {
                context: format!("cannot keep {path} for redo"),
                source,
            })?;
            keep.insert(path, (blob, perm));
        }
        Ok(keep)
    }

    /// The ignored files the plan made that still hold what it left (a changed one is the
    /// user's now: `--force` was given).
    pub(crate) fn still_left(&self, wt: &dyn WorkTree) -> Result<Vec<String>, HistoryError> {
        let mut out = Vec::new();
        for (path, id) in &self.ignored {
            if wt.is_denied(path) {
                continue;
            }
            let Ok(Some(file)) = scope::work_file(wt, path)? else {
                continue;
            };
            if file.id.to_string() == *id {
                out.push(path.clone());
            }
        }
        Ok(out)
    }

    /// Redo: whether `bytes` are what the plan left at the ignored `path` it created.
    pub(crate) fn left_at(&self, path: &str, bytes: &[u8]) -> bool {
        self.ignored.get(path).is_some_and(|id| {
            git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
                .is_ok_and(|oid| oid.to_string() == *id)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::history::record::made::*;

    #[test]
    fn the_trailer_reads_back_and_is_absent_when_nothing_was_made() {
        assert_eq!(Made::default().trailer(), "");
        let mut made = Made::default();
        made.kept.insert("mine".into());
        made.ignored.insert(
            "build/out \"x\".txt".into(),
            "0123456789012345678901234567890123456789".to_string(),
        );
        let msg = format!("pai: x\n\nPai-Session: s\nPai-Plan: 1\n{}", made.trailer());
        assert_eq!(Made::of_message(&msg), made);
        assert_eq!(Made::of_message("pai: x\n\nPai-Plan: 1\n"), Made::default());
    }
}
