//! The provider layer against the mock LLM server: every wire format, streaming and not;
//! usage; retries and their bounds; non-retried client errors; typed reply errors;
//! cancellation; the OpenAI structured-output fallback ladder; key hygiene; validation.

use crate::support;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use pai::llm::{
    LlmError, LlmErrorKind, LlmReply, LlmRequest, Message, Provider, ProviderConfig, ProviderKind,
    StreamEvent, TimeoutStage, build_provider,
};
use serde_json::{Value, json};
use support::mock_llm::{MockLlm, RecordedRequest, Reply, Script, chat_plan};

const KEY: &str = "test-key-S3CR3T-0123456789abcdef";
const SYSTEM: &str = "You are pai, a terminal coding agent. Reply with one JSON object.";
const ALL: [ProviderKind; 3] = ProviderKind::ALL;

fn config(mock: &MockLlm, kind: ProviderKind) -> ProviderConfig {
    let mut cfg = ProviderConfig::new(kind, "mock-model");
    cfg.base_url = Some(mock.base_url(kind));
    cfg.api_key = Some(KEY.to_string());
    cfg.max_attempts = 3;
    cfg.backoff_base = Duration::from_millis(1);
    cfg.backoff_max = Duration::from_millis(5);
    cfg.request_timeout = Duration::from_secs(5);
    cfg.stream_idle_timeout = Duration::from_secs(2);
    cfg.max_retry_wait = Duration::from_secs(3);
    cfg
}

fn provider(mock: &MockLlm, kind: ProviderKind) -> Box<dyn Provider> {
    build_provider(&config(mock, kind)).unwrap()
}

fn plan_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "intent": {"type": "string", "enum": ["chat", "task"]},
            "reply": {"type": "string", "description": "acknowledgment or chat answer"},
            "analysis": {
                "type": "object",
                "properties": {
                    "user_intent": {"type": "string"},
                    "files_to_create": {"type": "array", "items": {"type": "string"}},
                    "complexity": {"type": "string", "enum": ["simple", "moderate", "complex"]}
                }
            },
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string"},
                        "path": {"type": "string"},
                        "content": {"type": "string"},
                        "purpose": {"type": "string"}
                    },
                    "required": ["action"]
                }
            },
            "observe": {"type": "boolean"},
            "next_steps": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["intent", "reply", "steps"]
    })
}

fn task_plan() -> Value {
    Script::from_file("fixtures/llm/calculator.json").replies[0]
        .clone()
        .into_plan()
}

trait IntoPlan {
    fn into_plan(self) -> Value;
}

impl IntoPlan for Reply {
    fn into_plan(self) -> Value {
        match self {
            Reply::Plan(v) => v,
            other => panic!("not a plan: {other:?}"),
        }
    }
}

fn request(stream: bool) -> LlmRequest {
    LlmRequest {
        system: SYSTEM.to_string(),
        messages: vec![Message::user("make me a simple calculator in python")],
        schema: plan_schema(),
        schema_name: "pai_plan".to_string(),
        temperature: 0.3,
        max_output_tokens: 4096,
        stream,
    }
}

/// Collects what `on_text` saw.
#[derive(Default)]
struct Seen {
    events: Mutex<Vec<String>>,
}

