//! Pure renderings of everything the terminal shows: one function per agent event, plus the
//! welcome panel, totals and messages of the interactive session. Each returns finished
//! terminal text (lines ending in `\n`) for a [`Theme`], so the text and interactive frontends
//! draw the same thing and tests compare plain renderings as strings.

use console::Style;

use super::SessionInfo;
use super::highlight::highlight;
use super::layout::{Line, Theme, join, panel, paragraphs, wrap, wrap_code, wrap_hard};
use crate::agent::protocol::{Analysis, Complexity, PlannedStep, StepPreview};
use crate::agent::protocol::{
    CallUsage, Event, FailedStep, FileView, StepReport, Tally, TurnResult, TurnStatus,
};

/// Lines of a file shown on screen; the rest is summarised ("… 12 more lines").
pub const FILE_VIEW_LINES: usize = 20;
/// Lines of step output (RUN, SEARCH, TREE) shown on screen.
pub const OUTPUT_LINES: usize = 20;
/// Lines of a diff shown on screen.
pub const DIFF_LINES: usize = 60;
/// Lines of each step's diff shown in the plan panel (`d` at the question shows them all).
pub const PREVIEW_LINES: usize = 12;

fn dim() -> Style {
    Style::new().dim()
}
fn green() -> Style {
    Style::new().green()
}
fn red() -> Style {
    Style::new().red()
}
fn yellow() -> Style {
    Style::new().yellow()
}
fn cyan() -> Style {
    Style::new().cyan()
}
fn bold() -> Style {
    Style::new().bold()
}

/// Whether an event shows nothing on screen: the user knows what they asked and started, and a
/// step shows when it has a result. These are for the session log and `--json` readers.
pub fn is_silent(event: &Event) -> bool {
    matches!(
        event,
        Event::SessionStarted { .. }
            | Event::TurnStarted { .. }
            | Event::StepStarted { .. }
            | Event::Remembered { .. }
            | Event::MemoryCleared
    )
}

/// Render any event without state. Frontends use [`super::present::Presenter`], which adds
/// streaming and phase headers on top of these.
pub fn event(event: &Event, theme: &Theme) -> String {
    match event {
        Event::Thinking { phase } => thinking(*phase, theme),
        Event::TextDelta { text } => super::layout::clean(text),
        Event::Usage { call, usage } => usage_line(*call, usage, theme),
        Event::Answer { text } => reply(text, theme),
        Event::Plan {
            phase,
            reply: ack,
            analysis,
            complexity,
            steps,
            observe,
        } => {
            let mut out = String::new();
            if !ack.trim().is_empty() {
                out.push_str(&reply(ack, theme));
            }
            out.push_str(&plan(*phase, analysis, *complexity, steps, *observe, theme));
            out
        }
        Event::Step(report) => step(report, theme),
        Event::RunStarted { command, .. } => run_started(command, theme),
        Event::RunOutput { line, .. } => run_output_line(line, theme),
        Event::Notice { text } => notice(text, theme),
        Event::Mapping { done, total } => mapping(*done, *total, theme),
        // See `is_silent`.
        Event::SessionStarted { .. }
        | Event::TurnStarted { .. }
        | Event::StepStarted { .. }
        | Event::Remembered { .. }
        | Event::MemoryCleared => String::new(),
        Event::Committed { commit, branch } => committed(commit, branch, theme),
        Event::Finished {
            status,
            message,
            next_steps,
            calls,
            input_tokens,
            output_tokens,
            cached_tokens,
            reasoning_tokens,
            calls_without_usage,
            verified,
            result,
        } => finished(
            &Finished {
                status: *status,
                message,
                result,
                next_steps,
                tally: Tally {
                    calls: *calls,
                    input: *input_tokens,
                    output: *output_tokens,
                    cached: *cached_tokens,
                    reasoning: *reasoning_tokens,
                    unmetered: *calls_without_usage,
                },
                verified: *verified,
            },
            theme,
        ),
    }
}

