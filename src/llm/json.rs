//! Finding the reply object in what a model actually wrote: bare JSON, JSON in markdown fences,
//! JSON with prose around it, JSON with trailing commas, or a JSON string holding the object.
//! Structured-output modes make most replies bare JSON; this is the safety net for servers and
//! fallback modes that only ask politely.

use serde_json::Value;

use super::error::{LlmError, snippet};

/// Upper bound on the `{` positions tried, so adversarial text cannot make parsing quadratic.
const MAX_CANDIDATES: usize = 64;

/// Extracts the first JSON object from model output.
///
/// Tries, in order: the whole text; the contents of markdown code fences; each balanced
/// `{...}` region of the text. Each candidate is also retried with trailing commas removed.
/// A top-level JSON string whose content is an object is unwrapped.
pub fn extract_json(text: &str) -> Result<Value, LlmError> {
    let trimmed = text.trim().trim_start_matches('\u{feff}');
    if trimmed.is_empty() {
        return Err(LlmError::MalformedJson {
            detail: "the reply is empty".to_string(),
            snippet: String::new(),
        });
    }
    let mut first_error: Option<String> = None;
    let mut attempt = |candidate: &str| -> Option<Value> {
        match parse_object(candidate) {
            Ok(v) => Some(v),
            Err(e) => {
                first_error.get_or_insert(e);
                None
            }
        }
    };

    if let Some(v) = attempt(trimmed) {
        return Ok(v);
    }
    for fenced in fenced_blocks(trimmed) {
        if let Some(v) = attempt(fenced.trim()) {
            return Ok(v);
        }
    }
    let mut tried = 0;
    let mut resume_at = 0;
    for (start, _) in trimmed.match_indices('{') {
        if start < resume_at {
            continue;
        }
        if tried == MAX_CANDIDATES {
            break;
        }
        tried += 1;
        let candidate = &trimmed[start..];
        // `{"` starts what is meant as the reply object: if it fails, its nested objects are
        // fragments of a broken reply, not the reply; never return one of them.
        let object_like = candidate[1..].trim_start().starts_with('"');
        match balanced_end(candidate) {
            Some(end) => {
                if let Some(v) = attempt(&candidate[..end]) {
                    return Ok(v);
                }
                if object_like {
                    resume_at = start + end;
                }
            }
            None if object_like => {
                attempt(candidate);
                break;
            }
            None => {}
        }
    }
    Err(LlmError::MalformedJson {
        detail: first_error.unwrap_or_else(|| "no JSON object found".to_string()),
        snippet: snippet(trimmed, 120),
    })
}

/// Parses `candidate` as an object, tolerating trailing commas and one level of string wrapping.
fn parse_object(candidate: &str) -> Result<Value, String> {
    let parsed = serde_json::from_str::<Value>(candidate).or_else(|first| {
        let relaxed = strip_trailing_commas(candidate);
        if relaxed == candidate {
            Err(first)
        } else {
            serde_json::from_str::<Value>(&relaxed).map_err(|_| first)
        }
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(Value::String(inner)) if inner.trim_start().starts_with('{') => {
            match serde_json::from_str::<Value>(inner.trim()) {
                Ok(Value::Object(map)) => Ok(Value::Object(map)),
                _ => Err("a JSON string, not an object".to_string()),
            }
        }
        Ok(other) => Err(format!("a JSON {}, not an object", type_name(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The bodies of ``` fenced blocks (any info string), in order; an unclosed fence runs to the end.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // Skip the info string (`json`, `JSON`, ...) up to the end of the line.
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(after.len());
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                out.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                out.push(body);
                break;
            }
        }
    }
    out
}

/// Given text starting with `{`, the byte length of the balanced object (strings and escapes
/// respected), or `None` if it never closes.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Removes commas that directly precede `}` or `]` (whitespace between allowed), outside strings.
fn strip_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn plan() -> Value {
        json!({"intent": "task", "reply": "ok {braces} \"quoted\" ```", "steps": [{"action": "WRITE", "path": "a.py", "content": "x = {1, 2,}\n"}]})
    }

    #[test]
    fn bare_object() {
        assert_eq!(extract_json(&plan().to_string()).unwrap(), plan());
    }

    #[test]
    fn fenced_object_with_language_tag() {
        let text = format!("```json\n{:#}\n```", plan());
        assert_eq!(extract_json(&text).unwrap(), plan());
        let text = format!("Sure!\n```JSON\n{}\n```\nHope it helps.", plan());
        assert_eq!(extract_json(&text).unwrap(), plan());
    }

    #[test]
    fn unclosed_fence() {
        let text = format!("```json\n{}\n", plan());
        assert_eq!(extract_json(&text).unwrap(), plan());
    }

    #[test]
    fn prose_around_object_with_decoy_braces() {
        let text = format!(
            "I'll use {{name}} style. Here is the plan: {} -- done {{",
            plan()
        );
        assert_eq!(extract_json(&text).unwrap(), plan());
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        let text = r#"{"a": [1, 2, ], "b": {"c": "x,}", }, }"#;
        assert_eq!(
            extract_json(text).unwrap(),
            json!({"a": [1, 2], "b": {"c": "x,}"}})
        );
    }

    #[test]
    fn a_broken_object_never_yields_one_of_its_parts() {
        for text in [
            r#"{"a": {"b": 1}, "c": [1,,]}"#,
            r#"Plan: {"intent": "task", "analysis": {"x": 1}, "steps": [ "#,
            r#"```json
{"intent": "task" "analysis": {"x": 1}}
```"#,
        ] {
            assert!(
                matches!(extract_json(text), Err(LlmError::MalformedJson { .. })),
                "{text}"
            );
        }
        // A broken object followed by a good one: the good one is found.
        let text = r#"{"draft": [1,,]} then {"intent": "chat"}"#;
        assert_eq!(extract_json(text).unwrap(), json!({"intent": "chat"}));
    }

    #[test]
    fn string_wrapped_object() {
        let text = serde_json::to_string(&plan().to_string()).unwrap();
        assert_eq!(extract_json(&text).unwrap(), plan());
    }

    #[test]
    fn failures_are_typed_with_snippet() {
        for bad in [
            "",
            "   ",
            "no json here",
            "[1, 2, 3]",
            "{\"intent\": \"task\", \"steps\": [",
            "\"just a string\"",
        ] {
            match extract_json(bad) {
                Err(LlmError::MalformedJson { snippet, detail }) => {
                    assert!(snippet.chars().count() <= 121, "{snippet}");
                    assert!(!detail.is_empty());
                }
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn many_open_braces_stay_fast() {
        let text = "{".repeat(200_000);
        let started = std::time::Instant::now();
        assert!(extract_json(&text).is_err());
        // Generous bound: only guards against quadratic blow-up (seconds to minutes).
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(".*", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn round_trips_any_object_in_any_wrapping(
            map in prop::collection::btree_map("[a-z]{1,8}", arb_json(), 0..5),
            prefix in "[^{`]{0,40}",
            suffix in "[^{`]{0,40}",
            wrap in 0u8..3,
        ) {
            let value = Value::Object(map.into_iter().collect());
            let body = if wrap == 1 { format!("{value:#}") } else { value.to_string() };
            let text = match wrap {
                0 => body,
                1 => format!("```json\n{body}\n```"),
                _ => format!("{prefix} {body} {suffix}"),
            };
            prop_assert_eq!(extract_json(&text).unwrap(), value);
        }
    }
}
