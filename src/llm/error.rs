//! Everything that can go wrong talking to a model, as typed variants with messages a user can
//! act on. The key never reaches these messages: provider error bodies are scrubbed before they
//! are stored here.

use std::time::Duration;

use super::ProviderKind;

/// A failed provider call.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No key is configured and the base URL is not a loopback address.
    #[error("no API key for {provider}: set one with `pai config set` or the {env} variable", env = provider.key_env_var())]
    MissingKey {
        /// The provider lacking a key.
        provider: ProviderKind,
    },

    /// The settings cannot work (malformed base URL, unusable model name, TLS setup failure).
    #[error("invalid {provider} settings: {detail}")]
    InvalidConfig {
        /// The provider being configured.
        provider: ProviderKind,
        /// What is wrong.
        detail: String,
    },

    /// The key was refused (401/403, or Gemini's 400 `API_KEY_INVALID`).
    #[error("{provider} refused the API key (HTTP {status}): {message}")]
    Auth {
        /// The provider.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// 404: the model does not exist or the base URL points at the wrong place.
    #[error("{provider} answered 404 for model `{model}`: {message}")]
    NotFound {
        /// The provider.
        provider: ProviderKind,
        /// The configured model.
        model: String,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// The provider rejected what pai sent (400, 422 and other 4xx not listed elsewhere).
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// The provider.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// The account has no credit or quota left (OpenAI 429 `insufficient_quota`): a billing
    /// problem, reported at once, never retried.
    #[error(
        "{provider} refused the request because the account's quota or credit is used up: {message}"
    )]
    Billing {
        /// The provider.
        provider: ProviderKind,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// The model stopped without a usable reply for a reason that is neither the output limit
    /// nor a filter (Gemini `finishReason: OTHER`, `MALFORMED_FUNCTION_CALL`, ...).
    #[error(
        "{provider} stopped {} before the reply held anything usable (finish reason {reason})",
        stop_cause(reason)
    )]
    Stopped {
        /// The provider.
        provider: ProviderKind,
        /// The finish reason as the provider spelled it.
        reason: String,
    },

    /// 429 on every attempt, or a requested wait longer than pai is willing to sleep.
    #[error("{provider} is rate limiting requests (HTTP 429, {attempts} attempt(s)){}: {message}", retry_after_text(*.retry_after))]
    RateLimited {
        /// The provider.
        provider: ProviderKind,
        /// HTTP requests made.
        attempts: u32,
        /// The wait the server asked for, if it said.
        retry_after: Option<Duration>,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// 408 or 5xx on every attempt.
    #[error("{provider} server error (HTTP {status}, {attempts} attempt(s)): {message}")]
    Server {
        /// The provider.
        provider: ProviderKind,
        /// The HTTP status of the last attempt.
        status: u16,
        /// HTTP requests made.
        attempts: u32,
        /// The wait the server asked for, if it said.
        retry_after: Option<Duration>,
        /// The provider's reason, key scrubbed.
        message: String,
    },

    /// The connection could not be established (refused, DNS, TLS) on every attempt.
    #[error("cannot connect to {provider} at {origin} ({attempts} attempt(s)): {detail}")]
    Connect {
        /// The provider.
        provider: ProviderKind,
        /// Scheme, host and port tried.
        origin: String,
        /// HTTP requests tried.
        attempts: u32,
        /// The transport's reason.
        detail: String,
    },

    /// The response did not arrive in time.
    #[error("{provider} did not answer in time: {stage} after {}s", after.as_secs_f32())]
    Timeout {
        /// The provider.
        provider: ProviderKind,
        /// What was being waited for.
        stage: TimeoutStage,
        /// The limit that expired.
        after: Duration,
    },

    /// The response broke off mid-way (connection reset, stream ended early) on every attempt.
    #[error("the reply from {provider} broke off ({attempts} attempt(s)): {detail}")]
    Interrupted {
        /// The provider.
        provider: ProviderKind,
        /// HTTP requests made.
        attempts: u32,
        /// What happened.
        detail: String,
    },

    /// The HTTP body is not the provider's wire format (not JSON, unexpected shape).
    #[error("{provider} sent a response pai cannot read: {detail}")]
    BadResponse {
        /// The provider.
        provider: ProviderKind,
        /// What was wrong, with a short snippet.
        detail: String,
    },

    /// The reply hit the output token limit (finish reason `length` / `MAX_TOKENS` / `max_tokens`).
    #[error("the reply from {provider} was cut off {}", truncation_text(*max_output_tokens, *server_limit))]
    Truncated {
        /// The provider.
        provider: ProviderKind,
        /// The limit that was sent (pai's, lowered to the model's cap and to what the server
        /// said it accepts).
        max_output_tokens: u32,
        /// Where the server really stopped, when its usage shows a lower limit than the one
        /// sent (a local server's context window or its own output cap).
        server_limit: Option<u64>,
    },

    /// The model declined to answer.
    #[error("the model refused to answer: {message}")]
    Refusal {
        /// The provider.
        provider: ProviderKind,
        /// The model's explanation, if any.
        message: String,
    },

    /// A safety or policy filter blocked the prompt or the reply.
    #[error("{}", blocked_text(*provider, reason, detail, *request))]
    Blocked {
        /// The provider.
        provider: ProviderKind,
        /// The provider's block or finish reason (`SAFETY`, `RECITATION`, `content_filter`, ...).
        reason: String,
        /// What the provider named: the filtered categories, the source a recitation matched.
        detail: String,
        /// The request itself was refused (Gemini `promptFeedback.blockReason`), not the reply.
        request: bool,
    },

    /// The reply carried no candidate / choice / content at all.
    #[error("{provider} returned an empty reply (no candidates)")]
    EmptyReply {
        /// The provider.
        provider: ProviderKind,
    },

    /// The reply text holds no parseable JSON object.
    #[error("the model's reply is not a valid JSON object ({detail}): `{snippet}`")]
    MalformedJson {
        /// The parser's complaint.
        detail: String,
        /// The start of the reply text.
        snippet: String,
    },
}