/// The line shown while a model call runs, when there is no spinner.
pub fn thinking(phase: u32, theme: &Theme) -> String {
    let text = if phase <= 1 {
        format!("{} thinking", theme.ellipsis())
    } else {
        format!("{} thinking (phase {phase})", theme.ellipsis())
    };
    join(&[Line::styled(&text, dim())], theme)
}

/// The spinner's message while a model call runs.
pub fn spinner_message(phase: u32) -> String {
    if phase <= 1 {
        "Thinking… (Ctrl+C stops the turn)".into()
    } else {
        format!("Thinking, phase {phase}… (Ctrl+C stops the turn)")
    }
}

/// `Tokens: in -> out` for one call.
pub fn usage_line(call: u32, usage: &CallUsage, theme: &Theme) -> String {
    let mut text = if usage.unknown {
        format!("Tokens: not reported by the server (call {call}")
    } else {
        format!(
            "Tokens: {} {} {} (call {call}",
            usage.input,
            theme.arrow(),
            usage.output
        )
    };
    if !usage.unknown {
        text.push_str(&cached_and_reasoning(usage.cached, usage.reasoning));
    }
    if usage.failed {
        text.push_str(", no usable reply");
    }
    text.push(')');
    wrapped(&Line::styled(&text, dim()), theme, 2)
}

/// The model's reply: a chat answer or a plan's acknowledgment.
pub fn reply(text: &str, theme: &Theme) -> String {
    panel("pai", &paragraphs(text, None), theme, &cyan())
}

fn complexity_name(c: Complexity) -> &'static str {
    match c {
        Complexity::Simple => "simple",
        Complexity::Moderate => "moderate",
        Complexity::Complex => "complex",
    }
}

/// The plan as a numbered table: action, target and purpose of each step, the complexity in
/// the title, risks and whether the model will look at results before going on.
pub fn plan(
    phase: u32,
    analysis: &Analysis,
    complexity: Complexity,
    steps: &[PlannedStep],
    observe: bool,
    theme: &Theme,
) -> String {
    let count = match steps.len() {
        1 => "1 step".to_string(),
        n => format!("{n} steps"),
    };
    let title = if phase <= 1 {
        format!("Plan ({}, {count})", complexity_name(complexity))
    } else {
        format!(
            "Plan, phase {phase} ({}, {count})",
            complexity_name(complexity)
        )
    };
    let inner = theme.panel_inner();
    let number_width = steps.len().to_string().len();
    let action_width = steps
        .iter()
        .map(|s| s.step.action().len())
        .max()
        .unwrap_or(4);
    let indent = number_width + 2 + action_width + 2;
    let mut body = Vec::new();
    for (i, planned) in steps.iter().enumerate() {
        let row = Line::new()
            .with(&format!("{:>number_width$}. ", i + 1), dim())
            .with(
                &format!("{:<action_width$}  ", planned.step.action()),
                bold(),
            )
            .text(&first_line_of(&planned.step.target()));
        body.extend(wrap(&row, inner, indent));
        if !planned.purpose.trim().is_empty() {
            let purpose = Line::new()
                .text(&" ".repeat(indent))
                .with(planned.purpose.trim(), dim());
            body.extend(wrap(&purpose, inner, indent));
        }
        if let Some(preview) = &planned.preview {
            body.extend(preview_lines(preview, indent, inner));
        }
    }
    if !analysis.risks.trim().is_empty() {
        body.push(Line::new());
        body.extend(wrap(
            &Line::new()
                .with("Risks: ", yellow())
                .text(analysis.risks.trim()),
            inner,
            2,
        ));
    }
    if observe {
        body.push(Line::new());
        body.extend(wrap(
            &Line::styled(
                "pai will look at the results before planning the rest.",
                dim(),
            ),
            inner,
            0,
        ));
    }
    panel(&title, &body, theme, &Style::new().magenta())
}

