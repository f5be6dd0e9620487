//! Plain-text snapshots of the rendering of every event type (60 columns, ASCII, no colour),
//! and checks that no rendering, plain or coloured, is wider than the terminal.

use crate::support::pty;
use pai::agent::events::{
    CallUsage, Event, FailedStep, FileView, RunQuestion, StepReport, TurnResult, TurnStatus,
};
use pai::agent::plan::{Analysis, Complexity, PlannedStep, Step};

use std::path::PathBuf;

use pai::agent::events::Tally;
use pai::ui::SessionInfo;
use pai::ui::layout::{Theme, display_width};
use pai::ui::present::Presenter;
use pai::ui::render;

fn plain(event: &Event) -> String {
    render::event(event, &Theme::plain(60))
}

fn plan_event() -> Event {
    Event::Plan {
        phase: 1,
        reply: "I'll create a BMI calculator in Python with a category function.".into(),
        analysis: Analysis {
            risks: "none; the project is empty".into(),
            ..Analysis::default()
        },
        complexity: Complexity::Moderate,
        steps: vec![
            PlannedStep {
                step: Step::Write {
                    path: "bmi.py".into(),
                    content: "x".into(),
                },
                purpose: "Create the calculator with get_bmi and get_bmi_category".into(),
                preview: None,
            },
            PlannedStep {
                step: Step::Run {
                    command: "python3 -m py_compile bmi.py".into(),
                },
                purpose: "Check that it compiles".into(),
                preview: None,
            },
            PlannedStep {
                step: Step::Finish {
                    message: "done".into(),
                },
                purpose: String::new(),
                preview: None,
            },
        ],
        observe: false,
    }
}

fn all_events() -> Vec<Event> {
    vec![
        Event::Thinking { phase: 1 },
        Event::Thinking { phase: 2 },
        Event::TextDelta { text: "Sure".into() },
        Event::Usage {
            call: 1,
            usage: CallUsage {
                input: 1234,
                output: 210,
                cached: 1000,
                reasoning: 0,
                unknown: false,
                failed: false,
            },
        },
        Event::Answer {
            text: "Python is a programming language.\nIt is popular.".into(),
        },
        plan_event(),
        Event::Step(StepReport {
            index: 1,
            phase: 1,
            action: "WRITE".into(),
            target: "bmi.py".into(),
            ok: true,
            output: "created bmi.py (3 lines)".into(),
            diff: Some("--- /dev/null\n+++ b/bmi.py\n@@ -0,0 +1,3 @@\n+def get_bmi(w, h):\n+    return w / h ** 2\n+".into()),
            file_view: None,
        }),
        Event::Step(StepReport {
            index: 2,
            phase: 1,
            action: "MODIFY".into(),
            target: "main.py".into(),
            ok: false,
            output: "cannot modify main.py: search text not found: `def foo(`".into(),
            diff: None,
            file_view: None,
        }),
        Event::Step(StepReport {
            index: 1,
            phase: 2,
            action: "READ".into(),
            target: "long.py".into(),
            ok: true,
            output: "read long.py (25 lines)".into(),
            diff: None,
            file_view: Some(FileView {
                path: "long.py".into(),
                text: (1..=25).map(|i| format!("x{i} = {i}\n")).collect(),
                first_line: 1,
            }),
        }),
        Event::Notice {
            text: "the model's plan was rejected; asking it once to correct it".into(),
        },
        Event::Committed {
            commit: "a1b2c3d".into(),
            branch: "pai/20250101_120000".into(),
        },
        Event::Finished {
            status: TurnStatus::Success,
            message: "Created bmi.py.".into(),
            next_steps: vec![
                "Add tests for get_bmi_category".into(),
                "Run python3 bmi.py".into(),
            ],
            calls: 1,
            input_tokens: 1234,
            output_tokens: 210,
            cached_tokens: 0,
            reasoning_tokens: 0,
            calls_without_usage: 0,
            verified: Some(true),
            result: TurnResult::default(),
        },
    ]
}

/// The names of [`all_events`], in order, for their snapshots.
const EVENT_NAMES: [&str; 12] = [
    "thinking",
    "thinking2",
    "delta",
    "usage",
    "answer",
    "plan",
    "step_ok",
    "step_failed",
    "step_file",
    "notice",
    "committed",
    "finished",
];

