//! OpenAI chat completions, and every server that imitates it (Ollama, llama.cpp, vLLM).
//!
//! Structured output starts where the capability table says (or the `structured_output`
//! setting forces): `response_format: {type: "json_schema", strict: true}` with the schema made
//! strict-compatible (`schema::strict`: closed objects, every property required, optional ones
//! nullable), or JSON mode for models that only offer it. When a server refuses a field, with
//! whatever status code (`compat`), the request is relaxed one step and sent again:
//! `json_schema` -> `json_object` with `schema` -> `json_object` -> no `response_format` (in
//! all but the first the schema is also described at the end of the system prompt);
//! `stream_options` dropped; `max_tokens` <-> `max_completion_tokens`; `temperature` dropped.
//! What works is remembered for later calls and, per base URL and model, for later runs
//! (`remembered`); a remembered setting that is refused sends the server back to the
//! strongest mode once.

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::caps::{Learned, Structured, temperature_json};
use super::compat::{Compat, FormatMode, as_refusal, refusal_message};
use super::error::LlmError;
use super::outcome::{Block, Outcome, Parsed, Stop, conclude, count};
use super::remembered::Memory;
use super::transport::{TextSink, Transport};
use super::{
    LlmReply, LlmRequest, OnText, Provider, ProviderConfig, ProviderKind, Role, Usage, UsageTotals,
    schema,
};
use super::{server_api, server_context};

/// The OpenAI-compatible wire format.
pub(crate) struct OpenAi {
    t: Transport,
    state: Mutex<Negotiated>,
    learned: Learned,
    memory: Memory,
    /// Where the server starts when nothing is remembered.
    initial: Compat,
    /// Whether to fit the output limit to the server's context.
    fit_output: bool,
    /// The output limit the server's context allows, looked up once.
    context_cap: tokio::sync::OnceCell<Option<u32>>,
    /// The server's published request schema has been read (local servers only, once).
    declared: tokio::sync::OnceCell<()>,
}

/// The settings in use and how they were arrived at.
#[derive(Debug, Clone, Copy)]
struct Negotiated {
    compat: Compat,
    /// Taken from the record of an earlier run, not yet confirmed by a call of this one.
    recalled: bool,
    /// Confirmed by a successful call and written to the record (or nothing to write).
    settled: bool,
}

impl OpenAi {
    pub(crate) fn new(t: Transport, cfg: &ProviderConfig) -> Self {
        let learned = Learned::new(ProviderKind::OpenAi, &cfg.model);
        let table = match learned.caps().structured {
            Structured::Schema => FormatMode::JsonSchema,
            Structured::JsonMode => FormatMode::JsonObject,
        };
        let mut initial = Compat::initial(&t.base, cfg.structured_output.unwrap_or(table));
        initial.forced = cfg.structured_output.is_some();
        let memory = Memory::new(cfg.compat_file.clone(), &t.base, &t.model);
        let t_loopback = t.loopback;
        let recalled = memory.recall().map(|mut c| {
            if initial.forced {
                c.format = initial.format;
                c.forced = true;
            }
            c
        });
        let state = Negotiated {
            compat: recalled.unwrap_or(initial),
            recalled: recalled.is_some(),
            settled: false,
        };
        Self {
            t,
            state: Mutex::new(state),
            learned,
            memory,
            initial,
            fit_output: cfg.fit_output_to_server && t_loopback,
            context_cap: tokio::sync::OnceCell::new(),
            declared: tokio::sync::OnceCell::new(),
        }
    }

    /// Before the first call to a server on this machine that nothing is remembered of: start
    /// in the strongest mode its published request schema admits, so a server that lists
    /// what it takes is never sent what it does not.
    async fn read_declared_format(&self) {
        self.declared
            .get_or_init(|| async {
                let now = self.negotiated();
                if !self.t.loopback || now.recalled || now.compat.forced {
                    return;
                }
                let Ok(headers) = self.headers() else { return };
                if let Some(mode) = server_api::declared_format(&self.t, headers).await
                    && mode != now.compat.format
                    && FormatMode::ALL.iter().position(|m| *m == mode)
                        > FormatMode::ALL.iter().position(|m| *m == now.compat.format)
                {
                    let mut compat = now.compat;
                    compat.format = mode;
                    self.set(Negotiated { compat, ..now });
                }
            })
            .await;
    }

    /// The output limit a local server's context allows (half of what it reports, or a
    /// fallback when it reports nothing); `None` when the limit is not fitted to the server.
    async fn output_cap(&self) -> Option<u32> {
        if !self.fit_output {
            return None;
        }
        *self
            .context_cap
            .get_or_init(|| async {
                let headers = self.headers().ok()?;
                let context = server_context::context_tokens(&self.t, headers).await;
                Some(context.map_or(server_context::LOCAL_FALLBACK_CAP, server_context::cap_for))
            })
            .await
    }