/// A step's change as the plan panel shows it: the snapshot note, then the failure it would
/// be, or the first [`PREVIEW_LINES`] lines of its diff (headers left out: the row names the
/// file) and how many more there are.
fn preview_lines(preview: &StepPreview, indent: usize, inner: usize) -> Vec<Line> {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    if preview.snapshot {
        out.extend(wrap(
            &Line::new().text(&pad).with(
                "your uncommitted edits to this file are committed first as a snapshot (undo gives them back)",
                yellow(),
            ),
            inner,
            indent,
        ));
    }
    if let Some(why) = &preview.fails {
        out.extend(wrap(
            &Line::new().text(&pad).with("would fail: ", red()).text(why),
            inner,
            indent,
        ));
        return out;
    }
    let Some(diff) = &preview.diff else {
        return out;
    };
    let lines: Vec<&str> = diff
        .lines()
        .filter(|l| !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    for raw in lines.iter().take(PREVIEW_LINES) {
        let style = if raw.starts_with('+') {
            green()
        } else if raw.starts_with('-') {
            red()
        } else if raw.starts_with("@@") {
            cyan()
        } else {
            dim()
        };
        // Compact: one screen line per diff line (`d` shows them whole).
        let room = inner.saturating_sub(indent).max(8);
        let cut = super::layout::truncate(raw, room);
        out.push(Line::new().text(&pad).with(&cut, style));
    }
    if lines.len() > PREVIEW_LINES {
        out.push(Line::new().text(&pad).with(
            &format!(
                "… {} more diff lines (+{} -{} in all)",
                lines.len() - PREVIEW_LINES,
                preview.added,
                preview.removed
            ),
            dim(),
        ));
    }
    out
}

/// Every step's whole diff (or the failure it would be), for `d` at the plan's question.
pub fn full_diffs(steps: &[PlannedStep], theme: &Theme) -> String {
    let mut out = String::new();
    for (i, s) in steps.iter().enumerate() {
        let Some(p) = &s.preview else { continue };
        out.push_str(&format!(
            "{}. {} {}\n",
            i + 1,
            s.step.action(),
            s.step.target()
        ));
        match (&p.fails, &p.diff) {
            (Some(why), _) => out.push_str(&format!("    would fail: {why}\n")),
            (None, Some(d)) => {
                for line in d.lines() {
                    out.push_str(&theme.paint(
                        &format!("    {line}\n"),
                        &if line.starts_with('+') && !line.starts_with("+++") {
                            green()
                        } else if line.starts_with('-') && !line.starts_with("---") {
                            red()
                        } else {
                            Style::new()
                        },
                    ));
                }
            }
            (None, None) => {}
        }
    }
    out
}

/// The first line of a multi-line target (a RUN script), marked when there is more.
fn first_line_of(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// The header above the step results of a phase.
pub fn execution_header(phase: u32, theme: &Theme) -> String {
    let label = if phase <= 1 {
        "Execution".to_string()
    } else {
        format!("Execution, phase {phase}")
    };
    theme.rule(&label, &bold())
}

/// One step's result: a ✓/✗ line, its output (capped), its diff and its file view.
pub fn step(report: &StepReport, theme: &Theme) -> String {
    let (mark, mark_style) = if report.ok {
        (theme.ok_mark(), green())
    } else {
        (theme.fail_mark(), red())
    };
    let head = Line::new()
        .with(mark, mark_style.bold())
        .text(&format!(" {}. ", report.index))
        .with(&report.action, bold())
        .text(" ")
        .text(&first_line_of(&report.target));
    let mut out = wrapped(&head, theme, 4);

    let shows_file = report.file_view.is_some();
    let output = report.output.trim_end();
    // A READ's output is the file itself when it has more than a note: the view shows it.
    let duplicate = shows_file && output.lines().count() > 1;
    if !output.is_empty() && !duplicate {
        let style = if report.ok { dim() } else { red() };
        let lines: Vec<&str> = output.lines().collect();
        let mut body = Vec::new();
        for text in lines.iter().take(OUTPUT_LINES) {
            let line = Line::new().text("    ").with(text, style.clone());
            body.extend(wrap_code(&line, theme, 4));
        }
        if lines.len() > OUTPUT_LINES {
            body.push(more_lines(lines.len() - OUTPUT_LINES, 4, theme));
        }
        out.push_str(&join(&body, theme));
    }
    if let Some(diff_text) = &report.diff {
        out.push_str(&diff(diff_text, theme));
    }
    if let Some(view) = &report.file_view {
        out.push_str(&file_view(view, theme));
    }
    out
}

/// The line printed when a RUN command starts, where its output is streamed as text.
pub fn run_started(command: &str, theme: &Theme) -> String {
    let line = Line::new()
        .with("  $ ", dim())
        .with(first_line_of(command).as_str(), bold());
    wrapped(&line, theme, 4)
}

/// One line of a running command's output, streamed as text: indented under its command and
/// never wrapped, so a reader (or a script) gets the line as the command printed it.
pub fn run_output_line(line: &str, theme: &Theme) -> String {
    let bar = if theme.unicode { "│" } else { "|" };
    let text = super::layout::clean(line);
    format!(
        "    {} {}
",
        theme.paint(bar, &dim()),
        text
    )
}

/// The title of the live panel shown while a command runs (the elapsed time follows it).
pub fn run_panel_title(command: &str, theme: &Theme) -> String {
    // Room for the spinner, "Running ", the elapsed time and the Ctrl+C hint.
    let room = theme.cols().saturating_sub(40).max(10);
    format!(
        "Running {}",
        super::layout::truncate(&first_line_of(command), room)
    )
}

/// The body of the live panel: the last lines of output, each cut to the width (the panel is
/// redrawn in place, so nothing in it may wrap).
pub fn run_panel_lines(lines: &[String], theme: &Theme) -> String {
    let cols = theme.cols();
    let bar = if theme.unicode { "│" } else { "|" };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let text = super::layout::truncate(&super::layout::clean(line), cols.saturating_sub(5));
        out.push_str(&format!(
            "  {} {}",
            theme.paint(bar, &dim()),
            theme.paint(&text, &dim())
        ));
    }
    out
}

fn more_lines(n: usize, indent: usize, theme: &Theme) -> Line {
    let noun = if n == 1 { "line" } else { "lines" };
    Line::new()
        .text(&" ".repeat(indent))
        .with(&format!("{} {n} more {noun}", theme.ellipsis()), dim())
}

/// A coloured unified diff, indented under its step and capped at [`DIFF_LINES`].
pub fn diff(text: &str, theme: &Theme) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut body = Vec::new();
    for raw in lines.iter().take(DIFF_LINES) {
        let style = if raw.starts_with("+++") || raw.starts_with("---") {
            Some(bold())
        } else if raw.starts_with('+') {
            Some(green())
        } else if raw.starts_with('-') {
            Some(red())
        } else if raw.starts_with("@@") {
            Some(cyan())
        } else {
            None
        };
        let mut line = Line::new().text("    ");
        line.push(raw, style);
        body.extend(wrap_code(&line, theme, 4));
    }
    if lines.len() > DIFF_LINES {
        body.push(more_lines(lines.len() - DIFF_LINES, 4, theme));
    }
    join(&body, theme)
}

