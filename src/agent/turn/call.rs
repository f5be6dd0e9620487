//! One model call: the request built from the session's prompt and schema, and the calls and
//! tokens counted from what the provider was billed for (retries and unusable replies
//! included; a call whose server reported no usage is marked unknown, not counted as 0).

use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::agent::events::{CallUsage, Event, Frontend, Tally};
use crate::llm::{LlmError, LlmRequest, Message, StreamEvent};

impl Agent {
    /// Call the model once for phase `phase` (a spinner's `thinking` first, `usage` after,
    /// whether or not the reply is usable), adding what the provider counted to `tally`. The
    /// reply's text is not shown here: it reaches the frontend only once the reply has been
    /// validated as a plan (a reply thrown away must not stay on screen). An interrupt drops
    /// the request in flight.
    pub(super) async fn call(
        &mut self,
        messages: &[Message],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        tally: &mut Tally,
        phase: u32,
    ) -> Result<crate::llm::LlmReply, CallFailure> {
        frontend.event(&Event::Thinking { phase });
        let (system, schema) = self.prompt_and_schema();
        let req = LlmRequest {
            system,
            messages: messages.to_vec(),
            schema,
            schema_name: "pai_plan".to_string(),
            temperature: self.options.temperature,
            max_output_tokens: self.options.max_output_tokens,
            stream: self.options.stream,
        };
        let quiet = |_: StreamEvent<'_>| {};
        let before = self.provider.usage_totals();
        let result = tokio::select! {
            r = self.provider.complete(&req, &quiet) => Some(r),
            _ = cancel.cancelled() => None,
        };
        // Count what the provider actually sent and was billed for, retries and unusable
        // replies included, so the figures match the provider's bill and the `usage` events
        // add up to the turn's totals.
        let after = self.provider.usage_totals();
        let requests = after.requests.saturating_sub(before.requests) as u32;
        let mut unmetered = after.unmetered.saturating_sub(before.unmetered) as u32;
        let mut usage = CallUsage {
            input: after.usage.input.saturating_sub(before.usage.input),
            output: after.usage.output.saturating_sub(before.usage.output),
            cached: after.usage.cached.saturating_sub(before.usage.cached),
            reasoning: after.usage.reasoning.saturating_sub(before.usage.reasoning),
            unknown: false,
            failed: !matches!(result, Some(Ok(_))),
        };
        // A call abandoned before its answer (a timeout, a dropped connection) was processed,
        // and may be billed, but its usage never arrived: unknown, not zero.
        if matches!(&result, Some(Err(e)) if !e.was_answered()) && usage.input == 0 {
            unmetered = unmetered.max(1);
        }
        usage.unknown = unmetered > 0;
        tally.calls += requests;
        tally.input += usage.input;
        tally.output += usage.output;
        tally.cached += usage.cached;
        tally.reasoning += usage.reasoning;
        tally.unmetered += unmetered;
        if requests > 0 {
            frontend.event(&Event::Usage {
                call: tally.calls,
                usage,
            });
        }
        let Some(result) = result else {
            return Err(CallFailure::Cancelled);
        };
        match result {
            Ok(reply) => Ok(reply),
            Err(e) if e.kind() == crate::llm::LlmErrorKind::Config => {
                Err(CallFailure::Config(describe_llm_error(&e), e.hint()))
            }
            Err(e) => Err(CallFailure::Failed(
                describe_llm_error(&e),
                e.correction_request(),
            )),
        }
    }
}

/// Why a model call produced no usable reply.
pub(super) enum CallFailure {
    Cancelled,
    /// The message, and what to ask the model when a corrected reply could help.
    Failed(String, Option<String>),
    /// The configuration is wrong: the message and the hint saying what to fix.
    Config(String, String),
}

pub(super) fn describe_llm_error(e: &LlmError) -> String {
    match e {
        // Limits the user can change: say which, and how.
        LlmError::Timeout { .. } | LlmError::Truncated { .. } => {
            format!("the model call failed: {e}\nhint: {}", e.hint())
        }
        _ => format!("the model call failed: {e}"),
    }
}
