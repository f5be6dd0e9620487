//! `pai run REQUEST`: one turn without a terminal UI (text or `--json` events).

use std::io::IsTerminal;

use crate::agent::events::{Frontend, TurnStatus};
use crate::agent::task::{self, Op};
use crate::cli::assemble::{Resume, Start, assemble, runtime, turn_exit_code};
use crate::cli::worktree::{self, Entered};
use crate::config::{Env, Settings};
use crate::error::Error;
use crate::ui::Appearance;
use crate::ui::json::JsonFrontend;
use crate::ui::output::Output;
use crate::ui::text::TextFrontend;

/// Where a `pai run` turn runs: a session it continues, or the worktree session pai entered.
pub struct Place {
    /// The session to continue (`--continue`).
    pub resume: Option<Resume>,
    /// The worktree session (`-w`), pai already inside its worktree.
    pub entered: Option<Entered>,
}

/// What a dry run says at its end: `--plan` asked for one, or nobody can approve the plan
/// (`None`: plans are carried out).
fn dry_run_note(plan_only: bool, nobody_approves: bool) -> Option<String> {
    if plan_only {
        Some("dry run (--plan): the plan above was not carried out; run again without --plan to carry it out".to_string())
    } else if nobody_approves {
        Some("not carried out: there is no terminal to approve the plan at; pass --yes to carry it out (--allow-run for its RUN commands), or --plan to only see plans".to_string())
    } else {
        None
    }
}

/// `pai run "<request>"`: one turn, no terminal needed.
pub fn run_once(
    settings: &Settings,
    env: &Env,
    out: &Output,
    request: &str,
    json: bool,
    place: Place,
    plan_only: bool,
) -> Result<i32, Error> {
    let Place { resume, entered } = place;
    if request.trim().is_empty() {
        return Err(Error::usage("the request is empty")
            .with_hint("pai run \"add a power operation to calculator.py\""));
    }
    let rt = runtime()?;
    // Without --yes a plan needs someone to approve it; with no terminal to ask at (or
    // --json, which never asks) the turn is a dry run: the plan is shown, nothing carried out.
    let nobody_to_ask = json || !std::io::stdin().is_terminal();
    // A dry run touches nothing in .git, not even pai's own pruning pass.
    let dry = plan_only || (!settings.yes && nobody_to_ask);
    let linked = entered.as_ref().map(|e| e.linked().clone());
    let start = Start {
        stream: false,
        resume,
        housekeeping: !dry,
        linked: linked.as_ref(),
        request_known: true,
    };
    let mut assembled = match assemble(settings, out, start) {
        Ok(assembled) => assembled,
        Err(e) => {
            // The session never started: its worktree goes with it.
            if let Some(entered) = entered {
                worktree::finish(entered, None, out);
            }
            return Err(e);
        }
    };
    assembled
        .agent
        .set_dry_run(dry_run_note(plan_only, !settings.yes && nobody_to_ask));
    let frontend: Box<dyn Frontend> = if json {
        Box::new(JsonFrontend::new())
    } else {
        Box::new(TextFrontend::new(Appearance::from_env(env)))
    };
    // The agent runs as a task; this command is one more frontend of its protocol: it sends
    // the request, renders the events, answers the questions, and sends an interrupt on a
    // signal.
    let (outcome, mut agent) = rt.block_on(async {
        let mut handle = task::spawn(assembled.agent);
        // Ctrl+C, SIGTERM and SIGHUP stop the turn rather than the process: the turn unwinds
        // (a running command is stopped, a commit under way finishes and releases the index
        // lock), so a script's timeout or a closed terminal never leaves `.git/index.lock`.
        let ops = handle.ops.clone();
        // A second signal while the first is still unwinding the turn ends the process.
        crate::hard_stop::install();
        let signals = tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                if tokio::signal::ctrl_c().await.is_ok() {
                    let _ = ops.send(Op::Interrupt);
                }
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            let _ = ops.send(Op::Interrupt);
        });
        let _ = handle.ops.send(Op::UserTurn(request.to_string()));
        let outcome = task::drive(&mut handle, frontend.as_ref()).await;
        signals.abort();
        let _ = handle.ops.send(Op::Shutdown);
        let agent = handle
            .done
            .await
            .map_err(|e| Error::failed(format!("the agent stopped unexpectedly: {e}")))?;
        let outcome =
            outcome.ok_or_else(|| Error::failed("the agent stopped before the turn ended"))?;
        Ok::<_, Error>((outcome, agent))
    })?;
    let summary = agent.take_history().map(|session| session.finish());
    // The session's lock is released with it; the worktree (and the workspace over it) may go.
    drop(agent);
    match (entered, &summary) {
        (Some(entered), _) => worktree::finish(entered, summary.as_ref(), out),
        (None, Some(summary)) if !json && summary.plans > 0 => {
            out.note(&crate::ui::session_end::session_end_text(summary))
        }
        _ => {}
    }
    if outcome.status == TurnStatus::Planned && !plan_only {
        // The request was not done: a script must not take this for success.
        return Ok(1);
    }
    Ok(turn_exit_code(&outcome))
}
