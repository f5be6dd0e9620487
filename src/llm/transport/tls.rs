//! TLS for every HTTP client pai builds: rustls with the `ring` crypto provider.
//!
//! reqwest (built without a bundled provider, the one rmcp's MCP client uses too) takes the
//! process's default rustls provider and panics when none is installed, so every place that
//! builds a client first calls [`crypto_provider`]: the model providers' transport here, and
//! the MCP client's streamable HTTP connection.
//!
//! The providers' client trusts the Mozilla root certificates compiled into the binary
//! (`webpki-roots`), not the system's store, so `SSL_CERT_FILE` and CAs added to the system
//! are not read.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The process's rustls crypto provider: `ring`, installed on first use unless one is
/// installed already (then that one).
pub(crate) fn crypto_provider() -> Result<Arc<CryptoProvider>, String> {
    if let Some(provider) = CryptoProvider::get_default() {
        return Ok(provider.clone());
    }
    // An error means another thread installed a provider in between: that one is used.
    let _ = rustls::crypto::ring::default_provider().install_default();
    CryptoProvider::get_default().cloned().ok_or_else(|| {
        "no TLS crypto provider could be installed (this is a bug in pai: please report it)"
            .to_string()
    })
}

/// The rustls configuration of the providers' client (TLS 1.2 and 1.3, the webpki roots, no
/// client certificate, HTTP/2 offered by ALPN before HTTP/1.1).
pub(super) fn client_config() -> Result<rustls::ClientConfig, String> {
    let provider = crypto_provider()?;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| format!("the TLS crypto provider is unusable: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_installed_and_the_config_offers_http2() {
        let config = client_config().unwrap();
        assert!(CryptoProvider::get_default().is_some());
        assert_eq!(config.alpn_protocols[0], b"h2");
        assert!(config.enable_sni);
        // Installing again keeps the one provider.
        assert!(Arc::ptr_eq(
            &crypto_provider().unwrap(),
            &crypto_provider().unwrap()
        ));
    }
}
