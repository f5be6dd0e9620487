//! What the agent tells its frontend (events) and asks of it (approvals). The agent never
//! prints; the interactive UI, `pai run`'s text and JSON printers, and tests all implement
//! [`Frontend`].

use serde::Serialize;

use super::context::TurnMemo;
use super::plan::{Analysis, Complexity, PlannedStep};

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallUsage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens served from the provider's cache.
    pub cached: u64,
    /// Output tokens spent reasoning.
    pub reasoning: u64,
    /// The server did not report this call's usage (a stream from a server that ignores
    /// `stream_options`): the counts above are unknown, not zero.
    #[serde(skip_serializing_if = "is_false")]
    pub unknown: bool,
    /// The call gave no usable reply (its tokens are billed all the same).
    #[serde(skip_serializing_if = "is_false")]
    pub failed: bool,
}

/// Serde's test for leaving a `false` flag out.
fn is_false(b: &bool) -> bool {
    !*b
}

/// Serde's test for leaving a zero count out.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// A chat answer was given.
    Answered,
    /// Every step that acts (changes files, runs a command, calls a tool) succeeded, or was
    /// redone successfully, or was given up by the model with a reason it stated.
    Success,
    /// A step that acts failed and was neither redone nor given up with a reason; or the plan
    /// stopped at a failure with no phase left to answer it; or the model could not produce a
    /// usable plan, or the plan's changes could not be committed.
    Failed,
    /// The user declined the plan.
    Rejected,
    /// A step needs an approval nobody could give (no terminal to ask at, and no flag or
    /// setting covering it): nothing of the plan was carried out.
    NotApproved,
    /// A dry run (`pai run --plan`): the plan was shown and not carried out.
    Planned,
    /// The user interrupted the turn.
    Interrupted,
}

/// One step's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// 1-based number within the phase.
    pub index: usize,
    /// Phase the step belongs to.
    pub phase: u32,
    /// The action (`WRITE`).
    pub action: String,
    /// What it acted on.
    pub target: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Output or error message, as shown to the user (and, capped, to the model).
    pub output: String,
    /// A unified diff of what changed, when a file changed.
    pub diff: Option<String>,
    /// A file's text to show (READ), for syntax highlighting by the frontend.
    pub file_view: Option<FileView>,
}

/// A failed step the turn's outcome names: one that acts (see [`TurnStatus::Success`]) and
/// that no later step redid on the same target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedStep {
    /// The phase it ran in.
    pub phase: u32,
    /// Its 1-based number within that phase.
    pub index: usize,
    /// The action (`MODIFY`).
    pub action: String,
    /// What it acted on (first line).
    pub target: String,
    /// Why it failed (first line of its error).
    pub error: String,
}

/// What a turn's steps came to, computed from the steps and never from the model's last word:
/// the failed steps left undone, those the model gave up with a reason, and the files changed.
/// Part of [`Event::Finished`] (its fields appear in the `finished` JSON object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TurnResult {
    /// Failed steps not redone and not given up: any makes the turn [`TurnStatus::Failed`].
    pub failed_steps: Vec<FailedStep>,
    /// Failed steps the model gave up in its closing message, naming each and saying why.
    pub given_up: Vec<FailedStep>,
    /// Project paths the turn created, changed or removed (RUN and TOOL side effects
    /// included), sorted.
    pub changed: Vec<String>,
}

/// A file's contents for display.
#[derive(Debug, Clone, Serialize)]
pub struct FileView {
    /// Relative path (its extension picks the highlighting).
    pub path: String,
    /// The text.
    pub text: String,
    /// The file's line number of the text's first line (1 unless a range was read).
    pub first_line: usize,
}

