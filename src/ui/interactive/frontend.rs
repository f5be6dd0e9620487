//! The interactive session's [`Frontend`]: renders events as they come, shows a spinner while
//! the model is working (rich mode only), and asks approvals on the terminal unless the
//! session's flags already gave them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::PlannedStep;
use crate::agent::protocol::{
    Approval, Event, Frontend, RunAnswer, RunQuestion, ToolAnswer, ToolQuestion, TrustRequest,
};
use crate::ui::layout::Theme;
use crate::ui::present::Presenter;
use crate::ui::prompt::Asker;
use crate::ui::{DEFAULT_WIDTH, print_out, render, stdout_width};

/// Lines of a running command's output the live panel shows.
const LIVE_LINES: usize = 5;

/// How the session looks and answers.
pub(crate) struct Settings {
    /// Colour, Unicode and spinner.
    pub rich: bool,
    /// 24-bit colour for highlighting.
    pub truecolor: bool,
}

/// The frontend the session hands to each turn; it lives for the whole session.
pub(crate) struct InteractiveFrontend {
    settings: Settings,
    presenter: Mutex<Presenter>,
    spinner: Mutex<Option<ProgressBar>>,
    /// The last lines of the running command's output, shown in the live panel.
    live_lines: Mutex<VecDeque<String>>,
    asker: Asker,
    cancel: Mutex<Option<CancellationToken>>,
    finished: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl InteractiveFrontend {
    /// A frontend that asks approvals with `asker` when the flags do not give them.
    pub(crate) fn new(settings: Settings, asker: Asker) -> Self {
        let presenter = Presenter::new(!settings.rich);
        Self {
            settings,
            presenter: Mutex::new(presenter),
            spinner: Mutex::new(None),
            live_lines: Mutex::new(VecDeque::new()),
            asker,
            cancel: Mutex::new(None),
            finished: AtomicBool::new(false),
        }
    }

    /// The theme for the terminal as it is now (its width may have changed).
    pub(crate) fn theme(&self) -> Theme {
        let width = stdout_width();
        Theme {
            wrap_code: width.is_some(),
            width: width.unwrap_or(DEFAULT_WIDTH),
            color: self.settings.rich,
            unicode: self.settings.rich,
            truecolor: self.settings.truecolor,
        }
    }

    /// Colour, Unicode and a spinner.
    pub(crate) fn rich(&self) -> bool {
        self.settings.rich
    }

    /// A turn starts: `cancel` is its token (approval prompts cancel it on Ctrl+C).
    pub(crate) fn begin_turn(&self, cancel: &CancellationToken) {
        *lock(&self.cancel) = Some(cancel.clone());
        self.finished.store(false, Ordering::SeqCst);
    }

    /// The turn is over: stop the spinner, close streamed text. Returns whether the agent
    /// reported the end of the turn itself (its final status panel was shown).
    pub(crate) fn end_turn(&self) -> bool {
        self.settle();
        *lock(&self.cancel) = None;
        self.finished.load(Ordering::SeqCst)
    }

    /// Print session text (notes, command results) in the right place: below the spinner and
    /// any streamed text.
    pub(crate) fn say(&self, text: &str) {
        self.settle();
        print_out(text);
    }

    fn settle(&self) {
        self.stop_spinner();
        let text = lock(&self.presenter).end_stream();
        print_out(&text);
    }

    fn start_spinner(&self, phase: u32) {
        self.stop_spinner();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        if let Ok(style) = ProgressStyle::with_template("{spinner:.cyan} {msg:.dim}") {
            bar.set_style(style.tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "));
        }
        bar.set_message(render::spinner_message(phase));
        bar.enable_steady_tick(Duration::from_millis(100));
        *lock(&self.spinner) = Some(bar);
    }

    /// The live panel of a running command: spinner, command, elapsed time, last lines.
    fn start_run_panel(&self, command: &str) {
        self.stop_spinner();
        lock(&self.live_lines).clear();
        // Hidden until set up, so the first frame already has its hint.
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {elapsed:.dim} {msg}")
        {
            bar.set_style(style.tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "));
        }
        bar.set_prefix(render::run_panel_title(command, &self.theme()));
        bar.set_message("(Ctrl+C stops it)");
        bar.set_draw_target(ProgressDrawTarget::stdout());
        bar.enable_steady_tick(Duration::from_millis(100));
        *lock(&self.spinner) = Some(bar);
    }

    fn live_line(&self, line: &str) {
        let text = {
            let mut lines = lock(&self.live_lines);
            lines.push_back(line.to_string());
            while lines.len() > LIVE_LINES {
                lines.pop_front();
            }
            let shown: Vec<String> = lines.iter().cloned().collect();
            render::run_panel_lines(&shown, &self.theme())
        };
        if let Some(bar) = lock(&self.spinner).as_ref() {
            bar.set_message(format!("(Ctrl+C stops it)\n{text}"));
        }
    }

    fn stop_spinner(&self) {
        if let Some(bar) = lock(&self.spinner).take() {
            bar.finish_and_clear();
        }
    }

    fn token(&self) -> Option<CancellationToken> {
        lock(&self.cancel).clone()
    }
}

impl Frontend for InteractiveFrontend {
    fn event(&self, event: &Event) {
        if render::is_silent(event) {
            // Nothing to show, so nothing to stop (a spinner, a live panel) either.
            return;
        }
        let theme = self.theme();
        if self.settings.rich {
            match event {
                Event::RunOutput { line, .. } => return self.live_line(line),
                Event::RunStarted { phase, command, .. } => {
                    self.stop_spinner();
                    print_out(&lock(&self.presenter).run_header(*phase, &theme));
                    return self.start_run_panel(command);
                }
                _ => {}
            }
        }
        self.stop_spinner();
        if let Event::Finished { .. } = event {
            self.finished.store(true, Ordering::SeqCst);
        }
        let text = lock(&self.presenter).event(event, &theme);
        print_out(&text);
        if let Event::Thinking { phase } = event
            && self.settings.rich
        {
            self.start_spinner(*phase);
        }
    }

    fn approve_plan(&self, steps: &[PlannedStep]) -> Approval {
        self.settle();
        let token = self.token();
        if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return Approval::No;
        }
        let diffs = super::super::render::full_diffs(steps, &self.theme());
        self.asker.plan_showing(&diffs, token.as_ref())
    }

    fn approve_run(&self, question: &RunQuestion) -> RunAnswer {
        self.settle();
        let token = self.token();
        if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return RunAnswer::No;
        }
        print_out(&render::run_question(question, &self.theme()));
        self.asker.run(
            question,
            "RUN was not allowed: confined commands can be pre-approved with --yes --allow-run or run.allow.",
            token.as_ref(),
        )
    }

    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        self.settle();
        let token = self.token();
        if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return ToolAnswer::No;
        }
        print_out(&render::tool_question(question, &self.theme()));
        self.asker.tool(
            "TOOL was not allowed: list the tool in the server's auto_approve in config.toml.",
            token.as_ref(),
        )
    }

    fn trust_mcp(&self, question: &TrustRequest) -> bool {
        self.settle();
        print_out(&render::trust_question(question, &self.theme()));
        self.asker.yes_no(
            "Start them?",
            false,
            "The project's MCP servers were not started: run `pai mcp trust`.",
            self.token().as_ref(),
        )
    }

    fn confirm_rm(&self, path: &str, recursive: bool) -> bool {
        self.settle();
        let token = self.token();
        if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return false;
        }
        print_out(&render::rm_question(path, recursive, &self.theme()));
        self.asker.yes_no(
            "Remove it?",
            false,
            "RM was not confirmed (removing a directory always asks; --yes covers single files).",
            token.as_ref(),
        )
    }
}