#[test]
fn every_event_matches_its_reviewed_snapshot() {
    let events = all_events();
    assert_eq!(events.len(), EVENT_NAMES.len());
    for (name, event) in EVENT_NAMES.iter().zip(&events) {
        insta::assert_snapshot!(format!("plain_{name}"), plain(event));
    }
}

#[test]
fn the_run_question_matches_its_reviewed_snapshot() {
    let q = RunQuestion {
        command: "cargo test".into(),
        confined: true,
        rule: Some("cargo test".into()),
        can_save: true,
    };
    insta::assert_snapshot!("run_question", render::run_question(&q, &Theme::plain(60)));
}

fn event_named(name: &str) -> Event {
    let index = match name {
        "thinking" => 0,
        "thinking2" => 1,
        "delta" => 2,
        "usage" => 3,
        "answer" => 4,
        "plan" => 5,
        "step_ok" => 6,
        "step_failed" => 7,
        "step_file" => 8,
        "notice" => 9,
        "committed" => 10,
        "finished" => 11,
        other => panic!("{other}"),
    };
    all_events().swap_remove(index)
}

#[test]
fn thinking() {
    assert_eq!(plain(&event_named("thinking")), "... thinking\n");
    assert_eq!(plain(&event_named("thinking2")), "... thinking (phase 2)\n");
}

#[test]
fn text_delta_is_the_text_itself() {
    assert_eq!(plain(&event_named("delta")), "Sure");
}

#[test]
fn usage() {
    assert_eq!(
        plain(&event_named("usage")),
        "Tokens: 1234 -> 210 (call 1, 1000 cached)\n"
    );
}

#[test]
fn answer() {
    assert_eq!(
        plain(&event_named("answer")),
        "\
+- pai ----------------------------------------------------+
| Python is a programming language.                        |
| It is popular.                                           |
+----------------------------------------------------------+
"
    );
}

#[test]
fn plan() {
    assert_eq!(
        plain(&event_named("plan")),
        "\
+- pai ----------------------------------------------------+
| I'll create a BMI calculator in Python with a category   |
| function.                                                |
+----------------------------------------------------------+
+- Plan (moderate, 3 steps) -------------------------------+
| 1. WRITE   bmi.py                                        |
|            Create the calculator with get_bmi and        |
|            get_bmi_category                              |
| 2. RUN     python3 -m py_compile bmi.py                  |
|            Check that it compiles                        |
| 3. FINISH  done                                          |
|                                                          |
| Risks: none; the project is empty                        |
+----------------------------------------------------------+
"
    );
}

#[test]
fn a_later_phase_that_observes() {
    let event = Event::Plan {
        phase: 2,
        reply: String::new(),
        analysis: Analysis::default(),
        complexity: Complexity::Simple,
        steps: vec![PlannedStep {
            step: Step::Read {
                path: "main.py".into(),
                lines: None,
            },
            purpose: "See the error".into(),
            preview: None,
        }],
        observe: true,
    };
    assert_eq!(
        plain(&event),
        "\
+- Plan, phase 2 (simple, 1 step) -------------------------+
| 1. READ  main.py                                         |
|          See the error                                   |
|                                                          |
| pai will look at the results before planning the rest.   |
+----------------------------------------------------------+
"
    );
}

#[test]
fn step_with_diff() {
    assert_eq!(
        plain(&event_named("step_ok")),
        "\
[ok] 1. WRITE bmi.py
    created bmi.py (3 lines)
    --- /dev/null
    +++ b/bmi.py
    @@ -0,0 +1,3 @@
    +def get_bmi(w, h):
    +    return w / h ** 2
    +
"
    );
}

#[test]
fn failed_step() {
    assert_eq!(
        plain(&event_named("step_failed")),
        "\
[FAIL] 2. MODIFY main.py
    cannot modify main.py: search text not found: `def foo(`
"
    );
}

#[test]
fn file_view_is_cut_at_twenty_lines() {
    let expected: String = [
        "[ok] 1. READ long.py\n".to_string(),
        "    read long.py (25 lines)\n".to_string(),
        "+- long.py ------------------------------------------------+\n".to_string(),
    ]
    .into_iter()
    .chain((1..=20).map(|i| format!("| {i:>2} | {:<51} |\n", format!("x{i} = {i}"))))
    .chain([
        "| ... 5 more lines                                         |\n".to_string(),
        "+----------------------------------------------------------+\n".to_string(),
    ])
    .collect();
    assert_eq!(plain(&event_named("step_file")), expected);
}

