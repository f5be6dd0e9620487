//! Anthropic messages API.
//!
//! Structured output is a forced tool call: one tool whose `input_schema` is the reply schema,
//! and `tool_choice: {type: "tool", name}`, so the reply object arrives as the tool's `input`
//! (streamed as `input_json_delta` pieces). The system prompt is sent as one text block marked
//! `cache_control: ephemeral`, so a byte-stable prompt (with the tool definition before it) is
//! cached. Usage sums `input_tokens` with both cache counters, so `input` means the same thing
//! as for the other providers.

use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::caps::{self, Learned, temperature_json};
use super::error::LlmError;
use super::outcome::{Outcome, Parsed, Stop, conclude, count};
use super::transport::{TextSink, Transport};
use super::{
    LlmReply, LlmRequest, OnText, Provider, ProviderConfig, ProviderKind, Role, Usage, UsageTotals,
    schema,
};

/// The API version header value pai speaks.
const API_VERSION: &str = "2023-06-01";

/// The Anthropic wire format.
pub(crate) struct Anthropic {
    t: Transport,
    learned: Learned,
}

impl Anthropic {
    pub(crate) fn new(t: Transport, cfg: &ProviderConfig) -> Self {
        Self {
            t,
            learned: Learned::new(ProviderKind::Anthropic, &cfg.model),
        }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut pairs = vec![
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(API_VERSION),
            ),
        ];
        if let Some(key) = self.t.key() {
            pairs.push((
                HeaderName::from_static("x-api-key"),
                self.t.secret_header(key)?,
            ));
        }
        Ok(Transport::headers(pairs))
    }

    fn body(&self, req: &LlmRequest) -> Value {
        let name = schema::safe_name(&req.schema_name);
        let mut input_schema = schema::standard(&req.schema);
        if input_schema.get("type").is_none() {
            input_schema["type"] = json!("object");
        }
        // The API wants strictly alternating roles; merge neighbours said by the same side.
        let mut messages: Vec<(Role, String)> = Vec::new();
        for m in &req.messages {
            match messages.last_mut() {
                Some((role, text)) if *role == m.role => {
                    text.push_str("\n\n");
                    text.push_str(&m.text);
                }
                _ => messages.push((m.role, m.text.clone())),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, text)| {
                let role = match role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": text})
            })
            .collect();
        let mut body = json!({
            "model": self.t.model,
            "max_tokens": req.max_output_tokens.max(1),
            "temperature": temperature_json(req.temperature.clamp(0.0, 1.0)),
            "messages": messages,
            "tools": [{
                "name": name,
                "description": "Deliver the complete reply. Always answer by calling this tool with the reply object as its input.",
                "input_schema": input_schema,
            }],
            "tool_choice": {"type": "tool", "name": name},
        });
        if !req.system.is_empty() {
            body["system"] = json!([{
                "type": "text",
                "text": req.system,
                "cache_control": {"type": "ephemeral"},
            }]);
        }
        if req.stream {
            body["stream"] = json!(true);
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
                        if event.data.trim().is_empty() {
                            continue;
                        }
                        let v = events.parse(&event)?;
                        self.feed_event(&mut acc, &v, sink)?;
                        if acc.stopped {
                            break;
                        }
                    }
                    if !acc.stopped {
                        return Err(events.ended_early());
                    }
                }
                Err(plain) => {
                    let whole = self.t.read_json(*plain).await?;
                    self.feed_whole(&mut acc, &whole)?;
                    sink.text(&acc.raw_text());
                }
            }
        } else {
            let whole = self.t.read_json(response).await?;
            self.feed_whole(&mut acc, &whole)?;
            sink.text(&acc.raw_text());
        }
        conclude(&self.t, req.max_output_tokens, acc.into_outcome())
    }

    fn error_from(&self, v: &Value) -> LlmError {
        // Errors inside a 200 stream carry only a type; map it to the status it stands for.
        let status = match v["error"]["type"].as_str() {
            Some("rate_limit_error") => 429,
            Some("overloaded_error") => 529,
            Some("api_error") => 500,
            Some("timeout_error") => 504,
            Some("authentication_error") => 401,
            Some("permission_error") => 403,
            Some("not_found_error") => 404,
            _ => 400,
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        self.t
            .status_error(status, &HeaderMap::new(), &v.to_string())
    }

    fn feed_whole(&self, acc: &mut Acc, v: &Value) -> Result<(), LlmError> {
        if v["type"] == "error" {
            return Err(self.error_from(v));
        }
        if v["type"] != "message" && v.get("content").is_none() {
            return Err(LlmError::BadResponse {
                provider: ProviderKind::Anthropic,
                detail: "the response is not a message".to_string(),
            });
        }
        acc.read_usage(&v["usage"]);
        for block in v["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => {
                    acc.tool_seen = true;
                    acc.tool_input = Some(block["input"].clone());
                }
                Some("text") => acc
                    .text
                    .push_str(block["text"].as_str().unwrap_or_default()),
                _ => {}
            }
        }
        acc.stop_reason = v["stop_reason"].as_str().map(str::to_string);
        acc.read_stop_details(&v["stop_details"]);
        acc.stopped = true;
        Ok(())
    }

    fn feed_event(&self, acc: &mut Acc, v: &Value, sink: &TextSink<'_>) -> Result<(), LlmError> {
        match v["type"].as_str() {
            Some("message_start") => acc.read_usage(&v["message"]["usage"]),
            Some("content_block_start") => {
                let block = &v["content_block"];
                acc.current_is_tool = block["type"] == "tool_use";
                acc.tool_seen |= acc.current_is_tool;
                if let Some(text) = block["text"].as_str() {
                    acc.text.push_str(text);
                }
            }
            Some("content_block_delta") => {
                let delta = &v["delta"];
                match delta["type"].as_str() {
                    Some("input_json_delta") => {
                        let piece = delta["partial_json"].as_str().unwrap_or_default();
                        acc.tool_json.push_str(piece);
                        sink.text(piece);
                    }
                    Some("text_delta") => {
                        let piece = delta["text"].as_str().unwrap_or_default();
                        acc.text.push_str(piece);
                        if !acc.tool_seen {
                            sink.text(piece);
                        }
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    acc.stop_reason = Some(reason.to_string());
                }
                acc.read_stop_details(&v["delta"]["stop_details"]);
                acc.read_usage(&v["usage"]);
            }
            Some("message_stop") => acc.stopped = true,
            Some("error") => return Err(self.error_from(v)),
            _ => {}
        }
        Ok(())
    }
}

