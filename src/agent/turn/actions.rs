//! The steps whose effects reach beyond the files they name: RUN (a command, under the
//! sandbox, approved by the agent's policy) and TOOL (an MCP server's tool). Each is admitted
//! first (policy, approval), then run with what it changed found and folded into the plan.

use std::collections::BTreeSet;

use tokio_util::sync::CancellationToken;

use super::steps::{StepError, StepKind};
use super::{Agent, blocking};
use crate::agent::approve::{self, RunPolicy, ToolPolicy};
use crate::agent::context;
use crate::agent::events::{Event, Frontend, StepReport, ToolQuestion};
use crate::agent::live::LiveRun;
use crate::agent::side_effects;
use crate::exec::{self, RunOptions, SandboxMode};
use crate::mcp::{CallError, Origin};

/// The first string among a TOOL call's arguments (at any depth, object keys included) that
/// names a protected path, described.
fn protected_in_arguments(
    workspace: &crate::workspace::Workspace,
    arguments: &serde_json::Map<String, serde_json::Value>,
) -> Option<String> {
    let mut stack: Vec<&serde_json::Value> = arguments.values().collect();
    let mut keys: Vec<&str> = arguments.keys().map(String::as_str).collect();
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::String(text) => keys.push(text),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => {
                keys.extend(map.keys().map(String::as_str));
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    keys.into_iter()
        .find_map(|text| workspace.protected_in_command(text))
}

impl Agent {
    /// The steps of `steps` that would need an approval nobody can give here (see
    /// [`approve::unaskable`]), one line each.
    pub(super) fn unaskable_steps(
        &mut self,
        steps: &[crate::agent::plan::PlannedStep],
    ) -> Vec<(String, String)> {
        let mode = if self.options.require_sandbox {
            SandboxMode::Require
        } else {
            SandboxMode::Prefer
        };
        let confined = exec::unconfined_reason(mode).is_none();
        let root = self.workspace.root().to_path_buf();
        let policy = RunPolicy {
            yes: self.options.yes,
            allow_run: self.options.allow_run,
            allow: &mut self.options.run_allow,
            settings_file: self.options.settings_file.as_deref(),
            root: &root,
        };
        let hub = self.mcp.as_ref();
        let allowed = &self.tool_allow;
        approve::unaskable(steps, &policy, confined, |server, tool| {
            allowed.contains(&format!("{server}.{tool}"))
                || hub
                    .and_then(|h| h.spec(server))
                    .is_some_and(|spec| spec.auto_approve.iter().any(|t| t == tool))
        })
    }

    /// Whether a TOOL call may be made: the server and tool exist, and the tool policy
    /// (the server's `auto_approve`, an earlier "always", or the user's answer) allows it.
    pub(super) fn admit_tool(
        &mut self,
        server: &str,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        frontend: &dyn Frontend,
    ) -> Result<(), StepError> {
        let Some(hub) = self.mcp.as_mut() else {
            return Err(StepError {
                message: "no MCP servers are configured in this session".into(),
                fixable: true,
            });
        };
        let fixable = |message: String| StepError {
            message,
            fixable: true,
        };
        hub.check(server, tool).map_err(fixable)?;
        // A tool reads and writes with the user's rights outside the gate, so every string it
        // is given is screened like a RUN command's words: `{"path": ".env"}` is refused
        // whatever the approval would say.
        if let Some(why) = protected_in_arguments(&self.workspace, arguments) {
            return Err(fixable(format!(
                "TOOL refused: {why}; tools may not be given secrets, key material, git \
                 internals or pai's own files"
            )));
        }
        let (auto_approve, from_project) = match hub.spec(server) {
            Some(spec) => (spec.auto_approve.clone(), spec.origin == Origin::Project),
            None => (Vec::new(), true),
        };
        let pretty = serde_json::to_string_pretty(&serde_json::Value::Object(arguments.clone()))
            .unwrap_or_default();
        let question = ToolQuestion {
            server: server.to_string(),
            tool: tool.to_string(),
            arguments: context::truncate(&exec::redact(&pretty, &self.options.secrets), 2_000),
            from_project,
        };
        let mut policy = ToolPolicy {
            auto_approve: &auto_approve,
            allowed: &mut self.tool_allow,
        };
        if policy
            .decide(&question, frontend, |q| {
                blocking(|| frontend.approve_tool(q))
            })
            .is_err()
        {
            // Nobody may have been asked (no terminal): say what happened, not who.
            return Err(StepError {
                message: format!("calling {server}.{tool} was not approved"),
                fixable: !self.options.yes || frontend.can_ask(),
            });
        }
        Ok(())
    }

    /// A TOOL step: approval by the tool policy, then the call with the server's timeout;
    /// the result (redacted, capped) is the step's output, observed by the next phase.
    pub(super) async fn call_tool(
        &mut self,
        (server, tool, arguments): (&str, &str, &serde_json::Map<String, serde_json::Value>),
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        report: &mut StepReport,
        side_effects: &mut BTreeSet<String>,
    ) -> Result<StepKind, StepError> {
        self.admit_tool(server, tool, arguments, frontend)?;
        let fixable = |message: String| StepError {
            message,
            fixable: true,
        };
        // A server runs in the project root with the user's rights, so what a call changes
        // there belongs to the plan like a RUN's changes: the user's uncommitted files are
        // remembered first, the changed paths recorded after, and files that make code run
        // later (git hooks, pai's state) put back.
        let root = self.workspace.root().to_path_buf();
        let mcp = self.mcp.as_mut();
        let call = async {
            match mcp {
                Some(hub) => hub.call(server, tool, arguments.clone(), cancel).await,
                None => Err(CallError::Failed("the MCP servers are gone".into())),
            }
        };
        let history = self.history.as_mut().zip(self.plan.as_mut());
        let (result, collected) = side_effects::around(history, &self.workspace, &root, call)
            .await
            .map_err(|e| StepError {
                message: format!(
                    "could not read your uncommitted files before the tool call, so it was not made: {e}"
                ),
                fixable: false,
            })?;
        let collected = collected.map_err(|e| StepError {
            message: format!(
                "the tool ran, but pai could not find what it changed, so undo could not cover it: {e}"
            ),
            fixable: false,
        })?;
        self.tool_changed.extend(collected.changed.iter().cloned());
        side_effects.extend(collected.changed.iter().cloned());
        collected.check("tool").map_err(StepError::fatal)?;
        match result {
            Ok(result) => {
                let text = exec::redact(&result.text, &self.options.secrets);
                if result.is_error {
                    return Err(fixable(format!("the tool reported an error: {text}")));
                }
                report.output = if text.trim().is_empty() {
                    "(no output)".into()
                } else {
                    text
                };
                Ok(StepKind::Plain)
            }
            Err(CallError::Cancelled) => Err(StepError {
                message: CallError::Cancelled.to_string(),
                fixable: false,
            }),
            Err(e) => Err(fixable(exec::redact(&e.to_string(), &self.options.secrets))),
        }
    }

    /// Whether a RUN command may run, and as what: refused when it names protected paths or
    /// needs a sandbox the kernel lacks; otherwise the approval policy decides (the user may
    /// edit the command). Returns the command to run and how to confine it.
    pub(super) fn admit_command(
        &mut self,
        command: &str,
        frontend: &dyn Frontend,
        report: &mut StepReport,
        model_wrote: bool,
    ) -> Result<(String, SandboxMode), StepError> {
        let mode = if self.options.require_sandbox {
            SandboxMode::Require
        } else {
            SandboxMode::Prefer
        };
        let unconfined = exec::unconfined_reason(mode);
        if let Some(why) = self.workspace.protected_in_command(command) {
            return Err(StepError {
                message: format!(
                    "RUN refused: {why}; commands may not read or write secrets, key material, \
                     git internals or pai's own files"
                ),
                fixable: true,
            });
        }
        if self.options.require_sandbox
            && matches!(
                exec::sandbox_support(),
                exec::SandboxSupport::Unavailable(_)
            )
        {
            return Err(StepError {
                message: "RUN refused: this kernel cannot confine commands and the configuration requires it (run.require_sandbox)".into(),
                fixable: false,
            });
        }
        if let Some(reason) = &unconfined
            && !self.told_unconfined
        {
            self.told_unconfined = true;
            frontend.event(&Event::Notice {
                text: format!("commands will run without the sandbox ({reason}); each one needs your explicit approval"),
            });
        }
        let root = self.workspace.root().to_path_buf();
        let mut policy = RunPolicy {
            yes: self.options.yes,
            allow_run: self.options.allow_run,
            allow: &mut self.options.run_allow,
            settings_file: self.options.settings_file.as_deref(),
            root: &root,
        };
        let approved = policy.decide(command, unconfined.is_none(), model_wrote, frontend, |q| {
            blocking(|| frontend.approve_run(q))
        });
        let Ok(approved) = approved else {
            // Without a terminal nobody was asked: no repair call can change that.
            return Err(StepError {
                message: "running this command was not approved".into(),
                fixable: !self.options.yes || frontend.can_ask(),
            });
        };
        if approved != command {
            // The user edited the command: it is what runs, what is shown and what the model
            // is told about.
            if let Some(why) = self.workspace.protected_in_command(&approved) {
                return Err(StepError {
                    message: format!("RUN refused: {why}"),
                    fixable: false,
                });
            }
            report.target = approved.clone();
        }
        Ok((approved, mode))
    }

    /// A RUN step: admitted (see [`Agent::admit_command`]), then run with live output
    /// (`run_started`, `run_output`), under the session's timeout and the interrupt; what it
    /// changed in the project is found afterwards and recorded with the plan.
    pub(super) async fn run_command(
        &mut self,
        command: &str,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        report: &mut StepReport,
        side_effects: &mut BTreeSet<String>,
        model_wrote: bool,
    ) -> Result<StepKind, StepError> {
        let (approved, mode) = self.admit_command(command, frontend, report, model_wrote)?;
        let root = self.workspace.root().to_path_buf();
        let command = approved.as_str();
        // A plan is everything it changed, RUN included: the user's uncommitted and untracked
        // files are snapshotted first, so whatever the command does to them, undo gives them
        // back (tracked files git already holds; ignored trees a command rebuilds are out).
        // Git hooks and config, pai's state, shell and ssh startup files: what the command
        // changes there would run later, unconfined. Recorded now, put back after.
        let opts = RunOptions {
            timeout: self.options.run_timeout,
            sandbox: mode,
            secrets: self.options.secrets.clone(),
            extra_writable: self.options.run_writable.clone(),
            ..RunOptions::default()
        };
        let secrets = &self.options.secrets;
        let run = async {
            frontend.event(&Event::RunStarted {
                phase: report.phase,
                index: report.index,
                command: command.to_string(),
            });
            let live = LiveRun::new(frontend, report, secrets);
            let on_output = |bytes: &[u8]| live.feed(bytes);
            let outcome = tokio::select! {
                r = exec::run_command_streaming(&root, command, &opts, &on_output) => Some(r),
                _ = cancel.cancelled() => None,
            };
            live.finish();
            outcome
        };
        // Whatever way the command ended, what it changed belongs to the plan, with the
        // user's versions recorded first, so undo covers it.
        let history = self.history.as_mut().zip(self.plan.as_mut());
        let (outcome, collected) = side_effects::around(history, &self.workspace, &root, run)
            .await
            .map_err(|e| StepError {
                message: format!(
                    "could not read your uncommitted files before the command, so it was not run: {e}"
                ),
                fixable: false,
            })?;
        let collected = collected.map_err(|e| StepError {
            message: format!(
                "the command ran, but pai could not find what it changed, so undo could not cover it: {e}"
            ),
            fixable: false,
        })?;
        side_effects.extend(collected.changed.iter().cloned());
        let Some(outcome) = outcome else {
            return Err(StepError {
                message: "interrupted; the command was stopped".into(),
                fixable: false,
            });
        };
        collected.check("command").map_err(StepError::fatal)?;
        let outcome = outcome.map_err(|e| StepError {
            message: e.to_string(),
            fixable: false,
        })?;
        // The output goes to the screen, the session log and the model: a key a command
        // printed (from a file it read, say) is redacted before it goes anywhere.
        report.output = exec::redact(&outcome.summary_for_model(), &self.options.secrets);
        if exec::only_looks(command) {
            Ok(StepKind::Command(outcome.success()))
        } else {
            Ok(StepKind::Verification(outcome.success()))
        }
    }
}