impl Seen {
    fn push(&self, ev: StreamEvent<'_>) {
        let text = match ev {
            StreamEvent::Text(t) => t.to_string(),
            StreamEvent::Restart => "<restart>".to_string(),
        };
        self.events.lock().unwrap().push(text);
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// The text delivered after the last restart.
    fn final_text(&self) -> String {
        let events = self.events();
        let start = events
            .iter()
            .rposition(|e| e == "<restart>")
            .map_or(0, |i| i + 1);
        events[start..].concat()
    }
}

/// Waits (asynchronously, so this runtime keeps driving the client's connection) until the mock
/// saw a client abandon a response.
async fn aborted_within(mock: &MockLlm, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if mock.aborted() > 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

async fn call(p: &dyn Provider, req: &LlmRequest) -> (Result<LlmReply, LlmError>, Seen) {
    let seen = Seen::default();
    let on_text = |ev: StreamEvent<'_>| seen.push(ev);
    let result = p.complete(req, &on_text).await;
    (result, seen)
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn structured_reply_for_every_provider_streaming_and_not() {
    for kind in ALL {
        for stream in [false, true] {
            let what = format!("{kind} stream={stream}");
            let mock =
                MockLlm::start(Script::with_replies([Reply::plan(task_plan())]).chunk_chars(16));
            let p = provider(&mock, kind);
            let (result, seen) = call(p.as_ref(), &request(stream)).await;
            let reply = result.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(reply.value, task_plan(), "{what}");
            assert_eq!(reply.attempts, 1, "{what}");
            assert_eq!(
                serde_json::from_str::<Value>(&reply.raw).unwrap(),
                task_plan(),
                "{what}"
            );

            // Text reached the caller: in pieces when streaming, whole otherwise.
            let events = seen.events();
            if stream {
                assert!(events.len() > 3, "{what}: {} text events", events.len());
            } else {
                assert_eq!(events.len(), 1, "{what}");
            }
            assert_eq!(seen.final_text(), reply.raw, "{what}");

            // Usage is what the mock billed, and the provider's meter agrees.
            assert_eq!(reply.usage.input, mock.input_tokens(), "{what}");
            assert_eq!(reply.usage.output, mock.output_tokens(), "{what}");
            assert!(reply.usage.input > 0 && reply.usage.output > 0, "{what}");
            let totals = p.usage_totals();
            assert_eq!(totals.requests, 1, "{what}");
            assert_eq!(totals.usage, reply.usage, "{what}");

            // What went over the wire.
            let reqs = mock.generation_requests();
            assert_eq!(reqs.len(), 1, "{what}");
            let r = &reqs[0];
            assert_eq!(r.stream, stream, "{what}");
            assert_eq!(r.system, SYSTEM, "{what}");
            assert_eq!(
                r.last_user_text(),
                Some("make me a simple calculator in python")
            );
            assert!(mock.key_only_in_headers(KEY), "{what}");
            assert_wire_format(kind, r, stream);
        }
    }
}

/// What the structured request looked like on the wire, in the format of `kind`.
fn assert_wire_format(kind: ProviderKind, r: &RecordedRequest, stream: bool) {
    match kind {
        ProviderKind::Gemini => assert_gemini_wire(r, stream),
        ProviderKind::OpenAi => assert_openai_wire(r, stream),
        ProviderKind::Anthropic => assert_anthropic_wire(r),
    }
}

/// Gemini: the model and the streaming in the URL, the schema in `generationConfig` in
/// Gemini's dialect (upper-case types, no `additionalProperties`).
fn assert_gemini_wire(r: &RecordedRequest, stream: bool) {
    let expected = if stream {
        "/v1beta/models/mock-model:streamGenerateContent?alt=sse"
    } else {
        "/v1beta/models/mock-model:generateContent"
    };
    assert_eq!(r.url, expected);
    assert_eq!(r.auth_header.as_deref(), Some("x-goog-api-key"));
    let gc = &r.body["generationConfig"];
    assert_eq!(gc["responseMimeType"], "application/json");
    assert_eq!(gc["responseSchema"]["type"], "OBJECT");
    assert_eq!(
        gc["responseSchema"]["properties"]["intent"]["enum"],
        json!(["chat", "task"])
    );
    assert!(gc["responseSchema"].get("additionalProperties").is_none());
    assert_eq!(gc["maxOutputTokens"], 4096);
}

/// OpenAI: strict `json_schema` structured output, usage asked for when streaming.
fn assert_openai_wire(r: &RecordedRequest, stream: bool) {
    assert_eq!(r.url, "/v1/chat/completions");
    assert_eq!(r.auth_header.as_deref(), Some("authorization"));
    assert_eq!(r.response_format(), "json_schema");
    // Strict structured output: closed objects, every property required,
    // the optional ones nullable; the declared properties unchanged.
    let sent = &r.body["response_format"]["json_schema"];
    assert_eq!(sent["strict"], true);
    let schema = &sent["schema"];
    assert_eq!(
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        plan_schema()["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>()
    );
    assert_eq!(
        schema["required"],
        json!([
            "intent",
            "reply",
            "analysis",
            "steps",
            "observe",
            "next_steps"
        ])
    );
    assert_eq!(schema["properties"]["intent"]["type"], "string");
    assert_eq!(
        schema["properties"]["observe"]["type"],
        json!(["boolean", "null"])
    );
    let step = &schema["properties"]["steps"]["items"];
    assert_eq!(step["additionalProperties"], false);
    assert_eq!(
        step["properties"]["path"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(r.body["response_format"]["json_schema"]["name"], "pai_plan");
    assert_eq!(
        r.body["stream_options"]["include_usage"].as_bool(),
        stream.then_some(true)
    );
}

/// Anthropic: the plan as a forced tool call.
fn assert_anthropic_wire(r: &RecordedRequest) {
    assert_eq!(r.url, "/v1/messages");
    assert_eq!(r.auth_header.as_deref(), Some("x-api-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        r.body["tool_choice"],
        json!({"type": "tool", "name": "pai_plan"})
    );
    assert_eq!(r.body["tools"][0]["input_schema"], plan_schema());
    assert_eq!(r.body["max_tokens"], 4096);
}

#[tokio::test]
async fn prompt_cache_and_byte_stable_system_prompt() {
    for kind in ALL {
        // The providers keep nothing under their minimum (1,024 tokens and up): this short
        // prompt is never a cache hit, and nothing is reported as cached.
        let real = MockLlm::start(Script::new().fallback(Reply::chat("hello")));
        let p = provider(&real, kind);
        for _ in 0..2 {
            let reply = call(p.as_ref(), &request(false)).await.0.unwrap();
            assert_eq!(reply.usage.cached, 0, "{kind}: under the minimum");
        }
        // With the minimum lifted, the repeated prefix is reported as a hit.
        let mock = MockLlm::start(Script::new().cache_min(0).fallback(Reply::chat("hello")));
        let p = provider(&mock, kind);
        let first = call(p.as_ref(), &request(false)).await.0.unwrap();
        let mut second_req = request(true);
        second_req
            .messages
            .push(Message::assistant(first.raw.clone()));
        second_req.messages.push(Message::user("and now?"));
        let second = call(p.as_ref(), &second_req).await.0.unwrap();
        assert_eq!(first.usage.cached, 0, "{kind}");
        assert!(
            second.usage.cached > 0,
            "{kind}: the repeated system prompt is a cache hit"
        );
        assert!(mock.system_prompt_stable(), "{kind}");
        let totals = p.usage_totals();
        assert_eq!(totals.requests, 2);
        assert_eq!(totals.usage.input, mock.input_tokens(), "{kind}");
        assert_eq!(totals.usage.output, mock.output_tokens(), "{kind}");
        assert_eq!(totals.usage.cached, mock.cached_tokens(), "{kind}");
    }
}

#[tokio::test]
async fn transient_faults_are_retried() {
    let faults = [
        ("500", Reply::status(500)),
        ("502", Reply::status(502)),
        ("503", Reply::status(503)),
        ("504", Reply::status(504)),
        ("408", Reply::status(408)),
        ("429", Reply::rate_limit_ms(10)),
        ("cut", Reply::Cut),
    ];
    for kind in ALL {
        for stream in [false, true] {
            for (name, fault) in &faults {
                let what = format!("{kind} stream={stream} fault={name}");
                let mock = MockLlm::start(Script::with_replies([
                    fault.clone(),
                    Reply::plan(task_plan()),
                ]));
                let p = provider(&mock, kind);
                let (result, seen) = call(p.as_ref(), &request(stream)).await;
                let reply = result.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(reply.value, task_plan(), "{what}");
                assert_eq!(reply.attempts, 2, "{what}");
                assert_eq!(mock.calls(), 2, "{what}");
                assert_eq!(p.usage_totals().requests, 2, "{what}");
                // Only the successful attempt was billed and counted.
                assert_eq!(p.usage_totals().usage.input, mock.input_tokens(), "{what}");
                assert_eq!(seen.final_text(), reply.raw, "{what}");
            }
        }
    }
}

#[tokio::test]
async fn a_broken_stream_tells_the_caller_to_discard_shown_text() {
    let mock =
        MockLlm::start(Script::with_replies([Reply::Cut, Reply::plan(task_plan())]).chunk_chars(8));
    let p = provider(&mock, ProviderKind::OpenAi);
    let (result, seen) = call(p.as_ref(), &request(true)).await;
    let reply = result.unwrap();
    let events = seen.events();
    let restart = events
        .iter()
        .position(|e| e == "<restart>")
        .expect("a restart event");
    assert!(restart > 0, "text was shown before the stream broke");
    assert_eq!(seen.final_text(), reply.raw);
}

#[tokio::test]
async fn retries_are_bounded_and_counted() {
    for kind in ALL {
        let mock = MockLlm::start(Script::with_replies([
            Reply::status(503),
            Reply::status(500),
            Reply::status(502),
            Reply::plan(task_plan()),
        ]));
        let p = provider(&mock, kind);
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::Server {
                    status: 502,
                    attempts: 3,
                    ..
                }
            ),
            "{kind}: {err:?}"
        );
        assert_eq!(err.kind(), LlmErrorKind::Unavailable);
        assert_eq!(mock.calls(), 3, "{kind}");
        assert!(err.to_string().contains("3 attempt"), "{err}");

        let mock = MockLlm::start(Script::new().fallback(Reply::rate_limit_ms(5)));
        let p = provider(&mock, kind);
        let err = call(p.as_ref(), &request(true)).await.0.unwrap_err();
        assert!(
            matches!(err, LlmError::RateLimited { attempts: 3, .. }),
            "{kind}: {err:?}"
        );
        assert_eq!(err.retry_after(), Some(Duration::from_millis(5)), "{kind}");
        assert_eq!(mock.calls(), 3, "{kind}");

        let mock = MockLlm::start(Script::new().fallback(Reply::Cut));
        let p = provider(&mock, kind);
        let err = call(p.as_ref(), &request(true)).await.0.unwrap_err();
        assert!(
            matches!(err, LlmError::Interrupted { attempts: 3, .. }),
            "{kind}: {err:?}"
        );
    }
}

#[tokio::test]
async fn server_requested_waits_are_honoured() {
    // Gemini gets the delay as RetryInfo in the body, the others as `retry-after-ms`.
    for kind in ALL {
        let mock = MockLlm::start(Script::with_replies([
            Reply::rate_limit_ms(300),
            Reply::chat("ok"),
        ]));
        let p = provider(&mock, kind);
        let started = Instant::now();
        let reply = call(p.as_ref(), &request(false)).await.0.unwrap();
        assert_eq!(reply.attempts, 2);
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "{kind}: {:?}",
            started.elapsed()
        );
        assert!(reply.elapsed >= Duration::from_millis(300));
    }
    // Whole-second Retry-After.
    let mock = MockLlm::start(Script::with_replies([
        Reply::rate_limit_secs(1),
        Reply::chat("ok"),
    ]));
    let p = provider(&mock, ProviderKind::Anthropic);
    let started = Instant::now();
    call(p.as_ref(), &request(false)).await.0.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_wait_longer_than_the_cap_is_reported_not_slept() {
    for kind in ALL {
        let mock = MockLlm::start(Script::with_replies([
            Reply::rate_limit_secs(60),
            Reply::chat("ok"),
        ]));
        let p = provider(&mock, kind);
        let started = Instant::now();
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1), "{kind}");
        assert!(
            matches!(err, LlmError::RateLimited { attempts: 1, .. }),
            "{kind}: {err:?}"
        );
        assert_eq!(err.retry_after(), Some(Duration::from_secs(60)));
        assert!(err.hint().contains("60s"), "{}", err.hint());
        assert_eq!(mock.calls(), 1);
    }
}

#[tokio::test]
async fn client_errors_are_not_retried_and_are_explained() {
    for kind in ALL {
        for (code, expect_kind) in [
            (400, LlmErrorKind::Rejected),
            (401, LlmErrorKind::Config),
            (403, LlmErrorKind::Config),
            (404, LlmErrorKind::Config),
        ] {
            let what = format!("{kind} HTTP {code}");
            let mock = MockLlm::start(Script::with_replies([
                Reply::Status {
                    code,
                    message: Some(format!("nope, your key {KEY} is bad")),
                    retry_after_secs: None,
                },
                Reply::chat("never reached"),
            ]));
            let p = provider(&mock, kind);
            let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
            assert_eq!(mock.calls(), 1, "{what}: not retried");
            assert_eq!(err.kind(), expect_kind, "{what}: {err:?}");
            assert!(!err.is_retryable());
            match code {
                401 | 403 => assert!(matches!(err, LlmError::Auth { .. }), "{what}"),
                404 => assert!(matches!(err, LlmError::NotFound { .. }), "{what}"),
                _ => assert!(
                    matches!(err, LlmError::BadRequest { status: 400, .. }),
                    "{what}"
                ),
            }
            // The provider's reason is shown, the key never.
            let shown = format!("{err} {} {err:?}", err.hint());
            assert!(shown.contains("nope"), "{what}: {shown}");
            assert!(!shown.contains(KEY), "{what}: key leaked: {shown}");
        }
    }
}

#[tokio::test]
async fn a_wrong_key_is_reported_as_an_auth_error() {
    for kind in ALL {
        let mock = MockLlm::start(
            Script::new()
                .require_key("the-right-key")
                .fallback(Reply::chat("hi")),
        );
        let p = provider(&mock, kind);
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        // Gemini answers a bad key with 400 API_KEY_INVALID; it is still an auth problem.
        assert!(matches!(err, LlmError::Auth { .. }), "{kind}: {err:?}");
        assert!(err.hint().contains("pai config set"));
        assert_eq!(mock.calls(), 1);
        assert!(!format!("{err:?}").contains(KEY));
    }
}

/// A predicate on the error a case must produce.
type Check = fn(&LlmError) -> bool;

#[tokio::test]
async fn unusable_replies_give_typed_errors_without_retrying() {
    for kind in ALL {
        for stream in [false, true] {
            let cases: Vec<(&str, Reply, Check)> = vec![
                ("truncated", Reply::Truncated, |e| {
                    matches!(
                        e,
                        LlmError::Truncated {
                            max_output_tokens: 4096,
                            ..
                        }
                    )
                }),
                ("empty", Reply::Empty, |e| {
                    matches!(e, LlmError::EmptyReply { .. })
                }),
                ("malformed body", Reply::Malformed, |e| {
                    matches!(e, LlmError::BadResponse { .. })
                }),
                (
                    "prose",
                    Reply::text("Sure! I would create calculator.py for you."),
                    |e| matches!(e, LlmError::MalformedJson { snippet, .. } if snippet.starts_with("Sure! I would")),
                ),
                (
                    "refusal",
                    Reply::Refusal("I can't help with that.".into()),
                    match kind {
                        // Gemini has no refusal field: the prose arrives as the reply text.
                        ProviderKind::Gemini => |e| matches!(e, LlmError::MalformedJson { .. }),
                        _ => {
                            |e| matches!(e, LlmError::Refusal { message, .. } if message.contains("can't help"))
                        }
                    },
                ),
                (
                    "safety",
                    Reply::Safety,
                    match kind {
                        // Anthropic's classifiers stop with `refusal`.
                        ProviderKind::Anthropic => |e| matches!(e, LlmError::Refusal { .. }),
                        ProviderKind::Gemini => {
                            |e| matches!(e, LlmError::Blocked { reason, .. } if reason == "SAFETY")
                        }
                        ProviderKind::OpenAi => {
                            |e| matches!(e, LlmError::Blocked { reason, .. } if reason == "content_filter")
                        }
                    },
                ),
            ];
            for (name, reply, check) in cases {
                let what = format!("{kind} stream={stream} {name}");
                let mock =
                    MockLlm::start(Script::with_replies([reply, Reply::chat("never reached")]));
                let p = provider(&mock, kind);
                let err = call(p.as_ref(), &request(stream)).await.0.unwrap_err();
                assert!(check(&err), "{what}: got {err:?}");
                assert_eq!(mock.calls(), 1, "{what}: must not be retried");
                assert!(!err.to_string().is_empty());
                // Billed replies are metered even when unusable.
                assert_eq!(p.usage_totals().usage.input, mock.input_tokens(), "{what}");
                assert_eq!(
                    p.usage_totals().usage.output,
                    mock.output_tokens(),
                    "{what}"
                );
            }
        }
    }
}

#[tokio::test]
async fn sloppy_json_is_still_understood() {
    let plan = chat_plan("fenced");
    // Pretty JSON with a trailing comma before the closing brace, fenced, with prose around.
    let pretty = serde_json::to_string_pretty(&plan).unwrap();
    let sloppy = format!(
        "{},\n}}",
        pretty.trim_end().trim_end_matches('}').trim_end()
    );
    let text = format!("Here you go:\n```json\n{sloppy}\n```\nAnything else?");
    for kind in ALL {
        for stream in [false, true] {
            let mock = MockLlm::start(Script::with_replies([Reply::text(&text)]));
            let p = provider(&mock, kind);
            let reply = call(p.as_ref(), &request(stream)).await.0.unwrap();
            assert_eq!(reply.value, plan, "{kind} stream={stream}");
            assert_eq!(reply.raw, text);
        }
    }
}

#[tokio::test]
async fn dropping_the_future_aborts_an_in_flight_request_within_a_second() {
    for kind in ALL {
        for stream in [false, true] {
            let what = format!("{kind} stream={stream}");
            let mock = MockLlm::start(Script::with_replies([Reply::drip(50)]));
            let p = provider(&mock, kind);
            let req = request(stream);
            let on_text = |_: StreamEvent<'_>| {};
            let started = Instant::now();
            let outcome =
                tokio::time::timeout(Duration::from_millis(300), p.complete(&req, &on_text)).await;
            assert!(outcome.is_err(), "{what}: the drip should still be running");
            let cancelled_at = started.elapsed();
            assert!(
                cancelled_at < Duration::from_secs(1),
                "{what}: {cancelled_at:?}"
            );
            // The server sees the client go away promptly.
            assert!(
                aborted_within(&mock, Duration::from_secs(1)).await,
                "{what}: connection not closed"
            );
            assert_eq!(mock.calls(), 1);
        }
    }
}

#[tokio::test]
async fn dropping_the_future_during_backoff_stops_further_attempts() {
    let mock = MockLlm::start(Script::with_replies([
        Reply::rate_limit_ms(500),
        Reply::chat("late"),
    ]));
    let p = provider(&mock, ProviderKind::Gemini);
    let req = request(false);
    let on_text = |_: StreamEvent<'_>| {};
    let started = Instant::now();
    let outcome =
        tokio::time::timeout(Duration::from_millis(100), p.complete(&req, &on_text)).await;
    assert!(outcome.is_err());
    assert!(started.elapsed() < Duration::from_millis(400));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        mock.calls(),
        1,
        "the retry must not happen after cancellation"
    );
}

#[tokio::test]
async fn slow_servers_time_out_without_retrying() {
    for kind in ALL {
        let mock = MockLlm::start(Script::with_replies([Reply::drip(400), Reply::chat("x")]));
        let mut cfg = config(&mock, kind);
        cfg.stream_idle_timeout = Duration::from_millis(150);
        let p = build_provider(&cfg).unwrap();
        let err = call(p.as_ref(), &request(true)).await.0.unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::Timeout {
                    stage: TimeoutStage::StreamIdle,
                    ..
                }
            ),
            "{kind}: {err:?}"
        );
        assert_eq!(mock.calls(), 1);

        let mock = MockLlm::start(Script::with_replies([
            Reply::delay(1500, Reply::chat("late")),
            Reply::chat("x"),
        ]));
        let mut cfg = config(&mock, kind);
        cfg.request_timeout = Duration::from_millis(150);
        let p = build_provider(&cfg).unwrap();
        let started = Instant::now();
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::Timeout {
                    stage: TimeoutStage::Response,
                    ..
                }
            ),
            "{kind}: {err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(err.kind(), LlmErrorKind::Unavailable);

