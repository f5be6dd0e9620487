//! The configuration commands and settings, run as the real binary with HOME and
//! XDG_CONFIG_HOME in a temporary directory: credentials storage, migration, corruption,
//! masking, settings precedence, and every kind of bad input (flags, values, files, folders).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

use crate::support;

use support::mock_llm::{MockLlm, Reply, Script};

const GEMINI_KEY: &str = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv";
const OPENAI_KEY: &str = "sk-proj-0123456789abcdefghijklmnopqrstuvwxyz";

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config_dir(&self) -> PathBuf {
        self.dir.path().join(".config/pai-code")
    }

    fn creds(&self) -> PathBuf {
        self.config_dir().join("credentials.json")
    }

    /// The binary with a hermetic environment: only PATH and HOME.
    fn pai(&self) -> Command {
        let mut cmd = Command::cargo_bin("pai").unwrap();
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", self.dir.path());
        cmd.current_dir(self.dir.path());
        cmd
    }

    fn write_creds(&self, text: &str, mode: u32) {
        fs::create_dir_all(self.config_dir()).unwrap();
        fs::set_permissions(self.config_dir(), fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(self.creds(), text).unwrap();
        fs::set_permissions(self.creds(), fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect()
}

/// The value shown for a setting by `pai config show`, e.g. `model` -> `("x", "flag")`.
fn shown(out: &Output, name: &str) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{stdout}"));
    let rest = line.trim_start()[name.len()..].trim();
    let (value, source) = rest.rsplit_once('(').unwrap();
    (
        value.trim().to_string(),
        source.trim_end_matches(')').to_string(),
    )
}

#[test]
fn set_creates_private_directory_and_file_in_version_2() {
    let home = Home::new();
    let out = home
        .pai()
        .args(["config", "set", GEMINI_KEY])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&home.config_dir()), 0o700);
    assert_eq!(mode(&home.creds()), 0o600);
    let v = json(&home.creds());
    assert_eq!(v["version"], 2);
    assert_eq!(v["keys"]["gemini"], GEMINI_KEY);
    assert!(leftovers(&home.config_dir()).is_empty());
}

#[test]
fn xdg_config_home_is_honoured() {
    let home = Home::new();
    let xdg = home.dir.path().join("xdg");
    let out = home
        .pai()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "set", GEMINI_KEY])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(xdg.join("pai-code/credentials.json").is_file());
    assert!(!home.creds().exists());
    let out = home
        .pai()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "path"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        xdg.join("pai-code/credentials.json").to_str().unwrap()
    );
}

#[test]
fn set_replaces_the_file_atomically_and_keeps_other_providers() {
    let home = Home::new();
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    let before = fs::metadata(home.creds()).unwrap().ino();
    home.pai()
        .args(["config", "set", OPENAI_KEY, "--provider", "openai"])
        .assert()
        .success();
    let after = fs::metadata(home.creds()).unwrap().ino();
    assert_ne!(
        before, after,
        "the file must be replaced by rename, not rewritten in place"
    );
    let v = json(&home.creds());
    assert_eq!(v["keys"]["gemini"], GEMINI_KEY);
    assert_eq!(v["keys"]["openai"], OPENAI_KEY);
    assert_eq!(mode(&home.creds()), 0o600);
    assert!(leftovers(&home.config_dir()).is_empty());
}

#[test]
fn remove_forgets_one_provider() {
    let home = Home::new();
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    home.pai()
        .args(["config", "set", OPENAI_KEY, "--provider", "openai"])
        .assert()
        .success();
    home.pai()
        .args(["config", "remove", "--provider", "gemini"])
        .assert()
        .success();
    let v = json(&home.creds());
    assert!(v["keys"].get("gemini").is_none());
    assert_eq!(v["keys"]["openai"], OPENAI_KEY);
}

#[test]
fn key_from_stdin_and_empty_key_refused() {
    let home = Home::new();
    let out = home
        .pai()
        .args(["config", "set"])
        .write_stdin(format!("  {GEMINI_KEY}\n"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(&home.creds())["keys"]["gemini"], GEMINI_KEY);

    let other = Home::new();
    for args in [vec!["config", "set", ""], vec!["config", "set", "   "]] {
        let out = other.pai().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("the key is empty"), "{}", text(&out));
    }
    let out = other
        .pai()
        .args(["config", "set"])
        .write_stdin("\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !other.creds().exists(),
        "nothing may be written for an empty key"
    );
}