/// A file's text in a panel titled with its path: highlighted, numbered, the first
/// [`FILE_VIEW_LINES`] lines.
pub fn file_view(view: &FileView, theme: &Theme) -> String {
    let total = view.text.lines().count();
    if !theme.wrap_code {
        return file_view_unwrapped(view, total, theme);
    }
    let shown = highlight(&view.path, &view.text, FILE_VIEW_LINES, theme);
    let gutter_digits = shown.len().max(1).to_string().len();
    let separator = if theme.unicode { "│" } else { "|" };
    let gutter = gutter_digits + 3;
    let inner = theme.panel_inner();
    let code_width = inner.saturating_sub(gutter).max(8);
    let mut body = Vec::new();
    for (i, line) in shown.iter().enumerate() {
        for (j, piece) in wrap_hard(line, code_width, 0).into_iter().enumerate() {
            let number = if j == 0 {
                format!("{:>gutter_digits$} {separator} ", i + 1)
            } else {
                format!("{:>gutter_digits$} {separator} ", "")
            };
            let mut row = Line::styled(&number, dim());
            row.0.extend(piece.0);
            body.push(row);
        }
    }
    if total > shown.len() {
        body.push(more_lines(total - shown.len(), 0, theme));
    }
    if body.is_empty() {
        body.push(Line::styled("(empty file)", dim()));
    }
    panel(&view.path, &body, theme, &Style::new().blue())
}

