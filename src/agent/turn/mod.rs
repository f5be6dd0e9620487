//! The turn (SPEC section 3): one structured call; the plan shown and approved; steps carried
//! out through the workspace in at most three phases (a further call only when the model asked
//! to observe results or a step failed in a way it can fix, with at most one repair after a
//! failed verification); the plan committed; the session log and memory updated.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

mod attempt;

use super::approve::{RunPolicy, ToolPolicy};
use super::context::{self, Budget, Memory, ProjectView, TurnMemo};
use super::events::{
    Approval, CallUsage, Event, FileView, Frontend, RunAnswer, RunQuestion, StepReport, Tally,
    ToolAnswer, ToolQuestion, TurnOutcome,
};
use super::journal::Journal;
use super::live::LiveRun;
use super::plan::{self, PathProbe, Plan, PlannedStep, Step};
use super::prompt::SYSTEM_PROMPT;
use super::side_effects;
use crate::exec::{self, RunOptions, SandboxMode};
use crate::history::{PlanRecord, Session};
use crate::llm::{LlmError, LlmRequest, Message, Provider, StreamEvent};
use crate::mcp::{CallError, Hub, Origin};
use crate::workspace::{ChangeKind, FileChange, Modification, Workspace, WorkspaceError};

/// Most phases (model calls that return steps) in one turn.
pub const MAX_PHASES: u32 = 3;
/// Characters of one step's output sent back to the model.
const RESULT_CHARS: usize = 6_000;
/// Characters of a rejected reply echoed back when asking for a correction.
const ECHO_CHARS: usize = 8_000;

/// How the agent behaves; built from the settings.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Model name (recorded in commits).
    pub model: String,
    /// Sampling temperature.
    pub temperature: f32,
    /// Output token limit per call.
    pub max_output_tokens: u32,
    /// Stream replies (interactive use).
    pub stream: bool,
    /// Approve plans and RM without asking.
    pub yes: bool,
    /// Show the first plan and stop there, with this message (`pai run --plan`, or `pai run`
    /// with nobody to approve the plan): nothing is carried out. A chat is answered as usual.
    pub dry_run: Option<String>,
    /// Approve RUN without asking (only with `yes`).
    pub allow_run: bool,
    /// RUN prefixes approved without asking (config rules; "always" answers are added).
    pub run_allow: Vec<String>,
    /// The user's config.toml, where a rule answered at the RUN prompt is saved.
    pub settings_file: Option<std::path::PathBuf>,
    /// RUN timeout.
    pub run_timeout: Duration,
    /// Refuse RUN that cannot be confined.
    pub require_sandbox: bool,
    /// Directories outside the project a confined RUN command may also write to.
    pub run_writable: Vec<std::path::PathBuf>,
    /// Secret values to keep out of commands' environments and logs.
    pub secrets: Vec<String>,
    /// Context budget.
    pub budget: Budget,
    /// Where the user started pai, relative to the project root (`None`: at the root).
    pub subdir: Option<String>,
}

/// An agent session: the model, the workspace, the history, the memory of past turns.
pub struct Agent {
    provider: Box<dyn Provider>,
    workspace: Workspace,
    history: Option<Session>,
    journal: Option<Arc<Journal>>,
    memory: Memory,
    options: AgentOptions,
    totals: Tally,
    /// Whether the user was told this kernel cannot confine RUN (said once per session).
    told_unconfined: bool,
    /// The session's MCP servers (`None`: none configured).
    mcp: Option<Hub>,
    /// `server.tool` names the user allowed for the session with "always".
    tool_allow: BTreeSet<String>,
    /// Project paths TOOL calls changed in the current turn (a subset of its side effects),
    /// so the commit says which step kind changed them.
    tool_changed: BTreeSet<String>,
    /// Events of the session itself raised between turns, for [`Agent::emit_queued`].
    queued: Vec<Event>,
}

/// Why a model call produced no usable reply.
enum CallFailure {
    Cancelled,
    /// The message, and what to ask the model when a corrected reply could help.
    Failed(String, Option<String>),
    /// The configuration is wrong: the message and the hint saying what to fix.
    Config(String, String),
}

