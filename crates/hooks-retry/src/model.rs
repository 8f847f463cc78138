//! `ModelRetryHook`: retries empty replies and throttled or failing model calls with backoff.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, HookError, HookPriority, HookProvider, HookSet,
    ModelErrorKind, RunId, async_trait,
};

use crate::backoff::{Backoff, Clocks};
use crate::error::Result;

/// Why a model call was retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryReason {
    /// The reply had no content and no tool calls.
    Empty,
    /// The call failed with this kind of error.
    Error(ModelErrorKind),
}

impl RetryReason {
    /// `empty`, or the error kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryReason::Empty => "empty",
            RetryReason::Error(k) => k.as_str(),
        }
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do when the retries (or the time budget) run out on an empty reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnExhausted {
    /// End the run with an error naming the hook (default). A failed call ends the run with
    /// its model error either way.
    #[default]
    Fail,
    /// Let the empty reply through (it is still counted and logged).
    Accept,
}

/// Counts of what a [`ModelRetryHook`] did, over every run it served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryStats {
    /// Retries asked for.
    pub retries_total: u64,
    /// … because the reply was empty.
    pub empty: u64,
    /// … because the call was rate limited.
    pub rate_limited: u64,
    /// … because of a server error.
    pub server: u64,
    /// … because the call timed out.
    pub timeout: u64,
    /// … because of another error kind configured as retryable.
    pub other: u64,
    /// Calls whose retries or time budget ran out.
    pub exhausted: u64,
}

#[derive(Debug, Default)]
struct Counters {
    total: AtomicU64,
    empty: AtomicU64,
    rate_limited: AtomicU64,
    server: AtomicU64,
    timeout: AtomicU64,
    other: AtomicU64,
    exhausted: AtomicU64,
}

impl Counters {
    fn count(&self, reason: RetryReason) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let c = match reason {
            RetryReason::Empty => &self.empty,
            RetryReason::Error(ModelErrorKind::RateLimited) => &self.rate_limited,
            RetryReason::Error(ModelErrorKind::Server) => &self.server,
            RetryReason::Error(ModelErrorKind::Timeout) => &self.timeout,
            RetryReason::Error(_) => &self.other,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> RetryStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RetryStats {
            retries_total: l(&self.total),
            empty: l(&self.empty),
            rate_limited: l(&self.rate_limited),
            server: l(&self.server),
            timeout: l(&self.timeout),
            other: l(&self.other),
            exhausted: l(&self.exhausted),
        }
    }
}

/// Retries model calls that came back empty or failed with a retryable error, waiting
/// `min(initial_delay × factor^n, max_delay)` (or the error's retry-after) before retry `n`.
///
/// Attempts are counted per call of each run (the event's attempt number), so runs sharing
/// the hook never share a budget. The wait is a `tokio` sleep: dropping the run's future during
/// it stops the run at once. The reference loop's own `max_retries` still bounds every call;
/// the lower of the two wins.
///
/// ```
/// use std::time::Duration;
/// use hooks_retry::{Jitter, ModelRetryHook};
/// let hook = ModelRetryHook::builder()
///     .with_max_retries(5)
///     .with_initial_delay(Duration::from_millis(200))
///     .with_jitter(Jitter::Proportional(0.2))
///     .with_total_budget(Duration::from_secs(20))
///     .build()
///     .unwrap();
/// assert_eq!(hook.stats().retries_total, 0);
/// ```
#[derive(Debug)]
pub struct ModelRetryHook {
    max_retries: u32,
    backoff: Backoff,
    retry_on_empty: bool,
    retry_on: Vec<ModelErrorKind>,
    budget: Option<Duration>,
    on_exhausted: OnExhausted,
    priority: HookPriority,
    name: Option<String>,
    clocks: Clocks<u32>,
    counters: Counters,
}

impl Default for ModelRetryHook {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelRetryHook {
    /// The original's defaults: 3 retries, 1 s initial delay, 30 s cap, factor 2, retry on
    /// empty replies; beyond it, retry on rate limits, server errors and timeouts, within a
    /// total budget of 5 minutes per call.
    pub fn new() -> Self {
        Self {
            max_retries: 3,
            backoff: Backoff::default(),
            retry_on_empty: true,
            retry_on: vec![
                ModelErrorKind::RateLimited,
                ModelErrorKind::Server,
                ModelErrorKind::Timeout,
            ],
            budget: Some(Duration::from_secs(300)),
            on_exhausted: OnExhausted::Fail,
            priority: HookPriority::DEFAULT,
            name: None,
            clocks: Clocks::new(),
            counters: Counters::default(),
        }
    }

    /// A builder starting from [`ModelRetryHook::new`]'s defaults.
    pub fn builder() -> ModelRetryHookBuilder {
        ModelRetryHookBuilder { hook: Self::new() }
    }