/// [`file_view`] when stdout is not a terminal: the path, then the numbered lines whole (no
/// panel, which would wrap them at its width), as a reader or a script wants them.
fn file_view_unwrapped(view: &FileView, total: usize, theme: &Theme) -> String {
    let digits = total.clamp(1, FILE_VIEW_LINES).to_string().len();
    let bar = if theme.unicode { "│" } else { "|" };
    let mut out = format!("    {}\n", view.path);
    for (i, line) in view.text.lines().take(FILE_VIEW_LINES).enumerate() {
        out.push_str(&format!(
            "    {:>digits$} {bar} {}\n",
            i + 1,
            super::layout::clean(line)
        ));
    }
    if total > FILE_VIEW_LINES {
        out.push_str(&more_lines(total - FILE_VIEW_LINES, 4, theme).render(theme));
        out.push('\n');
    }
    out
}

/// Something the user should know that is not a failure.
pub fn mapping(done: usize, total: usize, theme: &Theme) -> String {
    let text = format!(
        "Mapping the project: {done} of {total} files read (once; later maps read only what changed)"
    );
    Line::styled(&text, dim()).render(theme)
}

/// A note to the user.
pub fn notice(text: &str, theme: &Theme) -> String {
    let mut out = String::new();
    for (i, para) in paragraphs(text, None).into_iter().enumerate() {
        let mut line = if i == 0 {
            Line::styled("note: ", yellow())
        } else {
            Line::plain("      ")
        };
        line.0.extend(para.0);
        out.push_str(&wrapped(&line, theme, 6));
    }
    out
}

/// A title with a mark in front when marks are Unicode (`✓ Done`), bare otherwise.
fn marked(mark: &str, title: &str, theme: &Theme) -> String {
    if theme.unicode {
        format!("{mark} {title}")
    } else {
        title.to_string()
    }
}

/// The commit that records the plan.
pub fn committed(commit: &str, branch: &str, theme: &Theme) -> String {
    let line = Line::new()
        .with(&marked("✓", "", theme), green())
        .text("Committed ")
        .with(commit, yellow().bold())
        .text(" on ")
        .with(branch, bold());
    wrapped(&line, theme, 2)
}

/// The fields of [`Event::Finished`].
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    /// How the turn ended.
    pub status: TurnStatus,
    /// The final message (the model's, when it gave one).
    pub message: &'a str,
    /// What the steps came to: failed steps, steps given up, files changed.
    pub result: &'a TurnResult,
    /// Suggestions.
    pub next_steps: &'a [String],
    /// Calls and tokens of the turn.
    pub tally: Tally,
    /// Whether a verification passed.
    pub verified: Option<bool>,
}

/// The final status panel, the next-step suggestions and the turn's token summary. The
/// title is the verdict; the message is the model's (or what ended the turn), followed by the
/// failed steps, those given up, and what was changed when any step failed.
pub fn finished(f: &Finished<'_>, theme: &Theme) -> String {
    let mut out = String::new();
    let status_panel = |title: &str, accent: Style| {
        let mut body = paragraphs(f.message, None);
        body.extend(step_outcome(f.result, theme));
        if let Some(ok) = f.verified {
            body.push(if ok {
                Line::new()
                    .with("Verified: ", bold())
                    .with("the check passed", green())
            } else {
                Line::new()
                    .with("Verified: ", bold())
                    .with("the check failed", red())
            });
        }
        panel(title, &body, theme, &accent)
    };
    match f.status {
        // The answer itself was already shown.
        TurnStatus::Answered => {}
        TurnStatus::Success => out.push_str(&status_panel(&marked("✓", "Done", theme), green())),
        TurnStatus::Failed => out.push_str(&status_panel(&marked("✗", "Failed", theme), red())),
        TurnStatus::Rejected => out.push_str(&status_panel("Not carried out", yellow())),
        TurnStatus::NotApproved => out.push_str(&status_panel("Not approved", yellow())),
        TurnStatus::Planned => out.push_str(&status_panel("Plan only", cyan())),
        TurnStatus::Interrupted => out.push_str(&status_panel("Interrupted", yellow())),
    }
    if !f.next_steps.is_empty() {
        let inner = theme.panel_inner();
        let mut body = Vec::new();
        for s in f.next_steps {
            let line = Line::new()
                .text(&format!("{} ", theme.bullet()))
                .text(s.trim());
            body.extend(wrap(&line, inner, 2));
        }
        out.push_str(&panel("Next steps", &body, theme, &cyan()));
    }
    // A chat answer from one call: its usage line already said exactly this.
    if !(f.status == TurnStatus::Answered && f.tally.calls <= 1) {
        out.push_str(&turn_summary(&f.tally, theme));
    }
    out
}

