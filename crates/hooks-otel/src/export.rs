//! Span exporters of our own: a readable stdout exporter, and a counting wrapper.

use std::fmt;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Counts the spans that pass through to `inner`.
#[derive(Debug)]
pub(crate) struct Counting<E> {
    pub(crate) inner: E,
    pub(crate) count: Arc<AtomicU64>,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let r = self.inner.export(batch).await;
        if r.is_ok() {
            self.count.fetch_add(n, Ordering::Relaxed);
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
