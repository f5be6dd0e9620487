//! Resolution of the effective settings: flags > environment > config file > defaults.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ApiKey, ConfigDir, CredentialStore, Env, FileSettings, KeySource};
use crate::error::Error;
use crate::llm::ProviderKind;

/// Default sampling temperature.
pub const DEFAULT_TEMPERATURE: f32 = 0.3;
/// Default diff-guard line threshold.
pub const DEFAULT_MODIFY_THRESHOLD: usize = 500;
/// Default of the `context_tokens` setting: what the first call of a turn may carry in a
/// project too big to list whole (the repository map's budget).
pub const DEFAULT_CONTEXT_TOKENS: usize = 8_000;
/// Default diff-guard ratio threshold.
pub const DEFAULT_MODIFY_MAX_RATIO: f64 = 0.5;
/// Default RUN timeout.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings given on the command line (absent = not given).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--provider`.
    pub provider: Option<ProviderKind>,
    /// `--model`.
    pub model: Option<String>,
    /// `--temperature`.
    pub temperature: Option<f32>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--yes`.
    pub yes: bool,
    /// `--allow-run`.
    pub allow_run: bool,
    /// `--structured-output` (a mode's name or `auto`).
    pub structured_output: Option<String>,
}

/// Where a resolved value came from, shown by `pai config show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env,
    /// The config file.
    File,
    /// The built-in default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Flag => "flag",
            Source::Env => "environment",
            Source::File => "config file",
            Source::Default => "default",
        })
    }
}

/// How long `pai gc` keeps what it prunes, unless `history_days` says otherwise.
pub const DEFAULT_HISTORY_DAYS: u32 = 30;

/// The effective settings the rest of the program receives. Nothing else reads the
/// environment or the config file.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Provider (wire format).
    pub provider: ProviderKind,
    /// Model name.
    pub model: String,
    /// Sampling temperature, within 0.0–2.0.
    pub temperature: f32,
    /// Provider origin, when not the provider's default.
    pub base_url: Option<String>,
    /// Diff-guard line threshold.
    pub modify_threshold: usize,
    /// Diff-guard ratio threshold.
    pub modify_max_ratio: f64,
    /// Tokens the first call may carry in a big project (the repository map's budget).
    pub context_tokens: usize,
    /// Approve plans without asking.
    pub yes: bool,
    /// Also approve RUN commands without asking.
    pub allow_run: bool,
    /// Extra deny-list patterns from the config file.
    pub extra_deny: Vec<String>,
    /// RUN timeout.
    pub run_timeout: Duration,
    /// Days `pai gc` keeps undone plans, discarded sessions and session logs.
    pub history_days: u32,
    /// RUN command prefixes approved without asking.
    pub run_allow: Vec<String>,
    /// RUN prefixes approved in one project only, by project root (`[projects."<root>"]`).
    pub project_run_allow: BTreeMap<String, Vec<String>>,
    /// Sessions run in their own linked worktree by default (`worktree = true`).
    pub worktree: bool,
    /// What to copy into a new worktree, by project root (`worktree_include`).
    pub project_worktree_include: BTreeMap<String, Vec<String>>,
    /// The settings file, where an allow-list rule answered at the RUN prompt is saved
    /// (`None`: no configuration directory could be located).
    pub settings_file: Option<PathBuf>,
    /// Refuse RUN when it cannot be confined.
    pub require_sandbox: bool,
    /// Directories outside the project a confined RUN command may also write to: absolute,
    /// symlinks resolved, never the root or anything holding pai's own configuration.
    pub run_writable: Vec<PathBuf>,
    /// MCP servers from config.toml, checked.
    pub mcp_servers: Vec<super::mcp_servers::ServerSpec>,
    /// The API key for `provider`, if any.
    pub api_key: Option<ApiKey>,
    /// Every other key pai can see (the other providers' variables and stored keys): never
    /// used for calls, but redacted wherever the active key is and kept from commands.
    pub other_keys: Vec<ApiKey>,
    /// Where `api_key` came from.
    pub key_source: Option<KeySource>,
    /// Plain output: `NO_COLOR` set or `TERM=dumb`.
    pub plain: bool,
    /// Where each of provider, model, temperature, base URL came from.
    pub sources: SettingSources,
    /// Structured-output mode, request timeout and output limit of model calls.
    pub model_call: super::ModelCall,
    /// Problems found while resolving (invalid values replaced by defaults, migrations done):
    /// shown to the user, never fatal.
    pub warnings: Vec<String>,
}

