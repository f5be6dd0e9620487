#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Plain-text snapshots of the rendering of every event type, and width checks.

use pai::agent::events::{CallUsage, Event, FileView, StepReport, TurnStatus};
use pai::agent::plan::{Analysis, Complexity, PlannedStep, Step};
use pai::ui::layout::{Theme, display_width};
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
            },
            PlannedStep {
                step: Step::Run {
                    command: "python3 -m py_compile bmi.py".into(),
                },
                purpose: "Check that it compiles".into(),
            },
            PlannedStep {
                step: Step::Finish {
                    message: "done".into(),
                },
                purpose: String::new(),
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
            verified: Some(true),
        },
    ]
}

#[test]
fn print_them() {
    for e in all_events() {
        print!("{}", plain(&e));
        print!("{}", render::event(&e, &Theme::rich(60)));
    }
}