/// What one message (or its events) said so far.
#[derive(Default)]
struct Acc {
    text: String,
    tool_json: String,
    tool_input: Option<Value>,
    tool_seen: bool,
    current_is_tool: bool,
    stop_reason: Option<String>,
    /// A refusal's explanation (and policy category) from `stop_details`.
    refusal_detail: Option<String>,
    stopped: bool,
    input: u64,
    cache_write: u64,
    cache_read: u64,
    output: u64,
}

impl Acc {
    /// `stop_details` of a refusal: `{"type": "refusal", "category": ..., "explanation": ...}`.
    fn read_stop_details(&mut self, d: &Value) {
        let explanation = d["explanation"]
            .as_str()
            .map(str::trim)
            .filter(|e| !e.is_empty());
        let category = d["category"].as_str().filter(|c| !c.is_empty());
        self.refusal_detail = match (explanation, category) {
            (Some(e), Some(c)) => Some(format!("{e} (policy category: {c})")),
            (Some(e), None) => Some(e.to_string()),
            (None, Some(c)) => Some(format!("policy category: {c}")),
            (None, None) => self.refusal_detail.take(),
        };
    }

    /// Counters arrive in pieces (input in `message_start`, output in `message_delta`); later
    /// values are cumulative, so present fields overwrite.
    fn read_usage(&mut self, usage: &Value) {
        if !usage.is_object() {
            return;
        }
        if usage.get("input_tokens").is_some_and(|v| !v.is_null()) {
            self.input = count(&usage["input_tokens"]);
        }
        if usage
            .get("cache_creation_input_tokens")
            .is_some_and(|v| !v.is_null())
        {
            self.cache_write = count(&usage["cache_creation_input_tokens"]);
        }
        if usage
            .get("cache_read_input_tokens")
            .is_some_and(|v| !v.is_null())
        {
            self.cache_read = count(&usage["cache_read_input_tokens"]);
        }
        if usage.get("output_tokens").is_some_and(|v| !v.is_null()) {
            self.output = count(&usage["output_tokens"]);
        }
    }

    /// The reply as text: the tool input JSON when the tool was called, else the text blocks.
    fn raw_text(&self) -> String {
        match &self.tool_input {
            Some(input) => input.to_string(),
            None if self.tool_seen => self.tool_json.clone(),
            None => self.text.clone(),
        }
    }

