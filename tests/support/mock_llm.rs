//! A scripted stand-in for the three model APIs (Gemini, OpenAI chat completions, Anthropic
//! messages), for tests and demos. It listens on `127.0.0.1` with an ephemeral port, in its own
//! thread with its own tokio runtime, so blocking tests that spawn the real `pai` binary can use
//! it as easily as async tests that drive the library.
//!
//! A [`Script`] is provider-agnostic data: replies (a plan object, raw text, or a fault) served
//! in order, plus rules that answer when the request text contains a string. Whatever wire format
//! a request arrives in, the mock wraps the reply in that format, streaming (SSE) or not, with
//! usage fields computed by one estimate: `ceil(chars / 4)`, input over the system text, every
//! message text and the schema or tool definition; output over the reply text. The same numbers
//! feed the mock's counters, so pai's accounting can be compared with them.
//!
//! Every request is recorded (method, path and query, headers with secret values redacted, the
//! body), so tests can assert on what pai sent. Scripts can be loaded from JSON files; the format
//! is documented in `fixtures/README.md`.
#![allow(dead_code)]

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use futures_util::StreamExt;
use pai::llm::ProviderKind;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Headers whose values are credentials; recorded as `<redacted>`.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "x-goog-api-key",
    "x-api-key",
    "api-key",
    "proxy-authorization",
    "cookie",
];

/// Characters per streamed chunk unless the script says otherwise.
const DEFAULT_CHUNK_CHARS: usize = 24;

// ---------------------------------------------------------------------------------------------
// Scripts
// ---------------------------------------------------------------------------------------------

/// What the mock answers, as data. Load from JSON with [`Script::from_file`] or build in code.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Served in order, one per generation request that no rule matched.
    #[serde(default)]
    pub replies: Vec<Reply>,
    /// Checked first, in order; the first matching rule answers.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Served when `replies` is used up (otherwise the mock answers 400 "script exhausted").
    #[serde(default, rename = "default")]
    pub fallback: Option<Reply>,
    /// When set, requests must carry exactly this key (in the provider's auth header) or get the
    /// provider's "bad key" error.
    #[serde(default)]
    pub require_key: Option<String>,
    /// OpenAI `response_format` types to reject with a 400 naming `response_format`, as servers
    /// without structured output do: any of `json_schema`, `json_object`.
    #[serde(default)]
    pub reject_response_format: Vec<String>,
    /// Model names the model-lookup endpoints know; empty means any name is known.
    #[serde(default)]
    pub models: Vec<String>,
    /// Characters of reply text per streamed event (default 24).
    #[serde(default)]
    pub chunk_chars: Option<usize>,
    /// Fewest prompt tokens the simulated prompt cache keeps (default 1,024, the smallest of the
    /// providers' documented minimums).
    #[serde(default)]
    pub cache_min: Option<u64>,
    /// A real server's behaviour, recorded: the name of a file in `fixtures/llm/servers/`
    /// (without `.json`), a [`ServerProfile`].
    #[serde(default)]
    pub server: Option<String>,
    /// The profile `server` names, loaded when the mock starts.
    #[serde(skip)]
    pub profile: Option<ServerProfile>,
    /// Code that answers from what a request carries (a benchmark's oracle model); asked
    /// after the rules and before the scripted replies.
    #[serde(skip)]
    pub responder: Option<Responder>,
}

/// A model written as code: given a generation request as recorded, the reply, or `None` to
/// leave the request to the scripted replies.
#[derive(Clone)]
pub struct Responder(pub Arc<Respond>);

/// What a [`Responder`] runs.
pub type Respond = dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync;

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

/// How one real OpenAI-compatible server answers, recorded from it (`fixtures/llm/servers/`):
/// which requests it refuses and with what status and body, whether its streams carry usage,
/// and what its model list and `/props` say.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerProfile {
    /// Where and when it was recorded (for people; not read).
    #[serde(default)]
    pub recorded: Value,
    /// Requests the server refuses, checked in order.
    #[serde(default)]
    pub refusals: Vec<ProfileRefusal>,
    /// Whether streamed replies end with a usage chunk when `stream_options` asks for one.
    #[serde(default = "yes")]
    pub stream_usage: bool,
    /// The body of `GET /v1/models`, verbatim.
    #[serde(default)]
    pub models: Option<Value>,
    /// The status of `GET /props` (404 when absent).
    #[serde(default)]
    pub props_status: Option<u16>,
    /// The body of `GET /props`, verbatim.
    #[serde(default)]
    pub props_body: Option<Value>,
    /// The body of `GET /openapi.json`, verbatim (404 when absent).
    #[serde(default)]
    pub openapi: Option<Value>,
    /// A streamed reply as the server sent it (for people: the mock renders its own streams,
    /// without usage when `stream_usage` is false, as this one shows).
    #[serde(default)]
    pub stream_example: Option<String>,
}

fn yes() -> bool {
    true
}

/// "A request whose body has `equals` at `pointer` gets `status` with `body`."
#[derive(Debug, Clone, Deserialize)]
pub struct ProfileRefusal {
    /// A JSON pointer into the request body (`/response_format/type`).
    pub pointer: String,
    /// The value that is refused there.
    pub equals: Value,
    /// The recorded status.
    pub status: u16,
    /// The recorded body.
    pub body: Value,
}

impl ServerProfile {
    /// The profile recorded in `fixtures/llm/servers/<name>.json`.
    pub fn load(name: &str) -> Result<Self, String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/llm/servers")
            .join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn refusal(&self, body: &Value) -> Option<&ProfileRefusal> {
        self.refusals
            .iter()
            .find(|r| body.pointer(&r.pointer) == Some(&r.equals))
    }
}

/// "Answer `reply` when the request text contains `contains`."
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The substring to look for (case-sensitive).
    pub contains: String,
    /// Which text is searched.
    #[serde(default)]
    pub scope: Scope,
    /// The answer.
    pub reply: Reply,
    /// How many times the rule may fire (unlimited when absent).
    #[serde(default)]
    pub times: Option<u32>,
}

/// The text a [`Rule`] searches.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The last user message (the default: later phases do not re-trigger a first-call rule).
    #[default]
    LastUser,
    /// Every message of the conversation (not the system prompt).
    Messages,
    /// The system prompt, the messages and the raw request body.
    Any,
}

/// One scripted answer. In JSON: `{"plan": {...}}`, `{"text": "..."}`, `"cut"`, `"malformed"`,
/// `"empty"`, `"truncated"`, `"safety"`, `{"refusal": "..."}`, `{"rate_limit": {...}}`,
/// `{"status": {...}}`, `{"drip": {...}}`, `{"delay": {...}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// A structured reply (the plan object of SPEC section 11): JSON text for Gemini and
    /// OpenAI, the tool call's input for Anthropic.
    Plan(Value),
    /// Raw reply text, sent as is (an Anthropic text block, not a tool call).
    Text(String),
    /// HTTP 429. Gemini requests get the delay as `RetryInfo.retryDelay` in the body; the others
    /// get a `retry-after-ms` header (when `retry_after_ms` is set) or `Retry-After` (seconds).
    RateLimit {
        /// Seconds to ask the client to wait.
        #[serde(default)]
        retry_after_secs: Option<u64>,
        /// Milliseconds to ask the client to wait (takes precedence).
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// Any HTTP error status with the provider's error body.
    Status {
        /// The status code (500, 503, 400, 401, 404, 529, ...).
        code: u16,
        /// The error message (a default per status otherwise).
        #[serde(default)]
        message: Option<String>,
        /// A `Retry-After` header in seconds.
        #[serde(default)]
        retry_after_secs: Option<u64>,
    },
    /// A normal reply whose body (or event stream) breaks off half-way: the connection is
    /// aborted mid-event.
    Cut,
    /// A body that is not the wire format: invalid JSON (non-streaming) or an event whose data
    /// is invalid JSON (streaming).
    Malformed,
    /// A 200 with no candidates / choices / content.
    Empty,
    /// Half of a reply with the "output limit reached" finish reason (`MAX_TOKENS`, `length`,
    /// `max_tokens`).
    Truncated,
    /// A refusal: OpenAI `message.refusal`, Anthropic `stop_reason: "refusal"`. Gemini has no
    /// refusal field; it gets the text as an ordinary (non-JSON) reply.
    Refusal(String),
    /// A safety block: Gemini `promptFeedback.blockReason: SAFETY`, OpenAI `finish_reason:
    /// content_filter`, Anthropic `stop_reason: "refusal"` with no content.
    Safety,
    /// Headers at once, then the reply a few characters at a time, one piece per interval
    /// (for cancellation tests). Usage is counted only if the drip runs to the end.
    Drip {
        /// Pause before each piece.
        #[serde(default = "default_drip_interval")]
        interval_ms: u64,
        /// What to drip (a long chat plan when absent).
        #[serde(default)]
        then: Option<Box<Reply>>,
    },
    /// A response given verbatim, whatever the wire format: a provider's real body shape as
    /// its API reference documents it (error objects, finish reasons, usage fields).
    Raw {
        /// The HTTP status.
        status: u16,
        /// The JSON body, sent as is.
        body: Value,
    },
    /// Waits before answering with `then` (for timeout tests).
    Delay {
        /// The pause before the response headers.
        ms: u64,
        /// The answer after the pause.
        then: Box<Reply>,
    },
    /// Waits until the file `path` exists (the test's go-ahead), at most `max_ms`, then
    /// answers with `then`: for tests that need several clients waiting at the same time,
    /// however slowly a loaded machine starts them.
    AwaitFile {
        /// The file whose existence releases the answer.
        path: std::path::PathBuf,
        /// The longest wait, after which the answer goes anyway.
        max_ms: u64,
        /// The answer after the wait.
        then: Box<Reply>,
    },
}

