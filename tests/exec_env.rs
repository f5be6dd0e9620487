#![allow(clippy::unwrap_used, clippy::expect_used)]
//! RUN's child environment holds no provider keys, no `PAI_*` variables and no variable carrying
//! a named secret, checked from inside the child with `env`.
//!
//! This binary has exactly one test because it sets variables in pai's own process environment
//! (the one the child inherits), which is only sound while no other thread reads it.

use pai::exec::{RunOptions, run_command};

const PLANTED: &[(&str, &str)] = &[
    ("GEMINI_API_KEY", "gemini-key-value-1111"),
    ("GOOGLE_API_KEY", "google-key-value-2222"),
    ("OPENAI_API_KEY", "openai-key-value-3333"),
    ("ANTHROPIC_API_KEY", "anthropic-key-value-4444"),
    ("PAI_API_KEY", "pai-key-value-5555"),
    ("PAI_PROVIDER", "pai-setting-value-6666"),
    // A key pai loaded from its config file, sitting in an unrelated variable and inside a URL.
    ("UNRELATED_TOKEN", "config-file-secret-7777"),
    (
        "SERVICE_URL",
        "https://user:config-file-secret-7777@example.invalid/",
    ),
];

#[test]
fn child_environment_has_no_keys_pai_variables_or_secrets() {
    for (name, value) in PLANTED {
        // SAFETY: the only test in this binary, run before any runtime or other thread exists.
        unsafe { std::env::set_var(name, value) };
    }
    // SAFETY: as above.
    unsafe { std::env::set_var("PAI_TEST_INNOCENT_NEIGHBOUR", "x") };
    unsafe { std::env::set_var("EXEC_ENV_TEST_KEEP", "kept-value") };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let options = RunOptions {
        secrets: vec!["config-file-secret-7777".to_string()],
        ..RunOptions::default()
    };
    let out = runtime
        .block_on(run_command(root.path(), "env", &options))
        .unwrap();
    assert!(out.success(), "{out:?}");

    let names: Vec<&str> = out
        .output
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    for (name, value) in PLANTED {
        assert!(!names.contains(name), "{name} reached the child");
        assert!(
            !out.output.contains(value),
            "the value of {name} reached the child"
        );
    }
    assert!(
        !names.iter().any(|n| n.starts_with("PAI_")),
        "a PAI_ variable reached the child: {names:?}"
    );
    // The rest of the environment is inherited untouched.
    assert!(
        out.output.contains("EXEC_ENV_TEST_KEEP=kept-value\n"),
        "{}",
        out.output
    );
    assert!(names.contains(&"PATH"), "{names:?}");
}
