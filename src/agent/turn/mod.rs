//! The turn (SPEC section 3): one structured call; the plan shown and approved; steps carried
//! out through the workspace in at most three phases (a further call only when the model asked
//! to observe results or a step failed in a way it can fix, with at most one repair after a
//! failed verification); the plan committed; the session log and memory updated.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

mod actions;
mod attempt;
mod call;
mod outcome;
mod preview;
mod step_journal;
mod steps;

use super::context::{self, Budget, Memory, ProjectView, TurnMemo};
use super::events::{
    Approval, Event, Frontend, RunAnswer, RunQuestion, StepReport, Tally, ToolAnswer, ToolQuestion,
    TurnOutcome,
};
use super::journal::Journal;
use super::plan::{self, PathProbe, Plan, PlannedStep};
use super::prompt::SYSTEM_PROMPT;
use crate::history::{NotCommitted, PlanRecord, PlanUnderWay, Session};
use crate::llm::Provider;
use crate::mcp::Hub;
use crate::workspace::{ChangeKind, FileChange, Workspace};

/// Most phases (model calls that return steps) in one turn.
pub const MAX_PHASES: u32 = 3;
/// Characters of one step's output sent back to the model.
const RESULT_CHARS: usize = 6_000;
/// Characters of a file a READ sends back to the model: the model asked for the file, and
/// the lines it must change may be anywhere in it, so a READ shows far more than a command's
/// output (about 12,000 tokens; the workspace reads at most `max_read_bytes`).
const READ_CHARS: usize = 48_000;
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
    /// The plan under way in `history`: begun with a turn's attempt, ended by its commit.
    plan: Option<PlanUnderWay>,
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
    /// The project's listing for the first turn's map, under way since before the session
    /// opened.
    listing_soon: Option<super::listing::ListingSoon>,
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
            plan: None,
            journal: journal.map(Arc::new),
            memory: Memory::default(),
            options,
            totals: Tally::default(),
            told_unconfined: false,
            mcp: None,
            tool_allow: BTreeSet::new(),
            tool_changed: BTreeSet::new(),
            queued: Vec::new(),
            listing_soon: None,
        }
    }

    /// The first turn's map takes the project's listing from `soon` (started while the
    /// session opened) rather than listing the project then.
    pub fn use_listing(&mut self, soon: super::listing::ListingSoon) {
        self.listing_soon = Some(soon);
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
    /// are available, so sessions without MCP pay nothing for it.
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

    fn commit(
        &mut self,
        request: &str,
        changes: &[FileChange],
        side_effects: &BTreeSet<String>,
        steps: PlanSteps<'_>,
        tally: &Tally,
        frontend: &dyn Frontend,
    ) -> Result<Option<String>, String> {
        // The plan under way ends here, committed or not.
        let (Some(history), Some(plan)) = (self.history.as_mut(), self.plan.take()) else {
            return Ok(None);
        };
        let mut touched = touched_paths(changes);
        touched.extend(side_effects.iter().cloned());
        let record = PlanRecord {
            request: request.to_string(),
            steps: steps.lines.to_vec(),
            failed: steps.failed,
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
                    "ignored files a command changed (build output, installed packages) are not recorded, but for the ones it created where nothing ignored stood (undo removes those)".to_string()
                }))
                .collect(),
            model: self.options.model.clone(),
            calls: tally.calls,
            input_tokens: tally.input,
            output_tokens: tally.output,
            cached_tokens: tally.cached,
            reasoning_tokens: tally.reasoning,
        };
        match plan.commit(history, &self.workspace, &record) {
            Ok(Some(info)) => {
                let branch = history.branch().unwrap_or_default().to_string();
                for w in &info.warnings {
                    frontend.event(&Event::Notice { text: w.clone() });
                }
                let short = info.short_id.clone();
                let snapshot = info.snapshot.as_ref().map(|id| {
                    format!(
                        "{branch} also holds a snapshot of your uncommitted edits made just before this plan ({}): the branch's review diff and merge include them; `pai undo` gives them back uncommitted",
                        id.get(..7).unwrap_or(id)
                    )
                });
                frontend.event(&Event::Committed {
                    commit: short.clone(),
                    branch,
                });
                if let Some(text) = snapshot {
                    frontend.event(&Event::Notice { text });
                }
                Ok(Some(short))
            }
            Ok(None) => Ok(None),
            // History does not hold the plan, so undo could not reach it: its files go back
            // as the user had them rather than stay changed outside history.
            Err(not) => {
                let NotCommitted { error: e, plan } = *not;
                Err(match plan.abandon(history, &self.workspace) {
                    Ok(a) if a.kept.is_empty() => format!(
                        "the plan could not be committed, so its changes were put back as you had them: {e}"
                    ),
                    Ok(a) => format!(
                        "the plan could not be committed, so its changes were put back as you had them, but for {} (changed since; kept as they are): {e}",
                        a.kept.join(", ")
                    ),
                    Err(back) => format!(
                        "the plan could not be committed ({e}), nor its changes put back yet ({back}): the next pai command puts them back"
                    ),
                })
            }
        }
    }
}

enum Attempt {
    Done(TurnOutcome),
    Amend(String, Tally),
}