/// The lines of the final panel that say what the steps came to, when any failed: each failed
/// step left undone, each the model gave up (its reason is the message above), and the files
/// changed (or that nothing was).
fn step_outcome(result: &TurnResult, theme: &Theme) -> Vec<Line> {
    let mut body = Vec::new();
    if result.failed_steps.is_empty() && result.given_up.is_empty() {
        return body;
    }
    let inner = theme.panel_inner();
    let mut list = |heading: Line, steps: &[FailedStep]| {
        if steps.is_empty() {
            return;
        }
        body.push(heading);
        for s in steps {
            let line = Line::new()
                .text(&format!("{} ", theme.bullet()))
                .with(&format!("{} {}", s.action, s.target), bold())
                .text(&format!(
                    " (phase {}, step {}): {}",
                    s.phase, s.index, s.error
                ));
            body.extend(wrap(&line, inner, 2));
        }
    };
    list(
        Line::styled("Failed, not redone:", red().bold()),
        &result.failed_steps,
    );
    list(
        Line::styled("Given up by the model:", yellow().bold()),
        &result.given_up,
    );
    let changed = if result.changed.is_empty() {
        "nothing".to_string()
    } else {
        result.changed.join(", ")
    };
    let line = Line::new().with("Changed: ", bold()).text(&changed);
    body.extend(wrap(&line, inner, 2));
    body
}

fn calls_text(calls: u32) -> String {
    match calls {
        1 => "1 call".into(),
        n => format!("{n} calls"),
    }
}

/// ", N cached, N reasoning" for the counts that are not zero.
fn cached_and_reasoning(cached: u64, reasoning: u64) -> String {
    let mut text = String::new();
    if cached > 0 {
        text.push_str(&format!(", {cached} cached"));
    }
    if reasoning > 0 {
        text.push_str(&format!(", {reasoning} reasoning"));
    }
    text
}

/// The token summary of one turn.
pub fn turn_summary(tally: &Tally, theme: &Theme) -> String {
    let text = format!(
        "Turn: {}, Tokens: {}{}",
        calls_text(tally.calls),
        tokens_text(tally, theme),
        cached_and_reasoning(tally.cached, tally.reasoning)
    );
    wrapped(&Line::styled(&text, dim()), theme, 2)
}

/// `in -> out`, or what is known of them when a server did not report some calls' usage.
fn tokens_text(tally: &Tally, theme: &Theme) -> String {
    match tally.unmetered {
        0 => format!("{} {} {}", tally.input, theme.arrow(), tally.output),
        n if n >= tally.calls => "unknown (the server reported no usage)".to_string(),
        n => format!(
            "at least {} {} {} ({n} call(s) unreported)",
            tally.input,
            theme.arrow(),
            tally.output
        ),
    }
}

/// Calls and tokens of the whole session (`/tokens`).
pub fn totals(tally: &Tally, theme: &Theme) -> String {
    let text = format!(
        "Session: {}, Tokens: {}",
        calls_text(tally.calls),
        tokens_text(tally, theme)
    );
    wrapped(&Line::plain(&text), theme, 2)
}