#[test]
fn notice() {
    assert_eq!(
        plain(&event_named("notice")),
        "note: the model's plan was rejected; asking it once to\n      correct it\n"
    );
}

#[test]
fn committed() {
    assert_eq!(
        plain(&event_named("committed")),
        "Committed a1b2c3d on pai/20250101_120000\n"
    );
}

#[test]
fn finished() {
    assert_eq!(
        plain(&event_named("finished")),
        "\
+- Done ---------------------------------------------------+
| Created bmi.py.                                          |
| Verified: the check passed                               |
+----------------------------------------------------------+
+- Next steps ---------------------------------------------+
| - Add tests for get_bmi_category                         |
| - Run python3 bmi.py                                     |
+----------------------------------------------------------+
Turn: 1 call, Tokens: 1234 -> 210
"
    );
}

fn finished_with(status: TurnStatus, message: &str) -> Event {
    Event::Finished {
        status,
        message: message.into(),
        next_steps: vec![],
        calls: 2,
        input_tokens: 3000,
        output_tokens: 400,
        cached_tokens: 0,
        reasoning_tokens: 0,
        calls_without_usage: 0,
        verified: None,
        result: TurnResult::default(),
    }
}

/// A partly failed turn: the verdict is the title; the model's message is the message; the
/// failed steps, those given up and what changed follow.
#[test]
fn a_partly_failed_turn_names_its_failed_steps_and_what_changed() {
    let step = |action: &str, target: &str, index: usize, error: &str| FailedStep {
        phase: 1,
        index,
        action: action.into(),
        target: target.into(),
        error: error.into(),
    };
    let mut event = finished_with(TurnStatus::Failed, "both files written");
    if let Event::Finished { result, .. } = &mut event {
        *result = TurnResult {
            failed_steps: vec![step("WRITE", "notes/", 2, "the path ends with '/'")],
            given_up: vec![step("RUN", "make docs", 3, "exit code 2")],
            changed: vec!["b.txt".into()],
        };
    }
    assert_eq!(
        plain(&event),
        "\
+- Failed -------------------------------------------------+
| both files written                                       |
| Failed, not redone:                                      |
| - WRITE notes/ (phase 1, step 2): the path ends with '/' |
| Given up by the model:                                   |
| - RUN make docs (phase 1, step 3): exit code 2           |
| Changed: b.txt                                           |
+----------------------------------------------------------+
Turn: 2 calls, Tokens: 3000 -> 400
"
    );
    // Nothing changed is said too; a turn without failed steps shows none of it.
    if let Event::Finished { result, .. } = &mut event {
        result.changed.clear();
    }
    assert!(
        plain(&event).contains("| Changed: nothing "),
        "{}",
        plain(&event)
    );
    assert!(!plain(&finished_with(TurnStatus::Success, "done")).contains("Changed"));
}

#[test]
fn other_endings() {
    assert_eq!(
        plain(&finished_with(TurnStatus::Failed, "MODIFY main.py failed")),
        "\
+- Failed -------------------------------------------------+
| MODIFY main.py failed                                    |
+----------------------------------------------------------+
Turn: 2 calls, Tokens: 3000 -> 400
"
    );
    assert!(
        plain(&finished_with(TurnStatus::Rejected, "declined")).starts_with("+- Not carried out -")
    );
    assert!(
        plain(&finished_with(TurnStatus::Interrupted, "stopped")).starts_with("+- Interrupted -")
    );
    // A chat answer was already shown: only the summary.
    assert_eq!(
        plain(&finished_with(TurnStatus::Answered, "the answer")),
        "Turn: 2 calls, Tokens: 3000 -> 400\n"
    );
    // From one call, the call's usage line already gave its tokens: not printed twice.
    let mut one_call = finished_with(TurnStatus::Answered, "the answer");
    if let Event::Finished { calls, .. } = &mut one_call {
        *calls = 1;
    }
    assert_eq!(plain(&one_call), "");
    assert!(
        plain(&finished_with(TurnStatus::NotApproved, "not approved"))
            .starts_with("+- Not approved -")
    );
}

