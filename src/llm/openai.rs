//! OpenAI chat completions, and every server that imitates it (Ollama, llama.cpp, vLLM).
//!
//! Structured output starts where the capability table says: `response_format: {type:
//! "json_schema", strict: true}` with the schema made strict-compatible (`schema::strict`:
//! closed objects, every property required, optional ones nullable), or JSON mode for models
//! that only offer it. When a server rejects a parameter with a 400/422 naming it, the request
//! is relaxed one step and sent again, and the working settings are remembered for later
//! calls: `json_schema` -> `json_object` -> no `response_format` (in both of the latter the
//! schema is described at the end of the system prompt); `stream_options` dropped;
//! `max_tokens` <-> `max_completion_tokens`; `temperature` dropped.

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::caps::{Learned, Structured, temperature_json};
use super::error::LlmError;
use super::outcome::{Block, Outcome, Parsed, Stop, conclude, count};
use super::transport::{TextSink, Transport};
use super::{
    LlmReply, LlmRequest, OnText, Provider, ProviderConfig, ProviderKind, Role, Usage, UsageTotals,
    schema,
};

/// How the reply format is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatMode {
    /// `response_format: json_schema` with the schema.
    JsonSchema,
    /// `response_format: json_object`, schema described in the system prompt.
    JsonObject,
    /// No `response_format`; schema described in the system prompt, reply parsed leniently.
    Prompt,
}

/// Request settings that some servers reject; relaxed one at a time and remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compat {
    pub(crate) format: FormatMode,
    /// Send `stream_options.include_usage` when streaming.
    stream_options: bool,
    /// Use `max_completion_tokens` instead of `max_tokens`.
    max_completion_tokens: bool,
    /// The token limit field has been switched once already.
    max_field_switched: bool,
    /// Send `temperature`.
    temperature: bool,
}

impl Compat {
    /// Where a model starts: the table's structured-output mode (a model known to offer only
    /// JSON mode is not sent a schema it would reject).
    fn initial(base: &str, structured: Structured) -> Self {
        Self {
            format: match structured {
                Structured::Schema => FormatMode::JsonSchema,
                Structured::JsonMode => FormatMode::JsonObject,
            },
            stream_options: true,
            // OpenAI itself deprecated `max_tokens` (reasoning models reject it); compatible
            // servers mostly only know `max_tokens`.
            max_completion_tokens: base.contains("api.openai.com"),
            max_field_switched: false,
            temperature: true,
        }
    }