        // A non-streaming body that keeps trickling still ends at the request timeout.
        let mock = MockLlm::start(Script::with_replies([Reply::drip(20), Reply::chat("x")]));
        let mut cfg = config(&mock, kind);
        cfg.request_timeout = Duration::from_millis(300);
        let p = build_provider(&cfg).unwrap();
        let started = Instant::now();
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::Timeout {
                    stage: TimeoutStage::Response,
                    ..
                }
            ),
            "{kind}: {err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{kind}: {:?}",
            started.elapsed()
        );
        assert_eq!(mock.calls(), 1);
    }
}

#[tokio::test]
async fn openai_falls_back_from_json_schema_to_json_object_to_prompt_and_remembers() {
    let mock = MockLlm::start(Script::from_file(
        "fixtures/llm/openai_no_structured_output.json",
    ));
    let p = provider(&mock, ProviderKind::OpenAi);
    let first = call(p.as_ref(), &request(false)).await.0.unwrap();
    assert_eq!(first.value["reply"], "Running without structured output.");
    assert_eq!(first.attempts, 4);
    let formats: Vec<String> = mock
        .generation_requests()
        .iter()
        .map(|r| r.response_format())
        .collect();
    assert_eq!(
        formats,
        ["json_schema", "json_object+schema", "json_object", "none"]
    );
    let reqs = mock.generation_requests();
    // Without json_schema the schema travels in the system prompt, identically each time.
    assert!(!reqs[0].system.contains("JSON Schema"));
    assert!(reqs[1].system.starts_with(SYSTEM) && reqs[1].system.contains("JSON Schema"));
    assert_eq!(reqs[1].system, reqs[2].system);
    assert_eq!(reqs[2].system, reqs[3].system);

    // Later calls start in the mode that worked.
    let second = call(p.as_ref(), &request(true)).await.0.unwrap();
    assert_eq!(second.attempts, 1);
    let reqs = mock.generation_requests();
    assert_eq!(reqs.len(), 5);
    assert_eq!(reqs[4].response_format(), "none");
    assert_eq!(reqs[4].system, reqs[3].system);
    assert_eq!(p.usage_totals().requests, 5);
}

