//! The settings of one model call that a slow or small local model needs changed: how the
//! reply's JSON shape is asked for (`structured_output`), how long one call may take
//! (`request_timeout_secs`) and how many tokens a reply may have (`max_output_tokens`).
//! Each comes from a flag, the environment or `config.toml`, in that order.

use std::time::Duration;

use super::{Env, FileSettings, Flags, Source};
use crate::error::Error;
use crate::llm::FormatMode;

/// Limit of one call to a remote provider unless set.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(180);
/// Limit of one call to a server on this machine unless set: a model on the CPU takes
/// minutes for a long plan.
pub const DEFAULT_LOCAL_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The output limit asked for unless set; lowered to the model's cap and to what a local
/// server says its context holds.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 16_384;

/// The resolved settings, each with where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelCall {
    /// The forced structured-output mode; `None` is `auto` (found per server and model).
    pub structured_output: Option<FormatMode>,
    /// Where `structured_output` came from.
    pub structured_output_source: Source,
    /// Limit of one model call (a whole reply, or a stream's first byte).
    pub request_timeout: Duration,
    /// Where `request_timeout` came from.
    pub request_timeout_source: Source,
    /// The output token limit asked for.
    pub max_output_tokens: u32,
    /// Where `max_output_tokens` came from (`Default`: a local server's context may lower it).
    pub max_output_tokens_source: Source,
}

