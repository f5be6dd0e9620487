//! `pai config {set,show,remove,validate,path}`.

use std::io::{IsTerminal, Read};

use crate::cli::assemble;
use crate::config::{
    ApiKey, ConfigDir, CredentialStore, Credentials, Env, FileSettings, Flags, KeySource, Settings,
    gemini_key_shape_problem,
};
use crate::error::Error;
use crate::llm::{self, ProviderKind};
use crate::ui::output::Output;

/// Longest key accepted; real keys are far shorter, and a huge paste is a mistake.
const MAX_KEY_LEN: usize = 4096;

/// The provider a key command acts on: the flag, else the configured provider.
fn target_provider(
    env: &Env,
    out: &Output,
    provider: Option<ProviderKind>,
) -> Result<ProviderKind, Error> {
    if let Some(p) = provider {
        return Ok(p);
    }
    let file = match ConfigDir::locate(env) {
        Ok(dir) => dir.load_settings()?.0,
        Err(_) => FileSettings::default(),
    };
    let settings = Settings::resolve_from(&Flags::default(), env, &file)?;
    out.warnings(&settings.warnings);
    Ok(settings.provider)
}

fn read_key(out: &Output, key: Option<String>, provider: ProviderKind) -> Result<ApiKey, Error> {
    let raw = match key {
        Some(k) => {
            out.note("tip: run `pai config set` without the key to type it at a hidden prompt and keep it out of your shell history");
            k
        }
        None if std::io::stdin().is_terminal() => dialoguer::Password::new()
            .with_prompt(format!(
                "{provider} API key (hidden; stored for {provider} in credentials.json)"
            ))
            .allow_empty_password(true)
            .interact()
            .map_err(|e| Error::usage(format!("cannot read the key: {e}")))?,
        None => {
            let mut buf = String::new();
            std::io::stdin()
                .take(MAX_KEY_LEN as u64 + 1)
                .read_to_string(&mut buf)
                .map_err(|e| Error::usage(format!("cannot read the key from stdin: {e}")))?;
            buf
        }
    };
    if raw.len() > MAX_KEY_LEN {
        return Err(Error::usage(format!(
            "the key is longer than {MAX_KEY_LEN} characters; is it really an API key?"
        )));
    }
    if raw.trim().chars().any(char::is_whitespace) {
        return Err(Error::usage(
            "the key contains spaces or line breaks; paste just the key",
        ));
    }
    ApiKey::new(&raw).ok_or_else(|| {
        Error::usage("the key is empty").with_hint(format!(
            "run `pai config set --provider {provider}` in a terminal and paste the key at the hidden prompt, or pipe it in (`pai config set --provider {provider} < keyfile`)"
        ))
    })
}

/// `pai config set`.
pub fn set(
    env: &Env,
    out: &Output,
    key: Option<String>,
    provider: Option<ProviderKind>,
) -> Result<(), Error> {
    let provider = target_provider(env, out, provider)?;
    let key = read_key(out, key, provider)?;
    let store = CredentialStore::locate(env)?;
    let (mut creds, notes) = store.load_for_update()?;
    out.warnings(&notes.notices);
    if provider == ProviderKind::Gemini
        && let Some(problem) = gemini_key_shape_problem(key.expose())
    {
        out.warning(&format!(
            "this does not look like a Gemini key ({problem}); storing it anyway"
        ));
    }
    let masked = key.masked();
    creds.set(provider, key);
    store.write(&creds)?;
    out.line(&format!(
        "Saved the {provider} key {masked} to {}",
        store.path().display()
    ));
    if env.get(provider.key_env_var()).is_some() {
        out.note(&format!(
            "{} is set in your environment and takes precedence over the stored key",
            provider.key_env_var()
        ));
    }
    Ok(())
}

/// `pai config remove`.
pub fn remove(env: &Env, out: &Output, provider: Option<ProviderKind>) -> Result<(), Error> {
    let provider = target_provider(env, out, provider)?;
    let store = CredentialStore::locate(env)?;
    let (mut creds, notes) = store.load()?;
    out.warnings(&notes.notices);
    if !creds.remove(provider) {
        out.line(&format!("No {provider} key is stored; nothing to remove"));
        return Ok(());
    }
    store.write(&creds)?;
    out.line(&format!(
        "Removed the {provider} key from {}",
        store.path().display()
    ));
    Ok(())
}

/// `pai config path`.
pub fn path(env: &Env, out: &Output) -> Result<(), Error> {
    out.line(&CredentialStore::locate(env)?.path().display().to_string());
    Ok(())
}

/// `pai config show`: keys masked, settings with their sources.
pub fn show(env: &Env, out: &Output, flags: &Flags) -> Result<(), Error> {
    let dir = ConfigDir::locate(env)?;
    let store = CredentialStore::in_dir(dir.clone());
    let settings = Settings::resolve(flags, env)?;
    out.warnings(&settings.warnings);
    let (creds, _) = store.load()?;
    show_files(out, &dir, &store);
    out.line("");
    show_keys(out, env, &creds, settings.provider);
    out.line("");
    show_settings(out, &settings);
    show_run_allow(out, &settings);
    Ok(())
}