    /// What the hook did so far.
    pub fn stats(&self) -> RetryStats {
        self.counters.snapshot()
    }

    /// The backoff schedule.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// Calls currently being retried (for tests and diagnostics).
    pub fn calls_in_flight(&self) -> usize {
        self.clocks.len()
    }

    fn reason(&self, e: &AfterModelCallEvent<'_>) -> Option<RetryReason> {
        match (e.response(), e.error()) {
            (Some(r), _) if self.retry_on_empty && r.is_empty() => Some(RetryReason::Empty),
            (None, Some(err)) if self.retry_on.contains(&err.kind()) => {
                Some(RetryReason::Error(err.kind()))
            }
            _ => None,
        }
    }

    fn exhausted(
        &self,
        e: &AfterModelCallEvent<'_>,
        reason: RetryReason,
        why: &str,
    ) -> Result<(), HookError> {
        self.counters.exhausted.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            target: "hooks::retry",
            run_id = e.run_id().as_str(),
            iteration = e.iteration(),
            attempt = e.attempt(),
            max_retries = self.max_retries,
            reason = reason.as_str(),
            "Model call retries exhausted: {why}"
        );
        if reason == RetryReason::Empty && self.on_exhausted == OnExhausted::Fail {
            return Err(HookError::new(format!(
                "the model returned an empty response after {} attempt(s) ({why}); check the prompt or the model, or set OnExhausted::Accept",
                e.attempt() + 1
            )));
        }
        Ok(())
    }
}

#[async_trait]
impl HookProvider for ModelRetryHook {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("ModelRetryHook")
    }

    fn priority(&self) -> HookPriority {
        self.priority
    }

    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL | HookSet::AFTER_INVOCATION | HookSet::RUN_ABANDONED
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.clocks.forget_run(run_id);
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let key = (e.run_id().clone(), e.iteration());
        let Some(reason) = self.reason(e) else {
            if e.attempt() > 0 {
                self.clocks.forget(&key);
            }
            return Ok(());
        };
        let n = e.attempt();
        if n >= self.max_retries {
            self.clocks.forget(&key);
            return self.exhausted(e, reason, &format!("{} retries allowed", self.max_retries));
        }
        // A server's hint is honoured but never trusted: clamped, and checked against the
        // budget with saturating arithmetic (a hint of `Duration::MAX` ends the retries).
        let delay = e
            .error()
            .and_then(|err| err.retry_after())
            .map(|hint| hint.min(crate::MAX_SERVER_HINT))
            .unwrap_or_else(|| self.backoff.jittered(n));
        let elapsed = match self.clocks.elapsed(&key, e.duration()) {
            Ok(elapsed) => elapsed,
            Err(full) => return self.exhausted(e, reason, &full.to_string()),
        };
        if let Some(budget) = self.budget
            && elapsed.saturating_add(delay) > budget
        {
            self.clocks.forget(&key);
            return self.exhausted(
                e,
                reason,
                &format!(
                    "waiting {delay:?} more would pass the {budget:?} budget ({elapsed:?} spent)"
                ),
            );
        }
        self.counters.count(reason);
        tracing::info!(
            target: "hooks::retry",
            run_id = e.run_id().as_str(),
            iteration = e.iteration(),
            attempt = n + 1,
            max_retries = self.max_retries,
            delay_ms = delay.as_secs_f64() * 1000.0,
            reason = reason.as_str(),
            "Retrying model call"
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

/// Builds a [`ModelRetryHook`].
#[derive(Debug)]
pub struct ModelRetryHookBuilder {
    hook: ModelRetryHook,
}

impl ModelRetryHookBuilder {
    crate::backoff::shared_setters!();

    /// Retry replies with no content and no tool calls (default on).
    #[must_use]
    pub fn with_retry_on_empty(mut self, on: bool) -> Self {
        self.hook.retry_on_empty = on;
        self
    }

    /// The error kinds to retry (default rate limited, server error, timeout).
    #[must_use]
    pub fn with_retry_on(mut self, kinds: impl IntoIterator<Item = ModelErrorKind>) -> Self {
        self.hook.retry_on = kinds.into_iter().collect();
        self
    }

    /// What happens when an empty reply exhausts the retries (default [`OnExhausted::Fail`]).
    #[must_use]
    pub fn with_on_exhausted(mut self, o: OnExhausted) -> Self {
        self.hook.on_exhausted = o;
        self
    }

    /// Builds the hook.
    ///
    /// # Errors
    /// A factor below 1, an initial delay above the cap, or proportional jitter outside 0..=1.
    pub fn build(self) -> Result<ModelRetryHook> {
        self.hook.backoff.validate()?;
        Ok(self.hook)
    }
}