/// The origin of the main settings.
#[derive(Debug, Clone, Copy)]
pub struct SettingSources {
    /// Of `provider`.
    pub provider: Source,
    /// Of `model`.
    pub model: Source,
    /// Of `temperature`.
    pub temperature: Source,
    /// Of `base_url`.
    pub base_url: Source,
}

impl Settings {
    /// Resolve settings from flags, the environment and the config file in the located config
    /// directory. `need_key` loads the credentials file when the environment holds no key.
    pub fn resolve(flags: &Flags, env: &Env) -> Result<Settings, Error> {
        let dir = ConfigDir::locate(env);
        let (file, notices) = match &dir {
            Ok(dir) => dir.load_settings()?,
            Err(_) => (FileSettings::default(), Vec::new()),
        };
        let mut settings = Self::resolve_from(flags, env, &file)?;
        settings.settings_file = dir.as_ref().ok().map(ConfigDir::settings_file);
        settings.warnings.extend(notices);
        settings.attach_key(env, dir.ok().map(CredentialStore::in_dir))?;
        Ok(settings)
    }

    /// Resolve everything except the key, from explicit inputs (used by tests; it reads no
    /// file except to resolve symlinks in `run.writable`).
    ///
    /// Each setting is resolved in its own stage, in a fixed order, so the warnings come out
    /// in the order the settings are listed and a fatal error (a bad `--base-url`, a bad
    /// `base_url` or MCP table in config.toml) stops at the same point.
    pub fn resolve_from(flags: &Flags, env: &Env, file: &FileSettings) -> Result<Settings, Error> {
        let mut warnings = Vec::new();
        let (provider, provider_src) = resolve_provider(flags, env, file, &mut warnings);
        let (model, model_src) = resolve_model(flags, env, file, provider);
        let (temperature, temperature_src) = resolve_temperature(flags, env, file, &mut warnings);
        let (base_url, base_url_src) = resolve_base_url(flags, env, file, &mut warnings)?;
        let local = base_url
            .as_deref()
            .and_then(|b| crate::llm::BaseUrl::parse(b, ProviderKind::OpenAi).ok())
            .is_some_and(|u| u.loopback);
        let model_call = super::ModelCall::resolve(flags, env, file, local, &mut warnings)?;
        let modify_threshold = resolve_modify_threshold(env, file, &mut warnings);
        let modify_max_ratio = resolve_modify_max_ratio(env, file, &mut warnings);
        let context_tokens = resolve_context_tokens(env, file, &mut warnings);
        let run_timeout = resolve_run_timeout(file, &mut warnings);
        let run_writable = resolve_run_writable(&file.run.writable, env, &mut warnings);

        let mcp_servers = super::mcp_servers::user_specs(&file.mcp_servers).map_err(|e| {
            Error::config(format!("config.toml: {e}"))
                .with_hint("fix the table, or remove the server with `pai mcp remove <name>`")
        })?;

        let plain = env.is_set("NO_COLOR") || env.get("TERM") == Some("dumb");

        Ok(Settings {
            provider,
            model,
            temperature,
            base_url,
            modify_threshold,
            modify_max_ratio,
            context_tokens,
            yes: flags.yes,
            allow_run: flags.allow_run,
            extra_deny: file.deny.clone(),
            run_timeout,
            history_days: file.history_days.unwrap_or(DEFAULT_HISTORY_DAYS),
            run_allow: file.run.allow.clone(),
            project_run_allow: file
                .projects
                .iter()
                .map(|(root, p)| (root.clone(), p.run.allow.clone()))
                .collect(),
            worktree: file.worktree.unwrap_or(false),
            project_worktree_include: file
                .projects
                .iter()
                .map(|(root, p)| (root.clone(), p.worktree_include.clone()))
                .collect(),
            settings_file: None,
            require_sandbox: file.run.require_sandbox.unwrap_or(false),
            run_writable,
            mcp_servers,
            api_key: None,
            other_keys: Vec::new(),
            key_source: None,
            plain,
            sources: SettingSources {
                provider: provider_src,
                model: model_src,
                temperature: temperature_src,
                base_url: base_url_src,
            },
            model_call,
            warnings,
        })
    }

