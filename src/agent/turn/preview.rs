//! What a plan would change, shown before it is approved: each WRITE's and MODIFY's diff
//! computed in memory by the workspace with the matcher the real run uses (a search that
//! would not match is shown as the failure it would be), step after step as the plan would
//! leave each file; and which files hold the user's uncommitted edits that history would
//! snapshot first.

use std::collections::BTreeMap;

use super::Agent;
use super::steps::modification;
use crate::agent::plan::{PlannedStep, Step, StepPreview};
use crate::workspace::EditPreview;

impl Agent {
    /// `steps` with their previews filled in.
    pub(super) fn preview_steps(&self, steps: &[PlannedStep]) -> Vec<PlannedStep> {
        // A file's text as the plan's earlier steps would leave it.
        let mut texts: BTreeMap<String, String> = BTreeMap::new();
        steps
            .iter()
            .map(|planned| {
                let preview = match &planned.step {
                    Step::Write { path, content } => {
                        Some(self.workspace.preview_write(path, content))
                            .map(|r| keep_text(&mut texts, path, r))
                    }
                    Step::Modify {
                        path,
                        edits,
                        content,
                    } => {
                        let m = modification(edits, content.as_deref());
                        let earlier = texts.get(path).map(String::as_str);
                        let r = self.workspace.preview_modify(path, &m, earlier);
                        Some(keep_text(&mut texts, path, r))
                    }
                    Step::Rm { path } => {
                        texts.remove(path);
                        None
                    }
                    Step::Mv { path, to } => {
                        if let Some(t) = texts.remove(path) {
                            texts.insert(to.clone(), t);
                        }
                        None
                    }
                    _ => None,
                };
                PlannedStep {
                    preview,
                    ..planned.clone()
                }
            })
            .collect()
    }

    /// Mark the steps whose file holds uncommitted edits of the user's, which history
    /// commits as a snapshot before the plan changes it (the first step per file).
    pub(super) fn mark_snapshots(&self, steps: &mut [PlannedStep]) {
        let Some(history) = self.history.as_ref() else {
            return;
        };
        let paths: Vec<String> = steps
            .iter()
            .flat_map(|s| s.step.written_paths())
            .filter_map(|p| self.workspace.check(p).ok())
            .map(|p| p.as_str().to_string())
            .collect();
        let mut edited = history.user_edits_in(&self.workspace, &paths);
        for s in steps.iter_mut() {
            let Some(path) = s.step.written_paths().first().map(|p| p.to_string()) else {
                continue;
            };
            let Some(checked) = self
                .workspace
                .check(&path)
                .ok()
                .map(|p| p.as_str().to_string())
            else {
                continue;
            };
            if let (Some(i), Some(preview)) = (
                edited.iter().position(|e| *e == checked),
                s.preview.as_mut(),
            ) {
                preview.snapshot = true;
                edited.remove(i);
            }
        }
    }
}

/// The preview of one step, remembering the text it leaves for the steps after it.
fn keep_text(
    texts: &mut BTreeMap<String, String>,
    path: &str,
    result: Result<EditPreview, String>,
) -> StepPreview {
    match result {
        Ok(p) => {
            texts.insert(path.to_string(), p.text);
            StepPreview {
                diff: Some(p.diff),
                added: p.added,
                removed: p.removed,
                fails: None,
                snapshot: false,
            }
        }
        Err(why) => StepPreview {
            diff: None,
            added: 0,
            removed: 0,
            fails: Some(why),
            snapshot: false,
        },
    }
}