#[test]
fn gemini_shape_is_a_warning_on_set() {
    let home = Home::new();
    let out = home
        .pai()
        .args(["config", "set", "not-a-gemini-key-at-all-123"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        text(&out).contains("does not look like a Gemini key"),
        "{}",
        text(&out)
    );
    assert!(home.creds().exists());
}

#[test]
fn validate_refuses_a_malformed_gemini_key_and_a_missing_key() {
    let home = Home::new();
    let out = home.pai().args(["config", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no gemini API key"), "{}", text(&out));
    home.pai()
        .args(["config", "set", "xyzzy-not-a-gemini-key-000"])
        .assert()
        .success();
    let out = home.pai().args(["config", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("malformed"), "{}", text(&out));
}

#[test]
fn version_1_migrates_to_the_default_key_once() {
    let home = Home::new();
    let v1 = r#"{"version": 1, "keys": {"personal": "AIzaPERSONAL000000000000", "work": "AIzaWORK0000000000000000"}, "default": "work"}"#;
    home.write_creds(v1, 0o600);
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("migrated"), "{}", text(&out));
    let v = json(&home.creds());
    assert_eq!(v["version"], 2);
    assert_eq!(v["keys"]["gemini"], "AIzaWORK0000000000000000");
    assert_eq!(
        fs::read_to_string(home.config_dir().join("credentials.json.v1.bak")).unwrap(),
        v1
    );
    let again = home.pai().args(["config", "show"]).output().unwrap();
    assert!(
        !text(&again).contains("migrated"),
        "the notice is shown once: {}",
        text(&again)
    );
}

#[test]
fn version_1_without_default_takes_the_first_key_in_file_order() {
    let home = Home::new();
    home.write_creds(r#"{"version": 1, "keys": {"zulu": "AIzaZULU0000000000000000", "alpha": "AIzaALPHA000000000000000"}}"#, 0o600);
    home.pai().args(["config", "show"]).assert().success();
    assert_eq!(
        json(&home.creds())["keys"]["gemini"],
        "AIzaZULU0000000000000000"
    );
}

#[test]
fn thesis_version_2_shape_still_loads() {
    let home = Home::new();
    home.write_creds(
        &format!(r#"{{"version": 2, "api_key": "{GEMINI_KEY}"}}"#),
        0o600,
    );
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert!(out.status.success());
    assert!(text(&out).contains("AIzaSy...StUv"), "{}", text(&out));
}

#[test]
fn corrupt_files_are_reported_and_preserved() {
    let cases = [
        ("invalid_json", "{\"version\": 2, \"api_key\": "),
        ("wrong_type", r#"{"version": 2, "api_key": 42}"#),
        ("keys_not_object", r#"{"version": 2, "keys": ["a"]}"#),
        (
            "unknown_version",
            r#"{"version": 3, "api_key": "AIzaSyXXXXXXXXXXXXXXXXXX"}"#,
        ),
        ("version_string", r#"{"version": "2"}"#),
        ("not_object", "[1, 2]"),
    ];
    for (name, body) in cases {
        let home = Home::new();
        home.write_creds(body, 0o600);
        let out = home.pai().args(["config", "show"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
        assert!(text(&out).contains("is corrupt"), "{name}: {}", text(&out));
        assert_eq!(
            fs::read_to_string(home.creds()).unwrap(),
            body,
            "{name}: the file must be left untouched"
        );

        // `config set` repairs it, keeping the old bytes in a .bak.
        let out = home
            .pai()
            .args(["config", "set", GEMINI_KEY])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert_eq!(
            fs::read_to_string(home.config_dir().join("credentials.json.bak")).unwrap(),
            body,
            "{name}"
        );
        assert_eq!(json(&home.creds())["keys"]["gemini"], GEMINI_KEY, "{name}");
    }
}

#[test]
fn an_existing_backup_is_never_overwritten() {
    let home = Home::new();
    home.write_creds("garbage one", 0o600);
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    home.write_creds("garbage two", 0o600);
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    assert_eq!(
        fs::read_to_string(home.config_dir().join("credentials.json.bak")).unwrap(),
        "garbage one"
    );
    assert_eq!(
        fs::read_to_string(home.config_dir().join("credentials.json.bak.2")).unwrap(),
        "garbage two"
    );
}

#[test]
fn open_permissions_are_tightened_and_reported() {
    let home = Home::new();
    home.write_creds(
        &format!(r#"{{"version": 2, "keys": {{"gemini": "{GEMINI_KEY}"}}}}"#),
        0o644,
    );
    fs::set_permissions(home.config_dir(), fs::Permissions::from_mode(0o755)).unwrap();
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("tightened it to 0600"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("to 0700"), "{}", text(&out));
    assert_eq!(mode(&home.creds()), 0o600);
    assert_eq!(mode(&home.config_dir()), 0o700);
}

#[test]
fn unreadable_credentials_are_reported() {
    let home = Home::new();
    // A directory where the file should be cannot be read as credentials by anyone, root included.
    fs::create_dir_all(home.creds()).unwrap();
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("is not a regular file"),
        "{}",
        text(&out)
    );
    assert!(home.creds().is_dir(), "left as it was");

    if unsafe_is_root() {
        println!(
            "SKIPPED mode-000 half of unreadable_credentials_are_reported: running as root, which reads any file"
        );
        return;
    }
    let home = Home::new();
    home.write_creds(r#"{"version": 2}"#, 0o000);
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("cannot read"), "{}", text(&out));
}

fn unsafe_is_root() -> bool {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

#[test]
fn a_config_directory_that_is_a_file_is_an_error_and_kept() {
    let home = Home::new();
    fs::create_dir_all(home.dir.path().join(".config")).unwrap();
    fs::write(home.config_dir(), "my notes").unwrap();
    for args in [vec!["config", "set", GEMINI_KEY], vec!["config", "show"]] {
        let out = home.pai().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("is a file"), "{}", text(&out));
    }
    assert_eq!(fs::read_to_string(home.config_dir()).unwrap(), "my notes");
}

#[test]
fn home_unset_is_a_clear_error() {
    let home = Home::new();
    let out = home
        .pai()
        .env_remove("HOME")
        .args(["config", "set", GEMINI_KEY])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("HOME is not set"), "{}", text(&out));
}

#[test]
fn the_full_key_never_appears_in_any_output() {
    let home = Home::new();
    // A local mock stands in for the provider: no test reaches the internet.
    let mock = MockLlm::start(Script::new());
    let base = mock.base_url(pai::llm::ProviderKind::Gemini);
    let outputs = [
        home.pai()
            .args(["config", "set", GEMINI_KEY])
            .output()
            .unwrap(),
        home.pai().args(["config", "show"]).output().unwrap(),
        home.pai()
            .args(["config", "validate", "--base-url", &base])
            .output()
            .unwrap(),
        home.pai().args(["config", "path"]).output().unwrap(),
        home.pai()
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .args(["config", "show"])
            .output()
            .unwrap(),
        home.pai()
            .args(["run", "hello", "--base-url", &base])
            .output()
            .unwrap(),
    ];
    for out in &outputs {
        let all = text(out);
        assert!(
            !all.contains(GEMINI_KEY) && !all.contains(OPENAI_KEY),
            "key leaked: {all}"
        );
    }
    assert!(text(&outputs[1]).contains("AIzaSy...StUv"));
    assert!(text(&outputs[4]).contains("sk-pro...wxyz"));
    assert!(text(&outputs[4]).contains("environment (OPENAI_API_KEY)"));
}

#[test]
fn environment_key_takes_precedence_over_the_file() {
    let home = Home::new();
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    let env_key = "AIzaSyENVENVENVENVENVENVENVzzzz";
    let out = home
        .pai()
        .env("GEMINI_API_KEY", env_key)
        .args(["config", "show"])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(
        all.contains("AIzaSy...zzzz  (environment (GEMINI_API_KEY))"),
        "{all}"
    );
}

#[test]
fn settings_precedence_flag_env_file_default() {
    let home = Home::new();
    fs::create_dir_all(home.config_dir()).unwrap();
    fs::write(
        home.config_dir().join("config.toml"),
        "model = \"file-model\"\ntemperature = 0.7\nprovider = \"anthropic\"\n",
    )
    .unwrap();

    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(
        shown(&out, "model"),
        ("file-model".into(), "config file".into())
    );
    assert_eq!(
        shown(&out, "temperature"),
        ("0.7".into(), "config file".into())
    );
    assert_eq!(
        shown(&out, "provider"),
        ("anthropic".into(), "config file".into())
    );

    let out = home
        .pai()
        .env("PAI_MODEL", "env-model")
        .env("PAI_PROVIDER", "openai")
        .args(["config", "show"])
        .output()
        .unwrap();
    assert_eq!(
        shown(&out, "model"),
        ("env-model".into(), "environment".into())
    );
    assert_eq!(
        shown(&out, "provider"),
        ("openai".into(), "environment".into())
    );

    let out = home
        .pai()
        .env("PAI_MODEL", "env-model")
        .args([
            "config",
            "show",
            "--model",
            "flag-model",
            "--provider",
            "gemini",
        ])
        .output()
        .unwrap();
    assert_eq!(shown(&out, "model"), ("flag-model".into(), "flag".into()));
    assert_eq!(shown(&out, "provider"), ("gemini".into(), "flag".into()));

    let bare = Home::new();
    let out = bare.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(
        shown(&out, "model"),
        ("gemini-2.5-flash-lite".into(), "default".into())
    );
    assert_eq!(shown(&out, "temperature"), ("0.3".into(), "default".into()));
    assert_eq!(shown(&out, "provider"), ("gemini".into(), "default".into()));
}

#[test]
fn temperature_is_clamped_and_bad_environment_values_warn() {
    let home = Home::new();
    let out = home
        .pai()
        .args(["config", "show", "--temperature", "9"])
        .output()
        .unwrap();
    assert_eq!(shown(&out, "temperature"), ("2".into(), "flag".into()));
    let out = home
        .pai()
        .args(["config", "show", "--temperature", "-1"])
        .output()
        .unwrap();
    assert_eq!(shown(&out, "temperature"), ("0".into(), "flag".into()));

    let out = home
        .pai()
        .env("PAI_TEMPERATURE", "abc")
        .env("PAI_MODIFY_THRESHOLD", "-3")
        .args(["config", "show"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let all = text(&out);
    assert!(
        all.contains("warning: ignoring PAI_TEMPERATURE=abc"),
        "{all}"
    );
    assert!(
        all.contains("warning: ignoring PAI_MODIFY_THRESHOLD=-3"),
        "{all}"
    );
    assert_eq!(shown(&out, "temperature"), ("0.3".into(), "default".into()));
    assert!(all.contains("modify threshold  500 lines"), "{all}");
}

#[test]
fn a_malformed_settings_file_is_a_configuration_error() {
    let home = Home::new();
    fs::create_dir_all(home.config_dir()).unwrap();
    fs::write(home.config_dir().join("config.toml"), "temprature = 0.2\n").unwrap();
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("config.toml is not valid"),
        "{}",
        text(&out)
    );
}

#[test]
fn run_writable_is_shown_expanded_and_unsafe_entries_are_refused() {
    let home = Home::new();
    fs::create_dir_all(home.config_dir()).unwrap();
    fs::write(
        home.config_dir().join("config.toml"),
        "[run]\nwritable = [\"~/.npm\", \"~/.config\", \"cache\"]\n",
    )
    .unwrap();
    let out = home.pai().args(["config", "show"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    // ~/.npm does not exist, so it is shown as written, with HOME expanded.
    let npm = home.dir.path().join(".npm");
    assert!(
        t.contains(&format!(
            "RUN may write     the project, temporary directories, {}\n",
            npm.display()
        )),
        "{t}"
    );
    assert!(
        t.contains("ignoring run.writable entry `~/.config`")
            && t.contains("pai's own configuration"),
        "{t}"
    );
    assert!(
        t.contains("ignoring run.writable entry `cache`") && t.contains("absolute path"),
        "{t}"
    );
}

#[test]
fn unknown_subcommands_flags_and_values_are_usage_errors() {
    let home = Home::new();
    for args in [
        vec!["frobnicate"],
        vec!["--frobnicate"],
        vec!["run"],
        vec!["config", "set", "x", "--provider", "mistral"],
        vec!["auto", "--temperature", "warm"],
        vec!["completions", "tcsh"],
        vec!["config", "show", "--base-url", "ftp://example"],
    ] {
        let out = home.pai().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(!out.stderr.is_empty(), "{args:?} must explain itself");
    }
}

#[test]
fn completions_are_generated() {
    let home = Home::new();
    let out = home.pai().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("_pai()") && script.contains("config"),
        "{script}"
    );
}

#[test]
fn help_and_version_succeed() {
    let home = Home::new();
    let out = home.pai().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("pai "));
    let out = home.pai().arg("--help").output().unwrap();
    assert!(out.status.success());
    for command in [
        "auto",
        "run",
        "config",
        "undo",
        "redo",
        "log",
        "completions",
    ] {
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(command),
            "help lists {command}"
        );
    }
}

#[test]
fn validate_makes_one_real_call_and_reports_the_providers_answer() {
    let home = Home::new();
    home.pai()
        .args(["config", "set", GEMINI_KEY])
        .assert()
        .success();
    let mock = MockLlm::start(
        Script::new()
            .require_key(GEMINI_KEY)
            .fallback(Reply::chat("ok")),
    );
    let base = mock.base_url(pai::llm::ProviderKind::Gemini);
    let out = home
        .pai()
        .args(["config", "validate", "--base-url", &base])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("accepted"), "{}", text(&out));
    // The model lookup, then one tiny structured call with pai's reply schema.
    assert_eq!(mock.requests().len(), 2, "{:?}", mock.requests());
    assert_eq!(mock.requests()[0].method, "GET");
    assert_eq!(mock.calls(), 1, "one generation");
    assert!(text(&out).contains("Structured output:"), "{}", text(&out));
    assert!(
        mock.requests().iter().all(|r| r.key_is(GEMINI_KEY)),
        "the key travels in its header"
    );
    assert!(!mock.any_url_contains(GEMINI_KEY), "never in the URL");

    let wrong = Home::new();
    wrong
        .pai()
        .args(["config", "set", "AIzaSyWRONGWRONGWRONGWRONG00"])
        .assert()
        .success();
    let out = wrong
        .pai()
        .args(["config", "validate", "--base-url", &base])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a rejected key is a configuration error: {}",
        text(&out)
    );
    assert!(text(&out).to_lowercase().contains("key"), "{}", text(&out));
    assert!(!text(&out).contains("AIzaSyWRONGWRONGWRONGWRONG00"));

    // A local OpenAI-compatible server needs no key.
    let open = MockLlm::start(Script::new().fallback(Reply::chat("ok")));
    let local = Home::new();
    let out = local
        .pai()
        .args([
            "config",
            "validate",
            "--provider",
            "openai",
            "--base-url",
            &open.base_url(pai::llm::ProviderKind::OpenAi),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(open.calls(), 1, "one generation: {:?}", open.requests());
    assert!(
        text(&out).contains("Structured output: json_schema (found by negotiation)"),
        "{}",
        text(&out)
    );
}

/// `pai config validate` against a server that refuses the first mode: it reports the mode
/// it found, and a session after it starts there (the record is shared); a server that
/// refuses every mode gets the exact failure and a hint.
#[test]
fn validate_reports_the_mode_found_and_the_exact_failure() {
    let home = Home::new();
    let mock = MockLlm::start(
        Script::new()
            .reject_response_format(&["json_schema"])
            .fallback(Reply::chat("ok")),
    );
    let base = mock.base_url(pai::llm::ProviderKind::OpenAi);
    let validate = |home: &Home| {
        home.pai()
            .args([
                "config",
                "validate",
                "--provider",
                "openai",
                "--base-url",
                &base,
            ])
            .output()
            .unwrap()
    };
    let out = validate(&home);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Structured output: json_object+schema (found by negotiation)"),
        "{}",
        text(&out)
    );
    assert_eq!(mock.calls(), 2);
    let again = validate(&home);
    assert!(
        text(&again).contains("json_object+schema (remembered from an earlier run)"),
        "{}",
        text(&again)
    );
    assert_eq!(mock.calls(), 3, "no refused call the second time");

    let refuses =
        MockLlm::start(Script::new().reject_response_format(&["json_schema", "json_object"]));
    let out = Home::new()
        .pai()
        .args([
            "config",
            "validate",
            "--provider",
            "openai",
            "--structured-output",
            "json_object",
            "--base-url",
            &refuses.base_url(pai::llm::ProviderKind::OpenAi),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("structured call failed"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("structured_output is set to json_object"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("hint:"), "{}", text(&out));
}

/// `pai config show` prints the model-call settings with their sources.
#[test]
fn show_prints_the_model_call_settings_and_their_sources() {
    let home = Home::new();
    let out = home
        .pai()
        .env("PAI_STRUCTURED_OUTPUT", "prompt")
        .env("PAI_REQUEST_TIMEOUT", "900")
        .args([
            "config",
            "show",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("structured output prompt"), "{t}");
    assert!(t.contains("request timeout   900 s"), "{t}");
    assert!(t.contains("output limit      16384 tokens"), "{t}");
    assert!(
        t.contains("lowered to half the context a local server reports"),
        "{t}"
    );
}

/// A host that accepts the connection and never answers: `config validate` gives up within
/// seconds (not the 180 s a generation may take) and says which host did not answer.
#[test]
fn validate_gives_up_on_a_silent_host_quickly_and_names_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accept and hold every connection without a byte of answer.
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < until && held.len() < 4 {
            if let Ok((s, _)) = listener.accept() {
                held.push(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        held
    });
    let home = Home::new();
    let base = format!("http://{addr}/v1");
    let started = std::time::Instant::now();
    let out = home
        .pai()
        .args([
            "config",
            "validate",
            "--provider",
            "openai",
            "--base-url",
            &base,
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    assert!(text(&out).contains(&base), "{}", text(&out));
    assert!(
        text(&out).contains("did not answer in time"),
        "{}",
        text(&out)
    );
    drop(holder);
}
