//! Lifecycle events: what each hook method receives, which fields it may change, and the record
//! of who changed what.
//!
//! Read-only fields are private with getters; writable fields have `_mut`/`set_` accessors that
//! mark the field as touched, so the registry can say which provider changed it. Writing a
//! read-only field does not compile:
//!
//! ```compile_fail
//! # fn f(event: &mut hooks_core::BeforeToolCallEvent<'_>) {
//! event.tool_name = "rm";
//! # }
//! ```
//!
//! ```compile_fail
//! # fn f(event: &mut hooks_core::BeforeToolCallEvent<'_>) {
//! event.set_tool_name("rm");
//! # }
//! ```
//!
//! ```compile_fail
//! # fn f(event: &mut hooks_core::AfterModelCallEvent<'_>) {
//! event.set_error(None);
//! # }
//! ```

mod invocation;
mod model;
mod tool;

use std::fmt;
use std::ops::{BitOr, BitOrAssign};
use std::sync::Arc;

pub use invocation::{AfterInvocationEvent, BeforeInvocationEvent, IterationEvent};
pub use model::{
    AfterModelCallEvent, BeforeModelCallEvent, ModelCallOutcome, ModelCallParts, ModelDeltaEvent,
};
pub use tool::{
    AfterToolCallEvent, BeforeToolCallEvent, DEFAULT_CANCEL_REASON, PersonApproval,
    SecretArguments, ToolCallParts, ToolOutcome,
};

use crate::extensions::Extensions;
use crate::state::RunId;

/// Where a model or tool event happens: the run (its id and [`Extensions`]), the iteration
/// and the attempt. Every such event carries one.
///
/// ```
/// use hooks_core::{EventContext, Extensions, RunId};
/// let (run, ext) = (RunId::new("r1"), Extensions::new());
/// let cx = EventContext::new(&run, &ext).with_iteration(2).with_attempt(1);
/// assert_eq!((cx.iteration(), cx.attempt()), (2, 1));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EventContext<'a> {
    run_id: &'a RunId,
    extensions: &'a Extensions,
    iteration: u32,
    attempt: u32,
    pausable: bool,
    parent: Option<&'a crate::state::ParentRun>,
}

impl<'a> EventContext<'a> {
    /// The context of a run, at iteration 1, attempt 0.
    pub fn new(run_id: &'a RunId, extensions: &'a Extensions) -> Self {
        Self {
            run_id,
            extensions,
            iteration: 1,
            attempt: 0,
            pausable: false,
            parent: None,
        }
    }

    /// In a nested run started by `parent`'s tool call.
    #[must_use]
    pub fn with_parent(mut self, parent: Option<&'a crate::state::ParentRun>) -> Self {
        self.parent = parent;
        self
    }

    /// For a nested run: the run and tool call that started it.
    pub fn parent(&self) -> Option<&'a crate::state::ParentRun> {
        self.parent
    }

    /// In a run that can pause for a person (driven by `start` / `resume`).
    #[must_use]
    pub fn with_pausable(mut self, on: bool) -> Self {
        self.pausable = on;
        self
    }

    /// True when the run can pause for a person: an interrupt pauses it (otherwise the
    /// interrupted call is cancelled with `REQUIRES APPROVAL`). A hook that would leave a
    /// value for a person to see should treat it as refused when this is false.
    pub fn can_pause(&self) -> bool {
        self.pausable
    }

    /// At iteration `n` (1-based).
    #[must_use]
    pub fn with_iteration(mut self, n: u32) -> Self {
        self.iteration = n;
        self
    }

    /// At attempt `n` (0 for the first try).
    #[must_use]
    pub fn with_attempt(mut self, n: u32) -> Self {
        self.attempt = n;
        self
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        self.run_id
    }

    /// The run's extensions.
    pub fn extensions(&self) -> &'a Extensions {
        self.extensions
    }

    /// The iteration, 1-based.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// 0 for the first try, n for the n-th retry.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

