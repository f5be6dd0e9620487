#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]
//! `cargo run --release --example eval -- --provider P [--model M] [--base-url URL]`: pai's
//! evaluation against a real model (the provider's key from its usual variable or `pai config
//! set`), or against the mock server with `--mock` (or when no key variable is set and no
//! `--base-url` is given). Prints a Markdown table: per task the result, model calls, input and
//! output tokens and seconds, and the totals. Exit 0 when every task passed.

#[allow(dead_code)]
#[path = "core.rs"]
mod core;
#[path = "../support/mock_llm.rs"]
mod mock_llm;

use std::path::{Path, PathBuf};
use std::process::Command;

use mock_llm::{MockLlm, Script};
use pai::llm::ProviderKind;

/// The key mock runs pass (the mock accepts any).
const TEST_KEY: &str = "eval-mock-key-0123456789";

struct Args {
    provider: ProviderKind,
    model: Option<String>,
    base_url: Option<String>,
    mock: bool,
    only: Vec<String>,
    pai: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: eval [--provider gemini|openai|anthropic] [--model M] [--base-url URL] [--mock] [--only NAME,...] [--pai PATH]"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        provider: ProviderKind::Gemini,
        model: None,
        base_url: None,
        mock: false,
        only: Vec::new(),
        pai: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--provider" => a.provider = value().parse().unwrap_or_else(|_| usage()),
            "--model" => a.model = Some(value()),
            "--base-url" => a.base_url = Some(value()),
            "--mock" => a.mock = true,
            "--only" => a.only = value().split(',').map(str::to_string).collect(),
            "--pai" => a.pai = Some(PathBuf::from(value())),
            _ => usage(),
        }
    }
    if a.base_url.is_none() && std::env::var_os(a.provider.key_env_var()).is_none() {
        a.mock = true;
    }
    a
}

/// The `pai` binary beside this example (`target/<profile>/pai`), built if missing.
fn pai_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PAI_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let pai = profile_dir.join("pai");
    if !pai.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--bin", "pai"]);
        if profile_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().unwrap();
        assert!(status.success(), "cannot build pai");
    }
    pai
}

fn main() {
    let args = parse();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval");
    let tasks: Vec<_> = core::load(&dir)
        .into_iter()
        .filter(|t| args.only.is_empty() || args.only.contains(&t.name))
        .collect();
    let pai = args.pai.clone().unwrap_or_else(pai_binary);
    let mut rows = Vec::new();
    for task in &tasks {
        eprintln!("{} ...", task.name);
        let (mock, target) = if args.mock {
            let script = Script::from_json(&task.script.to_string()).unwrap();
            let mock = MockLlm::start(script);
            let target = core::Target {
                pai: pai.clone(),
                provider: args.provider.name().to_string(),
                model: args.model.clone(),
                base_url: Some(mock.base_url(args.provider)),
                hermetic_key: Some((args.provider.key_env_var().to_string(), TEST_KEY.into())),
            };
            (Some(mock), target)
        } else {
            let target = core::Target {
                pai: pai.clone(),
                provider: args.provider.name().to_string(),
                model: args.model.clone(),
                base_url: args.base_url.clone(),
                hermetic_key: None,
            };
            (None, target)
        };
        rows.push(core::run(task, &target));
        drop(mock);
    }
    let title = format!(
        "pai evaluation: {} tasks, provider {}, model {}{}",
        rows.len(),
        args.provider,
        args.model
            .as_deref()
            .unwrap_or(args.provider.default_model()),
        if args.mock {
            " (mock server: scripted replies, not a real model)"
        } else {
            ""
        }
    );
    println!("{}", core::table(&title, &rows));
    std::process::exit(if rows.iter().all(|r| r.ok) { 0 } else { 1 });
}
