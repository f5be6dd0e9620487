//! Commit messages: the subject, body and `Pai-*` trailers pai writes, and reading them back.
//! The trailers are the durable record that undo, redo and log derive everything from.

use serde::Serialize;

/// What kind of commit pai made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An executed plan: the agent's change.
    Plan,
    /// A snapshot of the user's own changes, taken before a plan touched those files.
    User,
    /// The state saved by `pai undo --force` before undoing.
    Saved,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Plan => "plan",
            Kind::User => "user",
            Kind::Saved => "saved",
        }
    }
}

/// An executed plan as the agent reports it to history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanRecord {
    /// The user's request, as typed.
    pub request: String,
    /// The plan's steps, one line each (e.g. "MODIFY calc.py: add power()").
    pub steps: Vec<String>,
    /// Project-relative paths the plan created, changed or removed (files or directories).
    pub touched: Vec<String>,
    /// What the plan did besides files (e.g. "RUN python3 -m py_compile calc.py: exit 0").
    pub side_effects: Vec<String>,
    /// The failed steps the turn left undone, one line each (`MODIFY a.txt: search text not
    /// found`); not empty when the plan partly failed (its commit holds what did succeed).
    pub failed: Vec<String>,
    /// The model that made the plan.
    pub model: String,
    /// API calls the turn made.
    pub calls: u32,
    /// Input tokens used.
    pub input_tokens: u64,
    /// Output tokens used.
    pub output_tokens: u64,
    /// The part of the input served from the provider's prompt cache.
    pub cached_tokens: u64,
    /// The part of the output spent reasoning, where the provider reports it.
    pub reasoning_tokens: u64,
}

/// The `Pai-*` trailers of a commit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trailers {
    pub session: Option<String>,
    pub plan: Option<u32>,
    pub kind: Option<Kind>,
    pub model: Option<String>,
    pub calls: Option<u32>,
    pub tokens: Option<TokenCounts>,
    /// The tree of the plan's trash copies, when it saved any.
    pub trash: Option<git2::Oid>,
}

/// The token counts of a `Pai-Tokens` trailer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TokenCounts {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub reasoning: u64,
}

/// Longest subject line, as `git log --oneline` readers expect.
const SUBJECT_MAX: usize = 72;
/// Longest step line in the body.
const STEP_MAX: usize = 200;
/// The heading of the body section naming the failed steps of a partly failed plan.
const PARTLY_FAILED: &str = "Partly failed: these steps failed and were not redone:";

/// Collapse whitespace (newlines included) so a value fits on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cut `text` to at most `max` characters, marking the cut with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// `pai: <request, shortened>`.
pub(crate) fn subject(request: &str) -> String {
    let line = one_line(request);
    let line = if line.is_empty() {
        "(no request text)".to_string()
    } else {
        line
    };
    format!("pai: {}", shorten(&line, SUBJECT_MAX - "pai: ".len()))
}

fn trailer_block(session: &str, plan: u32, kind: Kind) -> String {
    format!(
        "Pai-Session: {}\nPai-Plan: {plan}\nPai-Kind: {}\n",
        one_line(session),
        kind.as_str()
    )
}

/// The full message of a plan commit.
pub(crate) fn plan_message(
    session: &str,
    plan: u32,
    record: &PlanRecord,
    trash: Option<git2::Oid>,
) -> String {
    let mut msg = subject(&record.request);
    msg.push_str("\n\n");
    // The full request, quoted line by line, when the subject had to shorten it.
    if subject(&record.request) != format!("pai: {}", one_line(&record.request)) {
        msg.push_str("Request:\n");
        for line in record.request.trim().lines() {
            msg.push_str(format!("> {}", line.trim_end()).trim_end());
            msg.push('\n');
        }
        msg.push('\n');
    }
    if !record.steps.is_empty() {
        msg.push_str("Steps:\n");
        for (i, step) in record.steps.iter().enumerate() {
            msg.push_str(&format!(
                "{}. {}\n",
                i + 1,
                shorten(&one_line(step), STEP_MAX)
            ));
        }
        msg.push('\n');
    }
    if !record.failed.is_empty() {
        msg.push_str(PARTLY_FAILED);
        msg.push('\n');
        for failed in &record.failed {
            msg.push_str(&format!("- {}\n", shorten(&one_line(failed), STEP_MAX)));
        }
        msg.push('\n');
    }
    if !record.side_effects.is_empty() {
        msg.push_str("Side effects:\n");
        for effect in &record.side_effects {
            msg.push_str(&format!("- {}\n", shorten(&one_line(effect), STEP_MAX)));
        }
        msg.push('\n');
    }
    msg.push_str(&trailer_block(session, plan, Kind::Plan));
    let model = one_line(&record.model);
    msg.push_str(&format!(
        "Pai-Model: {}\nPai-Calls: {}\nPai-Tokens: {} in, {} out, {} cached, {} reasoning\n",
        if model.is_empty() { "unknown" } else { &model },
        record.calls,
        record.input_tokens,
        record.output_tokens,
        record.cached_tokens,
        record.reasoning_tokens
    ));
    if let Some(tree) = trash {
        msg.push_str(&format!("Pai-Trash: {tree}\n"));
    }
    msg
}

