//! HTTP shared by all wire formats: one pooled rustls client, timeouts, classification of HTTP
//! failures into [`LlmError`], retries with exponential backoff and jitter (honouring
//! `Retry-After` and Gemini's `RetryInfo`), server-sent-event reading with an idle timeout, and
//! the per-provider usage meter.
//!
//! Cancellation needs no code here: every wait (connect, response, body, stream chunk, backoff
//! sleep) is an `.await` inside the caller's future, so dropping that future drops the
//! connection and the sleep with it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;
use tokio::time::Instant;

use super::error::{LlmError, TimeoutStage, scrub, snippet};
use super::{OnText, ProviderConfig, ProviderKind, StreamEvent, Usage, UsageTotals};

/// Longest error body kept from a failed response.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The connection to one provider: client, settings and meter.
pub(crate) struct Transport {
    client: reqwest::Client,
    pub(crate) kind: ProviderKind,
    /// The base URL without a trailing slash.
    pub(crate) base: String,
    /// `scheme://host:port`, for messages.
    origin: String,
    key: Option<String>,
    pub(crate) model: String,
    request_timeout: Duration,
    idle_timeout: Duration,
    max_attempts: u32,
    backoff_base: Duration,
    backoff_max: Duration,
    max_retry_wait: Duration,
    totals: Mutex<UsageTotals>,
}