/// Where the configuration lives, so the user knows which files to look at or remove.
fn show_files(out: &Output, dir: &ConfigDir, store: &CredentialStore) {
    let settings_file = dir.settings_file();
    out.line(&format!(
        "Configuration directory: {}",
        dir.path().display()
    ));
    out.line(&format!(
        "Credentials file:        {}",
        store.path().display()
    ));
    out.line(&format!(
        "Settings file:           {}{}",
        settings_file.display(),
        if settings_file.exists() {
            ""
        } else {
            " (not present)"
        }
    ));
}

/// Each provider's key, masked, from where it would be taken: the environment variable wins
/// over the stored key, as when a session resolves it.
fn show_keys(out: &Output, env: &Env, creds: &Credentials, in_use: ProviderKind) {
    out.line("Keys:");
    for provider in ProviderKind::ALL {
        let (shown, source) = match (
            env.get(provider.key_env_var()).and_then(ApiKey::new),
            creds.get(provider),
        ) {
            (Some(key), _) => (
                key.masked(),
                KeySource::Env(provider.key_env_var()).to_string(),
            ),
            (None, Some(key)) => (key.masked(), KeySource::File.to_string()),
            (None, None) => ("not set".to_string(), String::new()),
        };
        let active = if provider == in_use { "  [in use]" } else { "" };
        let source = if source.is_empty() {
            String::new()
        } else {
            format!("  ({source})")
        };
        out.line(&format!(
            "  {:<10} {shown}{source}{active}",
            provider.name()
        ));
    }
}

/// The effective model settings, each with the layer it came from, and where RUN may write.
fn show_settings(out: &Output, settings: &Settings) {
    out.line("Settings:");
    let s = &settings.sources;
    out.line(&format!(
        "  provider          {:<28} ({})",
        settings.provider.name(),
        s.provider
    ));
    out.line(&format!(
        "  model             {:<28} ({})",
        settings.model, s.model
    ));
    out.line(&format!(
        "  temperature       {:<28} ({})",
        settings.temperature, s.temperature
    ));
    out.line(&format!(
        "  base URL          {:<28} ({})",
        settings.effective_base_url(),
        s.base_url
    ));
    show_model_call(out, settings);
    out.line(&format!(
        "  modify threshold  {} lines, max ratio {}",
        settings.modify_threshold, settings.modify_max_ratio
    ));
    let writable: Vec<String> = settings
        .run_writable
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    out.line(&format!(
        "  RUN may write     the project, temporary directories{}",
        if writable.is_empty() {
            String::new()
        } else {
            format!(", {}", writable.join(", "))
        }
    ));
}

/// How a model call is made: structured-output mode, time limit, output limit, and what each
/// does.
fn show_model_call(out: &Output, settings: &Settings) {
    let m = &settings.model_call;
    let mode = match m.structured_output {
        Some(mode) => format!("{mode}"),
        None => "auto".to_string(),
    };
    let mode_effect = match (m.structured_output, settings.provider) {
        (Some(_), ProviderKind::OpenAi) => "every call uses this mode",
        (None, ProviderKind::OpenAi) => {
            "found per server and model, remembered; `pai config validate` shows it"
        }
        (_, _) => "this provider always enforces the schema",
    };
    out.line(&format!(
        "  structured output {mode:<28} ({}; {mode_effect})",
        m.structured_output_source
    ));
    out.line(&format!(
        "  request timeout   {:<28} ({}; one model call, a stream's first byte)",
        format!("{} s", m.request_timeout.as_secs()),
        m.request_timeout_source
    ));
    let cap_effect = if m.max_output_tokens_source == crate::config::Source::Default {
        "lowered to half the context a local server reports"
    } else {
        "lowered only to the model's own cap"
    };
    out.line(&format!(
        "  output limit      {:<28} ({}; {cap_effect})",
        format!("{} tokens", m.max_output_tokens),
        m.max_output_tokens_source
    ));
}

