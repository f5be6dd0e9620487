//! The session log of SPEC section 9: `.pai_history/session_<id>.log`, human-readable in the
//! thesis' style, and its machine-readable twin `session_<id>.jsonl` (one JSON object a line)
//! that tests and tools read.
//!
//! Every record is formatted in memory and appended with a single `write` on a file opened
//! with `O_APPEND`, so a crash can cut off at most the record being written, never corrupt
//! earlier ones. Known secrets are scrubbed from every record before it is written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::Local;
use serde_json::{Value, json};

use super::context::TurnMemo;
use super::events::{Event, StepReport, Tally, TurnResult, TurnStatus};
use super::plan::{Analysis, PlannedStep};

/// Bytes of one command's output written to the session log; the rest is counted, not kept,
/// so a runaway command cannot fill the disk.
const LOGGED_OUTPUT_MAX: usize = 4 * 1024 * 1024;

/// A log file the state directory opened for appending.
type LogSink = Box<dyn Write + Send>;

/// An open session log.
pub struct Journal {
    text: Mutex<LogSink>,
    json: Mutex<LogSink>,
    /// The phase whose execution block is open, and the bytes of RUN output logged for the
    /// step under way.
    open: Mutex<(Option<u32>, (u32, usize), usize)>,
    text_path: PathBuf,
    secrets: Vec<String>,
    /// The session id, part of every record's mark.
    id: String,
}

impl Journal {
    /// Open (creating) the two log files of session `id` under `root/.pai_history/`.
    pub fn open(root: &Path, id: &str, secrets: Vec<String>) -> std::io::Result<Journal> {
        // Through the state directory: a planted link at `.pai_history` or at a log file is
        // refused, never appended to.
        let state = crate::workspace::StateDir::open(root, true)?;
        let open = |name: String| -> std::io::Result<LogSink> {
            Ok(Box::new(state.open_append(&[name.as_str()])?))
        };
        let text_path = state.path().join(format!("session_{id}.log"));
        Ok(Journal {
            text: Mutex::new(open(format!("session_{id}.log"))?),
            json: Mutex::new(open(format!("session_{id}.jsonl"))?),
            text_path,
            open: Mutex::new((None, (0, 0), 0)),
            secrets: secrets.into_iter().filter(|s| s.len() >= 8).collect(),
            id: id.to_string(),
        })
    }

