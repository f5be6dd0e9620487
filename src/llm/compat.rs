//! What an OpenAI-compatible server accepts, found out rather than assumed: how the reply's
//! JSON shape is asked for (four modes, strongest first) and the optional fields some servers
//! refuse (`stream_options`, the name of the output limit, `temperature`).
//!
//! A refusal is recognised by what it names, not by its status code: servers answer a field
//! they do not know with 400, 422 or, as llama-cpp-python does for `json_schema`, with a 500
//! carrying the validation error. Such an answer is never retried as it stands; the request is
//! relaxed one step and sent again.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::LlmError;

/// How the reply's JSON shape is requested, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatMode {
    /// `response_format: {type: "json_schema", json_schema: {schema, strict: true}}`.
    JsonSchema,
    /// `response_format: {type: "json_object", schema: {...}}`: JSON mode constrained by a
    /// schema, as llama-cpp-python and some other local servers take it; the schema is also
    /// described in the system prompt.
    JsonObjectSchema,
    /// `response_format: {type: "json_object"}`, the schema described in the system prompt.
    JsonObject,
    /// No `response_format`; the schema described in the system prompt, the reply parsed
    /// leniently.
    Prompt,
}

impl FormatMode {
    /// Every mode, strongest first.
    pub const ALL: [FormatMode; 4] = [
        FormatMode::JsonSchema,
        FormatMode::JsonObjectSchema,
        FormatMode::JsonObject,
        FormatMode::Prompt,
    ];

    /// The name used in settings, messages and the remembered record.
    pub fn name(self) -> &'static str {
        match self {
            FormatMode::JsonSchema => "json_schema",
            FormatMode::JsonObjectSchema => "json_object+schema",
            FormatMode::JsonObject => "json_object",
            FormatMode::Prompt => "prompt",
        }
    }

    /// The next weaker mode, if any.
    pub fn weaker(self) -> Option<FormatMode> {
        match self {
            FormatMode::JsonSchema => Some(FormatMode::JsonObjectSchema),
            FormatMode::JsonObjectSchema => Some(FormatMode::JsonObject),
            FormatMode::JsonObject => Some(FormatMode::Prompt),
            FormatMode::Prompt => None,
        }
    }

    /// Whether the system prompt must describe the schema (the server does not take it whole).
    pub fn schema_in_prompt(self) -> bool {
        self != FormatMode::JsonSchema
    }
}

impl fmt::Display for FormatMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FormatMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "json_schema" | "schema" => Ok(FormatMode::JsonSchema),
            "json_object+schema" | "json_object_schema" | "json_object+_schema" => {
                Ok(FormatMode::JsonObjectSchema)
            }
            "json_object" | "json" | "json_mode" => Ok(FormatMode::JsonObject),
            "prompt" | "prompt_only" | "none" => Ok(FormatMode::Prompt),
            other => Err(format!(
                "unknown structured output mode `{other}`: expected auto, json_schema, json_object+schema, json_object or prompt"
            )),
        }
    }
}

/// Request settings that some servers refuse; relaxed one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compat {
    /// How the reply format is requested.
    pub format: FormatMode,
    /// Send `stream_options.include_usage` when streaming.
    pub stream_options: bool,
    /// Use `max_completion_tokens` instead of `max_tokens`.
    pub max_completion_tokens: bool,
    /// The token limit field has been switched once already.
    #[serde(default)]
    pub max_field_switched: bool,
    /// Send `temperature`.
    pub temperature: bool,
    /// The format was set by the user (`structured_output`) and is never stepped down.
    #[serde(skip)]
    pub forced: bool,
}

impl Compat {
    /// Where a server starts: `format` (the capability table's mode, or the user's), every
    /// optional field sent.
    pub fn initial(base: &str, format: FormatMode) -> Self {
        Self {
            format,
            stream_options: true,
            // OpenAI itself deprecated `max_tokens` (reasoning models reject it); compatible
            // servers mostly only know `max_tokens`.
            max_completion_tokens: base.contains("api.openai.com"),
            max_field_switched: false,
            temperature: true,
            forced: false,
        }
    }

    /// The next, more permissive settings given a refusal message, or `None` if the message
    /// names nothing that can still be relaxed.
    pub fn relax(self, message: &str) -> Option<Self> {
        let m = message.to_ascii_lowercase();
        let mut next = self;
        if names_format(&m) {
            if self.forced {
                return None;
            }
            next.format = self.format.weaker()?;
        } else if m.contains("stream_options") && self.stream_options {
            next.stream_options = false;
        } else if (m.contains("max_tokens") || m.contains("max_completion_tokens"))
            && !self.max_field_switched
        {
            next.max_completion_tokens = !self.max_completion_tokens;
            next.max_field_switched = true;
        } else if m.contains("temperature") && self.temperature {
            next.temperature = false;
        } else {
            return None;
        }
        Some(next)
    }
}

