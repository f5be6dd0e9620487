//! Is a cacheable prompt prefix worth it? The providers cache a prompt's prefix only from a
//! minimum length (1,024 tokens at the least: OpenAI, Gemini 2.5 Flash, Claude Sonnet;
//! 2,048-4,096 for others). OpenAI and Gemini do it implicitly, for the longest prefix a prompt
//! shares with a recent one; Anthropic only up to a `cache_control` breakpoint (pai marks the
//! system prompt), writing it at 1.25x the input price and reading it at 0.1x.
//!
//! This section runs a two-phase turn (run, then fix) and then another request (`pai run`
//! again, as a user or a script does a minute later) through the real binary against the mock,
//! whose prompt cache follows those rules, in every wire format, twice: in the task's small
//! project and in the same project with an `AGENTS.md` and a package of 60 modules (the
//! moderate context a real project sends). It reports the calls' input and the part served
//! from the cache, and what the two alternatives would change: padding the byte-stable prefix
//! (schema and system prompt) to the minimum, and a second Anthropic breakpoint after the
//! first message.

use std::fs;

use pai::llm::ProviderKind;

use crate::common::Row;
use crate::support::mock_llm::{MockLlm, RecordedRequest, Script};
use crate::support::project::Project;

const AREA: &str = "prompt cache";
/// The smallest prefix any provider caches.
const MINIMUM: u64 = 1_024;
/// Cached input tokens cost this share of the normal price (OpenAI's and Gemini's discount,
/// 0.25-0.5 by model; the smaller saving is the honest one to count).
const CACHED_PRICE: f64 = 0.5;
/// Anthropic's price of a cache write and of a read, as shares of the input price.
const ANTHROPIC_WRITE: f64 = 1.25;
const ANTHROPIC_READ: f64 = 0.1;

/// Tokens as the mock estimates them (a quarter of the characters, rounded up).
fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The two-phase task, then another request a minute later (a `pai run` of its own), in a
/// fresh project (with `moderate` extra context) against `kind`: the three calls.
fn two_phase_then_another(kind: ProviderKind, moderate: bool) -> Vec<RecordedRequest> {
    let task: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/eval/16_debug_run_and_fix.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut script = task["script"].clone();
    script["replies"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"plan": {
        "intent": "chat", "reply": "main() prints how many names there are.",
        "steps": [], "observe": false, "next_steps": []}}));
    let mock = MockLlm::start(Script::from_json(&script.to_string()).unwrap());
    let p = Project::repo(None);
    for (path, content) in task["files"].as_object().unwrap() {
        fs::write(p.root.join(path), content.as_str().unwrap()).unwrap();
    }
    if moderate {
        let mut agents = String::from("# Conventions for this project\n\n");
        for i in 0..40 {
            agents.push_str(&format!(
                "- Rule {i}: keep functions short, name them after what they return, and cover \
                 each public function with a test in tests/.\n"
            ));
        }
        fs::write(p.root.join("AGENTS.md"), agents).unwrap();
        fs::create_dir_all(p.root.join("inventory")).unwrap();
        for i in 0..60 {
            fs::write(
                p.root.join(format!("inventory/module_{i:02}.py")),
                format!("def item_{i}():\n    return {i}\n"),
            )
            .unwrap();
        }
    }
    let run = p.run(
        &mock,
        kind,
        task["request"].as_str().unwrap(),
        &["--yes", "--allow-run"],
    );
    assert_eq!(run.status(), "success", "{}", run.text());
    let next = p.run(&mock, kind, "what does main.py print?", &[]);
    assert_eq!(next.status(), "answered", "{}", next.text());
    let calls = mock.generation_requests();
    assert_eq!(calls.len(), 3);
    calls
}

/// The rows.
pub fn rows() -> Vec<Row> {
    let (mut rows, seen) = measured_rows();
    rows.push(prefix_row(seen.prefix));
    rows.push(padding_row(seen.prefix));
    rows.push(second_breakpoint_row(&seen));
    rows
}

/// What the measured calls tell about the two alternatives.
struct Seen {
    /// Estimated tokens of the byte-stable prefix (schema and system prompt), from Anthropic's
    /// first call.
    prefix: u64,
    /// Estimated tokens of the first message, from Anthropic's first call.
    first_message: u64,
    /// The input tokens of call 2 in the moderate project, per provider.
    second_inputs: Vec<(ProviderKind, u64)>,
}

