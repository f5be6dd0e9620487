//! Model providers: one trait, one module per wire format (Gemini, OpenAI-compatible,
//! Anthropic), shared HTTP transport with retries, streaming and usage accounting.
//! `llm` never sees files: it receives text and a JSON schema and returns structured replies.

mod anthropic;
mod caps;
mod compat;
mod error;
mod gemini;
mod json;
mod openai;
mod outcome;
mod remembered;
mod schema;
mod scripted;
mod server_api;
mod server_context;
mod transport;
pub use transport::BaseUrl;
pub(crate) use transport::crypto_provider;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub use caps::{ModelCaps, Reasoning, Structured, model_caps};
pub use compat::FormatMode;
pub use error::{LlmError, LlmErrorKind, TimeoutStage};
pub use json::extract_json;
pub use scripted::{Scripted, ScriptedProvider};

/// Which wire format (and default endpoint) to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProviderKind {
    /// Google Gemini `generateContent` (the default).
    #[default]
    Gemini,
    /// OpenAI chat completions, or any compatible server (Ollama, llama.cpp, vLLM).
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

impl ProviderKind {
    /// Every provider, in the order they are listed to users.
    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::Gemini,
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
    ];

    /// The name used on the command line, in settings and in credentials.json.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// The environment variable users conventionally keep this provider's key in.
    pub fn key_env_var(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "GEMINI_API_KEY",
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The origin used when no `--base-url` is given.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com",
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The model used when none is configured.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini-2.5-flash-lite",
            ProviderKind::OpenAi => "gpt-4.1-mini",
            ProviderKind::Anthropic => "claude-haiku-4-5",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gemini" | "google" => Ok(ProviderKind::Gemini),
            "openai" | "openai-compatible" | "ollama" => Ok(ProviderKind::OpenAi),
            "anthropic" | "claude" => Ok(ProviderKind::Anthropic),
            other => Err(format!(
                "unknown provider `{other}`: expected gemini, openai or anthropic"
            )),
        }
    }
}

/// How to reach one provider: which wire format, where, with which key and model, and how
/// patient to be. `Debug` never prints the key.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The wire format to speak.
    pub kind: ProviderKind,
    /// Replaces the provider's origin (`--base-url`); for OpenAI-compatible servers it includes
    /// the version path (`http://localhost:11434/v1`). `None` uses [`ProviderKind::default_base_url`].
    pub base_url: Option<String>,
    /// The API key. Optional only when the base URL is a loopback address.
    pub api_key: Option<String>,
    /// The model name as the provider spells it.
    pub model: String,
    /// Limit for establishing the TCP/TLS connection.
    pub connect_timeout: Duration,
    /// Limit for a whole non-streaming response, and for the response headers of a streaming one.
    pub request_timeout: Duration,
    /// Longest silence tolerated between two chunks of a streaming reply.
    pub stream_idle_timeout: Duration,
    /// Total HTTP attempts per call, first try included (at least 1).
    pub max_attempts: u32,
    /// First backoff delay; it doubles (with jitter) on each retry up to `backoff_max`.
    pub backoff_base: Duration,
    /// Upper bound of one computed backoff delay.
    pub backoff_max: Duration,
    /// Longest server-requested wait (`Retry-After`, Gemini `RetryInfo`) pai honours; a server
    /// asking for more is reported as rate limited instead of waited for.
    pub max_retry_wait: Duration,
    /// The structured-output mode to use on OpenAI-compatible servers instead of finding one
    /// (`structured_output`); `None` negotiates.
    pub structured_output: Option<FormatMode>,
    /// The file where what each OpenAI-compatible server accepts is remembered across runs
    /// (`None`: found anew in each process).
    pub compat_file: Option<std::path::PathBuf>,
    /// Lower the output limit to what a server on this machine says its context holds (the
    /// user did not set one).
    pub fit_output_to_server: bool,
}

impl ProviderConfig {
    /// Settings with production defaults for `kind` and `model`, no key and the default origin.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: None,
            api_key: None,
            model: model.into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(180),
            stream_idle_timeout: Duration::from_secs(90),
            max_attempts: 4,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            max_retry_wait: Duration::from_secs(30),
            structured_output: None,
            compat_file: None,
            fit_output_to_server: false,
        }
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("max_retry_wait", &self.max_retry_wait)
            .field("structured_output", &self.structured_output)
            .field("compat_file", &self.compat_file)
            .field("fit_output_to_server", &self.fit_output_to_server)
            .finish()
    }
}

/// Who said a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The developer (or pai speaking for them: step results, corrections).
    User,
    /// An earlier reply of the model.
    Assistant,
}