/// The getters every model and tool event shares, read from its [`EventContext`].
macro_rules! context_getters {
    ($($ty:ty),*) => {$(
        impl<'a> $ty {
            /// The run's id.
            pub fn run_id(&self) -> &'a crate::state::RunId {
                self.cx.run_id()
            }

            /// The run's extensions: what earlier hooks of this run stored.
            pub fn extensions(&self) -> &'a crate::extensions::Extensions {
                self.cx.extensions()
            }

            /// The iteration, 1-based.
            pub fn iteration(&self) -> u32 {
                self.cx.iteration()
            }

            /// For a nested run: the run and tool call that started it.
            pub fn parent(&self) -> Option<&'a crate::state::ParentRun> {
                self.cx.parent()
            }

            /// 0 for the first try, n for the n-th retry.
            pub fn attempt(&self) -> u32 {
                self.cx.attempt()
            }

            /// True when the run can pause for a person (see
            /// [`EventContext::can_pause`](crate::event::EventContext::can_pause)).
            pub fn can_pause(&self) -> bool {
                self.cx.can_pause()
            }

            /// Where the event happens.
            pub fn context(&self) -> crate::event::EventContext<'a> {
                self.cx
            }
        }
    )*};
}
pub(crate) use context_getters;

/// The hook methods, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HookEvent {
    /// `on_before_invocation`.
    BeforeInvocation,
    /// `on_after_invocation`.
    AfterInvocation,
    /// `on_iteration_start`.
    IterationStart,
    /// `on_iteration_end`.
    IterationEnd,
    /// `on_before_model_call`.
    BeforeModelCall,
    /// `on_after_model_call`.
    AfterModelCall,
    /// `on_before_tool_call`.
    BeforeToolCall,
    /// `on_after_tool_call`.
    AfterToolCall,
    /// `on_custom_event`.
    Custom,
    /// `on_run_abandoned`: the run's future was dropped before the run ended.
    RunAbandoned,
    /// `on_model_delta`: a piece of a streamed reply (only providers that list
    /// [`HookSet::MODEL_DELTA`] get it; it is not in [`HookSet::ALL`]).
    ModelDelta,
}

impl HookEvent {
    /// Every event, in lifecycle order.
    pub const ALL: [HookEvent; 11] = [
        HookEvent::BeforeInvocation,
        HookEvent::IterationStart,
        HookEvent::BeforeModelCall,
        HookEvent::ModelDelta,
        HookEvent::AfterModelCall,
        HookEvent::BeforeToolCall,
        HookEvent::AfterToolCall,
        HookEvent::IterationEnd,
        HookEvent::AfterInvocation,
        HookEvent::Custom,
        HookEvent::RunAbandoned,
    ];

    /// The hook method's name, e.g. `on_after_invocation`.
    pub fn method_name(self) -> &'static str {
        match self {
            HookEvent::BeforeInvocation => "on_before_invocation",
            HookEvent::AfterInvocation => "on_after_invocation",
            HookEvent::IterationStart => "on_iteration_start",
            HookEvent::IterationEnd => "on_iteration_end",
            HookEvent::BeforeModelCall => "on_before_model_call",
            HookEvent::AfterModelCall => "on_after_model_call",
            HookEvent::BeforeToolCall => "on_before_tool_call",
            HookEvent::AfterToolCall => "on_after_tool_call",
            HookEvent::Custom => "on_custom_event",
            HookEvent::RunAbandoned => "on_run_abandoned",
            HookEvent::ModelDelta => "on_model_delta",
        }
    }

    /// The event as a one-bit [`HookSet`].
    pub const fn as_set(self) -> HookSet {
        HookSet(1 << self as u16)
    }

    /// True for the events that run in reverse priority order: after model call, after tool
    /// call, after invocation and run abandoned.
    pub const fn is_after(self) -> bool {
        matches!(
            self,
            HookEvent::AfterModelCall
                | HookEvent::AfterToolCall
                | HookEvent::AfterInvocation
                | HookEvent::RunAbandoned
        )
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method_name())
    }
}

/// The set of hook methods a provider implements (the original's `register_hooks`).
///
/// The registry calls a provider only for the events in its set, so an event nobody subscribes
/// to costs almost nothing.
///
/// ```
/// use hooks_core::{HookEvent, HookSet};
/// let set = HookSet::BEFORE_TOOL_CALL | HookSet::AFTER_TOOL_CALL;
/// assert!(set.contains(HookEvent::AfterToolCall));
/// assert!(!set.contains(HookEvent::BeforeModelCall));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HookSet(u16);

