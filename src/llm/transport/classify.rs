//! Classification of failures into [`LlmError`]: transport errors (no HTTP status), non-2xx
//! responses (auth, not found, billing, rate limits, server errors) with the provider's own
//! message scrubbed of the key, and the waits servers ask for (`Retry-After`, Gemini's
//! `RetryInfo`).

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode};
use serde_json::Value;

use super::Transport;
use crate::llm::ProviderKind;
use crate::llm::error::{LlmError, TimeoutStage, scrub, snippet};

/// Longest error body kept from a failed response.
pub(super) const ERROR_BODY_LIMIT: usize = 64 * 1024;

impl Transport {
    /// Classifies a reqwest failure (no HTTP status).
    pub(super) fn transport_error(&self, e: &reqwest::Error) -> LlmError {
        let detail = scrub(&root_cause(e), self.key());
        if e.is_connect() {
            LlmError::Connect {
                provider: self.kind,
                origin: self.origin.clone(),
                attempts: 1,
                detail,
            }
        } else if e.is_timeout() {
            self.timeout(TimeoutStage::Response, self.request_timeout)
        } else if e.is_builder() {
            LlmError::InvalidConfig {
                provider: self.kind,
                detail,
            }
        } else {
            LlmError::Interrupted {
                provider: self.kind,
                attempts: 1,
                detail,
            }
        }
    }

    /// Classifies a non-2xx response.
    pub(crate) fn status_error(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &str,
    ) -> LlmError {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let message = scrub(&error_message(parsed.as_ref(), body), self.key());
        let message = if message.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_string()
        } else {
            snippet(&message, 300)
        };
        let retry_after =
            retry_after(headers).or_else(|| parsed.as_ref().and_then(gemini_retry_delay));
        let provider = self.kind;
        let code = status.as_u16();
        match code {
            401 | 403 => LlmError::Auth {
                provider,
                status: code,
                message,
            },
            400 if provider == ProviderKind::Gemini
                && (body.contains("API_KEY_INVALID") || body.contains("API key not valid")) =>
            {
                LlmError::Auth {
                    provider,
                    status: code,
                    message,
                }
            }
            404 => LlmError::NotFound {
                provider,
                model: self.model.clone(),
                message,
            },
            // A spent balance is answered with 429 too; it is a billing problem that no wait
            // fixes. Told apart by the error's code or type, never by its text: Gemini's
            // retryable RESOURCE_EXHAUSTED uses the same "exceeded your current quota" words.
            429 if parsed.as_ref().is_some_and(is_billing_error) => {
                LlmError::Billing { provider, message }
            }
            429 => LlmError::RateLimited {
                provider,
                attempts: 1,
                retry_after,
                message,
            },
            408 | 500..=599 => LlmError::Server {
                provider,
                status: code,
                attempts: 1,
                retry_after,
                message,
            },
            _ => LlmError::BadRequest {
                provider,
                status: code,
                message,
            },
        }
    }
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body.
pub(super) async fn read_limited(mut response: Response) -> String {
    let mut buf = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        buf.extend_from_slice(&chunk);
        if buf.len() >= ERROR_BODY_LIMIT {
            buf.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// The innermost cause of a transport error ("Connection refused (os error 111)"), which says
/// more than reqwest's outer "error sending request".
pub(super) fn root_cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    let mut text = e.to_string();
    while let Some(next) = source.source() {
        source = next;
        text = next.to_string();
    }
    if e.is_timeout() && !text.contains("timed out") {
        text = format!("timed out: {text}");
    }
    text
}

/// The human message of a provider error body: `error.message` (all three providers), a bare
/// `error` string, `message` or `detail` (FastAPI-based servers), else the body itself.
fn error_message(parsed: Option<&Value>, body: &str) -> String {
    if let Some(v) = parsed {
        let err = &v["error"];
        if let Some(m) = err["message"].as_str() {
            return match err["param"].as_str() {
                Some(p) if !m.contains(p) => format!("{m} (param: {p})"),
                _ => m.to_string(),
            };
        }
        for candidate in [err, &v["message"], &v["detail"]] {
            match candidate {
                Value::String(s) => return s.clone(),
                Value::Null => {}
                other if !other.is_object() || candidate != err => return other.to_string(),
                _ => {}
            }
        }
    }
    body.trim().to_string()
}

/// Whether an error body says the account has no credit left (OpenAI `insufficient_quota`,
/// by `code` or `type`; OpenAI-compatible servers that copy it).
fn is_billing_error(v: &Value) -> bool {
    let err = &v["error"];
    [&err["code"], &err["type"]].iter().any(|f| {
        matches!(
            f.as_str(),
            Some("insufficient_quota" | "billing_hard_limit_reached" | "billing_not_active")
        )
    })
}

/// `retry-after-ms` (OpenAI, Azure) or `Retry-After` (seconds or an HTTP date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = when.signed_duration_since(chrono::Utc::now());
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// Gemini's `google.rpc.RetryInfo.retryDelay` ("37s", "0.5s") from an error body.
fn gemini_retry_delay(body: &Value) -> Option<Duration> {
    body["error"]["details"]
        .as_array()?
        .iter()
        .filter(|d| {
            d["@type"]
                .as_str()
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| parse_proto_duration(d["retryDelay"].as_str()?))
}

fn parse_proto_duration(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        assert_eq!(parse_proto_duration("37s"), Some(Duration::from_secs(37)));
        assert_eq!(parse_proto_duration("-1s"), None);
        assert_eq!(parse_proto_duration("5m"), None);
    }

    #[test]
    fn error_messages_from_various_servers() {
        let openai = json!({"error": {"message": "Invalid schema", "type": "invalid_request_error", "param": "response_format"}});
        assert_eq!(
            error_message(Some(&openai), ""),
            "Invalid schema (param: response_format)"
        );
        let bare = json!({"error": "model 'x' not found"});
        assert_eq!(error_message(Some(&bare), ""), "model 'x' not found");
        let anthropic =
            json!({"type": "error", "error": {"type": "not_found_error", "message": "model: x"}});
        assert_eq!(error_message(Some(&anthropic), ""), "model: x");
        assert_eq!(error_message(None, "  plain  "), "plain");
    }
}
