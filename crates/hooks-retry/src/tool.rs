//! `ToolRetryHook`: the same backoff for tool calls whose error a predicate marks transient.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hooks_core::{
    AfterInvocationEvent, AfterToolCallEvent, HookError, HookPriority, HookProvider, HookSet,
    RunId, async_trait,
};

use crate::backoff::{Backoff, Clocks};
use crate::error::Result;

type Transient = dyn Fn(&str, &str) -> bool + Send + Sync;

/// Retries failed tool calls whose error `is_transient(tool_name, error)` accepts, with the
/// same backoff as [`ModelRetryHook`](crate::ModelRetryHook). Cancelled calls are never
/// retried. When the retries run out, the last error goes to the model and the loop reports
/// the exhaustion.
///
/// ```
/// use hooks_retry::ToolRetryHook;
/// let hook = ToolRetryHook::builder(|_tool, error| error.contains("temporarily unavailable"))
///     .with_max_retries(2)
///     .build()
///     .unwrap();
/// assert_eq!(hook.retries_total(), 0);
/// ```
pub struct ToolRetryHook {
    is_transient: Box<Transient>,
    max_retries: u32,
    backoff: Backoff,
    budget: Option<Duration>,
    priority: HookPriority,
    name: Option<String>,
    clocks: Clocks<String>,
    retries: AtomicU64,
    exhausted: AtomicU64,
}

impl fmt::Debug for ToolRetryHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRetryHook")
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .field("budget", &self.budget)
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

impl ToolRetryHook {
    /// A builder with the model hook's defaults (3 retries, 1 s, ×2, 30 s cap, 5 min budget).
    pub fn builder(
        is_transient: impl Fn(&str, &str) -> bool + Send + Sync + 'static,
    ) -> ToolRetryHookBuilder {
        ToolRetryHookBuilder {
            hook: ToolRetryHook {
                is_transient: Box::new(is_transient),
                max_retries: 3,
                backoff: Backoff::default(),
                budget: Some(Duration::from_secs(300)),
                priority: HookPriority::DEFAULT,
                name: None,
                clocks: Clocks::new(),
                retries: AtomicU64::new(0),
                exhausted: AtomicU64::new(0),
            },
        }
    }

    /// Retries asked for so far.
    pub fn retries_total(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Calls whose retries or budget ran out.
    pub fn exhausted_total(&self) -> u64 {
        self.exhausted.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl HookProvider for ToolRetryHook {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("ToolRetryHook")
    }

    fn priority(&self) -> HookPriority {
        self.priority
    }

    fn hooks(&self) -> HookSet {
        HookSet::AFTER_TOOL_CALL | HookSet::AFTER_INVOCATION | HookSet::RUN_ABANDONED
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.clocks.forget_run(run_id);
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        let transient = match (e.error(), e.cancelled()) {
            (Some(err), None) => (self.is_transient)(e.tool_name(), err),
            _ => false,
        };
        let key = (e.run_id().clone(), e.tool_call_id().to_owned());
        if !transient {
            if e.attempt() > 0 {
                self.clocks.forget(&key);
            }
            return Ok(());
        }
        let n = e.attempt();
        let delay = self.backoff.jittered(n);
        // A run whose clock cannot be kept (run-scoped state is full) is not retried: its
        // budget could not be enforced.
        let over_budget = match self.clocks.elapsed(&key, e.duration()) {
            Ok(elapsed) => self
                .budget
                .is_some_and(|b| elapsed.saturating_add(delay) > b),
            Err(_) => true,
        };
        if n >= self.max_retries || over_budget {
            self.clocks.forget(&key);
            self.exhausted.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                target: "hooks::retry",
                run_id = e.run_id().as_str(),
                tool_name = e.tool_name(),
                tool_call_id = e.tool_call_id(),
                attempt = n,
                max_retries = self.max_retries,
                over_budget,
                "Tool call retries exhausted"
            );
            return Ok(());
        }
        self.retries.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            target: "hooks::retry",
            run_id = e.run_id().as_str(),
            tool_name = e.tool_name(),
            tool_call_id = e.tool_call_id(),
            attempt = n + 1,
            max_retries = self.max_retries,
            delay_ms = delay.as_secs_f64() * 1000.0,
            reason = "transient_error",
            "Retrying tool call"
        );
        self.clocks.wait(key, delay).await;
        e.request_retry();
        Ok(())
    }

    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.clocks.forget_run(e.run_id());
        Ok(())
    }
}

/// Builds a [`ToolRetryHook`].
#[derive(Debug)]
pub struct ToolRetryHookBuilder {
    hook: ToolRetryHook,
}

impl ToolRetryHookBuilder {
    crate::backoff::shared_setters!();

    /// Builds the hook.
    ///
    /// # Errors
    /// A factor below 1, an initial delay above the cap, or proportional jitter outside 0..=1.
    pub fn build(self) -> Result<ToolRetryHook> {
        self.hook.backoff.validate()?;
        Ok(self.hook)
    }
}