impl Transport {
    /// Validates `cfg` and builds the HTTP client.
    pub(crate) fn new(cfg: &ProviderConfig) -> Result<Self, LlmError> {
        let kind = cfg.kind;
        let invalid = |detail: String| LlmError::InvalidConfig {
            provider: kind,
            detail,
        };
        let raw_base = cfg
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty())
            .unwrap_or(kind.default_base_url());
        let url = Url::parse(raw_base)
            .map_err(|e| invalid(format!("base URL `{raw_base}` is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "base URL `{raw_base}` must start with http:// or https://"
            )));
        }
        if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
            return Err(invalid(
                "the base URL must not carry a query, fragment or credentials; keys go in settings, never in URLs"
                    .to_string(),
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid(format!("base URL `{raw_base}` has no host")))?;
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        let origin = match url.port() {
            Some(port) => format!("{}://{}:{port}", url.scheme(), host),
            None => format!("{}://{}", url.scheme(), host),
        };
        let mut base = raw_base.trim_end_matches('/').to_string();
        // The spec says the base replaces the origin; tolerate users pasting the version path.
        let version_suffix = match kind {
            ProviderKind::Gemini => Some("/v1beta"),
            ProviderKind::Anthropic => Some("/v1"),
            ProviderKind::OpenAi => None,
        };
        if let Some(suffix) = version_suffix
            && base.ends_with(suffix)
        {
            base.truncate(base.len() - suffix.len());
        }

        let key = cfg
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        if let Some(k) = &key
            && HeaderValue::from_str(k).is_err()
        {
            return Err(invalid(
                "the API key contains characters that cannot be sent in a header".to_string(),
            ));
        }
        if key.is_none() && !loopback {
            return Err(LlmError::MissingKey { provider: kind });
        }
        if cfg.model.trim().is_empty() {
            return Err(invalid("the model name is empty".to_string()));
        }

        let mut builder = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("pai/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(Duration::from_secs(60));
        if loopback {
            // A local server must never be reached through a proxy from the environment.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| invalid(format!("cannot set up HTTPS: {}", root_cause(&e))))?;

        Ok(Self {
            client,
            kind,
            base,
            origin,
            key,
            model: cfg.model.trim().to_string(),
            request_timeout: cfg.request_timeout,
            idle_timeout: cfg.stream_idle_timeout,
            max_attempts: cfg.max_attempts.max(1),
            backoff_base: cfg.backoff_base,
            backoff_max: cfg.backoff_max.max(cfg.backoff_base),
            max_retry_wait: cfg.max_retry_wait,
            totals: Mutex::new(UsageTotals::default()),
        })
    }

    /// The key, for the provider to put in its auth header.
    pub(crate) fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// A header holding the key, marked sensitive so it never shows in debug output.
    pub(crate) fn secret_header(&self, value: &str) -> Result<HeaderValue, LlmError> {
        let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::InvalidConfig {
            provider: self.kind,
            detail: "the API key contains characters that cannot be sent in a header".into(),
        })?;
        v.set_sensitive(true);
        Ok(v)
    }

    /// Adds `usage` to the meter.
    pub(crate) fn record_usage(&self, usage: Usage) {
        if let Ok(mut t) = self.totals.lock() {
            t.usage.add(usage);
        }
    }

    /// The meter.
    pub(crate) fn totals(&self) -> UsageTotals {
        self.totals.lock().map(|t| *t).unwrap_or_default()
    }

    /// Sends one generation request (no retry here) and returns the 2xx response, or the
    /// classified failure. Counts the request in the meter.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        stream: bool,
    ) -> Result<Response, LlmError> {
        let mut request = self.client.post(url).headers(headers).json(body);
        if !stream {
            // Covers connecting, headers and the whole body; streams get an idle timeout instead.
            request = request.timeout(self.request_timeout);
        }
        let result = self.send(request).await;
        // A request that never reached the server (no connection) is not a call: it was
        // neither answered nor billed.
        if !matches!(result, Err(LlmError::Connect { .. }))
            && let Ok(mut t) = self.totals.lock()
        {
            t.requests += 1;
        }
        result
    }

    /// Sends one GET (no retry here) and returns the 2xx response or the classified failure.
    pub(crate) async fn get(&self, url: &str, headers: HeaderMap) -> Result<Response, LlmError> {
        self.send(self.client.get(url).headers(headers)).await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Response, LlmError> {
        let deadline = Instant::now() + self.request_timeout;
        let response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => return Err(self.timeout(TimeoutStage::Response, self.request_timeout)),
            Ok(Err(e)) => return Err(self.transport_error(&e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body: String = tokio::time::timeout_at(deadline, read_limited(response))
            .await
            .unwrap_or_default();
        Err(self.status_error(status, &headers, &body))
    }

    /// Reads a whole JSON body (bounded by the request's own timeout when it set one, else by
    /// the request timeout).
    pub(crate) async fn read_json(&self, response: Response) -> Result<Value, LlmError> {
        let bytes = match tokio::time::timeout(self.request_timeout, response.bytes()).await {
            Err(_) => return Err(self.timeout(TimeoutStage::Response, self.request_timeout)),
            Ok(Err(e)) => return Err(self.transport_error(&e)),
            Ok(Ok(b)) => b,
        };
        serde_json::from_slice(&bytes).map_err(|e| LlmError::BadResponse {
            provider: self.kind,
            detail: format!(
                "the body is not JSON ({e}): `{}`",
                snippet(&scrub(&String::from_utf8_lossy(&bytes), self.key()), 120)
            ),
        })
    }

    /// The server-sent events of a streaming response, or the response back when the server
    /// answered with a plain JSON body instead (some compatible servers ignore `stream`).
    pub(crate) fn events(&self, response: Response) -> Result<Events, Box<Response>> {
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_sse
            && response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.to_ascii_lowercase().contains("json"))
        {
            return Err(Box::new(response));
        }
        Ok(Events {
            inner: Box::pin(response.bytes_stream().eventsource()),
            idle: self.idle_timeout,
            kind: self.kind,
            key: self.key.clone(),
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or attempts run out. Returns the
    /// outcome and the number of attempts made; a final retryable error carries that number.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        sink: &TextSink<'_>,
        attempt: F,
    ) -> (Result<T, LlmError>, u32)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let attempts = AtomicU32::new(0);
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.backoff_base)
            .with_max_delay(self.backoff_max)
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(self.max_attempts.saturating_sub(1) as usize);
        let result = (|| {
            if attempts.fetch_add(1, Ordering::Relaxed) > 0 {
                sink.restart();
            }
            attempt()
        })
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(LlmError::is_retryable)
        .adjust(|err, backoff| {
            let backoff = backoff?;
            match err.retry_after() {
                // A server asking for a longer pause than we accept: report it now.
                Some(wait) if wait > self.max_retry_wait => None,
                Some(wait) => Some(wait.max(backoff)),
                None => Some(backoff),
            }
        })
        .await;
        let n = attempts.load(Ordering::Relaxed);
        (
            result.map_err(|mut e| {
                e.set_attempts(n);
                e
            }),
            n,
        )
    }

    fn timeout(&self, stage: TimeoutStage, after: Duration) -> LlmError {
        LlmError::Timeout {
            provider: self.kind,
            stage,
            after,
        }
    }

    /// Classifies a reqwest failure (no HTTP status).
    fn transport_error(&self, e: &reqwest::Error) -> LlmError {
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

    /// Builds a header map from static names and values.
    pub(crate) fn headers(pairs: Vec<(HeaderName, HeaderValue)>) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(pairs.len());
        for (k, v) in pairs {
            map.insert(k, v);
        }
        map
    }
}

/// A stream of server-sent events with an idle timeout per event.
pub(crate) struct Events {
    #[allow(clippy::type_complexity)]
    inner: Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>,
    idle: Duration,
    kind: ProviderKind,
    key: Option<String>,
}

impl Events {
    /// The next event; `Ok(None)` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, LlmError> {
        match tokio::time::timeout(self.idle, self.inner.next()).await {
            Err(_) => Err(LlmError::Timeout {
                provider: self.kind,
                stage: TimeoutStage::StreamIdle,
                after: self.idle,
            }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(e)))) => Err(LlmError::Interrupted {
                provider: self.kind,
                attempts: 1,
                detail: scrub(&root_cause(&e), self.key.as_deref()),
            }),
            Ok(Some(Err(e))) => Err(LlmError::BadResponse {
                provider: self.kind,
                detail: format!("the event stream is malformed: {e}"),
            }),
        }
    }

    /// Parses an event's data as JSON.
    pub(crate) fn parse(&self, event: &Event) -> Result<Value, LlmError> {
        serde_json::from_str(&event.data).map_err(|e| LlmError::BadResponse {
            provider: self.kind,
            detail: format!(
                "a streamed event is not JSON ({e}): `{}`",
                snippet(&scrub(&event.data, self.key.as_deref()), 120)
            ),
        })
    }

    /// The error for a stream that ended before the reply was complete.
    pub(crate) fn ended_early(&self) -> LlmError {
        LlmError::Interrupted {
            provider: self.kind,
            attempts: 1,
            detail: "the stream ended before the reply was complete".to_string(),
        }
    }
}

