//! OpenTelemetry for agent runs: [`TelemetryHook`] builds one span tree per run —
//! `invoke_agent` ⊃ `iteration n` ⊃ `chat` / `execute_tool` — with the GenAI semantic
//! conventions, records GenAI and agent metrics, and [`OtlpSetup`] exports both over OTLP.
//! [`NoOpTelemetryHook`] has the same constructor surface and costs nothing.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooks_core::HookRegistry;
//! use hooks_otel::OtlpSetup;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, … are honoured.
//! let telemetry = OtlpSetup::new().with_service_name("support-bot").install()?;
//! let mut registry = HookRegistry::new();
//! registry.add(telemetry.hook().with_agent_name("support").build())?;
//! let registry = Arc::new(registry);
//! // … run agents …
//! telemetry.shutdown()?;
//! # Ok(()) }
//! ```
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `grpc` | OTLP over gRPC ([`OtlpProtocol::Grpc`]) |
//! | `test-util` | [`testing::OtlpReceiver`], a loopback OTLP/HTTP receiver for tests |
//!
//! The umbrella crate `hooks` exposes this crate as `hooks::otel` behind its `otel` feature.

mod builder;
mod error;
mod export;
mod hook;
mod metrics;
mod noop;
pub mod semconv;
mod setup;
mod spans;
#[cfg(feature = "test-util")]
pub mod testing;

pub use builder::TelemetryHookBuilder;
pub use error::{Error, Result};
pub use export::{SpanCollector, StdoutSpanExporter, format_span};
pub use hook::{SCOPE, TelemetryHook};
pub use noop::{NoOpTelemetryHook, NoOpTelemetryHookBuilder};
pub use opentelemetry;
pub use opentelemetry_sdk;
pub use setup::{ExportMode, OtlpProtocol, OtlpSetup, TelemetryGuard};