/// What a plan commit records of the steps: one line per step run, and the failed steps the
/// turn left undone (a partly failed plan says so in its commit).
struct PlanSteps<'a> {
    lines: &'a [String],
    failed: Vec<String>,
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// Every project path the turn changed, for its outcome: the files (as committed), the
/// directories it created, and what RUN and TOOL changed.
fn changed_paths(changes: &[FileChange], side_effects: &BTreeSet<String>) -> Vec<String> {
    let mut set = touched_paths(changes);
    set.extend(
        changes
            .iter()
            .filter(|c| c.is_change() && matches!(c.kind, ChangeKind::DirCreated))
            .map(|c| format!("{}/", c.path.trim_end_matches('/'))),
    );
    set.extend(side_effects.iter().cloned());
    set.into_iter().collect()
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
            // When pai cuts the text here, its own mark (with the lines shown) replaces the
            // workspace's under the header.
            Some(view) if view.text.trim_end().len() > READ_CHARS => format!(
                "{}\n{}",
                context::truncate(first_line(&r.output), RESULT_CHARS),
                read_text(view, READ_CHARS)
            ),
            Some(view) => format!(
                "{}\n{}",
                context::truncate(r.output.trim_end(), RESULT_CHARS),
                read_text(view, READ_CHARS)
            ),
            None => context::truncate(r.output.trim_end(), RESULT_CHARS),
        };
        if !body.trim().is_empty() {
            out.push_str(body.trim_end());
            out.push('\n');
        }
    }
    out.push_str("Continue: reply with the remaining steps (or fix what failed), or intent \"chat\" if nothing is left to do.");
    out
}

/// A READ's text as the model gets it: whole when it fits `max`, else cut at a line's end and
/// marked with the lines shown and how to READ the rest.
fn read_text(view: &crate::agent::events::FileView, max: usize) -> String {
    let text = view.text.trim_end();
    if text.len() <= max {
        return text.to_string();
    }
    let cut = context::cut_point(text, max);
    let shown = &text[..cut];
    let last = view.first_line + shown.lines().count().saturating_sub(1);
    format!(
        "{shown}{}[... truncated: {} of {} bytes shown, lines {}-{last}; READ {} with \"lines\": \"{}-\" for the rest]",
        if shown.ends_with('\n') { "" } else { "\n" },
        cut,
        text.len(),
        view.first_line,
        view.path,
        last + 1,
    )
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

    fn can_ask(&self) -> bool {
        self.inner.can_ask()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::events::FileView;

    fn report(action: &str, output: String, view: Option<String>) -> StepReport {
        StepReport {
            index: 1,
            phase: 1,
            action: action.into(),
            target: "big.py".into(),
            ok: true,
            output,
            diff: None,
            file_view: view.map(|text| FileView {
                path: "big.py".into(),
                text,
                first_line: 1,
            }),
        }
    }

    /// A READ of a file several times a command's output cap reaches the model whole, so
    /// the lines to change at its end are seen; a command's output keeps its cap.
    #[test]
    fn a_read_shows_the_model_the_whole_file_a_command_its_capped_output() {
        let file: String = (1..=800).map(|i| format!("line_{i:04} = {i}\n")).collect();
        assert!(file.len() > 2 * RESULT_CHARS && file.len() < READ_CHARS);
        let read = results_message(&[report("READ", "read big.py".into(), Some(file))], 1);
        assert!(
            read.contains("line_0800 = 800"),
            "{}",
            &read[read.len() - 300..]
        );
        assert!(!read.contains("truncated"));
        let noisy: String = (1..=800).map(|i| format!("out {i:04}\n")).collect();
        let run = results_message(&[report("RUN", noisy, None)], 1);
        assert!(run.contains("truncated"));
        assert!(!run.contains("out 0800"));
    }

    /// A READ longer than the model's share is cut at a line's end, and the mark names the
    /// lines shown and the range to READ next, counted from where a ranged READ started.
    #[test]
    fn a_cut_read_names_the_lines_shown_and_where_to_read_on() {
        let file: String = (1..=9000).map(|i| format!("line_{i:05} = {i}\n")).collect();
        let shown = results_message(
            &[report("READ", "read big.py (9 bytes)".into(), Some(file))],
            1,
        );
        let last = shown
            .lines()
            .rfind(|l| l.starts_with("line_"))
            .unwrap()
            .to_string();
        let n: usize = last[5..10].parse().unwrap();
        assert!(shown.len() < READ_CHARS + 1_000);
        assert!(
            shown.contains(&format!(
                "lines 1-{n}; READ big.py with \"lines\": \"{}-\" for the rest]",
                n + 1
            )),
            "{}",
            &shown[shown.len() - 300..]
        );
        let mut ranged = report(
            "READ",
            "read big.py lines 5000-9000 of 9000 (9 bytes)".into(),
            None,
        );
        ranged.file_view = Some(FileView {
            path: "big.py".into(),
            text: (5000..=9000)
                .map(|i| format!("line_{i:05} = {i}\n"))
                .collect(),
            first_line: 5000,
        });
        let shown = results_message(&[ranged], 1);
        let last = shown
            .lines()
            .rfind(|l| l.starts_with("line_"))
            .unwrap()
            .to_string();
        let n: usize = last[5..10].parse().unwrap();
        assert!(
            shown.contains(&format!(
                "lines 5000-{n}; READ big.py with \"lines\": \"{}-\"",
                n + 1
            )),
            "{shown:.300}"
        );
    }
}
