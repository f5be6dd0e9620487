//! Is a cacheable prompt prefix worth it? Providers cache a prompt's prefix only from a minimum
//! length (1,024 tokens at the least: OpenAI, Gemini 2.5 Flash, Claude Sonnet; 2,048-4,096 for
//! others), and pai's byte-stable prefix (system prompt and schema) is shorter. This section
//! measures, through the real binary against the mock, the prefix and the input of both calls
//! of a two-phase turn (run, then fix), and computes what padding the prefix to 1,024 tokens
//! would cost and save: every call would carry the padding; every call after the first within
//! the provider's cache lifetime would be billed the cached 1,024 tokens at a quarter of the
//! price (OpenAI's and Gemini's discount; Anthropic's is larger, with a surcharge on the write).

use std::fs;

use pai::llm::ProviderKind;

use crate::common::Row;
use crate::support::mock_llm::{MockLlm, Script};
use crate::support::project::Project;

const AREA: &str = "prompt cache";
/// The smallest prefix any provider caches.
const MINIMUM: u64 = 1_024;
/// Cached input tokens cost this share of the normal price (OpenAI, Gemini).
const CACHED_PRICE: f64 = 0.25;

/// The rows.
pub fn rows() -> Vec<Row> {
    let task: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/eval/16_debug_run_and_fix.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mock = MockLlm::start(Script::from_json(&task["script"].to_string()).unwrap());
    let p = Project::repo(None);
    for (path, content) in task["files"].as_object().unwrap() {
        fs::write(p.root.join(path), content.as_str().unwrap()).unwrap();
    }
    let run = p.run(
        &mock,
        ProviderKind::Gemini,
        task["request"].as_str().unwrap(),
        &["--yes", "--allow-run"],
    );
    assert_eq!(run.status(), "success", "{}", run.text());
    let calls = mock.generation_requests();
    assert_eq!(calls.len(), 2);
    let prefix = (calls[0].system.len()
        + calls[0].schema.as_ref().map_or(0, |s| s.to_string().len())) as u64
        / 4;
    let (c1, c2) = (calls[0].input_tokens, calls[1].input_tokens);
    let pad = MINIMUM.saturating_sub(prefix);
    let later_call_padded = (c2 + pad) as f64 - (1.0 - CACHED_PRICE) * MINIMUM as f64;
    let saved_per_later_call = c2 as f64 - later_call_padded;
    vec![
        Row::new(
            AREA,
            "byte-stable prefix (system prompt + schema), estimated tokens",
            format!("{prefix}"),
        )
        .note(format!(
            "smallest provider minimum {MINIMUM}: {}",
            if prefix < MINIMUM {
                "below it, never cached"
            } else {
                "cacheable"
            }
        )),
        Row::new(
            AREA,
            "2-phase turn (run, then fix): input of call 1 / call 2",
            format!("{c1} / {c2}"),
        )
        .note(format!(
            "padded to {MINIMUM}: {} / {} (call 2 billed like {:.0} with the prefix cached)",
            c1 + pad,
            c2 + pad,
            later_call_padded
        )),
        Row::new(
            AREA,
            "padding: cost on a session's first call / saving on each later call",
            format!("+{pad} / -{saved_per_later_call:.0} tokens"),
        )
        .note("decision: not padded (see README, Prompt caching)"),
    ]
}