#[tokio::test]
async fn openai_json_object_mode_when_only_json_schema_is_rejected() {
    let mock = MockLlm::start(
        Script::new()
            .reject_response_format(&["json_schema"])
            .fallback(Reply::chat("object mode")),
    );
    let p = provider(&mock, ProviderKind::OpenAi);
    for _ in 0..2 {
        let reply = call(p.as_ref(), &request(true)).await.0.unwrap();
        assert_eq!(reply.value["reply"], "object mode");
    }
    let formats: Vec<String> = mock
        .generation_requests()
        .iter()
        .map(|r| r.response_format())
        .collect();
    assert_eq!(
        formats,
        ["json_schema", "json_object+schema", "json_object+schema"]
    );
    // OpenAI requires the word "JSON" in the messages for json_object mode.
    assert!(mock.generation_requests()[1].system.contains("JSON"));
}

/// llama-cpp-python answers `json_schema` with HTTP 500 and its validation error: a refusal,
/// stepped down at once (not retried as an outage), and remembered for the next process.
#[tokio::test]
async fn a_500_naming_the_format_steps_down_once_and_is_remembered_across_processes() {
    let mock = MockLlm::start(
        Script::new()
            .reply(Reply::Status {
                code: 500,
                message: Some(
                    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]".into(),
                ),
                retry_after_secs: None,
            })
            .fallback(Reply::chat("stepped down")),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&mock, ProviderKind::OpenAi);
    cfg.compat_file = Some(dir.path().join("servers.json"));
    let p = build_provider(&cfg).unwrap();
    let reply = call(p.as_ref(), &request(false)).await.0.unwrap();
    assert_eq!(reply.value["reply"], "stepped down");
    let formats = |m: &MockLlm| -> Vec<String> {
        m.generation_requests()
            .iter()
            .map(|r| r.response_format())
            .collect()
    };
    assert_eq!(formats(&mock), ["json_schema", "json_object+schema"]);
    let sent = &mock.generation_requests()[1].body["response_format"]["schema"];
    assert_eq!(
        sent["properties"]["intent"]["enum"],
        json!(["chat", "task"])
    );
    assert!(
        p.output_mode().starts_with("json_object+schema"),
        "{}",
        p.output_mode()
    );

    // A new process (a new provider over the same record) starts where this one ended.
    let again = build_provider(&cfg).unwrap();
    assert!(
        again.output_mode().contains("remembered"),
        "{}",
        again.output_mode()
    );
    call(again.as_ref(), &request(true)).await.0.unwrap();
    assert_eq!(
        formats(&mock),
        ["json_schema", "json_object+schema", "json_object+schema"]
    );

    // Another model on the same server has its own record.
    cfg.model = "other-model".into();
    let other = build_provider(&cfg).unwrap();
    call(other.as_ref(), &request(false)).await.0.unwrap();
    assert_eq!(formats(&mock)[3], "json_schema");
}

/// A remembered mode the server stops taking sends it back to the strongest mode, once.
#[tokio::test]
async fn a_refused_remembered_mode_is_probed_again_from_the_top() {
    let mock = MockLlm::start(
        Script::new()
            .reject_response_format(&["json_object"])
            .fallback(Reply::chat("schema works now")),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    let mut cfg = config(&mock, ProviderKind::OpenAi);
    cfg.compat_file = Some(file.clone());
    let base = mock.base_url(ProviderKind::OpenAi);
    let record = json!({"servers": {format!("{base} mock-model"): {
        "compat": {"format": "json_object", "stream_options": true, "max_completion_tokens": false, "temperature": true},
        "checked": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    }}});
    std::fs::write(&file, record.to_string()).unwrap();
    let p = build_provider(&cfg).unwrap();
    call(p.as_ref(), &request(false)).await.0.unwrap();
    let formats: Vec<String> = mock
        .generation_requests()
        .iter()
        .map(|r| r.response_format())
        .collect();
    assert_eq!(formats, ["json_object", "json_schema"]);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("\"json_schema\""), "{saved}");
}

/// `structured_output` forces a mode: no other is tried, and a refusal says what to change.
#[tokio::test]
async fn a_forced_mode_is_used_and_its_refusal_names_the_setting() {
    let mock = MockLlm::start(Script::new().fallback(Reply::chat("forced")));
    let mut cfg = config(&mock, ProviderKind::OpenAi);
    cfg.structured_output = Some(pai::llm::FormatMode::Prompt);
    let p = build_provider(&cfg).unwrap();
    call(p.as_ref(), &request(false)).await.0.unwrap();
    assert_eq!(mock.generation_requests()[0].response_format(), "none");

    let mock = MockLlm::start(
        Script::new()
            .reject_response_format(&["json_schema"])
            .fallback(Reply::chat("never")),
    );
    let mut cfg = config(&mock, ProviderKind::OpenAi);
    cfg.structured_output = Some(pai::llm::FormatMode::JsonSchema);
    let p = build_provider(&cfg).unwrap();
    let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
    assert_eq!(mock.calls(), 1);
    assert!(err.to_string().contains("structured_output"), "{err}");
}

#[tokio::test]
async fn openai_needs_no_key_on_loopback() {
    let mock = MockLlm::start(Script::new().fallback(Reply::chat("local")));
    let mut cfg = config(&mock, ProviderKind::OpenAi);
    cfg.api_key = None;
    let p = build_provider(&cfg).unwrap();
    let reply = call(p.as_ref(), &request(false)).await.0.unwrap();
    assert_eq!(reply.value["reply"], "local");
    let r = &mock.generation_requests()[0];
    assert!(r.auth_header.is_none());
    assert!(r.header("authorization").is_none());
}