/// Everything the agent reports, in order. A session starts with [`Event::SessionStarted`];
/// each turn with [`Event::TurnStarted`] and ends with exactly one [`Event::Finished`]; each
/// step it carries out goes [`Event::StepStarted`], then (a RUN) [`Event::RunStarted`] and its
/// [`Event::RunOutput`] lines, then [`Event::Step`] with the result.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The session began, or a later process took it up again (`continued`). The first event
    /// a session emits, before any turn.
    SessionStarted {
        /// The project root.
        root: String,
        /// The provider (`gemini`, `openai`, `anthropic`).
        provider: String,
        /// The model.
        model: String,
        /// The session branch, when the session records history.
        branch: Option<String>,
        /// Whether an earlier process started this session.
        continued: bool,
    },
    /// The agent took a request up (the acknowledgment), before any model call. A request the
    /// user amended in answer to a plan starts again with `amended` set.
    TurnStarted {
        /// The request, as the agent will send it.
        request: String,
        /// Whether it replaces the request of the plan just declined.
        amended: bool,
    },
    /// A model call started (frontends show a spinner).
    Thinking {
        /// The phase it belongs to.
        phase: u32,
    },
    /// Streamed text of a chat answer or acknowledgment.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A model call finished.
    Usage {
        /// Call number within the turn.
        call: u32,
        /// Its usage.
        #[serde(flatten)]
        usage: CallUsage,
    },
    /// The answer to a chat message.
    Answer {
        /// The text.
        text: String,
    },
    /// A plan to show (and, in phase 1, to approve).
    Plan {
        /// The phase.
        phase: u32,
        /// The acknowledgment.
        reply: String,
        /// The analysis.
        analysis: Analysis,
        /// Complexity, for the plan header.
        complexity: Complexity,
        /// The steps.
        steps: Vec<PlannedStep>,
        /// Whether the model will look at results before continuing.
        observe: bool,
    },
    /// A step begins; a question about it (RUN, RM, TOOL), if it needs one, comes next, and
    /// its result as [`Event::Step`] with the same phase and index.
    StepStarted {
        /// The phase of the step.
        phase: u32,
        /// The step's number within the phase.
        index: usize,
        /// The action (`WRITE`).
        action: String,
        /// What it acts on.
        target: String,
    },
    /// A step finished.
    Step(StepReport),
    /// A RUN command was approved and started; its output follows as [`Event::RunOutput`] and
    /// its result as the step's [`Event::Step`].
    RunStarted {
        /// The phase of the step.
        phase: u32,
        /// The step's number within the phase.
        index: usize,
        /// The command.
        command: String,
    },
    /// One line a running command printed (stdout and stderr interleaved), as it arrived,
    /// secrets redacted. Every line comes here; what the model reads is capped.
    RunOutput {
        /// The phase of the step.
        phase: u32,
        /// The step's number within the phase.
        index: usize,
        /// The line, without its newline.
        line: String,
    },
    /// The repository map is reading files it has not seen (a cold map of a big project):
    /// `done` of `total` read so far. Frontends show it as progress; the log ignores it.
    Mapping {
        /// Files read.
        done: usize,
        /// Files to read.
        total: usize,
    },
    /// Something the user should know that is not a failure.
    Notice {
        /// The text.
        text: String,
    },
    /// The plan was recorded as a commit.
    Committed {
        /// Commit id (abbreviated).
        commit: String,
        /// The branch it is on.
        branch: String,
    },
    /// What the session remembers of a turn, for the model's context in later turns and for
    /// a continued session (which reads it back from the session log). Emitted when a turn
    /// ends, and when a session starts with an earlier one's memory.
    Remembered {
        /// The memory of one turn.
        memo: TurnMemo,
    },
    /// The session's memory was cleared (`/clear`): later turns, and a continued session, do
    /// not get back what was remembered before.
    MemoryCleared,
    /// The turn is over.
    Finished {
        /// How it ended: the verdict, computed from the steps (see [`TurnResult`]).
        status: TurnStatus,
        /// The final message: the model's own (its FINISH message, or the answer of a later
        /// phase that only talks) when it gave one, else what ended the turn.
        message: String,
        /// Suggestions from the model.
        next_steps: Vec<String>,
        /// Model calls this turn.
        calls: u32,
        /// Input tokens this turn.
        input_tokens: u64,
        /// Output tokens this turn.
        output_tokens: u64,
        /// Input tokens this turn served from the provider's cache.
        cached_tokens: u64,
        /// Output tokens this turn spent reasoning.
        reasoning_tokens: u64,
        /// Calls whose usage the server did not report: the token counts are a lower bound.
        #[serde(skip_serializing_if = "is_zero")]
        calls_without_usage: u32,
        /// Whether a verification RUN passed (`None`: none ran).
        verified: Option<bool>,
        /// What the steps came to: failed steps, steps given up, files changed.
        #[serde(flatten)]
        result: TurnResult,
    },
}

