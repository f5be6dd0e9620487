//! Google Gemini `generateContent` / `streamGenerateContent?alt=sse`.
//!
//! Structured output: `generationConfig.responseMimeType = "application/json"` plus
//! `responseSchema` in Gemini's OpenAPI-subset dialect (see `schema::gemini`). The key travels
//! in the `x-goog-api-key` header. Usage comes from `usageMetadata` (thinking tokens count as
//! output); blocks from `promptFeedback.blockReason` and safety finish reasons.

use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::caps::{self, Learned, temperature_json};
use super::error::LlmError;
use super::outcome::{Block, Outcome, Parsed, Stop, conclude, count};
use super::transport::{TextSink, Transport};
use super::{
    LlmReply, LlmRequest, OnText, Provider, ProviderConfig, ProviderKind, Role, Usage, UsageTotals,
    schema,
};

/// The Gemini wire format.
pub(crate) struct Gemini {
    t: Transport,
    /// The model name without a `models/` prefix.
    model: String,
    learned: Learned,
}

impl Gemini {
    pub(crate) fn new(t: Transport, _cfg: &ProviderConfig) -> Result<Self, LlmError> {
        let model = t.model.trim_start_matches("models/").to_string();
        if !model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(LlmError::InvalidConfig {
                provider: ProviderKind::Gemini,
                detail: format!(
                    "model `{model}` is not a Gemini model name (letters, digits, `.`, `-`, `_`)"
                ),
            });
        }
        let learned = Learned::new(ProviderKind::Gemini, &model);
        Ok(Self { t, model, learned })
    }

    fn url(&self, stream: bool) -> String {
        if stream {
            format!(
                "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
                self.t.base, self.model
            )
        } else {
            format!(
                "{}/v1beta/models/{}:generateContent",
                self.t.base, self.model
            )
        }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut pairs = vec![(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        if let Some(key) = self.t.key() {
            pairs.push((
                HeaderName::from_static("x-goog-api-key"),
                self.t.secret_header(key)?,
            ));
        }
        Ok(Transport::headers(pairs))
    }

    fn body(&self, req: &LlmRequest) -> Value {
        let contents: Vec<Value> = req
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "model",
                };
                json!({"role": role, "parts": [{"text": m.text}]})
            })
            .collect();
        let mut body = json!({
            "contents": contents,
            "generationConfig": {
                "candidateCount": 1,
                "temperature": temperature_json(req.temperature),
                "maxOutputTokens": req.max_output_tokens,
                "responseMimeType": "application/json",
                "responseSchema": schema::gemini(&req.schema),
            }
        });
        if !req.system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": req.system}]});
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
        let streamed = if req.stream {
            match self.t.events(response) {
                Ok(mut events) => {
                    while let Some(event) = events.next().await? {
                        if event.data.trim().is_empty() {
                            continue;
                        }
                        let chunk = events.parse(&event)?;
                        self.feed(&mut acc, &chunk, Some(sink))?;
                    }
                    if !acc.finished() {
                        return Err(events.ended_early());
                    }
                    true
                }
                Err(plain) => {
                    let whole = self.t.read_json(*plain).await?;
                    self.feed(&mut acc, &whole, None)?;
                    false
                }
            }
        } else {
            let whole = self.t.read_json(response).await?;
            self.feed(&mut acc, &whole, None)?;
            false
        };
        if !streamed {
            sink.text(&acc.text);
        }
        conclude(&self.t, req.max_output_tokens, acc.into_outcome())
    }

    /// Adds one response (or stream chunk) to the accumulator.
    fn feed(&self, acc: &mut Acc, v: &Value, sink: Option<&TextSink<'_>>) -> Result<(), LlmError> {
        if let Some(err) = v.get("error") {
            let status = err["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Err(self
                .t
                .status_error(status, &HeaderMap::new(), &v.to_string()));
        }
        if !v.is_object() {
            return Err(LlmError::BadResponse {
                provider: ProviderKind::Gemini,
                detail: "the response is not a JSON object".to_string(),
            });
        }
        acc.chunks += 1;
        if let Some(reason) = v["promptFeedback"]["blockReason"].as_str() {
            let feedback = &v["promptFeedback"];
            let detail = feedback["blockReasonMessage"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| flagged_categories(&feedback["safetyRatings"]));
            acc.block = Some(Block {
                reason: reason.to_string(),
                detail,
                request: true,
            });
        }
        if let Some(meta) = v.get("usageMetadata") {
            let cached = count(&meta["cachedContentTokenCount"]);
            acc.usage = Usage {
                input: count(&meta["promptTokenCount"]) + count(&meta["toolUsePromptTokenCount"]),
                output: count(&meta["candidatesTokenCount"]) + count(&meta["thoughtsTokenCount"]),
                cached,
                reasoning: count(&meta["thoughtsTokenCount"]),
            };
        }
        if let Some(candidate) = v["candidates"].as_array().and_then(|c| c.first()) {
            acc.saw_candidate = true;
            if let Some(parts) = candidate["content"]["parts"].as_array() {
                for part in parts {
                    if part["thought"].as_bool() == Some(true) {
                        continue;
                    }
                    if let Some(text) = part["text"].as_str() {
                        acc.text.push_str(text);
                        if let Some(sink) = sink {
                            sink.text(text);
                        }
                    }
                }
            }
            if let Some(reason) = candidate["finishReason"].as_str() {
                acc.finish = Some(reason.to_string());
                acc.finish_detail = if reason == "RECITATION" {
                    cited_sources(&candidate["citationMetadata"])
                } else {
                    flagged_categories(&candidate["safetyRatings"])
                };
            }
        }
        Ok(())
    }
}