/// What a [`LlmError::Timeout`] was waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutStage {
    /// The response (headers, or the whole body when not streaming).
    Response,
    /// The next chunk of a streaming reply.
    StreamIdle,
}

impl std::fmt::Display for TimeoutStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutStage::Response => "waiting for the response",
            TimeoutStage::StreamIdle => "no streamed data",
        })
    }
}

/// Coarse classes of [`LlmError`], for exit codes and for deciding what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmErrorKind {
    /// The settings are wrong: missing or refused key, unknown model, wrong base URL (exit 2).
    Config,
    /// The provider or the network failed: rate limit, server error, connection, timeout,
    /// broken stream. Trying later may help (exit 1).
    Unavailable,
    /// The provider rejected what pai sent (exit 1).
    Rejected,
    /// The model answered but the reply cannot be used: truncated, refused, blocked, empty or
    /// malformed. Asking again may help (exit 1).
    Reply,
}

impl LlmError {
    /// The class of this error.
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            LlmError::MissingKey { .. }
            | LlmError::InvalidConfig { .. }
            | LlmError::Auth { .. }
            | LlmError::NotFound { .. }
            | LlmError::Billing { .. } => LlmErrorKind::Config,
            LlmError::RateLimited { .. }
            | LlmError::Server { .. }
            | LlmError::Connect { .. }
            | LlmError::Timeout { .. }
            | LlmError::Interrupted { .. }
            | LlmError::BadResponse { .. } => LlmErrorKind::Unavailable,
            LlmError::BadRequest { .. } => LlmErrorKind::Rejected,
            LlmError::Truncated { .. }
            | LlmError::Stopped { .. }
            | LlmError::Refusal { .. }
            | LlmError::Blocked { .. }
            | LlmError::EmptyReply { .. }
            | LlmError::MalformedJson { .. } => LlmErrorKind::Reply,
        }
    }

    /// Whether the transport retries this failure with backoff (connection failures, broken
    /// streams, 408, 429, 5xx).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Connect { .. }
                | LlmError::Interrupted { .. }
        )
    }

    /// HTTP requests made before giving up, for the failures that are retried.
    pub fn attempts(&self) -> Option<u32> {
        match self {
            LlmError::RateLimited { attempts, .. }
            | LlmError::Server { attempts, .. }
            | LlmError::Connect { attempts, .. }
            | LlmError::Interrupted { attempts, .. } => Some(*attempts),
            _ => None,
        }
    }

    /// The wait the server asked for before the next try, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    pub(crate) fn set_attempts(&mut self, n: u32) {
        match self {
            LlmError::RateLimited { attempts, .. }
            | LlmError::Server { attempts, .. }
            | LlmError::Connect { attempts, .. }
            | LlmError::Interrupted { attempts, .. } => *attempts = n,
            _ => {}
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            LlmError::MissingKey { provider } => format!(
                "run `pai config set --provider {provider}` (it asks for the key at a hidden prompt) or export {}",
                provider.key_env_var()
            ),
            LlmError::InvalidConfig { .. } => {
                "check --provider, --model and --base-url (or PAI_PROVIDER, PAI_MODEL, PAI_BASE_URL)"
                    .to_string()
            }
            LlmError::Auth { provider, .. } => format!(
                "the {provider} key is wrong, expired or lacks access: set a new one with `pai config set --provider {provider}` (hidden prompt) and check it with `pai config validate`"
            ),
            LlmError::NotFound { provider, .. } => match provider {
                ProviderKind::OpenAi => "check --model, and that --base-url includes the version path (e.g. http://localhost:11434/v1)".to_string(),
                _ => "check --model (spelling, availability for your key) and --base-url (it replaces only the origin, e.g. https://generativelanguage.googleapis.com)".to_string(),
            },
            LlmError::Billing { provider, .. } => format!(
                "add credit or raise the quota of your {provider} account (billing settings), or use another provider with --provider"
            ),
            LlmError::Stopped { .. } => {
                "try again; if it keeps stopping, rephrase the request or use another model".to_string()
            }
            LlmError::BadRequest { .. } => {
                "the provider did not accept the request; its reason is above (another model may support it)"
                    .to_string()
            }
            LlmError::RateLimited { retry_after, .. } => match retry_after {
                Some(d) => format!("wait about {}s and try again, or use another model", d.as_secs().max(1)),
                None => "wait a minute and try again, or use another model".to_string(),
            },
            LlmError::Server { .. } => "the provider is having trouble; try again shortly".to_string(),
            LlmError::Connect { .. } => {
                "check your network connection and --base-url".to_string()
            }
            LlmError::Timeout {
                stage: TimeoutStage::Response,
                after,
                ..
            } => format!(
                "the model took longer than the {}s allowed (the server may still be writing the answer): raise request_timeout_secs in config.toml or PAI_REQUEST_TIMEOUT (a small model on a CPU may need 600 or more), or ask for a smaller change",
                after.as_secs()
            ),
            LlmError::Timeout { after, .. } => format!(
                "the stream stopped for {}s: the server is overloaded or stuck; try again, or turn streaming off",
                after.as_secs()
            ),
            LlmError::Interrupted { .. } => "the connection dropped; try again".to_string(),
            LlmError::BadResponse { .. } => {
                "check that --base-url points at a server speaking this provider's API".to_string()
            }
            LlmError::Truncated {
                server_limit: Some(n),
                ..
            } => format!(
                "the server stops replies at about {n} tokens: raise its output or context limit (Ollama: num_ctx / num_predict; llama-server -c; llama-cpp-python --n_ctx), or ask for a smaller change"
            ),
            LlmError::Truncated {
                max_output_tokens, ..
            } => format!(
                "the reply reached the {max_output_tokens}-token output limit: ask for a smaller change or split the request, or raise max_output_tokens in config.toml (PAI_MAX_OUTPUT_TOKENS) and the server's context"
            ),
            LlmError::Blocked { reason, .. } if reason == "RECITATION" => {
                "ask for your own implementation rather than a well-known one, or try again: this stop depends on the exact wording"
                    .to_string()
            }
            LlmError::Blocked { request: true, .. } => {
                "rephrase the request; the files sent with it as context count too (name fewer files, or leave out the one that trips the filter)"
                    .to_string()
            }
            LlmError::Refusal { .. } | LlmError::Blocked { .. } => {
                "rephrase the request, saying plainly what the code is for, or use another model"
                    .to_string()
            }
            LlmError::EmptyReply { .. } | LlmError::MalformedJson { .. } => {
                "try again; a different model may follow the reply format better".to_string()
            }
        }
    }

    /// Whether the server answered the call at all (a status, a body): `false` for a call
    /// abandoned on a timeout or a dropped connection, whose usage never arrived.
    pub fn was_answered(&self) -> bool {
        !matches!(
            self,
            LlmError::Timeout { .. } | LlmError::Interrupted { .. }
        )
    }

    /// For replies that were unusable but might be fixed by asking again, a short user message
    /// to send back to the model asking for a corrected reply.
    pub fn correction_request(&self) -> Option<String> {
        match self {
            LlmError::MalformedJson { detail, .. } => Some(format!(
                "Your previous reply could not be parsed as a JSON object ({detail}). Reply again with exactly one JSON object that follows the schema, without any text around it."
            )),
            LlmError::Truncated { .. } => Some(
                "Your previous reply was cut off at the output limit. Reply again with a shorter plan: fewer steps, shorter file contents, and use MODIFY with small edits instead of rewriting whole files."
                    .to_string(),
            ),
            LlmError::Blocked {
                reason,
                request: false,
                ..
            } if reason == "RECITATION" => Some(
                "Your previous reply was stopped by the provider because it reproduced existing published text word for word. Reply again with one JSON object that follows the schema, writing any code in your own words."
                    .to_string(),
            ),
            LlmError::Stopped { .. } => Some(
                "Your previous reply stopped before it was complete. Reply with one JSON object that follows the schema."
                    .to_string(),
            ),
            LlmError::EmptyReply { .. } => Some(
                "Your previous reply was empty. Reply with one JSON object that follows the schema."
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// Where a reply was cut off: at the limit sent, or earlier, where the server stopped it.
fn truncation_text(sent: u32, server: Option<u64>) -> String {
    match server {
        Some(n) => format!(
            "by the server after {n} output tokens, below the {sent} pai allowed (the server's own limit)"
        ),
        None => format!("at the output limit of {sent} tokens"),
    }
}

/// A filter's stop in words: who stopped what, and why, in the provider's terms.
fn blocked_text(provider: ProviderKind, reason: &str, detail: &str, request: bool) -> String {
    let why = match reason {
        "SAFETY" | "IMAGE_SAFETY" => "its safety filter flagged it",
        "RECITATION" => "it was reproducing existing published text word for word",
        "PROHIBITED_CONTENT" => "its usage policy prohibits the content",
        "BLOCKLIST" => "it contained terms on the account's block list",
        "SPII" => "it contained sensitive personal information",
        "LANGUAGE" => "it is in a language the model does not support",
        "content_filter" => "its content filter flagged it",
        _ => "a filter flagged it",
    };
    let what = if request {
        "refused the request"
    } else {
        "stopped the reply"
    };
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    format!("{provider} {what} because {why} ({reason}{detail})")
}

/// Why a model stopped, in words, for the finish reasons that are neither a filter nor the
/// output limit.
fn stop_cause(reason: &str) -> &'static str {
    match reason {
        "OTHER" => "for a reason it did not name",
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => {
            "because the model's tool call was unusable"
        }
        "NO_IMAGE" | "IMAGE_OTHER" => "because the model could not produce the content",
        _ => "early",
    }
}

fn retry_after_text(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!(", asked to wait {}s", d.as_secs_f32()),
        None => String::new(),
    }
}

/// Replaces every occurrence of `secret` in `text`, so provider bodies echoed into errors cannot
/// leak the key.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    }
}

