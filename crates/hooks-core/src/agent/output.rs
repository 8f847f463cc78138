//! What configures the reference loop and what a run hands back.

use crate::error::{RetryTarget, RunError};
use crate::event::{Change, HookEvent};
use crate::state::AgentState;

/// The agent could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Two tools share a name; the model could not tell them apart.
    #[error("tool '{0}' is registered twice; give each tool a unique name")]
    DuplicateTool(String),
    /// `max_iterations` is zero: the model would never be called.
    #[error("max_iterations must be at least 1")]
    ZeroIterations,
    /// The resume key is too short to seal paused runs safely.
    #[error(
        "the resume key is {0} bytes; use at least 32 random bytes (e.g. from your secret store)"
    )]
    ShortResumeKey(usize),
    /// `max_depth` is past [`MAX_NESTING_DEPTH`](crate::driver::MAX_NESTING_DEPTH).
    #[error(
        "max_depth {0} is more than runs may nest ({max}); nest agents less deeply",
        max = crate::driver::MAX_NESTING_DEPTH
    )]
    DepthTooLarge(u32),
}

/// How the loop behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentConfig {
    /// The most iterations (model calls that are not retries) a run may take. Default 10.
    pub max_iterations: u32,
    /// The most retries hooks may ask for, per model call and per tool call. Default 3.
    pub max_retries: u32,
    /// Run the tool calls of one model response concurrently. Default true.
    pub parallel_tool_calls: bool,
    /// A system message put before the prompt.
    pub system_prompt: Option<String>,
    /// How deep agents run as tools may nest under a run of this agent (when it is the
    /// top-level one). Default [`DEFAULT_MAX_DEPTH`](crate::driver::DEFAULT_MAX_DEPTH).
    pub max_depth: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_retries: 3,
            parallel_tool_calls: true,
            system_prompt: None,
            max_depth: crate::driver::DEFAULT_MAX_DEPTH,
        }
    }
}

/// A change a hook made during a run: which provider touched which field, in which event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedChange {
    /// The event.
    pub event: HookEvent,
    /// The tool call, for tool events.
    pub tool_call_id: Option<String>,
    /// The provider and field.
    pub change: Change,
}

/// What a finished run hands back.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutput {
    /// The model's final answer.
    pub answer: String,
    /// The final state.
    pub state: AgentState,
    /// Every field a hook changed, in order.
    pub changes: Vec<RecordedChange>,
    /// Tool calls whose retries ran out (their last result went to the model).
    pub retries_exhausted: Vec<RetryTarget>,
}

/// A run that ended with an error; the state is kept. It displays as its [`RunError`] and
/// reports that error's source as its own, so no cause is printed twice.
#[derive(Debug)]
pub struct RunFailure {
    /// Why it ended.
    pub error: RunError,
    /// The state when it ended.
    pub state: Box<AgentState>,
    /// Every field a hook changed, in order.
    pub changes: Vec<RecordedChange>,
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}
