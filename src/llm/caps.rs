//! What each model family accepts, in one table: whether it takes `temperature`, its output
//! token cap, how it is asked for structured output, where its usage reports reasoning tokens,
//! and the smallest prompt its provider caches.
//! A new model is one line. Models the table does not know get safe defaults, and two
//! rejections are learned at run time (once per provider, then remembered): a model that
//! refuses `temperature` is asked again without it, and one that refuses the output limit is
//! asked again with the limit the error names.

use std::sync::Mutex;

use super::ProviderKind::{Anthropic, Gemini, OpenAi};
use super::{LlmError, LlmRequest, ProviderKind};

/// What one model family accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelCaps {
    /// The request may carry `temperature`.
    pub temperature: bool,
    /// Largest output token limit the model accepts.
    pub max_output: u32,
    /// How the reply's JSON shape is asked for.
    pub structured: Structured,
    /// Where the usage reports reasoning ("thinking") tokens, which are billed as output.
    pub reasoning: Reasoning,
    /// Fewest prompt tokens the provider caches (its documented minimum).
    pub cache_min: u32,
}

/// How a model is asked for the reply's JSON shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structured {
    /// The provider enforces the schema: Gemini `responseSchema` (with `propertyOrdering`),
    /// OpenAI `response_format: json_schema` with `strict: true`, Anthropic a forced tool.
    Schema,
    /// Only JSON mode (`response_format: json_object`): the reply is JSON, the schema is
    /// described in the system prompt and the plan is checked on arrival.
    JsonMode,
}

/// Where a model family's usage counts its reasoning tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// It does not reason, or does not say how much (Anthropic bills thinking inside
    /// `output_tokens` without itemising it).
    None,
    /// OpenAI `completion_tokens_details.reasoning_tokens`, a part of `completion_tokens`
    /// (xAI and others report it beside: `total_tokens` then holds the whole output).
    CompletionDetails,
    /// Gemini `usageMetadata.thoughtsTokenCount`, beside `candidatesTokenCount`.
    Thoughts,
}