    /// The next, more permissive settings given a rejection message, or `None` if the message
    /// names nothing that can still be relaxed.
    fn relax(self, message: &str) -> Option<Self> {
        let m = message.to_ascii_lowercase();
        let mut next = self;
        if (m.contains("response_format")
            || m.contains("json_schema")
            || m.contains("json_object")
            || m.contains("structured output"))
            && self.format != FormatMode::Prompt
        {
            next.format = match self.format {
                FormatMode::JsonSchema => FormatMode::JsonObject,
                _ => FormatMode::Prompt,
            };
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

/// The OpenAI-compatible wire format.
pub(crate) struct OpenAi {
    t: Transport,
    compat: Mutex<Compat>,
    learned: Learned,
}

impl OpenAi {
    pub(crate) fn new(t: Transport, cfg: &ProviderConfig) -> Self {
        let learned = Learned::new(ProviderKind::OpenAi, &cfg.model);
        let compat = Compat::initial(&t.base, learned.caps().structured);
        Self {
            t,
            compat: Mutex::new(compat),
            learned,
        }
    }

    /// The settings currently used (for tests and diagnostics).
    pub(crate) fn compat(&self) -> Compat {
        self.compat
            .lock()
            .map(|c| *c)
            .unwrap_or_else(|_| Compat::initial(&self.t.base, self.learned.caps().structured))
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut pairs = vec![(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        if let Some(key) = self.t.key() {
            pairs.push((
                AUTHORIZATION,
                self.t.secret_header(&format!("Bearer {key}"))?,
            ));
        }
        Ok(Transport::headers(pairs))
    }

    fn body(&self, req: &LlmRequest, compat: Compat) -> Value {
        let mut system = req.system.clone();
        if compat.format != FormatMode::JsonSchema {
            system.push_str(&schema::prompt_instruction(&req.schema));
        }
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !system.trim().is_empty() {
            messages.push(json!({"role": "system", "content": system.trim_start()}));
        }
        for m in &req.messages {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            messages.push(json!({"role": role, "content": m.text}));
        }
        let mut body = json!({"model": self.t.model, "messages": messages});
        let limit_field = if compat.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit_field] = json!(req.max_output_tokens);
        if compat.temperature {
            body["temperature"] = temperature_json(req.temperature);
        }
        match compat.format {
            FormatMode::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema::safe_name(&req.schema_name),
                        "schema": schema::strict(&req.schema),
                        "strict": true,
                    }
                });
            }
            FormatMode::JsonObject => body["response_format"] = json!({"type": "json_object"}),
            FormatMode::Prompt => {}
        }
        if req.stream {
            body["stream"] = json!(true);
            if compat.stream_options {
                body["stream_options"] = json!({"include_usage": true});
            }
        }
        body
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        req: &LlmRequest,
        sink: &TextSink<'_>,
    ) -> Result<Parsed, LlmError> {
        let response = self.t.post(url, self.headers()?, body, req.stream).await?;
        let mut acc = Acc::default();
        if req.stream {
            match self.t.events(response) {
                Ok(mut events) => {
                    while let Some(event) = events.next().await? {
                        let data = event.data.trim();
                        if data.is_empty() {
                            continue;
                        }
                        if data == "[DONE]" {
                            acc.done = true;
                            break;
                        }
                        let chunk = events.parse(&event)?;
                        self.feed_chunk(&mut acc, &chunk, sink)?;
                    }
                    if !acc.done && acc.finish.is_none() {
                        return Err(events.ended_early());
                    }
                }
                Err(plain) => {
                    let whole = self.t.read_json(*plain).await?;
                    self.feed_whole(&mut acc, &whole)?;
                    sink.text(&acc.text);
                }
            }
        } else {
            let whole = self.t.read_json(response).await?;
            self.feed_whole(&mut acc, &whole)?;
            sink.text(&acc.text);
        }
        // Strict structured output says "absent" with null.
        conclude(&self.t, req.max_output_tokens, acc.into_outcome()).map(|mut p| {
            schema::drop_nulls(&mut p.value);
            p
        })
    }

    fn check_error(&self, v: &Value) -> Result<(), LlmError> {
        match v.get("error") {
            Some(err) if !err.is_null() => {
                let status = err["code"]
                    .as_u64()
                    .and_then(|c| u16::try_from(c).ok())
                    .and_then(|c| StatusCode::from_u16(c).ok())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                Err(self
                    .t
                    .status_error(status, &HeaderMap::new(), &v.to_string()))
            }
            _ if !v.is_object() => Err(LlmError::BadResponse {
                provider: ProviderKind::OpenAi,
                detail: "the response is not a JSON object".to_string(),
            }),
            _ => Ok(()),
        }
    }

    fn feed_whole(&self, acc: &mut Acc, v: &Value) -> Result<(), LlmError> {
        self.check_error(v)?;
        acc.read_usage(v);
        if let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) {
            acc.saw_choice = true;
            let message = &choice["message"];
            acc.text.push_str(&content_text(&message["content"]));
            if let Some(refusal) = message["refusal"].as_str() {
                acc.refusal.push_str(refusal);
            }
            acc.finish = choice["finish_reason"].as_str().map(str::to_string);
            acc.filtered = filtered_categories(&choice["content_filter_results"]);
        }
        Ok(())
    }

    fn feed_chunk(&self, acc: &mut Acc, v: &Value, sink: &TextSink<'_>) -> Result<(), LlmError> {
        self.check_error(v)?;
        acc.read_usage(v);
        if let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) {
            acc.saw_choice = true;
            let delta = &choice["delta"];
            let piece = content_text(&delta["content"]);
            sink.text(&piece);
            acc.text.push_str(&piece);
            if let Some(refusal) = delta["refusal"].as_str() {
                acc.refusal.push_str(refusal);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                acc.finish = Some(reason.to_string());
                acc.filtered = filtered_categories(&choice["content_filter_results"]);
            }
        }
        Ok(())
    }
}

