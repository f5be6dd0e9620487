//! The interface between the agent and its frontends, in one place: the events the agent
//! emits (in order, serialisable: `pai run --json` prints exactly these, one per line), the
//! questions it asks and the answers a frontend gives, and the plan types those carry.
//! Frontends (`ui`) import from here only; what needs approval and what an answer means is
//! decided in the agent (`agent::approve`), never by a frontend.

pub use super::context::TurnMemo;
pub use super::events::{
    Approval, CallUsage, Event, FailedStep, FileView, Frontend, RuleScope, RunAnswer, RunQuestion,
    StepReport, Tally, ToolAnswer, ToolQuestion, TrustRequest, TurnOutcome, TurnResult, TurnStatus,
};
pub use super::plan::{Analysis, Complexity, Edit, PlannedStep, Step, StepPreview};
pub use super::task::{Answer, Op, Output, Question, answer_with};
