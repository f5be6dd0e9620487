//! The agent as a task that owns its state. A frontend talks to it only through the protocol:
//! it sends [`Op`]s (a user turn, the answer to a question, an interrupt, shutdown) and reads
//! [`Output`]s (every event, in order; the questions the agent asks; the end of each turn).
//! The agent never calls into a frontend: questions are messages it waits on, so a frontend
//! may run anywhere (another thread, another process reading `--json`), and every frontend —
//! the interactive UI, the plain printer, the JSON printer — consumes the same stream.
//! [`drive`] connects any [`Frontend`] to a running task.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::events::{
    Approval, Event, Frontend, RunAnswer, RunQuestion, ToolAnswer, ToolQuestion, TurnOutcome,
};
use super::plan::PlannedStep;
use super::turn::Agent;
use crate::mcp::TrustRequest;

/// What a frontend sends the agent.
#[derive(Debug)]
pub enum Op {
    /// Carry out a request (queued behind a turn under way).
    UserTurn(String),
    /// The answer to the question with this id.
    Answer {
        /// The question's id, from [`Output::Ask`].
        id: u64,
        /// The answer.
        answer: Answer,
    },
    /// Stop the turn under way (its running command, its model call); the task goes on.
    Interrupt,
    /// End the task after the turn under way; [`spawn`]'s handle gives the agent back.
    Shutdown,
    /// A session command of an in-process frontend (undo, redo, a model switch, the
    /// summary), run on the agent between turns, in order.
    Session(SessionCommand),
}

/// Work on the agent itself, queued like a turn (see [`AgentHandle::with_agent`]).
pub struct SessionCommand(Box<SessionFn>);

/// A session command's work. It gets the task's own frontend, to emit what it queued before
/// it answers.
type SessionFn = dyn FnOnce(&mut Agent, &dyn Frontend) + Send;

impl std::fmt::Debug for SessionCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionCommand")
    }
}

/// What the agent works through, in the order it was asked for.
enum Work {
    Turn(String, CancellationToken),
    Session(SessionCommand),
}

/// A question the agent asks; which answers exist is the agent's decision, carried here.
#[derive(Debug, Clone)]
pub enum Question {
    /// Approve a plan.
    Plan(Vec<PlannedStep>),
    /// Approve a RUN command.
    Run(RunQuestion),
    /// Confirm an RM (`recursive`: a non-empty directory).
    Rm {
        /// The path.
        path: String,
        /// Whether it is a directory with contents.
        recursive: bool,
    },
    /// Approve a TOOL call.
    Tool(ToolQuestion),
    /// Trust a project's `.mcp.json`.
    Trust(TrustRequest),
    /// Whether the frontend can ask the user at all (a terminal to ask at).
    CanAsk,
}

/// A frontend's answer to a [`Question`] of the same kind.
#[derive(Debug, Clone)]
pub enum Answer {
    /// To [`Question::Plan`].
    Plan(Approval),
    /// To [`Question::Run`].
    Run(RunAnswer),
    /// To [`Question::Rm`].
    Rm(bool),
    /// To [`Question::Tool`].
    Tool(ToolAnswer),
    /// To [`Question::Trust`].
    Trust(bool),
    /// To [`Question::CanAsk`].
    CanAsk(bool),
}

/// What the agent task emits, in order.
#[derive(Debug)]
pub enum Output {
    /// An event of the turn under way.
    Event(Event),
    /// A question; the turn waits for [`Op::Answer`] with this id.
    Ask {
        /// The id to answer with.
        id: u64,
        /// The question.
        question: Question,
    },
    /// A turn ended.
    TurnDone(TurnOutcome),
}

/// The frontend's side of a running agent task.
pub struct AgentHandle {
    /// Where to send operations.
    pub ops: mpsc::UnboundedSender<Op>,
    /// What the agent emits.
    pub outputs: mpsc::UnboundedReceiver<Output>,
    /// The agent, back when the task ends.
    pub done: tokio::task::JoinHandle<Agent>,
}

/// Questions waiting for their answers.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Answer>>>>;

/// Start the agent as a task on the current runtime.
pub fn spawn(agent: Agent) -> AgentHandle {
    let (ops_tx, mut ops_rx) = mpsc::unbounded_channel::<Op>();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Output>();
    let (work_tx, mut work_rx) = mpsc::unbounded_channel::<Work>();
    let pending: Pending = Arc::default();
    // The router reads operations while a turn runs, so answers and interrupts reach it. It
    // makes each turn's cancellation token, so an interrupt always reaches the turn that was
    // asked for before it, never a later one.
    let router = {
        let pending = pending.clone();
        tokio::spawn(async move {
            let mut current: Option<CancellationToken> = None;
            while let Some(op) = ops_rx.recv().await {
                match op {
                    Op::UserTurn(text) => {
                        let token = CancellationToken::new();
                        current = Some(token.clone());
                        if work_tx.send(Work::Turn(text, token)).is_err() {
                            break;
                        }
                    }
                    Op::Session(command) => {
                        if work_tx.send(Work::Session(command)).is_err() {
                            break;
                        }
                    }
                    Op::Answer { id, answer } => {
                        let waiting = pending.lock().ok().and_then(|mut p| p.remove(&id));
                        if let Some(tx) = waiting {
                            let _ = tx.send(answer);
                        }
                    }
                    Op::Interrupt => {
                        if let Some(token) = &current {
                            token.cancel();
                        }
                    }
                    Op::Shutdown => break,
                }
            }
            // Dropping the work queue ends the agent loop once the work under way is done.
        })
    };
    let done = tokio::spawn(async move {
        let mut agent = agent;
        let asker = ChannelFrontend {
            out: out_tx.clone(),
            pending,
            next_id: AtomicU64::new(1),
        };
        // The session's start comes before anything else it emits.
        agent.emit_queued(&asker);
        while let Some(work) = work_rx.recv().await {
            match work {
                Work::Turn(request, token) => {
                    let outcome = agent.turn(&request, &asker, &token).await;
                    let _ = out_tx.send(Output::TurnDone(outcome));
                }
                Work::Session(SessionCommand(command)) => command(&mut agent, &asker),
            }
        }
        router.abort();
        // The session is over: the MCP servers are told so (each gets a bounded wait). A
        // call cut short has already sent its cancellation (see `mcp::client`).
        agent.shutdown_mcp().await;
        agent
    });
    AgentHandle {
        ops: ops_tx,
        outputs: out_rx,
        done,
    }
}

