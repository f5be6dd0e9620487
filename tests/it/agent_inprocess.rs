//! The agent driven in-process: a scripted provider instead of HTTP, a recording frontend
//! instead of a terminal. What the end-to-end tests check through the binary, checked here at
//! the agent's own interface: the files, the events in order, the requests the model saw.

use std::sync::Mutex;
use std::time::Duration;

use pai::agent::context::Budget;
use pai::agent::events::{Approval, Event, Frontend, RunAnswer, RunQuestion, TurnStatus};
use pai::agent::plan::PlannedStep;
use pai::agent::turn::{Agent, AgentOptions};
use pai::llm::{ProviderKind, Scripted, ScriptedProvider};
use pai::workspace::{Workspace, WorkspaceConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Records every event; approves plans, refuses commands.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
    plans_asked: Mutex<usize>,
}

impl Frontend for Recorder {
    fn event(&self, event: &Event) {
        self.events.lock().unwrap().push(event.clone());
    }
    fn approve_plan(&self, _steps: &[PlannedStep]) -> Approval {
        *self.plans_asked.lock().unwrap() += 1;
        Approval::Yes
    }
    fn approve_run(&self, _question: &RunQuestion) -> RunAnswer {
        RunAnswer::No
    }
    fn confirm_rm(&self, _path: &str, _recursive: bool) -> bool {
        false
    }
}

impl Recorder {
    fn kinds(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }
}

fn options() -> AgentOptions {
    AgentOptions {
        model: "scripted".into(),
        temperature: 0.2,
        max_output_tokens: 4096,
        stream: false,
        yes: false,
        dry_run: None,
        allow_run: false,
        run_allow: Vec::new(),
        settings_file: None,
        run_timeout: Duration::from_secs(10),
        require_sandbox: false,
        run_writable: Vec::new(),
        secrets: Vec::new(),
        budget: Budget::default(),
        subdir: None,
    }
}

fn plan(steps: Value) -> Value {
    json!({
        "intent": "task",
        "reply": "On it.",
        "analysis": {"user_intent": "", "files_to_read": [], "files_to_create": [],
                     "files_to_modify": [], "risks": "", "success_criteria": [],
                     "complexity": "simple"},
        "steps": steps,
    })
}

fn agent(dir: &std::path::Path, provider: &ScriptedProvider) -> Agent {
    let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
    Agent::new(Box::new(provider.clone()), ws, None, None, options())
}

fn turn(agent: &mut Agent, request: &str, frontend: &Recorder) -> pai::agent::events::TurnOutcome {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(agent.turn(request, frontend, &CancellationToken::new()))
}

#[test]
fn a_scripted_plan_writes_the_file_and_reports_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(
        ProviderKind::OpenAi,
        [Scripted::reply(
            plan(json!([
                {"action": "WRITE", "path": "hello.py", "content": "print('hi')\n", "purpose": ""},
                {"action": "FINISH", "message": "wrote hello.py", "purpose": ""}
            ])),
            700,
            60,
        )],
    );
    let mut agent = agent(dir.path(), &provider);
    let fe = Recorder::default();
    let outcome = turn(&mut agent, "write hello.py", &fe);

    assert_eq!(outcome.status, TurnStatus::Success);
    assert_eq!(
        (
            outcome.tally.calls,
            outcome.tally.input,
            outcome.tally.output
        ),
        (1, 700, 60)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.py")).unwrap(),
        "print('hi')\n"
    );
    assert_eq!(*fe.plans_asked.lock().unwrap(), 1);
    let kinds = fe.kinds();
    let order: Vec<&str> = ["thinking", "usage", "plan", "step", "finished"]
        .into_iter()
        .filter(|k| kinds.iter().any(|x| x == k))
        .collect();
    assert_eq!(order.len(), 5, "missing events: {kinds:?}");
    let pos = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert!(
        pos("plan") < pos("step") && pos("step") < pos("finished"),
        "{kinds:?}"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .messages
            .iter()
            .any(|m| m.text.contains("write hello.py"))
    );
    assert_eq!(provider.remaining(), 0);
}

