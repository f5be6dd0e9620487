//! Model providers: one trait, one module per wire format (Gemini, OpenAI-compatible,
//! Anthropic), shared HTTP transport with retries, streaming and usage accounting.
//! `llm` never sees files: it receives text and a JSON schema and returns structured replies.

use std::fmt;
use std::str::FromStr;

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
