//! Span exporters of our own: a readable stdout exporter, and a counting wrapper.

use std::fmt;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::trace::Status;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Prints each span as one readable line to stdout: name, ids, duration, status and
/// attributes. For demos and local debugging.
#[derive(Debug, Clone, Default)]
pub struct StdoutSpanExporter;

fn short(id: impl fmt::Display) -> String {
    let s = id.to_string();
    s[..8.min(s.len())].to_owned()
}

/// One span as a line.
pub fn format_span(span: &SpanData) -> String {
    let parent = if span.parent_span_id == opentelemetry::trace::SpanId::INVALID {
        "root".to_owned()
    } else {
        short(span.parent_span_id)
    };
    let took = span
        .end_time
        .duration_since(span.start_time)
        .unwrap_or_default();
    let status = match &span.status {
        Status::Error { description } => format!(" ERROR({description})"),
        Status::Ok => " OK".to_owned(),
        Status::Unset => String::new(),
    };
    let attrs: Vec<String> = span
        .attributes
        .iter()
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    format!(
        "[span] {} trace={} span={} parent={} {:.3}ms{} {}",
        span.name,
        short(span.span_context.trace_id()),
        short(span.span_context.span_id()),
        parent,
        took.as_secs_f64() * 1000.0,
        status,
        attrs.join(" ")
    )
}

impl SpanExporter for StdoutSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for span in &batch {
            let _ = writeln!(out, "{}", format_span(span));
        }
        Ok(())
    }
}

/// Counts the spans that pass through to `inner`, and logs export failures once (then counts
/// them) instead of once per batch: a collector that is down must not flood the logs.
#[derive(Debug)]
pub(crate) struct Counting<E> {
    pub(crate) inner: E,
    pub(crate) count: Arc<AtomicU64>,
    pub(crate) failures: Arc<AtomicU64>,
    pub(crate) failing: AtomicBool,
    pub(crate) last_error: Arc<std::sync::Mutex<Option<String>>>,
}

impl<E> Counting<E> {
    pub(crate) fn new(inner: E, count: Arc<AtomicU64>, failures: Arc<AtomicU64>) -> Self {
        Self {
            inner,
            count,
            failures,
            failing: AtomicBool::new(false),
            last_error: Arc::default(),
        }
    }

    /// Shares the transport's last error, to name it in the warning.
    pub(crate) fn with_last_error(mut self, last: Arc<std::sync::Mutex<Option<String>>>) -> Self {
        self.last_error = last;
        self
    }
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let r = self.inner.export(batch).await;
        match &r {
            Ok(()) => {
                self.count.fetch_add(n, Ordering::Relaxed);
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(target: "hooks::otel", "span export recovered");
                }
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                if !self.failing.swap(true, Ordering::Relaxed) {
                    let cause = self
                        .last_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default();
                    tracing::warn!(
                        target: "hooks::otel",
                        "span export failed: {e}{cause}; the run goes on and further failures are counted, not logged, until export recovers"
                    );
                }
            }
        }
        r
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Keeps every exported span in memory: for tests that check thousands of spans (the batch
/// processor would drop spans past its queue).
#[derive(Debug, Clone, Default)]
pub struct SpanCollector {
    spans: Arc<std::sync::Mutex<Vec<SpanData>>>,
}

impl SpanCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every span collected so far.
    pub fn spans(&self) -> Vec<SpanData> {
        self.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// How many spans were collected.
    pub fn len(&self) -> usize {
        self.spans.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// True when none were.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SpanExporter for SpanCollector {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if let Ok(mut s) = self.spans.lock() {
            s.extend(batch);
        }
        Ok(())
    }
}

/// The OTLP exporter's HTTP client, keeping the cause of the last transport failure (the
/// exporter itself reports every one as "network error").
#[derive(Debug)]
pub(crate) struct Transport<C> {
    pub(crate) inner: C,
    pub(crate) last_error: Arc<std::sync::Mutex<Option<String>>>,
}

#[async_trait::async_trait]
impl<C: opentelemetry_http::HttpClient> opentelemetry_http::HttpClient for Transport<C> {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        let r = self.inner.send_bytes(request).await;
        if let Err(e) = &r {
            // The HTTP client names the URL, which may carry credentials or a token.
            let chain =
                hooks_core::http::redact_urls_in(&hooks_core::http::error_chain(e.as_ref()));
            *self
                .last_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(chain);
        }
        r
    }
}