/// The first `max` characters of `text` on one line, with an ellipsis when cut.
pub(crate) fn snippet(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut out: String = flat.chars().take(max).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_every_occurrence() {
        let out = scrub("key=sk-123 and again sk-123.", Some("sk-123"));
        assert_eq!(out, "key=[redacted] and again [redacted].");
        assert_eq!(scrub("abc", Some("")), "abc");
        assert_eq!(scrub("abc", None), "abc");
    }

    #[test]
    fn snippet_is_short_single_line_and_char_safe() {
        assert_eq!(snippet("a\n  b\tc", 10), "a b c");
        let s = snippet(&"é".repeat(50), 5);
        assert_eq!(s, "ééééé…");
    }

    #[test]
    fn kinds_and_retryability() {
        let p = ProviderKind::Gemini;
        let e = LlmError::Auth {
            provider: p,
            status: 401,
            message: "x".into(),
        };
        assert_eq!(e.kind(), LlmErrorKind::Config);
        assert!(!e.is_retryable());
        let mut e = LlmError::Server {
            provider: p,
            status: 503,
            attempts: 1,
            retry_after: None,
            message: "x".into(),
        };
        assert!(e.is_retryable());
        e.set_attempts(3);
        assert_eq!(e.attempts(), Some(3));
        assert!(e.to_string().contains("3 attempt(s)"));
        let e = LlmError::MalformedJson {
            detail: "d".into(),
            snippet: "s".into(),
        };
        assert_eq!(e.kind(), LlmErrorKind::Reply);
        assert!(e.correction_request().is_some());
    }
}