#[tokio::test]
async fn validate_makes_one_cheap_call_and_explains_failures() {
    for kind in ALL {
        let mock = MockLlm::start(Script::new().require_key(KEY).models(&["mock-model"]));
        let p = provider(&mock, kind);
        p.validate().await.unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(mock.calls(), 0, "{kind}: validation must not generate");
        assert_eq!(mock.requests().len(), 1);
        assert_eq!(mock.requests()[0].method, "GET");
        assert!(mock.requests()[0].key_is(KEY));
        assert!(!mock.any_url_contains(KEY));

        let mut cfg = config(&mock, kind);
        cfg.api_key = Some("wrong-key".to_string());
        let err = build_provider(&cfg).unwrap().validate().await.unwrap_err();
        assert!(matches!(err, LlmError::Auth { .. }), "{kind}: {err:?}");

        let mut cfg = config(&mock, kind);
        cfg.model = "no-such-model".to_string();
        let err = build_provider(&cfg).unwrap().validate().await.unwrap_err();
        assert!(matches!(err, LlmError::NotFound { .. }), "{kind}: {err:?}");
        assert_eq!(err.kind(), LlmErrorKind::Config);
    }
}

#[tokio::test]
async fn connection_failures_are_retried_then_reported() {
    // A port nothing listens on: bind, note the port, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for kind in ALL {
        let mut cfg = ProviderConfig::new(kind, "mock-model");
        cfg.base_url = Some(format!("http://127.0.0.1:{port}"));
        cfg.api_key = Some(KEY.to_string());
        cfg.backoff_base = Duration::from_millis(1);
        cfg.max_attempts = 3;
        let p = build_provider(&cfg).unwrap();
        let err = call(p.as_ref(), &request(false)).await.0.unwrap_err();
        assert!(
            matches!(err, LlmError::Connect { attempts: 3, .. }),
            "{kind}: {err:?}"
        );
        assert!(
            err.to_string().contains(&format!("127.0.0.1:{port}")),
            "{err}"
        );
        assert!(!err.to_string().contains(KEY));
        // Three attempts, but none reached a server: no call is counted (or billed).
        assert_eq!(p.usage_totals().requests, 0);
    }
}

#[tokio::test]
async fn the_key_never_appears_in_urls_errors_or_debug_output() {
    for kind in ALL {
        let mock = MockLlm::start(Script::with_replies([
            Reply::status(500),
            Reply::Status {
                code: 400,
                message: Some(format!("echo {KEY}")),
                retry_after_secs: None,
            },
        ]));
        let cfg = config(&mock, kind);
        assert!(!format!("{cfg:?}").contains(KEY));
        let p = build_provider(&cfg).unwrap();
        let err = call(p.as_ref(), &request(true)).await.0.unwrap_err();
        assert!(
            !format!("{err} {err:?} {}", err.hint()).contains(KEY),
            "{kind}"
        );
        assert!(!mock.any_url_contains(KEY));
        for r in mock.requests() {
            assert!(r.key_is(KEY));
            assert!(
                !r.headers.iter().any(|(_, v)| v.contains(KEY)),
                "recorded headers are redacted"
            );
        }
    }
}

#[test]
fn missing_key_for_a_remote_base_is_a_config_error() {
    for kind in ALL {
        let cfg = ProviderConfig::new(kind, kind.default_model());
        let err = build_provider(&cfg).err().unwrap();
        assert!(matches!(err, LlmError::MissingKey { .. }), "{kind}");
        assert_eq!(err.kind(), LlmErrorKind::Config);
        assert!(err.to_string().contains(kind.key_env_var()));
    }
}

// ---------------------------------------------------------------------------------------------
// The mock itself
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_script_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llm");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            Script::load(&path).unwrap_or_else(|e| panic!("{e}"));
            count += 1;
        }
    }
    assert!(count >= 4, "fixtures found: {count}");
    let err = Script::from_json(r#"{"replies": [{"plann": {}}]}"#).unwrap_err();
    assert!(err.contains("plann"), "{err}");
    let err = Script::from_json(r#"{"replys": []}"#).unwrap_err();
    assert!(err.contains("replys"), "{err}");
}

#[tokio::test]
async fn a_fixture_scenario_plays_in_order() {
    for kind in ALL {
        let mock = MockLlm::start(Script::from_file("fixtures/llm/flaky.json"));
        let mut cfg = config(&mock, kind);
        cfg.api_key = Some("test-key-for-fixtures".to_string());
        cfg.max_attempts = 4;
        let p = build_provider(&cfg).unwrap();
        let req = request(true);
        let first = call(p.as_ref(), &req).await.0.unwrap();
        assert_eq!(first.value["reply"], "Made it through the weather.");
        assert_eq!(
            first.attempts, 4,
            "{kind}: 429, 503 and a cut stream, then the plan"
        );
        let mut errors = Vec::new();
        for _ in 0..6 {
            errors.push(call(p.as_ref(), &req).await.0.unwrap_err());
        }
        assert!(
            matches!(errors[0], LlmError::Truncated { .. }),
            "{kind}: {:?}",
            errors[0]
        );
        assert!(
            matches!(errors[1], LlmError::BadResponse { .. }),
            "{kind}: {:?}",
            errors[1]
        );
        assert!(
            matches!(errors[2], LlmError::EmptyReply { .. }),
            "{kind}: {:?}",
            errors[2]
        );
        assert!(
            matches!(
                errors[3],
                LlmError::Blocked { .. } | LlmError::Refusal { .. }
            ),
            "{kind}"
        );
        assert!(
            matches!(
                errors[4],
                LlmError::Refusal { .. } | LlmError::MalformedJson { .. }
            ),
            "{kind}"
        );
        assert!(
            matches!(errors[5], LlmError::MalformedJson { .. }),
            "{kind}: {:?}",
            errors[5]
        );
        let last = call(p.as_ref(), &req).await.0.unwrap();
        assert_eq!(last.value["reply"], "Late but fine.");
        assert_eq!(mock.remaining_replies(), 0);
        // Script exhausted: a clear, non-retried error.
        let err = call(p.as_ref(), &req).await.0.unwrap_err();
        assert!(
            matches!(err, LlmError::BadRequest { .. }),
            "{kind}: {err:?}"
        );
        assert!(err.to_string().contains("no reply left"), "{err}");
        assert_eq!(mock.calls(), 4 + 6 + 1 + 1);
        assert!(mock.key_only_in_headers("test-key-for-fixtures"));
    }
}

#[tokio::test]
async fn rules_answer_by_request_text() {
    let mock = MockLlm::start(Script::from_file("fixtures/llm/chat_rules.json"));
    let p = provider(&mock, ProviderKind::Anthropic);
    let ask = |text: &str| {
        let mut req = request(false);
        req.messages = vec![Message::user(text)];
        req
    };
    let reply = call(p.as_ref(), &ask("hey, what is pai?")).await.0.unwrap();
    assert_eq!(reply.value["reply"], "pai is a terminal coding agent.");
    let err = call(p.as_ref(), &ask("please refuse me"))
        .await
        .0
        .unwrap_err();
    assert!(matches!(err, LlmError::Refusal { .. }));
    // `times: 1`: the refusal rule is spent; the default answers.
    let reply = call(p.as_ref(), &ask("please refuse me")).await.0.unwrap();
    assert_eq!(reply.value["reply"], "I only answer scripted questions.");
    // Rules look at the last user message only (by default).
    let mut req = ask("what is pai");
    req.messages.push(Message::assistant("{}"));
    req.messages.push(Message::user("thanks"));
    let reply = call(p.as_ref(), &req).await.0.unwrap();
    assert_eq!(reply.value["reply"], "I only answer scripted questions.");
    let recorded = mock.generation_requests();
    assert_eq!(recorded[3].last_user_text(), Some("thanks"));
    assert_eq!(recorded[3].answered, "plan");
    assert_eq!(recorded[1].answered, "refusal");
}

/// One HTTP/1.1 exchange over a plain socket, as a blocking test would do.
fn raw_http(addr: std::net::SocketAddr, request: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(request.as_bytes())?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

#[test]
fn the_mock_serves_blocking_clients_and_stops_when_dropped() {
    let mock = MockLlm::start(Script::new().fallback(Reply::chat("hi")));
    let addr = mock.addr();
    assert_eq!(
        mock.base_url(ProviderKind::OpenAi),
        format!("http://{addr}/v1")
    );
    assert_eq!(
        mock.base_url(ProviderKind::Gemini),
        format!("http://{addr}")
    );

    let body = r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hello there"}]}"#;
    let response = raw_http(
        addr,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("chat.completion"));
    // ceil((3 + 11) / 4) = 4 input tokens: system "sys" + "hello there", no schema.
    assert!(response.contains(r#""prompt_tokens":4"#), "{response}");
    assert_eq!(mock.input_tokens(), 4);

    let unknown = raw_http(
        addr,
        "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");

    let recorded = mock.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].auth_header.as_deref(), Some("authorization"));
    assert_eq!(recorded[0].header("authorization"), Some("<redacted>"));
    assert!(recorded[0].key_is(KEY));
    assert!(!recorded[0].key_is("something else"));
    assert_eq!(recorded[0].system, "sys");
    assert_eq!(recorded[1].answered, "not_found");
    assert_eq!(mock.calls(), 1, "only generation requests are calls");

    drop(mock);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the port is closed after drop"
    );
}

/// Every file of `fixtures/llm/replay/`: the providers' real response bodies (error objects,
/// finish reasons, usage fields, in the shapes of their API references) served verbatim, and
/// what pai must make of them: the error, its class and hint, the calls, the usage, and what
/// the requests carried (a retry without `temperature`, a lowered output limit, ...).
#[tokio::test]
async fn replays_of_the_providers_real_response_shapes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llm/replay");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 15, "{} replay cases", paths.len());
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let kind: ProviderKind = case["provider"].as_str().unwrap().parse().unwrap();
        let replies = case["responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| Reply::Raw {
                status: u16::try_from(r["status"].as_u64().unwrap()).unwrap(),
                body: r["body"].clone(),
            });
        let mock = MockLlm::start(Script::with_replies(replies));
        let mut cfg = config(&mock, kind);
        cfg.model = case["model"].as_str().unwrap().to_string();
        cfg.backoff_max = Duration::from_millis(2);
        let p = build_provider(&cfg).unwrap();
        let mut req = request(false);
        req.max_output_tokens = u32::try_from(case["max_output_tokens"].as_u64().unwrap()).unwrap();
        let (result, _) = call(p.as_ref(), &req).await;
        let e = &case["expect"];
        assert_eq!(mock.calls(), e["calls"].as_u64().unwrap(), "{name}: calls");
        match (e["ok"].as_bool().unwrap(), &result) {
            (true, Ok(reply)) => check_replayed_reply(&name, e, reply),
            (false, Err(err)) => check_replayed_error(&name, e, err),
            (ok, other) => panic!("{name}: expected ok={ok}, got {other:?}"),
        }
        check_replayed_requests(&name, e, &mock.generation_requests());
        if let Some(ptrs) = e["again_absent"].as_array() {
            // What was learned is remembered: the next call does not repeat the rejected field.
            let before = mock.calls();
            let (again, _) = call(p.as_ref(), &req).await;
            assert!(again.is_ok(), "{name}: second call {again:?}");
            assert_eq!(mock.calls(), before + 1, "{name}: second call retried");
            let last = mock.generation_requests().pop().unwrap();
            for ptr in ptrs {
                assert!(
                    last.body.pointer(ptr.as_str().unwrap()).is_none(),
                    "{name}: again"
                );
            }
        }
    }
}

