//! The one HTTP path every sibling crate that talks HTTP builds on (feature `http`): a
//! [`reqwest`] client over rustls (the pure-Rust TLS stack, on the `ring` provider — no system
//! OpenSSL), trusting the system's roots plus any custom root certificate (a corporate CA, a
//! test server's throwaway certificate), and honouring the standard proxy variables
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, lower case too) unless told not to.
//!
//! ```
//! use hooks_core::http::HttpConfig;
//! let config = HttpConfig::new().with_proxy("http://127.0.0.1:3128").unwrap();
//! let client = config.client().unwrap();
//! # let _ = client;
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub use reqwest;

/// Why an HTTP client could not be configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A root certificate file could not be read.
    #[error(
        "cannot read the root certificate file {path}: {source}; check the path and its permissions"
    )]
    ReadCertificate {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The PEM text held no certificate, or a malformed one.
    #[error(
        "no valid PEM certificate in {what}: {reason}; pass a `-----BEGIN CERTIFICATE-----` block"
    )]
    BadCertificate {
        /// Where the PEM came from.
        what: String,
        /// What was wrong.
        reason: String,
    },
    /// The proxy URL is not a valid http(s) or socks URL.
    #[error("invalid proxy URL {url:?}: {source}; use e.g. http://host:3128")]
    BadProxy {
        /// The URL (without credentials).
        url: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// A service URL is not a valid http(s) URL.
    #[error("invalid URL {url:?}: {reason}; use e.g. https://host/path")]
    Url {
        /// The URL (without credentials).
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The TLS verifier or the client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Build(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// TLS and proxy settings for an HTTP client: system roots plus custom roots, and the
/// standard proxy variables (or an explicit proxy, or none).
#[derive(Clone, Default)]
pub struct HttpConfig {
    roots: Vec<CertificateDer<'static>>,
    only_custom_roots: bool,
    proxy: Option<String>,
    no_proxy: bool,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("custom_roots", &self.roots.len())
            .field("only_custom_roots", &self.only_custom_roots)
            // A proxy URL may carry credentials.
            .field("proxy", &self.proxy.as_ref().map(|_| "<set>"))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl HttpConfig {
    /// System roots, proxies from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also trusts the certificates in `pem` (one or more `BEGIN CERTIFICATE` blocks).
    ///
    /// # Errors
    /// [`HttpError::BadCertificate`] when `pem` holds no valid certificate.
    pub fn with_root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, HttpError> {
        self.roots.extend(parse_pem(pem, "the PEM text")?);
        Ok(self)
    }

    /// Also trusts the certificates in the PEM file at `path` (a corporate CA bundle).
    ///
    /// # Errors
    /// [`HttpError::ReadCertificate`] when the file cannot be read,
    /// [`HttpError::BadCertificate`] when it holds no valid certificate.
    pub fn with_root_certificate_file(mut self, path: impl AsRef<Path>) -> Result<Self, HttpError> {
        let path = path.as_ref();
        let pem = std::fs::read(path).map_err(|source| HttpError::ReadCertificate {
            path: path.to_owned(),
            source,
        })?;
        self.roots
            .extend(parse_pem(&pem, &path.display().to_string())?);
        Ok(self)
    }

    /// Trusts only the custom roots, not the system's (a closed network, a test).
    #[must_use]
    pub fn with_only_custom_roots(mut self) -> Self {
        self.only_custom_roots = true;
        self
    }

    /// Sends every request through `url` instead of the proxy variables.
    ///
    /// # Errors
    /// [`HttpError::BadProxy`] for a URL reqwest cannot use.
    pub fn with_proxy(mut self, url: impl Into<String>) -> Result<Self, HttpError> {
        let url = url.into();
        reqwest::Proxy::all(&url).map_err(|source| HttpError::BadProxy {
            url: redact_url(&url),
            source,
        })?;
        self.proxy = Some(url);
        self.no_proxy = false;
        Ok(self)
    }

    /// Connects directly, ignoring the proxy variables.
    #[must_use]
    pub fn without_proxy(mut self) -> Self {
        self.proxy = None;
        self.no_proxy = true;
        self
    }

    /// What a client built from these settings must keep out of error messages: the proxy
    /// URL's user and password, as written and decoded. (A server or proxy may echo them.)
    pub fn secrets_to_scrub(&self) -> Vec<String> {
        let Some(proxy) = self.proxy.as_deref() else {
            return Vec::new();
        };
        let Ok(url) = reqwest::Url::parse(proxy) else {
            return vec![proxy.to_owned()];
        };
        let mut out = Vec::new();
        for raw in [url.username(), url.password().unwrap_or_default()] {
            if raw.is_empty() {
                continue;
            }
            out.push(raw.to_owned());
            if let Ok(decoded) = std::str::from_utf8(&percent_decode(raw)) {
                out.push(decoded.to_owned());
            }
        }
        out
    }

    /// How many custom root certificates are trusted.
    pub fn custom_roots(&self) -> usize {
        self.roots.len()
    }

    fn tls(&self) -> Result<rustls::ClientConfig, HttpError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| HttpError::Build(Box::new(e)))?;
        let config = if self.only_custom_roots {
            let mut store = rustls::RootCertStore::empty();
            for root in &self.roots {
                store
                    .add(root.clone())
                    .map_err(|e| HttpError::BadCertificate {
                        what: "a custom root".to_owned(),
                        reason: e.to_string(),
                    })?;
            }
            builder.with_root_certificates(store).with_no_client_auth()
        } else {
            let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(
                self.roots.iter().cloned(),
                provider,
            )
            .map_err(|e| HttpError::Build(Box::new(e)))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        };
        Ok(config)
    }

    fn proxy(&self) -> Result<Option<reqwest::Proxy>, HttpError> {
        self.proxy
            .as_deref()
            .map(|url| {
                reqwest::Proxy::all(url).map_err(|source| HttpError::BadProxy {
                    url: redact_url(url),
                    source,
                })
            })
            .transpose()
    }

    /// An async client builder with these settings (add timeouts and build).
    ///
    /// # Errors
    /// [`HttpError`] when the TLS settings or the proxy are unusable.
    pub fn client_builder(&self) -> Result<reqwest::ClientBuilder, HttpError> {
        let mut b = reqwest::Client::builder().tls_backend_preconfigured(self.tls()?);
        if self.no_proxy {
            b = b.no_proxy();
        }
        if let Some(p) = self.proxy()? {
            b = b.proxy(p);
        }
        Ok(b)
    }

    /// An async client with these settings.
    ///
    /// # Errors
    /// [`HttpError`] when the TLS settings or the proxy are unusable.
    pub fn client(&self) -> Result<reqwest::Client, HttpError> {
        self.client_builder()?
            .build()
            .map_err(|e| HttpError::Build(Box::new(e)))
    }

    /// A blocking client with these settings (feature `http-blocking`). Build it off any
    /// async runtime's threads: reqwest refuses to build one inside a runtime.
    ///
    /// # Errors
    /// [`HttpError`] when the TLS settings or the proxy are unusable.
    #[cfg(feature = "http-blocking")]
    pub fn blocking_client(&self) -> Result<reqwest::blocking::Client, HttpError> {
        let mut b = reqwest::blocking::Client::builder().tls_backend_preconfigured(self.tls()?);
        if self.no_proxy {
            b = b.no_proxy();
        }
        if let Some(p) = self.proxy()? {
            b = b.proxy(p);
        }
        b.build().map_err(|e| HttpError::Build(Box::new(e)))
    }
}

/// `%XX` sequences decoded (others kept as they are).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn parse_pem(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, HttpError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| HttpError::BadCertificate {
            what: what.to_owned(),
            reason: pem_problem(&e).to_owned(),
        })?;
    if certs.is_empty() {
        return Err(HttpError::BadCertificate {
            what: what.to_owned(),
            reason: "it has no certificate block".to_owned(),
        });
    }
    // Parse each now, so a broken one is reported here and not at the first request.
    let mut store = rustls::RootCertStore::empty();
    for c in &certs {
        store
            .add(c.clone())
            .map_err(|e| HttpError::BadCertificate {
                what: what.to_owned(),
                reason: e.to_string(),
            })?;
    }
    Ok(certs)
}

