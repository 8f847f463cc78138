//! Setting up OTLP export: tracer and meter providers and a guard that flushes them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracerProvider, TracerProviderBuilder};

use hooks_core::http::{HttpConfig, reqwest};

use crate::TelemetryHook;
use crate::builder::TelemetryHookBuilder;
use crate::error::{Error, Result};
use crate::export::{Counting, StdoutSpanExporter, Transport};

/// The cause of the last failed export request, shared by the exporters and the guard.
type LastError = Arc<std::sync::Mutex<Option<String>>>;

/// Builds the OTLP exporter of one signal: the same steps for spans and metrics, on builders
/// of different types.
macro_rules! exporter {
    ($setup:ident, $last_error:expr, $ty:ty, $path:literal, $signal:literal) => {{
        let err = |source| Error::Exporter {
            signal: $signal,
            source,
        };
        match $setup.protocol {
            OtlpProtocol::HttpProtobuf => {
                let mut b = <$ty>::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary);
                if let Some(ep) = $setup.signal_endpoint($path) {
                    b = b.with_endpoint(ep);
                }
                if let Some(t) = $setup.timeout {
                    b = b.with_timeout(t);
                }
                match $setup.mode {
                    ExportMode::Blocking => b
                        .with_http_client(Transport {
                            inner: blocking_client(&$setup.http)?,
                            last_error: $last_error.clone(),
                        })
                        .build()
                        .map_err(err),
                    ExportMode::Tokio => b
                        .with_http_client(Transport {
                            inner: $setup.http.client().map_err(Error::Http)?,
                            last_error: $last_error.clone(),
                        })
                        .build()
                        .map_err(err),
                }
            }
            #[cfg(feature = "grpc")]
            OtlpProtocol::Grpc => {
                let mut b = <$ty>::builder().with_tonic();
                if let Some(ep) = $setup.signal_endpoint("") {
                    b = b.with_endpoint(ep);
                }
                if let Some(t) = $setup.timeout {
                    b = b.with_timeout(t);
                }
                b.build().map_err(err)
            }
        }
    }};
}

/// How spans and metrics are batched and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExportMode {
    /// The SDK's batch processor and periodic reader on their own threads, with a blocking HTTP
    /// client. Works with or without an async runtime; `shutdown()` may be called anywhere.
    #[default]
    Blocking,
    /// Batch tasks on the current tokio runtime with the async HTTP client. Shut it down with
    /// [`TelemetryGuard::shutdown_async`]: a blocking shutdown inside a current-thread runtime
    /// would stall it.
    Tokio,
}

/// The wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// OTLP over HTTP with protobuf bodies (port 4318).
    #[default]
    HttpProtobuf,
    /// OTLP over gRPC (port 4317); needs the `grpc` feature.
    #[cfg(feature = "grpc")]
    Grpc,
}

/// Builds tracer and meter providers that export OTLP.
///
/// The standard variables are honoured when nothing is set in code:
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (base URL; `/v1/traces` and `/v1/metrics` are appended),
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), `OTEL_SERVICE_NAME` and
/// `OTEL_RESOURCE_ATTRIBUTES`.
///
/// ```no_run
/// use hooks_otel::OtlpSetup;
/// let telemetry = OtlpSetup::new().with_service_name("support-bot").install()?;
/// let hook = telemetry.hook().build();
/// // … register `hook`, run agents …
/// telemetry.shutdown()?; // flushes (dropping the guard does too)
/// # Ok::<(), hooks_otel::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct OtlpSetup {
    endpoint: Option<String>,
    service_name: Option<String>,
    mode: ExportMode,
    protocol: OtlpProtocol,
    metric_interval: Option<Duration>,
    timeout: Option<Duration>,
    http: HttpConfig,
}

impl std::fmt::Debug for OtlpSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpSetup")
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(hooks_core::http::redact_url),
            )
            .field("service_name", &self.service_name)
            .field("mode", &self.mode)
            .field("protocol", &self.protocol)
            .field("metric_interval", &self.metric_interval)
            .field("timeout", &self.timeout)
            .field("http", &self.http)
            .finish()
    }
}

