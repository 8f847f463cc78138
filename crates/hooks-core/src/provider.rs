//! The `HookProvider` trait: one object that hooks into any of the lifecycle events.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::HookError;
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, HookSet, IterationEvent,
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
    fn priority(&self) -> HookPriority {
        HookPriority::DEFAULT
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
        Ok(())
    }

    /// After the run ended, however it ended.
    async fn on_after_invocation(
        &self,
        _event: &AfterInvocationEvent<'_>,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// An iteration starts. Runs concurrently with other providers; errors are logged only.
    async fn on_iteration_start(&self, _event: &IterationEvent<'_>) -> Result<(), HookError> {
        Ok(())
    }

    /// An iteration ended. Runs concurrently with other providers; errors are logged only.
    async fn on_iteration_end(&self, _event: &IterationEvent<'_>) -> Result<(), HookError> {
        Ok(())
    }

    /// Before the model is called; may rewrite the messages.
    async fn on_before_model_call(
        &self,
        _event: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// After the model answered or failed; may replace the response or ask for a retry.
    async fn on_after_model_call(
        &self,
        _event: &mut AfterModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// Before a tool runs; may rewrite arguments, add secret ones, or cancel.
    async fn on_before_tool_call(
        &self,
        _event: &mut BeforeToolCallEvent<'_>,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// After a tool ran or was cancelled; may replace the result or ask for a retry.
    async fn on_after_tool_call(
        &self,
        _event: &mut AfterToolCallEvent<'_>,
    ) -> Result<(), HookError> {
        Ok(())
    }

    /// The run's future was dropped before the run ended (its caller gave up, a timeout
    /// fired): after-invocation hooks will not run, so let go of the run's state here —
    /// end its spans, forget its budgets. Synchronous, because it is called from a `Drop`.
    fn on_run_abandoned(&self, _run_id: &RunId) {}

    /// An application-defined event; a non-empty reply is handed back to the dispatcher (the
    /// last one wins).
    async fn on_custom_event(&self, _event: &CustomEvent<'_>) -> Result<Option<Value>, HookError> {
        Ok(None)
    }
}

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