/// The welcome panel of an interactive session. `rich_input`: the line editor is active
/// (Alt+Enter and history work); otherwise lines ending in `\` continue.
pub fn welcome(info: &SessionInfo, rich_input: bool, theme: &Theme) -> String {
    let label = |name: &str| Line::styled(&format!("{name:<9}"), dim());
    let mut body = Vec::new();
    let inner = theme.panel_inner();
    let mut row = |name: &str, value: Line| {
        let mut line = label(name);
        line.0.extend(value.0);
        body.extend(wrap(&line, inner, 9));
    };
    row("Project", Line::plain(&info.root.display().to_string()));
    row(
        "Model",
        Line::new()
            .with(&info.model, bold())
            .text(&format!(" ({})", info.provider)),
    );
    match (&info.branch, &info.read_only) {
        (_, Some(reason)) => row(
            "Session",
            Line::new().with("read-only: ", yellow()).text(reason),
        ),
        (Some(branch), None) => row("Session", Line::styled(branch, green())),
        (None, None) => {}
    }
    body.push(Line::new());
    let newline = if rich_input {
        "Enter sends, Alt+Enter starts a new line, Up/Down recall history."
    } else {
        "Enter sends; end a line with \\ to continue on the next one."
    };
    body.extend(wrap(&Line::plain(newline), inner, 0));
    body.extend(wrap(
        &Line::plain("exit, quit or Ctrl+D leaves; /help lists commands."),
        inner,
        0,
    ));
    panel("pai", &body, theme, &cyan())
}

/// `/help`.
pub fn help(theme: &Theme) -> String {
    let rows = [
        ("/help", "this list"),
        ("/undo", "roll back the last plan (its commit)"),
        ("/redo", "re-apply the plan last undone"),
        ("/log", "the plans of this session"),
        ("/model NAME", "use another model from the next request on"),
        ("/clear", "forget the session memory"),
        ("/tokens", "calls and tokens so far"),
        ("exit, quit", "end the session (also Ctrl+D)"),
    ];
    let inner = theme.panel_inner();
    let mut body = Vec::new();
    for (cmd, what) in rows {
        let line = Line::new().with(&format!("{cmd:<12}"), bold()).text(what);
        body.extend(wrap(&line, inner, 12));
    }
    body.push(Line::new());
    body.extend(wrap(
        &Line::styled(
            "Ctrl+C stops a turn after its current step; twice within 2 s ends the session.",
            dim(),
        ),
        inner,
        0,
    ));
    panel("Commands", &body, theme, &cyan())
}

/// Text a command produced (`/undo`, `/log`), wrapped.
pub fn message(text: &str, theme: &Theme) -> String {
    let mut out = String::new();
    for line in paragraphs(text, None) {
        out.push_str(&wrapped(&line, theme, 2));
    }
    out
}

/// An error with its hint.
pub fn error(message: &str, hint: Option<&str>, theme: &Theme) -> String {
    let mut out = wrapped(
        &Line::new().with("error: ", red().bold()).text(message),
        theme,
        7,
    );
    if let Some(hint) = hint {
        out.push_str(&wrapped(
            &Line::new().with("  hint: ", cyan()).text(hint),
            theme,
            8,
        ));
    }
    out
}

/// The question asked before a RUN command: the command, whether it is sandboxed, and what
/// "always" (and saving it) would allow.
pub fn run_question(q: &crate::agent::protocol::RunQuestion, theme: &Theme) -> String {
    let confined = q.confined;
    let mut body = paragraphs(&q.command, Some(bold()));
    body.push(Line::new());
    body.push(if confined {
        Line::new()
            .with("sandboxed: ", green())
            .text("it can write only inside the project and temporary directories")
    } else {
        Line::new()
            .with("UNCONFINED: ", red().bold())
            .text("no sandbox is available here; it can change anything you can")
    });
    if let Some(rule) = &q.rule {
        body.push(
            Line::new()
                .with("a", bold())
                .text(&format!(
                    ": run `{rule}` (and it with more arguments) without asking for the rest of this session"
                )),
        );
        if q.can_save {
            body.push(Line::new().with("p", bold()).text(
                ": the same in later sessions of this project; u: in all your projects (saved to config.toml)",
            ));
        }
    }
    body.push(
        Line::new()
            .with("e", bold())
            .text(": edit the command before it runs"),
    );
    panel("Run this command?", &body, theme, &yellow())
}

