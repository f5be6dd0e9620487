//! A phase's steps, one after the other: each announced, carried out through the workspace
//! (or, for RUN and TOOL, `actions`), reported; the phase stops at the first failure or an
//! interrupt.

use std::collections::BTreeSet;

use tokio_util::sync::CancellationToken;

use super::{Agent, blocking, first_line};
use crate::agent::events::{Event, FileView, Frontend, StepReport};
use crate::agent::plan::{Plan, PlannedStep, Step};
use crate::workspace::{FileChange, Modification, WorkspaceError};

impl Agent {
    /// Carry out a phase's steps in order, each announced with `step_started` and reported
    /// with `step`; the first failure or an interrupt ends the phase. Returns the reports and
    /// what the phase came to (failed, fixable, verified, finished).
    pub(super) async fn execute(
        &mut self,
        plan: &Plan,
        phase: u32,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        changes: &mut Vec<FileChange>,
        side_effects: &mut BTreeSet<String>,
    ) -> (Vec<StepReport>, PhaseOutcome) {
        let mut reports = Vec::new();
        let mut outcome = PhaseOutcome::default();
        for (i, planned) in plan.steps.iter().enumerate() {
            if cancel.is_cancelled() {
                outcome.interrupted = true;
                break;
            }
            frontend.event(&Event::StepStarted {
                phase,
                index: i + 1,
                action: planned.step.action().to_string(),
                target: planned.step.target(),
            });
            let mut report = StepReport {
                index: i + 1,
                phase,
                action: planned.step.action().to_string(),
                target: planned.step.target(),
                ok: true,
                output: String::new(),
                diff: None,
                file_view: None,
            };
            let ran = match self.journal_step(&planned.step) {
                Ok(()) => {
                    self.run_step(
                        planned,
                        frontend,
                        cancel,
                        &mut report,
                        changes,
                        side_effects,
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            match ran {
                Ok(kind) => outcome.note(kind, &planned.step.target(), &mut report),
                Err(StepError { message, fixable }) => {
                    report.ok = false;
                    report.output = message.clone();
                    outcome.failed = true;
                    outcome.fixable_failure = fixable;
                    outcome.failure_message = Some(format!(
                        "{} {} failed: {message}",
                        report.action,
                        first_line(&report.target)
                    ));
                }
            }
            let ok = report.ok;
            frontend.event(&Event::Step(report.clone()));
            reports.push(report);
            if !ok {
                break;
            }
            if cancel.is_cancelled() {
                outcome.interrupted = true;
                break;
            }
        }
        (reports, outcome)
    }

    /// One step through the workspace (RUN and TOOL through `actions`), filling `report`
    /// and recording the files it changed; what kind of step it was decides what the phase
    /// does next (a verification, a FINISH).
    pub(super) async fn run_step(
        &mut self,
        planned: &PlannedStep,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        report: &mut StepReport,
        changes: &mut Vec<FileChange>,
        side_effects: &mut BTreeSet<String>,
    ) -> Result<StepKind, StepError> {
        let ws = &self.workspace;
        let refuse = |e: WorkspaceError| StepError {
            fixable: fixable_by_model(&e),
            message: e.to_string(),
        };
        let mut record = |report: &mut StepReport, change: FileChange| {
            if !change.diff.is_empty() {
                report.diff = Some(change.diff.clone());
            }
            report.output = change.to_string();
            changes.push(change);
        };
        match &planned.step {
            Step::Read { path, lines } => {
                read_into(report, read(ws, path, *lines).map_err(refuse)?)
            }
            Step::Write { path, content } => {
                record(report, ws.write_new(path, content).map_err(refuse)?)
            }
            Step::Modify {
                path,
                edits,
                content,
            } => {
                let m = modification(edits, content.as_deref());
                record(report, ws.modify(path, &m).map_err(refuse)?);
            }
            Step::Tree { path } => report.output = ws.tree(path).map_err(refuse)?,
            Step::ListPath { path } => report.output = ws.list_path(path).map_err(refuse)?,
            Step::Mkdir { path } => record(report, ws.mkdir(path).map_err(refuse)?),
            Step::Touch { path } => record(report, ws.touch(path).map_err(refuse)?),
            Step::Rm { path } => {
                let removed = self.remove(path, frontend)?;
                report.output = format!("removed {path} ({} file(s))", removed.len());
                changes.extend(removed);
            }
            Step::Mv { path, to } => {
                let moved = ws.mv(path, to).map_err(refuse)?;
                for c in moved {
                    changes.push(c);
                }
                report.output = format!("moved {path} to {to}");
            }
            Step::Search { pattern, path } => {
                report.output = ws.search(pattern, path.as_deref()).map_err(refuse)?
            }
            Step::Run { command } => {
                // Under --yes, what the model wrote on this line of work in earlier turns and
                // sessions counts too, until the user merges it.
                let model_wrote = !changes.is_empty()
                    || !side_effects.is_empty()
                    || self
                        .history
                        .as_ref()
                        .is_some_and(|h| h.line_holds_unmerged_plans());
                return self
                    .run_command(command, frontend, cancel, report, side_effects, model_wrote)
                    .await;
            }
            Step::Tool {
                server,
                tool,
                arguments,
            } => {
                return self
                    .call_tool(
                        (server, tool, arguments),
                        frontend,
                        cancel,
                        report,
                        side_effects,
                    )
                    .await;
            }
            Step::Finish { message } => {
                report.output = message.clone();
                return Ok(StepKind::Finish(message.clone()));
            }
        }
        Ok(StepKind::Plain)
    }

    /// An RM: a directory always needs the user's confirmation, a file unless `--yes`.
    pub(super) fn remove(
        &self,
        path: &str,
        frontend: &dyn Frontend,
    ) -> Result<Vec<FileChange>, StepError> {
        let refuse = |e: WorkspaceError| StepError {
            fixable: fixable_by_model(&e),
            message: e.to_string(),
        };
        self.workspace.check(path).map_err(refuse)?;
        let is_dir = self.workspace.is_dir(path).unwrap_or(false);
        let needs_confirm = !self.options.yes || is_dir;
        if needs_confirm && !blocking(|| frontend.confirm_rm(path, is_dir)) {
            return Err(StepError::fatal(format!(
                "removing {path} was not confirmed by the user"
            )));
        }
        self.workspace.rm(path, is_dir).map_err(refuse)
    }
}

impl PhaseOutcome {
    /// What a step that ran says about the phase: a failed command or check fails it (the
    /// model may fix it), a check records whether the work passed, a FINISH its message.
    fn note(&mut self, kind: StepKind, target: &str, report: &mut StepReport) {
        match kind {
            StepKind::Command(false) => {
                report.ok = false;
                self.failed = true;
                self.fixable_failure = true;
                self.failure_message = Some(format!("the command failed: {}", first_line(target)));
            }
            StepKind::Verification(ok) => {
                self.verified = Some(ok);
                if !ok {
                    report.ok = false;
                    self.failed = true;
                    self.fixable_failure = true;
                    self.failed_verification = true;
                    self.failure_message =
                        Some(format!("verification failed: {}", first_line(target)));
                }
            }
            StepKind::Finish(msg) => self.finish_message = Some(msg),
            StepKind::Plain | StepKind::Command(true) => {}
        }
    }
}

pub(super) enum StepKind {
    Plain,
    /// A RUN that checks the work (compiles, tests, lints, runs the program): passed or not.
    Verification(bool),
    /// A RUN that only looks (`ls | wc -l`): succeeded or not, but it verifies nothing.
    Command(bool),
    Finish(String),
}

/// Why a step failed, and whether the model can fix it in another phase.
pub(super) struct StepError {
    pub(super) message: String,
    pub(super) fixable: bool,
}

impl StepError {
    /// A failure the model cannot fix by planning again: the plan stops.
    pub(super) fn fatal(message: String) -> StepError {
        StepError {
            message,
            fixable: false,
        }
    }
}

#[derive(Default)]
pub(super) struct PhaseOutcome {
    pub(super) failed: bool,
    pub(super) fixable_failure: bool,
    pub(super) failed_verification: bool,
    pub(super) failure_message: Option<String>,
    pub(super) interrupted: bool,
    pub(super) verified: Option<bool>,
    pub(super) finish_message: Option<String>,
}

/// A READ's report: the text to show (highlighted by the frontend) and what else the read said
/// (a truncation note), or the whole output for a binary file.
/// READ: the file from its start, or the lines asked for.
fn read(
    ws: &crate::workspace::Workspace,
    path: &str,
    lines: Option<crate::agent::plan::LineRange>,
) -> Result<crate::workspace::ReadOutput, WorkspaceError> {
    match lines {
        None => ws.read(path),
        Some(r) => ws.read_lines(path, r.first, r.last),
    }
}

pub(super) fn read_into(report: &mut StepReport, out: crate::workspace::ReadOutput) {
    match out.text() {
        Some(text) => {
            report.output = match out.lines {
                None => format!("read {} ({} bytes)", out.path, out.size),
                Some(l) => format!(
                    "read {} lines {}-{} of {} ({} bytes)",
                    out.path, l.first, l.last, l.total, out.size
                ),
            };
            report.file_view = Some(FileView {
                path: out.path.clone(),
                text: text.to_string(),
                first_line: out.lines.map_or(1, |l| l.first),
            });
            // The workspace's mark of a cut file, under the header.
            let whole = out.to_string();
            if let Some(mark) = whole
                .get(text.len()..)
                .map(str::trim)
                .filter(|m| !m.is_empty())
            {
                report.output.push('\n');
                report.output.push_str(mark);
            }
        }
        None => report.output = out.to_string(),
    }
}

/// A MODIFY's change: the whole content when it gives one and no edits, else its edits.
pub(super) fn modification(
    edits: &[crate::agent::plan::Edit],
    content: Option<&str>,
) -> Modification {
    match content {
        Some(c) if edits.is_empty() => Modification::Content(c.to_string()),
        _ => Modification::Edits(
            edits
                .iter()
                .map(|e| crate::workspace::Edit {
                    search: e.search.clone(),
                    replace: e.replace.clone(),
                })
                .collect(),
        ),
    }
}

/// Failures the model can correct in a next phase: an edit that did not apply, a file that
/// exists or does not, the diff guard. Gate refusals are final: asking again cannot help.
pub(super) fn fixable_by_model(e: &WorkspaceError) -> bool {
    matches!(
        e,
        WorkspaceError::NotFound { .. }
            | WorkspaceError::AlreadyExists { .. }
            | WorkspaceError::Failed { .. }
            | WorkspaceError::DiffGuard { .. }
            | WorkspaceError::PlanGuard { .. }
            | WorkspaceError::InvalidPattern { .. }
    )
}
