//! Translating the caller's standard JSON Schema into each provider's dialect.
//!
//! Gemini's `responseSchema` takes a subset of the OpenAPI 3.0 schema object: upper-case type
//! names, `nullable` instead of `["T", "null"]`, no `additionalProperties`, `$ref`, `const` or
//! `oneOf`, object keywords only on objects. Unknown keywords there are a 400, so only a
//! whitelist survives. One rule cannot be converted away: every object must declare at least
//! one property (a free-form object is a 400 from Gemini), so schemas meant for all providers
//! should not contain free-form objects; Gemini also gets `propertyOrdering` so replies keep
//! the declared order. OpenAI gets the strict dialect (`strict: true`: closed objects, every
//! property required, optional ones nullable), so a malformed plan cannot be produced rather
//! than being repaired; its `null`s are dropped from the reply. Anthropic (tool
//! `input_schema`) takes standard JSON Schema; only `propertyOrdering` is removed for it.

use serde_json::{Map, Value, json};

/// Keywords Gemini's `responseSchema` accepts, after conversion.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "propertyOrdering",
];

/// The schema in Gemini's `responseSchema` dialect: each keyword is translated on its own,
/// then the object as a whole is made consistent (a type for enums, no keywords foreign to
/// the type, the declared property order, `required` limited to declared properties).
pub(crate) fn gemini(schema: &Value) -> Value {
    let Value::Object(src) = schema else {
        return json!({"type": "OBJECT"});
    };
    let mut out = Map::new();
    for (key, value) in src {
        gemini_keyword(&mut out, key, value);
    }
    if out.contains_key("enum") && !out.contains_key("type") {
        out.insert("type".into(), Value::String("STRING".into()));
    }
    drop_keywords_foreign_to_type(&mut out);
    keep_declared_order(&mut out);
    keep_declared_required(&mut out);
    Value::Object(out)
}