fn default_drip_interval() -> u64 {
    100
}

impl Reply {
    /// A structured reply.
    pub fn plan(value: Value) -> Self {
        Reply::Plan(value)
    }

    /// A structured `chat` reply answering `answer`.
    pub fn chat(answer: &str) -> Self {
        Reply::Plan(chat_plan(answer))
    }

    /// Raw text.
    pub fn text(text: &str) -> Self {
        Reply::Text(text.to_string())
    }

    /// An HTTP error status with the provider's default message.
    pub fn status(code: u16) -> Self {
        Reply::Status {
            code,
            message: None,
            retry_after_secs: None,
        }
    }

    /// A 429 asking to wait `ms` milliseconds.
    pub fn rate_limit_ms(ms: u64) -> Self {
        Reply::RateLimit {
            retry_after_secs: None,
            retry_after_ms: Some(ms),
        }
    }

    /// A 429 asking to wait `secs` seconds (whole-second `Retry-After`).
    pub fn rate_limit_secs(secs: u64) -> Self {
        Reply::RateLimit {
            retry_after_secs: Some(secs),
            retry_after_ms: None,
        }
    }

    /// A slow drip of a long chat reply, one piece every `interval_ms`.
    pub fn drip(interval_ms: u64) -> Self {
        Reply::Drip {
            interval_ms,
            then: None,
        }
    }

    /// `then`, after a pause of `ms`.
    pub fn delay(ms: u64, then: Reply) -> Self {
        Reply::Delay {
            ms,
            then: Box::new(then),
        }
    }

    /// `then`, once `path` exists (or after `max_ms`).
    pub fn await_file(path: impl Into<std::path::PathBuf>, max_ms: u64, then: Reply) -> Self {
        Reply::AwaitFile {
            path: path.into(),
            max_ms,
            then: Box::new(then),
        }
    }

    /// A short label for recordings ("plan", "rate_limit", ...).
    pub fn label(&self) -> &'static str {
        match self {
            Reply::Plan(_) => "plan",
            Reply::Text(_) => "text",
            Reply::RateLimit { .. } => "rate_limit",
            Reply::Status { .. } => "status",
            Reply::Cut => "cut",
            Reply::Malformed => "malformed",
            Reply::Empty => "empty",
            Reply::Truncated => "truncated",
            Reply::Refusal(_) => "refusal",
            Reply::Safety => "safety",
            Reply::Drip { .. } => "drip",
            Reply::Delay { .. } => "delay",
            Reply::AwaitFile { .. } => "await_file",
            Reply::Raw { .. } => "raw",
        }
    }
}

/// A minimal valid `chat` plan object.
pub fn chat_plan(answer: &str) -> Value {
    json!({
        "intent": "chat",
        "reply": answer,
        "analysis": {
            "user_intent": "chat",
            "files_to_read": [], "files_to_create": [], "files_to_modify": [],
            "risks": "none", "success_criteria": [], "complexity": "simple"
        },
        "steps": [],
        "observe": false,
        "next_steps": []
    })
}

impl Script {
    /// An empty script (every generation request gets 400 "script exhausted").
    pub fn new() -> Self {
        Self::default()
    }

    /// A script serving `replies` in order.
    pub fn with_replies(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self {
            replies: replies.into_iter().collect(),
            ..Self::default()
        }
    }

    /// A script whose every generation request is answered by `respond`.
    pub fn respond_with(
        mut self,
        respond: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Responder(Arc::new(respond)));
        self
    }

    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("invalid mock script: {e}"))
    }

    /// Loads a script from a JSON file, reporting problems as text.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read mock script {}: {e}", path.display()))?;
        Self::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Loads a script from a JSON file; a path relative to the crate root is accepted. Panics
    /// with the reason if the file is missing or invalid (test support).
    pub fn from_file(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let resolved = if path.is_relative() {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
        } else {
            path.to_path_buf()
        };
        match Self::load(&resolved) {
            Ok(script) => script,
            Err(e) => panic!("{e}"),
        }
    }

    /// Appends a reply.
    pub fn reply(mut self, reply: Reply) -> Self {
        self.replies.push(reply);
        self
    }

    /// Adds a rule answering `reply` whenever the last user message contains `contains`.
    pub fn rule(mut self, contains: &str, reply: Reply) -> Self {
        self.rules.push(Rule {
            contains: contains.to_string(),
            scope: Scope::LastUser,
            reply,
            times: None,
        });
        self
    }

    /// Sets the reply used once `replies` is exhausted.
    pub fn fallback(mut self, reply: Reply) -> Self {
        self.fallback = Some(reply);
        self
    }

    /// Lets the simulated prompt cache keep prompts from `tokens` tokens on.
    pub fn cache_min(mut self, tokens: u64) -> Self {
        self.cache_min = Some(tokens);
        self
    }

    /// Requires this key on every request.
    pub fn require_key(mut self, key: &str) -> Self {
        self.require_key = Some(key.to_string());
        self
    }

    /// Rejects these OpenAI `response_format` types with a 400.
    pub fn reject_response_format(mut self, types: &[&str]) -> Self {
        self.reject_response_format = types.iter().map(|t| t.to_string()).collect();
        self
    }

    /// Behave as the recorded server `name` (`fixtures/llm/servers/<name>.json`).
    pub fn server(mut self, name: &str) -> Self {
        self.server = Some(name.to_string());
        self
    }

    /// Restricts the models the lookup endpoints know.
    pub fn models(mut self, models: &[&str]) -> Self {
        self.models = models.iter().map(|m| m.to_string()).collect();
        self
    }

    /// Sets the characters per streamed event.
    pub fn chunk_chars(mut self, n: usize) -> Self {
        self.chunk_chars = Some(n.max(1));
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Recordings
// ---------------------------------------------------------------------------------------------

/// One request as the mock saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Position among all recorded requests, from 0.
    pub index: usize,
    /// `GET`, `POST`, ...
    pub method: String,
    /// Path and query exactly as received (`/v1beta/models/m:streamGenerateContent?alt=sse`).
    pub url: String,
    /// Every header, lower-case names; credential values replaced by `<redacted>`.
    pub headers: Vec<(String, String)>,
    /// The header that carried a non-empty credential, if any (`x-goog-api-key`,
    /// `authorization`, `x-api-key`).
    pub auth_header: Option<String>,
    key_sha256: Option<String>,
    /// The wire format, for generation requests (`None` for model lookups and unknown paths).
    pub provider: Option<ProviderKind>,
    /// Whether a streaming (SSE) reply was requested.
    pub stream: bool,
    /// The body parsed as JSON (`Null` if it was not JSON).
    pub body: Value,
    /// The body as text.
    pub raw_body: String,
    /// The system prompt as the provider would see it.
    pub system: String,
    /// The conversation as `(role, text)`, roles as sent (`user`, `model`, `assistant`).
    pub messages: Vec<(String, String)>,
    /// The schema or tool definition sent, if any.
    pub schema: Option<Value>,
    /// Estimated input tokens billed for this request (0 if the reply was an error or fault).
    pub input_tokens: u64,
    /// Estimated output tokens billed.
    pub output_tokens: u64,
    /// Input tokens reported as served from the (simulated) prompt cache.
    pub cached_tokens: u64,
    /// The HTTP status the mock answered.
    pub status: u16,
    /// What the mock answered with (a [`Reply::label`], or `rejected`, `bad_key`, `exhausted`,
    /// `model_lookup`, `not_found`).
    pub answered: String,
    /// When the request reached the mock's handler.
    pub received_at: Instant,
    /// How long the mock spent answering: from [`RecordedRequest::received_at`] until the
    /// response was ready, or for a streamed body until its last byte was handed over (or the
    /// client went away). Benchmarks subtract it from pai's wall time to get pai's own time.
    pub handled_in: Duration,
}

