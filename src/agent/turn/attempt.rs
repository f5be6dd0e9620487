//! One attempt at a request, in the stages it goes through, top to bottom: the context is
//! built ([`Agent::begin`]), the model is called and its reply validated as a plan, with one
//! correction when it is unusable ([`Agent::obtain_plan`]); the plan is shown and admitted or
//! refused (chat answer, dry run, read-only session, approval, the user's versions saved:
//! [`Agent::admit`]); its steps run as one phase, after which the model may see the results
//! and plan again or repair what failed ([`Agent::run_phase`]); and the turn concludes with
//! its commit, its memo and the final event ([`Agent::conclude`]).

use std::collections::BTreeSet;

use tokio_util::sync::CancellationToken;

use super::call::CallFailure;
use super::outcome::Ledger;
use super::{
    Agent, Attempt, ECHO_CHARS, MAX_PHASES, PlanSteps, WorkspaceView, blocking, changed_paths,
    compact_reply, first_line, results_message, touched_paths,
};
use crate::agent::context::{self, TurnMemo};
use crate::agent::events::{Approval, Event, Frontend, Tally, TurnOutcome, TurnStatus};
use crate::agent::plan::{self, Intent, Plan};
use crate::agent::repo_map::MapView;
use crate::history::Session;
use crate::llm::Message;
use crate::workspace::FileChange;

/// What a stage says to do next.
pub(super) enum Flow<T> {
    /// Go on with this.
    Go(T),
    /// Call the model again (a correction or another phase).
    Again,
    /// The turn is over; the state says how it ended.
    Stop,
}

/// Everything an attempt accumulates across its calls and phases.
pub(super) struct TurnState {
    tally: Tally,
    messages: Vec<Message>,
    phase: u32,
    /// The one correction of an unusable reply or plan was asked for.
    corrected: bool,
    /// A failed verification was already given one repair phase.
    repaired: bool,
    changes: Vec<FileChange>,
    side_effects: BTreeSet<String>,
    /// One line per step run, for the commit message.
    step_lines: Vec<String>,
    /// The failed steps that decide the turn's status (see `outcome`).
    ledger: Ledger,
    verified: Option<bool>,
    next_steps: Vec<String>,
    final_message: String,
    status: TurnStatus,
    config_hint: Option<String>,
    /// The user amended the request at the plan's approval: start over with it.
    amended: Option<String>,
    /// The user dropped steps at the plan's approval: the plan that runs instead.
    reduced: Option<Plan>,
}

impl TurnState {
    /// End the turn with `status` and `message`.
    fn end<T>(&mut self, status: TurnStatus, message: impl Into<String>) -> Flow<T> {
        self.status = status;
        self.final_message = message.into();
        Flow::Stop
    }
}

