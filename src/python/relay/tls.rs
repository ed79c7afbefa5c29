//! The upstream client's connector: plain TCP for `http://` upstreams, TLS through
//! rustls (the `ring` provider, HTTP/1.1 only) for `https://` ones, trusting
//! `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else the platform's store
//! (`rustls-native-certs`).

use std::sync::Arc;
use std::time::Duration;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::{ClientConfig, RootCertStore};

/// The connector the relay's client reaches the upstream with.
pub(crate) type Connector = HttpsConnector<HttpConnector>;

/// The trusted certificates, chosen as the Python relay's client (httpx) chooses
/// them: `SSL_CERT_FILE` alone when set, else `SSL_CERT_DIR` alone when set, else
/// the platform's store (where httpx takes certifi's bundle instead). None found is
/// an error that says where they were looked for.
fn roots() -> Result<RootCertStore, String> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let (found, place) = if let Some(file) = set("SSL_CERT_FILE") {
        let place = format!("SSL_CERT_FILE={}", file.to_string_lossy());
        let file = std::path::PathBuf::from(file);
        (
            rustls_native_certs::load_certs_from_paths(Some(&file), None),
            place,
        )
    } else if let Some(dir) = set("SSL_CERT_DIR") {
        let place = format!("SSL_CERT_DIR={}", dir.to_string_lossy());
        let dir = std::path::PathBuf::from(dir);
        (
            rustls_native_certs::load_certs_from_paths(None, Some(&dir)),
            place,
        )
    } else {
        let place = "the platform's certificate store".to_owned();
        (rustls_native_certs::load_native_certs(), place)
    };
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let mut why = format!("no trusted certificate found in {place}");
        if let Some(first) = found.errors.first() {
            why.push_str(&format!(" ({first})"));
        }
        return Err(why);
    }
    Ok(roots)
}

/// The connector: `https` loads the trusted certificates (an `http://` upstream's
/// relay never reads them); `connect_timeout` bounds the TCP connection.
pub(crate) fn connector(https: bool, connect_timeout: Duration) -> Result<Connector, String> {
    let roots = if https {
        roots()?
    } else {
        RootCertStore::empty()
    };
    // `ring` rather than rustls' default aws-lc-rs: no cmake or nasm to build it. rustls
    // marks it deprecated for its lack of post-quantum key exchange: the handshake uses
    // X25519 or the NIST curves, as the Python relay's OpenSSL may.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    // Small writes (an event, a request's body after its headers) go out at once.
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    // The scheme is the TLS layer's to read.
    http.enforce_http(false);
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}

/// What a failed TLS handshake says (a certificate not trusted, a name it is not
/// valid for), or `None` for any other failure. An `io::Error` is looked into
/// itself (its `source` skips the error it wraps).
pub(crate) fn tls_failure(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut seen = Some(error);
    // Bounded: a chain of errors is short, and a cyclic one must not hang.
    for _ in 0..16 {
        let e = seen?;
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        seen = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}