impl RecordedRequest {
    /// A header value (credentials redacted).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the credential header carried exactly `key` (compared by hash; the key itself is
    /// not stored).
    pub fn key_is(&self, key: &str) -> bool {
        self.key_sha256.as_deref() == Some(sha256_hex(key).as_str())
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, t)| t.as_str())
    }

    /// The OpenAI `response_format.type` sent (`json_schema`, `json_object`), with
    /// `+schema` when a JSON-mode request carries a schema too; `none` if absent.
    pub fn response_format(&self) -> String {
        let format = &self.body["response_format"];
        match format["type"].as_str() {
            Some("json_object") if format["schema"].is_object() => "json_object+schema".to_string(),
            Some(t) => t.to_string(),
            None => "none".to_string(),
        }
    }

    /// Whether this was a generation request (as opposed to a model lookup).
    pub fn is_generation(&self) -> bool {
        self.provider.is_some()
    }
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// A running mock server. Dropping it stops the server.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockLlm {
    /// Starts a server for `script` on `127.0.0.1` with an ephemeral port.
    pub fn start(script: Script) -> Self {
        Self::start_on(script, 0).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a server for `script` on `127.0.0.1:port` (0 picks a free port).
    pub fn start_on(mut script: Script, port: u16) -> Result<Self, String> {
        if let Some(name) = &script.server {
            script.profile = Some(ServerProfile::load(name)?);
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(Inner::new(script)),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<Result<SocketAddr, String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let app_state = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mock-llm".to_string())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(format!("mock runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(format!("mock bind 127.0.0.1:{port}: {e}")));
                            return;
                        }
                    };
                    let _ = addr_tx.send(listener.local_addr().map_err(|e| e.to_string()));
                    let app = Router::new().fallback(handle).with_state(app_state);
                    // No graceful shutdown: open drips must not keep a dropped mock alive.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stop_rx => {}
                    }
                });
            })
            .map_err(|e| format!("mock thread: {e}"))?;
        let addr = addr_rx
            .recv()
            .map_err(|_| "mock server thread died during start-up".to_string())??;
        Ok(Self {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The value to pass as `--base-url` for `kind` (OpenAI includes `/v1`).
    pub fn base_url(&self, kind: ProviderKind) -> String {
        match kind {
            ProviderKind::OpenAi => format!("{}/v1", self.origin()),
            ProviderKind::Gemini | ProviderKind::Anthropic => self.origin(),
        }
    }

    fn state(&self) -> MutexGuard<'_, Inner> {
        self.shared.lock()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// The generation requests so far (model lookups left out).
    pub fn generation_requests(&self) -> Vec<RecordedRequest> {
        self.state()
            .requests
            .iter()
            .filter(|r| r.is_generation())
            .cloned()
            .collect()
    }

    /// Generation requests received (every attempt counts, faults included).
    pub fn calls(&self) -> u64 {
        self.state().calls
    }

    /// Input tokens billed so far (cached ones included).
    pub fn input_tokens(&self) -> u64 {
        self.state().input_tokens
    }

    /// Output tokens billed so far.
    pub fn output_tokens(&self) -> u64 {
        self.state().output_tokens
    }

    /// Input tokens reported as prompt-cache hits so far.
    pub fn cached_tokens(&self) -> u64 {
        self.state().cached_tokens
    }

    /// Total time the mock spent answering, over every request so far (see
    /// [`RecordedRequest::handled_in`]): the part of a client's wall time spent waiting on it.
    pub fn handling_time(&self) -> Duration {
        self.state().requests.iter().map(|r| r.handled_in).sum()
    }

    /// Streamed or dripped bodies whose client went away before the end.
    pub fn aborted(&self) -> u64 {
        self.state().aborted
    }

    /// Waits up to `timeout` until at least `n` bodies were abandoned by their client. This
    /// blocks the calling thread: use it from blocking tests (say, while the `pai` binary runs).
    /// In async tests poll [`MockLlm::aborted`] with an async sleep instead, or the test's own
    /// runtime cannot close the connection being waited for.
    pub fn wait_for_aborted(&self, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.aborted() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Appends a reply to the script while running.
    pub fn push_reply(&self, reply: Reply) {
        self.state().script.replies.push(reply);
    }

    /// Replies of the script not served yet.
    pub fn remaining_replies(&self) -> usize {
        let st = self.state();
        st.script.replies.len().saturating_sub(st.next_reply)
    }

    /// The system prompt of every generation request, in order.
    pub fn system_prompts(&self) -> Vec<String> {
        self.generation_requests()
            .into_iter()
            .map(|r| r.system)
            .collect()
    }

    /// Whether every generation request carried a byte-identical system prompt.
    pub fn system_prompt_stable(&self) -> bool {
        let prompts = self.system_prompts();
        prompts.windows(2).all(|w| w[0] == w[1])
    }

    /// Whether `needle` (say, the API key) appears in any recorded URL (path or query).
    pub fn any_url_contains(&self, needle: &str) -> bool {
        self.state().requests.iter().any(|r| r.url.contains(needle))
    }

    /// Whether every generation request carried exactly `key` in its provider's auth header
    /// and nowhere in its URL.
    pub fn key_only_in_headers(&self, key: &str) -> bool {
        let requests = self.generation_requests();
        !requests.is_empty()
            && requests
                .iter()
                .all(|r| r.key_is(key) && !r.url.contains(key))
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    state: Mutex<Inner>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panicking handler must not make every later assertion panic too.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

struct Inner {
    script: Script,
    next_reply: usize,
    rule_uses: Vec<u32>,
    requests: Vec<RecordedRequest>,
    calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    /// Prompt prefixes the simulated cache holds (see [`cache_key`]).
    cache: HashSet<String>,
    aborted: u64,
}

impl Inner {
    fn new(script: Script) -> Self {
        let rules = script.rules.len();
        Self {
            script,
            next_reply: 0,
            rule_uses: vec![0; rules],
            requests: Vec::new(),
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            cache: HashSet::new(),
            aborted: 0,
        }
    }

    /// The reply for a request: a matching rule, else the next scripted reply, else the default.
    fn choose(&mut self, req: &RecordedRequest) -> Option<Reply> {
        self.rule_uses.resize(self.script.rules.len(), 0);
        for (i, rule) in self.script.rules.iter().enumerate() {
            if rule.times.is_some_and(|t| self.rule_uses[i] >= t) {
                continue;
            }
            let haystack = match rule.scope {
                Scope::LastUser => req.last_user_text().unwrap_or_default().to_string(),
                Scope::Messages => req
                    .messages
                    .iter()
                    .map(|(_, t)| t.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                Scope::Any => format!(
                    "{}\n{}\n{}",
                    req.system,
                    req.messages
                        .iter()
                        .map(|(_, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    req.raw_body
                ),
            };
            if haystack.contains(&rule.contains) {
                self.rule_uses[i] += 1;
                return Some(rule.reply.clone());
            }
        }
        if let Some(reply) = self.script.responder.as_ref().and_then(|r| (r.0)(req)) {
            return Some(reply);
        }
        if let Some(reply) = self.script.replies.get(self.next_reply) {
            self.next_reply += 1;
            return Some(reply.clone());
        }
        self.script.fallback.clone()
    }

    /// Bills a reply: updates the counters and the recorded request.
    fn bill(&mut self, index: usize, bill: Bill) {
        self.input_tokens += bill.input;
        self.output_tokens += bill.output;
        self.cached_tokens += bill.cached;
        if let Some(r) = self.requests.get_mut(index) {
            r.input_tokens = bill.input;
            r.output_tokens = bill.output;
            r.cached_tokens = bill.cached;
        }
    }
}

/// Token counts of one reply.
#[derive(Debug, Clone, Copy, Default)]
struct Bill {
    input: u64,
    output: u64,
    cached: u64,
    /// Anthropic reports prompt-cache writes separately.
    cache_write: u64,
}

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Request handling
// ---------------------------------------------------------------------------------------------

/// What was parsed out of a generation request.
struct Parsed {
    provider: ProviderKind,
    stream: bool,
    model: String,
    system: String,
    messages: Vec<(String, String)>,
    schema: Option<Value>,
    /// Characters of the schema / tool definition, counted as input.
    schema_chars: usize,
    /// OpenAI: `stream_options.include_usage`.
    include_usage: bool,
    /// Anthropic: the forced tool's name.
    tool_name: String,
    /// The output token limit the request set (0 if none): a truncated reply bills all of it,
    /// as the providers do.
    output_limit: u64,
    /// Anthropic: the system prompt carries a `cache_control` breakpoint.
    cache_marked: bool,
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received_at = Instant::now();
    let path = uri.path().to_string();
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let parsed = parse_generation(&method, &path, &json_body);
    let (mut record, key) = record_request(
        &method,
        &uri,
        &headers,
        &body,
        &json_body,
        parsed.as_ref(),
        received_at,
    );
    let admitted = admit(&shared, &mut record, key.as_deref(), parsed.as_ref());
    let index = admitted.index;

    let finish = |status: u16, answered: &str| {
        let mut st = shared.lock();
        if let Some(r) = st.requests.get_mut(index) {
            r.status = status;
            r.answered = answered.to_string();
            r.handled_in = received_at.elapsed();
        }
    };

    let provider_hint = parsed
        .as_ref()
        .map(|p| p.provider)
        .unwrap_or_else(|| guess_provider(&path));

    if !admitted.key_ok {
        finish(bad_key_status(provider_hint), "bad_key");
        return bad_key(provider_hint);
    }

    let Some(mut p) = parsed else {
        if let Some(response) = admitted
            .profile
            .as_ref()
            .and_then(|pr| profile_lookup(pr, &path))
        {
            finish(response.status().as_u16(), "model_lookup");
            return response;
        }
        let (response, answered) =
            answer_non_generation(&method, &path, &admitted.script_models, provider_hint);
        finish(response.status().as_u16(), answered);
        return response;
    };
    if admitted.profile.as_ref().is_some_and(|pr| !pr.stream_usage) {
        p.include_usage = false;
    }

    if let Some((status, body)) = admitted.refused {
        finish(status, "refused");
        return json_response(status, body);
    }

    if admitted.rejected {
        finish(400, "rejected");
        return rejected_response_format(&json_body);
    }

    let Some(reply) = admitted.reply else {
        finish(400, "exhausted");
        return error_response(
            p.provider,
            400,
            "mock: the script has no reply left for this request",
            None,
        );
    };

    let label = reply.label();
    let response = respond(&shared, index, &p, reply, admitted.chunk).await;
    finish(response.status().as_u16(), label);
    response
}

/// The request as it goes into the log (its index and outcome are filled in later), and the
/// credential it carried, which is checked against the script but never recorded in clear.
fn record_request(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
    json_body: &Value,
    parsed: Option<&Parsed>,
    received_at: Instant,
) -> (RecordedRequest, Option<String>) {
    let url = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string());
    let raw_body = String::from_utf8_lossy(body).into_owned();
    let (recorded_headers, credential) = redact_headers(headers);
    let (auth_header, key) = credential.map(|c| (c.header, c.key)).unzip();
    let record = RecordedRequest {
        index: 0,
        method: method.to_string(),
        url,
        headers: recorded_headers,
        auth_header,
        key_sha256: key.as_deref().map(sha256_hex),
        provider: parsed.map(|p| p.provider),
        stream: parsed.is_some_and(|p| p.stream),
        body: json_body.clone(),
        raw_body,
        system: parsed.map(|p| p.system.clone()).unwrap_or_default(),
        messages: parsed.map(|p| p.messages.clone()).unwrap_or_default(),
        schema: parsed.and_then(|p| p.schema.clone()),
        input_tokens: 0,
        output_tokens: 0,
        cached_tokens: 0,
        status: 0,
        answered: String::new(),
        received_at,
        handled_in: Duration::ZERO,
    };
    (record, key)
}

/// A credential a request carried.
struct Credential {
    /// The lower-case name of the header that carried it.
    header: String,
    /// The key, without a `Bearer ` prefix.
    key: String,
}

/// Every header with lower-case names and credential values replaced by `<redacted>`, and the
/// first non-empty credential that is not a cookie.
fn redact_headers(headers: &HeaderMap) -> (Vec<(String, String)>, Option<Credential>) {
    let mut recorded_headers = Vec::new();
    let mut credential = None;
    for (name, value) in headers {
        let name = name.as_str().to_ascii_lowercase();
        let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if SECRET_HEADERS.contains(&name.as_str()) {
            let key = text
                .strip_prefix("Bearer ")
                .unwrap_or(&text)
                .trim()
                .to_string();
            if !key.is_empty() && credential.is_none() && name != "cookie" {
                credential = Some(Credential {
                    header: name.clone(),
                    key,
                });
            }
            recorded_headers.push((name, "<redacted>".to_string()));
        } else {
            recorded_headers.push((name, text));
        }
    }
    (recorded_headers, credential)
}

/// What the script decided for one request.
struct Admission {
    /// The request's position in the log.
    index: usize,
    /// The scripted reply; `None` when the key is wrong, the request is rejected or not a
    /// generation, or the script is used up.
    reply: Option<Reply>,
    key_ok: bool,
    /// OpenAI: the request's `response_format` type is one the script rejects.
    rejected: bool,
    /// The recorded server's refusal of this request: its status and body.
    refused: Option<(u16, Value)>,
    /// The recorded server the script names.
    profile: Option<ServerProfile>,
    script_models: Vec<String>,
    chunk: usize,
}

/// Logs the request and decides its fate under one lock, so that its place in the log, the
/// call count and the reply it gets agree even when requests arrive concurrently.
fn admit(
    shared: &Shared,
    record: &mut RecordedRequest,
    key: Option<&str>,
    parsed: Option<&Parsed>,
) -> Admission {
    let mut st = shared.lock();
    record.index = st.requests.len();
    if parsed.is_some() {
        st.calls += 1;
    }
    let key_ok = match &st.script.require_key {
        Some(required) => key == Some(required.as_str()),
        None => true,
    };
    let rejected = parsed.is_some_and(|p| {
        p.provider == ProviderKind::OpenAi
            && st
                .script
                .reject_response_format
                .iter()
                .any(|t| record.body["response_format"]["type"].as_str() == Some(t.as_str()))
    });
    let refused = parsed
        .filter(|p| p.provider == ProviderKind::OpenAi)
        .and_then(|_| st.script.profile.as_ref()?.refusal(&record.body))
        .map(|r| (r.status, r.body.clone()));
    let rejected = rejected || refused.is_some();
    let reply = if parsed.is_some() && key_ok && !rejected {
        st.choose(record)
    } else {
        None
    };
    let script_models = st.script.models.clone();
    let chunk = st.script.chunk_chars.unwrap_or(DEFAULT_CHUNK_CHARS).max(1);
    let profile = st.script.profile.clone();
    st.requests.push(record.clone());
    Admission {
        index: record.index,
        reply,
        key_ok,
        rejected,
        refused,
        profile,
        script_models,
        chunk,
    }
}

/// The answer to a request that is not a generation: a model lookup, or the provider's 404;
/// with the label the log records for it.
fn answer_non_generation(
    method: &Method,
    path: &str,
    script_models: &[String],
    provider_hint: ProviderKind,
) -> (Response, &'static str) {
    match model_lookup(method, path, script_models) {
        Some(response) => (response, "model_lookup"),
        None => (
            error_response(
                provider_hint,
                404,
                &format!("mock: no endpoint {method} {path}"),
                None,
            ),
            "not_found",
        ),
    }
}

/// The recorded server's own model list or `/props`, where the profile holds them.
fn profile_lookup(profile: &ServerProfile, path: &str) -> Option<Response> {
    if path.ends_with("/models") {
        return profile.models.clone().map(|b| json_response(200, b));
    }
    let not_found = || json!({"detail": "Not Found"});
    if path == "/props" {
        let body = profile.props_body.clone().unwrap_or_else(not_found);
        return Some(json_response(profile.props_status.unwrap_or(404), body));
    }
    if path == "/openapi.json" {
        return Some(match &profile.openapi {
            Some(b) => json_response(200, b.clone()),
            None => json_response(404, not_found()),
        });
    }
    None
}

/// OpenAI's 400 for a `response_format` type the model does not support.
fn rejected_response_format(json_body: &Value) -> Response {
    let kind = json_body["response_format"]["type"]
        .as_str()
        .unwrap_or("json_schema");
    json_response(
        400,
        json!({"error": {
            "message": format!("Invalid parameter: 'response_format' of type '{kind}' is not supported with this model."),
            "type": "invalid_request_error",
            "param": "response_format",
            "code": null
        }}),
    )
}

/// Recognises the three generation endpoints and pulls out what the model would see.
fn parse_generation(method: &Method, path: &str, body: &Value) -> Option<Parsed> {
    if method != Method::POST {
        return None;
    }
    if let Some(rest) = path.strip_prefix("/v1beta/models/") {
        return parse_gemini(rest, body);
    }
    if path.ends_with("/chat/completions") {
        return Some(parse_openai(body));
    }
    if path == "/v1/messages" {
        return Some(parse_anthropic(body));
    }
    None
}

/// The text of a message's content: a string, or the concatenated `text` (or `content`) of its
/// parts.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().or_else(|| p["content"].as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The conversation as `(role, text)` from a list of messages whose text is under `content_key`.
fn role_texts(messages: &Value, content_key: &str) -> Vec<(String, String)> {
    messages
        .as_array()
        .map(|c| {
            c.iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap_or("user").to_string(),
                        text_of(&m[content_key]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Gemini: `rest` is what follows `/v1beta/models/`, `{model}:{action}`.
fn parse_gemini(rest: &str, body: &Value) -> Option<Parsed> {
    let (model, action) = rest.split_once(':')?;
    let stream = match action {
        "generateContent" => false,
        "streamGenerateContent" => true,
        _ => return None,
    };
    let system = text_of(&body["systemInstruction"]["parts"]);
    let messages = role_texts(&body["contents"], "parts");
    let config = &body["generationConfig"];
    let schema = config
        .get("responseSchema")
        .or_else(|| config.get("responseJsonSchema"))
        .cloned();
    let schema_chars = schema.as_ref().map_or(0, |s| s.to_string().chars().count());
    Some(Parsed {
        provider: ProviderKind::Gemini,
        stream,
        model: model.to_string(),
        system,
        messages,
        schema,
        schema_chars,
        include_usage: false,
        tool_name: String::new(),
        output_limit: config["maxOutputTokens"].as_u64().unwrap_or(0),
        cache_marked: false,
    })
}

/// OpenAI chat completions: system and developer messages make up the system prompt.
fn parse_openai(body: &Value) -> Parsed {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("user");
        let text = text_of(&m["content"]);
        if role == "system" || role == "developer" {
            system.push(text);
        } else {
            messages.push((role.to_string(), text));
        }
    }
    let schema = body["response_format"]["json_schema"]["schema"].clone();
    let schema = (!schema.is_null()).then_some(schema);
    let schema_chars = schema.as_ref().map_or(0, |s| s.to_string().chars().count());
    Parsed {
        provider: ProviderKind::OpenAi,
        stream: body["stream"].as_bool() == Some(true),
        model: body["model"].as_str().unwrap_or("mock-model").to_string(),
        system: system.join("\n"),
        messages,
        schema,
        schema_chars,
        include_usage: body["stream_options"]["include_usage"].as_bool() == Some(true),
        tool_name: String::new(),
        output_limit: body["max_completion_tokens"]
            .as_u64()
            .or_else(|| body["max_tokens"].as_u64())
            .unwrap_or(0),
        cache_marked: false,
    }
}

/// Anthropic messages: the structured reply comes as a forced tool call, whose definition counts
/// as the schema.
fn parse_anthropic(body: &Value) -> Parsed {
    let system = text_of(&body["system"]);
    let messages = role_texts(&body["messages"], "content");
    let tools = body.get("tools").cloned().filter(|t| !t.is_null());
    let schema_chars = tools.as_ref().map_or(0, |t| t.to_string().chars().count());
    let tool_name = body["tool_choice"]["name"]
        .as_str()
        .or_else(|| body["tools"][0]["name"].as_str())
        .unwrap_or("reply")
        .to_string();
    Parsed {
        provider: ProviderKind::Anthropic,
        stream: body["stream"].as_bool() == Some(true),
        model: body["model"].as_str().unwrap_or("mock-model").to_string(),
        system,
        messages,
        schema: tools,
        schema_chars,
        include_usage: false,
        tool_name,
        output_limit: body["max_tokens"].as_u64().unwrap_or(0),
        cache_marked: body["system"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b.get("cache_control").is_some())),
    }
}

fn guess_provider(path: &str) -> ProviderKind {
    if path.starts_with("/v1beta") {
        ProviderKind::Gemini
    } else if path.starts_with("/v1/messages") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    }
}

/// Model lookups used by `pai config validate`.
fn model_lookup(method: &Method, path: &str, models: &[String]) -> Option<Response> {
    if method != Method::GET {
        return None;
    }
    let known = |m: &str| models.is_empty() || models.iter().any(|k| k == m);
    let listed: Vec<String> = if models.is_empty() {
        let mut all: Vec<String> = ProviderKind::ALL
            .iter()
            .map(|k| k.default_model().to_string())
            .collect();
        all.push("mock-model".to_string());
        all
    } else {
        models.to_vec()
    };
    if let Some(model) = path.strip_prefix("/v1beta/models/") {
        return Some(if known(model) {
            json_response(
                200,
                json!({"name": format!("models/{model}"), "displayName": model, "supportedGenerationMethods": ["generateContent"]}),
            )
        } else {
            error_response(
                ProviderKind::Gemini,
                404,
                &format!("models/{model} is not found for API version v1beta"),
                None,
            )
        });
    }
    if path == "/v1beta/models" {
        let list: Vec<Value> = listed
            .iter()
            .map(|m| json!({"name": format!("models/{m}")}))
            .collect();
        return Some(json_response(200, json!({"models": list})));
    }
    if path.ends_with("/models") {
        let data: Vec<Value> = listed
            .iter()
            .map(|m| json!({"id": m, "object": "model", "type": "model", "owned_by": "mock"}))
            .collect();
        return Some(json_response(
            200,
            json!({"object": "list", "data": data, "has_more": false}),
        ));
    }
    if let Some(model) = path.strip_prefix("/v1/models/") {
        return Some(if known(model) {
            json_response(
                200,
                json!({"id": model, "object": "model", "type": "model", "display_name": model}),
            )
        } else {
            error_response(
                ProviderKind::Anthropic,
                404,
                &format!("model: {model}"),
                None,
            )
        });
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Rendering replies in each wire format
// ---------------------------------------------------------------------------------------------

/// A reply reduced to what the wire formats need.
enum Content {
    /// Reply text; `structured` is the plan object (Anthropic sends it as tool input).
    Text {
        text: String,
        structured: Option<Value>,
        truncated: bool,
    },
    Refusal(String),
    Safety,
    Empty,
}

impl Content {
    fn from_reply(reply: &Reply) -> Option<Content> {
        Some(match reply {
            Reply::Plan(v) => Content::Text {
                text: v.to_string(),
                structured: Some(v.clone()),
                truncated: false,
            },
            Reply::Text(t) => Content::Text {
                text: t.clone(),
                structured: None,
                truncated: false,
            },
            Reply::Truncated => {
                let full =
                    chat_plan("This answer was going to be much longer than allowed.").to_string();
                let half: String = full.chars().take(full.chars().count() / 2).collect();
                Content::Text {
                    text: half,
                    structured: None,
                    truncated: true,
                }
            }
            Reply::Refusal(m) => Content::Refusal(m.clone()),
            Reply::Safety => Content::Safety,
            Reply::Empty => Content::Empty,
            _ => return None,
        })
    }

    /// Characters billed as output.
    fn output_chars(&self) -> usize {
        match self {
            Content::Text { text, .. } => text.chars().count(),
            Content::Refusal(m) => m.chars().count(),
            Content::Safety | Content::Empty => 0,
        }
    }
}

/// Per-request facts the renderers need.
struct Ctx<'a> {
    p: &'a Parsed,
    id: usize,
    bill: Bill,
    chunk: usize,
}

async fn respond(
    shared: &Arc<Shared>,
    index: usize,
    p: &Parsed,
    reply: Reply,
    chunk: usize,
) -> Response {
    let mut reply = reply;
    // Unwrap delays and waits first; they only postpone the answer.
    loop {
        match reply {
            Reply::Delay { ms, then } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                reply = *then;
            }
            Reply::AwaitFile { path, max_ms, then } => {
                let until = std::time::Instant::now() + Duration::from_millis(max_ms);
                while !path.exists() && std::time::Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                reply = *then;
            }
            other => {
                reply = other;
                break;
            }
        }
    }
    match reply {
        Reply::Raw { status, body } => Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap_or_default(),
        Reply::RateLimit {
            retry_after_secs,
            retry_after_ms,
        } => rate_limited(p.provider, retry_after_secs, retry_after_ms),
        Reply::Status {
            code,
            message,
            retry_after_secs,
        } => status_response(p.provider, code, message, retry_after_secs),
        Reply::Malformed => malformed_response(p),
        Reply::Cut => cut_response(shared, index, p, chunk),
        Reply::Drip { interval_ms, then } => drip_response(shared, index, p, interval_ms, then),
        other => content_response(shared, index, p, &other, chunk),
    }
}

/// A scripted error status in the provider's format, with `Retry-After` when the script sets it.
fn status_response(
    provider: ProviderKind,
    code: u16,
    message: Option<String>,
    retry_after_secs: Option<u64>,
) -> Response {
    let message = message.unwrap_or_else(|| default_message(code).to_string());
    let mut r = error_response(provider, code, &message, None);
    if let Some(secs) = retry_after_secs
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A reply that breaks off mid-JSON: an unterminated event when streaming, else a body that is
/// half JSON and half a proxy's HTML error page.
fn malformed_response(p: &Parsed) -> Response {
    if p.stream {
        let event = match p.provider {
            ProviderKind::Anthropic => {
                "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"delta\": \n\n"
            }
            _ => "data: {\"candidates\": [{\"content\": {\"parts\": [\n\n",
        };
        sse_response(stream_body(vec![event.to_string()], None))
    } else {
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                "{\"id\": \"mock\", \"choices\": [{\"message\": <html>502 Bad Gateway</html>",
            ))
            .unwrap_or_default()
    }
}

/// A 200 carrying `body`: server-sent events when the request streams, else JSON.
fn ok_response(stream: bool, body: Body) -> Response {
    if stream {
        sse_response(body)
    } else {
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap_or_default()
    }
}

/// The first half of a plan reply, then the connection is reset. Nothing is billed.
fn cut_response(shared: &Arc<Shared>, index: usize, p: &Parsed, chunk: usize) -> Response {
    let content = Content::Text {
        text: chat_plan("This reply will never arrive in full.").to_string(),
        structured: Some(chat_plan("This reply will never arrive in full.")),
        truncated: false,
    };
    let bill = estimate(shared, p, &content);
    let ctx = Ctx {
        p,
        id: index,
        bill,
        chunk,
    };
    let pieces = if p.stream {
        sse_events(&ctx, &content)
    } else {
        vec![json_body(&ctx, &content).to_string()]
    };
    let joined = pieces.concat();
    let half: String = joined.chars().take(joined.chars().count() / 2).collect();
    // The pause lets the half arrive before the connection is aborted (an erroring body
    // would otherwise discard what is still buffered).
    let body = Body::from_stream(futures_util::stream::unfold(0u8, move |step| {
        let half = half.clone();
        async move {
            match step {
                0 => Some((Ok(Bytes::from(half)), 1)),
                1 => {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Some((
                        Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "mock: cut mid-event",
                        )),
                        2,
                    ))
                }
                _ => None,
            }
        }
    }));
    ok_response(p.stream, body)
}

/// `then` (by default a long chat reply) sent a few characters every `interval_ms`; billed only
/// when the client has read it all, counted as aborted when it gives up.
fn drip_response(
    shared: &Arc<Shared>,
    index: usize,
    p: &Parsed,
    interval_ms: u64,
    then: Option<Box<Reply>>,
) -> Response {
    let inner = then.map(|b| *b).unwrap_or_else(|| {
        Reply::chat(&"This reply arrives very slowly, a few characters at a time. ".repeat(20))
    });
    let content = Content::from_reply(&inner).unwrap_or(Content::Empty);
    let bill = estimate(shared, p, &content);
    let ctx = Ctx {
        p,
        id: index,
        bill,
        chunk: 2,
    };
    let pieces = if p.stream {
        sse_events(&ctx, &content)
    } else {
        let body = json_body(&ctx, &content).to_string();
        split_chars(&body, 8)
    };
    let guard = DripGuard {
        shared: Arc::clone(shared),
        index,
        bill: Some((bill, cache_key(p))),
        completed: false,
    };
    let interval = Duration::from_millis(interval_ms);
    let stream = futures_util::stream::unfold(
        (pieces.into_iter(), guard),
        move |(mut pieces, mut guard)| async move {
            tokio::time::sleep(interval).await;
            match pieces.next() {
                Some(piece) => Some((Ok::<Bytes, Infallible>(Bytes::from(piece)), (pieces, guard))),
                None => {
                    guard.mark_completed();
                    None
                }
            }
        },
    );
    ok_response(p.stream, Body::from_stream(stream))
}

/// A reply with content (plan, text, truncation, refusal, safety block, nothing), billed up
/// front, in the provider's format.
fn content_response(
    shared: &Arc<Shared>,
    index: usize,
    p: &Parsed,
    reply: &Reply,
    chunk: usize,
) -> Response {
    let Some(content) = Content::from_reply(reply) else {
        return error_response(p.provider, 500, "mock: unsupported reply", None);
    };
    let bill = estimate(shared, p, &content);
    charge(shared, index, bill, &cache_key(p));
    let ctx = Ctx {
        p,
        id: index,
        bill,
        chunk,
    };
    if p.stream {
        let pieces = sse_events(&ctx, &content);
        // Abandoned streams are counted like drips, so cancellation is observable.
        let guard = DripGuard {
            shared: Arc::clone(shared),
            index,
            bill: None,
            completed: false,
        };
        sse_response(stream_body(pieces, Some(guard)))
    } else {
        json_response(200, json_body(&ctx, &content))
    }
}

/// The prompt as the providers' caches see it, in their order: the schema or tool definition,
/// the system prompt, the conversation. For Anthropic only the part up to the last
/// `cache_control` breakpoint is cached (pai marks the system prompt); OpenAI and Gemini cache
/// implicitly, by the longest prefix shared with an earlier request.
fn cache_key(p: &Parsed) -> String {
    let schema = p.schema.as_ref().map(Value::to_string).unwrap_or_default();
    let mut key = format!("{schema}\u{0}{}", p.system);
    match p.provider {
        ProviderKind::Anthropic if !p.cache_marked => String::new(),
        ProviderKind::Anthropic => key,
        _ => {
            for (_, text) in &p.messages {
                key.push('\u{0}');
                key.push_str(text);
            }
            key
        }
    }
}

/// Characters `a` and `b` share from their start.
fn shared_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// Computes the bill for `content`: the estimate, and the simulated prompt cache as the
/// providers run theirs. Nothing under the cache minimum is kept. OpenAI and Gemini report the
/// longest prefix this prompt shares with an earlier one (OpenAI in steps of 128 tokens);
/// Anthropic reports the marked prefix as read when an earlier request wrote it, as written
/// otherwise.
fn estimate(shared: &Arc<Shared>, p: &Parsed, content: &Content) -> Bill {
    let chars = p.system.chars().count()
        + p.messages
            .iter()
            .map(|(_, t)| t.chars().count())
            .sum::<usize>()
        + p.schema_chars;
    let st = shared.lock();
    let min = st.script.cache_min.unwrap_or(1_024);
    let key = cache_key(p);
    let (cached, cache_write) = match p.provider {
        ProviderKind::Anthropic => {
            let prefix = tokens(key.chars().count());
            if key.is_empty() || prefix < min.max(1) {
                (0, 0)
            } else if st.cache.contains(&key) {
                (prefix, 0)
            } else {
                (0, prefix)
            }
        }
        kind => {
            let common = st
                .cache
                .iter()
                .map(|earlier| shared_prefix(earlier, &key))
                .max()
                .unwrap_or(0) as u64
                / 4;
            let common = if kind == ProviderKind::OpenAi && min >= 128 {
                common / 128 * 128
            } else {
                common
            };
            (if common >= min.max(1) { common } else { 0 }, 0)
        }
    };
    Bill {
        input: tokens(chars),
        output: match content {
            Content::Text {
                truncated: true, ..
            } => p.output_limit.max(tokens(content.output_chars())),
            _ => tokens(content.output_chars()),
        },
        cached: cached.min(tokens(chars)),
        cache_write,
    }
}

/// Books `bill` for request `index`: counters, recording, and the prompt cache (`key`, from
/// [`cache_key`]).
fn charge(shared: &Arc<Shared>, index: usize, bill: Bill, key: &str) {
    let mut st = shared.lock();
    if !key.is_empty() {
        st.cache.insert(key.to_string());
    }
    st.bill(index, bill);
}

/// Notices a streamed body that ended (billing it, for drips) or was abandoned by the client.
struct DripGuard {
    shared: Arc<Shared>,
    index: usize,
    /// Billed when the body completes; `None` when it was billed up front.
    bill: Option<(Bill, String)>,
    completed: bool,
}

impl DripGuard {
    fn mark_completed(&mut self) {
        self.completed = true;
    }
}

impl Drop for DripGuard {
    fn drop(&mut self) {
        if !self.completed {
            self.shared.lock().aborted += 1;
        } else if let Some((bill, system)) = self.bill.take() {
            charge(&self.shared, self.index, bill, &system);
        }
        // The body is over: the client stopped waiting on the mock now, not when the handler
        // returned the response head.
        let mut st = self.shared.lock();
        if let Some(r) = st.requests.get_mut(self.index) {
            r.handled_in = r.received_at.elapsed();
        }
    }
}

fn stream_body(pieces: Vec<String>, guard: Option<DripGuard>) -> Body {
    let stream = futures_util::stream::unfold(
        (pieces.into_iter(), guard),
        |(mut pieces, mut guard)| async move {
            match pieces.next() {
                Some(piece) => Some((Ok::<Bytes, Infallible>(Bytes::from(piece)), (pieces, guard))),
                None => {
                    if let Some(g) = guard.as_mut() {
                        g.mark_completed();
                    }
                    None
                }
            }
        },
    );
    Body::from_stream(stream.boxed())
}

fn split_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

fn json_response(status: u16, body: Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_default()
}

fn default_message(code: u16) -> &'static str {
    match code {
        400 => "Request contains an invalid argument.",
        401 => "Invalid authentication credentials.",
        403 => "Permission denied.",
        404 => "Requested entity was not found.",
        408 => "Request timed out.",
        429 => "Rate limit exceeded.",
        500 => "Internal error encountered.",
        502 => "Bad gateway.",
        503 => "The model is overloaded. Please try again later.",
        504 => "Deadline exceeded.",
        529 => "Overloaded",
        _ => "Mock error.",
    }
}

/// The provider's error body for `code`.
fn error_response(
    provider: ProviderKind,
    code: u16,
    message: &str,
    details: Option<Value>,
) -> Response {
    let body = match provider {
        ProviderKind::Gemini => {
            let status = match code {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                504 => "DEADLINE_EXCEEDED",
                _ => "INTERNAL",
            };
            let mut err = json!({"code": code, "message": message, "status": status});
            if let Some(d) = details {
                err["details"] = d;
            }
            json!({"error": err})
        }
        ProviderKind::OpenAi => {
            let kind = match code {
                401 => "authentication_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                400..=499 => "invalid_request_error",
                _ => "server_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        ProviderKind::Anthropic => {
            let kind = match code {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                400..=499 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    json_response(code, body)
}

fn bad_key_status(provider: ProviderKind) -> u16 {
    match provider {
        // Gemini reports a wrong key as 400 INVALID_ARGUMENT / API_KEY_INVALID.
        ProviderKind::Gemini => 400,
        _ => 401,
    }
}

fn bad_key(provider: ProviderKind) -> Response {
    match provider {
        ProviderKind::Gemini => error_response(
            provider,
            400,
            "API key not valid. Please pass a valid API key.",
            Some(json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com"
            }])),
        ),
        ProviderKind::OpenAi => error_response(
            provider,
            401,
            "Incorrect API key provided. You can find your API key in your account settings.",
            None,
        ),
        ProviderKind::Anthropic => error_response(provider, 401, "invalid x-api-key", None),
    }
}

fn rate_limited(provider: ProviderKind, secs: Option<u64>, ms: Option<u64>) -> Response {
    match provider {
        ProviderKind::Gemini => {
            let delay = match (ms, secs) {
                (Some(ms), _) => Some(format!("{}s", ms as f64 / 1000.0)),
                (None, Some(s)) => Some(format!("{s}s")),
                _ => None,
            };
            let details = delay.map(|d| {
                json!([{
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": d
                }])
            });
            error_response(
                provider,
                429,
                "Resource has been exhausted (e.g. check quota).",
                details,
            )
        }
        _ => {
            let mut r = error_response(provider, 429, "Rate limit reached for requests.", None);
            if let Some(ms) = ms {
                if let Ok(v) = HeaderValue::from_str(&ms.to_string()) {
                    r.headers_mut().insert("retry-after-ms", v);
                }
            } else if let Some(s) = secs
                && let Ok(v) = HeaderValue::from_str(&s.to_string())
            {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
    }
}

/// A whole (non-streaming) response body.
fn json_body(ctx: &Ctx<'_>, content: &Content) -> Value {
    match ctx.p.provider {
        ProviderKind::Gemini => gemini_json_body(ctx, content),
        ProviderKind::OpenAi => openai_json_body(ctx, content),
        ProviderKind::Anthropic => anthropic_json_body(ctx, content),
    }
}

/// Gemini's `generateContent` body: a safety block is prompt feedback without candidates.
fn gemini_json_body(ctx: &Ctx<'_>, content: &Content) -> Value {
    let model = &ctx.p.model;
    let usage = gemini_usage(ctx.bill);
    match content {
        Content::Text {
            text, truncated, ..
        } => json!({
            "candidates": [{
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": if *truncated { "MAX_TOKENS" } else { "STOP" },
                "index": 0
            }],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": format!("mock-{}", ctx.id)
        }),
        Content::Refusal(m) => json!({
            "candidates": [{
                "content": {"parts": [{"text": m}], "role": "model"},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": usage,
            "modelVersion": model
        }),
        Content::Safety => json!({
            "promptFeedback": {
                "blockReason": "SAFETY",
                "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]
            },
            "usageMetadata": usage,
            "modelVersion": model
        }),
        Content::Empty => json!({
            "candidates": [],
            "usageMetadata": usage,
            "modelVersion": model
        }),
    }
}

/// OpenAI's `chat.completion` body: a refusal has its own field, a safety block is the
/// `content_filter` finish reason.
fn openai_json_body(ctx: &Ctx<'_>, content: &Content) -> Value {
    let choices = match content {
        Content::Text {
            text, truncated, ..
        } => json!([{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null},
            "logprobs": null,
            "finish_reason": if *truncated { "length" } else { "stop" }
        }]),
        Content::Refusal(m) => json!([{
            "index": 0,
            "message": {"role": "assistant", "content": null, "refusal": m},
            "logprobs": null,
            "finish_reason": "stop"
        }]),
        Content::Safety => json!([{
            "index": 0,
            "message": {"role": "assistant", "content": ""},
            "finish_reason": "content_filter"
        }]),
        Content::Empty => json!([]),
    };
    json!({
        "id": format!("chatcmpl-mock-{}", ctx.id),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": ctx.p.model,
        "choices": choices,
        "usage": openai_usage(ctx.bill)
    })
}

/// Anthropic's `message` body: a plan comes as the forced tool's input (empty when truncated).
fn anthropic_json_body(ctx: &Ctx<'_>, content: &Content) -> Value {
    let b = ctx.bill;
    let (blocks, stop) = match content {
        Content::Text {
            structured: Some(v),
            truncated: false,
            ..
        } => (
            json!([{"type": "tool_use", "id": format!("toolu_mock_{}", ctx.id), "name": ctx.p.tool_name, "input": v}]),
            "tool_use",
        ),
        Content::Text {
            truncated: true, ..
        } => (
            json!([{"type": "tool_use", "id": format!("toolu_mock_{}", ctx.id), "name": ctx.p.tool_name, "input": {}}]),
            "max_tokens",
        ),
        Content::Text { text, .. } => (json!([{"type": "text", "text": text}]), "end_turn"),
        Content::Refusal(m) => (json!([{"type": "text", "text": m}]), "refusal"),
        Content::Safety => (json!([]), "refusal"),
        Content::Empty => (json!([]), "end_turn"),
    };
    json!({
        "id": format!("msg_mock_{}", ctx.id),
        "type": "message",
        "role": "assistant",
        "model": ctx.p.model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": anthropic_usage(b, b.output)
    })
}

/// The server-sent events of a streaming response, each a complete event with its blank line.
fn sse_events(ctx: &Ctx<'_>, content: &Content) -> Vec<String> {
    match ctx.p.provider {
        ProviderKind::Gemini => gemini_sse_events(ctx, content),
        ProviderKind::OpenAi => openai_sse_events(ctx, content),
        ProviderKind::Anthropic => anthropic_sse_events(ctx, content),
    }
}

/// Gemini frames events with CRLF; usage is sent on the last chunk.
fn gemini_sse_events(ctx: &Ctx<'_>, content: &Content) -> Vec<String> {
    let b = ctx.bill;
    let model = &ctx.p.model;
    let mut out = Vec::new();
    let event = |v: Value| format!("data: {v}\r\n\r\n");
    match content {
        Content::Text { text, .. } | Content::Refusal(text) => {
            let pieces = split_chars(text, ctx.chunk);
            let last = pieces.len().saturating_sub(1);
            for (i, piece) in pieces.iter().enumerate() {
                let mut v = json!({
                    "candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0}],
                    "modelVersion": model,
                    "responseId": format!("mock-{}", ctx.id)
                });
                if i == last {
                    v["candidates"][0]["finishReason"] = json!(if truncated_flag(content) {
                        "MAX_TOKENS"
                    } else {
                        "STOP"
                    });
                    v["usageMetadata"] = gemini_usage(b);
                }
                out.push(event(v));
            }
            if pieces.is_empty() {
                out.push(event(json!({
                    "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": gemini_usage(b)
                })));
            }
        }
        Content::Safety => out.push(event(json!({
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": gemini_usage(b),
            "modelVersion": model
        }))),
        _ => out.push(event(json!({
            "candidates": [],
            "usageMetadata": gemini_usage(b),
            "modelVersion": model
        }))),
    }
    out
}

/// OpenAI's `chat.completion.chunk` events: a role chunk, the deltas, the finish reason, the
/// usage chunk when `stream_options.include_usage` asked for it, and `[DONE]`.
fn openai_sse_events(ctx: &Ctx<'_>, content: &Content) -> Vec<String> {
    let model = &ctx.p.model;
    let n = ctx.chunk;
    let mut out = Vec::new();
    let id = format!("chatcmpl-mock-{}", ctx.id);
    let include_usage = ctx.p.include_usage;
    let chunk = |choices: Value| {
        let mut v = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": choices
        });
        if include_usage {
            v["usage"] = Value::Null;
        }
        format!("data: {v}\n\n")
    };
    let delta = |d: Value, finish: Value| json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]);
    match content {
        Content::Empty => {}
        _ => out.push(chunk(delta(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ))),
    }
    let finish = match content {
        Content::Text {
            text, truncated, ..
        } => {
            for piece in split_chars(text, n) {
                out.push(chunk(delta(json!({"content": piece}), Value::Null)));
            }
            Some(if *truncated { "length" } else { "stop" })
        }
        Content::Refusal(m) => {
            for piece in split_chars(m, n) {
                out.push(chunk(delta(json!({"refusal": piece}), Value::Null)));
            }
            Some("stop")
        }
        Content::Safety => Some("content_filter"),
        Content::Empty => None,
    };
    if let Some(f) = finish {
        out.push(chunk(delta(json!({}), json!(f))));
    }
    if include_usage {
        let v = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [],
            "usage": openai_usage(ctx.bill)
        });
        out.push(format!("data: {v}\n\n"));
    }
    out.push("data: [DONE]\n\n".to_string());
    out
}

/// One Anthropic server-sent event: its name line and its data.
fn anthropic_event(name: &str, v: Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

/// Anthropic's message events: `message_start`, the content block (see
/// [`anthropic_block_events`]), `message_delta` with the stop reason and output tokens,
/// `message_stop`.
fn anthropic_sse_events(ctx: &Ctx<'_>, content: &Content) -> Vec<String> {
    let b = ctx.bill;
    let mut out = Vec::new();
    let mut start_usage = anthropic_usage(b, 1);
    start_usage["output_tokens"] = json!(1);
    out.push(anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{}", ctx.id), "type": "message", "role": "assistant",
            "model": ctx.p.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": start_usage
        }}),
    ));
    let stop = anthropic_block_events(ctx, content, &mut out);
    out.push(anthropic_event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": b.output}}),
    ));
    out.push(anthropic_event(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    out
}

/// Pushes the events of the reply's content block onto `out` and returns the stop reason. A
/// plan (or a truncated reply) streams as the forced tool's `input_json_delta`s, text as
/// `text_delta`s, a refusal as one text delta; safety blocks and empty replies have no block.
fn anthropic_block_events(ctx: &Ctx<'_>, content: &Content, out: &mut Vec<String>) -> &'static str {
    let event = anthropic_event;
    match content {
        Content::Text {
            text,
            structured,
            truncated,
        } => {
            let as_tool = structured.is_some() || *truncated;
            let block = if as_tool {
                json!({"type": "tool_use", "id": format!("toolu_mock_{}", ctx.id), "name": ctx.p.tool_name, "input": {}})
            } else {
                json!({"type": "text", "text": ""})
            };
            out.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ));
            out.push(event("ping", json!({"type": "ping"})));
            for piece in split_chars(text, ctx.chunk) {
                let delta = if as_tool {
                    json!({"type": "input_json_delta", "partial_json": piece})
                } else {
                    json!({"type": "text_delta", "text": piece})
                };
                out.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": delta}),
                ));
            }
            out.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            if *truncated {
                "max_tokens"
            } else if as_tool {
                "tool_use"
            } else {
                "end_turn"
            }
        }
        Content::Refusal(m) => {
            out.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            out.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": m}}),
            ));
            out.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            "refusal"
        }
        Content::Safety => "refusal",
        Content::Empty => "end_turn",
    }
}

fn truncated_flag(content: &Content) -> bool {
    matches!(
        content,
        Content::Text {
            truncated: true,
            ..
        }
    )
}

fn gemini_usage(b: Bill) -> Value {
    let mut u = json!({
        "promptTokenCount": b.input,
        "candidatesTokenCount": b.output,
        "totalTokenCount": b.input + b.output
    });
    if b.cached > 0 {
        u["cachedContentTokenCount"] = json!(b.cached);
    }
    u
}

fn openai_usage(b: Bill) -> Value {
    json!({
        "prompt_tokens": b.input,
        "completion_tokens": b.output,
        "total_tokens": b.input + b.output,
        "prompt_tokens_details": {"cached_tokens": b.cached}
    })
}

fn anthropic_usage(b: Bill, output: u64) -> Value {
    json!({
        "input_tokens": b.input.saturating_sub(b.cached + b.cache_write),
        "cache_creation_input_tokens": b.cache_write,
        "cache_read_input_tokens": b.cached,
        "output_tokens": output
    })
}
