//! Errors of the telemetry provider.

/// Telemetry could not be set up or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The OTLP exporter could not be built (a bad endpoint, a missing feature).
    #[error("cannot build the OTLP {signal} exporter; check the endpoint and protocol")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The HTTP client's TLS or proxy settings are unusable.
    #[error("cannot build the OTLP HTTP client")]
    Http(#[source] hooks_core::http::HttpError),
    /// The async export mode needs a tokio runtime to run its batch tasks on.
    #[error(
        "ExportMode::Tokio needs a running tokio runtime; call install() inside one, or use ExportMode::Blocking"
    )]
    NoRuntime,
    /// A blocking shutdown would stall this thread's runtime.
    #[error(
        "shutting down the tokio-mode exporter from inside a current-thread runtime would stall it; call shutdown_async().await instead"
    )]
    WouldBlock,
    /// Flushing or shutting down failed.
    #[error("telemetry {what} failed{}", transport.as_deref().map(|t| format!(" (last transport error: {t})")).unwrap_or_default())]
    Sdk {
        /// `flush` or `shutdown`.
        what: &'static str,
        /// The cause of the last failed export request, when one failed in transport.
        transport: Option<String>,
        /// Why.
        #[source]
        source: opentelemetry_sdk::error::OTelSdkError,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        assert!(
            Error::NoRuntime
                .to_string()
                .contains("use ExportMode::Blocking")
        );
        assert!(
            Error::WouldBlock
                .to_string()
                .contains("shutdown_async().await")
        );
    }
}