    /// The human-readable log's path.
    pub fn path(&self) -> &Path {
        &self.text_path
    }

    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            out = out.replace(secret.as_str(), "[REDACTED]");
        }
        out
    }

    /// Append one record: `lines` to the text log (each prefixed with the time), `value` to
    /// the JSON log. Logging must never break a turn, so write errors are returned for the
    /// caller to report once, not raised.
    fn append(&self, lines: &[String], mut value: Value) -> std::io::Result<()> {
        let now = Local::now();
        let stamp = now.format("%Y-%m-%d %H:%M:%S");
        let mut block = String::new();
        for line in lines {
            for sub in line.split('\n') {
                block.push_str(&format!("[{stamp}] {sub}\n"));
            }
        }
        if let Value::Object(map) = &mut value {
            map.insert("time".into(), Value::String(now.to_rfc3339()));
        }
        let block = self.scrub(&block);
        let json_line = self.scrub(&value.to_string());
        // Sealed with pai's mark: only records pai wrote for this user are read back for
        // `--continue` and `pai resume` (a repository can ship `.pai_history` whole).
        let mut json_line = crate::history::seal_record(&self.id, &json_line).unwrap_or(json_line);
        json_line.push('\n');
        if let Ok(mut f) = self.text.lock() {
            f.write_all(block.as_bytes())?;
        }
        if let Ok(mut f) = self.json.lock() {
            f.write_all(json_line.as_bytes())?;
        }
        Ok(())
    }

    /// Record one event of a turn: the session log is one more consumer of the events the
    /// frontends render, so what the screen showed and what the log holds cannot drift.
    /// Events that only animate the screen (thinking, streamed text, usage) are left out.
    pub fn record(&self, event: &Event) {
        // A full disk must not break the turn; the session log is a record, not the work.
        let _ = self.record_event(event);
    }

    fn record_event(&self, event: &Event) -> std::io::Result<()> {
        match event {
            Event::SessionStarted {
                root,
                provider,
                model,
                branch,
                continued,
            } => {
                if *continued {
                    self.session_continued(branch.as_deref())
                } else {
                    self.session_started(root, provider, model, branch.as_deref())
                }
            }
            Event::TurnStarted { request, amended } => {
                if *amended {
                    self.note(&format!("request amended: {request}"))?;
                }
                self.user(request)
            }
            Event::Remembered { memo } => {
                self.close_execution()?;
                self.memo(memo)
            }
            Event::MemoryCleared => self.memory_cleared(),
            Event::Plan {
                phase,
                reply,
                analysis,
                steps,
                ..
            } => {
                self.close_execution()?;
                self.planning(*phase, reply, analysis, steps)
            }
            Event::Step(report) => {
                self.open_execution(report.phase)?;
                self.step(report)
            }
            Event::RunOutput { phase, index, line } => self.run_output_line(*phase, *index, line),
            Event::Answer { text } => self.answer(text),
            Event::Notice { text } => self.note(text),
            Event::Mapping { .. } => Ok(()),
            Event::Committed { commit, branch } => {
                self.close_execution()?;
                self.commit(commit, branch)
            }
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
                result,
                ..
            } => {
                self.close_execution()?;
                let tally = Tally {
                    unmetered: *calls_without_usage,
                    calls: *calls,
                    input: *input_tokens,
                    output: *output_tokens,
                    cached: *cached_tokens,
                    reasoning: *reasoning_tokens,
                };
                self.finished(*status, message, next_steps, &tally, result)
            }
            // A step's questions and a command's output belong in the block of its phase.
            Event::StepStarted { phase, .. } | Event::RunStarted { phase, .. } => {
                self.open_execution(*phase)
            }
            Event::Thinking { .. } | Event::TextDelta { .. } | Event::Usage { .. } => Ok(()),
        }
    }

    /// AI EXECUTION START before the first step of a phase.
    fn open_execution(&self, phase: u32) -> std::io::Result<()> {
        let Ok(mut open) = self.open.lock() else {
            return Ok(());
        };
        if open.0 == Some(phase) {
            return Ok(());
        }
        let was = open.0.replace(phase);
        drop(open);
        if let Some(p) = was {
            self.append(
                &[format!("AI EXECUTION END (phase {p})")],
                json!({"kind": "execution_end", "phase": p}),
            )?;
        }
        self.append(
            &[format!("AI EXECUTION START (phase {phase})")],
            json!({"kind": "execution_start", "phase": phase}),
        )
    }

    /// AI EXECUTION END after a phase's last step.
    fn close_execution(&self) -> std::io::Result<()> {
        let was = self.open.lock().ok().and_then(|mut o| o.0.take());
        match was {
            Some(p) => self.append(
                &[format!("AI EXECUTION END (phase {p})")],
                json!({"kind": "execution_end", "phase": p}),
            ),
            None => Ok(()),
        }
    }

    /// One step: SUCCESS/FAILED, its output, the file it showed and its diff.
    fn step(&self, r: &StepReport) -> std::io::Result<()> {
        let mark = if r.ok { "SUCCESS" } else { "FAILED" };
        let mut lines = vec![format!(
            "[{}] {} {}: {mark}",
            r.index,
            r.action,
            first_line(&r.target)
        )];
        for l in r.output.lines() {
            lines.push(format!("    {l}"));
        }
        if let Some(view) = &r.file_view {
            for l in view.text.lines() {
                lines.push(format!("    | {l}"));
            }
        }
        if let Some(diff) = &r.diff {
            for l in diff.lines() {
                lines.push(format!("    {l}"));
            }
        }
        self.append(&lines, json!({"kind": "step", "step": r}))
    }

    /// One line a running command printed: every line is logged up to
    /// [`LOGGED_OUTPUT_MAX`] per command, then a note says the rest is not.
    fn run_output_line(&self, phase: u32, index: usize, line: &str) -> std::io::Result<()> {
        let Ok(mut open) = self.open.lock() else {
            return Ok(());
        };
        let step = (phase, index);
        if open.1 != step {
            open.1 = step;
            open.2 = 0;
        }
        let before = open.2;
        open.2 = before.saturating_add(line.len() + 1);
        let after = open.2;
        drop(open);
        if after <= LOGGED_OUTPUT_MAX {
            self.append(
                &[format!("RUN OUTPUT: {line}")],
                json!({"kind": "run_output", "phase": phase, "index": index, "line": line}),
            )
        } else if before <= LOGGED_OUTPUT_MAX {
            self.note(&format!(
                "output of step {index} beyond {} MiB is not logged",
                LOGGED_OUTPUT_MAX / (1024 * 1024)
            ))
        } else {
            Ok(())
        }
    }

    /// SESSION STARTED.
    fn session_started(
        &self,
        root: &str,
        provider: &str,
        model: &str,
        branch: Option<&str>,
    ) -> std::io::Result<()> {
        let mut lines = vec![
            "SESSION STARTED".to_string(),
            format!("Working Directory: {root}"),
            format!("Provider: {provider}  Model: {model}"),
        ];
        if let Some(b) = branch {
            lines.push(format!("Branch: {b}"));
        }
        self.append(&lines, json!({"kind": "session_started", "root": root, "provider": provider, "model": model, "branch": branch}))
    }

    /// USER: the request.
    fn user(&self, request: &str) -> std::io::Result<()> {
        self.append(
            &[format!("USER: {request}")],
            json!({"kind": "user", "request": request}),
        )
    }

    /// AI PLANNING START ... END with intent, files and the numbered plan.
    fn planning(
        &self,
        phase: u32,
        reply: &str,
        a: &Analysis,
        steps: &[PlannedStep],
    ) -> std::io::Result<()> {
        let mut lines = vec![
            format!("AI PLANNING START (phase {phase})"),
            format!(
                "Intent: Task: {}",
                if a.user_intent.is_empty() {
                    reply
                } else {
                    &a.user_intent
                }
            ),
        ];
        let files = |label: &str, list: &[String]| {
            (!list.is_empty()).then(|| format!("{label}: {}", list.join(", ")))
        };
        lines.extend(files("Files to read", &a.files_to_read));
        lines.extend(files("Files to create", &a.files_to_create));
        lines.extend(files("Files to modify", &a.files_to_modify));
        if !steps.is_empty() {
            lines.push("Plan:".into());
            for (i, s) in steps.iter().enumerate() {
                let purpose = if s.purpose.is_empty() {
                    String::new()
                } else {
                    format!(" - {}", s.purpose)
                };
                lines.push(format!(
                    "  {}. {} {}{purpose}",
                    i + 1,
                    s.step.action(),
                    first_line(&s.step.target())
                ));
            }
        }
        lines.push("AI PLANNING END".into());
        self.append(
            &lines,
            json!({"kind": "plan", "phase": phase, "reply": reply, "analysis": a, "steps": steps}),
        )
    }

    /// The chat answer.
    fn answer(&self, text: &str) -> std::io::Result<()> {
        self.append(
            &[format!("AI ANSWER: {text}")],
            json!({"kind": "answer", "text": text}),
        )
    }

    /// A plain note (read-only session, interruption, commit failure).
    fn note(&self, text: &str) -> std::io::Result<()> {
        self.append(
            &[format!("NOTE: {text}")],
            json!({"kind": "note", "text": text}),
        )
    }

    /// What the session remembers of a finished turn (the memory a continued session gets
    /// back: see [`load_memory`]).
    fn memo(&self, memo: &TurnMemo) -> std::io::Result<()> {
        self.append(
            &[format!("MEMORY: {} -> {}", memo.request, memo.outcome)],
            json!({"kind": "memo", "memo": memo}),
        )
    }

    /// `/clear`: a continued session does not get back what was remembered before this.
    fn memory_cleared(&self) -> std::io::Result<()> {
        self.append(
            &["MEMORY CLEARED".to_string()],
            json!({"kind": "memory_cleared"}),
        )
    }

    /// SESSION CONTINUED: a later process picked the session up again.
    fn session_continued(&self, branch: Option<&str>) -> std::io::Result<()> {
        self.append(
            &[format!(
                "SESSION CONTINUED{}",
                branch.map(|b| format!(" on {b}")).unwrap_or_default()
            )],
            json!({"kind": "session_continued", "branch": branch}),
        )
    }

    /// The commit that records the plan.
    fn commit(&self, commit: &str, branch: &str) -> std::io::Result<()> {
        self.append(
            &[format!("COMMIT: {commit} on {branch}")],
            json!({"kind": "commit", "commit": commit, "branch": branch}),
        )
    }

    /// AI FINAL RESULT (the verdict and the message), the failed steps left undone and those
    /// given up, what changed, AI SUGGESTION, and the turn's calls and tokens.
    fn finished(
        &self,
        status: TurnStatus,
        message: &str,
        next_steps: &[String],
        tally: &Tally,
        result: &TurnResult,
    ) -> std::io::Result<()> {
        let Tally {
            calls,
            input,
            output,
            cached,
            reasoning,
            unmetered,
        } = *tally;
        let mut lines = vec![format!("AI FINAL RESULT: {status:?}: {message}")];
        for (label, steps) in [
            ("FAILED STEP", &result.failed_steps),
            ("GIVEN UP", &result.given_up),
        ] {
            for s in steps {
                lines.push(format!(
                    "{label}: {} {} (phase {}, step {}): {}",
                    s.action, s.target, s.phase, s.index, s.error
                ));
            }
        }
        if !result.failed_steps.is_empty() || !result.given_up.is_empty() {
            lines.push(match result.changed.as_slice() {
                [] => "CHANGED: nothing".to_string(),
                paths => format!("CHANGED: {}", paths.join(", ")),
            });
        }
        for s in next_steps {
            lines.push(format!("AI SUGGESTION: {s}"));
        }
        lines.push(format!(
            "USAGE: {calls} call(s), {input} input tokens ({cached} cached), {output} output tokens ({reasoning} reasoning)"
        ));
        if unmetered > 0 {
            lines.push(format!(
                "USAGE UNKNOWN: the server reported no usage for {unmetered} call(s)"
            ));
        }
        self.append(
            &lines,
            json!({"kind": "finished", "status": status, "message": message, "failed_steps": result.failed_steps, "given_up": result.given_up, "changed": result.changed, "next_steps": next_steps, "calls": calls, "input_tokens": input, "output_tokens": output, "cached_tokens": cached, "reasoning_tokens": reasoning}),
        )
    }
}