#[test]
fn a_whole_turn_through_the_presenter() {
    let theme = Theme::plain(60);
    let mut p = Presenter::new(true);
    let mut out = String::new();
    let mut events = vec![Event::Thinking { phase: 1 }];
    events.extend(
        "I'll create a BMI calculator in Python with a category function."
            .split_inclusive(' ')
            .map(|w| Event::TextDelta { text: w.into() }),
    );
    events.extend(all_events().into_iter().skip(3));
    for e in &events {
        out.push_str(&p.event(e, &theme));
    }
    assert!(out.starts_with(
        "... thinking\nI'll create a BMI calculator in Python with a category\nfunction.\nTokens:"
    ), "{out}");
    // The streamed acknowledgment is not repeated in a panel; the plan follows.
    assert!(!out.contains("| I'll create"), "{out}");
    assert!(out.contains("+- Plan (moderate, 3 steps)"));
    // One header per phase of results.
    assert!(out.contains("-- Execution ---"), "{out}");
    assert!(out.contains("-- Execution, phase 2 ---"), "{out}");
}

#[test]
fn welcome() {
    let info = SessionInfo {
        root: PathBuf::from("/home/dev/projects/bmi"),
        provider: "gemini".into(),
        model: "gemini-2.5-flash-lite".into(),
        branch: Some("pai/20250101_120000".into()),
        read_only: None,
    };
    assert_eq!(
        render::welcome(&info, true, &Theme::plain(60)),
        "\
+- pai ----------------------------------------------------+
| Project  /home/dev/projects/bmi                          |
| Model    gemini-2.5-flash-lite (gemini)                  |
| Session  pai/20250101_120000                             |
|                                                          |
| Enter sends, Alt+Enter starts a new line, Up/Down recall |
| history.                                                 |
| exit, quit or Ctrl+D leaves; /help lists commands.       |
+----------------------------------------------------------+
"
    );
    let read_only = SessionInfo {
        branch: None,
        read_only: Some("a rebase is in progress; finish or abort it first".into()),
        ..info
    };
    let out = render::welcome(&read_only, false, &Theme::plain(60));
    assert!(
        out.contains("| Session  read-only: a rebase is in progress; finish or   |\n|          abort it first"),
        "{out}"
    );
    assert!(out.contains("end a line with \\ to continue"), "{out}");
}

#[test]
fn approval_questions() {
    let question = |command: &str, confined: bool, rule: Option<&str>| RunQuestion {
        command: command.into(),
        confined,
        rule: rule.map(str::to_string),
        can_save: true,
    };
    let out = render::run_question(&question("rm -rf build", false, None), &Theme::plain(60));
    assert!(out.contains("| rm -rf build"), "{out}");
    assert!(out.contains("UNCONFINED: no sandbox"), "{out}");
    assert!(
        !out.contains("without asking"),
        "no 'always' for an unconfined command: {out}"
    );
    let out = render::run_question(
        &question("cargo check", true, Some("cargo check")),
        &Theme::plain(60),
    );
    assert!(
        out.contains("sandboxed: it can write only inside the project"),
        "{out}"
    );
    assert!(
        out.contains("| a: run `cargo check` (and it with more"),
        "{out}"
    );
    assert!(
        out.contains("| p: the same in later sessions of this"),
        "{out}"
    );
    assert!(out.contains("| e: edit the command"), "{out}");
    assert_eq!(
        render::rm_question("build", true, &Theme::plain(60)),
        "Remove the directory build and everything in it?\n"
    );
}

#[test]
fn session_end_and_tokens() {
    let tally = Tally {
        calls: 3,
        input: 4500,
        output: 700,
        ..Tally::default()
    };
    assert_eq!(
        render::totals(&tally, &Theme::plain(60)),
        "Session: 3 calls, Tokens: 4500 -> 700\n"
    );
    let out = render::goodbye("Session pai/x: 2 plans.", &tally, &Theme::plain(60));
    assert!(out.starts_with("+- Session ended -"));
    assert!(out.contains("| Session pai/x: 2 plans."));
    assert!(out.contains("| 3 calls, Tokens: 4500 -> 700"));
}

