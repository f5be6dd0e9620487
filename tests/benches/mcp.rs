//! What MCP tools cost in tokens: scenario 1 ("make me a simple calculator in python") run
//! without MCP and with one configured server exposing ten tools (the test server's `--ten`),
//! per wire format; the difference is the tool list (and the TOOL fields of the schema) that
//! every call of such a session pays for.

use std::path::Path;

use pai::llm::ProviderKind;

use super::common::{Row, thousands};
use super::support::mock_llm::{MockLlm, Script};
use super::support::project::{Project, TEST_KEY};
use super::support::pty::build_example;

/// Input and output tokens of one S1 `pai run`, with the ten-tool server when `server` is set.
fn s1(kind: ProviderKind, server: Option<&Path>) -> (u64, u64, u64) {
    let p = Project::repo(None);
    if let Some(exe) = server {
        let dir = p.home.join(".config/pai-code");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[mcp_servers.tracker]\ncommand = {:?}\nargs = [\"--ten\"]\n",
                exe.display().to_string()
            ),
        )
        .unwrap();
    }
    let script = Script::from_file(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scenarios/create_calculator.json"),
    )
    .require_key(TEST_KEY);
    let mock = MockLlm::start(script);
    let run = p.run(
        &mock,
        kind,
        "make me a simple calculator in python",
        &["--yes", "--allow-run"],
    );
    assert_eq!(run.status(), "success", "{}", run.text());
    let system = mock
        .generation_requests()
        .first()
        .map(|r| r.system.len() as u64)
        .unwrap_or(0);
    (mock.input_tokens(), mock.output_tokens(), system)
}

/// The rows: per wire format, S1's input tokens with the ten-tool server, and the share of
/// them the tool list takes.
pub fn rows(python: bool) -> Vec<Row> {
    if !python {
        return vec![Row::new(
            "mcp",
            "S1 with a 10-tool server",
            "skipped: python3 not found",
        )];
    }
    let exe = build_example("mcp-test-server");
    let mut rows = Vec::new();
    for kind in ProviderKind::ALL {
        let (plain_in, plain_out, plain_sys) = s1(kind, None);
        let (tools_in, tools_out, tools_sys) = s1(kind, Some(&exe));
        let extra = tools_in.saturating_sub(plain_in);
        let share = extra as f64 * 100.0 / tools_in.max(1) as f64;
        rows.push(
            Row::new(
                "mcp",
                format!("S1 · {kind}: input tokens, 10-tool server vs none"),
                format!(
                    "{} in ({} out) vs {} in ({} out)",
                    thousands(tools_in),
                    thousands(tools_out),
                    thousands(plain_in),
                    thousands(plain_out)
                ),
            )
            .note(format!(
                "tool list +{} tokens = {share:.1}% of input; system prompt {} -> {} chars",
                thousands(extra),
                thousands(plain_sys),
                thousands(tools_sys)
            ))
            .target("tool list <= 1,500 tokens", extra <= 1_500),
        );
    }
    rows
}
