#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The mock LLM server as a program, for manual demos:
//!
//! ```text
//! cargo run --example mock-llm -- [SCRIPT.json] [--port N]
//! ```
//!
//! It prints the `--base-url` to use for each provider, then one line per request it answers,
//! and runs until interrupted. Without a script every request gets a short `chat` reply.

#[path = "mock_llm.rs"]
mod mock_llm;

use std::time::Duration;

use mock_llm::{MockLlm, Reply, Script};
use pai::llm::ProviderKind;

fn main() {
    if let Err(e) = run() {
        eprintln!("mock-llm: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut script_path = None;
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a number")?;
                port = value
                    .parse()
                    .map_err(|_| format!("--port: `{value}` is not a port number"))?;
            }
            "-h" | "--help" => {
                println!(
                    "usage: mock-llm [SCRIPT.json] [--port N]  (script format: fixtures/README.md)"
                );
                return Ok(());
            }
            other if script_path.is_none() => script_path = Some(other.to_string()),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let script = match &script_path {
        Some(path) => Script::load(path)?,
        None => Script::new().fallback(Reply::chat("Hello from the mock LLM server.")),
    };
    let mock = MockLlm::start_on(script, port)?;
    println!("mock LLM server listening on {}", mock.origin());
    for kind in ProviderKind::ALL {
        println!(
            "  pai auto --provider {kind} --base-url {}",
            mock.base_url(kind)
        );
    }
    println!("(any key is accepted unless the script sets require_key; Ctrl+C stops)");

    let mut shown = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        // A request is listed once it has been answered (its status is set).
        let requests = mock.requests();
        let answered = requests.iter().take_while(|r| r.status != 0).count();
        for r in &requests[shown.min(answered)..answered] {
            println!(
                "#{} {} {} -> {} {} (in {} / out {} / cached {} tokens; key in {})",
                r.index,
                r.method,
                r.url,
                r.status,
                r.answered,
                r.input_tokens,
                r.output_tokens,
                r.cached_tokens,
                r.auth_header.as_deref().unwrap_or("no header"),
            );
        }
        shown = answered;
    }
}