/// A URL fit for logs and error messages: credentials (`scheme://user:pass@host`, even with
/// an unencoded `/`, `?` or `#` in the password) and the query string (where some services
/// take a key) are replaced by `***`, and it is shortened to 200 characters. It errs on the
/// side of hiding too much.
///
/// ```
/// use hooks_core::http::redact_url;
/// assert_eq!(redact_url("https://me:pw@host/v1?key=k"), "https://***@host/v1?***");
/// assert_eq!(redact_url("http://me:p/w?x@host/v1"), "http://***@host/v1");
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    // Anything up to the last '@' may be credentials (a password may hold '/', '?', '#').
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => ("***", &rest[at..]),
        None => ("", rest),
    };
    let (rest, query) = match rest.find(['?', '#']) {
        Some(q) => (&rest[..q], "?***"),
        None => (rest, ""),
    };
    crate::text::preview(&format!("{scheme}{userinfo}{rest}{query}"), 200).into_owned()
}

/// What is wrong with a PEM text, in words (the parser's own error quotes raw bytes).
fn pem_problem(e: &rustls::pki_types::pem::Error) -> &'static str {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::MissingSectionEnd { .. } => "a BEGIN line has no END line",
        E::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        E::Base64Decode(_) => "a certificate block is not valid base64",
        E::Io(_) => "it cannot be read",
        _ => "it is malformed",
    }
}