#[test]
fn an_invalid_plan_is_repaired_with_one_more_call_and_nothing_runs_before() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(
        ProviderKind::Gemini,
        [
            // A WRITE without content: invalid, so nothing of it may run.
            Scripted::reply(
                plan(json!([
                    {"action": "WRITE", "path": "a.txt", "purpose": ""},
                    {"action": "WRITE", "path": "b.txt", "content": "b\n", "purpose": ""},
                    {"action": "FINISH", "message": "done", "purpose": ""}
                ])),
                500,
                40,
            ),
            Scripted::reply(
                plan(json!([
                    {"action": "WRITE", "path": "a.txt", "content": "a\n", "purpose": ""},
                    {"action": "FINISH", "message": "done", "purpose": ""}
                ])),
                520,
                30,
            ),
        ],
    );
    let mut agent = agent(dir.path(), &provider);
    let fe = Recorder::default();
    let outcome = turn(&mut agent, "make a.txt", &fe);
    assert_eq!(outcome.status, TurnStatus::Success);
    assert_eq!(outcome.tally.calls, 2);
    assert!(dir.path().join("a.txt").exists());
    assert!(
        !dir.path().join("b.txt").exists(),
        "a step of the invalid plan ran"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let repair = &requests[1].messages.last().unwrap().text;
    assert!(
        repair.contains("content"),
        "the repair request does not name the problem: {repair}"
    );
}

#[test]
fn a_refused_command_never_runs_and_the_model_is_told_so() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(
        ProviderKind::Anthropic,
        [
            Scripted::reply(
                plan(json!([
                    {"action": "RUN", "command": "touch ran.txt", "purpose": ""},
                    {"action": "FINISH", "message": "done", "purpose": ""}
                ])),
                400,
                20,
            ),
            Scripted::reply(
                plan(json!([
                    {"action": "FINISH", "message": "not done: touch ran.txt: the user denied running it", "purpose": ""}
                ])),
                450,
                10,
            ),
        ],
    );
    let mut agent = agent(dir.path(), &provider);
    let fe = Recorder::default();
    let outcome = turn(&mut agent, "run it", &fe);
    assert!(
        !dir.path().join("ran.txt").exists(),
        "a refused command ran"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let told = &requests[1].messages.last().unwrap().text;
    assert!(
        told.contains("RUN touch ran.txt: FAILED")
            && told.contains("running this command was not approved"),
        "{told}"
    );
    // The model took the refusal and gave the step up with its reason (a bare FINISH would
    // leave the RUN owed and fail the turn: tests/it/turn_outcome.rs).
    assert!(
        told.contains("RUN `touch ran.txt` (phase 1 step 1)"),
        "{told}"
    );
    assert_eq!(outcome.status, TurnStatus::Success);
    assert_eq!(outcome.tally.calls, 2);
}