#[test]
fn nothing_is_wider_than_the_terminal() {
    let mut events = all_events();
    events.push(Event::Answer {
        text: format!("{} {}", "word ".repeat(80), "x".repeat(300)),
    });
    events.push(Event::Step(StepReport {
        index: 10,
        phase: 3,
        action: "RUN".into(),
        target: format!("python3 -c '{}'", "print(1);".repeat(30)),
        ok: false,
        output: format!(
            "{}\n{}",
            "e".repeat(400),
            "Traceback: 日本語のエラー ".repeat(20)
        ),
        diff: Some(format!("+{}\n-{}", "a".repeat(200), "b".repeat(200))),
        file_view: Some(FileView {
            path: "wide.rs".into(),
            text: format!("fn main() {{ println!(\"{}\"); }}\n", "z".repeat(300)),
            first_line: 1,
        }),
    }));
    for width in [24, 30, 45, 60, 80, 120, 200] {
        for theme in [Theme::plain(width), Theme::rich(width)] {
            for e in &events {
                if matches!(e, Event::TextDelta { .. }) {
                    continue;
                }
                let out = render::event(e, &theme);
                for line in pty::strip_ansi(&out).lines() {
                    assert!(
                        display_width(line) <= width,
                        "{width} columns, {} wide: {line:?}",
                        display_width(line)
                    );
                }
            }
        }
    }
}

#[test]
fn colour_only_when_asked() {
    for e in all_events() {
        assert!(!plain(&e).contains('\u{1b}'), "{e:?}");
    }
    let rich = render::event(&event_named("step_ok"), &Theme::rich(60));
    assert!(rich.contains("\u{1b}[32m+def get_bmi"), "{rich:?}");
    assert!(rich.contains('✓'));
}

#[test]
fn model_text_cannot_reach_the_terminal_as_escape_sequences() {
    let hostile = "ok\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred\u{9b}1m\u{202e}evil";
    let events = [
        Event::Answer {
            text: hostile.into(),
        },
        Event::Notice {
            text: hostile.into(),
        },
        Event::TextDelta {
            text: hostile.into(),
        },
        Event::Step(StepReport {
            index: 1,
            phase: 1,
            action: hostile.into(),
            target: hostile.into(),
            ok: true,
            output: hostile.into(),
            diff: Some(hostile.into()),
            file_view: Some(FileView {
                path: hostile.into(),
                text: hostile.into(),
                first_line: 1,
            }),
        }),
        Event::Committed {
            commit: hostile.into(),
            branch: hostile.into(),
        },
    ];
    for e in &events {
        let out = render::event(e, &Theme::plain(80));
        assert!(!out.contains('\u{1b}'), "{out:?}");
        assert!(!out.contains('\u{9b}'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        let mut p = Presenter::new(false);
        let out = p.event(e, &Theme::plain(80)) + &p.end_stream();
        assert!(!out.contains('\u{1b}'), "{out:?}");
    }
}

/// The events for the session log and `--json` readers show nothing on screen, and do not
/// cut a line the model is streaming.
#[test]
fn record_only_events_render_nothing() {
    use pai::agent::protocol::TurnMemo;
    let silent = [
        Event::SessionStarted {
            root: "/p".into(),
            provider: "gemini".into(),
            model: "m".into(),
            branch: Some("pai/x".into()),
            continued: false,
        },
        Event::TurnStarted {
            request: "make it".into(),
            amended: false,
        },
        Event::StepStarted {
            phase: 1,
            index: 1,
            action: "WRITE".into(),
            target: "a.py".into(),
        },
        Event::Remembered {
            memo: TurnMemo {
                request: "make it".into(),
                outcome: "Success: done".into(),
                files: vec!["a.py".into()],
            },
        },
        Event::MemoryCleared,
    ];
    let theme = Theme::plain(60);
    for event in &silent {
        assert!(render::is_silent(event), "{event:?}");
        assert_eq!(plain(event), "", "{event:?}");
        let mut p = Presenter::new(true);
        p.event(&Event::TextDelta { text: "Su".into() }, &theme);
        assert!(p.streaming());
        assert_eq!(p.event(event, &theme), "", "{event:?}");
        assert!(p.streaming(), "{event:?} closed the stream");
    }
    for event in all_events() {
        assert!(!render::is_silent(&event), "{event:?}");
    }
}