/// One row: provider, model-name prefix, capabilities. The longest matching prefix wins.
/// Columns: temperature allowed, output cap, structured-output mode, reasoning-token field,
/// cache minimum (tokens).
#[rustfmt::skip]
const FAMILIES: &[(ProviderKind, &str, ModelCaps)] = &[
    (Gemini,    "gemini-2.0-flash",  caps(true,   8_192, SCHEMA, Reasoning::None,              4_096)),
    (Gemini,    "gemini-2.5-flash",  caps(true,  65_536, SCHEMA, Reasoning::Thoughts,          1_024)),
    (Gemini,    "gemini-2.5-pro",    caps(true,  65_536, SCHEMA, Reasoning::Thoughts,          4_096)),
    (Gemini,    "gemini-3",          caps(true,  65_536, SCHEMA, Reasoning::Thoughts,          1_024)),
    (OpenAi,    "gpt-3.5-turbo",     caps(true,   4_096, JSON,   Reasoning::None,              1_024)),
    (OpenAi,    "gpt-4-turbo",       caps(true,   4_096, JSON,   Reasoning::None,              1_024)),
    (OpenAi,    "gpt-4o",            caps(true,  16_384, SCHEMA, Reasoning::None,              1_024)),
    (OpenAi,    "gpt-4.1",           caps(true,  32_768, SCHEMA, Reasoning::None,              1_024)),
    (OpenAi,    "gpt-5",             caps(false, 128_000, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "o1",                caps(false, 100_000, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "o3",                caps(false, 100_000, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "o4",                caps(false, 100_000, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "grok-3-mini",       caps(true,  32_768, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "grok-4",            caps(false, 32_768, SCHEMA, Reasoning::CompletionDetails, 1_024)),
    (OpenAi,    "deepseek-chat",     caps(true,   8_192, JSON,   Reasoning::None,                 64)),
    (OpenAi,    "deepseek-reasoner", caps(true,  65_536, JSON,   Reasoning::CompletionDetails,    64)),
    (Anthropic, "claude-3-haiku",    caps(true,   4_096, SCHEMA, Reasoning::None,              2_048)),
    (Anthropic, "claude-3-5-haiku",  caps(true,   8_192, SCHEMA, Reasoning::None,              2_048)),
    (Anthropic, "claude-3-7-sonnet", caps(true,  64_000, SCHEMA, Reasoning::None,              1_024)),
    (Anthropic, "claude-sonnet-4",   caps(true,  64_000, SCHEMA, Reasoning::None,              1_024)),
    (Anthropic, "claude-haiku-4",    caps(true,  64_000, SCHEMA, Reasoning::None,              4_096)),
    (Anthropic, "claude-opus-4",     caps(true,  32_000, SCHEMA, Reasoning::None,              1_024)),
    (Anthropic, "claude-opus-4-7",   caps(false, 64_000, SCHEMA, Reasoning::None,              1_024)),
    (Anthropic, "claude-opus-5",     caps(false, 64_000, SCHEMA, Reasoning::None,              1_024)),
    (Anthropic, "claude-sonnet-5",   caps(false, 64_000, SCHEMA, Reasoning::None,              1_024)),
];

const SCHEMA: Structured = Structured::Schema;
const JSON: Structured = Structured::JsonMode;

const fn caps(
    temperature: bool,
    max_output: u32,
    structured: Structured,
    reasoning: Reasoning,
    cache_min: u32,
) -> ModelCaps {
    ModelCaps {
        temperature,
        max_output,
        structured,
        reasoning,
        cache_min,
    }
}

/// What a model the table does not know gets: temperature allowed (a rejection is learned),
/// pai's own output limit, the provider's schema mode (an OpenAI-compatible server that
/// rejects it is stepped down to JSON mode, then to the prompt alone), reasoning read wherever
/// the usage reports it, caching from 1,024 tokens (every provider's smallest minimum).
const UNKNOWN: ModelCaps = caps(true, u32::MAX, Structured::Schema, Reasoning::None, 1_024);

/// The capabilities of `model` on `kind`.
pub fn model_caps(kind: ProviderKind, model: &str) -> ModelCaps {
    // Provider-prefixed names (`models/gemini-2.0-flash`, `openai/gpt-4.1`) match by their tail.
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    FAMILIES
        .iter()
        .filter(|(k, prefix, _)| *k == kind && name.starts_with(prefix))
        .max_by_key(|(_, prefix, _)| prefix.len())
        .map_or(UNKNOWN, |(_, _, c)| *c)
}

/// The settings of one request that depend on the model: what the table says, adjusted by
/// what the server has rejected before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// Send `temperature`.
    pub temperature: bool,
    /// The output token limit to send.
    pub max_output: u32,
    /// The temperature has been dropped after a rejection.
    dropped_temperature: bool,
    /// The limit has been lowered after a rejection.
    lowered_limit: bool,
}

impl Tuning {
    /// `req` with the output limit this tuning sends.
    pub(crate) fn request(&self, req: &LlmRequest) -> LlmRequest {
        let mut r = req.clone();
        r.max_output_tokens = self.max_output;
        r
    }

    /// Remove what this tuning does not send from a request body built for `kind`.
    pub(crate) fn apply(&self, kind: ProviderKind, body: &mut serde_json::Value) {
        if self.temperature {
            return;
        }
        let holder = match kind {
            ProviderKind::Gemini => body.get_mut("generationConfig"),
            _ => Some(body),
        };
        if let Some(serde_json::Value::Object(map)) = holder {
            map.remove("temperature");
        }
    }
}

/// A temperature as JSON with the decimals the user gave (an `f32` widened as is would be sent
/// as 0.30000001192092896).
pub(crate) fn temperature_json(t: f32) -> serde_json::Value {
    let rounded = (f64::from(t) * 1000.0).round() / 1000.0;
    serde_json::json!(rounded)
}

/// Run `call` with the tuning for `req` (the request with the tuned output limit, and the
/// tuning itself), once more after each rejection [`Learned::adjust`] can answer. Returns the
/// last result and the HTTP requests made in all.
pub(crate) async fn tuned<T, F, Fut>(
    learned: &Learned,
    req: &LlmRequest,
    mut call: F,
) -> (Result<T, LlmError>, u32)
where
    F: FnMut(LlmRequest, Tuning) -> Fut,
    Fut: std::future::Future<Output = (Result<T, LlmError>, u32)>,
{
    let mut attempts = 0;
    loop {
        let tuning = learned.tuning(req);
        let (result, n) = call(tuning.request(req), tuning).await;
        attempts += n;
        match result {
            Err(e) if learned.adjust(tuning, &e).is_some() => continue,
            other => return (other, attempts),
        }
    }
}

/// Tuning learned during a session, shared by every call of one provider.
pub(crate) struct Learned {
    caps: ModelCaps,
    state: Mutex<Option<Tuning>>,
}

impl Learned {
    /// Start from the table's row for `model`.
    pub(crate) fn new(kind: ProviderKind, model: &str) -> Self {
        Self {
            caps: model_caps(kind, model),
            state: Mutex::new(None),
        }
    }

    /// The table's row for this model.
    pub(crate) fn caps(&self) -> ModelCaps {
        self.caps
    }

    /// The settings for `req` now.
    pub(crate) fn tuning(&self, req: &LlmRequest) -> Tuning {
        let base = Tuning {
            temperature: self.caps.temperature,
            max_output: req.max_output_tokens.clamp(1, self.caps.max_output),
            dropped_temperature: false,
            lowered_limit: false,
        };
        match self.state.lock().ok().and_then(|s| *s) {
            Some(learned) => Tuning {
                temperature: base.temperature && learned.temperature,
                max_output: base.max_output.min(learned.max_output),
                ..learned
            },
            None => base,
        }
    }

    /// After `err`, the settings to try once more with (and remember), if the error is one of
    /// the rejections this layer knows how to answer.
    pub(crate) fn adjust(&self, current: Tuning, err: &LlmError) -> Option<Tuning> {
        let LlmError::BadRequest { message, .. } = err else {
            return None;
        };
        let m = message.to_ascii_lowercase();
        let mut next = current;
        if m.contains("temperature") && current.temperature && !current.dropped_temperature {
            next.temperature = false;
            next.dropped_temperature = true;
        } else if limit_rejected(&m) && !current.lowered_limit {
            next.max_output = stated_limit(&m, current.max_output)?;
            next.lowered_limit = true;
        } else {
            return None;
        }
        if let Ok(mut slot) = self.state.lock() {
            *slot = Some(next);
        }
        Some(next)
    }
}

/// Whether a rejection is about the output token limit being too large.
fn limit_rejected(m: &str) -> bool {
    let names_limit = [
        "max_tokens",
        "maxoutputtokens",
        "max_output_tokens",
        "max_completion_tokens",
        "output tokens",
    ]
    .iter()
    .any(|k| m.contains(k));
    let too_large = [
        "too large",
        "exceeds",
        "maximum",
        "at most",
        "greater than",
        "> ",
        "range",
    ]
    .iter()
    .any(|k| m.contains(k));
    names_limit && too_large
}

/// The largest limit the server said it accepts: the biggest number in the message below the
/// one sent (error texts name both, e.g. "max_tokens: 16384 > 8192, which is the maximum").
fn stated_limit(m: &str, sent: u32) -> Option<u32> {
    let most = m
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|d| d.parse::<u32>().ok())
        .filter(|&n| n >= 256 && n < sent)
        .max()?;
    // "the supported range is from 1 (inclusive) to 8193 (exclusive)"
    Some(if m.contains("exclusive") {
        most - 1
    } else {
        most
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_unknown_models_get_defaults() {
        let c = model_caps(ProviderKind::Anthropic, "claude-opus-4-7-20260101");
        assert!(!c.temperature);
        assert!(model_caps(ProviderKind::Anthropic, "claude-opus-4-1").temperature);
        assert_eq!(
            model_caps(ProviderKind::Gemini, "models/gemini-2.0-flash-001").max_output,
            8_192
        );
        assert_eq!(model_caps(ProviderKind::OpenAi, "my-local-model"), UNKNOWN);
        let deepseek = model_caps(ProviderKind::OpenAi, "deepseek-chat");
        assert_eq!(deepseek.structured, Structured::JsonMode);
        assert_eq!(
            model_caps(ProviderKind::Gemini, "gemini-2.5-flash-lite").reasoning,
            Reasoning::Thoughts
        );
    }

    #[test]
    fn every_row_is_reachable_and_names_its_own_provider_s_fields() {
        for (kind, prefix, c) in FAMILIES {
            // A row shadowed by a longer prefix of the same provider would never apply.
            assert_eq!(model_caps(*kind, prefix), *c, "{prefix}");
            let field_fits = match c.reasoning {
                Reasoning::None => true,
                Reasoning::CompletionDetails => *kind == ProviderKind::OpenAi,
                Reasoning::Thoughts => *kind == ProviderKind::Gemini,
            };
            assert!(field_fits, "{prefix}: {:?}", c.reasoning);
            assert!(c.max_output >= 4_096 && c.cache_min >= 64, "{prefix}");
        }
    }

    #[test]
    fn the_limit_a_server_names_is_found() {
        let m = "max_tokens: 16384 > 8192, which is the maximum allowed number of output tokens for claude-3-5-haiku";
        assert!(limit_rejected(m));
        assert_eq!(stated_limit(m, 16_384), Some(8_192));
        let g =
            "the maximum number of tokens allowed (maxoutputtokens) is 8192; 16384 was requested";
        assert_eq!(stated_limit(g, 16_384), Some(8_192));
        assert_eq!(stated_limit("max_tokens is too large", 16_384), None);
        let v = "maxoutputtokens value of 16384 but the supported range is from 1 (inclusive) to 8193 (exclusive)";
        assert!(limit_rejected(v));
        assert_eq!(stated_limit(v, 16_384), Some(8_192));
    }
}