impl OtlpSetup {
    /// Defaults and the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// The collector's base URL, e.g. `http://127.0.0.1:4318` (overrides the environment).
    #[must_use]
    pub fn with_endpoint(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint = Some(base_url.into());
        self
    }

    /// `service.name` (overrides `OTEL_SERVICE_NAME`).
    #[must_use]
    pub fn with_service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Threads and a blocking client (default), or tasks on the tokio runtime.
    #[must_use]
    pub fn with_export_mode(mut self, mode: ExportMode) -> Self {
        self.mode = mode;
        self
    }

    /// HTTP/protobuf (default) or gRPC.
    #[must_use]
    pub fn with_protocol(mut self, protocol: OtlpProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// How often metrics are exported (SDK default: 60 s).
    #[must_use]
    pub fn with_metric_interval(mut self, every: Duration) -> Self {
        self.metric_interval = Some(every);
        self
    }

    /// The per-export timeout (SDK default: 10 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// TLS and proxy settings of the HTTP exporter: trust a corporate CA or a collector's own
    /// certificate, or set a proxy (default: system roots, the proxy variables).
    ///
    /// ```
    /// use hooks_core::http::HttpConfig;
    /// use hooks_otel::OtlpSetup;
    /// let setup = OtlpSetup::new()
    ///     .with_endpoint("https://collector.internal:4318")
    ///     .with_http_config(HttpConfig::new().without_proxy());
    /// # let _ = setup;
    /// ```
    #[must_use]
    pub fn with_http_config(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }

    /// The signal's URL: `path` appended to the base's path, its query (a token some
    /// collectors take) kept after it.
    fn signal_endpoint(&self, path: &str) -> Option<String> {
        let base = self.endpoint.as_ref()?;
        Some(match self.protocol {
            OtlpProtocol::HttpProtobuf => match reqwest::Url::parse(base) {
                Ok(mut url) if !url.cannot_be_a_base() => {
                    if let Ok(mut segments) = url.path_segments_mut() {
                        segments.pop_if_empty().extend(path.split('/'));
                    }
                    url.into()
                }
                // Not a URL: the exporter reports it when it is built.
                _ => format!("{}/{path}", base.trim_end_matches('/')),
            },
            #[cfg(feature = "grpc")]
            OtlpProtocol::Grpc => base.clone(),
        })
    }

    /// Builds the providers.
    ///
    /// # Errors
    /// [`Error::Exporter`] when an exporter cannot be built; [`Error::NoRuntime`] for
    /// [`ExportMode::Tokio`] outside a tokio runtime.
    pub fn install(self) -> Result<TelemetryGuard> {
        if self.mode == ExportMode::Tokio && tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let mut resource = Resource::builder();
        if let Some(name) = &self.service_name {
            resource = resource.with_service_name(name.clone());
        }
        let resource = resource.build();
        let exported = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(AtomicU64::new(0));
        let last_error = LastError::default();
        let spans = Counting::new(
            self.span_exporter(&last_error)?,
            exported.clone(),
            failures.clone(),
        )
        .with_last_error(last_error.clone());
        let metrics = self.metric_exporter(&last_error)?;
        let (tracer_provider, meter_provider) = match self.mode {
            ExportMode::Blocking => {
                let mut reader = opentelemetry_sdk::metrics::PeriodicReader::builder(metrics);
                if let Some(every) = self.metric_interval {
                    reader = reader.with_interval(every);
                }
                (
                    SdkTracerProvider::builder()
                        .with_batch_exporter(spans)
                        .with_resource(resource.clone())
                        .build(),
                    SdkMeterProvider::builder()
                        .with_reader(reader.build())
                        .with_resource(resource)
                        .build(),
                )
            }
            ExportMode::Tokio => {
                use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
                use opentelemetry_sdk::runtime::Tokio;
                use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
                let mut reader = PeriodicReader::builder(metrics, Tokio);
                if let Some(every) = self.metric_interval {
                    reader = reader.with_interval(every);
                }
                (
                    SdkTracerProvider::builder()
                        .with_span_processor(BatchSpanProcessor::builder(spans, Tokio).build())
                        .with_resource(resource.clone())
                        .build(),
                    SdkMeterProvider::builder()
                        .with_reader(reader.build())
                        .with_resource(resource)
                        .build(),
                )
            }
        };
        Ok(TelemetryGuard {
            tracer_provider,
            meter_provider,
            mode: self.mode,
            exported,
            failures,
            last_error,
            done: false,
        })
    }

    /// True when the environment names an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub fn endpoint_in_env() -> bool {
        [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
    }

    fn span_exporter(&self, last_error: &LastError) -> Result<opentelemetry_otlp::SpanExporter> {
        exporter!(
            self,
            last_error,
            opentelemetry_otlp::SpanExporter,
            "v1/traces",
            "traces"
        )
    }

    fn metric_exporter(
        &self,
        last_error: &LastError,
    ) -> Result<opentelemetry_otlp::MetricExporter> {
        exporter!(
            self,
            last_error,
            opentelemetry_otlp::MetricExporter,
            "v1/metrics",
            "metrics"
        )
    }
}

/// A blocking reqwest client, built off any async runtime's threads (reqwest refuses to build
/// or drop its blocking client on one).
fn blocking_client(http: &HttpConfig) -> Result<reqwest::blocking::Client> {
    let http = http.clone();
    std::thread::spawn(move || http.blocking_client())
        .join()
        .map_err(|_| {
            Error::Http(hooks_core::http::HttpError::Build(
                "the thread building the blocking HTTP client panicked".into(),
            ))
        })?
        .map_err(Error::Http)
}

/// Owns the providers; flushes and shuts them down on [`shutdown`](Self::shutdown),
/// [`shutdown_async`](Self::shutdown_async) or drop.
#[derive(Debug)]
pub struct TelemetryGuard {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    mode: ExportMode,
    exported: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    last_error: LastError,
    done: bool,
}

impl TelemetryGuard {
    /// Spans printed to stdout as they end (see [`StdoutSpanExporter`]), metrics kept in
    /// process: for demos and local runs without a collector.
    pub fn stdout() -> Self {
        Self::with_simple_exporter(StdoutSpanExporter)
    }