/// Translate one keyword of a standard schema into `out`, recursing into sub-schemas. Only
/// keywords Gemini accepts are written: anything else is dropped, since an unknown keyword is
/// a 400.
fn gemini_keyword(out: &mut Map<String, Value>, key: &str, value: &Value) {
    match key {
        "type" => gemini_type(out, value),
        "properties" => {
            if let Value::Object(props) = value {
                let converted = props
                    .iter()
                    .map(|(name, sub)| (name.clone(), gemini(sub)))
                    .collect();
                out.insert("properties".into(), Value::Object(converted));
            }
        }
        "items" => {
            out.insert("items".into(), gemini(value));
        }
        "anyOf" | "oneOf" => {
            if let Value::Array(options) = value {
                out.insert(
                    "anyOf".into(),
                    Value::Array(options.iter().map(gemini).collect()),
                );
            }
        }
        "const" => {
            if let Value::String(_) = value {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
        }
        "enum" => {
            // Gemini enums are string-only; other values would be a 400.
            if let Value::Array(values) = value
                && values.iter().all(Value::is_string)
            {
                out.insert("enum".into(), value.clone());
            }
        }
        k if GEMINI_KEYWORDS.contains(&k) => {
            out.insert(key.to_string(), value.clone());
        }
        _ => {}
    }
}

/// `type` in Gemini's form: upper case, and a `["T", "null"]` union becomes `T` with
/// `nullable: true` (Gemini has no type unions).
fn gemini_type(out: &mut Map<String, Value>, value: &Value) {
    match value {
        Value::String(t) => {
            out.insert("type".into(), Value::String(t.to_ascii_uppercase()));
        }
        Value::Array(types) => {
            let mut concrete = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            if let Some(t) = concrete.next() {
                out.insert("type".into(), Value::String(t.to_ascii_uppercase()));
            }
            if types.iter().any(|t| t == "null") {
                out.insert("nullable".into(), Value::Bool(true));
            }
        }
        _ => {}
    }
}

/// Gemini rejects object keywords on non-objects and `items` on non-arrays.
fn drop_keywords_foreign_to_type(out: &mut Map<String, Value>) {
    let ty = out.get("type").and_then(Value::as_str).map(str::to_string);
    if let Some(ty) = ty.as_deref() {
        if ty != "OBJECT" {
            for key in ["properties", "required", "propertyOrdering"] {
                out.remove(key);
            }
        }
        if ty != "ARRAY" {
            out.remove("items");
        }
    }
}

/// Gemini orders a reply's properties alphabetically unless told otherwise; keep the
/// declared order (the reply then reads intent, reply, analysis, steps as the schema says).
fn keep_declared_order(out: &mut Map<String, Value>) {
    if let (Some(Value::Object(props)), false) =
        (out.get("properties"), out.contains_key("propertyOrdering"))
    {
        let order: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
        out.insert("propertyOrdering".into(), Value::Array(order));
    }
}

/// `required` may only name declared properties.
fn keep_declared_required(out: &mut Map<String, Value>) {
    if let (Some(Value::Array(required)), Some(Value::Object(props))) =
        (out.get("required"), out.get("properties"))
    {
        let kept: Vec<Value> = required
            .iter()
            .filter(|r| r.as_str().is_some_and(|name| props.contains_key(name)))
            .cloned()
            .collect();
        out.insert("required".into(), Value::Array(kept));
    }
}

/// The schema in OpenAI's strict structured-output dialect: every object closed
/// (`additionalProperties: false`) and listing all its properties as required; a property
/// that was optional becomes nullable, so the model sends `null` where it has nothing (see
/// [`drop_nulls`]).
pub(crate) fn strict(schema: &Value) -> Value {
    let Value::Object(src) = standard(schema) else {
        return schema.clone();
    };
    let mut out = src.clone();
    if let Some(Value::Object(props)) = src.get("properties") {
        let required: Vec<&str> = src
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let converted: Map<String, Value> = props
            .iter()
            .map(|(name, sub)| {
                let sub = strict(sub);
                let sub = if required.contains(&name.as_str()) {
                    sub
                } else {
                    nullable(sub)
                };
                (name.clone(), sub)
            })
            .collect();
        out.insert(
            "required".into(),
            Value::Array(props.keys().map(|k| Value::String(k.clone())).collect()),
        );
        out.insert("properties".into(), Value::Object(converted));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = src.get("items") {
        out.insert("items".into(), strict(items));
    }
    Value::Object(out)
}

/// The same schema that also allows `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    match map.get("type").cloned() {
        Some(Value::String(t)) => {
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
            map.insert("type".into(), Value::Array(types));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
    Value::Object(map)
}

/// Remove `null` members from every object of a reply: a strict-mode reply says "absent" with
/// `null`, and callers expect the field to be missing.
pub(crate) fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// The schema for providers that take standard JSON Schema (OpenAI, Anthropic).
pub(crate) fn standard(schema: &Value) -> Value {
    match schema {
        Value::Object(src) => Value::Object(
            src.iter()
                .filter(|(k, _)| k.as_str() != "propertyOrdering")
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "properties" | "$defs" | "definitions" => match v {
                            Value::Object(props) => Value::Object(
                                props
                                    .iter()
                                    .map(|(name, sub)| (name.clone(), standard(sub)))
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                        "items" | "additionalProperties" | "not" => standard(v),
                        "anyOf" | "oneOf" | "allOf" | "prefixItems" => match v {
                            Value::Array(options) => {
                                Value::Array(options.iter().map(standard).collect())
                            }
                            other => other.clone(),
                        },
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A name usable as an OpenAI schema name and an Anthropic tool name (`[A-Za-z0-9_-]{1,64}`).
pub(crate) fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "reply".to_string()
    } else {
        cleaned
    }
}

/// The instruction appended to the system prompt when the server cannot be given the schema as
/// a parameter (OpenAI-compatible `json_object` and plain-text modes).
pub(crate) fn prompt_instruction(schema: &Value) -> String {
    format!(
        "\n\nAnswer with exactly one JSON object and nothing else: no prose, no markdown fences. The object must conform to this JSON Schema:\n{}",
        standard(schema)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "propertyOrdering": ["intent", "steps"],
            "properties": {
                "intent": {"type": "string", "enum": ["chat", "task"], "description": "kind"},
                "count": {"type": ["integer", "null"], "default": 3},
                "mode": {"const": "fast"},
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {"action": {"type": "string", "pattern": "^[A-Z]+$"}},
                        "required": ["action"]
                    }
                },
                "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                "levels": {"enum": [1, 2]}
            },
            "required": ["intent", "steps", "ghost"]
        })
    }

    #[test]
    fn gemini_dialect() {
        let g = gemini(&contract());
        assert_eq!(g["type"], "OBJECT");
        assert!(g.get("additionalProperties").is_none());
        assert!(g.get("$schema").is_none());
        assert_eq!(g["propertyOrdering"], json!(["intent", "steps"]));
        assert_eq!(g["properties"]["intent"]["type"], "STRING");
        assert_eq!(g["properties"]["intent"]["enum"], json!(["chat", "task"]));
        assert_eq!(g["properties"]["intent"]["description"], "kind");
        assert_eq!(
            g["properties"]["count"],
            json!({"type": "INTEGER", "nullable": true})
        );
        assert_eq!(
            g["properties"]["mode"],
            json!({"type": "STRING", "enum": ["fast"]})
        );
        let item = &g["properties"]["steps"]["items"];
        assert_eq!(item["type"], "OBJECT");
        assert!(item.get("additionalProperties").is_none());
        assert!(item["properties"]["action"].get("pattern").is_none());
        assert_eq!(g["properties"]["steps"]["minItems"], 1);
        assert_eq!(g["properties"]["either"]["anyOf"][1]["type"], "NUMBER");
        assert!(g["properties"]["levels"].get("enum").is_none());
        assert_eq!(g["required"], json!(["intent", "steps"]));
    }

    #[test]
    fn gemini_drops_object_and_array_keywords_from_other_types() {
        let g = gemini(&json!({
            "type": "string",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "items": {"type": "string"}
        }));
        assert_eq!(g, json!({"type": "STRING"}));
        let g = gemini(&json!({"type": "array", "items": {"type": "integer"}, "properties": {}}));
        assert_eq!(g, json!({"type": "ARRAY", "items": {"type": "INTEGER"}}));
    }

    #[test]
    fn standard_dialect_only_drops_property_ordering() {
        let s = standard(&contract());
        assert!(s.get("propertyOrdering").is_none());
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["properties"]["steps"]["items"]["properties"]["action"]["pattern"],
            "^[A-Z]+$"
        );
        let mut expected = contract();
        expected.as_object_mut().unwrap().remove("propertyOrdering");
        assert_eq!(s, expected);
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(safe_name("pai plan/v1"), "pai_plan_v1");
        assert_eq!(safe_name(""), "reply");
        assert_eq!(safe_name(&"x".repeat(100)).len(), 64);
    }
}
