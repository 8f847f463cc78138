//! Errors: what a hook returns, what dispatch returns, and what a run ends with.

use std::borrow::Cow;
use std::fmt;

use crate::event::HookEvent;
use crate::state::ModelError;

/// A boxed error that can cross threads.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The error a hook method returns.
///
/// ```
/// use hooks_core::HookError;
/// let e = HookError::new("Input blocked by guardrails: e-mail address");
/// assert_eq!(e.to_string(), "Input blocked by guardrails: e-mail address");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    message: Cow<'static, str>,
    #[source]
    source: Option<BoxError>,
}

impl HookError {
    /// An error with a message.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// An error with a message and the error that caused it.
    pub fn with_source(message: impl Into<Cow<'static, str>>, source: impl Into<BoxError>) -> Self {
        Self {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A hook provider failed while an event was dispatched.
///
/// Its message reads `Hook provider 'NAME' failed in EVENT: MESSAGE`, with the hook's own
/// message ([`cause`](Self::cause)); its [`source`](std::error::Error::source) is what the hook
/// gave as *its* source, so an error reporter prints every cause once.
#[derive(Debug)]
pub struct DispatchError {
    provider: String,
    event: HookEvent,
    cause: HookError,
}

impl fmt::Display for DispatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Hook provider '{}' failed in {}: {}",
            self.provider, self.event, self.cause
        )
    }
}

impl std::error::Error for DispatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The hook's message is part of this one: skip to what lies beneath it.
        self.cause.source()
    }
}

impl DispatchError {
    pub(crate) fn new(provider: &str, event: HookEvent, cause: HookError) -> Self {
        Self {
            provider: provider.to_owned(),
            event,
            cause,
        }
    }

    /// The provider's name.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The event it failed in.
    pub fn event(&self) -> HookEvent {
        self.event
    }

    /// What the provider returned (or the panic it raised).
    pub fn cause(&self) -> &HookError {
        &self.cause
    }
}

/// The registry refused a change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Names are unique; remove the old provider first or give the new one another name.
    #[error("Hook provider '{0}' already registered")]
    AlreadyRegistered(String),
    /// A provider named to be left out of nested runs is not in the calling run's registry.
    #[error(
        "hook provider '{0}' cannot be left out of nested runs: the calling run's registry has no provider of that name; check the name (registered: {1})"
    )]
    UnknownOptOut(String, String),
}

/// What a retried call was.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryTarget {
    /// A model call of the given iteration.
    Model {
        /// The iteration, 1-based.
        iteration: u32,
    },
    /// A tool call.
    Tool {
        /// The tool's name.
        name: String,
        /// The call id.
        call_id: String,
    },
}

impl fmt::Display for RetryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryTarget::Model { iteration } => write!(f, "model call of iteration {iteration}"),
            RetryTarget::Tool { name, call_id } => write!(f, "tool call '{name}' ({call_id})"),
        }
    }
}