    /// Spans handed to `exporter` as they end (no batching), metrics kept in process. With a
    /// [`SpanCollector`](crate::SpanCollector), tests can check every span of thousands of runs.
    pub fn with_simple_exporter<E: opentelemetry_sdk::trace::SpanExporter + 'static>(
        exporter: E,
    ) -> Self {
        Self::in_process(|b, spans| b.with_simple_exporter(spans), exporter)
    }

    /// Spans batched to `exporter` on the SDK's batch thread, metrics kept in process.
    pub fn with_batch_exporter<E: opentelemetry_sdk::trace::SpanExporter + 'static>(
        exporter: E,
    ) -> Self {
        Self::in_process(|b, spans| b.with_batch_exporter(spans), exporter)
    }

    /// A guard whose spans go to `exporter` (counted) through the processor `attach` adds,
    /// and whose metrics stay in process.
    fn in_process<E: opentelemetry_sdk::trace::SpanExporter + 'static>(
        attach: impl FnOnce(TracerProviderBuilder, Counting<E>) -> TracerProviderBuilder,
        exporter: E,
    ) -> Self {
        let exported = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(AtomicU64::new(0));
        let last_error = LastError::default();
        let spans = Counting::new(exporter, exported.clone(), failures.clone())
            .with_last_error(last_error.clone());
        let tracer_provider = attach(SdkTracerProvider::builder(), spans)
            .with_resource(Resource::builder().build())
            .build();
        Self {
            tracer_provider,
            meter_provider: SdkMeterProvider::builder().build(),
            mode: ExportMode::Blocking,
            exported,
            failures,
            last_error,
            done: false,
        }
    }

    /// How many span exports failed (each failure is a batch; only the first of a streak is
    /// logged).
    pub fn export_failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Why the last export request failed in transport (an untrusted certificate, a refused
    /// connection …), with its whole cause chain; `None` when none has failed.
    pub fn last_export_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// How many spans were exported successfully so far.
    pub fn spans_exported(&self) -> u64 {
        self.exported.load(Ordering::Relaxed)
    }

    /// The tracer provider.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer_provider
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter_provider
    }

    /// A [`TelemetryHook`] builder wired to these providers.
    pub fn hook(&self) -> TelemetryHookBuilder {
        TelemetryHook::builder()
            .with_tracer_provider(&self.tracer_provider)
            .with_meter_provider(&self.meter_provider)
    }

    /// Makes these providers the global ones (for other instrumentation in the program).
    pub fn install_global(&self) {
        opentelemetry::global::set_tracer_provider(self.tracer_provider.clone());
        opentelemetry::global::set_meter_provider(self.meter_provider.clone());
    }

    /// Exports everything buffered now.
    ///
    /// # Errors
    /// [`Error::Sdk`] when the exporters report failure.
    pub fn force_flush(&self) -> Result<()> {
        self.tracer_provider
            .force_flush()
            .map_err(|source| Error::Sdk {
                what: "flush",
                source,
                transport: self.last_export_error(),
            })?;
        self.meter_provider
            .force_flush()
            .map_err(|source| Error::Sdk {
                what: "flush",
                source,
                transport: self.last_export_error(),
            })
    }

    /// Flushes and shuts down, blocking this thread until done.
    ///
    /// # Errors
    /// [`Error::WouldBlock`] for [`ExportMode::Tokio`] on a current-thread runtime (use
    /// [`shutdown_async`](Self::shutdown_async)); [`Error::Sdk`] when shutting down fails.
    pub fn shutdown(mut self) -> Result<()> {
        if self.mode == ExportMode::Tokio && on_current_thread_runtime() {
            return Err(Error::WouldBlock);
        }
        self.done = true;
        shutdown(
            &self.tracer_provider,
            &self.meter_provider,
            &self.last_error,
        )
    }

    /// Flushes and shuts down without blocking the runtime (the work runs on a blocking
    /// thread while the export tasks keep running).
    ///
    /// # Errors
    /// [`Error::Sdk`] when shutting down fails.
    pub async fn shutdown_async(mut self) -> Result<()> {
        self.done = true;
        let (t, m) = (self.tracer_provider.clone(), self.meter_provider.clone());
        let last = self.last_error.clone();
        match tokio::task::spawn_blocking(move || shutdown(&t, &m, &last)).await {
            Ok(r) => r,
            Err(_) => Err(Error::Sdk {
                what: "shutdown",
                source: opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                    "the shutdown task panicked".into(),
                ),
                transport: None,
            }),
        }
    }
}

