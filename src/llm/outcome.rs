//! What one attempt produced, in wire-format-neutral terms, and how that becomes a reply or a
//! typed error. Every wire format fills an [`Outcome`]; [`conclude`] applies the same rules to
//! all of them.

use serde_json::Value;

use super::error::LlmError;
use super::json::extract_json;
use super::transport::Transport;
use super::{LlmReply, Usage};

/// Why the model stopped, normalised across providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It finished normally (or gave a reason pai has no special handling for).
    Complete,
    /// It hit the output token limit.
    Truncated,
    /// It declined, with its explanation.
    Refused(String),
    /// A filter blocked the prompt or the reply.
    Blocked(Block),
    /// There was no candidate / choice at all.
    Empty,
    /// The model stopped for another reason, with no usable text (the provider's reason).
    Stopped(String),
}

/// A filter's stop, as the provider described it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Block {
    /// The block or finish reason as the provider spelled it.
    pub reason: String,
    /// What it named: filtered categories, the source a recitation matched.
    pub detail: String,
    /// The request was refused, not the reply.
    pub request: bool,
}

#[cfg(test)]
impl Block {
    /// A stop of the reply for `reason`, with nothing more said.
    pub(crate) fn reply(reason: &str) -> Self {
        Self {
            reason: reason.to_string(),
            ..Self::default()
        }
    }
}

/// The raw result of one successful HTTP exchange.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The reply text (for Anthropic, the tool input JSON as text when streamed).
    pub text: String,
    /// The already-structured reply, when the wire format delivers one (Anthropic tool input).
    pub structured: Option<Value>,
    /// Token counts reported by the provider.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop: Stop,
}

/// The part of [`super::LlmReply`] one attempt decides.
pub(crate) struct Parsed {
    pub value: Value,
    pub raw: String,
    pub usage: Usage,
}

impl Parsed {
    /// The reply of a call that started at `started` and took `attempts` attempts.
    pub(crate) fn into_reply(self, started: std::time::Instant, attempts: u32) -> LlmReply {
        LlmReply {
            value: self.value,
            raw: self.raw,
            usage: self.usage,
            elapsed: started.elapsed(),
            attempts,
        }
    }
}

/// Meters the usage, then turns the outcome into the parsed object or the matching error.
pub(crate) fn conclude(
    t: &Transport,
    max_output_tokens: u32,
    o: Outcome,
) -> Result<Parsed, LlmError> {
    t.record_usage(o.usage);
    let provider = t.kind;
    match o.stop {
        Stop::Complete => {}
        Stop::Truncated => {
            // Providers bill the whole limit when they stop at it; a reply cut off well short
            // of the limit sent was stopped by a limit of the server's own.
            let produced = o.usage.output;
            let server_limit = (produced > 0
                && produced.saturating_mul(100) < u64::from(max_output_tokens) * 95)
                .then_some(produced);
            return Err(LlmError::Truncated {
                provider,
                max_output_tokens,
                server_limit,
            });
        }
        Stop::Refused(message) => return Err(LlmError::Refusal { provider, message }),
        Stop::Blocked(b) => {
            return Err(LlmError::Blocked {
                provider,
                reason: b.reason,
                detail: b.detail,
                request: b.request,
            });
        }
        Stop::Empty => return Err(LlmError::EmptyReply { provider }),
        Stop::Stopped(reason) => return Err(LlmError::Stopped { provider, reason }),
    }
    if let Some(value @ Value::Object(_)) = o.structured {
        let raw = if o.text.is_empty() {
            value.to_string()
        } else {
            o.text
        };
        return Ok(Parsed {
            value,
            raw,
            usage: o.usage,
        });
    }
    if o.text.trim().is_empty() {
        return Err(LlmError::EmptyReply { provider });
    }
    let value = extract_json(&o.text)?;
    Ok(Parsed {
        value,
        raw: o.text,
        usage: o.usage,
    })
}

/// Reads a token count that may be absent, null or negative as zero.
pub(crate) fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}
