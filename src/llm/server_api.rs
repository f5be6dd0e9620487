//! What a local server says it accepts, before any call is refused: servers built on FastAPI
//! (llama-cpp-python, vLLM) publish their request schema at `/openapi.json`, and its
//! `response_format` names the types they take. llama-cpp-python 0.3.36 lists only `text` and
//! `json_object` (with a `schema` field beside the type), so pai starts it in
//! `json_object+schema` instead of sending `json_schema` and being answered with HTTP 500.
//! A server that publishes nothing is negotiated call by call, as before.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::compat::FormatMode;
use super::transport::Transport;

/// How long the look-up may take; a server that does not answer it quickly is left alone.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The strongest mode the server's published request schema admits, if it publishes one that
/// describes `response_format`.
pub(crate) async fn declared_format(t: &Transport, headers: HeaderMap) -> Option<FormatMode> {
    let url = format!("{}/openapi.json", t.origin);
    let get = async {
        let response = t.get(&url, headers).await.ok()?;
        t.read_json(response).await.ok()
    };
    let doc = tokio::time::timeout(LOOKUP_TIMEOUT, get)
        .await
        .ok()
        .flatten()?;
    from_openapi(&doc)
}

/// The mode an OpenAPI document admits for chat completions' `response_format`.
pub(crate) fn from_openapi(doc: &Value) -> Option<FormatMode> {
    let paths = doc["paths"].as_object()?;
    let (_, op) = paths
        .iter()
        .find(|(path, _)| path.ends_with("/chat/completions"))?;
    let request = resolve(
        doc,
        &op["post"]["requestBody"]["content"]["application/json"]["schema"],
    );
    let format = request.first()?["properties"]["response_format"].clone();
    let mut types = Vec::new();
    let mut takes_schema = false;
    for alternative in resolve(doc, &format) {
        let t = &alternative["properties"]["type"];
        let named = t["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(t.get("const"))
            .filter_map(Value::as_str)
            .map(str::to_string);
        types.extend(named);
        takes_schema |= alternative["properties"].get("schema").is_some();
    }
    let has = |name: &str| types.iter().any(|t| t == name);
    if types.is_empty() || has("json_schema") {
        // Not described, or the strongest mode is offered: nothing to learn here.
        return None;
    }
    Some(match (has("json_object"), takes_schema) {
        (true, true) => FormatMode::JsonObjectSchema,
        (true, false) => FormatMode::JsonObject,
        (false, _) => FormatMode::Prompt,
    })
}

/// The object schemas `v` stands for: itself, or what its `$ref` names, or each alternative
/// of its `anyOf`/`oneOf` (nulls left out), a few levels deep.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut stack = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        if depth > 4 {
            continue;
        }
        if let Some(r) = v["$ref"].as_str() {
            let target = r.strip_prefix('#').and_then(|pointer| doc.pointer(pointer));
            if let Some(target) = target {
                stack.push((target, depth + 1));
            }
        } else if let Some(alts) = v["anyOf"].as_array().or_else(|| v["oneOf"].as_array()) {
            stack.extend(alts.iter().map(|a| (a, depth + 1)));
        } else if v["properties"].is_object() {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(format: Value) -> Value {
        json!({
            "paths": {"/v1/chat/completions": {"post": {"requestBody": {"content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Req"}}}}}}},
            "components": {"schemas": {
                "Req": {"type": "object", "properties": {"response_format": {"anyOf": [{"$ref": "#/components/schemas/Fmt"}, {"type": "null"}]}}},
                "Fmt": format
            }}
        })
    }

    #[test]
    fn the_published_types_decide_the_first_mode() {
        let llama_cpp_python = doc(json!({"type": "object", "properties": {
            "type": {"type": "string", "enum": ["text", "json_object"]},
            "schema": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}));
        assert_eq!(
            from_openapi(&llama_cpp_python),
            Some(FormatMode::JsonObjectSchema)
        );
        let json_only = doc(json!({"type": "object", "properties": {
            "type": {"type": "string", "enum": ["text", "json_object"]}}}));
        assert_eq!(from_openapi(&json_only), Some(FormatMode::JsonObject));
        let text_only = doc(json!({"type": "object", "properties": {
            "type": {"type": "string", "const": "text"}}}));
        assert_eq!(from_openapi(&text_only), Some(FormatMode::Prompt));
        let full = doc(json!({"type": "object", "properties": {
            "type": {"type": "string", "enum": ["text", "json_object", "json_schema"]}}}));
        assert_eq!(from_openapi(&full), None);
        assert_eq!(from_openapi(&json!({"paths": {}})), None);
        // A reference loop ends.
        let looped = doc(json!({"$ref": "#/components/schemas/Fmt"}));
        assert_eq!(from_openapi(&looped), None);
    }
}