/// A replay that must succeed: the reply, and the usage when the case states it.
fn check_replayed_reply(name: &str, e: &Value, reply: &LlmReply) {
    assert_eq!(reply.value["reply"], "Hello from the replay.", "{name}");
    if let Some(u) = e.get("usage") {
        let got = [
            reply.usage.input,
            reply.usage.output,
            reply.usage.cached,
            reply.usage.reasoning,
        ];
        let want = ["input", "output", "cached", "reasoning"].map(|k| u[k].as_u64().unwrap());
        assert_eq!(got, want, "{name}: input, output, cached, reasoning");
    }
}

/// A replay that must fail: the error's variant, text, class and hint, and whether the turn
/// asks the model again.
fn check_replayed_error(name: &str, e: &Value, err: &LlmError) {
    let variant = e["error"].as_str().unwrap();
    assert!(format!("{err:?}").starts_with(variant), "{name}: {err:?}");
    for needle in e["error_contains"].as_array().into_iter().flatten() {
        let needle = needle.as_str().unwrap();
        assert!(err.to_string().contains(needle), "{name}: {err}");
    }
    let kind = match err.kind() {
        LlmErrorKind::Config => "config",
        LlmErrorKind::Unavailable => "unavailable",
        LlmErrorKind::Rejected => "rejected",
        LlmErrorKind::Reply => "reply",
    };
    assert_eq!(kind, e["kind"].as_str().unwrap(), "{name}: {err:?}");
    if let Some(h) = e["hint_contains"].as_str() {
        assert!(err.hint().contains(h), "{name}: {}", err.hint());
    }
    // Whether the turn asks the model once more (a reply that may come out right
    // the second time) or reports at once.
    assert_eq!(
        err.correction_request().is_some(),
        e["corrects"].as_bool().unwrap_or(false),
        "{name}: correction"
    );
    assert!(
        !err.is_retryable() || e["calls"].as_u64() > Some(1),
        "{name}"
    );
}

/// What the replay's requests carried: JSON pointers present, absent or equal per request, and
/// text in or not in the first raw body.
fn check_replayed_requests(name: &str, e: &Value, sent: &[RecordedRequest]) {
    for (i, checks) in e["requests"].as_array().into_iter().flatten().enumerate() {
        let body = &sent[i].body;
        for ptr in checks["present"].as_array().into_iter().flatten() {
            let ptr = ptr.as_str().unwrap();
            assert!(
                body.pointer(ptr).is_some(),
                "{name}: request {i} lacks {ptr}"
            );
        }
        for ptr in checks["absent"].as_array().into_iter().flatten() {
            let ptr = ptr.as_str().unwrap();
            assert!(body.pointer(ptr).is_none(), "{name}: request {i} has {ptr}");
        }
        for (ptr, want) in checks["equals"].as_object().into_iter().flatten() {
            assert_eq!(body.pointer(ptr), Some(want), "{name}: request {i} {ptr}");
        }
    }
    if let Some(needle) = e["raw_contains"].as_str() {
        assert!(
            sent[0].raw_body.contains(needle),
            "{name}: {}",
            sent[0].raw_body
        );
    }
    if let Some(needle) = e["raw_lacks"].as_str() {
        assert!(!sent[0].raw_body.contains(needle), "{name}");
    }
}

/// Whether `text` shows `hint`, however a panel wrapped it.
fn shows(text: &str, hint: &str) -> bool {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '|')
            .collect()
    };
    squash(text).contains(&squash(hint))
}

