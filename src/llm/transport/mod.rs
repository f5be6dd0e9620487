//! HTTP shared by all wire formats: one pooled rustls client, timeouts, retries with
//! exponential backoff and jitter, and the per-provider usage meter. Checking the base URL
//! ([`base_url`]), classifying failures ([`classify`]), reading server-sent events ([`sse`])
//! and the TLS set-up ([`tls`]) have their own modules.
//!
//! Cancellation needs no code here: every wait (connect, response, body, stream chunk, backoff
//! sleep) is an `.await` inside the caller's future, so dropping that future drops the
//! connection and the sleep with it.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use eventsource_stream::Eventsource;
use reqwest::Response;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use super::error::{LlmError, TimeoutStage, scrub, snippet};
use super::{ProviderConfig, ProviderKind, StreamEvent, Usage, UsageTotals};

mod base_url;
mod classify;
mod sse;
mod tls;

pub use base_url::BaseUrl;
use classify::{read_limited, root_cause};
pub(crate) use sse::{Events, TextSink};
pub(crate) use tls::crypto_provider;

/// The connection to one provider: client, settings and meter.
pub(crate) struct Transport {
    client: reqwest::Client,
    pub(crate) kind: ProviderKind,
    /// The base URL without a trailing slash.
    pub(crate) base: String,
    /// `scheme://host:port`, for messages.
    pub(crate) origin: String,
    /// The server is on this machine.
    pub(crate) loopback: bool,
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
        let url =
            BaseUrl::parse(cfg.base_url.as_deref().unwrap_or_default(), kind).map_err(invalid)?;

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
        if key.is_none() && !url.loopback {
            return Err(LlmError::MissingKey { provider: kind });
        }
        if cfg.model.trim().is_empty() {
            return Err(invalid("the model name is empty".to_string()));
        }

        let tls = tls::client_config()
            .map_err(|detail| invalid(format!("cannot set up HTTPS: {detail}")))?;
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("pai/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(Duration::from_secs(60));
        if url.loopback {
            // A local server must never be reached through a proxy from the environment.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| invalid(format!("cannot set up HTTPS: {}", root_cause(&e))))?;

        Ok(Self {
            client,
            kind,
            base: url.base,
            origin: url.origin,
            loopback: url.loopback,
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

    /// Counts a reply whose server reported no usage.
    pub(crate) fn record_unmetered(&self) {
        if let Ok(mut t) = self.totals.lock() {
            t.unmetered += 1;
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

    /// One GET with the same retries as a generation call and nothing streamed, its body
    /// read as JSON: what the providers' `validate` asks of the server.
    pub(crate) async fn get_json_retried(
        &self,
        url: &str,
        headers: impl Fn() -> Result<HeaderMap, LlmError>,
    ) -> Result<Value, LlmError> {
        self.run_quietly(|| async {
            let response = self.get(url, headers()?).await?;
            self.read_json(response).await
        })
        .await
    }

    /// [`Transport::get_json_retried`] when only the answer's success matters.
    pub(crate) async fn probe_retried(
        &self,
        url: &str,
        headers: impl Fn() -> Result<HeaderMap, LlmError>,
    ) -> Result<(), LlmError> {
        self.run_quietly(|| async { self.get(url, headers()?).await.map(drop) })
            .await
    }

    /// [`Transport::run`] for requests whose text nobody watches.
    async fn run_quietly<T, F, Fut>(&self, attempt: F) -> Result<T, LlmError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let quiet = |_: StreamEvent<'_>| {};
        let sink = TextSink::new(&quiet);
        self.run(&sink, attempt).await.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;
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
}