    /// Find the key for the resolved provider: its environment variable first, else the
    /// credentials file (when there is a configuration directory).
    pub fn attach_key(&mut self, env: &Env, store: Option<CredentialStore>) -> Result<(), Error> {
        let var = self.provider.key_env_var();
        let creds = match store {
            Some(store) => {
                let (creds, notes) = store.load()?;
                self.warnings.extend(notes.notices);
                Some(creds)
            }
            None => None,
        };
        if let Some(key) = env.get(var).and_then(ApiKey::new) {
            self.api_key = Some(key);
            self.key_source = Some(KeySource::Env(var));
        } else if let Some(key) = creds.as_ref().and_then(|c| c.get(self.provider)) {
            self.api_key = Some(key.clone());
            self.key_source = Some(KeySource::File);
        }
        // Every other key in sight is a secret too, whichever provider this session uses.
        for kind in ProviderKind::ALL {
            let stored = creds.as_ref().and_then(|c| c.get(kind)).cloned();
            let from_env = env.get(kind.key_env_var()).and_then(ApiKey::new);
            for key in [stored, from_env].into_iter().flatten() {
                let same = self
                    .api_key
                    .as_ref()
                    .is_some_and(|a| a.expose() == key.expose());
                if !same && !self.other_keys.iter().any(|k| k.expose() == key.expose()) {
                    self.other_keys.push(key);
                }
            }
        }
        Ok(())
    }

    /// The base URL in effect (the configured one or the provider's default).
    pub fn effective_base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.provider.default_base_url())
    }
}

/// The provider: flag, then `PAI_PROVIDER`, then the file. An unparsable `PAI_PROVIDER` is a
/// warning and falls through to the file, not to the default, so a typo in the environment
/// does not silently discard the configured provider.
fn resolve_provider(
    flags: &Flags,
    env: &Env,
    file: &FileSettings,
    warnings: &mut Vec<String>,
) -> (ProviderKind, Source) {
    if let Some(p) = flags.provider {
        (p, Source::Flag)
    } else if let Some(raw) = env.get("PAI_PROVIDER") {
        match raw.parse() {
            Ok(p) => (p, Source::Env),
            Err(e) => {
                let (p, source) = from_file_provider(file, warnings);
                let using = match source {
                    Source::File => format!("using {} from config.toml", p.name()),
                    _ => format!("using the default, {}", p.name()),
                };
                warnings.push(format!("ignoring PAI_PROVIDER: {e}; {using}"));
                (p, source)
            }
        }
    } else {
        from_file_provider(file, warnings)
    }
}

/// The model: the first of flag, `PAI_MODEL` and the file that is not blank, else the
/// provider's default (so the default always matches the provider resolved before it).
fn resolve_model(
    flags: &Flags,
    env: &Env,
    file: &FileSettings,
    provider: ProviderKind,
) -> (String, Source) {
    if let Some(m) = flags
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        (m.to_string(), Source::Flag)
    } else if let Some(m) = env
        .get("PAI_MODEL")
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        (m.to_string(), Source::Env)
    } else if let Some(m) = file
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        (m.to_string(), Source::File)
    } else {
        (provider.default_model().to_string(), Source::Default)
    }
}