/// `pai auto` fed `lines` on a pipe: its exit code and everything it printed.
fn interactive(
    p: &support::project::Project,
    mock: &MockLlm,
    kind: ProviderKind,
    extra: &[&str],
    lines: &str,
) -> (Option<i32>, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = p.pai();
    cmd.env(kind.key_env_var(), support::project::TEST_KEY)
        .args([
            "auto",
            "--provider",
            kind.name(),
            "--base-url",
            &mock.base_url(kind),
        ])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The provider's own 404 for a model it does not have, in the shape of its API reference.
fn model_not_found(kind: ProviderKind, model: &str) -> Reply {
    let body = match kind {
        ProviderKind::Gemini => json!({"error": {
            "code": 404,
            "message": format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."),
            "status": "NOT_FOUND"}}),
        ProviderKind::OpenAi => json!({"error": {
            "message": format!("The model `{model}` does not exist or you do not have access to it."),
            "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
        ProviderKind::Anthropic => json!({"type": "error",
            "error": {"type": "not_found_error", "message": format!("model: {model}")},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}),
    };
    Reply::Raw { status: 404, body }
}

/// SPEC section 1 for the configuration errors beside a refused key (which
/// `a_refused_key_exits_2_with_the_same_hint_in_run_auto_and_validate` covers): a model the
/// provider does not have exits 2 from `pai run`, from the interactive session and from `pai
/// config validate`, with the same hint; an account without credit (OpenAI 429
/// `insufficient_quota`) exits 2 at once with the billing hint, while a plain rate limit that
/// outlasts the retries exits 1.
#[test]
fn unknown_models_and_used_up_accounts_exit_2_with_one_hint_everywhere() {
    let model = "no-such-model-1";
    for kind in ALL {
        unknown_model_exits_2_everywhere(kind, model);
    }
    used_up_account_exits_2_where_a_rate_limit_exits_1();
}

/// A model `kind` does not have exits 2 with the not-found hint from `pai run`, from `pai auto`
/// (without retrying the 404) and from `pai config validate`.
fn unknown_model_exits_2_everywhere(kind: ProviderKind, model: &str) {
    let hint = LlmError::NotFound {
        provider: kind,
        model: model.into(),
        message: String::new(),
    }
    .hint();
    let p = support::project::Project::repo(None);
    let mock = MockLlm::start(Script::with_replies([
        model_not_found(kind, model),
        model_not_found(kind, model),
    ]));
    let run = p.run(&mock, kind, "add a power operation", &["--model", model]);
    assert_eq!(
        run.output.status.code(),
        Some(2),
        "{kind} run: {}",
        run.text()
    );
    assert!(shows(&run.text(), &hint), "{kind} run: {}", run.text());
    let (code, text) = interactive(
        &p,
        &mock,
        kind,
        &["--model", model],
        "add a power operation\nadd another one\n",
    );
    assert_eq!(code, Some(2), "{kind} auto: {text}");
    assert!(shows(&text, &hint), "{kind} auto: {text}");
    assert_eq!(mock.calls(), 2, "{kind}: a 404 is not retried");

    let listing = MockLlm::start(Script::new().models(&["a-model-it-has"]));
    let validate = p
        .pai()
        .env(kind.key_env_var(), support::project::TEST_KEY)
        .args([
            "config",
            "validate",
            "--provider",
            kind.name(),
            "--model",
            model,
        ])
        .args(["--base-url", &listing.base_url(kind)])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&validate.stdout),
        String::from_utf8_lossy(&validate.stderr)
    );
    assert_eq!(validate.status.code(), Some(2), "{kind} validate: {text}");
    assert!(shows(&text, &hint), "{kind} validate: {text}");
}

/// OpenAI's 429 `insufficient_quota` exits 2 at once with the billing hint from `pai run` and
/// `pai auto`; a plain rate limit that outlasts the retries exits 1 without it.
fn used_up_account_exits_2_where_a_rate_limit_exits_1() {
    let kind = ProviderKind::OpenAi;
    let quota = |code: &str, kind_of: &str, message: &str| Reply::Raw {
        status: 429,
        body: json!({"error": {"message": message, "type": kind_of, "param": null, "code": code}}),
    };
    let billing = LlmError::Billing {
        provider: kind,
        message: String::new(),
    }
    .hint();
    let p = support::project::Project::repo(None);
    let used_up = quota(
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    );
    let mock = MockLlm::start(Script::new().fallback(used_up));
    let run = p.run(&mock, kind, "add a power operation", &[]);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.text());
    assert!(shows(&run.text(), &billing), "{}", run.text());
    assert_eq!(mock.calls(), 1, "billing errors are not retried");
    let (code, text) = interactive(&p, &mock, kind, &[], "add a power operation\n");
    assert_eq!(code, Some(2), "auto: {text}");
    assert!(shows(&text, &billing), "auto: {text}");
    assert_eq!(mock.calls(), 2, "one call per turn, none retried");

    let mock = MockLlm::start(Script::new().fallback(Reply::rate_limit_ms(10)));
    let run = p.run(&mock, kind, "add a power operation", &[]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.text());
    assert!(!shows(&run.text(), &billing), "{}", run.text());
    assert!(mock.calls() > 1, "a rate limit is retried");
}

/// A `task` plan that writes `path` with `content`, with the acknowledgment `reply`.
fn write_plan(reply: &str, path: &str, content: &str) -> Value {
    json!({
        "intent": "task",
        "reply": reply,
        "analysis": {"user_intent": "write", "files_to_read": [], "files_to_create": [path],
            "files_to_modify": [], "risks": "none", "success_criteria": [], "complexity": "simple"},
        "steps": [{"action": "WRITE", "path": path, "content": content}],
        "observe": false,
        "next_steps": []
    })
}

/// Every call's usage is reported, the unusable one included, and the `usage` events add up
/// to the `finished` totals.
#[test]
fn usage_events_cover_failed_calls_and_add_up_to_finished() {
    let p = support::project::Project::repo(None);
    let mock = MockLlm::start(Script::with_replies([
        Reply::text("Sure! I will write the file now."),
        Reply::Plan(write_plan("Writing it.", "hello.txt", "hello world\n")),
    ]));
    let run = p.run(&mock, ProviderKind::OpenAi, "create hello.txt", &["--yes"]);
    assert_eq!(run.status(), "success", "{}", run.text());
    let usage = run.events_of("usage");
    assert_eq!(usage.len(), 2, "{}", run.text());
    assert_eq!(usage[0]["failed"], true);
    assert!(
        usage[0]["input"].as_u64().unwrap() > 0,
        "an unusable reply is billed too"
    );
    assert!(usage[1].get("failed").is_none());
    assert_eq!(p.read("hello.txt"), "hello world\n");
    let f = run.finished();
    let sum = |k: &str| usage.iter().map(|u| u[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("input"), f["input_tokens"].as_u64().unwrap());
    assert_eq!(sum("output"), f["output_tokens"].as_u64().unwrap());
    assert!(sum("input") > 0);
    assert_eq!(usage[1]["call"], f["calls"]);
}

/// A reply's text reaches the event stream only once its plan is valid: a reply claiming
/// work it did not plan is never shown, nothing is written, and the turn fails honestly.
#[test]
fn an_invalid_reply_is_never_shown_and_nothing_is_written() {
    let p = support::project::Project::repo(None);
    let boast = json!({"intent": "task", "reply": "Done! I created hello.txt.", "steps": [],
        "observe": false});
    let mock = MockLlm::start(Script::with_replies([
        Reply::Plan(boast.clone()),
        Reply::Plan(boast),
    ]));
    let run = p.run(&mock, ProviderKind::OpenAi, "create hello.txt", &["--yes"]);
    assert_eq!(run.status(), "failed", "{}", run.text());
    assert_eq!(run.output.status.code(), Some(1));
    assert!(run.events_of("text_delta").is_empty(), "{}", run.text());
    assert!(!String::from_utf8_lossy(&run.output.stdout).contains("I created"));
    assert!(!p.root.join("hello.txt").exists());
    assert!(
        run.finished()["message"]
            .as_str()
            .unwrap()
            .contains("nothing was run"),
        "{}",
        run.text()
    );
}

/// A request for a change answered in words, while the model's own analysis names the file
/// to create, is not an answer: it fails (exit 1) saying nothing was changed.
#[test]
fn a_change_answered_as_chat_fails_saying_nothing_was_changed() {
    let p = support::project::Project::repo(None);
    let mut words = chat_plan("Sure, here is hello.txt: hello world");
    words["analysis"]["files_to_create"] = json!(["hello.txt"]);
    let mock = MockLlm::start(Script::with_replies([Reply::Plan(words)]));
    let run = p.run(&mock, ProviderKind::OpenAi, "create hello.txt", &["--yes"]);
    assert_eq!(run.status(), "failed", "{}", run.text());
    assert_eq!(run.output.status.code(), Some(1));
    let message = run.finished()["message"].as_str().unwrap().to_string();
    assert!(message.contains("nothing was changed"), "{message}");
    assert!(message.contains("hello.txt"), "{message}");
    assert!(!p.root.join("hello.txt").exists());
    // The answer itself is still shown: it may be useful, it just is not the change.
    assert_eq!(run.events_of("answer").len(), 1);

    // A plain question answered in words stays an answer (exit 0).
    let mock = MockLlm::start(Script::with_replies([Reply::Plan(chat_plan("4"))]));
    let run = p.run(&mock, ProviderKind::OpenAi, "what is 2+2?", &["--yes"]);
    assert_eq!(run.status(), "answered", "{}", run.text());
    assert_eq!(run.output.status.code(), Some(0));
}

/// Steps sent under a chat intent are an invalid plan (asked once to correct), never dropped
/// silently so that the turn "answers" a request for a change.
#[test]
fn steps_under_a_chat_intent_are_an_invalid_plan() {
    let p = support::project::Project::repo(None);
    let mut mixed = write_plan("Here you go.", "hello.txt", "hello\n");
    mixed["intent"] = json!("chat");
    let mock = MockLlm::start(Script::with_replies([
        Reply::Plan(mixed.clone()),
        Reply::Plan(mixed),
    ]));
    let run = p.run(&mock, ProviderKind::OpenAi, "create hello.txt", &["--yes"]);
    assert_eq!(run.status(), "failed", "{}", run.text());
    assert!(
        run.text().contains("a chat reply carries 1 step(s)"),
        "{}",
        run.text()
    );
    assert_eq!(mock.calls(), 2, "one correction");
    assert!(!p.root.join("hello.txt").exists());
}

/// A stream whose server reports no usage (llama-cpp-python ignores `stream_options`) is
/// counted as unknown, not as zero tokens.
#[tokio::test]
async fn a_stream_without_usage_is_unknown_not_zero() {
    let mock = MockLlm::start(
        Script::new()
            .server("llama_cpp_python_0_3_36")
            .fallback(Reply::chat("streamed")),
    );
    let p = provider(&mock, ProviderKind::OpenAi);
    let reply = call(p.as_ref(), &request(true)).await.0.unwrap();
    assert_eq!(reply.value["reply"], "streamed");
    let totals = p.usage_totals();
    assert_eq!(totals.unmetered, 1);
    assert_eq!(totals.usage.input, 0);
    // Without streaming the same server reports usage.
    call(p.as_ref(), &request(false)).await.0.unwrap();
    let totals = p.usage_totals();
    assert_eq!(totals.unmetered, 1);
    assert!(totals.usage.input > 0);
}

/// The recorded llama-cpp-python 0.3.36 server (`fixtures/llm/servers/`): with no setting
/// changed, pai reads what the server takes before its first call, so no call is refused on
/// the first run or any later one, and the output limit fits the server.
#[test]
fn the_recorded_llama_cpp_python_server_never_refuses_a_call() {
    let p = support::project::Project::repo(None);
    let mock = MockLlm::start(
        Script::new()
            .server("llama_cpp_python_0_3_36")
            .fallback(Reply::Plan(chat_plan("4"))),
    );
    for run in 1..=2 {
        let r = p.run(&mock, ProviderKind::OpenAi, "what is 2+2?", &[]);
        assert_eq!(r.status(), "answered", "run {run}: {}", r.text());
    }
    let generations = mock.generation_requests();
    assert_eq!(generations.len(), 2);
    for g in &generations {
        assert_eq!(g.status, 200, "{}", g.answered);
        assert_eq!(g.response_format(), "json_object+schema");
        assert!(g.body["max_tokens"].as_u64().unwrap() <= 4_096);
    }
    // The first run read the server's API description; the second used what it remembered.
    let looked = mock
        .requests()
        .iter()
        .filter(|r| r.url == "/openapi.json")
        .count();
    assert_eq!(looked, 1);
}

/// The recorded replies of Gemma 3 270M on llama-cpp-python (`fixtures/llm/local/`), served
/// verbatim, and variants of them that claim a task: a weak model's replies never make pai
/// write a file, crash, or report success; every turn ends failed, saying nothing was run,
/// and its usage events add up.
#[test]
fn recorded_weak_model_replies_never_write_crash_or_claim_done() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/llm/local/gemma3_270m_llama_cpp_python.json");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let greet = recorded["project"]["greet.py"].as_str().unwrap();
    let mut runs = Vec::new();
    for case in recorded["cases"].as_array().unwrap() {
        let responses: Vec<Value> = case["responses"].as_array().unwrap().clone();
        runs.push((case["request"].as_str().unwrap(), responses.clone()));
        // The same replies with intent "task": the steps they carry must not pass either.
        let as_task = responses
            .iter()
            .map(|r| {
                let mut r = r.clone();
                let content = r["body"]["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap();
                let mut plan: Value = serde_json::from_str(content).unwrap();
                plan["intent"] = json!("task");
                r["body"]["choices"][0]["message"]["content"] = json!(plan.to_string());
                r
            })
            .collect();
        runs.push((case["request"].as_str().unwrap(), as_task));
    }
    assert_eq!(runs.len(), 8);
    for (request, responses) in runs {
        let p = support::project::Project::repo(None);
        std::fs::write(p.root.join("greet.py"), greet).unwrap();
        support::project::git(&p.root, &["add", "-A"]);
        support::project::git(&p.root, &["commit", "-q", "-m", "greet"]);
        let replies = responses.iter().map(|r| Reply::Raw {
            status: 200,
            body: r["body"].clone(),
        });
        let mock = MockLlm::start(Script::with_replies(replies).server("llama_cpp_python_0_3_36"));
        let r = p.run(
            &mock,
            ProviderKind::OpenAi,
            request,
            &["--yes", "--allow-run"],
        );
        let t = r.text();
        assert!(!t.contains("panicked"), "{request}: {t}");
        assert_eq!(r.status(), "failed", "{request}: {t}");
        assert_eq!(r.output.status.code(), Some(1), "{request}: {t}");
        let message = r.finished()["message"].as_str().unwrap();
        assert!(message.contains("nothing was run"), "{request}: {message}");
        assert_eq!(r.finished()["changed"], json!([]), "{request}");
        assert_eq!(p.read("greet.py"), greet, "{request}");
        assert!(!p.root.join("hello.txt").exists(), "{request}");
        let status = support::project::git(&p.root, &["status", "--porcelain"]);
        assert!(
            status.lines().all(|l| l.contains(".pai_history")),
            "{request}: {status}"
        );
        assert!(r.events_of("text_delta").is_empty(), "{request}: {t}");
        assert!(r.events_of("step").is_empty(), "{request}: {t}");
        let usage = r.events_of("usage");
        let sum: u64 = usage.iter().map(|u| u["input"].as_u64().unwrap()).sum();
        assert_eq!(
            sum,
            r.finished()["input_tokens"].as_u64().unwrap(),
            "{request}"
        );
        assert!(sum > 0, "{request}");
        assert!(mock.generation_requests().iter().all(|g| g.status == 200));
    }
}

/// A call that times out was abandoned before its usage arrived: its tokens are unknown, not
/// zero, and the failure names the setting to raise.
#[test]
fn a_timed_out_call_has_unknown_usage_and_names_the_setting() {
    let p = support::project::Project::repo(None);
    let mock = MockLlm::start(Script::with_replies([Reply::delay(
        8_000,
        Reply::Plan(chat_plan("too late")),
    )]));
    let mut cmd = p.pai();
    cmd.env("PAI_REQUEST_TIMEOUT", "5")
        .env("PAI_PROVIDER", "openai")
        .args([
            "run",
            "what is 2+2?",
            "--json",
            "--base-url",
            &mock.base_url(ProviderKind::OpenAi),
        ]);
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let usage: Vec<&Value> = events.iter().filter(|e| e["event"] == "usage").collect();
    assert_eq!(usage.len(), 1, "{text}");
    assert_eq!(usage[0]["unknown"], true, "{text}");
    assert_eq!(usage[0]["failed"], true, "{text}");
    let finished = events.iter().find(|e| e["event"] == "finished").unwrap();
    assert_eq!(finished["status"], "failed");
    assert_eq!(finished["calls_without_usage"], 1);
    assert!(text.contains("request_timeout_secs"), "{text}");
    assert!(text.contains("PAI_REQUEST_TIMEOUT"), "{text}");
}