/// The allow-list: what RUN may execute without asking, everywhere and in the project of the
/// current directory.
fn show_run_allow(out: &Output, settings: &Settings) {
    let quoted = |rules: &[String]| {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let here = std::env::current_dir()
        .ok()
        .map(|cwd| crate::history::project_root(&cwd))
        .and_then(|root| std::fs::canonicalize(root).ok())
        .map(|root| root.display().to_string());
    let project_rules = here
        .as_ref()
        .and_then(|root| settings.project_run_allow.get(root))
        .filter(|rules| !rules.is_empty());
    out.line(&format!(
        "  RUN without asking {}",
        if settings.run_allow.is_empty() {
            "no command (every RUN asks; add rules to run.allow in config.toml)".to_string()
        } else {
            format!("{} (every project)", quoted(&settings.run_allow))
        }
    ));
    if let Some(rules) = project_rules {
        out.line(&format!(
            "                     {} (this project)",
            quoted(rules)
        ));
    }
}

/// How long `pai config validate` waits for a connection, and for the whole answer.
const VALIDATE_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const VALIDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

/// `pai config validate`: the key's shape, then one cheap call to the provider.
pub fn validate(env: &Env, out: &Output, flags: &Flags) -> Result<(), Error> {
    let settings = Settings::resolve(flags, env)?;
    out.warnings(&settings.warnings);
    let provider = settings.provider;
    match &settings.api_key {
        Some(key) => {
            if provider == ProviderKind::Gemini
                && let Some(problem) = gemini_key_shape_problem(key.expose())
            {
                return Err(Error::config(format!(
                    "the Gemini key {} is malformed: {problem}",
                    key.masked()
                ))
                .with_hint("copy the key again from Google AI Studio and run `pai config set`"));
            }
            let source = settings
                .key_source
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            out.line(&format!(
                "The {provider} key {} from {source} has the expected shape",
                key.masked()
            ));
        }
        None => out.note(&format!(
            "no {provider} API key is configured; trying {} without one",
            settings.effective_base_url()
        )),
    }
    // Without a key, building the provider fails for anything but a local server, with the
    // provider's own explanation of where to put the key.
    let mut cfg = assemble::provider_config(&settings);
    // A check, not a turn: a host that does not answer is reported in seconds, not after the
    // three minutes a long generation may take.
    cfg.connect_timeout = VALIDATE_CONNECT_TIMEOUT;
    cfg.request_timeout = VALIDATE_TIMEOUT;
    cfg.max_attempts = 1;
    let client = llm::build_provider(&cfg).map_err(assemble::llm_error)?;
    let rt = assemble::runtime()?;
    let origin = settings.effective_base_url();
    rt.block_on(client.validate()).map_err(|e| match e {
        llm::LlmError::Timeout { .. } | llm::LlmError::Connect { .. } => {
            crate::error::Error::failed(e.to_string()).with_hint(format!(
                "nothing usable answered at {origin}: check --base-url (or PAI_BASE_URL), that \
                 the server is running, and your network"
            ))
        }
        e => assemble::llm_error(e),
    })?;
    out.line(&format!(
        "{provider} accepted it: model {} is available at {}",
        settings.model,
        settings.effective_base_url()
    ));
    structured_call(out, &rt, &settings)
}

/// Longest wait for the tiny structured call: a local model loads and answers well within it.
const STRUCTURED_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// One tiny call with pai's reply schema in the mode sessions would use (found, and
/// remembered, exactly as a session finds it): the mode, the time and the tokens, or the
/// exact failure with its hint.
fn structured_call(
    out: &Output,
    rt: &tokio::runtime::Runtime,
    settings: &Settings,
) -> Result<(), Error> {
    let mut cfg = assemble::provider_config(settings);
    cfg.connect_timeout = VALIDATE_CONNECT_TIMEOUT;
    cfg.request_timeout = cfg.request_timeout.min(STRUCTURED_CALL_TIMEOUT);
    cfg.max_attempts = 2;
    let client = llm::build_provider(&cfg).map_err(assemble::llm_error)?;
    let req = llm::LlmRequest {
        system: "You check that replies come back as JSON. Answer the user with a chat reply: intent \"chat\", reply \"ok\", no steps.".to_string(),
        messages: vec![llm::Message::user("Reply ok.")],
        schema: crate::agent::plan::schema(),
        schema_name: "pai_plan".to_string(),
        temperature: 0.0,
        max_output_tokens: 256,
        stream: false,
    };
    let quiet = |_: llm::StreamEvent<'_>| {};
    let started = std::time::Instant::now();
    let result = rt.block_on(client.complete(&req, &quiet));
    let totals = client.usage_totals();
    let secs = started.elapsed().as_secs_f64();
    let calls = totals.requests;
    let tokens = if totals.unmetered > 0 {
        "tokens not reported by the server".to_string()
    } else {
        format!(
            "tokens {} in, {} out",
            totals.usage.input, totals.usage.output
        )
    };
    match result {
        Ok(reply) => {
            out.line(&format!(
                "Structured output: {} — one call answered in {secs:.1}s ({calls} request(s), {tokens})",
                client.output_mode()
            ));
            if reply.value.get("intent").is_none() {
                out.note("the reply parsed as JSON but lacks `intent`: this model may follow pai's reply format poorly");
            }
            Ok(())
        }
        Err(e) => {
            let hint = e.hint();
            Err(Error::failed(format!(
                "the structured call failed after {secs:.1}s ({calls} request(s), mode {}): {e}",
                client.output_mode()
            ))
            .with_hint(hint))
        }
    }
}