/// The base URL: a bad `--base-url` is a usage error and a bad `base_url` in config.toml a
/// config error (both fatal, since the user asked for them explicitly), while a bad
/// `PAI_BASE_URL` is only a warning and falls back to the provider's default.
fn resolve_base_url(
    flags: &Flags,
    env: &Env,
    file: &FileSettings,
    warnings: &mut Vec<String>,
) -> Result<(Option<String>, Source), Error> {
    Ok(if let Some(url) = flags.base_url.as_deref() {
        (
            Some(check_base_url(url).map_err(|e| Error::usage(format!("--base-url: {e}")))?),
            Source::Flag,
        )
    } else if let Some(url) = env.get("PAI_BASE_URL") {
        match check_base_url(url) {
            Ok(url) => (Some(url), Source::Env),
            Err(e) => {
                warnings.push(format!(
                    "ignoring PAI_BASE_URL: {e}; using the provider's default"
                ));
                (None, Source::Default)
            }
        }
    } else if let Some(url) = file.base_url.as_deref() {
        (
            Some(
                check_base_url(url)
                    .map_err(|e| Error::config(format!("base_url in config.toml: {e}")))?,
            ),
            Source::File,
        )
    } else {
        (None, Source::Default)
    })
}

/// The diff guard's line threshold: `PAI_MODIFY_THRESHOLD`, else the file. Zero or garbage is
/// a warning and the default: a threshold of 0 would refuse every edit.
fn resolve_modify_threshold(env: &Env, file: &FileSettings, warnings: &mut Vec<String>) -> usize {
    match env.get("PAI_MODIFY_THRESHOLD") {
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                warnings.push(format!(
                    "ignoring PAI_MODIFY_THRESHOLD={raw}: expected a whole number above 0; using {DEFAULT_MODIFY_THRESHOLD}"
                ));
                DEFAULT_MODIFY_THRESHOLD
            }
        },
        None => match file.modify_threshold {
            Some(n) if n > 0 => n as usize,
            Some(n) => {
                warnings.push(format!(
                    "ignoring modify_threshold = {n} in config.toml: expected a whole number above 0; using {DEFAULT_MODIFY_THRESHOLD}"
                ));
                DEFAULT_MODIFY_THRESHOLD
            }
            None => DEFAULT_MODIFY_THRESHOLD,
        },
    }
}

/// The first call's token budget: `PAI_CONTEXT_TOKENS`, else the file; at least 2,000 (less
/// leaves no room for a map), garbage is a warning and the default.
fn resolve_context_tokens(env: &Env, file: &FileSettings, warnings: &mut Vec<String>) -> usize {
    const MIN: i64 = 2_000;
    let default = DEFAULT_CONTEXT_TOKENS;
    let (raw, source) = match env.get("PAI_CONTEXT_TOKENS") {
        Some(raw) => (
            raw.trim().parse::<i64>().ok(),
            format!("PAI_CONTEXT_TOKENS={raw}"),
        ),
        None => match file.context_tokens {
            Some(n) => (Some(n), format!("context_tokens = {n} in config.toml")),
            None => return default,
        },
    };
    match raw {
        Some(n) if (MIN..=1_000_000).contains(&n) => n as usize,
        _ => {
            warnings.push(format!(
                "ignoring {source}: expected a whole number from {MIN} to 1000000; using {default}"
            ));
            default
        }
    }
}

