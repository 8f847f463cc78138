//! Retry for agent runs: [`ModelRetryHook`] retries empty replies and throttled, failing or
//! timed-out model calls; [`ToolRetryHook`] retries tool calls whose error is transient. Both
//! wait `min(initial_delay × factor^n, max_delay)` before retry `n`, with optional jitter,
//! honour a rate limit's retry-after, stay within a total time budget, and report exhaustion.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use hooks_core::HookRegistry;
//! use hooks_retry::ModelRetryHook;
//!
//! let retry = Arc::new(ModelRetryHook::new());
//! let mut registry = HookRegistry::new();
//! registry.add(retry.clone()).unwrap();
//! // … run agents …
//! println!("retried {} time(s)", retry.stats().retries_total);
//! ```
//!
//! # Features
//!
//! This crate has no features; the umbrella crate `hooks` exposes it as `hooks::retry` behind
//! its `retry` feature. It needs a `tokio` runtime (for its backoff sleeps).

mod backoff;
mod error;
mod model;
mod tool;

pub use backoff::{Backoff, Jitter};

/// The longest wait a server's retry-after hint can ask for (an hour): longer hints are cut
/// to it, and then to the call's time budget, which ends the retries when the wait would
/// pass it.
pub const MAX_SERVER_HINT: std::time::Duration = std::time::Duration::from_secs(3600);
pub use error::{Error, Result};
pub use model::{ModelRetryHook, ModelRetryHookBuilder, OnExhausted, RetryReason, RetryStats};
pub use tool::{ToolRetryHook, ToolRetryHookBuilder};