impl HookSet {
    /// No events.
    pub const NONE: Self = Self(0);
    /// `on_before_invocation`.
    pub const BEFORE_INVOCATION: Self = HookEvent::BeforeInvocation.as_set();
    /// `on_after_invocation`.
    pub const AFTER_INVOCATION: Self = HookEvent::AfterInvocation.as_set();
    /// `on_iteration_start`.
    pub const ITERATION_START: Self = HookEvent::IterationStart.as_set();
    /// `on_iteration_end`.
    pub const ITERATION_END: Self = HookEvent::IterationEnd.as_set();
    /// `on_before_model_call`.
    pub const BEFORE_MODEL_CALL: Self = HookEvent::BeforeModelCall.as_set();
    /// `on_after_model_call`.
    pub const AFTER_MODEL_CALL: Self = HookEvent::AfterModelCall.as_set();
    /// `on_before_tool_call`.
    pub const BEFORE_TOOL_CALL: Self = HookEvent::BeforeToolCall.as_set();
    /// `on_after_tool_call`.
    pub const AFTER_TOOL_CALL: Self = HookEvent::AfterToolCall.as_set();
    /// `on_custom_event`.
    pub const CUSTOM: Self = HookEvent::Custom.as_set();
    /// `on_run_abandoned`.
    pub const RUN_ABANDONED: Self = HookEvent::RunAbandoned.as_set();
    /// `on_model_delta`: pieces of streamed replies. Opt-in — not part of [`ALL`](Self::ALL):
    /// a provider that lists it sees a reply before the after-model-call hooks do, so it must
    /// handle it (a guard that does not is never streamed past; see [`stream`](crate::stream)).
    pub const MODEL_DELTA: Self = HookEvent::ModelDelta.as_set();
    /// Both invocation events.
    pub const INVOCATION: Self = Self(Self::BEFORE_INVOCATION.0 | Self::AFTER_INVOCATION.0);
    /// Both iteration events.
    pub const ITERATION: Self = Self(Self::ITERATION_START.0 | Self::ITERATION_END.0);
    /// Both model-call events.
    pub const MODEL_CALL: Self = Self(Self::BEFORE_MODEL_CALL.0 | Self::AFTER_MODEL_CALL.0);
    /// Both tool-call events.
    pub const TOOL_CALL: Self = Self(Self::BEFORE_TOOL_CALL.0 | Self::AFTER_TOOL_CALL.0);
    /// Every event but [`MODEL_DELTA`](Self::MODEL_DELTA) (which is opt-in).
    pub const ALL: Self = Self(((1 << HookEvent::ALL.len()) - 1) & !Self::MODEL_DELTA.0);

    /// True when `event` is in the set.
    pub const fn contains(self, event: HookEvent) -> bool {
        self.0 & event.as_set().0 != 0
    }

    /// The union of two sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// True when the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for HookSet {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl BitOrAssign for HookSet {
    fn bitor_assign(&mut self, rhs: Self) {
        *self = self.union(rhs);
    }
}

impl From<HookEvent> for HookSet {
    fn from(e: HookEvent) -> Self {
        e.as_set()
    }
}

impl fmt::Debug for HookSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                HookEvent::ALL
                    .iter()
                    .filter(|e| self.contains(**e))
                    .map(|e| e.method_name()),
            )
            .finish()
    }
}

/// A writable field of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The run state (before invocation).
    State,
    /// The messages sent to the model.
    Messages,
    /// The model's response.
    Response,
    /// The retry request.
    Retry,
    /// The retry feedback.
    RetryFeedback,
    /// The tool arguments.
    Arguments,
    /// The secret tool arguments.
    SecretArguments,
    /// The cancel request.
    Cancel,
    /// The tool result.
    Result,
    /// The tools offered to the model.
    Tools,
    /// The model call's options (tool choice, sampling).
    Options,
    /// The error text (redacted by a hook).
    Error,
    /// The interrupt request (a person must decide).
    Interrupt,
    /// A piece of a streamed reply.
    Delta,
    /// The provider was left out of a nested run (an agent run as a tool; see
    /// [`AgentTool::without_provider`](crate::agent::AgentTool::without_provider)).
    NestedOptOut,
}