/// Why an agent run ended without an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A hook failed; the run stops at once (after-invocation hooks still run).
    #[error(transparent)]
    Hook(#[from] DispatchError),
    /// The model call failed and no hook recovered it.
    #[error("{error} (after {attempts} attempt(s))")]
    Model {
        /// The last error (its message is part of this one).
        error: ModelError,
        /// How many times the call was tried.
        attempts: u32,
    },
    /// Hooks kept asking for a retry past the configured bound.
    #[error(
        "retries exhausted for the {target} after {attempts} attempt(s); raise the agent's max_retries or fix what the hook rejects"
    )]
    RetriesExhausted {
        /// What was retried.
        target: RetryTarget,
        /// How many times it ran.
        attempts: u32,
    },
    /// The model was still asking for tools when the iteration limit was reached.
    #[error(
        "the run reached its limit of {max_iterations} iteration(s) without a final answer; raise max_iterations or check why the model keeps calling tools"
    )]
    IterationLimit {
        /// The limit.
        max_iterations: u32,
    },
    /// Tool calls were interrupted for a person's decision: the run pauses. Return it from
    /// the loop body; [`HookRegistry::start`](crate::HookRegistry::start) and
    /// [`resume`](crate::HookRegistry::resume) hand back the paused run.
    #[error(
        "the run paused: {interruptions} tool call(s) wait for a person's decision; drive it with start/resume to get the paused run"
    )]
    Interrupted {
        /// How many calls wait.
        interruptions: usize,
    },
    /// A resume was refused; nothing ran.
    #[error(transparent)]
    Resume(#[from] crate::interrupt::ResumeError),
    /// A nested run would have gone deeper than the tree allows; it did not start.
    #[error(
        "a nested agent run would be {depth} level(s) deep, past the limit of {max_depth}; raise the top-level agent's max_depth or nest agents less deeply"
    )]
    TooDeep {
        /// How deep it would have been.
        depth: u32,
        /// The limit.
        max_depth: u32,
    },
    /// A nested run was refused before it started (see
    /// [`NestedCall`](crate::driver::NestedCall)): its registry lacks a guard of the calling
    /// run's, a second nested run under one tool call, an unknown provider left out.
    #[error("a nested run was refused: {reason}")]
    NestedRefused {
        /// What was wrong, and how to fix it.
        reason: String,
    },
    /// The runs of one tree (a run and every run nested in it) used up the iterations of the
    /// top-level run, which they share.
    #[error(
        "the agent and the agents it runs as tools used up their shared budget of {max_iterations} iteration(s); raise the top-level agent's max_iterations or give nested agents less to do"
    )]
    TreeIterationLimit {
        /// The shared budget.
        max_iterations: u32,
    },
}

impl RunError {
    /// A short, stable name of the kind, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::Hook(_) => "hook",
            RunError::Model { .. } => "model",
            RunError::RetriesExhausted { .. } => "retries_exhausted",
            RunError::IterationLimit { .. } => "iteration_limit",
            RunError::Interrupted { .. } => "interrupted",
            RunError::Resume(_) => "resume",
            RunError::TooDeep { .. } => "too_deep",
            RunError::NestedRefused { .. } => "nested_refused",
            RunError::TreeIterationLimit { .. } => "tree_iteration_limit",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn dispatch_error_names_provider_event_and_cause() {
        let e = DispatchError::new("b", HookEvent::AfterInvocation, HookError::new("disk full"));
        assert_eq!(
            e.to_string(),
            "Hook provider 'b' failed in on_after_invocation: disk full"
        );
        // The hook's message is in the text once; no source repeats it.
        assert_eq!(e.cause().to_string(), "disk full");
        assert!(e.source().is_none());
        let deeper = DispatchError::new(
            "b",
            HookEvent::AfterInvocation,
            HookError::with_source(
                "cannot write the audit log",
                std::io::Error::other("disk full"),
            ),
        );
        assert_eq!(
            deeper.to_string(),
            "Hook provider 'b' failed in on_after_invocation: cannot write the audit log"
        );
        assert_eq!(
            deeper.source().map(|s| s.to_string()).as_deref(),
            Some("disk full")
        );
    }

    #[test]
    fn registry_error_names_the_taken_name() {
        assert_eq!(
            RegistryError::AlreadyRegistered("a".into()).to_string(),
            "Hook provider 'a' already registered"
        );
    }

    #[test]
    fn run_errors_say_what_to_do() {
        let e = RunError::IterationLimit { max_iterations: 3 };
        assert!(e.to_string().contains("raise max_iterations"));
        let e = RunError::RetriesExhausted {
            target: RetryTarget::Tool {
                name: "calc".into(),
                call_id: "c1".into(),
            },
            attempts: 4,
        };
        assert!(
            e.to_string()
                .starts_with("retries exhausted for the tool call 'calc' (c1) after 4 attempt(s)")
        );
    }
}
