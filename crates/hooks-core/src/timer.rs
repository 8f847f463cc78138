//! A tokio timer for the registry's per-hook deadline (feature `rt-tokio`; without it the core
//! is runtime-agnostic).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Sleeps on the tokio runtime; give it to
/// [`HookRegistry::set_deadline`](crate::HookRegistry::set_deadline).
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// let mut registry = hooks_core::HookRegistry::new();
/// registry.set_deadline(Duration::from_secs(30), Arc::new(hooks_core::TokioTimer));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

impl crate::Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}
