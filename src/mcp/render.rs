//! The tool list as the model sees it: one compact line per tool (`server.tool(arg: type,
//! opt?: type): description`), sorted by server then tool so the system prompt stays
//! byte-identical between calls (and provider prompt caching keeps working), and cut to a
//! token budget with a note saying how many tools were left out.

use serde_json::{Map, Value};

/// Tokens the tool list may take in the system prompt.
pub const TOOL_LIST_TOKENS: usize = 1_500;
/// Characters per token, the same rough measure the context budget uses.
const CHARS_PER_TOKEN: usize = 4;
/// Longest description kept for one tool.
const DESCRIPTION_CHARS: usize = 160;
/// Longest argument list kept for one tool.
const ARGS_CHARS: usize = 300;

/// One tool a server offers, as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// Its input schema (a JSON Schema object).
    pub schema: Map<String, Value>,
}

/// Whether a tool's name and input schema are usable: a name the model can write back
/// exactly, and an object schema whose `properties` and `required` have the right shapes.
/// A tool failing this is left out with a warning, not the whole server.
pub fn check_tool(name: &str, schema: &Map<String, Value>) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 128
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    {
        return Err(format!("the tool name {name:?} is not usable"));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None => {}
        Some(other) => {
            return Err(format!(
                "tool {name}: its input schema must be of type \"object\", not {other}"
            ));
        }
    }
    match schema.get("properties") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return Err(format!("tool {name}: `properties` is not an object")),
    }
    match schema.get("required") {
        None => {}
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
        Some(_) => return Err(format!("tool {name}: `required` is not a list of names")),
    }
    Ok(())
}

/// The compact type of one property schema.
fn type_of(schema: &Value) -> String {
    let Some(obj) = schema.as_object() else {
        return "any".into();
    };
    if let Some(Value::Array(values)) = obj.get("enum") {
        let shown: Vec<String> = values.iter().take(6).map(Value::to_string).collect();
        let more = if values.len() > 6 { "|..." } else { "" };
        return format!("{}{more}", shown.join("|"));
    }
    match obj.get("type") {
        Some(Value::String(t)) if t == "array" => {
            format!(
                "{}[]",
                obj.get("items").map(type_of).unwrap_or("any".into())
            )
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".into(),
    }
}

/// `(query: string, limit?: integer)`.
fn arguments(schema: &Map<String, Value>) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get("properties") else {
        return "()".into();
    };
    let parts: Vec<String> = props
        .iter()
        .map(|(name, sub)| {
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{opt}: {}", type_of(sub))
        })
        .collect();
    let mut text = parts.join(", ");
    if text.chars().count() > ARGS_CHARS {
        text = text.chars().take(ARGS_CHARS).collect::<String>() + "...";
    }
    format!("({text})")
}

fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > DESCRIPTION_CHARS {
        line.chars().take(DESCRIPTION_CHARS).collect::<String>() + "..."
    } else {
        line
    }
}

/// The system prompt section listing `tools` within `budget_tokens`; empty when there are
/// none (the prompt is then exactly the one without MCP).
pub fn prompt_section(tools: &[ToolInfo], budget_tokens: usize) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&ToolInfo> = tools.iter().collect();
    sorted.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
    let mut out = String::from(
        "\n\nMCP tools (a step {\"action\": \"TOOL\", \"server\": S, \"tool\": T, \"arguments\": \
         \"<JSON object text>\"} calls one; the user approves each call; its result comes back \
         like a RUN's, so set observe to true when you need it):",
    );
    let budget = budget_tokens * CHARS_PER_TOKEN;
    let mut left_out = 0;
    for (i, tool) in sorted.iter().enumerate() {
        let description = one_line(&tool.description);
        let mut line = format!(
            "\n- {}.{}{}",
            tool.server,
            tool.name,
            arguments(&tool.schema)
        );
        if !description.is_empty() {
            line.push_str(": ");
            line.push_str(&description);
        }
        // Room for the note about what is left out.
        if out.len() + line.len() + 80 > budget {
            left_out = sorted.len() - i;
            break;
        }
        out.push_str(&line);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "\n({left_out} more tools not listed: over the prompt budget)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, name: &str, schema: Value) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            description: format!("Does {name}.\nSecond line."),
            schema: schema.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn the_section_is_sorted_compact_and_byte_stable() {
        let schema = json!({"type": "object", "properties": {
            "text": {"type": "string"}, "times": {"type": "integer"},
            "mode": {"enum": ["a", "b"]}, "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["text"]});
        let a = vec![
            tool("zeta", "echo", schema.clone()),
            tool("alpha", "sleep", json!({"type": "object"})),
            tool("alpha", "echo", schema.clone()),
        ];
        let mut b = a.clone();
        b.reverse();
        let text = prompt_section(&a, TOOL_LIST_TOKENS);
        assert_eq!(text, prompt_section(&b, TOOL_LIST_TOKENS));
        let alpha = text.find("- alpha.echo").unwrap();
        assert!(alpha < text.find("- alpha.sleep").unwrap());
        assert!(text.find("- alpha.sleep").unwrap() < text.find("- zeta.echo").unwrap());
        assert!(
            text.contains(
                "- alpha.echo(text: string, times?: integer, mode?: \"a\"|\"b\", tags?: string[]): Does echo. Second line."
            ),
            "{text}"
        );
        assert!(text.contains("- alpha.sleep(): Does sleep."), "{text}");
        assert_eq!(prompt_section(&[], TOOL_LIST_TOKENS), "");
    }

    #[test]
    fn the_budget_drops_tools_and_says_so() {
        let tools: Vec<ToolInfo> = (0..200)
            .map(|i| tool("s", &format!("t{i:03}"), json!({"type": "object"})))
            .collect();
        let text = prompt_section(&tools, 200);
        assert!(text.len() <= 200 * 4, "{}", text.len());
        assert!(text.contains("more tools not listed: over the prompt budget"));
        assert!(text.contains("- s.t000"));
        assert!(!text.contains("- s.t199"));
    }

    #[test]
    fn malformed_schemas_are_named() {
        let ok = json!({"type": "object", "properties": {}, "required": ["a"]});
        assert!(check_tool("echo", ok.as_object().unwrap()).is_ok());
        for (name, schema, expected) in [
            ("echo", json!({"type": "string"}), "of type \"object\""),
            ("echo", json!({"properties": []}), "`properties`"),
            ("echo", json!({"required": [1]}), "`required`"),
            ("bad name", json!({}), "not usable"),
        ] {
            let err = check_tool(name, schema.as_object().unwrap()).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }
}