impl Agent {
    /// An agent over these parts. `history` is `None` when the session keeps no git record.
    pub fn new(
        provider: Box<dyn Provider>,
        workspace: Workspace,
        history: Option<Session>,
        journal: Option<Journal>,
        options: AgentOptions,
    ) -> Self {
        Self {
            provider,
            workspace,
            history,
            journal: journal.map(Arc::new),
            memory: Memory::default(),
            options,
            totals: Tally::default(),
            told_unconfined: false,
            mcp: None,
            tool_allow: BTreeSet::new(),
            tool_changed: BTreeSet::new(),
            queued: Vec::new(),
        }
    }

    /// Give the session its MCP servers; they start at the first turn (a project's only once
    /// the user trusts them).
    pub fn set_mcp(&mut self, hub: Hub) {
        self.mcp = (!hub.is_empty()).then_some(hub);
    }

    /// Stop the MCP servers (at the end of the session).
    pub async fn shutdown_mcp(&mut self) {
        if let Some(hub) = self.mcp.as_mut() {
            hub.shutdown().await;
        }
    }

    /// Ask about an untrusted project file (once), then start what may start and refresh
    /// tool lists that changed.
    async fn prepare_mcp(&mut self, frontend: &dyn Frontend) {
        let Some(hub) = self.mcp.as_mut() else {
            return;
        };
        let notice = |text: String| frontend.event(&Event::Notice { text });
        if let Some(question) = hub.trust_request() {
            let trusted = blocking(|| frontend.trust_mcp(&question));
            let text = hub.answer_trust(trusted);
            notice(text);
        }
        hub.ensure_started(&notice).await;
    }

    /// The system prompt and schema of this session's calls: the plain ones unless MCP tools
    /// are available, so sessions without MCP send exactly what they always did.
    fn prompt_and_schema(&self) -> (String, serde_json::Value) {
        match self.mcp.as_ref().map(Hub::prompt_section) {
            Some(section) if !section.is_empty() => (
                format!("{SYSTEM_PROMPT}{section}"),
                plan::schema_with_tools(),
            ),
            _ => (SYSTEM_PROMPT.to_string(), plan::schema()),
        }
    }

    /// Calls and tokens of the whole session so far.
    pub fn totals(&self) -> Tally {
        self.totals
    }

    /// The workspace (for undo/redo from a session).
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The git session, if any.
    pub fn history(&self) -> Option<&Session> {
        self.history.as_ref()
    }

    /// Take the git session out (at the end, to print its summary and release its lock).
    pub fn take_history(&mut self) -> Option<Session> {
        self.history.take()
    }

    /// Change the model for later turns (`/model`): a provider built for it, and its name.
    pub fn set_provider(&mut self, provider: Box<dyn Provider>, model: String) {
        self.provider = provider;
        self.options.model = model;
    }

    /// The git session and the workspace together, for `/undo` and `/redo`.
    pub fn history_and_workspace(&mut self) -> (Option<&mut Session>, &Workspace) {
        (self.history.as_mut(), &self.workspace)
    }

    /// Make every turn a dry run ending with `message` (`None`: carry plans out).
    pub fn set_dry_run(&mut self, message: Option<String>) {
        self.options.dry_run = message;
    }

    /// Open the session: [`Event::SessionStarted`] is queued for the first frontend (and the
    /// session log), and the memory of earlier turns (a continued session's, from its log;
    /// oldest first) restored. A new session that carries an older one's memory records it
    /// as [`Event::Remembered`], so continuing this one later gets it back too.
    pub fn open_session(&mut self, continued: bool, memos: Vec<TurnMemo>) {
        self.queued.push(Event::SessionStarted {
            root: self.workspace.root().display().to_string(),
            provider: self.provider.kind().name().to_string(),
            model: self.options.model.clone(),
            branch: self
                .history
                .as_ref()
                .and_then(|h| h.branch().map(str::to_string)),
            continued,
        });
        for memo in memos {
            if !continued {
                self.queued.push(Event::Remembered { memo: memo.clone() });
            }
            self.memory.push(memo);
        }
    }

