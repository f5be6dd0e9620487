//! One model call: the request built from the session's prompt and schema, the reply's
//! `reply` text streamed to the frontend as it arrives, and the calls and tokens counted from
//! what the provider was billed for (retries and unusable replies included).

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::agent::events::{CallUsage, Event, Frontend, Tally};
use crate::llm::{LlmError, LlmRequest, Message, StreamEvent};

impl Agent {
    /// Call the model once for phase `phase` (a spinner's `thinking` first, `usage` after),
    /// adding what the provider counted to `tally` whether or not the reply is usable. An
    /// interrupt drops the request in flight.
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
        let streamer = ReplyStreamer::default();
        let on_text = |ev: StreamEvent<'_>| {
            if let Some(delta) = streamer.feed(ev) {
                frontend.event(&Event::TextDelta { text: delta });
            }
        };
        let before = self.provider.usage_totals();
        let result = tokio::select! {
            r = self.provider.complete(&req, &on_text) => Some(r),
            _ = cancel.cancelled() => None,
        };
        // Count what the provider actually sent and was billed for, retries and unusable
        // replies included, so the figures match the provider's bill.
        let after = self.provider.usage_totals();
        let requests = after.requests.saturating_sub(before.requests) as u32;
        let input = after.usage.input.saturating_sub(before.usage.input);
        let output = after.usage.output.saturating_sub(before.usage.output);
        let cached = after.usage.cached.saturating_sub(before.usage.cached);
        let reasoning = after.usage.reasoning.saturating_sub(before.usage.reasoning);
        tally.calls += requests;
        tally.input += input;
        tally.output += output;
        tally.cached += cached;
        tally.reasoning += reasoning;
        let Some(result) = result else {
            return Err(CallFailure::Cancelled);
        };
        match result {
            Ok(reply) => {
                let usage = CallUsage {
                    input,
                    output,
                    cached,
                    reasoning,
                };
                frontend.event(&Event::Usage {
                    call: tally.calls,
                    usage,
                });
                Ok(reply)
            }
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
    format!("the model call failed: {e}")
}

/// Pulls the `reply` string out of the raw JSON as it streams, so a chat answer or the
/// acknowledgment appears live instead of after the whole object arrived.
#[derive(Default)]
pub(super) struct ReplyStreamer {
    state: Mutex<StreamState>,
}

#[derive(Default)]
pub(super) struct StreamState {
    raw: String,
    emitted: usize,
}

impl ReplyStreamer {
    pub(super) fn feed(&self, ev: StreamEvent<'_>) -> Option<String> {
        let mut st = self.state.lock().ok()?;
        match ev {
            StreamEvent::Restart => {
                st.raw.clear();
                st.emitted = 0;
                None
            }
            StreamEvent::Text(t) => {
                st.raw.push_str(t);
                let decoded = partial_reply(&st.raw)?;
                if decoded.len() > st.emitted {
                    let delta = decoded[st.emitted..].to_string();
                    st.emitted = decoded.len();
                    Some(delta)
                } else {
                    None
                }
            }
        }
    }
}

/// The decoded prefix of the `"reply"` string in a partial JSON text.
pub(super) fn partial_reply(raw: &str) -> Option<String> {
    let key = raw.find("\"reply\"")?;
    let rest = raw[key + 7..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() < 4 {
                        break;
                    }
                    if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(ch);
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn partial_reply_decodes_as_it_grows() {
        assert_eq!(
            partial_reply(r#"{"intent":"chat","reply":"Hel"#).as_deref(),
            Some("Hel")
        );
        assert_eq!(
            partial_reply(r#"{"reply": "a\nb \"c\"", "x": 1}"#).as_deref(),
            Some("a\nb \"c\"")
        );
        assert_eq!(partial_reply(r#"{"intent":"#), None);
    }
}
