//! Logging for agent runs: [`LoggingHook`] emits one `tracing` event per lifecycle event, with
//! the Python original's messages and fields; [`StructuredLoggingHook`] emits the same events as
//! JSON lines.
//!
//! Nothing a user did not opt into leaves the process: by default no argument value, tool
//! result or prompt beyond a 100-character preview is logged.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use hooks_core::HookRegistry;
//! use hooks_logging::{LoggingHook, StructuredLoggingHook};
//!
//! let mut registry = HookRegistry::new();
//! registry.add(LoggingHook::new()).unwrap();
//! registry.add(StructuredLoggingHook::builder().with_field("service", "support").build().unwrap()).unwrap();
//! let registry = Arc::new(registry);
//! # let _ = registry;
//! ```
//!
//! # Features
//!
//! This crate has no features; the umbrella crate `hooks` exposes it as `hooks::logging`
//! behind its `logging` feature.

mod callsite;
mod error;
mod fields;
mod hook;
mod structured;

pub use error::{Error, Result};
pub use fields::{PROMPT_PREVIEW_CHARS, RESULT_PREVIEW_CHARS};
pub use hook::{DEFAULT_TARGET, LoggingHook, LoggingHookBuilder};
pub use structured::{
    JsonLines, STRUCTURED_EVENT_NAME, StructuredLoggingHook, StructuredLoggingHookBuilder,
    install_json_subscriber, json_subscriber, rfc3339_utc,
};
pub use tracing;

/// The most extra fields a hook takes (a `tracing` event carries at most 32 fields).
pub const MAX_EXTRA_FIELDS: usize = 20;