    /// The settings currently used.
    #[cfg(test)]
    pub(crate) fn compat(&self) -> Compat {
        self.negotiated().compat
    }

    fn negotiated(&self) -> Negotiated {
        self.state.lock().map(|c| *c).unwrap_or(Negotiated {
            compat: self.initial,
            recalled: false,
            settled: false,
        })
    }

    fn set(&self, next: Negotiated) {
        if let Ok(mut slot) = self.state.lock() {
            *slot = next;
        }
    }

    /// After a refusal of `now`'s settings: the settings to try next, if any. A remembered
    /// setting that is refused sends the server back to the strongest mode once (it changed);
    /// otherwise the refused field is relaxed one step.
    fn after_refusal(&self, now: Negotiated, message: &str) -> Option<Negotiated> {
        // A refusal that names nothing pai can relax (a prompt over the context) is reported,
        // and the record kept.
        let relaxed = now.compat.relax(message)?;
        if now.recalled {
            self.memory.forget();
            return Some(Negotiated {
                compat: self.initial,
                recalled: false,
                settled: false,
            });
        }
        Some(Negotiated {
            compat: relaxed,
            recalled: false,
            settled: false,
        })
    }

    /// A call succeeded with `now`'s settings: remember them for later runs (once).
    fn confirm(&self, now: Negotiated) {
        if now.settled {
            return;
        }
        if !now.recalled && !now.compat.forced {
            self.memory.store(now.compat);
        }
        self.set(Negotiated {
            settled: true,
            ..now
        });
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
        if compat.format.schema_in_prompt() {
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
            FormatMode::JsonObjectSchema => {
                body["response_format"] = json!({
                    "type": "json_object",
                    "schema": schema::standard(&req.schema),
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
        if acc.saw_choice && !acc.saw_usage {
            self.t.record_unmetered();
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
    /// The server reported usage.
    saw_usage: bool,
}

impl Acc {
    fn read_usage(&mut self, v: &Value) {
        let usage = &v["usage"];
        if usage.is_object() {
            self.saw_usage = true;
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
            self.read_declared_format().await;
            let mut fitted;
            let req = match self.output_cap().await {
                Some(cap) if cap < req.max_output_tokens => {
                    fitted = req.clone();
                    fitted.max_output_tokens = cap;
                    &fitted
                }
                _ => req,
            };
            loop {
                let now = self.negotiated();
                let compat = now.compat;
                let tuning = self.learned.tuning(req);
                let tuned = tuning.request(req);
                let mut body = self.body(&tuned, compat);
                tuning.apply(ProviderKind::OpenAi, &mut body);
                let (result, n) = self
                    .t
                    .run(&sink, || async {
                        self.attempt(&url, &body, &tuned, &sink)
                            .await
                            .map_err(|e| as_refusal(e, compat))
                    })
                    .await;
                attempts += n;
                let refusal = result.as_ref().err().and_then(refusal_message);
                match refusal {
                    Some(_)
                        if result
                            .as_ref()
                            .err()
                            .is_some_and(|e| self.learned.adjust(tuning, e).is_some()) =>
                    {
                        continue;
                    }
                    Some(message) => {
                        if let Some(next) = self.after_refusal(now, message) {
                            self.set(next);
                            continue;
                        }
                    }
                    None => {}
                }
                return match result {
                    Ok(p) => {
                        self.confirm(now);
                        Ok(p.into_reply(started, attempts))
                    }
                    Err(e) => Err(forced_refusal(e, compat)),
                };
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

    fn output_mode(&self) -> String {
        let n = self.negotiated();
        let how = if n.compat.forced {
            "set by structured_output"
        } else if n.recalled {
            "remembered from an earlier run"
        } else if n.settled {
            "found by negotiation"
        } else {
            "not yet confirmed"
        };
        format!("{} ({how})", n.compat.format)
    }
}

/// A refusal of the format the user forced says so, and what to change.
fn forced_refusal(e: LlmError, compat: Compat) -> LlmError {
    match e {
        LlmError::BadRequest {
            provider,
            status,
            message,
        } if compat.forced && compat.relax(&message).is_none() => LlmError::BadRequest {
            provider,
            status,
            message: format!(
                "{message} (structured_output is set to {}; unset it, or set PAI_STRUCTURED_OUTPUT=auto, to let pai find a mode this server takes)",
                compat.format
            ),
        },
        other => other,
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