    /// Send the events of the session itself (its start, `/clear`), queued while no turn
    /// was under way, to the session log and to `frontend`, in order.
    pub fn emit_queued(&mut self, frontend: &dyn Frontend) {
        for event in std::mem::take(&mut self.queued) {
            if let Some(j) = &self.journal {
                j.record(&event);
            }
            frontend.event(&event);
        }
    }

    /// The turns the session remembers, oldest first.
    pub fn memory(&self) -> Vec<TurnMemo> {
        self.memory.turns().cloned().collect()
    }

    /// Forget the session memory (`/clear`); [`Event::MemoryCleared`] is queued (see
    /// [`Agent::emit_queued`]).
    pub fn clear_memory(&mut self) {
        self.memory.clear();
        self.queued.push(Event::MemoryCleared);
    }

    /// Carry out one request.
    pub async fn turn(
        &mut self,
        request: &str,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let mut request = request.trim().to_string();
        let mut amended = false;
        self.emit_queued(frontend);
        // The session log is one more consumer of the events the frontend renders.
        let logged = Logged {
            inner: frontend,
            journal: self.journal.clone(),
        };
        let frontend: &dyn Frontend = &logged;
        self.prepare_mcp(frontend).await;
        loop {
            match self.attempt(&request, amended, frontend, cancel).await {
                Attempt::Done(outcome) => {
                    self.totals.add(outcome.tally);
                    return outcome;
                }
                Attempt::Amend(new_request, tally) => {
                    self.totals.add(tally);
                    request = new_request;
                    amended = true;
                }
            }
        }
    }

