//! The `HookProvider` trait: one object that hooks into any of the lifecycle events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::HookError;
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, HookEvent, HookSet, IterationEvent,
};
use crate::priority::HookPriority;
use crate::state::RunId;

/// An application-defined event, dispatched by name.
#[derive(Debug, Clone, Copy)]
pub struct CustomEvent<'a> {
    run_id: &'a RunId,
    name: &'a str,
    payload: &'a Value,
}

impl<'a> CustomEvent<'a> {
    /// A custom event of a run.
    pub fn new(run_id: &'a RunId, name: &'a str, payload: &'a Value) -> Self {
        Self {
            run_id,
            name,
            payload,
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        self.run_id
    }

    /// The event's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The payload.
    pub fn payload(&self) -> &'a Value {
        self.payload
    }
}

/// Hooks into the lifecycle of agent runs.
///
/// Every method has a no-op default; implement the ones you need and declare them in
/// [`hooks`](HookProvider::hooks), so the registry skips this provider on every other event.
/// A provider is shared by many concurrent runs: keep per-run state keyed by the event's run id.
///
/// ```
/// use hooks_core::{async_trait, BeforeToolCallEvent, HookError, HookProvider, HookSet};
///
/// struct NoDeletes;
///
/// #[async_trait]
/// impl HookProvider for NoDeletes {
///     fn hooks(&self) -> HookSet {
///         HookSet::BEFORE_TOOL_CALL
///     }
///
///     async fn on_before_tool_call(&self, event: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
///         if event.tool_name().starts_with("delete") {
///             event.cancel("deleting is not allowed here");
///         }
///         Ok(())
///     }
/// }
///
/// assert_eq!(NoDeletes.name(), "NoDeletes");
/// ```
#[async_trait]
pub trait HookProvider: Send + Sync + 'static {
    /// The provider's unique name in a registry; defaults to the type's short name.
    fn name(&self) -> &str {
        short_type_name(std::any::type_name::<Self>())
    }

    /// When it runs relative to other providers; defaults to [`HookPriority::DEFAULT`].
    ///
    /// Lower runs earlier on "before" events and later on "after" events, so providers nest
    /// like layers around the model and the tools.
    fn priority(&self) -> HookPriority {
        HookPriority::DEFAULT
    }

    /// Its priority on one event; defaults to [`priority`](Self::priority) on every event.
    ///
    /// Override it when a provider must hold a place the single priority cannot give it: a
    /// guard that runs *first* on the way in (a low priority on the before-events) and also
    /// *first* on the way out (after-events run in reverse order, so a high priority there,
    /// e.g. [`HookPriority::OUTPUT_GUARD`]), so that nobody sees what it redacts on either side.
    ///
    /// ```
    /// use hooks_core::{HookEvent, HookPriority, HookProvider};
    /// struct Guard;
    /// impl HookProvider for Guard {
    ///     fn priority(&self) -> HookPriority { HookPriority::SECURITY_DEFAULT }
    ///     fn priority_for(&self, event: HookEvent) -> HookPriority {
    ///         if event.is_after() { HookPriority::OUTPUT_GUARD } else { self.priority() }
    ///     }
    /// }
    /// assert_eq!(Guard.priority_for(HookEvent::AfterToolCall), HookPriority::OUTPUT_GUARD);
    /// ```
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        let _ = event;
        self.priority()
    }

    /// The events this provider handles; defaults to all of them. Declaring fewer makes the
    /// others free.
    fn hooks(&self) -> HookSet {
        HookSet::ALL
    }

    /// Before the run starts; may replace the state. An error refuses the run.
    async fn on_before_invocation(
        &self,
        _event: &mut BeforeInvocationEvent,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// After the run ended, however it ended.
    async fn on_after_invocation(
        &self,
        _event: &AfterInvocationEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// An iteration starts. Runs concurrently with other providers; errors are logged only.
    async fn on_iteration_start(&self, _event: &IterationEvent<'_>) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// An iteration ended. Runs concurrently with other providers; errors are logged only.
    async fn on_iteration_end(&self, _event: &IterationEvent<'_>) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// Before the model is called; may rewrite the messages.
    async fn on_before_model_call(
        &self,
        _event: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// After the model answered or failed; may replace the response or ask for a retry.
    async fn on_after_model_call(
        &self,
        _event: &mut AfterModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// A piece of a streamed reply, before the consumer sees it; may rewrite it or hold text
    /// back (see [`ModelDeltaEvent`](crate::ModelDeltaEvent)). Called only for providers that
    /// list [`HookSet::MODEL_DELTA`](crate::HookSet::MODEL_DELTA). An error ends the call.
    async fn on_model_delta(
        &self,
        _event: &mut crate::event::ModelDeltaEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// Before a tool runs; may rewrite arguments, add secret ones, or cancel.
    async fn on_before_tool_call(
        &self,
        _event: &mut BeforeToolCallEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// After a tool ran or was cancelled; may replace the result or ask for a retry.
    async fn on_after_tool_call(
        &self,
        _event: &mut AfterToolCallEvent<'_>,
    ) -> Result<(), HookError> {
        reached_default();
        Ok(())
    }

    /// The run's future was dropped before the run ended (its caller gave up, a timeout
    /// fired): after-invocation hooks will not run, so let go of the run's state here —
    /// end its spans, forget its budgets. Synchronous, because it is called from a `Drop`.
    fn on_run_abandoned(&self, _run_id: &RunId) {
        reached_default();
    }

    /// An application-defined event; a non-empty reply is handed back to the dispatcher (the
    /// last one wins).
    async fn on_custom_event(&self, _event: &CustomEvent<'_>) -> Result<Option<Value>, HookError> {
        reached_default();
        Ok(None)
    }

    /// What this provider keeps of run `run_id` that must survive a pause (see
    /// [`interrupt`](crate::interrupt)): called when the run pauses, before the
    /// after-invocation hooks; the value is stored in the
    /// [`PausedRun`](crate::interrupt::PausedRun) under the provider's name and handed to
    /// [`restore_run_state`](Self::restore_run_state) on resume. Default: nothing (opt in).
    /// Never put secrets in it: paused runs are stored outside the process.
    fn save_run_state(&self, _run_id: &RunId) -> Option<Value> {
        None
    }

    /// Takes back what [`save_run_state`](Self::save_run_state) saved, when the run resumes
    /// (before the before-invocation hooks; possibly in another process).
    ///
    /// # Errors
    /// When `state` is not what this provider saved; the resume goes on without it (logged).
    fn restore_run_state(&self, _run_id: &RunId, _state: Value) -> Result<(), HookError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Declared but not implemented: a debug-build check.
//
// Every default method body calls `reached_default`, which (in debug builds) raises a
// thread-local flag. The registry wraps each hook call in a `Probe` that lowers the flag before
// each poll and reads it after: a call that completes in a poll that raised it returned through
// the default body. Nested dispatches save and restore the flag, so they cannot be mistaken for
// the outer call. Release builds compile all of this away.

#[cfg(debug_assertions)]
thread_local! {
    static DEFAULT_BODY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Called by every default method body.
#[inline(always)]
pub(crate) fn reached_default() {
    #[cfg(debug_assertions)]
    DEFAULT_BODY.with(|c| c.set(true));
}

/// Runs `f` and says whether it returned through a default method body.
#[cfg(debug_assertions)]
pub(crate) fn through_default<T>(f: impl FnOnce() -> T) -> (T, bool) {
    let saved = DEFAULT_BODY.with(|c| c.replace(false));
    let out = f();
    let hit = DEFAULT_BODY.with(|c| c.replace(saved));
    (out, hit)
}

/// Wraps one hook call's future; `on_default` runs when it completed through a default body.
#[cfg(debug_assertions)]
pub(crate) struct Probe<F, G: FnOnce()> {
    fut: F,
    on_default: Option<G>,
}

#[cfg(debug_assertions)]
impl<F, G: FnOnce()> Probe<F, G> {
    pub(crate) fn new(fut: F, on_default: G) -> Self {
        Self {
            fut,
            on_default: Some(on_default),
        }
    }
}

#[cfg(debug_assertions)]
impl<F: std::future::Future + Unpin, G: FnOnce() + Unpin> std::future::Future for Probe<F, G> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = &mut *self;
        let (poll, hit) = through_default(|| std::pin::Pin::new(&mut this.fut).poll(cx));
        if poll.is_ready()
            && hit
            && let Some(g) = this.on_default.take()
        {
            g();
        }
        poll
    }
}

// ---------------------------------------------------------------------------------------------
// Shared and boxed providers are providers: `registry.add(Arc::clone(&guard))` keeps a handle.
//
// Written out (not with `#[async_trait]`) so a call through the pointer hands back the inner
// provider's boxed future as it is, instead of boxing it a second time.

macro_rules! forward_provider {
    ($ptr:ident) => {
        impl<T: HookProvider + ?Sized> HookProvider for $ptr<T> {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn priority(&self) -> HookPriority {
                (**self).priority()
            }
            fn priority_for(&self, event: HookEvent) -> HookPriority {
                (**self).priority_for(event)
            }
            fn hooks(&self) -> HookSet {
                (**self).hooks()
            }
            fn on_before_invocation<'s, 'e, 'f>(
                &'s self,
                event: &'e mut BeforeInvocationEvent,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
            {
                (**self).on_before_invocation(event)
            }
            fn on_after_invocation<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e AfterInvocationEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_after_invocation(event)
            }
            fn on_iteration_start<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e IterationEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_iteration_start(event)
            }
            fn on_iteration_end<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e IterationEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_iteration_end(event)
            }
            fn on_before_model_call<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e mut BeforeModelCallEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_before_model_call(event)
            }
            fn on_after_model_call<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e mut AfterModelCallEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_after_model_call(event)
            }
            fn on_model_delta<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e mut crate::event::ModelDeltaEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_model_delta(event)
            }
            fn on_before_tool_call<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e mut BeforeToolCallEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_before_tool_call(event)
            }
            fn on_after_tool_call<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e mut AfterToolCallEvent<'a>,
            ) -> HookFuture<'f, ()>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_after_tool_call(event)
            }
            fn on_run_abandoned(&self, run_id: &RunId) {
                (**self).on_run_abandoned(run_id)
            }
            fn save_run_state(&self, run_id: &RunId) -> Option<Value> {
                (**self).save_run_state(run_id)
            }
            fn restore_run_state(&self, run_id: &RunId, state: Value) -> Result<(), HookError> {
                (**self).restore_run_state(run_id, state)
            }
            fn on_custom_event<'s, 'e, 'a, 'f>(
                &'s self,
                event: &'e CustomEvent<'a>,
            ) -> HookFuture<'f, Option<Value>>
            where
                's: 'f,
                'e: 'f,
                'a: 'f,
            {
                (**self).on_custom_event(event)
            }
        }
    };
}

/// The future a hook method returns (what `#[async_trait]` makes of it).
type HookFuture<'f, T> = Pin<Box<dyn Future<Output = Result<T, HookError>> + Send + 'f>>;

forward_provider!(Arc);
forward_provider!(Box);

/// `a::b::Type<c::D>` → `Type`.
pub(crate) fn short_type_name(full: &str) -> &str {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain;
    impl HookProvider for Plain {}

    #[allow(dead_code)]
    struct Generic<T>(T);
    impl<T: Send + Sync + 'static> HookProvider for Generic<T> {}

    #[test]
    fn default_name_is_the_short_type_name() {
        assert_eq!(Plain.name(), "Plain");
        assert_eq!(Generic(String::new()).name(), "Generic");
        assert_eq!(short_type_name("x"), "x");
    }

    #[test]
    fn defaults_are_default_priority_and_every_event() {
        assert_eq!(Plain.priority(), HookPriority::DEFAULT);
        assert_eq!(Plain.hooks(), HookSet::ALL);
    }
}