/// A session found in `.pai_history`, for `pai resume` and `pai --continue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    /// The session id (`YYYYMMDD_HHMMSS[-n]`).
    pub id: String,
    /// Requests made in it, oldest first.
    pub requests: Vec<String>,
}

/// The sessions of the project at `root` worth resuming, oldest first (ids are start times,
/// so their order is the order they started in): those whose JSON session log holds a turn
/// that was carried out, answered or declined. A session that only showed plans (`--plan`,
/// a dry run without a terminal), or that ended before its first request, is left out; its
/// logs stay in `.pai_history` (they are what it showed) until `pai gc` prunes them.
pub fn list_sessions(root: &Path) -> Vec<SessionEntry> {
    let Ok(state) = crate::workspace::StateDir::open(root, false) else {
        return Vec::new();
    };
    let Ok(entries) = state.entries(&[]) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .into_iter()
        .filter(|(_, is_dir)| !is_dir)
        .filter_map(|(name, _)| {
            name.strip_prefix("session_")?
                .strip_suffix(".jsonl")
                .map(str::to_string)
        })
        .filter(|id| is_session_id(id))
        .collect();
    ids.sort();
    ids.into_iter()
        .filter_map(|id| {
            let records = records(&state, &id);
            let finished: Vec<&str> = records
                .iter()
                .filter(|v| v["kind"] == "finished")
                .filter_map(|v| v["status"].as_str())
                .collect();
            // Older logs without `finished` records: any request counts.
            let worth = if finished.is_empty() {
                records.iter().any(|v| v["kind"] == "user")
            } else {
                finished
                    .iter()
                    .any(|s| !matches!(*s, "planned" | "not_approved"))
            };
            if !worth {
                return None;
            }
            let requests = records
                .into_iter()
                .filter(|v| v["kind"] == "user")
                .filter_map(|v| v["request"].as_str().map(str::to_string))
                .collect();
            Some(SessionEntry { id, requests })
        })
        .collect()
}