/// The question asked before a TOOL call.
pub fn tool_question(q: &crate::agent::protocol::ToolQuestion, theme: &Theme) -> String {
    let mut body = vec![
        Line::new()
            .text("MCP tool ")
            .with(&format!("{}.{}", q.server, q.tool), bold()),
    ];
    body.extend(paragraphs(&q.arguments, None));
    body.push(Line::new());
    if q.from_project {
        body.push(
            Line::new()
                .with("from the project's .mcp.json: ", yellow().bold())
                .text("a server the repository configured"),
        );
    }
    body.push(Line::new().with("a", bold()).text(&format!(
        ": call `{}.{}` without asking for the rest of this session",
        q.server, q.tool
    )));
    panel("Call this tool?", &body, theme, &yellow())
}

/// The question asked before a project's MCP servers start.
pub fn trust_question(q: &crate::agent::protocol::TrustRequest, theme: &Theme) -> String {
    let what = if q.changed {
        format!("{} changed since you trusted it. It starts:", q.file)
    } else {
        format!("{} asks to start:", q.file)
    };
    let mut body = vec![Line::styled(&what, bold())];
    for s in &q.servers {
        body.push(Line::new().text(&format!("  {s}")));
    }
    body.push(Line::new());
    body.push(Line::new().text(
        "They run as programs with your user's rights. Your answer is remembered for this version of the file.",
    ));
    panel("Trust this project's MCP servers?", &body, theme, &yellow())
}

/// The question asked before an RM.
pub fn rm_question(path: &str, recursive: bool, theme: &Theme) -> String {
    let what = if recursive {
        format!("Remove the directory {path} and everything in it?")
    } else {
        format!("Remove {path}?")
    };
    wrapped(&Line::styled(&what, yellow().bold()), theme, 2)
}

/// The end-of-session text, around the driver's summary.
pub fn goodbye(summary: &str, totals: &Tally, theme: &Theme) -> String {
    let mut body = paragraphs(summary, None);
    body.push(Line::new());
    body.push(Line::styled(
        &format!(
            "{}, Tokens: {}",
            calls_text(totals.calls),
            tokens_text(totals, theme)
        ),
        dim(),
    ));
    panel("Session ended", &body, theme, &cyan())
}

fn wrapped(line: &Line, theme: &Theme, indent: usize) -> String {
    join(&wrap(line, theme.cols(), indent), theme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreported_usage_is_shown_as_unknown_never_as_zero() {
        let theme = Theme::plain(80);
        let usage = CallUsage {
            unknown: true,
            ..CallUsage::default()
        };
        let line = usage_line(2, &usage, &theme);
        assert!(
            line.contains("not reported by the server (call 2"),
            "{line}"
        );
        assert!(!line.contains("Tokens: 0"), "{line}");
        let failed = CallUsage {
            input: 900,
            output: 70,
            failed: true,
            ..CallUsage::default()
        };
        assert!(usage_line(1, &failed, &theme).contains("no usable reply"));
        let all_unknown = Tally {
            calls: 2,
            unmetered: 2,
            ..Tally::default()
        };
        let summary = turn_summary(&all_unknown, &theme);
        assert!(summary.contains("Tokens: unknown"), "{summary}");
        let some = Tally {
            calls: 3,
            input: 900,
            output: 70,
            unmetered: 1,
            ..Tally::default()
        };
        let summary = turn_summary(&some, &theme);
        assert!(summary.contains("at least 900"), "{summary}");
        assert!(summary.contains("1 call(s) unreported"), "{summary}");
    }

    #[test]
    fn long_unbroken_output_is_wrapped() {
        let report = StepReport {
            index: 1,
            phase: 1,
            action: "RUN".into(),
            target: "x".into(),
            ok: true,
            output: "y".repeat(500),
            diff: None,
            file_view: None,
        };
        for line in step(&report, &Theme::plain(60)).lines() {
            assert!(super::super::layout::display_width(line) <= 60, "{line}");
        }
    }
}