/// What the chunks of one Gemini reply said so far.
#[derive(Default)]
struct Acc {
    chunks: u32,
    text: String,
    saw_candidate: bool,
    finish: Option<String>,
    /// What the candidate named with its finish reason (flagged categories, cited sources).
    finish_detail: String,
    block: Option<Block>,
    usage: Usage,
}

/// The safety categories a response flagged, in words: those marked `blocked`, else those
/// rated MEDIUM or HIGH ("dangerous content (HIGH)").
fn flagged_categories(ratings: &Value) -> String {
    let ratings = ratings.as_array().map(Vec::as_slice).unwrap_or_default();
    let blocked: Vec<&Value> = ratings
        .iter()
        .filter(|r| r["blocked"].as_bool() == Some(true))
        .collect();
    let shown: Vec<&Value> = if blocked.is_empty() {
        ratings
            .iter()
            .filter(|r| matches!(r["probability"].as_str(), Some("MEDIUM" | "HIGH")))
            .collect()
    } else {
        blocked
    };
    shown
        .iter()
        .map(|r| {
            let category = r["category"].as_str().unwrap_or("unnamed category");
            let words = category
                .trim_start_matches("HARM_CATEGORY_")
                .replace('_', " ")
                .to_lowercase();
            match r["probability"].as_str() {
                Some(p) => format!("{words} ({p})"),
                None => words,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sources a recitation matched ("matches https://github.com/x/y").
fn cited_sources(citations: &Value) -> String {
    let uris: Vec<&str> = citations["citationSources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["uri"].as_str())
        .take(3)
        .collect();
    if uris.is_empty() {
        String::new()
    } else {
        format!("matches {}", uris.join(", "))
    }
}

impl Acc {
    /// Whether a stream reached a definite end: a finish reason, a block, or a chunk without
    /// any candidate (an empty reply).
    fn finished(&self) -> bool {
        self.finish.is_some() || self.block.is_some() || (self.chunks > 0 && !self.saw_candidate)
    }

    fn into_outcome(self) -> Outcome {
        let stop = if let Some(reason) = self.block {
            Stop::Blocked(reason)
        } else if !self.saw_candidate {
            Stop::Empty
        } else {
            match self.finish.as_deref() {
                Some("MAX_TOKENS") => Stop::Truncated,
                Some(
                    r @ ("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                    | "IMAGE_SAFETY" | "LANGUAGE"),
                ) => Stop::Blocked(Block {
                    reason: r.to_string(),
                    detail: self.finish_detail.clone(),
                    request: false,
                }),
                // OTHER, MALFORMED_FUNCTION_CALL and reasons added later: name the reason
                // rather than calling the reply empty.
                Some(r)
                    if r != "STOP"
                        && r != "FINISH_REASON_UNSPECIFIED"
                        && self.text.trim().is_empty() =>
                {
                    Stop::Stopped(r.to_string())
                }
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

impl Provider for Gemini {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Gemini
    }

    fn complete<'a>(
        &'a self,
        req: &'a LlmRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<LlmReply, LlmError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let sink = TextSink::new(on_text);
            let url = self.url(req.stream);
            let (result, attempts) = caps::tuned(&self.learned, req, |tuned, tuning| {
                let url = &url;
                let sink = &sink;
                async move {
                    let mut body = self.body(&tuned);
                    tuning.apply(ProviderKind::Gemini, &mut body);
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
            let url = format!("{}/v1beta/models/{}", self.t.base, self.model);
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

    fn gemini() -> Gemini {
        let mut cfg = ProviderConfig::new(ProviderKind::Gemini, "models/gemini-2.5-flash-lite");
        cfg.api_key = Some("AIzaTEST".into());
        Gemini::new(Transport::new(&cfg).unwrap(), &cfg).unwrap()
    }

    #[test]
    fn request_shape() {
        let g = gemini();
        let req = LlmRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant("{}"),
                Message::user("go"),
            ],
            schema: json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}),
            schema_name: "plan".into(),
            temperature: 0.3,
            max_output_tokens: 100,
            stream: false,
        };
        let body = g.body(&req);
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "sys");
        assert_eq!(body["contents"][1]["role"], "model");
        assert_eq!(
            body["generationConfig"]["responseMimeType"],
            "application/json"
        );
        assert_eq!(body["generationConfig"]["responseSchema"]["type"], "OBJECT");
        assert!(
            body["generationConfig"]["responseSchema"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 100);
        assert!(
            g.url(false)
                .ends_with("/v1beta/models/gemini-2.5-flash-lite:generateContent")
        );
        assert!(g.url(true).ends_with(":streamGenerateContent?alt=sse"));
        assert!(!g.url(true).contains("AIza"));
        let headers = g.headers().unwrap();
        assert!(headers["x-goog-api-key"].is_sensitive());
        assert!(!format!("{headers:?}").contains("AIzaTEST"));
    }

    #[test]
    fn model_names_cannot_escape_the_path() {
        let mut cfg = ProviderConfig::new(ProviderKind::Gemini, "../../evil?x=1");
        cfg.api_key = Some("k".into());
        assert!(matches!(
            Gemini::new(Transport::new(&cfg).unwrap(), &cfg),
            Err(LlmError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn finish_reasons() {
        let g = gemini();
        let outcome = |v: Value| {
            let mut acc = Acc::default();
            g.feed(&mut acc, &v, None).unwrap();
            acc.into_outcome().stop
        };
        assert_eq!(
            outcome(
                json!({"candidates": [{"content": {"parts": [{"text": "{}"}]}, "finishReason": "STOP"}]})
            ),
            Stop::Complete
        );
        assert_eq!(
            outcome(json!({"candidates": [{"finishReason": "MAX_TOKENS"}]})),
            Stop::Truncated
        );
        assert_eq!(
            outcome(json!({"candidates": [{"finishReason": "SAFETY"}]})),
            Stop::Blocked(Block::reply("SAFETY"))
        );
        assert_eq!(
            outcome(json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})),
            Stop::Blocked(Block {
                reason: "PROHIBITED_CONTENT".into(),
                detail: String::new(),
                request: true
            })
        );
        assert_eq!(outcome(json!({"candidates": []})), Stop::Empty);
    }

    #[test]
    fn thoughts_are_not_reply_text_but_are_billed() {
        let g = gemini();
        let mut acc = Acc::default();
        g.feed(
            &mut acc,
            &json!({"candidates": [{"content": {"parts": [{"text": "hmm", "thought": true}, {"text": "{\"a\":1}"}]}, "finishReason": "STOP"}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7, "cachedContentTokenCount": 4}}),
            None,
        )
        .unwrap();
        assert_eq!(acc.text, "{\"a\":1}");
        assert_eq!(
            acc.usage,
            Usage {
                input: 10,
                output: 12,
                cached: 4,
                reasoning: 7
            }
        );
    }
}