/// The agent as a task: the frontend's side is only operations out and outputs in.
#[test]
fn the_agent_task_speaks_only_the_protocol() {
    use pai::agent::protocol::{Answer, Op, Output, Question};
    use pai::agent::task;
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(
        ProviderKind::OpenAi,
        [
            Scripted::reply(
                plan(json!([
                    {"action": "WRITE", "path": "one.txt", "content": "1\n", "purpose": ""},
                    {"action": "FINISH", "message": "done", "purpose": ""}
                ])),
                100,
                10,
            ),
            Scripted::reply(
                plan(json!([
                    {"action": "WRITE", "path": "two.txt", "content": "2\n", "purpose": ""},
                    {"action": "FINISH", "message": "done", "purpose": ""}
                ])),
                100,
                10,
            ),
        ],
    );
    let agent = agent(dir.path(), &provider);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut handle = task::spawn(agent);
        // Two turns queued at once run one after the other.
        handle.ops.send(Op::UserTurn("write one".into())).unwrap();
        handle.ops.send(Op::UserTurn("write two".into())).unwrap();
        let mut asked = Vec::new();
        let mut outcomes = Vec::new();
        let mut kinds = Vec::new();
        while outcomes.len() < 2 {
            match handle.outputs.recv().await.unwrap() {
                Output::Event(e) => kinds.push(
                    serde_json::to_value(&e).unwrap()["event"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                ),
                Output::Ask { id, question } => {
                    let Question::Plan(steps) = question else {
                        panic!("unexpected question {question:?}")
                    };
                    asked.push(steps[0].step.target());
                    // The first plan is declined, the second approved.
                    let answer = if asked.len() == 1 {
                        pai::agent::protocol::Approval::No
                    } else {
                        pai::agent::protocol::Approval::Yes
                    };
                    handle
                        .ops
                        .send(Op::Answer {
                            id,
                            answer: Answer::Plan(answer),
                        })
                        .unwrap();
                }
                Output::TurnDone(outcome) => outcomes.push(outcome.status),
            }
        }
        handle.ops.send(Op::Shutdown).unwrap();
        let agent = handle.done.await.unwrap();
        assert_eq!(asked, ["one.txt", "two.txt"]);
        assert_eq!(outcomes, [TurnStatus::Rejected, TurnStatus::Success]);
        assert_eq!(kinds.iter().filter(|k| *k == "finished").count(), 2);
        assert_eq!(agent.totals().calls, 2);
    });
    assert!(!dir.path().join("one.txt").exists(), "a declined plan ran");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("two.txt")).unwrap(),
        "2\n"
    );
}

/// The kinds of a JSON-lines session log, in order.
fn log_kinds(dir: &std::path::Path, id: &str) -> Vec<String> {
    let log = std::fs::read_to_string(dir.join(format!(".pai_history/session_{id}.jsonl")))
        .unwrap_or_default();
    log.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// A whole session over the protocol: its start, a turn's acknowledgment, every step started
/// before its result, the memory it keeps, an amended request, `/clear`; and the session log
/// written from those same events alone, each as it happens.
#[test]
fn a_session_emits_its_start_each_turn_and_step_and_the_log_follows_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let id = "20260101_000000";
    let agent = journaled_agent(dir.path(), id);
    // Nothing is written before the session's first frontend is there.
    assert_eq!(log_kinds(dir.path(), id), Vec::<String>::new());
    let events = amended_turn_then_clear(agent, dir.path(), id);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds[..4],
        ["session_started", "remembered", "turn_started", "thinking"],
        "{kinds:?}"
    );
    assert_eq!(events[0]["model"], "scripted");
    assert_eq!(events[0]["continued"], false);
    assert_eq!(events[1]["memo"]["request"], "earlier");
    let started: Vec<(&str, bool)> = events
        .iter()
        .filter(|e| e["event"] == "turn_started")
        .map(|e| (e["request"].as_str().unwrap(), e["amended"] == true))
        .collect();
    assert_eq!(started, [("write a", false), ("write b", true)]);
    assert_steps_start_before_their_results(&events, &kinds);
    let n = kinds.len();
    assert_eq!(
        kinds[n - 3..],
        ["remembered", "finished", "memory_cleared"],
        "{kinds:?}"
    );
    assert_eq!(events[n - 3]["memo"]["request"], "write b");
    assert!(dir.path().join("b.txt").exists() && !dir.path().join("a.txt").exists());

    // The log holds the same story, recorded from the same events.
    let logged = log_kinds(dir.path(), id);
    let expected = [
        "session_started",
        "memo",
        "user",
        "plan",
        "note",
        "user",
        "plan",
        "execution_start",
        "step",
    ];
    assert_eq!(logged[..expected.len()], expected, "{logged:?}");
    let n = logged.len();
    assert_eq!(
        logged[n - 4..],
        ["execution_end", "memo", "finished", "memory_cleared"],
        "{logged:?}"
    );
    // A continued session gets back only what came after the clear: nothing.
    assert_eq!(pai::agent::journal::load_memory(dir.path(), id, 5), vec![]);
}