/// Forwards reply text to the caller and remembers whether any was shown, so a retry can tell
/// the caller to discard it.
pub(crate) struct TextSink<'a> {
    on_text: OnText<'a>,
    emitted: AtomicBool,
}

impl<'a> TextSink<'a> {
    pub(crate) fn new(on_text: OnText<'a>) -> Self {
        Self {
            on_text,
            emitted: AtomicBool::new(false),
        }
    }

    /// Passes a piece of reply text on.
    pub(crate) fn text(&self, piece: &str) {
        if !piece.is_empty() {
            self.emitted.store(true, Ordering::Relaxed);
            (self.on_text)(StreamEvent::Text(piece));
        }
    }

    fn restart(&self) {
        if self.emitted.swap(false, Ordering::Relaxed) {
            (self.on_text)(StreamEvent::Restart);
        }
    }
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body.
async fn read_limited(mut response: Response) -> String {
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
fn root_cause(e: &reqwest::Error) -> String {
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
    use serde_json::json;

    fn transport(kind: ProviderKind, base: &str, key: Option<&str>) -> Result<Transport, LlmError> {
        let mut cfg = ProviderConfig::new(kind, "m");
        cfg.base_url = Some(base.to_string());
        cfg.api_key = key.map(str::to_string);
        Transport::new(&cfg)
    }

    #[test]
    fn key_optional_only_on_loopback() {
        for base in [
            "http://127.0.0.1:9/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8/v1",
        ] {
            assert!(
                transport(ProviderKind::OpenAi, base, None).is_ok(),
                "{base}"
            );
        }
        assert!(matches!(
            transport(ProviderKind::OpenAi, "https://api.example.com/v1", None),
            Err(LlmError::MissingKey { .. })
        ));
        assert!(matches!(
            transport(ProviderKind::Gemini, "https://example.com", Some("  ")),
            Err(LlmError::MissingKey { .. })
        ));
    }

    #[test]
    fn bad_base_urls_are_config_errors_without_the_key() {
        for base in [
            "not a url",
            "ftp://x.com",
            "https://x.com/?key=abc",
            "https://u:p@x.com",
        ] {
            let err = transport(ProviderKind::Gemini, base, Some("SECRETKEY123"))
                .err()
                .unwrap();
            assert!(
                matches!(err, LlmError::InvalidConfig { .. }),
                "{base}: {err:?}"
            );
            assert!(!err.to_string().contains("SECRETKEY123"));
        }
        let err = transport(ProviderKind::Gemini, "https://x.com", Some("bad\nkey"))
            .err()
            .unwrap();
        assert!(matches!(err, LlmError::InvalidConfig { .. }));
        assert!(!err.to_string().contains("bad\nkey"));
    }

    #[test]
    fn version_suffix_is_tolerated() {
        let t = transport(
            ProviderKind::Gemini,
            "https://g.example.com/v1beta/",
            Some("k"),
        )
        .unwrap();
        assert_eq!(t.base, "https://g.example.com");
        let t = transport(
            ProviderKind::Anthropic,
            "https://a.example.com/v1",
            Some("k"),
        )
        .unwrap();
        assert_eq!(t.base, "https://a.example.com");
        let t = transport(ProviderKind::OpenAi, "https://o.example.com/v1/", Some("k")).unwrap();
        assert_eq!(t.base, "https://o.example.com/v1");
    }

    #[test]
    fn status_classification_and_scrubbing() {
        let t = transport(ProviderKind::Gemini, "https://x.com", Some("AIzaSECRET")).unwrap();
        let h = HeaderMap::new();
        let body = json!({"error": {"code": 400, "message": "API key not valid: AIzaSECRET", "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}});
        let err = t.status_error(StatusCode::BAD_REQUEST, &h, &body.to_string());
        assert!(matches!(err, LlmError::Auth { status: 400, .. }), "{err:?}");
        assert!(!err.to_string().contains("AIzaSECRET"));
        assert!(err.to_string().contains("[redacted]"));

        let body = json!({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}});
        let err = t.status_error(StatusCode::TOO_MANY_REQUESTS, &h, &body.to_string());
        assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
        assert!(err.is_retryable());

        let err = t.status_error(StatusCode::NOT_FOUND, &h, "<html>nope</html>");
        assert!(matches!(err, LlmError::NotFound { .. }));
        let err = t.status_error(StatusCode::SERVICE_UNAVAILABLE, &h, "");
        assert!(err.to_string().contains("Service Unavailable"), "{err}");
        let err = t.status_error(StatusCode::from_u16(529).unwrap(), &h, "");
        assert!(err.is_retryable());
        let err = t.status_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &h,
            r#"{"detail": [{"msg": "bad"}]}"#,
        );
        assert!(matches!(err, LlmError::BadRequest { status: 422, .. }));
        assert!(err.to_string().contains("bad"));
    }

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
