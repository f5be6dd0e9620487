//! How many tokens a local OpenAI-compatible server's context holds, as the server itself says
//! (its model list or, for llama.cpp's `llama-server`, its `/props`), so the output limit pai
//! asks for fits in it: asking a server with an 8,192-token context for 16,384 output tokens
//! is refused by some servers and silently cut by others.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::transport::Transport;

/// How long each look-up may take; a server that does not answer it quickly is left alone.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The output limit for a server without a reported context: enough for a plan with a few
/// files, small enough for the contexts local servers start with.
pub(crate) const LOCAL_FALLBACK_CAP: u32 = 4_096;

/// The output limit for a server whose context holds `context` tokens: half of it (the other
/// half is the prompt: the system prompt, the project's files and the conversation).
pub(crate) fn cap_for(context: u32) -> u32 {
    (context / 2).max(512)
}

/// The server's context size in tokens, if it says.
pub(crate) async fn context_tokens(t: &Transport, headers: HeaderMap) -> Option<u32> {
    let models = lookup(t, &format!("{}/models", t.base), headers.clone()).await;
    if let Some(n) = models.as_ref().and_then(|v| from_models(v, &t.model)) {
        return Some(n);
    }
    let props = lookup(t, &format!("{}/props", t.origin), headers).await?;
    from_props(&props)
}

async fn lookup(t: &Transport, url: &str, headers: HeaderMap) -> Option<Value> {
    let get = async {
        let response = t.get(url, headers).await.ok()?;
        t.read_json(response).await.ok()
    };
    tokio::time::timeout(LOOKUP_TIMEOUT, get)
        .await
        .ok()
        .flatten()
}

/// The context a model list reports for `model` (or for its only model): llama-cpp-python and
/// llama-server put it under `meta` (`n_ctx`, else `n_ctx_train`), vLLM as `max_model_len`,
/// others as `context_length` or `context_window`.
fn from_models(list: &Value, model: &str) -> Option<u32> {
    let data = list["data"].as_array()?;
    let entry = data
        .iter()
        .find(|m| m["id"].as_str() == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    [
        &entry["meta"]["n_ctx"],
        &entry["meta"]["n_ctx_train"],
        &entry["max_model_len"],
        &entry["context_length"],
        &entry["context_window"],
        &entry["n_ctx"],
    ]
    .into_iter()
    .find_map(tokens)
}

/// llama-server's `/props`: `default_generation_settings.n_ctx`, or `n_ctx` at the top.
fn from_props(props: &Value) -> Option<u32> {
    tokens(&props["default_generation_settings"]["n_ctx"]).or_else(|| tokens(&props["n_ctx"]))
}

fn tokens(v: &Value) -> Option<u32> {
    v.as_u64()
        .filter(|&n| n >= 256)
        .and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_server_s_way_of_saying_its_context_is_read() {
        let llama_server =
            json!({"data": [{"id": "gemma", "meta": {"n_ctx_train": 32768, "n_vocab": 262144}}]});
        assert_eq!(from_models(&llama_server, "other-name"), Some(32_768));
        let vllm = json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 8192}]});
        assert_eq!(from_models(&vllm, "b"), Some(8_192));
        // Several models, none named: no guess.
        assert_eq!(from_models(&vllm, "c"), None);
        let props = json!({"default_generation_settings": {"n_ctx": 8192}});
        assert_eq!(from_props(&props), Some(8_192));
        assert_eq!(from_props(&json!({"n_ctx": -1})), None);
        assert_eq!(cap_for(8_192), 4_096);
        assert_eq!(cap_for(512), 512);
    }
}