/// The user's answer to a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Carry it out.
    Yes,
    /// Don't.
    No,
    /// Start over with this amended request.
    Amend(String),
    /// Carry it out without these steps (1-based numbers).
    Drop(Vec<usize>),
}

/// A RUN command waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunQuestion {
    /// The command.
    pub command: String,
    /// Whether it will run under the sandbox.
    pub confined: bool,
    /// The allow-list rule an "always" answer adds; `None` when "always" is not offered (the
    /// command chains or redirects, or it would run unconfined).
    pub rule: Option<String>,
    /// Whether the rule can also be saved to the user's config.toml (a configuration
    /// directory exists).
    pub can_save: bool,
}

/// The user's answer to a RUN question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAnswer {
    /// Run it.
    Yes,
    /// Don't.
    No,
    /// Run it, and the rest of this session's commands the rule covers without asking.
    Always,
    /// Like [`RunAnswer::Always`], and save the rule to config.toml for later sessions.
    Save(RuleScope),
    /// Run this command instead (the user edited it).
    Edit(String),
}

/// A TOOL step waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolQuestion {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments, as pretty JSON (shortened when long).
    pub arguments: String,
    /// The server comes from the project's `.mcp.json`, not the user's config.
    pub from_project: bool,
}

/// The user's answer to a TOOL question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAnswer {
    /// Call it.
    Yes,
    /// Don't.
    No,
    /// Call it, and this tool again without asking for the rest of the session.
    Always,
}

pub use crate::mcp::TrustRequest;

/// Where a saved rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// This project only.
    Project,
    /// Every project of this user.
    User,
}

/// A frontend: receives events and answers approval questions. Approval calls may block (a
/// terminal prompt); the agent calls them outside the async executor's hot path.
pub trait Frontend: Send + Sync {
    /// Receive one event.
    fn event(&self, event: &Event);
    /// Approve the plan of phase 1 (later phases that change files ask again).
    fn approve_plan(&self, steps: &[PlannedStep]) -> Approval;
    /// Approve one RUN command: render the question, return the user's answer. Which answers
    /// are offered (and what they mean) is the agent's decision, carried by `question`.
    fn approve_run(&self, question: &RunQuestion) -> RunAnswer;
    /// Confirm an RM (`recursive`: a non-empty directory).
    fn confirm_rm(&self, path: &str, recursive: bool) -> bool;
    /// Whether this frontend can ask the user at all (a terminal to ask at); when it cannot,
    /// every question is declined, and the agent says so before carrying out anything.
    fn can_ask(&self) -> bool {
        true
    }
    /// Approve one TOOL call (`y` / `n` / `a`lways for this tool). Frontends that cannot ask
    /// decline.
    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        let _ = question;
        ToolAnswer::No
    }
    /// Whether the user trusts a project's `.mcp.json`, so its servers may start. Only a
    /// frontend that can ask a person answers yes; `--yes` never does.
    fn trust_mcp(&self, question: &TrustRequest) -> bool {
        let _ = question;
        false
    }
}

/// Calls and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Model calls.
    pub calls: u32,
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens served from the provider's cache.
    pub cached: u64,
    /// Output tokens spent reasoning.
    pub reasoning: u64,
    /// Calls whose usage the server did not report (their tokens are not in the counts).
    pub unmetered: u32,
}

impl Tally {
    /// Add another tally to this one.
    pub fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.input += other.input;
        self.output += other.output;
        self.cached += other.cached;
        self.reasoning += other.reasoning;
        self.unmetered += other.unmetered;
    }
}

/// The result of one turn, for the caller's exit code.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// How it ended.
    pub status: TurnStatus,
    /// Calls and tokens it used.
    pub tally: Tally,
    /// The commit that records it, if any.
    pub commit: Option<String>,
    /// Set when the turn failed on the configuration (a refused key, an unknown model, a spent
    /// quota): what to fix. Such a turn exits 2, like the same error from `pai config validate`.
    pub config_hint: Option<String>,
}