/// The message of a snapshot of the user's changes taken before plan `plan`.
pub(crate) fn user_message(session: &str, plan: u32, staged: bool, files: &[String]) -> String {
    let what = if staged { "staged changes" } else { "changes" };
    let subject = format!("pai: snapshot of your {what} before plan {plan}");
    with_files(&subject, files, &trailer_block(session, plan, Kind::User))
}

/// A message of `subject`, a `Files:` list and the trailers.
fn with_files(subject: &str, files: &[String], trailers: &str) -> String {
    let mut msg = format!("{subject}\n\nFiles:\n");
    for file in files {
        msg.push_str(&format!("- {file}\n"));
    }
    msg.push('\n');
    msg.push_str(trailers);
    msg
}

/// Whether a user-snapshot message is the one of staged changes (see [`user_message`]).
pub(crate) fn is_staged_snapshot(message: &str) -> bool {
    message.starts_with("pai: snapshot of your staged changes")
}

/// The message of the state `pai undo --force` saves before undoing plan `plan`.
pub(crate) fn saved_message(session: &str, plan: u32, files: &[String]) -> String {
    let subject = format!(
        "pai: your state of {} file(s) before undoing plan {plan}",
        files.len()
    );
    with_files(&subject, files, &trailer_block(session, plan, Kind::Saved))
}