/// One row per project and provider: the input of the two-phase turn's calls and what the
/// cache served, measured.
fn measured_rows() -> (Vec<Row>, Seen) {
    let mut rows = Vec::new();
    let mut seen = Seen {
        prefix: 0,
        first_message: 0,
        second_inputs: Vec::new(),
    };
    for moderate in [false, true] {
        let project = if moderate {
            "project with AGENTS.md and 60 modules"
        } else {
            "small project"
        };
        for kind in ProviderKind::ALL {
            let calls = two_phase_then_another(kind, moderate);
            let (c1, c2, next) = (&calls[0], &calls[1], &calls[2]);
            if kind == ProviderKind::Anthropic {
                let schema = c1.schema.as_ref().map_or(0, |s| s.to_string().len());
                seen.prefix = tokens(c1.system.len() + schema);
                seen.first_message = tokens(c1.messages.first().map_or(0, |(_, t)| t.len()));
            }
            if moderate {
                seen.second_inputs.push((kind, c2.input_tokens));
            }
            rows.push(
                Row::new(
                    AREA,
                    format!("{project}, {kind}: 2-phase turn, input of call 1 / call 2"),
                    format!("{} / {}", c1.input_tokens, c2.input_tokens),
                )
                .note(format!(
                    "from the cache: call 2 {}, the next request's call 1 {} of {}{}",
                    c2.cached_tokens,
                    next.cached_tokens,
                    next.input_tokens,
                    match (kind, c2.cached_tokens) {
                        (ProviderKind::Anthropic, 0) => {
                            " (only the marked prefix is cacheable, and it is under the minimum)"
                        }
                        (_, 0) => " (the shared prefix is under the minimum)",
                        _ => " (the shared prefix, cached implicitly)",
                    }
                )),
            );
        }
    }
    (rows, seen)
}

/// The byte-stable prefix's size against the smallest minimum.
fn prefix_row(prefix: u64) -> Row {
    Row::new(
        AREA,
        "byte-stable prefix (schema + system prompt), estimated tokens",
        format!("{prefix}"),
    )
    .note(format!(
        "smallest provider minimum {MINIMUM}: {}",
        if prefix < MINIMUM {
            "below it: cached only together with a long enough first message (OpenAI, Gemini), never by Anthropic"
        } else {
            "cacheable on its own"
        }
    ))
}

/// Padding the prefix to the minimum: every call carries the padding; every later call
/// within the cache lifetime (minutes) reads the minimum at the cached price.
fn padding_row(prefix: u64) -> Row {
    let pad = MINIMUM.saturating_sub(prefix);
    let saved = (1.0 - CACHED_PRICE) * MINIMUM as f64 - pad as f64;
    Row::new(
        AREA,
        "padding the prefix to the minimum: cost on each call / saving on each later call",
        format!("+{pad} / -{saved:.0} tokens"),
    )
    .note(
        "gains only where the context is small: OpenAI and Gemini already serve the moderate \
         project's later calls from the cache and would pay the padding on every call; \
         decision: not padded (docs/providers.md, prompt caching)",
    )
}

/// A second Anthropic breakpoint after the first message: every turn writes it, only a
/// multi-phase turn reads it back.
fn second_breakpoint_row(seen: &Seen) -> Row {
    let marked = seen.prefix + seen.first_message;
    let surcharge = (ANTHROPIC_WRITE - 1.0) * marked as f64;
    let saving = (1.0 - ANTHROPIC_READ) * marked as f64;
    let anthropic_second = seen
        .second_inputs
        .iter()
        .find(|(k, _)| *k == ProviderKind::Anthropic)
        .map_or(0, |(_, n)| *n);
    Row::new(
        AREA,
        "Anthropic breakpoint after the first message (moderate project): cost on every turn / saving per later phase",
        format!("+{surcharge:.0} / -{saving:.0} tokens"),
    )
    .note(format!(
        "of a {anthropic_second}-token call 2; pays only when more than {:.0}% of turns take a second phase (the evaluation: 3 of 28); decision: not marked",
        100.0 * (ANTHROPIC_WRITE - 1.0) / (1.0 - ANTHROPIC_READ)
    ))
}
