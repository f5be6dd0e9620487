//! The interactive session (`pai`, `pai auto`): a welcome panel, then `user> ` prompts until
//! the user leaves. Requests go to a [`SessionDriver`] (the CLI implements it around the agent);
//! slash commands call its other methods. Ctrl+C during a turn cancels it (the agent stops after
//! the current step, an in-flight model request is dropped); twice within 2 seconds ends the
//! session after the turn has stopped; at the prompt it clears the line like a shell does.
//! However the session ends, the driver's end-of-session summary is printed and the terminal is
//! left as it was found.
//!
//! The session must run on tokio's multi-threaded runtime: Ctrl+C is caught by a task that has
//! to run while the session's own task is blocked in a prompt.

mod commands;
mod frontend;
mod history_file;
mod input;
mod signals;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use self::commands::Command;
use self::frontend::{InteractiveFrontend, Settings};
use self::input::{LineInput, Read};
use self::signals::Interrupts;
use super::prompt::Asker;
use super::terminal::{TerminalGuard, set_echo};
use super::{Appearance, SessionInfo, render};
use crate::agent::protocol::{Frontend, Tally, TurnOutcome, TurnStatus};

/// Two Ctrl+C presses closer than this end the session.
pub const DOUBLE_PRESS: Duration = Duration::from_secs(2);
/// The prompt.
pub const PROMPT: &str = "user> ";

/// What the interactive session needs from the rest of pai: the CLI implements it around the
/// agent, the session's git branch and its settings.
pub trait SessionDriver: Send {
    /// What the welcome panel shows.
    fn info(&self) -> SessionInfo;
    /// Carry out one request, reporting to `frontend`; stop after the current step when
    /// `cancel` fires.
    fn turn<'a>(
        &'a mut self,
        request: &'a str,
        frontend: &'a dyn Frontend,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, TurnOutcome>;
    /// `/undo`: roll back the last plan; the text to show.
    fn undo(&mut self) -> Result<String, crate::error::Error>;
    /// `/redo`: re-apply the plan last undone; the text to show.
    fn redo(&mut self) -> Result<String, crate::error::Error>;
    /// `/log`: the session's plans; the text to show.
    fn log(&mut self) -> Result<String, crate::error::Error>;
    /// `/model NAME`: use another model; the text to show.
    fn set_model(&mut self, model: &str) -> String;
    /// `/clear`: forget the session memory.
    fn clear_memory(&mut self);
    /// Calls and tokens of the session so far.
    fn totals(&self) -> Tally;
    /// End the session: the summary to show (branch, plans, review/merge/discard commands).
    /// Releases the session (its lock); called exactly once.
    fn finish(&mut self) -> String;
}

/// How the session behaves.
#[derive(Debug, Clone, Default)]
pub struct InteractiveOptions {
    /// Colour and escape sequences allowed or not (from `NO_COLOR` / `TERM`); output is plain
    /// anyway when stdout is not a terminal.
    pub appearance: Appearance,
    /// The project's directory in the user's state directory, whose `input/history` keeps
    /// the input history (read and written without following links); `None`: not kept.
    pub history_root: Option<PathBuf>,
}

/// Run the session until the user leaves; returns the process exit code: 0, or 2 when a turn
/// ended on a configuration error (a refused key, an unknown model), as `pai run` does.
pub async fn run_interactive(driver: &mut dyn SessionDriver, opts: InteractiveOptions) -> i32 {
    let stdout_tty = std::io::stdout().is_terminal();
    let stdin_tty = std::io::stdin().is_terminal();
    let rich = stdout_tty && !opts.appearance.plain;
    // Held to the end of the session, after the goodbye: dropping it restores the terminal.
    let _terminal = TerminalGuard::install(rich);

    let history = opts
        .history_root
        .clone()
        .map(history_file::HistoryFile::new);
    let mut input = LineInput::new(rich && stdin_tty, history);
    let asker = asker_for(&input);
    let frontend = InteractiveFrontend::new(
        Settings {
            rich,
            truecolor: opts.appearance.truecolor,
        },
        asker,
    );
    let mut interrupts = Interrupts::listen();

    frontend.say(&render::welcome(
        &driver.info(),
        input.rich(),
        &frontend.theme(),
    ));
    frontend.say("\n");

    let config_failed = prompt_loop(driver, &mut input, &frontend, &mut interrupts).await;

    let totals = driver.totals();
    let summary = driver.finish();
    frontend.say(&render::goodbye(&summary, &totals, &frontend.theme()));
    if config_failed { 2 } else { 0 }
}

