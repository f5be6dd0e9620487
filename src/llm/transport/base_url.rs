//! The one check of a provider's base URL, used by the settings (`--base-url`, `PAI_BASE_URL`,
//! `config.toml`) and by the transport: an `http://` or `https://` origin with an optional
//! path, and nothing a key could hide in (credentials, query, fragment). A key pasted into a
//! URL would end up in logs.

use reqwest::Url;

use crate::llm::ProviderKind;

/// A checked base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// The URL without trailing slashes and without a pasted API version path (`/v1beta`,
    /// `/v1`) the provider's own paths add again.
    pub base: String,
    /// `scheme://host[:port]`, for messages.
    pub origin: String,
    /// Whether the host is this machine (a local server needs no key and no proxy).
    pub loopback: bool,
}

impl BaseUrl {
    /// Check `raw` (blank means the provider's default) for `kind`.
    pub fn parse(raw: &str, kind: ProviderKind) -> Result<BaseUrl, String> {
        let raw = match raw.trim() {
            "" => kind.default_base_url(),
            r => r,
        };
        let trimmed = raw.trim_end_matches('/');
        if trimmed.chars().any(char::is_whitespace) {
            return Err(format!(
                "base URL `{trimmed}` must be a plain origin and path, without spaces"
            ));
        }
        let url =
            Url::parse(trimmed).map_err(|e| format!("base URL `{trimmed}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "base URL `{trimmed}` must start with http:// or https://"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(
                "the base URL must not contain credentials (user:password@); keys go in settings, never in URLs"
                    .to_string(),
            );
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "base URL `{trimmed}` must not carry a query or fragment; keys go in settings, never in URLs"
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("base URL `{trimmed}` has no host"))?;
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        let origin = match url.port() {
            Some(port) => format!("{}://{}:{port}", url.scheme(), host),
            None => format!("{}://{}", url.scheme(), host),
        };
        let mut base = trimmed.to_string();
        // The spec says the base replaces the origin; tolerate users pasting the version path.
        let version_suffix = match kind {
            ProviderKind::Gemini => Some("/v1beta"),
            ProviderKind::Anthropic => Some("/v1"),
            ProviderKind::OpenAi => None,
        };
        if let Some(suffix) = version_suffix
            && base.ends_with(suffix)
        {
            base.truncate(base.len() - suffix.len());
        }
        Ok(BaseUrl {
            base,
            origin,
            loopback,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_origins_with_paths_and_strips_what_providers_add() {
        let u = BaseUrl::parse("http://127.0.0.1:8080/v1/", ProviderKind::OpenAi).unwrap();
        assert_eq!(u.base, "http://127.0.0.1:8080/v1");
        assert_eq!(u.origin, "http://127.0.0.1:8080");
        assert!(u.loopback);
        let g = BaseUrl::parse("https://x.example/v1beta", ProviderKind::Gemini).unwrap();
        assert_eq!(g.base, "https://x.example");
        assert!(!g.loopback);
        assert!(
            BaseUrl::parse("http://[::1]:9/", ProviderKind::Anthropic)
                .unwrap()
                .loopback
        );
    }

    #[test]
    fn refuses_what_a_key_could_hide_in() {
        for bad in [
            "ftp://x",
            "https://user:pw@host",
            "https://:pw@host",
            "https://host/?key=abc",
            "https://host/#frag",
            "https://host/a b",
            "not a url",
            "http://",
        ] {
            assert!(
                BaseUrl::parse(bad, ProviderKind::OpenAi).is_err(),
                "{bad} accepted"
            );
        }
    }
}