/// Message content as text: a string, or an array of `{type: "text", text}` parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<String>(),
        _ => String::new(),
    }
}

/// The categories a content filter stopped, as Azure OpenAI reports them beside the choice
/// (`content_filter_results: {hate: {filtered: true, severity: "high"}}`).
fn filtered_categories(results: &Value) -> String {
    results
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, r)| r["filtered"].as_bool() == Some(true))
        .map(|(name, r)| match r["severity"].as_str() {
            Some(sev) => format!("{} ({sev})", name.replace('_', " ")),
            None => name.replace('_', " "),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What one chat completion (or its chunks) said so far.
#[derive(Default)]
struct Acc {
    text: String,
    refusal: String,
    saw_choice: bool,
    finish: Option<String>,
    /// The categories a content filter named with the finish reason.
    filtered: String,
    done: bool,
    usage: Usage,
}

impl Acc {
    fn read_usage(&mut self, v: &Value) {
        let usage = &v["usage"];
        if usage.is_object() {
            let input = count(&usage["prompt_tokens"]);
            let completion = count(&usage["completion_tokens"]);
            let reasoning = count(&usage["completion_tokens_details"]["reasoning_tokens"]);
            // OpenAI counts reasoning inside completion_tokens; some compatible servers (xAI)
            // report it beside: then only total_tokens holds the whole output.
            let from_total = count(&usage["total_tokens"]).saturating_sub(input);
            self.usage = Usage {
                input,
                output: completion.max(from_total),
                // DeepSeek reports its cache hits under a name of its own.
                cached: count(&usage["prompt_tokens_details"]["cached_tokens"])
                    .max(count(&usage["prompt_cache_hit_tokens"])),
                reasoning,
            };
        }
    }

    fn into_outcome(self) -> Outcome {
        let stop = if !self.refusal.trim().is_empty() {
            Stop::Refused(self.refusal)
        } else if !self.saw_choice {
            Stop::Empty
        } else {
            match self.finish.as_deref() {
                Some("length") => Stop::Truncated,
                Some("content_filter") => Stop::Blocked(Block {
                    reason: "content_filter".to_string(),
                    detail: self.filtered,
                    request: false,
                }),
                _ => Stop::Complete,
            }
        };
        Outcome {
            text: self.text,
            structured: None,
            usage: self.usage,
            stop,
        }
    }
}

impl Provider for OpenAi {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn complete<'a>(
        &'a self,
        req: &'a LlmRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<LlmReply, LlmError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let sink = TextSink::new(on_text);
            let url = format!("{}/chat/completions", self.t.base);
            let mut attempts = 0;
            loop {
                let compat = self.compat();
                let tuning = self.learned.tuning(req);
                let tuned = tuning.request(req);
                let mut body = self.body(&tuned, compat);
                tuning.apply(ProviderKind::OpenAi, &mut body);
                let (result, n) = self
                    .t
                    .run(&sink, || self.attempt(&url, &body, &tuned, &sink))
                    .await;
                attempts += n;
                match result {
                    Err(e) if self.learned.adjust(tuning, &e).is_some() => continue,
                    Err(LlmError::BadRequest {
                        status: 400 | 422,
                        ref message,
                        ..
                    }) if compat.relax(message).is_some() => {
                        if let (Some(next), Ok(mut slot)) =
                            (compat.relax(message), self.compat.lock())
                        {
                            *slot = next;
                        }
                    }
                    other => {
                        return other.map(|p| p.into_reply(started, attempts));
                    }
                }
            }
        })
    }

    fn validate<'a>(&'a self) -> BoxFuture<'a, Result<(), LlmError>> {
        Box::pin(async move {
            let url = format!("{}/models", self.t.base);
            let list = self.t.get_json_retried(&url, || self.headers()).await?;
            let ids: Vec<&str> = list["data"]
                .as_array()
                .map(|d| d.iter().filter_map(|m| m["id"].as_str()).collect())
                .unwrap_or_default();
            let model = self.t.model.as_str();
            let offered = ids.iter().any(|id| {
                *id == model
                    || id.strip_suffix(":latest") == Some(model)
                    || id.rsplit('/').next() == Some(model)
            });
            if ids.is_empty() || offered {
                return Ok(());
            }
            let mut shown: Vec<&str> = ids.iter().take(8).copied().collect();
            if ids.len() > shown.len() {
                shown.push("…");
            }
            Err(LlmError::NotFound {
                provider: ProviderKind::OpenAi,
                model: model.to_string(),
                message: format!(
                    "the server does not offer this model; it offers: {}",
                    shown.join(", ")
                ),
            })
        })
    }

    fn usage_totals(&self) -> UsageTotals {
        self.t.totals()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    fn req(stream: bool) -> LlmRequest {
        LlmRequest {
            system: "sys".into(),
            messages: vec![Message::user("hi")],
            schema: json!({"type": "object", "propertyOrdering": ["a"], "properties": {"a": {"type": "string"}}}),
            schema_name: "pai plan".into(),
            temperature: 0.3,
            max_output_tokens: 100,
            stream,
        }
    }

    fn provider(base: &str) -> OpenAi {
        let mut cfg = ProviderConfig::new(ProviderKind::OpenAi, "gpt-x");
        cfg.base_url = Some(base.into());
        cfg.api_key = Some("sk-test".into());
        OpenAi::new(Transport::new(&cfg).unwrap(), &cfg)
    }

    #[test]
    fn json_schema_body() {
        let p = provider("https://api.openai.com/v1");
        let body = p.body(&req(true), p.compat());
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["name"], "pai_plan");
        // Strict structured output: the schema is closed and lists every property as required.
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
        let sent = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(sent["additionalProperties"], false);
        let props = sent["properties"].as_object().unwrap().len();
        assert_eq!(sent["required"].as_array().unwrap().len(), props);
        assert!(
            body["response_format"]["json_schema"]["schema"]
                .get("propertyOrdering")
                .is_none()
        );
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["max_completion_tokens"], 100);
        assert_eq!(body["stream_options"]["include_usage"], true);
        let local = provider("http://localhost:11434/v1");
        let body = local.body(&req(false), local.compat());
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn relaxation_steps_terminate() {
        let mut c = Compat::initial("http://localhost/v1", Structured::Schema);
        let steps = [
            (
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported",
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
    fn prompt_modes_describe_the_schema_in_the_system_message() {
        let p = provider("http://localhost/v1");
        let mut c = p.compat();
        c.format = FormatMode::JsonObject;
        let body = p.body(&req(false), c);
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("sys\n\n"));
        assert!(system.contains("JSON Schema"));
        assert!(system.contains("\"properties\""));
        c.format = FormatMode::Prompt;
        let body = p.body(&req(false), c);
        assert!(body.get("response_format").is_none());
    }

    #[test]
    fn refusal_and_finish_reasons() {
        let p = provider("http://localhost/v1");
        let stop = |v: Value| {
            let mut acc = Acc::default();
            p.feed_whole(&mut acc, &v).unwrap();
            acc.into_outcome().stop
        };
        assert_eq!(
            stop(
                json!({"choices": [{"message": {"content": null, "refusal": "no"}, "finish_reason": "stop"}]})
            ),
            Stop::Refused("no".into())
        );
        assert_eq!(
            stop(json!({"choices": [{"message": {"content": "{"}, "finish_reason": "length"}]})),
            Stop::Truncated
        );
        assert_eq!(
            stop(
                json!({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]})
            ),
            Stop::Blocked(Block::reply("content_filter"))
        );
        assert_eq!(stop(json!({"choices": []})), Stop::Empty);
    }
}