/// How approval questions are answered: in a dialog when the line editor owns the terminal,
/// else from the same line source as the requests (so piped answers are read in order), and
/// denied when there is no such source.
fn asker_for(input: &LineInput) -> Asker {
    if input.rich() {
        Asker::Dialog
    } else {
        match input.line_source() {
            Some(source) => Asker::Lines {
                source,
                to_stdout: true,
            },
            None => Asker::Deny,
        }
    }
}

/// Prompt, read, act, until end of input, `exit`, a double Ctrl+C or a turn that ends the
/// session. Returns whether it ended on a configuration error (exit code 2).
async fn prompt_loop(
    driver: &mut dyn SessionDriver,
    input: &mut LineInput,
    frontend: &InteractiveFrontend,
    interrupts: &mut Interrupts,
) -> bool {
    let mut last_press: Option<Instant> = None;
    let mut config_failed = false;
    loop {
        let line = match input.read(PROMPT, interrupts).await {
            Read::Eof => {
                frontend.say("\n");
                break;
            }
            Read::Interrupted(at) => {
                if within_double_press(last_press, at) {
                    break;
                }
                last_press = Some(at);
                continue;
            }
            Read::Line(line) => line,
        };
        let command = commands::parse(&line);
        // `exit` is left out so Up in the next session recalls the last real request.
        if !matches!(command, Command::Empty | Command::Exit) {
            input.remember(&line);
        }
        match command {
            Command::Empty => {}
            Command::Exit => break,
            Command::Request(request) => {
                let (quit, press) = run_turn(
                    driver,
                    &request,
                    frontend,
                    interrupts,
                    last_press,
                    &mut config_failed,
                )
                .await;
                last_press = press;
                if quit {
                    break;
                }
                frontend.say("\n");
            }
            command => answer_command(driver, frontend, command),
        }
    }
    config_failed
}

/// A slash command: answered at once, nothing is sent to the model.
fn answer_command(
    driver: &mut dyn SessionDriver,
    frontend: &InteractiveFrontend,
    command: Command,
) {
    let theme = frontend.theme();
    match command {
        Command::Help => frontend.say(&render::help(&theme)),
        Command::Undo => show(frontend, driver.undo()),
        Command::Redo => show(frontend, driver.redo()),
        Command::Log => show(frontend, driver.log()),
        Command::Model(None) => frontend.say(&render::message(
            &format!(
                "The model is {}. /model NAME switches to another.",
                driver.info().model
            ),
            &theme,
        )),
        Command::Model(Some(name)) => {
            let text = driver.set_model(&name);
            frontend.say(&render::message(&text, &theme));
        }
        Command::Clear => {
            driver.clear_memory();
            frontend.say(&render::message(
                "Session memory cleared: the next request starts afresh.",
                &theme,
            ));
        }
        Command::Tokens => frontend.say(&render::totals(&driver.totals(), &theme)),
        Command::Unknown(name) => frontend.say(&render::error(
            &format!("unknown command {name}"),
            Some("/help lists the commands"),
            &theme,
        )),
        // The prompt loop acts on these itself.
        Command::Empty | Command::Exit | Command::Request(_) => {}
    }
}