/// The diff guard's ratio threshold: `PAI_MODIFY_MAX_RATIO`, else the file. Only a share of
/// the file's lines in (0, 1] is accepted: above 1 the guard could never refuse anything.
fn resolve_modify_max_ratio(env: &Env, file: &FileSettings, warnings: &mut Vec<String>) -> f64 {
    let valid_ratio = |r: f64| r.is_finite() && r > 0.0 && r <= 1.0;
    match env.get("PAI_MODIFY_MAX_RATIO") {
        Some(raw) => match raw.trim().parse::<f64>() {
            Ok(r) if valid_ratio(r) => r,
            _ => {
                warnings.push(format!(
                    "ignoring PAI_MODIFY_MAX_RATIO={raw}: expected a number above 0 and at most 1 (a share of the file's lines); using {DEFAULT_MODIFY_MAX_RATIO}"
                ));
                DEFAULT_MODIFY_MAX_RATIO
            }
        },
        None => match file.modify_max_ratio {
            Some(r) if valid_ratio(r) => r,
            Some(r) => {
                warnings.push(format!(
                    "ignoring modify_max_ratio = {r} in config.toml: expected a number above 0 and at most 1 (a share of the file's lines); using {DEFAULT_MODIFY_MAX_RATIO}"
                ));
                DEFAULT_MODIFY_MAX_RATIO
            }
            None => DEFAULT_MODIFY_MAX_RATIO,
        },
    }
}

/// The RUN timeout from the file. Zero is a warning and the default: it would kill every
/// command at once.
fn resolve_run_timeout(file: &FileSettings, warnings: &mut Vec<String>) -> Duration {
    match file.run.timeout_secs {
        Some(0) => {
            warnings.push("ignoring run.timeout_secs = 0 in config.toml; using 120".to_string());
            DEFAULT_RUN_TIMEOUT
        }
        Some(secs) => Duration::from_secs(secs),
        None => DEFAULT_RUN_TIMEOUT,
    }
}

fn from_file_provider(file: &FileSettings, warnings: &mut Vec<String>) -> (ProviderKind, Source) {
    match file.provider.as_deref().map(str::parse::<ProviderKind>) {
        Some(Ok(p)) => (p, Source::File),
        Some(Err(e)) => {
            warnings.push(format!(
                "ignoring provider in config.toml: {e}; using the default"
            ));
            (ProviderKind::default(), Source::Default)
        }
        None => (ProviderKind::default(), Source::Default),
    }
}

fn clamp_temperature(t: f64, origin: &str, warnings: &mut Vec<String>) -> Option<f32> {
    if !t.is_finite() {
        warnings.push(format!(
            "ignoring {origin}: not a number; using {DEFAULT_TEMPERATURE}"
        ));
        return None;
    }
    let clamped = t.clamp(0.0, 2.0);
    if clamped != t {
        warnings.push(format!("{origin} is outside 0.0–2.0; using {clamped}"));
    }
    Some(clamped as f32)
}

fn resolve_temperature(
    flags: &Flags,
    env: &Env,
    file: &FileSettings,
    warnings: &mut Vec<String>,
) -> (f32, Source) {
    if let Some(t) = flags.temperature
        && let Some(t) = clamp_temperature(f64::from(t), &format!("--temperature {t}"), warnings)
    {
        return (t, Source::Flag);
    }
    if let Some(raw) = env.get("PAI_TEMPERATURE") {
        match raw.trim().parse::<f64>() {
            Ok(t) => {
                if let Some(t) = clamp_temperature(t, &format!("PAI_TEMPERATURE={raw}"), warnings) {
                    return (t, Source::Env);
                }
            }
            Err(_) => warnings.push(format!(
                "ignoring PAI_TEMPERATURE={raw}: expected a number from 0.0 to 2.0; using {DEFAULT_TEMPERATURE}"
            )),
        }
        return (DEFAULT_TEMPERATURE, Source::Default);
    }
    if let Some(t) = file.temperature
        && let Some(t) =
            clamp_temperature(t, &format!("temperature = {t} in config.toml"), warnings)
    {
        return (t, Source::File);
    }
    (DEFAULT_TEMPERATURE, Source::Default)
}