/// An agent over `dir` journaling session `id`, whose model answers two plans (write a file,
/// read it, finish), with one earlier turn in memory and its session opened.
fn journaled_agent(dir: &std::path::Path, id: &str) -> Agent {
    use pai::agent::context::TurnMemo;
    use pai::agent::journal::Journal;
    let write_plan = |path: &str| {
        Scripted::reply(
            plan(json!([
                {"action": "WRITE", "path": path, "content": "x\n", "purpose": ""},
                {"action": "READ", "path": path, "purpose": ""},
                {"action": "FINISH", "message": "done", "purpose": ""}
            ])),
            100,
            10,
        )
    };
    let provider = ScriptedProvider::new(
        ProviderKind::OpenAi,
        [write_plan("a.txt"), write_plan("b.txt")],
    );
    let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
    let journal = Journal::open(dir, id, Vec::new()).unwrap();
    let mut agent = Agent::new(Box::new(provider), ws, None, Some(journal), options());
    let carried = TurnMemo {
        request: "earlier".into(),
        outcome: "Success: done".into(),
        files: vec![],
    };
    agent.open_session(false, vec![carried]);
    agent
}

/// Runs `agent` as a task: the turn "write a", whose first plan is amended to "write b" and
/// whose second is approved; then `/clear`, which must reach the log at once; then shutdown.
/// Returns every event, as JSON.
fn amended_turn_then_clear(agent: Agent, dir: &std::path::Path, id: &str) -> Vec<Value> {
    use pai::agent::protocol::{Answer, Approval as A, Op, Output, Question};
    use pai::agent::task;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut handle = task::spawn(agent);
        handle.ops.send(Op::UserTurn("write a".into())).unwrap();
        let mut events: Vec<Value> = Vec::new();
        let mut plans = 0;
        loop {
            match handle.outputs.recv().await.unwrap() {
                Output::Event(e) => events.push(serde_json::to_value(&e).unwrap()),
                Output::Ask { id, question } => {
                    assert!(matches!(question, Question::Plan(_)), "{question:?}");
                    plans += 1;
                    // The first plan is amended: the turn starts over with the new request.
                    let answer = if plans == 1 {
                        A::Amend("write b".into())
                    } else {
                        A::Yes
                    };
                    let answer = Answer::Plan(answer);
                    handle.ops.send(Op::Answer { id, answer }).unwrap();
                }
                Output::TurnDone(outcome) => {
                    assert_eq!(outcome.status, TurnStatus::Success);
                    break;
                }
            }
        }
        // `/clear` between turns reaches the log at once, not at a next turn.
        handle.with_agent(|agent| agent.clear_memory()).unwrap();
        assert_eq!(
            log_kinds(dir, id).last().map(String::as_str),
            Some("memory_cleared")
        );
        match handle.outputs.recv().await.unwrap() {
            Output::Event(e) => events.push(serde_json::to_value(&e).unwrap()),
            other => panic!("expected the memory_cleared event, got {other:?}"),
        }
        handle.ops.send(Op::Shutdown).unwrap();
        handle.done.await.unwrap();
        events
    })
}

/// Every step result follows its start, with nothing else of another step between; and at
/// least two steps ran.
fn assert_steps_start_before_their_results(events: &[Value], kinds: &[&str]) {
    let mut open: Option<(u64, u64)> = None;
    let mut steps = 0;
    for e in events {
        let at = || (e["phase"].as_u64().unwrap(), e["index"].as_u64().unwrap());
        match e["event"].as_str().unwrap() {
            "step_started" => {
                assert_eq!(
                    open, None,
                    "a step started before the last one ended: {kinds:?}"
                );
                open = Some(at());
            }
            "step" => {
                assert_eq!(open.take(), Some(at()), "a step result without its start");
                steps += 1;
            }
            _ => {}
        }
    }
    assert!(steps >= 2 && open.is_none(), "{kinds:?}");
}