/// Whether `id` has the shape of a session id (`YYYYMMDD_HHMMSS`, maybe `-n`): anything else
/// in `.pai_history` (which a cloned repository may hold) is not offered as a session.
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || c == '_' || c == '-')
}

/// The memory of session `id`'s last turns, from its JSON log: the `memo` records (older logs
/// without them: each request with how its turn finished). At most the last `max`.
pub fn load_memory(root: &Path, id: &str, max: usize) -> Vec<TurnMemo> {
    let Ok(state) = crate::workspace::StateDir::open(root, false) else {
        return Vec::new();
    };
    let records = records(&state, id);
    let after_clear = records
        .iter()
        .rposition(|v| v["kind"] == "memory_cleared")
        .map_or(0, |i| i + 1);
    let records = &records[after_clear..];
    let mut memos: Vec<TurnMemo> = records
        .iter()
        .filter(|v| v["kind"] == "memo")
        .filter_map(|v| serde_json::from_value(v["memo"].clone()).ok())
        .collect();
    if memos.is_empty() {
        let mut request: Option<String> = None;
        for v in records {
            match v["kind"].as_str() {
                Some("user") => request = v["request"].as_str().map(str::to_string),
                Some("finished") => {
                    if let Some(request) = request.take() {
                        memos.push(TurnMemo {
                            request,
                            outcome: format!(
                                "{}: {}",
                                v["status"].as_str().unwrap_or("unknown"),
                                first_line(v["message"].as_str().unwrap_or_default())
                            ),
                            files: Vec::new(),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    let skip = memos.len().saturating_sub(max);
    memos.into_iter().skip(skip).collect()
}

/// The records of session `id`'s JSON log that pai wrote for this user (their mark verifies);
/// lines that do not (a record cut by a crash, one the repository shipped or changed) are
/// skipped.
fn records(state: &crate::workspace::StateDir, id: &str) -> Vec<Value> {
    let name = format!("session_{id}.jsonl");
    let Ok(Some(bytes)) = state.read(&[name.as_str()]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| crate::history::open_record(id, l))
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end of a turn whose RUN failed and was not redone.
    fn failed_finish() -> Event {
        Event::Finished {
            status: TurnStatus::Failed,
            message: "a step failed".into(),
            next_steps: vec![],
            calls: 1,
            input_tokens: 10,
            output_tokens: 2,
            cached_tokens: 0,
            reasoning_tokens: 0,
            calls_without_usage: 0,
            verified: None,
            result: TurnResult {
                failed_steps: vec![crate::agent::events::FailedStep {
                    phase: 1,
                    index: 2,
                    action: "RUN".into(),
                    target: "make".into(),
                    error: "exit code 2".into(),
                }],
                given_up: vec![],
                changed: vec![],
            },
        }
    }

    #[test]
    fn the_log_follows_the_events_of_a_turn_in_order() {
        use crate::agent::plan::Step;
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), "20260101_000001", vec![]).unwrap();
        let step = |index: usize, ok: bool| {
            Event::Step(StepReport {
                index,
                phase: 1,
                action: "RUN".into(),
                target: "make".into(),
                ok,
                output: format!("out {index}"),
                diff: None,
                file_view: None,
            })
        };
        j.record(&Event::Thinking { phase: 1 });
        j.record(&Event::Plan {
            phase: 1,
            reply: "On it.".into(),
            analysis: Analysis::default(),
            complexity: Default::default(),
            steps: vec![PlannedStep {
                step: Step::Run {
                    command: "make".into(),
                },
                purpose: String::new(),
                preview: None,
            }],
            observe: false,
        });
        j.record(&Event::RunStarted {
            phase: 1,
            index: 1,
            command: "make".into(),
        });
        j.record(&Event::RunOutput {
            phase: 1,
            index: 1,
            line: "building".into(),
        });
        j.record(&step(1, true));
        j.record(&step(2, false));
        j.record(&Event::Committed {
            commit: "abc1234".into(),
            branch: "pai/x".into(),
        });
        j.record(&failed_finish());
        let text = std::fs::read_to_string(j.path()).unwrap();
        let order = [
            "AI PLANNING START (phase 1)",
            "1. RUN make",
            "AI EXECUTION START (phase 1)",
            "RUN OUTPUT: building",
            "[1] RUN make: SUCCESS",
            "[2] RUN make: FAILED",
            "AI EXECUTION END (phase 1)",
            "COMMIT: abc1234 on pai/x",
            "AI FINAL RESULT: Failed: a step failed",
            "FAILED STEP: RUN make (phase 1, step 2): exit code 2",
            "CHANGED: nothing",
        ];
        let mut at = 0;
        for marker in order {
            let found = text[at..]
                .find(marker)
                .unwrap_or_else(|| panic!("{marker} missing after {at}:\n{text}"));
            at += found;
        }
        assert!(!text.contains("Thinking"), "{text}");
    }

    #[test]
    fn records_are_appended_and_secrets_scrubbed() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(
            dir.path(),
            "20260101_000000",
            vec!["SECRET-KEY-123456".into()],
        )
        .unwrap();
        j.session_started(&dir.path().display().to_string(), "gemini", "m", None)
            .unwrap();
        j.user("please use SECRET-KEY-123456").unwrap();
        let text = std::fs::read_to_string(j.path()).unwrap();
        assert!(text.contains("SESSION STARTED") && text.contains("USER: please use [REDACTED]"));
        assert!(!text.contains("SECRET-KEY-123456"));
        let json = std::fs::read_to_string(
            dir.path()
                .join(".pai_history/session_20260101_000000.jsonl"),
        )
        .unwrap();
        assert_eq!(json.lines().count(), 2);
        for line in json.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(v["kind"].is_string());
        }
    }

    #[test]
    fn memory_comes_back_from_the_log_after_the_last_clear() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), "20260101_000000", vec![]).unwrap();
        let memo = |r: &str| TurnMemo {
            request: r.into(),
            outcome: "Success: done".into(),
            files: vec!["a.py".into()],
        };
        j.user("forgotten").unwrap();
        j.memo(&memo("forgotten")).unwrap();
        j.memory_cleared().unwrap();
        for r in ["one", "two", "three"] {
            j.user(r).unwrap();
            j.memo(&memo(r)).unwrap();
        }
        let got = load_memory(dir.path(), "20260101_000000", 2);
        assert_eq!(got, vec![memo("two"), memo("three")]);

        // A log without memo records: requests with how their turns finished.
        let old = Journal::open(dir.path(), "20250101_000000", vec![]).unwrap();
        old.user("make x").unwrap();
        old.finished(
            TurnStatus::Failed,
            "it broke\nbadly",
            &[],
            &Tally::default(),
            &TurnResult::default(),
        )
        .unwrap();
        let got = load_memory(dir.path(), "20250101_000000", 5);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].request, "make x");
        assert_eq!(got[0].outcome, "failed: it broke");

        // Sessions are listed oldest first; a planted file with another shape is not one.
        std::fs::write(dir.path().join(".pai_history/session_evil name.jsonl"), "").unwrap();
        let ids: Vec<String> = list_sessions(dir.path())
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, vec!["20250101_000000", "20260101_000000"]);
    }
}