impl Agent {
    /// Run one attempt at `request`: see the module documentation for its stages.
    pub(super) async fn attempt(
        &mut self,
        request: &str,
        amended: bool,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Attempt {
        let mut st = self.begin(request, amended, frontend);
        loop {
            let plan = match self.obtain_plan(&mut st, frontend, cancel).await {
                Flow::Go(plan) => plan,
                Flow::Again => continue,
                Flow::Stop => break,
            };
            match self.admit(&mut st, &plan, frontend) {
                Flow::Go(()) => {}
                Flow::Again => continue,
                Flow::Stop => break,
            }
            if let Some(amended) = st.amended.take() {
                return Attempt::Amend(amended, st.tally);
            }
            let plan = st.reduced.take().unwrap_or(plan);
            match self.run_phase(&mut st, &plan, frontend, cancel).await {
                Flow::Again => continue,
                Flow::Go(()) | Flow::Stop => break,
            }
        }
        Attempt::Done(self.conclude(request, st, frontend))
    }

    /// The acknowledgment, then the context: the request with the project's files, the
    /// session's memory and where the user is.
    fn begin(&mut self, request: &str, amended: bool, frontend: &dyn Frontend) -> TurnState {
        self.workspace.begin_plan();
        // One plan per turn: an amended request goes on with the plan its first attempt
        // began (the user's versions it saved stay its own).
        if self.plan.is_none() {
            self.plan = self.history.as_ref().map(Session::begin_plan);
        }
        self.tool_changed.clear();
        frontend.event(&Event::TurnStarted {
            request: request.to_string(),
            amended,
        });
        let project = MapView::new(&self.workspace, frontend, crate::map::DEFAULT_TIME_BUDGET)
            .with_listing(self.listing_soon.take());
        let first = context::build_in(
            request,
            &project,
            &self.memory,
            &self.options.budget,
            self.options.subdir.as_deref(),
        );
        // The listing and the map are gone with `project`: their freed megabytes need not stay
        // resident while the plan runs (see `heap`).
        drop(project);
        crate::heap::release_freed();
        TurnState {
            tally: Tally::default(),
            messages: vec![Message::user(first)],
            phase: 1,
            corrected: false,
            repaired: false,
            changes: Vec::new(),
            side_effects: BTreeSet::new(),
            step_lines: Vec::new(),
            ledger: Ledger::default(),
            verified: None,
            next_steps: Vec::new(),
            final_message: String::new(),
            status: TurnStatus::Success,
            config_hint: None,
            amended: None,
            reduced: None,
        }
    }

    /// Call the model and validate its reply as a plan. An unusable reply or an invalid plan
    /// gets one correction (models usually fix what they are told); nothing of an invalid
    /// plan ever runs.
    async fn obtain_plan(
        &mut self,
        st: &mut TurnState,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Flow<Plan> {
        let reply = match self
            .call(&st.messages, frontend, cancel, &mut st.tally, st.phase)
            .await
        {
            Ok(r) => r,
            Err(CallFailure::Cancelled) => {
                return st.end(
                    TurnStatus::Interrupted,
                    "interrupted while waiting for the model",
                );
            }
            Err(CallFailure::Failed(msg, Some(correction))) if !st.corrected => {
                st.corrected = true;
                frontend.event(&Event::Notice {
                    text: format!("{msg}; asking the model once for a corrected reply"),
                });
                st.messages.push(Message::assistant("(an unusable reply)"));
                st.messages.push(Message::user(correction));
                return Flow::Again;
            }
            Err(CallFailure::Config(msg, hint)) => {
                st.config_hint = Some(hint.clone());
                return st.end(TurnStatus::Failed, format!("{msg}\nhint: {hint}"));
            }
            Err(CallFailure::Failed(msg, _)) => return st.end(TurnStatus::Failed, msg),
        };
        let probe = WorkspaceView(&self.workspace, self.mcp.as_ref());
        match plan::parse_plan(&reply.value, &probe) {
            Ok(plan) => {
                // The reply's text is shown only now that the plan is valid.
                if !plan.reply.is_empty() {
                    frontend.event(&Event::TextDelta {
                        text: plan.reply.clone(),
                    });
                }
                Flow::Go(plan)
            }
            Err(e) if !st.corrected => {
                st.corrected = true;
                frontend.event(&Event::Notice {
                    text: format!(
                        "the model's plan was rejected ({e}); asking it once to correct it"
                    ),
                });
                st.messages.push(Message::assistant(context::truncate(
                    &reply.raw, ECHO_CHARS,
                )));
                st.messages.push(Message::user(format!(
                    "Your reply was rejected and nothing was run: {e}\nReply again with the complete corrected JSON object."
                )));
                Flow::Again
            }
            Err(e) => {
                let message = format!("the model's plan was invalid, so nothing was run: {e}");
                st.end(TurnStatus::Failed, message)
            }
        }
    }

    /// Show the plan and decide whether it runs: a chat answer ends the turn, a dry run stops
    /// after showing it, a read-only session refuses changes, the user approves it (or amends
    /// the request), and the user's current versions of the files it writes are saved first.
    fn admit(&mut self, st: &mut TurnState, plan: &Plan, frontend: &dyn Frontend) -> Flow<()> {
        if !plan.next_steps.is_empty() {
            st.next_steps = plan.next_steps.clone();
        }
        if plan.intent == Intent::Chat {
            if st.phase == 1 && st.changes.is_empty() {
                frontend.event(&Event::Answer {
                    text: plan.reply.clone(),
                });
                if let Some(message) = words_instead_of_changes(plan) {
                    return st.end(TurnStatus::Failed, message);
                }
                return st.end(TurnStatus::Answered, plan.reply.clone());
            }
            // A later phase that only talks: the turn ends as its steps left it, unless its
            // words give a failed step up.
            st.ledger.closing_words(st.phase, &plan.reply);
            st.final_message = plan.reply.clone();
            return Flow::Stop;
        }
        // Shown with what each WRITE and MODIFY would change, before anything is approved.
        let mut shown = self.preview_steps(&plan.steps);
        self.mark_snapshots(&mut shown);
        frontend.event(&Event::Plan {
            phase: st.phase,
            reply: plan.reply.clone(),
            analysis: plan.analysis.clone(),
            complexity: plan.analysis.complexity,
            steps: shown.clone(),
            observe: plan.observe,
        });
        if let Some(message) = &self.options.dry_run {
            return st.end(TurnStatus::Planned, message.clone());
        }
        let mutating = plan.steps.iter().any(|s| s.step.mutates());
        if mutating
            && let Some(reason) = self
                .history
                .as_ref()
                .and_then(|h| h.read_only_reason().map(str::to_string))
        {
            return st.end(
                TurnStatus::Failed,
                format!("this session is read-only ({reason}), so the plan was not carried out"),
            );
        }
        if (st.phase == 1 || mutating) && !self.options.yes {
            let declined = "plan declined; nothing was changed by it";
            match blocking(|| frontend.approve_plan(&shown)) {
                Approval::Yes => {}
                Approval::No => return st.end(TurnStatus::Rejected, declined),
                Approval::Amend(text) if !text.trim().is_empty() && st.changes.is_empty() => {
                    st.amended = Some(text);
                    return Flow::Go(());
                }
                Approval::Amend(_) => return st.end(TurnStatus::Rejected, declined),
                Approval::Drop(numbers) => return self.drop_steps(st, plan, &numbers, frontend),
            }
        }
        if let Some(flow) = self.nobody_to_ask(st, plan, frontend) {
            return flow;
        }
        self.save_users_versions(st, plan)
    }

    /// The user approved the plan without some of its steps: the rest runs (a FINISH is
    /// kept), and nothing runs when every step that does something was dropped.
    fn drop_steps(
        &mut self,
        st: &mut TurnState,
        plan: &Plan,
        numbers: &[usize],
        frontend: &dyn Frontend,
    ) -> Flow<()> {
        let mut reduced = plan.clone();
        reduced.steps = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(i, _)| !numbers.contains(&(i + 1)))
            .map(|(_, s)| s.clone())
            .collect();
        let mut listed: Vec<String> = numbers
            .iter()
            .filter(|n| **n <= plan.steps.len())
            .map(usize::to_string)
            .collect();
        listed.dedup();
        frontend.event(&Event::Notice {
            text: format!("dropped step {} as asked", listed.join(", ")),
        });
        if !reduced
            .steps
            .iter()
            .any(|s| !matches!(s.step, plan::Step::Finish { .. }))
        {
            return st.end(
                TurnStatus::Rejected,
                "every step was dropped; nothing was changed",
            );
        }
        if let Some(flow) = self.nobody_to_ask(st, &reduced, frontend) {
            return flow;
        }
        let flow = self.save_users_versions(st, &reduced);
        st.reduced = Some(reduced);
        flow
    }

    /// With `--yes` and nobody to ask (no terminal, or `--json`): a plan with a step that
    /// needs approval is not carried out at all, and the turn says which flag would allow
    /// it, instead of running half of it and spending calls on a repair that cannot help.
    fn nobody_to_ask(
        &mut self,
        st: &mut TurnState,
        plan: &Plan,
        frontend: &dyn Frontend,
    ) -> Option<Flow<()>> {
        // Without --yes the plan itself was approved by someone, or not carried out. The
        // frontend is asked last: across the task that is a question of the protocol.
        if !self.options.yes {
            return None;
        }
        let blocked = self.unaskable_steps(&plan.steps);
        if blocked.is_empty() || frontend.can_ask() {
            return None;
        }
        let scope = if st.phase == 1 {
            "nothing was carried out".to_string()
        } else {
            format!("the steps of phase {} were not carried out", st.phase)
        };
        let lines: Vec<String> = blocked.iter().map(|(w, r)| format!("{w}: {r}")).collect();
        // The remedy doubles as the hint a script's author reads, and makes the exit code 2:
        // the invocation lacks a flag, nothing failed.
        st.config_hint = blocked.into_iter().next().map(|(_, remedy)| remedy);
        Some(st.end(
            TurnStatus::NotApproved,
            format!(
                "not approved: there is no terminal to ask at, so {scope}\n{}",
                lines.join("\n")
            ),
        ))
    }

    /// Before a plan writes files, history records the user's uncommitted versions of them,
    /// so undo gives them back; when that fails nothing runs.
    fn save_users_versions(&mut self, st: &mut TurnState, plan: &Plan) -> Flow<()> {
        let (Some(history), Some(under_way)) = (self.history.as_mut(), self.plan.as_mut()) else {
            return Flow::Go(());
        };
        let paths: Vec<String> = plan
            .steps
            .iter()
            .flat_map(|s| s.step.written_paths())
            .filter_map(|p| self.workspace.check(p).ok())
            .map(|p| p.as_str().to_string())
            .collect();
        if !paths.is_empty()
            && let Err(e) = under_way.prepare(history, &self.workspace, &paths)
        {
            return st.end(
                TurnStatus::Failed,
                format!(
                    "could not save your current versions of the files before changing them, so nothing was run: {e}"
                ),
            );
        }
        Flow::Go(())
    }

    /// Run the plan's steps as one phase, then decide: another phase when the model asked to
    /// see results or a failure it can fix needs repair (a failed verification gets one), or
    /// the end of the turn.
    async fn run_phase(
        &mut self,
        st: &mut TurnState,
        plan: &Plan,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Flow<()> {
        let (reports, outcome) = self
            .execute(
                plan,
                st.phase,
                frontend,
                cancel,
                &mut st.changes,
                &mut st.side_effects,
            )
            .await;
        for r in &reports {
            st.step_lines.push(format!(
                "{} {}: {}",
                r.action,
                first_line(&r.target),
                if r.ok { "ok" } else { "FAILED" }
            ));
            // A report's index is its step's 1-based place in the plan.
            if let Some(planned) = r.index.checked_sub(1).and_then(|i| plan.steps.get(i)) {
                st.ledger.note(&planned.step, r);
            }
        }
        if let Some(v) = outcome.verified {
            st.verified = Some(v);
        }
        if let Some(msg) = &outcome.finish_message {
            st.ledger.closing_words(st.phase, msg);
            st.final_message = msg.clone();
        }
        if outcome.interrupted {
            return st.end(
                TurnStatus::Interrupted,
                "interrupted; the steps already done are kept",
            );
        }
        // A report's index is its step's 1-based place in the plan.
        let observed = plan.observe
            && reports.iter().any(|r| {
                r.ok && r
                    .index
                    .checked_sub(1)
                    .and_then(|i| plan.steps.get(i))
                    .is_some_and(|s| s.step.observes())
            });
        let repair = outcome.fixable_failure && !(outcome.failed_verification && st.repaired);
        let wants_more = observed || repair;
        if wants_more && st.phase < MAX_PHASES {
            if outcome.failed_verification {
                st.repaired = true;
            }
            st.messages.push(Message::assistant(compact_reply(plan)));
            let mut results = results_message(&reports, st.phase);
            if let Some(note) = st.ledger.repair_note() {
                results.push('\n');
                results.push_str(&note);
            }
            st.messages.push(Message::user(results));
            st.phase += 1;
            return Flow::Again;
        }
        let stopped = if wants_more {
            format!(" (stopped after {MAX_PHASES} phases)")
        } else {
            String::new()
        };
        if outcome.failed {
            let failure = outcome
                .failure_message
                .unwrap_or_else(|| "a step failed".into());
            return st.end(TurnStatus::Failed, format!("{failure}{stopped}"));
        }
        if plan.observe {
            // The model asked to see results before planning the rest, and the rest never came.
            return st.end(
                TurnStatus::Failed,
                format!("the model wanted to continue after seeing the results{stopped}"),
            );
        }
        Flow::Stop
    }

    /// The end of the turn: its status made honest, its commit, what the session remembers
    /// of it, and the final event.
    fn conclude(
        &mut self,
        request: &str,
        mut st: TurnState,
        frontend: &dyn Frontend,
    ) -> TurnOutcome {
        let owed = st.ledger.owed_lines();
        settle_status(&mut st);
        let steps = PlanSteps {
            lines: &st.step_lines,
            failed: owed.clone(),
        };
        let commit = match self.commit(
            request,
            &st.changes,
            &st.side_effects,
            steps,
            &st.tally,
            frontend,
        ) {
            Ok(commit) => commit,
            // The files changed but history does not hold the change: undo could not reach
            // it, so the turn failed, whatever its steps did.
            Err(text) => {
                st.status = TurnStatus::Failed;
                st.final_message = text;
                None
            }
        };
        let mut outcome = format!("{:?}: {}", st.status, first_line(&st.final_message));
        if !owed.is_empty() {
            outcome.push_str(&format!("; not done: {}", owed.join("; ")));
        }
        let memo = TurnMemo {
            request: request.to_string(),
            outcome,
            files: touched_paths(&st.changes).into_iter().collect(),
        };
        frontend.event(&Event::Remembered { memo: memo.clone() });
        self.memory.push(memo);
        // Suggestions were written for a plan that works out; after a failure they mislead.
        if !matches!(
            st.status,
            TurnStatus::Success | TurnStatus::Answered | TurnStatus::Planned
        ) {
            st.next_steps.clear();
        }
        let changed = changed_paths(&st.changes, &st.side_effects);
        let (status, tally) = (st.status, st.tally);
        frontend.event(&Event::Finished {
            status,
            message: st.final_message,
            next_steps: st.next_steps,
            calls: tally.calls,
            input_tokens: tally.input,
            output_tokens: tally.output,
            cached_tokens: tally.cached,
            reasoning_tokens: tally.reasoning,
            calls_without_usage: tally.unmetered,
            verified: st.verified,
            result: st.ledger.into_result(changed),
        });
        TurnOutcome {
            status,
            tally,
            commit,
            config_hint: st.config_hint,
        }
    }
}

/// The turn's status from what its steps did, not from the model's last word: a turn that
/// reached its end as a success while a failed step is still owed (neither redone nor given
/// up with a reason, see `outcome`) has failed, whatever the model said. A turn with nothing
/// to say for itself gets a message that says what happened.
fn settle_status(st: &mut TurnState) {
    if st.status == TurnStatus::Success && st.ledger.owes() {
        st.status = TurnStatus::Failed;
    }
    if st.final_message.is_empty() {
        st.final_message = match st.status {
            TurnStatus::Success => "done".into(),
            TurnStatus::Failed if st.ledger.owes() => "a step failed and was not redone".into(),
            _ => "the turn did not complete".into(),
        };
    }
}

/// A chat answer whose own analysis names files to create or modify: the model was asked for
/// a change and answered in words. Reported as a failure that says nothing was changed, never
/// as an answer (which exits 0 as if the request had been served).
fn words_instead_of_changes(plan: &Plan) -> Option<String> {
    let a = &plan.analysis;
    let named: Vec<&str> = a
        .files_to_create
        .iter()
        .chain(&a.files_to_modify)
        .map(|f| f.trim())
        .filter(|f| !f.is_empty())
        .collect();
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "nothing was changed: the model answered in words, though its own analysis names files to change ({}); its reply was not a valid plan. Ask again, or use a model that follows pai's reply format",
        named.join(", ")
    ))
}