impl Field {
    const ALL: [Field; 15] = [
        Field::State,
        Field::Messages,
        Field::Response,
        Field::Retry,
        Field::RetryFeedback,
        Field::Arguments,
        Field::SecretArguments,
        Field::Cancel,
        Field::Result,
        Field::Tools,
        Field::Options,
        Field::Error,
        Field::Interrupt,
        Field::NestedOptOut,
        Field::Delta,
    ];

    /// The field's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::State => "state",
            Field::Messages => "messages",
            Field::Response => "response",
            Field::Retry => "retry",
            Field::RetryFeedback => "retry_feedback",
            Field::Arguments => "arguments",
            Field::SecretArguments => "secret_arguments",
            Field::Cancel => "cancel",
            Field::Result => "result",
            Field::Tools => "tools",
            Field::Options => "options",
            Field::Error => "error",
            Field::Interrupt => "interrupt",
            Field::NestedOptOut => "nested_opt_out",
            Field::Delta => "delta",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One provider touched one writable field during a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The provider's name.
    pub provider: Arc<str>,
    /// The field it touched.
    pub field: Field,
}

/// Marks the fields written by the provider being called, then files them under its name.
///
/// Costs one branch per provider when nothing is written, and allocates only on a write.
#[derive(Debug, Default, Clone)]
pub(crate) struct ChangeTracker {
    dirty: u16,
    changes: Vec<Change>,
}

impl ChangeTracker {
    #[inline]
    pub(crate) fn mark(&mut self, field: Field) {
        self.dirty |= 1 << field as u16;
    }

    #[inline]
    pub(crate) fn commit(&mut self, provider: &Arc<str>) {
        if self.dirty != 0 {
            self.commit_slow(provider);
        }
    }

    #[cold]
    fn commit_slow(&mut self, provider: &Arc<str>) {
        for field in Field::ALL {
            if self.dirty & (1 << field as u16) != 0 {
                self.changes.push(Change {
                    provider: Arc::clone(provider),
                    field,
                });
            }
        }
        self.dirty = 0;
    }

    pub(crate) fn changes(&self) -> &[Change] {
        &self.changes
    }

    pub(crate) fn take(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }
}

/// An event with writable fields: the registry files writes under the provider that made them.
pub(crate) trait Tracked {
    fn tracker(&mut self) -> &mut ChangeTracker;
}

macro_rules! tracked {
    ($($ty:ty),*) => {$(
        impl crate::event::Tracked for $ty {
            #[inline]
            fn tracker(&mut self) -> &mut crate::event::ChangeTracker {
                &mut self.tracker
            }
        }
        impl $ty {
            /// Which provider touched which writable field so far, in call order.
            pub fn changes(&self) -> &[crate::event::Change] {
                self.tracker.changes()
            }

            /// Takes the record of changes out of the event.
            pub fn take_changes(&mut self) -> Vec<crate::event::Change> {
                self.tracker.take()
            }
        }
    )*};
}
pub(crate) use tracked;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_covers_every_event_once() {
        let mut set = HookSet::NONE;
        for e in HookEvent::ALL {
            assert!(!set.contains(e));
            set |= e.into();
        }
        // Every event; `HookSet::ALL` is every one but the opt-in streamed pieces.
        assert_eq!(set, HookSet::ALL | HookSet::MODEL_DELTA);
        assert!(!HookSet::ALL.contains(HookEvent::ModelDelta));
    }

    #[test]
    fn tracker_files_writes_under_the_provider() {
        let mut t = ChangeTracker::default();
        let a: Arc<str> = "a".into();
        let b: Arc<str> = "b".into();
        t.commit(&a);
        t.mark(Field::Arguments);
        t.mark(Field::Cancel);
        t.commit(&b);
        t.commit(&a);
        assert_eq!(
            t.changes(),
            &[
                Change {
                    provider: b.clone(),
                    field: Field::Arguments
                },
                Change {
                    provider: b,
                    field: Field::Cancel
                }
            ]
        );
    }
}