    async fn call(
        &mut self,
        messages: &[Message],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        tally: &mut Tally,
        phase: u32,
    ) -> Result<crate::llm::LlmReply, CallFailure> {
        frontend.event(&Event::Thinking { phase });
        let (system, schema) = self.prompt_and_schema();
        let req = LlmRequest {
            system,
            messages: messages.to_vec(),
            schema,
            schema_name: "pai_plan".to_string(),
            temperature: self.options.temperature,
            max_output_tokens: self.options.max_output_tokens,
            stream: self.options.stream,
        };
        let streamer = ReplyStreamer::default();
        let on_text = |ev: StreamEvent<'_>| {
            if let Some(delta) = streamer.feed(ev) {
                frontend.event(&Event::TextDelta { text: delta });
            }
        };
        let before = self.provider.usage_totals();
        let result = tokio::select! {
            r = self.provider.complete(&req, &on_text) => Some(r),
            _ = cancel.cancelled() => None,
        };
        // Count what the provider actually sent and was billed for, retries and unusable
        // replies included, so the figures match the provider's bill.
        let after = self.provider.usage_totals();
        let requests = after.requests.saturating_sub(before.requests) as u32;
        let input = after.usage.input.saturating_sub(before.usage.input);
        let output = after.usage.output.saturating_sub(before.usage.output);
        let cached = after.usage.cached.saturating_sub(before.usage.cached);
        let reasoning = after.usage.reasoning.saturating_sub(before.usage.reasoning);
        tally.calls += requests;
        tally.input += input;
        tally.output += output;
        tally.cached += cached;
        tally.reasoning += reasoning;
        let Some(result) = result else {
            return Err(CallFailure::Cancelled);
        };
        match result {
            Ok(reply) => {
                let usage = CallUsage {
                    input,
                    output,
                    cached,
                    reasoning,
                };
                frontend.event(&Event::Usage {
                    call: tally.calls,
                    usage,
                });
                Ok(reply)
            }
            Err(e) if e.kind() == crate::llm::LlmErrorKind::Config => {
                Err(CallFailure::Config(describe_llm_error(&e), e.hint()))
            }
            Err(e) => Err(CallFailure::Failed(
                describe_llm_error(&e),
                e.correction_request(),
            )),
        }
    }

    fn commit(
        &mut self,
        request: &str,
        changes: &[FileChange],
        side_effects: &BTreeSet<String>,
        steps: &[String],
        tally: &Tally,
        frontend: &dyn Frontend,
    ) -> Result<Option<String>, String> {
        let Some(history) = self.history.as_mut() else {
            return Ok(None);
        };
        let mut touched = touched_paths(changes);
        touched.extend(side_effects.iter().cloned());
        if touched.is_empty() || history.read_only_reason().is_some() {
            return Ok(None);
        }
        let record = PlanRecord {
            request: request.to_string(),
            steps: steps.to_vec(),
            touched: touched.into_iter().collect(),
            side_effects: side_effects
                .iter()
                .map(|p| {
                    if self.tool_changed.contains(p) {
                        format!("{p}: changed by a TOOL call")
                    } else {
                        format!("{p}: changed by a RUN command")
                    }
                })
                .chain((!side_effects.is_empty()).then(|| {
                    "ignored files a command changed (build output, installed packages) are not recorded".to_string()
                }))
                .collect(),
            model: self.options.model.clone(),
            calls: tally.calls,
            input_tokens: tally.input,
            output_tokens: tally.output,
            cached_tokens: tally.cached,
            reasoning_tokens: tally.reasoning,
        };
        match history.commit_plan(&self.workspace, &record) {
            Ok(Some(info)) => {
                let branch = history.branch().unwrap_or_default().to_string();
                for w in &info.warnings {
                    frontend.event(&Event::Notice { text: w.clone() });
                }
                let short = info.short_id.clone();
                frontend.event(&Event::Committed {
                    commit: short.clone(),
                    branch,
                });
                Ok(Some(short))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                let text = format!(
                    "the plan's changes are on disk but could not be committed, so undo cannot reach them: {e}"
                );
                Err(text)
            }
        }
    }

    async fn execute(
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
            match self
                .run_step(
                    planned,
                    frontend,
                    cancel,
                    &mut report,
                    changes,
                    side_effects,
                )
                .await
            {
                Ok(kind) => {
                    if let StepKind::Verification(ok) = kind {
                        outcome.verified = Some(ok);
                        if !ok {
                            report.ok = false;
                            outcome.failed = true;
                            outcome.fixable_failure = true;
                            outcome.failed_verification = true;
                            outcome.failure_message = Some(format!(
                                "verification failed: {}",
                                first_line(&planned.step.target())
                            ));
                        }
                    }
                    if let StepKind::Finish(msg) = kind {
                        outcome.finish_message = Some(msg);
                    }
                }
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

    async fn run_step(
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
            Step::Read { path } => read_into(report, ws.read(path).map_err(refuse)?),
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
                let model_wrote = !changes.is_empty() || !side_effects.is_empty();
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
    fn remove(&self, path: &str, frontend: &dyn Frontend) -> Result<Vec<FileChange>, StepError> {
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

    /// A TOOL step: approval by the tool policy, then the call with the server's timeout;
    /// the result (redacted, capped) is the step's output, observed by the next phase.
    /// Whether a TOOL call may be made: the server and tool exist, and the tool policy
    /// (the server's `auto_approve`, an earlier "always", or the user's answer) allows it.
    fn admit_tool(
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
            return Err(fixable(format!("the user denied calling {server}.{tool}")));
        }
        Ok(())
    }

    async fn call_tool(
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
        let watch =
            side_effects::watch(self.history.as_mut(), &self.workspace).map_err(|e| StepError {
                message: format!(
                    "could not read your uncommitted files before the tool call, so it was not made: {e}"
                ),
                fixable: false,
            })?;
        let result = match self.mcp.as_mut() {
            Some(hub) => hub.call(server, tool, arguments.clone(), cancel).await,
            None => Err(CallError::Failed("the MCP servers are gone".into())),
        };
        let collected = side_effects::collect(watch, self.history.as_mut(), &self.workspace, &root)
            .map_err(|e| StepError {
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
    fn admit_command(
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
            return Err(StepError {
                message: "the user denied running this command".into(),
                fixable: true,
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

    async fn run_command(
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
        let watch =
            side_effects::watch(self.history.as_mut(), &self.workspace).map_err(|e| StepError {
                message: format!(
                    "could not read your uncommitted files before the command, so it was not run: {e}"
                ),
                fixable: false,
            })?;
        let opts = RunOptions {
            timeout: self.options.run_timeout,
            sandbox: mode,
            secrets: self.options.secrets.clone(),
            extra_writable: self.options.run_writable.clone(),
            ..RunOptions::default()
        };
        frontend.event(&Event::RunStarted {
            phase: report.phase,
            index: report.index,
            command: command.to_string(),
        });
        let live = LiveRun::new(frontend, report, &self.options.secrets);
        let on_output = |bytes: &[u8]| live.feed(bytes);
        let outcome = tokio::select! {
            r = exec::run_command_streaming(&root, command, &opts, &on_output) => Some(r),
            _ = cancel.cancelled() => None,
        };
        live.finish();
        // Whatever way the command ended, what it changed belongs to the plan, with the
        // user's versions recorded first, so undo covers it.
        let collected = side_effects::collect(watch, self.history.as_mut(), &self.workspace, &root)
            .map_err(|e| StepError {
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
        Ok(StepKind::Verification(outcome.success()))
    }
}

enum Attempt {
    Done(TurnOutcome),
    Amend(String, Tally),
}

enum StepKind {
    Plain,
    Verification(bool),
    Finish(String),
}

/// Why a step failed, and whether the model can fix it in another phase.
struct StepError {
    message: String,
    fixable: bool,
}

impl StepError {
    /// A failure the model cannot fix by planning again: the plan stops.
    fn fatal(message: String) -> StepError {
        StepError {
            message,
            fixable: false,
        }
    }
}

#[derive(Default)]
struct PhaseOutcome {
    failed: bool,
    fixable_failure: bool,
    failed_verification: bool,
    failure_message: Option<String>,
    interrupted: bool,
    verified: Option<bool>,
    finish_message: Option<String>,
}

/// Failures the model can correct in a next phase: an edit that did not apply, a file that
/// exists or does not, the diff guard. Gate refusals are final: asking again cannot help.
/// A READ's report: the text to show (highlighted by the frontend) and what else the read said
/// (a truncation note), or the whole output for a binary file.
fn read_into(report: &mut StepReport, out: crate::workspace::ReadOutput) {
    match out.text() {
        Some(text) => {
            report.output = format!("read {} ({} bytes)", out.path, out.size);
            report.file_view = Some(FileView {
                path: out.path.clone(),
                text: text.to_string(),
            });
            if out.to_string().len() > text.len() {
                report.output = out.to_string()[text.len()..].trim().to_string();
            }
        }
        None => report.output = out.to_string(),
    }
}

/// A MODIFY's change: the whole content when it gives one and no edits, else its edits.
fn modification(edits: &[crate::agent::plan::Edit], content: Option<&str>) -> Modification {
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

fn fixable_by_model(e: &WorkspaceError) -> bool {
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

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

fn touched_paths(changes: &[FileChange]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for c in changes {
        if !c.is_change() || matches!(c.kind, ChangeKind::DirCreated) {
            continue;
        }
        set.insert(c.path.clone());
        if let ChangeKind::Renamed { from } | ChangeKind::DirRenamed { from } = &c.kind {
            set.insert(from.clone());
        }
    }
    set
}

/// The model's own plan as it is carried into the next phase: file contents it wrote are
/// replaced by their size (they are on disk now and cost tokens on every later call).
fn compact_reply(plan: &Plan) -> String {
    let mut value = serde_json::to_value(plan).unwrap_or_default();
    if let Some(steps) = value.get_mut("steps").and_then(|s| s.as_array_mut()) {
        for step in steps {
            if let Some(content) = step.get("content").and_then(|c| c.as_str()).map(str::len) {
                step["content"] = serde_json::Value::String(format!("<{content} bytes, written>"));
            }
        }
    }
    if let Some(obj) = value.as_object_mut() {
        obj.remove("analysis");
    }
    value.to_string()
}

/// What the next phase's call carries: only the new results.
fn results_message(reports: &[StepReport], phase: u32) -> String {
    let mut out = format!("Results of phase {phase}:\n");
    for r in reports {
        out.push_str(&format!(
            "[{}] {} {}: {}\n",
            r.index,
            r.action,
            first_line(&r.target),
            if r.ok { "OK" } else { "FAILED" }
        ));
        let body = match &r.file_view {
            Some(view) => format!("{}\n{}", r.output, view.text),
            None => r.output.clone(),
        };
        if !body.trim().is_empty() {
            out.push_str(&context::truncate(body.trim_end(), RESULT_CHARS));
            out.push('\n');
        }
    }
    out.push_str("Continue: reply with the remaining steps (or fix what failed), or intent \"chat\" if nothing is left to do.");
    out
}

/// Call a blocking frontend method from inside the runtime without stalling other tasks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

fn describe_llm_error(e: &LlmError) -> String {
    format!("the model call failed: {e}")
}

/// A frontend and the session log, side by side: every event goes to both; questions go to
/// the frontend.
struct Logged<'a> {
    inner: &'a dyn Frontend,
    journal: Option<Arc<Journal>>,
}

impl Frontend for Logged<'_> {
    fn event(&self, event: &Event) {
        if let Some(j) = &self.journal {
            j.record(event);
        }
        self.inner.event(event);
    }

    fn approve_plan(&self, steps: &[PlannedStep]) -> Approval {
        self.inner.approve_plan(steps)
    }

    fn approve_run(&self, question: &RunQuestion) -> RunAnswer {
        self.inner.approve_run(question)
    }

    fn confirm_rm(&self, path: &str, recursive: bool) -> bool {
        self.inner.confirm_rm(path, recursive)
    }

    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        self.inner.approve_tool(question)
    }

    fn trust_mcp(&self, question: &crate::mcp::TrustRequest) -> bool {
        self.inner.trust_mcp(question)
    }
}

/// The workspace seen by the context builder and the plan validator, with the session's MCP
/// servers for validating TOOL steps.
struct WorkspaceView<'a>(&'a Workspace, Option<&'a Hub>);

impl ProjectView for WorkspaceView<'_> {
    fn files(&self, max: usize) -> (Vec<String>, usize) {
        self.0.project_files(max)
    }

    fn text(&self, path: &str) -> Option<String> {
        let out = self.0.read(path).ok()?;
        out.text().map(str::to_string)
    }
}

impl PathProbe for WorkspaceView<'_> {
    fn probe(&self, path: &str) -> Option<bool> {
        self.0.is_dir(path).map(|dir| !dir)
    }

    fn tool(&self, server: &str, tool: &str) -> Result<(), String> {
        match self.1 {
            Some(hub) => hub.check(server, tool),
            None => Err("no MCP tools are available in this session; do not use TOOL".into()),
        }
    }
}

/// Pulls the `reply` string out of the raw JSON as it streams, so a chat answer or the
/// acknowledgment appears live instead of after the whole object arrived.
#[derive(Default)]
struct ReplyStreamer {
    state: Mutex<StreamState>,
}

#[derive(Default)]
struct StreamState {
    raw: String,
    emitted: usize,
}

impl ReplyStreamer {
    fn feed(&self, ev: StreamEvent<'_>) -> Option<String> {
        let mut st = self.state.lock().ok()?;
        match ev {
            StreamEvent::Restart => {
                st.raw.clear();
                st.emitted = 0;
                None
            }
            StreamEvent::Text(t) => {
                st.raw.push_str(t);
                let decoded = partial_reply(&st.raw)?;
                if decoded.len() > st.emitted {
                    let delta = decoded[st.emitted..].to_string();
                    st.emitted = decoded.len();
                    Some(delta)
                } else {
                    None
                }
            }
        }
    }
}

/// The decoded prefix of the `"reply"` string in a partial JSON text.
fn partial_reply(raw: &str) -> Option<String> {
    let key = raw.find("\"reply\"")?;
    let rest = raw[key + 7..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() < 4 {
                        break;
                    }
                    if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(ch);
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_reply_decodes_as_it_grows() {
        assert_eq!(
            partial_reply(r#"{"intent":"chat","reply":"Hel"#).as_deref(),
            Some("Hel")
        );
        assert_eq!(
            partial_reply(r#"{"reply": "a\nb \"c\"", "x": 1}"#).as_deref(),
            Some("a\nb \"c\"")
        );
        assert_eq!(partial_reply(r#"{"intent":"#), None);
    }
}