impl ModelCall {
    /// Resolve from flags, the environment and the file; `local` is whether the base URL is
    /// on this machine (a longer default timeout). A bad flag is an error; a bad variable or
    /// file value is a warning and the default.
    pub fn resolve(
        flags: &Flags,
        env: &Env,
        file: &FileSettings,
        local: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Self, Error> {
        let (structured_output, structured_output_source) =
            resolve_structured(flags, env, file, warnings)?;
        let default_timeout = if local {
            DEFAULT_LOCAL_REQUEST_TIMEOUT
        } else {
            DEFAULT_REQUEST_TIMEOUT
        };
        let (secs, request_timeout_source) = number(
            env,
            "PAI_REQUEST_TIMEOUT",
            file.request_timeout_secs,
            "request_timeout_secs",
            5..=86_400,
            default_timeout.as_secs(),
            warnings,
        );
        let (max_output, max_output_tokens_source) = number(
            env,
            "PAI_MAX_OUTPUT_TOKENS",
            file.max_output_tokens,
            "max_output_tokens",
            256..=1_000_000,
            u64::from(DEFAULT_MAX_OUTPUT_TOKENS),
            warnings,
        );
        Ok(Self {
            structured_output,
            structured_output_source,
            request_timeout: Duration::from_secs(secs),
            request_timeout_source,
            max_output_tokens: u32::try_from(max_output).unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            max_output_tokens_source,
        })
    }
}

/// `auto` is `None`; anything else names a mode.
fn parse_mode(raw: &str) -> Result<Option<FormatMode>, String> {
    if raw.trim().eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    raw.parse().map(Some)
}

fn resolve_structured(
    flags: &Flags,
    env: &Env,
    file: &FileSettings,
    warnings: &mut Vec<String>,
) -> Result<(Option<FormatMode>, Source), Error> {
    if let Some(raw) = &flags.structured_output {
        return parse_mode(raw)
            .map(|m| (m, Source::Flag))
            .map_err(|e| Error::config(format!("--structured-output: {e}")));
    }
    let (raw, source, name) = match (env.get("PAI_STRUCTURED_OUTPUT"), &file.structured_output) {
        (Some(raw), _) => (raw, Source::Env, "PAI_STRUCTURED_OUTPUT"),
        (None, Some(raw)) => (
            raw.as_str(),
            Source::File,
            "structured_output in config.toml",
        ),
        (None, None) => return Ok((None, Source::Default)),
    };
    match parse_mode(raw) {
        Ok(m) => Ok((m, source)),
        Err(e) => {
            warnings.push(format!("ignoring {name}: {e}; using auto"));
            Ok((None, Source::Default))
        }
    }
}

/// A whole number from the environment variable `var`, else the file's `key`, within `range`.
fn number(
    env: &Env,
    var: &str,
    from_file: Option<i64>,
    key: &str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
    warnings: &mut Vec<String>,
) -> (u64, Source) {
    let (raw, source, said) = match env.get(var) {
        Some(raw) => (
            raw.trim().parse::<u64>().ok(),
            Source::Env,
            format!("{var}={raw}"),
        ),
        None => match from_file {
            Some(n) => (
                u64::try_from(n).ok(),
                Source::File,
                format!("{key} = {n} in config.toml"),
            ),
            None => return (default, Source::Default),
        },
    };
    match raw {
        Some(n) if range.contains(&n) => (n, source),
        _ => {
            warnings.push(format!(
                "ignoring {said}: expected a whole number from {} to {}; using {default}",
                range.start(),
                range.end()
            ));
            (default, Source::Default)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(
        flags: &Flags,
        env: &[(&str, &str)],
        toml: &str,
        local: bool,
    ) -> (ModelCall, Vec<String>) {
        let file: FileSettings = toml::from_str(toml).unwrap();
        let mut warnings = Vec::new();
        let r = ModelCall::resolve(
            flags,
            &Env::from_pairs(env.iter().copied()),
            &file,
            local,
            &mut warnings,
        )
        .unwrap();
        (r, warnings)
    }

    #[test]
    fn defaults_depend_on_where_the_server_is() {
        let (remote, w) = resolve(&Flags::default(), &[], "", false);
        assert!(w.is_empty());
        assert_eq!(remote.structured_output, None);
        assert_eq!(remote.request_timeout, DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(remote.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
        let (local, _) = resolve(&Flags::default(), &[], "", true);
        assert_eq!(local.request_timeout, DEFAULT_LOCAL_REQUEST_TIMEOUT);
    }

    #[test]
    fn flag_beats_environment_beats_file() {
        let toml = "structured_output = \"prompt\"\nrequest_timeout_secs = 900\nmax_output_tokens = 2048\n";
        let (r, _) = resolve(&Flags::default(), &[], toml, false);
        assert_eq!(r.structured_output, Some(FormatMode::Prompt));
        assert_eq!(r.structured_output_source, Source::File);
        assert_eq!(r.request_timeout, Duration::from_secs(900));
        assert_eq!(r.max_output_tokens, 2048);
        let env = [
            ("PAI_STRUCTURED_OUTPUT", "json_object"),
            ("PAI_REQUEST_TIMEOUT", "60"),
        ];
        let (r, _) = resolve(&Flags::default(), &env, toml, false);
        assert_eq!(r.structured_output, Some(FormatMode::JsonObject));
        assert_eq!(r.request_timeout_source, Source::Env);
        let flags = Flags {
            structured_output: Some("auto".into()),
            ..Flags::default()
        };
        let (r, _) = resolve(&flags, &env, toml, false);
        assert_eq!(r.structured_output, None);
        assert_eq!(r.structured_output_source, Source::Flag);
    }

    #[test]
    fn bad_values_warn_and_a_bad_flag_is_an_error() {
        let env = [
            ("PAI_STRUCTURED_OUTPUT", "xml"),
            ("PAI_MAX_OUTPUT_TOKENS", "12"),
        ];
        let (r, w) = resolve(&Flags::default(), &env, "", false);
        assert_eq!(r.structured_output, None);
        assert_eq!(r.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
        assert_eq!(w.len(), 2, "{w:?}");
        let flags = Flags {
            structured_output: Some("xml".into()),
            ..Flags::default()
        };
        let file = FileSettings::default();
        let err = ModelCall::resolve(&flags, &Env::default(), &file, false, &mut Vec::new());
        assert!(err.is_err());
    }
}
