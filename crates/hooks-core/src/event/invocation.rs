//! Invocation and iteration events.

use std::time::Duration;

use super::{ChangeTracker, Field, tracked};
use crate::error::RunError;
use crate::state::{AgentState, RunId};

/// Before a run starts: hooks may inspect or replace the state (e.g. redact the prompt).
#[derive(Debug)]
pub struct BeforeInvocationEvent {
    state: AgentState,
    extensions: std::sync::Arc<crate::extensions::Extensions>,
    resumed: bool,
    tracker: ChangeTracker,
}

impl BeforeInvocationEvent {
    /// An event for a run about to start (with empty extensions).
    pub fn new(state: AgentState) -> Self {
        Self {
            state,
            extensions: std::sync::Arc::default(),
            resumed: false,
            tracker: ChangeTracker::default(),
        }
    }

    /// An event for a run about to start, with the run's own extensions (no throwaway map).
    pub(crate) fn for_run(
        state: AgentState,
        extensions: std::sync::Arc<crate::extensions::Extensions>,
    ) -> Self {
        Self {
            state,
            extensions,
            resumed: false,
            tracker: ChangeTracker::default(),
        }
    }

    /// Marks the run as resumed from a pause.
    #[must_use]
    pub fn resumed_run(mut self) -> Self {
        self.resumed = true;
        self
    }

    /// True when the run resumes after a pause (the same run id; the providers that save
    /// run state got it back before this event).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// With the run's extensions (the driver passes the run's own, so what a hook stores
    /// here is there for the rest of the run).
    #[must_use]
    pub fn with_extensions(
        mut self,
        extensions: std::sync::Arc<crate::extensions::Extensions>,
    ) -> Self {
        self.extensions = extensions;
        self
    }

    /// The run's extensions: a hook may store what later hooks and tools of the run read
    /// (a telemetry provider stores the run's [`RunTrace`](crate::observe::RunTrace)).
    pub fn extensions(&self) -> &crate::extensions::Extensions {
        &self.extensions
    }

    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.state.run_id
    }

    /// The state the run will start with.
    pub fn state(&self) -> &AgentState {
        &self.state
    }

    /// The state, writable; marks [`Field::State`].
    pub fn state_mut(&mut self) -> &mut AgentState {
        self.tracker.mark(Field::State);
        &mut self.state
    }

    /// Replaces the state; marks [`Field::State`].
    pub fn set_state(&mut self, state: AgentState) {
        self.tracker.mark(Field::State);
        self.state = state;
    }

    /// The (possibly replaced) state.
    pub fn into_state(self) -> AgentState {
        self.state
    }
}

tracked!(BeforeInvocationEvent);

/// After a run ended, whichever way it ended. Read-only.
#[derive(Debug, Clone, Copy)]
pub struct AfterInvocationEvent<'a> {
    state: &'a AgentState,
    error: Option<&'a RunError>,
    interruptions: &'a [crate::interrupt::Interruption],
    duration: Duration,
}

impl<'a> AfterInvocationEvent<'a> {
    /// An event for a run that ended with `error` (none on success).
    pub fn new(state: &'a AgentState, error: Option<&'a RunError>, duration: Duration) -> Self {
        Self {
            state,
            error,
            interruptions: &[],
            duration,
        }
    }

    /// For a run that paused for these interruptions (it did not fail: its error is none).
    #[must_use]
    pub fn with_interruptions(
        mut self,
        interruptions: &'a [crate::interrupt::Interruption],
    ) -> Self {
        self.interruptions = interruptions;
        self
    }

    /// True when the run paused for a person's decisions (it will resume; it did not fail).
    pub fn interrupted(&self) -> bool {
        !self.interruptions.is_empty()
    }

    /// What the run paused for.
    pub fn interruptions(&self) -> &'a [crate::interrupt::Interruption] {
        self.interruptions
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        &self.state.run_id
    }

    /// The final state.
    pub fn state(&self) -> &'a AgentState {
        self.state
    }

    /// True when the run produced an answer (false when it failed or paused).
    pub fn success(&self) -> bool {
        self.error.is_none() && self.interruptions.is_empty()
    }

    /// Why the run failed, when it did.
    pub fn error(&self) -> Option<&'a RunError> {
        self.error
    }

    /// How long the run took.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

/// An iteration starts or ends. Read-only; hooks for it run concurrently.
#[derive(Debug, Clone, Copy)]
pub struct IterationEvent<'a> {
    state: &'a AgentState,
}

impl<'a> IterationEvent<'a> {
    /// An event for the state's current iteration.
    pub fn new(state: &'a AgentState) -> Self {
        Self { state }
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        &self.state.run_id
    }

    /// The iteration, 1-based.
    pub fn iteration(&self) -> u32 {
        self.state.iteration
    }

    /// The run's state.
    pub fn state(&self) -> &'a AgentState {
        self.state
    }
}