/// `text` with every URL in it passed through [`redact_url`] (a URL runs from its scheme to
/// the next whitespace, quote, `)` or `>`): for error messages that quote a URL.
///
/// ```
/// use hooks_core::http::redact_urls_in;
/// assert_eq!(
///     redact_urls_in("error sending request for url (https://u:pw@host/v1?token=t)"),
///     "error sending request for url (https://***@host/v1?***)"
/// );
/// ```
pub fn redact_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // A URL starts at `://`, or at `:\/\/` inside JSON text.
    let next = |r: &str| {
        [r.find("://"), r.find(":\\/\\/")]
            .into_iter()
            .flatten()
            .min()
    };
    while let Some(i) = next(rest) {
        // Back up over the scheme's letters (by character: a multi-byte one may precede).
        let start = rest[..i]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |(j, c)| j + c.len_utf8());
        let end = rest[i..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | '>' | '<'))
            .map_or(rest.len(), |j| i + j);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end].replace("\\/", "/")));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The error and every cause below it, joined with `": "` (reqwest's own message names only
/// the outermost step, e.g. "error sending request").
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let next = c.to_string();
        if !s.ends_with(&next) {
            s.push_str(": ");
            s.push_str(&next);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pem_is_a_typed_error() {
        let e = HttpConfig::new()
            .with_root_certificate_pem(b"not a certificate")
            .unwrap_err();
        assert!(matches!(e, HttpError::BadCertificate { .. }), "{e}");
        let e = HttpConfig::new()
            .with_root_certificate_pem(
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            )
            .unwrap_err();
        assert!(matches!(e, HttpError::BadCertificate { .. }), "{e}");
        let e = HttpConfig::new()
            .with_root_certificate_file("/nonexistent/ca.pem")
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn urls_are_redacted_whatever_their_shape() {
        for (url, want) in [
            ("https://me:pw@host/v1?key=k", "https://***@host/v1?***"),
            (
                "http://user:pa/SECRET@127.0.0.1:1/v1",
                "http://***@127.0.0.1:1/v1",
            ),
            ("http://user:SE?CRET@h/v1", "http://***@h/v1"),
            ("http://user:SE#CRET@h", "http://***@h"),
            ("http://h/v1#frag", "http://h/v1?***"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
            ("no scheme at all", "no scheme at all"),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
        let text =
            "failed (https://u:SECRET@h/x?t=TOKEN) and http://other/ok, then \"ftp://a:B@c\"";
        let r = redact_urls_in(text);
        assert!(
            !r.contains("SECRET") && !r.contains("TOKEN") && !r.contains(":B@"),
            "{r}"
        );
        assert!(r.contains("http://other/ok,"), "{r}");
        // A multi-byte character before the scheme, JSON-escaped slashes.
        assert_eq!(redact_urls_in("échec://x"), "échec://x");
        assert_eq!(redact_urls_in("é://u:P@h"), "é://***@h");
        let r = redact_urls_in(r#""https:\/\/user:URLPASS@h\/v1?token=URLTOKEN""#);
        assert!(!r.contains("URLPASS") && !r.contains("URLTOKEN"), "{r}");
    }

    #[test]
    fn proxy_errors_hide_credentials() {
        let e = HttpConfig::new()
            .with_proxy("http://user:s3cret-MARKER@[::1")
            .unwrap_err();
        let msg = error_chain(&e);
        assert!(!msg.contains("s3cret-MARKER"), "{msg}");
        let dbg = format!(
            "{:?}",
            HttpConfig::new()
                .with_proxy("http://user:s3cret-MARKER@127.0.0.1:1")
                .unwrap()
        );
        assert!(!dbg.contains("s3cret-MARKER"), "{dbg}");
    }

    #[test]
    fn clients_build_with_system_and_custom_roots() {
        assert!(HttpConfig::new().client().is_ok());
        assert!(HttpConfig::new().with_only_custom_roots().client().is_ok());
        assert!(HttpConfig::new().without_proxy().client().is_ok());
    }
}