/// Whether a (lower-cased) refusal names the reply format of the request.
fn names_format(m: &str) -> bool {
    [
        "response_format",
        "json_schema",
        "json_object",
        "structured output",
        "'text' or",
        "guided_json",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// The refusal a failed call amounts to, whatever its status: a server error (5xx) whose
/// message names something `compat` can relax is the server refusing a field (answered by
/// relaxing it, never by sending it again as it stands), so it becomes a
/// [`LlmError::BadRequest`] with the same status and message. Anything else is returned as is.
pub(crate) fn as_refusal(err: LlmError, compat: Compat) -> LlmError {
    match err {
        LlmError::Server {
            provider,
            status,
            message,
            ..
        } if compat.relax(&message).is_some() || names_format(&message.to_ascii_lowercase()) => {
            LlmError::BadRequest {
                provider,
                status,
                message,
            }
        }
        other => other,
    }
}

/// A refusal's message, whatever its status code, if `err` is one.
pub(crate) fn refusal_message(err: &LlmError) -> Option<&str> {
    match err {
        LlmError::BadRequest { message, .. } => Some(message),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderKind;

    #[test]
    fn relaxation_steps_through_every_mode_and_terminates() {
        let mut c = Compat::initial("http://localhost/v1", FormatMode::JsonSchema);
        let steps = [
            (
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported",
                FormatMode::JsonObjectSchema,
            ),
            (
                "response_format.schema: extra fields not permitted",
                FormatMode::JsonObject,
            ),
            (
                "response_format json_object unsupported",
                FormatMode::Prompt,
            ),
        ];
        for (msg, mode) in steps {
            c = c.relax(msg).unwrap();
            assert_eq!(c.format, mode);
        }
        assert!(c.relax("response_format still bad").is_none());
        c = c
            .relax("Unrecognized request argument supplied: stream_options")
            .unwrap();
        assert!(!c.stream_options);
        c = c
            .relax("Unsupported parameter: 'max_tokens' ... use 'max_completion_tokens'")
            .unwrap();
        assert!(c.max_completion_tokens);
        assert!(c.relax("max_completion_tokens unknown").is_none());
        c = c
            .relax("Unsupported value: 'temperature' does not support 0.3")
            .unwrap();
        assert!(!c.temperature);
        assert!(c.relax("temperature").is_none());
        assert!(c.relax("something unrelated").is_none());
    }

    #[test]
    fn llama_cpp_python_s_validation_error_names_the_format() {
        let c = Compat::initial("http://127.0.0.1:8000/v1", FormatMode::JsonSchema);
        let msg = "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]";
        assert_eq!(c.relax(msg).unwrap().format, FormatMode::JsonObjectSchema);
        // Even without the field's path, the allowed values name it.
        assert_eq!(
            c.relax("Input should be 'text' or 'json_object'")
                .unwrap()
                .format,
            FormatMode::JsonObjectSchema
        );
    }

    #[test]
    fn a_forced_format_is_never_stepped_down() {
        let mut c = Compat::initial("http://localhost/v1", FormatMode::JsonObject);
        c.forced = true;
        assert!(c.relax("response_format json_object unsupported").is_none());
        // Other fields still relax.
        assert!(c.relax("stream_options unknown").is_some());
    }

    #[test]
    fn a_server_error_naming_the_format_is_a_refusal_and_an_outage_is_not() {
        let c = Compat::initial("http://localhost/v1", FormatMode::JsonSchema);
        let server = |message: &str| LlmError::Server {
            provider: ProviderKind::OpenAi,
            status: 500,
            attempts: 1,
            retry_after: None,
            message: message.to_string(),
        };
        let e = as_refusal(server("Input should be 'text' or 'json_object'"), c);
        assert!(
            matches!(e, LlmError::BadRequest { status: 500, .. }),
            "{e:?}"
        );
        assert!(!e.is_retryable());
        let e = as_refusal(server("CUDA out of memory"), c);
        assert!(e.is_retryable(), "{e:?}");
    }

    #[test]
    fn mode_names_round_trip() {
        for m in FormatMode::ALL {
            assert_eq!(m.name().parse::<FormatMode>(), Ok(m));
        }
        assert_eq!("prompt-only".parse(), Ok(FormatMode::Prompt));
        assert!("xml".parse::<FormatMode>().is_err());
    }
}