/// The step lines of a plan commit's message (its `Steps:` section), as recorded.
pub(crate) fn steps_of(message: &str) -> Vec<String> {
    let mut lines = message.lines().skip_while(|l| *l != "Steps:").skip(1);
    let mut out = Vec::new();
    for line in lines.by_ref() {
        let Some((number, step)) = line.split_once(". ") else {
            break;
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        out.push(step.to_string());
    }
    out
}

/// The failed steps a partly failed plan's commit names (empty when none failed).
pub(crate) fn failed_of(message: &str) -> Vec<String> {
    message
        .lines()
        .skip_while(|l| *l != PARTLY_FAILED)
        .skip(1)
        .map_while(|l| l.strip_prefix("- "))
        .map(str::to_string)
        .collect()
}

/// Read the `Pai-*` trailers of a commit message.
pub(crate) fn parse(message: &str) -> Trailers {
    let mut t = Trailers::default();
    let Ok(trailers) = git2::message_trailers_strs(message) else {
        return t;
    };
    for (key, value) in trailers.iter() {
        let value = value.trim();
        match key {
            "Pai-Session" => t.session = Some(value.to_string()),
            "Pai-Plan" => t.plan = value.parse().ok(),
            "Pai-Kind" => {
                t.kind = match value {
                    "plan" => Some(Kind::Plan),
                    "user" => Some(Kind::User),
                    "saved" => Some(Kind::Saved),
                    _ => None,
                }
            }
            "Pai-Model" => t.model = Some(value.to_string()),
            "Pai-Calls" => t.calls = value.parse().ok(),
            "Pai-Tokens" => t.tokens = parse_tokens(value),
            "Pai-Trash" => t.trash = git2::Oid::from_str(value).ok(),
            _ => {}
        }
    }
    t
}

/// `N in, N out[, N cached, N reasoning]` (commits made before cached and reasoning counts
/// were recorded have only the first two).
fn parse_tokens(value: &str) -> Option<TokenCounts> {
    let mut t = TokenCounts::default();
    let (mut saw_in, mut saw_out) = (false, false);
    for part in value.split(',') {
        let (n, what) = part.trim().split_once(' ')?;
        let n: u64 = n.trim().parse().ok()?;
        match what.trim() {
            "in" => (t.input, saw_in) = (n, true),
            "out" => (t.output, saw_out) = (n, true),
            "cached" => t.cached = n,
            "reasoning" => t.reasoning = n,
            _ => return None,
        }
    }
    (saw_in && saw_out).then_some(t)
}

/// The request of a plan commit: the quoted full request when present, else the subject.
pub(crate) fn request_of(message: &str) -> String {
    let mut lines = message.lines();
    let subject = lines.next().unwrap_or_default();
    let mut quoted = Vec::new();
    let mut in_request = false;
    for line in lines {
        if line == "Request:" && quoted.is_empty() {
            in_request = true;
        } else if in_request {
            match line.strip_prefix('>') {
                Some(rest) => quoted.push(rest.strip_prefix(' ').unwrap_or(rest)),
                None => break,
            }
        }
    }
    if quoted.is_empty() {
        subject.strip_prefix("pai: ").unwrap_or(subject).to_string()
    } else {
        quoted.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use crate::history::record::message::*;

    #[test]
    fn steps_are_read_back_from_the_message() {
        let record = PlanRecord {
            request: "look it up".into(),
            steps: vec![
                "TOOL docs.search {\"q\":\"retry\"}: ok".into(),
                "WRITE notes.md: ok".into(),
            ],
            ..PlanRecord::default()
        };
        let msg = plan_message("s", 1, &record, None);
        assert_eq!(
            steps_of(&msg),
            [
                "TOOL docs.search {\"q\":\"retry\"}: ok",
                "WRITE notes.md: ok"
            ]
        );
        assert!(steps_of("pai: x\n\nPai-Session: s\n").is_empty());
    }

    fn record(request: &str) -> PlanRecord {
        PlanRecord {
            request: request.to_string(),
            steps: vec!["WRITE calc.py: the script\nwith a newline".into()],
            touched: vec!["calc.py".into()],
            side_effects: vec!["RUN python3 -m py_compile calc.py: exit 0".into()],
            failed: vec![],
            model: "gemini-2.5-flash-lite".into(),
            calls: 1,
            input_tokens: 1234,
            output_tokens: 567,
            cached_tokens: 0,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn plan_message_round_trips_trailers() {
        let msg = plan_message("20250101_120000", 3, &record("make me a calculator"), None);
        assert!(msg.starts_with(
            "pai: make me a calculator\n\nSteps:\n1. WRITE calc.py: the script with a newline\n"
        ));
        let t = parse(&msg);
        assert_eq!(t.session.as_deref(), Some("20250101_120000"));
        assert_eq!(t.plan, Some(3));
        assert_eq!(t.kind, Some(Kind::Plan));
        assert_eq!(t.model.as_deref(), Some("gemini-2.5-flash-lite"));
        assert_eq!(t.calls, Some(1));
        assert_eq!(t.tokens.map(|t| (t.input, t.output)), Some((1234, 567)));
        assert_eq!(
            parse_tokens("5 in, 6 out, 2 cached, 1 reasoning"),
            Some(TokenCounts {
                input: 5,
                output: 6,
                cached: 2,
                reasoning: 1
            })
        );
        assert_eq!(parse_tokens("5 in, 6 out").map(|t| t.cached), Some(0));
        assert_eq!(request_of(&msg), "make me a calculator");
    }

    #[test]
    fn long_or_multiline_requests_are_shortened_and_kept_whole() {
        let long = format!("{}\n\nsecond paragraph: Pai-Kind: user", "word ".repeat(30));
        let msg = plan_message("s", 1, &record(&long), None);
        let subject = msg.lines().next().unwrap();
        assert!(subject.chars().count() <= SUBJECT_MAX, "{subject}");
        assert!(subject.ends_with('…'));
        assert_eq!(
            request_of(&msg),
            long.trim()
                .lines()
                .map(str::trim_end)
                .collect::<Vec<_>>()
                .join("\n")
        );
        // Text inside the request never reads as a trailer.
        assert_eq!(parse(&msg).kind, Some(Kind::Plan));
    }

    #[test]
    fn a_partly_failed_plan_says_so_in_its_body() {
        let mut partly = record("write two files");
        partly.failed = vec!["WRITE notes/: the path ends with '/'".into()];
        let msg = plan_message("s", 1, &partly, None);
        assert!(
            msg.contains(&format!(
                "{PARTLY_FAILED}\n- WRITE notes/: the path ends with '/'\n\n"
            )),
            "{msg}"
        );
        assert_eq!(failed_of(&msg), partly.failed);
        assert_eq!(parse(&msg).kind, Some(Kind::Plan), "the trailers stay last");
        let whole = plan_message("s", 1, &record("write two files"), None);
        assert!(!whole.contains("failed"), "{whole}");
        assert!(failed_of(&whole).is_empty());
    }

    #[test]
    fn user_snapshot_is_kind_user() {
        let msg = user_message("s", 2, false, &["a.txt".into()]);
        let t = parse(&msg);
        assert_eq!((t.kind, t.plan), (Some(Kind::User), Some(2)));
        assert_eq!(parse("plain commit\n\nno trailers").kind, None);
    }
}