/// One message of the conversation sent after the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The text.
    pub text: String,
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            text: text.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// One structured call.
#[derive(Debug, Clone)]
pub struct LlmRequest {
    /// The system prompt. Keep it byte-identical across calls so provider prompt caching applies.
    pub system: String,
    /// The conversation after the system prompt, oldest first.
    pub messages: Vec<Message>,
    /// Standard JSON Schema of the reply object (type, properties, required, items, enum,
    /// description, additionalProperties). Each provider gets the dialect it accepts. Objects
    /// may carry Gemini's `propertyOrdering`; it is stripped for the other providers.
    pub schema: serde_json::Value,
    /// A name for the schema (`[A-Za-z0-9_-]`, other characters are replaced); used as the
    /// OpenAI `json_schema` name and the Anthropic tool name.
    pub schema_name: String,
    /// Sampling temperature (clamped to 0..=1 for Anthropic).
    pub temperature: f32,
    /// The output token limit; reaching it yields [`LlmError::Truncated`].
    pub max_output_tokens: u32,
    /// Stream the reply (server-sent events) and report text as it arrives.
    pub stream: bool,
}

/// Token counts of one reply, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, cached ones included.
    pub input: u64,
    /// Output tokens, reasoning ("thinking") tokens included.
    pub output: u64,
    /// The part of `input` served from the provider's prompt cache.
    pub cached: u64,
    /// The part of `output` the model spent reasoning ("thinking"), where the provider says.
    pub reasoning: u64,
}

impl Usage {
    /// Adds another reply's counts to these.
    pub fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cached += other.cached;
        self.reasoning += other.reasoning;
    }
}

/// What a provider has consumed since it was built: every HTTP request sent to a generation
/// endpoint (failed attempts included) and every token count reported back (also for replies
/// that then failed to parse, since those are billed too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Generation requests sent.
    pub requests: u64,
    /// Summed token counts.
    pub usage: Usage,
    /// Replies that came without a usage report (a stream from a server that ignores
    /// `stream_options`): their tokens are unknown, not zero.
    pub unmetered: u64,
}

/// A successful structured call.
#[derive(Debug, Clone)]
pub struct LlmReply {
    /// The parsed reply object.
    pub value: serde_json::Value,
    /// The reply text the object was parsed from.
    pub raw: String,
    /// Token counts of the successful attempt.
    pub usage: Usage,
    /// Wall time of the whole call, retries and backoff included.
    pub elapsed: Duration,
    /// HTTP requests this call made (1 when nothing was retried).
    pub attempts: u32,
}

/// Progress reported while a reply arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// More raw reply text (the JSON text of the reply object, in pieces). Without streaming the
    /// whole text arrives as one piece.
    Text(&'a str),
    /// An attempt that had already delivered text failed and is being retried: discard the text
    /// shown so far; the new attempt starts from the beginning.
    Restart,
}

/// Receives [`StreamEvent`]s during [`Provider::complete`].
pub type OnText<'a> = &'a (dyn Fn(StreamEvent<'_>) + Send + Sync);

/// A model endpoint that answers with structured replies.
///
/// Cancellation is by dropping the returned future: the in-flight HTTP request (or backoff
/// sleep) is abandoned at once and the connection closed.
pub trait Provider: Send + Sync {
    /// Which wire format this provider speaks.
    fn kind(&self) -> ProviderKind;

    /// One structured call, retried on transient failures. `on_text` sees the raw reply text as
    /// it streams (for showing chat answers live).
    fn complete<'a>(
        &'a self,
        req: &'a LlmRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<LlmReply, LlmError>>;

    /// One cheap real call proving the key, base URL and model work (a model lookup, no tokens).
    fn validate<'a>(&'a self) -> BoxFuture<'a, Result<(), LlmError>>;

    /// Requests and tokens consumed since the provider was built.
    fn usage_totals(&self) -> UsageTotals;

    /// How the reply's JSON shape is asked for, and how that was decided (for `pai config
    /// validate` and diagnostics).
    fn output_mode(&self) -> String {
        "schema enforced by the provider".to_string()
    }
}

/// Builds the provider for `cfg` over its own HTTP client (rustls, connection pooling); build one
/// per session and share it. Fails when the base URL or model is unusable or a key is missing for
/// a non-loopback base URL.
pub fn build_provider(cfg: &ProviderConfig) -> Result<Box<dyn Provider>, LlmError> {
    let transport = transport::Transport::new(cfg)?;
    Ok(match cfg.kind {
        ProviderKind::Gemini => Box::new(gemini::Gemini::new(transport, cfg)?),
        ProviderKind::OpenAi => Box::new(openai::OpenAi::new(transport, cfg)),
        ProviderKind::Anthropic => Box::new(anthropic::Anthropic::new(transport, cfg)),
    })
}