    fn into_outcome(self) -> Outcome {
        let usage = Usage {
            input: self.input + self.cache_write + self.cache_read,
            output: self.output,
            cached: self.cache_read,
            // Thinking is billed inside output_tokens and not reported apart.
            reasoning: 0,
        };
        let text = self.raw_text();
        let stop = match self.stop_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => Stop::Truncated,
            Some("refusal") => Stop::Refused(match &self.refusal_detail {
                Some(d) => d.clone(),
                None if self.text.trim().is_empty() => "the model declined to answer".to_string(),
                None => self.text.trim().to_string(),
            }),
            _ if !self.tool_seen && self.text.trim().is_empty() => Stop::Empty,
            _ => Stop::Complete,
        };
        let structured = match self.tool_input {
            Some(input) => Some(input),
            // A streamed tool call with no input pieces means an empty object.
            None if self.tool_seen && self.tool_json.trim().is_empty() => Some(json!({})),
            None => None,
        };
        Outcome {
            text,
            structured,
            usage,
            stop,
        }
    }
}

impl Provider for Anthropic {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn complete<'a>(
        &'a self,
        req: &'a LlmRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<LlmReply, LlmError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let sink = TextSink::new(on_text);
            let url = format!("{}/v1/messages", self.t.base);
            let (result, attempts) = caps::tuned(&self.learned, req, |tuned, tuning| {
                let url = &url;
                let sink = &sink;
                async move {
                    let mut body = self.body(&tuned);
                    tuning.apply(ProviderKind::Anthropic, &mut body);
                    self.t
                        .run(sink, || self.attempt(url, &body, &tuned, sink))
                        .await
                }
            })
            .await;
            result.map(|p| p.into_reply(started, attempts))
        })
    }

    fn validate<'a>(&'a self) -> BoxFuture<'a, Result<(), LlmError>> {
        Box::pin(async move {
            let url = format!("{}/v1/models/{}", self.t.base, self.t.model);
            self.t.probe_retried(&url, || self.headers()).await
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

    fn provider() -> Anthropic {
        let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, "claude-x");
        cfg.api_key = Some("sk-ant-test".into());
        Anthropic::new(Transport::new(&cfg).unwrap(), &cfg)
    }

    #[test]
    fn forced_tool_request() {
        let p = provider();
        let req = LlmRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("a"),
                Message::user("b"),
                Message::assistant("c"),
            ],
            schema: json!({"properties": {"x": {"type": "string"}}, "propertyOrdering": ["x"]}),
            schema_name: "pai_plan".into(),
            temperature: 1.7,
            max_output_tokens: 50,
            stream: true,
        };
        let body = p.body(&req);
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "pai_plan"})
        );
        assert_eq!(body["tools"][0]["name"], "pai_plan");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert!(
            body["tools"][0]["input_schema"]
                .get("propertyOrdering")
                .is_none()
        );
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["temperature"], 1.0);
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        assert_eq!(body["messages"][0]["content"], "a\n\nb");
        assert_eq!(body["stream"], true);
        let h = p.headers().unwrap();
        assert_eq!(h["anthropic-version"], API_VERSION);
        assert!(h["x-api-key"].is_sensitive());
    }

    #[test]
    fn usage_includes_cache_counters() {
        let mut acc = Acc::default();
        acc.read_usage(&json!({"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}));
        acc.read_usage(&json!({"output_tokens": 42}));
        acc.tool_seen = true;
        acc.tool_input = Some(json!({"a": 1}));
        let o = acc.into_outcome();
        assert_eq!(
            o.usage,
            Usage {
                input: 115,
                output: 42,
                cached: 100,
                reasoning: 0
            }
        );
        assert_eq!(o.stop, Stop::Complete);
    }

    #[test]
    fn stop_reasons() {
        let p = provider();
        let stop = |v: Value| {
            let mut acc = Acc::default();
            p.feed_whole(&mut acc, &v).unwrap();
            acc.into_outcome().stop
        };
        assert_eq!(
            stop(
                json!({"type": "message", "content": [{"type": "tool_use", "input": {}}], "stop_reason": "max_tokens"})
            ),
            Stop::Truncated
        );
        assert_eq!(
            stop(json!({"type": "message", "content": [], "stop_reason": "refusal"})),
            Stop::Refused("the model declined to answer".into())
        );
        assert_eq!(
            stop(json!({"type": "message", "content": [], "stop_reason": "end_turn"})),
            Stop::Empty
        );
    }
}
