//! Errors building a client.

/// An [`OpenAiModel`](crate::OpenAiModel) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The base URL is not an http(s) URL.
    #[error("the base URL {url:?} is not a valid http(s) URL; use e.g. http://127.0.0.1:8080/v1")]
    BadBaseUrl {
        /// The URL (shortened).
        url: String,
    },
    /// The base URL carries credentials (`user:pass@`), which would be sent beside the key
    /// and shown wherever the URL is.
    #[error(
        "the base URL {url:?} carries credentials; remove them and pass the key with with_api_key (or OPENAI_API_KEY)"
    )]
    CredentialsInUrl {
        /// The URL, credentials hidden.
        url: String,
    },
    /// The model name is empty.
    #[error("the model name is empty; name the model the server should run")]
    NoModel,
    /// A setting is out of range.
    #[error("{0}")]
    BadSetting(String),
    /// The HTTP client could not be built (TLS roots, proxy).
    #[error("cannot build the HTTP client")]
    Http(#[from] hooks_core::http::HttpError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