fn within_double_press(previous: Option<Instant>, now: Instant) -> bool {
    previous.is_some_and(|p| now.saturating_duration_since(p) <= DOUBLE_PRESS)
}

fn show(frontend: &InteractiveFrontend, result: Result<String, crate::error::Error>) {
    let theme = frontend.theme();
    match result {
        Ok(text) => frontend.say(&render::message(&text, &theme)),
        Err(e) => frontend.say(&render::error(e.message(), e.hint(), &theme)),
    }
}

/// One turn, with Ctrl+C handling. Returns whether the session should end and the time of the
/// last Ctrl+C press.
async fn run_turn(
    driver: &mut dyn SessionDriver,
    request: &str,
    frontend: &InteractiveFrontend,
    interrupts: &mut Interrupts,
    mut last_press: Option<Instant>,
    config_failed: &mut bool,
) -> (bool, Option<Instant>) {
    let cancel = CancellationToken::new();
    // Presses before the turn started do not cancel it.
    while interrupts.try_next().is_some() {}
    interrupts.arm(&cancel);
    frontend.begin_turn(&cancel);
    let quiet = frontend.rich();
    if quiet {
        set_echo(false);
    }

    let mut quit = false;
    let outcome = {
        let turn = driver.turn(request, frontend, &cancel);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                outcome = &mut turn => break outcome,
                at = interrupts.next() => {
                    // The listener has already cancelled the token.
                    cancel.cancel();
                    if within_double_press(last_press, at) {
                        if !quit {
                            quit = true;
                            frontend.say(&render::message(
                                "Ending the session once the current step stops…",
                                &frontend.theme(),
                            ));
                        }
                    } else {
                        frontend.say(&render::message(
                            "Stopping after the current step… (Ctrl+C again within 2 s ends the session)",
                            &frontend.theme(),
                        ));
                    }
                    last_press = Some(at);
                }
            }
        }
    };
    interrupts.disarm();
    let reported = frontend.end_turn();
    if quiet {
        set_echo(true);
    }
    if !reported {
        // The driver ended without the agent's final event (it failed before the model
        // answered, or was interrupted early): say how it ended.
        let theme = frontend.theme();
        let status = match outcome.status {
            TurnStatus::Interrupted => "Turn interrupted.",
            TurnStatus::Failed => "The turn failed.",
            TurnStatus::Rejected | TurnStatus::Planned | TurnStatus::NotApproved => {
                "The plan was not carried out."
            }
            TurnStatus::Success | TurnStatus::Answered => "",
        };
        if !status.is_empty() {
            frontend.say(&render::message(status, &theme));
        }
        frontend.say(&render::turn_summary(&outcome.tally, &theme));
    }
    if outcome.config_hint.is_some() {
        // Every later call would fail the same way: end the session (exit 2), as `pai run`
        // and `pai config validate` do for the same error.
        frontend.say(&render::message(
            "Ending the session: fix the configuration as the hint says, then start pai again.",
            &frontend.theme(),
        ));
        *config_failed = true;
        quit = true;
    }
    // Presses that arrived while a prompt blocked this task are counted now.
    while let Some(at) = interrupts.try_next() {
        if within_double_press(last_press, at) {
            quit = true;
        }
        last_press = Some(at);
    }
    (quit, last_press)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_press_window() {
        let t0 = Instant::now();
        assert!(!within_double_press(None, t0));
        assert!(within_double_press(
            Some(t0),
            t0 + Duration::from_millis(1999)
        ));
        assert!(!within_double_press(
            Some(t0),
            t0 + Duration::from_millis(2001)
        ));
    }

    /// The CLI may spawn the session on the runtime: its future must be `Send`.
    #[allow(dead_code)]
    fn the_session_future_is_send(driver: &'static mut dyn SessionDriver) {
        fn is_send<T: Send>(_: &T) {}
        is_send(&run_interactive(driver, InteractiveOptions::default()));
    }
}