fn on_current_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

fn shutdown(t: &SdkTracerProvider, m: &SdkMeterProvider, last: &LastError) -> Result<()> {
    let transport = || {
        last.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    };
    let traces = t.shutdown().map_err(|source| Error::Sdk {
        what: "shutdown",
        source,
        transport: transport(),
    });
    let metrics = m.shutdown().map_err(|source| Error::Sdk {
        what: "shutdown",
        source,
        transport: transport(),
    });
    traces.and(metrics)
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.mode == ExportMode::Tokio && tokio::runtime::Handle::try_current().is_ok() {
            // Blocking here could stall the runtime the export tasks run on: shut down from a
            // helper thread, bounded, and do not wait for it.
            let (t, m) = (self.tracer_provider.clone(), self.meter_provider.clone());
            tracing::warn!(target: "hooks::otel", "TelemetryGuard dropped inside a tokio runtime in Tokio mode; call shutdown_async().await to be sure everything is flushed");
            std::thread::spawn(move || {
                let _ = t.shutdown_with_timeout(Duration::from_secs(5));
                let _ = m.shutdown_with_timeout(Duration::from_secs(5));
            });
            return;
        }
        if let Err(e) = shutdown(
            &self.tracer_provider,
            &self.meter_provider,
            &self.last_error,
        ) {
            tracing::warn!(target: "hooks::otel", "telemetry shutdown on drop: {e}");
        }
    }
}