/// The base URL as given, checked the one way pai checks base URLs ([`crate::llm::BaseUrl`]),
/// without trailing slashes.
fn check_base_url(raw: &str) -> Result<String, String> {
    if raw.trim().is_empty() {
        return Err("the base URL is empty".to_string());
    }
    // The OpenAI shape keeps any version path: the provider trims its own when it connects.
    crate::llm::BaseUrl::parse(raw, ProviderKind::OpenAi).map(|u| u.base)
}

/// The `run.writable` entries as the paths the sandbox will grant: `~` and `~/...` expand to
/// HOME, `.` and `..` are resolved, and existing paths have their symlinks resolved (Landlock
/// grants the directory a path leads to, so that is what must be checked). Refused, with a
/// warning: relative entries, the file-system root, and any directory that holds pai's own
/// configuration, since a command able to write there could extend `run.allow` and approve its
/// own next commands.
fn resolve_run_writable(raw: &[String], env: &Env, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let home = env
        .get("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let config = ConfigDir::locate(env)
        .ok()
        .map(|d| resolve_existing(d.path()));
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in raw {
        let shown = entry.trim();
        let mut ignore = |why: String| {
            warnings.push(format!(
                "ignoring run.writable entry `{shown}` in config.toml: {why}"
            ));
        };
        let path = if shown == "~" || shown.starts_with("~/") {
            match &home {
                Some(h) => h.join(shown.trim_start_matches('~').trim_start_matches('/')),
                None => {
                    ignore("HOME is not set to an absolute path".into());
                    continue;
                }
            }
        } else if Path::new(shown).is_absolute() {
            PathBuf::from(shown)
        } else {
            ignore("it must be an absolute path or start with ~/".into());
            continue;
        };
        let path = resolve_existing(&path);
        if path.parent().is_none() {
            ignore("commands may not write everywhere".into());
            continue;
        }
        if let Some(c) = &config
            && c.starts_with(&path)
        {
            ignore(format!(
                "it holds pai's own configuration ({}), which commands must not change",
                c.display()
            ));
            continue;
        }
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically, then, where it exists, its symlinks resolved.
fn resolve_existing(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut lexical = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    std::fs::canonicalize(&lexical).unwrap_or(lexical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn run_writable_expands_home_and_refuses_what_would_free_a_command() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".cache/go-build")).unwrap();
        std::fs::create_dir_all(home.join(".config/pai-code")).unwrap();
        std::os::unix::fs::symlink(home.join(".config"), home.join("cfg-link")).unwrap();
        let file = FileSettings {
            run: crate::config::file::RunFileSettings {
                writable: [
                    "~/.cache/go-build",
                    "~/.npm",
                    "/opt/cache/../tools",
                    "~/.cache/go-build/",
                    "relative/dir",
                    "/",
                    "~",
                    "~/.config",
                    "~/cfg-link",
                    "~/.cache/../.config/pai-code",
                ]
                .map(String::from)
                .to_vec(),
                ..Default::default()
            },
            ..Default::default()
        };
        let e = env(&[("HOME", home.to_str().unwrap())]);
        let s = Settings::resolve_from(&Flags::default(), &e, &file).unwrap();
        assert_eq!(
            s.run_writable,
            [
                home.join(".cache/go-build"),
                home.join(".npm"),
                PathBuf::from("/opt/tools"),
            ]
        );
        let refused: Vec<&String> = s
            .warnings
            .iter()
            .filter(|w| w.starts_with("ignoring run.writable entry"))
            .collect();
        assert_eq!(refused.len(), 6, "{refused:#?}");
        assert!(refused[0].contains("`relative/dir`") && refused[0].contains("absolute path"));
        assert!(refused[1].contains("`/`") && refused[1].contains("everywhere"));
        for (w, entry) in refused[2..].iter().zip([
            "~",
            "~/.config",
            "~/cfg-link",
            "~/.cache/../.config/pai-code",
        ]) {
            assert!(
                w.contains(&format!("`{entry}`")) && w.contains("pai's own configuration"),
                "{w}"
            );
        }
        // Without HOME, `~` entries cannot be placed.
        let s = Settings::resolve_from(&Flags::default(), &env(&[]), &file).unwrap();
        assert!(s.run_writable.contains(&PathBuf::from("/opt/tools")));
        assert!(s.warnings.iter().any(|w| w.contains("HOME is not set")));
    }

    #[test]
    fn an_unknown_pai_provider_warning_names_the_provider_used_instead() {
        let e = env(&[("PAI_PROVIDER", "bogus")]);
        let file = FileSettings {
            provider: Some("anthropic".into()),
            ..Default::default()
        };
        let s = Settings::resolve_from(&Flags::default(), &e, &file).unwrap();
        assert_eq!(s.provider, ProviderKind::Anthropic);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.starts_with("ignoring PAI_PROVIDER")
                    && w.ends_with("using anthropic from config.toml")),
            "{:?}",
            s.warnings
        );
        let s = Settings::resolve_from(&Flags::default(), &e, &FileSettings::default()).unwrap();
        let default = ProviderKind::default().name();
        assert!(
            s.warnings
                .iter()
                .any(|w| w.ends_with(&format!("using the default, {default}"))),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn precedence_is_flag_env_file_default() {
        let file = FileSettings {
            model: Some("file-model".into()),
            temperature: Some(0.9),
            ..Default::default()
        };
        let e = env(&[("PAI_MODEL", "env-model")]);
        let flags = Flags {
            model: Some("flag-model".into()),
            ..Default::default()
        };
        let s = Settings::resolve_from(&flags, &e, &file).unwrap();
        assert_eq!(
            (s.model.as_str(), s.sources.model),
            ("flag-model", Source::Flag)
        );
        assert_eq!((s.temperature, s.sources.temperature), (0.9, Source::File));
        let s = Settings::resolve_from(&Flags::default(), &e, &file).unwrap();
        assert_eq!(s.model, "env-model");
        let s = Settings::resolve_from(&Flags::default(), &env(&[]), &file).unwrap();
        assert_eq!(s.model, "file-model");
        let s =
            Settings::resolve_from(&Flags::default(), &env(&[]), &FileSettings::default()).unwrap();
        assert_eq!(
            (s.model.as_str(), s.provider),
            ("gemini-2.5-flash-lite", ProviderKind::Gemini)
        );
    }

    #[test]
    fn invalid_env_values_warn_and_default() {
        let e = env(&[
            ("PAI_TEMPERATURE", "abc"),
            ("PAI_MODIFY_THRESHOLD", "-3"),
            ("PAI_MODIFY_MAX_RATIO", "nan"),
        ]);
        let s = Settings::resolve_from(&Flags::default(), &e, &FileSettings::default()).unwrap();
        assert_eq!(s.temperature, DEFAULT_TEMPERATURE);
        assert_eq!(s.modify_threshold, DEFAULT_MODIFY_THRESHOLD);
        assert_eq!(s.modify_max_ratio, DEFAULT_MODIFY_MAX_RATIO);
        assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
    }

    #[test]
    fn temperature_is_clamped() {
        let flags = Flags {
            temperature: Some(7.5),
            ..Default::default()
        };
        let s = Settings::resolve_from(&flags, &env(&[]), &FileSettings::default()).unwrap();
        assert_eq!(s.temperature, 2.0);
        let s = Settings::resolve_from(
            &Flags::default(),
            &env(&[("PAI_TEMPERATURE", "-1")]),
            &FileSettings::default(),
        )
        .unwrap();
        assert_eq!(s.temperature, 0.0);
    }

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(
            check_base_url("http://127.0.0.1:8080/v1/").unwrap(),
            "http://127.0.0.1:8080/v1"
        );
        assert!(check_base_url("ftp://x").is_err());
        assert!(check_base_url("https://user:pw@host").is_err());
        assert!(check_base_url("https://host/?key=abc").is_err());
    }
}
