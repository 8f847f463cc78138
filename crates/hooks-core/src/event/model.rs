//! Model-call events.

use std::time::Duration;

use super::{ChangeTracker, Field, tracked};
use crate::state::{Message, ModelError, ModelResponse, RunId, ToolSpec};

/// Before the model is called: hooks may rewrite the messages (the rewrite stays in the
/// conversation). The tools are read-only.
#[derive(Debug)]
pub struct BeforeModelCallEvent<'a> {
    run_id: &'a RunId,
    iteration: u32,
    attempt: u32,
    model: &'a str,
    tools: &'a [ToolSpec],
    messages: Vec<Message>,
    tracker: ChangeTracker,
}

impl<'a> BeforeModelCallEvent<'a> {
    /// An event for attempt `attempt` (0-based) of the model call of `iteration`.
    pub fn new(
        run_id: &'a RunId,
        iteration: u32,
        attempt: u32,
        model: &'a str,
        tools: &'a [ToolSpec],
        messages: Vec<Message>,
    ) -> Self {
        Self {
            run_id,
            iteration,
            attempt,
            model,
            tools,
            messages,
            tracker: ChangeTracker::default(),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        self.run_id
    }

    /// The iteration, 1-based.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// 0 for the first try, n for the n-th retry.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The model's name.
    pub fn model(&self) -> &'a str {
        self.model
    }

    /// The tools offered to the model.
    pub fn tools(&self) -> &'a [ToolSpec] {
        self.tools
    }

    /// The messages the model will receive.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, writable; marks [`Field::Messages`].
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        self.tracker.mark(Field::Messages);
        &mut self.messages
    }

    /// The (possibly rewritten) messages.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }
}

tracked!(BeforeModelCallEvent<'_>);

/// After the model answered or failed: hooks may replace the response (also to recover a failed
/// call), ask for a retry, and give feedback that is added to the conversation before the retry.
#[derive(Debug)]
pub struct AfterModelCallEvent<'a> {
    run_id: &'a RunId,
    iteration: u32,
    attempt: u32,
    model: &'a str,
    messages: &'a [Message],
    error: Option<ModelError>,
    duration: Duration,
    response: Option<ModelResponse>,
    retry: bool,
    retry_feedback: Option<String>,
    tracker: ChangeTracker,
}

impl<'a> AfterModelCallEvent<'a> {
    /// An event for the outcome of attempt `attempt` (0-based) of the model call of `iteration`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run_id: &'a RunId,
        iteration: u32,
        attempt: u32,
        model: &'a str,
        messages: &'a [Message],
        outcome: Result<ModelResponse, ModelError>,
        duration: Duration,
    ) -> Self {
        let (response, error) = match outcome {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            run_id,
            iteration,
            attempt,
            model,
            messages,
            error,
            duration,
            response,
            retry: false,
            retry_feedback: None,
            tracker: ChangeTracker::default(),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &'a RunId {
        self.run_id
    }

    /// The iteration, 1-based.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// 0 for the first try, n for the n-th retry.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The model's name.
    pub fn model(&self) -> &'a str {
        self.model
    }

    /// The messages the model received.
    pub fn messages(&self) -> &'a [Message] {
        self.messages
    }

    /// Why the call failed, when it did (read-only; a hook recovers by setting a response).
    pub fn error(&self) -> Option<&ModelError> {
        self.error.as_ref()
    }

    /// How long the call took.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The response, if the call succeeded or a hook supplied one.
    pub fn response(&self) -> Option<&ModelResponse> {
        self.response.as_ref()
    }

    /// The response, writable; marks [`Field::Response`].
    pub fn response_mut(&mut self) -> Option<&mut ModelResponse> {
        self.tracker.mark(Field::Response);
        self.response.as_mut()
    }

    /// Lets `edit` change the response in place (when there is one); marks
    /// [`Field::Response`] only when it returns `true` (it changed something). Returns what
    /// `edit` returned, or `false` without a response.
    pub fn edit_response(&mut self, edit: impl FnOnce(&mut ModelResponse) -> bool) -> bool {
        let changed = self.response.as_mut().is_some_and(edit);
        if changed {
            self.tracker.mark(Field::Response);
        }
        changed
    }

    /// Replaces the response (recovering a failed call); marks [`Field::Response`].
    pub fn set_response(&mut self, response: ModelResponse) {
        self.tracker.mark(Field::Response);
        self.response = Some(response);
    }

    /// Asks the loop to call the model again (bounded by the loop's maximum); marks
    /// [`Field::Retry`].
    pub fn request_retry(&mut self) {
        self.tracker.mark(Field::Retry);
        self.retry = true;
    }

    /// Withdraws a retry request; marks [`Field::Retry`].
    pub fn clear_retry(&mut self) {
        self.tracker.mark(Field::Retry);
        self.retry = false;
    }

    /// True when some hook asked for a retry.
    pub fn retry_requested(&self) -> bool {
        self.retry
    }

    /// Says why the reply was discarded: added to the conversation as an automated user message
    /// before the model is called again. Marks [`Field::RetryFeedback`].
    pub fn set_retry_feedback(&mut self, feedback: impl Into<String>) {
        self.tracker.mark(Field::RetryFeedback);
        self.retry_feedback = Some(feedback.into());
    }

    /// The feedback for the retry, if any.
    pub fn retry_feedback(&self) -> Option<&str> {
        self.retry_feedback.as_deref()
    }

    /// Splits the event into (response, error, retry, feedback).
    pub fn into_outcome(
        self,
    ) -> (
        Option<ModelResponse>,
        Option<ModelError>,
        bool,
        Option<String>,
    ) {
        (self.response, self.error, self.retry, self.retry_feedback)
    }
}

tracked!(AfterModelCallEvent<'_>);