impl AgentHandle {
    /// Run `f` on the agent between turns and wait for its result (`None`: the task is gone).
    /// For an in-process frontend's session commands; it blocks this thread, off the
    /// executor when on one.
    pub fn with_agent<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Agent) -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        let command = SessionCommand(Box::new(
            move |agent: &mut Agent, frontend: &dyn Frontend| {
                let result = f(agent);
                // What the command did to the session (`/clear`) is logged before the caller
                // hears back, not at the next turn, which may never come.
                agent.emit_queued(frontend);
                let _ = tx.send(result);
            },
        ));
        self.ops.send(Op::Session(command)).ok()?;
        wait(rx)
    }
}

/// Wait for a reply from the task: off the executor when on one (the task runs on a
/// multi-threaded runtime), so the task's own threads keep running.
fn wait<T>(rx: oneshot::Receiver<T>) -> Option<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(|| rx.blocking_recv()).ok(),
        Err(_) => rx.blocking_recv().ok(),
    }
}

/// The agent's view of the channel: events go out, questions go out and wait for answers.
struct ChannelFrontend {
    out: mpsc::UnboundedSender<Output>,
    pending: Pending,
    next_id: AtomicU64,
}

impl ChannelFrontend {
    /// Ask and wait (the turn runs its questions outside the executor's hot path). No answer
    /// (the frontend went away) is `None`, which every caller takes as a refusal.
    fn ask(&self, question: Question) -> Option<Answer> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().ok()?.insert(id, tx);
        self.out.send(Output::Ask { id, question }).ok()?;
        // The answer comes through the router task.
        wait(rx)
    }
}

impl Frontend for ChannelFrontend {
    fn event(&self, event: &Event) {
        let _ = self.out.send(Output::Event(event.clone()));
    }

    fn approve_plan(&self, steps: &[PlannedStep]) -> Approval {
        match self.ask(Question::Plan(steps.to_vec())) {
            Some(Answer::Plan(a)) => a,
            _ => Approval::No,
        }
    }

    fn approve_run(&self, question: &RunQuestion) -> RunAnswer {
        match self.ask(Question::Run(question.clone())) {
            Some(Answer::Run(a)) => a,
            _ => RunAnswer::No,
        }
    }

    fn confirm_rm(&self, path: &str, recursive: bool) -> bool {
        let question = Question::Rm {
            path: path.to_string(),
            recursive,
        };
        matches!(self.ask(question), Some(Answer::Rm(true)))
    }

    fn approve_tool(&self, question: &ToolQuestion) -> ToolAnswer {
        match self.ask(Question::Tool(question.clone())) {
            Some(Answer::Tool(a)) => a,
            _ => ToolAnswer::No,
        }
    }

    fn trust_mcp(&self, question: &TrustRequest) -> bool {
        matches!(
            self.ask(Question::Trust(question.clone())),
            Some(Answer::Trust(true))
        )
    }

    fn can_ask(&self) -> bool {
        matches!(self.ask(Question::CanAsk), Some(Answer::CanAsk(true)))
    }
}

/// Render a task's outputs with `frontend` and answer its questions through it, until the
/// turn under way ends; returns its outcome (`None`: the task is gone).
pub async fn drive(handle: &mut AgentHandle, frontend: &dyn Frontend) -> Option<TurnOutcome> {
    while let Some(output) = handle.outputs.recv().await {
        match output {
            Output::Event(event) => frontend.event(&event),
            Output::Ask { id, question } => {
                // Answering may block on a terminal prompt.
                let answer = tokio::task::block_in_place(|| answer_with(frontend, question));
                let _ = handle.ops.send(Op::Answer { id, answer });
            }
            Output::TurnDone(outcome) => return Some(outcome),
        }
    }
    None
}

/// The frontend's answer to one question.
pub fn answer_with(frontend: &dyn Frontend, question: Question) -> Answer {
    match question {
        Question::Plan(steps) => Answer::Plan(frontend.approve_plan(&steps)),
        Question::Run(q) => Answer::Run(frontend.approve_run(&q)),
        Question::Rm { path, recursive } => Answer::Rm(frontend.confirm_rm(&path, recursive)),
        Question::Tool(q) => Answer::Tool(frontend.approve_tool(&q)),
        Question::Trust(q) => Answer::Trust(frontend.trust_mcp(&q)),
        Question::CanAsk => Answer::CanAsk(frontend.can_ask()),
    }
}
