//! Model-call events.

use std::sync::Arc;
use std::time::Duration;

use super::{ChangeTracker, EventContext, Field, context_getters, tracked};
use crate::state::{Message, ModelError, ModelOptions, ModelResponse, ToolSpec};
use crate::stream::ModelDelta;

/// Before the model is called: hooks may rewrite the messages (the rewrite stays in the
/// conversation), change the tools offered and the call's options (tool choice, sampling) for
/// this call, or answer in the model's place (a cache hit): then the model is not called, and
/// the after-model-call hooks see that answer like any other — after the output guard. Later
/// before-model-call hooks learn only *that* an answer was given ([`answered`](Self::answered)),
/// not what it says: it has not been guarded yet.
pub struct BeforeModelCallEvent<'a> {
    cx: EventContext<'a>,
    model: &'a str,
    messages: Vec<Message>,
    /// Shared with the run until a hook writes (then copied for this call).
    tools: Arc<Vec<ToolSpec>>,
    options: ModelOptions,
    response: Option<ModelResponse>,
    tracker: ChangeTracker,
}

/// What the before-model-call hooks decided: the request to send, or an answer in its place.
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelCallParts {
    /// The (possibly rewritten) messages.
    pub messages: Vec<Message>,
    /// The tools to offer.
    pub tools: Arc<Vec<ToolSpec>>,
    /// Tool choice and sampling.
    pub options: ModelOptions,
    /// An answer a hook gave in the model's place.
    pub response: Option<ModelResponse>,
}

impl<'a> BeforeModelCallEvent<'a> {
    /// An event for a call of `model` with `messages`, no tools and default options.
    ///
    /// ```
    /// use hooks_core::{BeforeModelCallEvent, EventContext, Extensions, Message, ModelOptions, RunId};
    /// let (run, ext) = (RunId::new("r1"), Extensions::new());
    /// let e = BeforeModelCallEvent::new(EventContext::new(&run, &ext), "gpt", vec![Message::user("hi")])
    ///     .with_options(ModelOptions::default().with_temperature(0.0));
    /// assert_eq!(e.options().temperature, Some(0.0));
    /// ```
    pub fn new(cx: EventContext<'a>, model: &'a str, messages: Vec<Message>) -> Self {
        Self {
            cx,
            model,
            messages,
            tools: Arc::default(),
            options: ModelOptions::default(),
            response: None,
            tracker: ChangeTracker::default(),
        }
    }

    /// With the tools offered to the model (a `Vec`, or an `Arc` shared with the run: it is
    /// copied only if a hook writes).
    #[must_use]
    pub fn with_tools(mut self, tools: impl Into<Arc<Vec<ToolSpec>>>) -> Self {
        self.tools = tools.into();
        self
    }

    /// With the call's options.
    #[must_use]
    pub fn with_options(mut self, options: ModelOptions) -> Self {
        self.options = options;
        self
    }

    /// The model's name.
    pub fn model(&self) -> &'a str {
        self.model
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

    /// The tools offered to the model.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tools, writable (for this call); marks [`Field::Tools`].
    pub fn tools_mut(&mut self) -> &mut Vec<ToolSpec> {
        self.tracker.mark(Field::Tools);
        Arc::make_mut(&mut self.tools)
    }

    /// Tool choice and sampling for this call.
    pub fn options(&self) -> &ModelOptions {
        &self.options
    }

    /// The options, writable (for this call); marks [`Field::Options`].
    pub fn options_mut(&mut self) -> &mut ModelOptions {
        self.tracker.mark(Field::Options);
        &mut self.options
    }

    /// Answers in the model's place (a cache hit): the model is not called; the
    /// after-model-call hooks see this response. Marks [`Field::Response`].
    pub fn respond_with(&mut self, response: ModelResponse) {
        self.tracker.mark(Field::Response);
        self.response = Some(response);
    }

    /// True when a hook answered in the model's place.
    pub fn answered(&self) -> bool {
        self.response.is_some()
    }

    /// What the hooks decided.
    pub fn into_parts(self) -> ModelCallParts {
        ModelCallParts {
            messages: self.messages,
            tools: self.tools,
            options: self.options,
            response: self.response,
        }
    }
}

impl std::fmt::Debug for BeforeModelCallEvent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BeforeModelCallEvent")
            .field("cx", &self.cx)
            .field("model", &self.model)
            .field("messages", &self.messages)
            .field("tools", &self.tools)
            .field("options", &self.options)
            // Not guarded yet: its content is for the after-model-call hooks.
            .field("answered", &self.response.is_some())
            .finish_non_exhaustive()
    }
}

tracked!(BeforeModelCallEvent<'_>);
context_getters!(BeforeModelCallEvent<'a>, AfterModelCallEvent<'a>);

/// After the model answered or failed: hooks may replace the response (also to recover a failed
/// call), ask for a retry, and give feedback that is added to the conversation before the retry.
#[derive(Debug)]
pub struct AfterModelCallEvent<'a> {
    cx: EventContext<'a>,
    model: &'a str,
    messages: &'a [Message],
    error: Option<ModelError>,
    duration: Duration,
    response: Option<ModelResponse>,
    retry: bool,
    retry_feedback: Option<String>,
    tracker: ChangeTracker,
}

/// What the after-model-call hooks left: the response (or the error), and whether to retry.
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelCallOutcome {
    /// The response, if the call succeeded or a hook supplied one.
    pub response: Option<ModelResponse>,
    /// Why the call failed, when it did.
    pub error: Option<ModelError>,
    /// True when a hook asked for a retry.
    pub retry: bool,
    /// Feedback to add to the conversation before the retry.
    pub retry_feedback: Option<String>,
}

impl<'a> AfterModelCallEvent<'a> {
    /// An event for how a call of `model` with `messages` ended.
    ///
    /// ```
    /// use hooks_core::{AfterModelCallEvent, EventContext, Extensions, ModelResponse, RunId};
    /// let (run, ext) = (RunId::new("r1"), Extensions::new());
    /// let e = AfterModelCallEvent::new(EventContext::new(&run, &ext), "gpt", &[], Ok(ModelResponse::text("hi")));
    /// assert_eq!(e.response().unwrap().message.content, "hi");
    /// ```
    pub fn new(
        cx: EventContext<'a>,
        model: &'a str,
        messages: &'a [Message],
        outcome: Result<ModelResponse, ModelError>,
    ) -> Self {
        let (response, error) = match outcome {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            cx,
            model,
            messages,
            error,
            duration: Duration::ZERO,
            response,
            retry: false,
            retry_feedback: None,
            tracker: ChangeTracker::default(),
        }
    }

    /// How long the call took.
    #[must_use]
    pub fn with_duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
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

    /// Lets `redact` rewrite the failed call's error text (see [`ModelError::message_mut`]):
    /// a guard taking personal data out of what the provider echoed. The error stays an error
    /// of its kind. Marks [`Field::Error`] only when it returns `true`. Returns what `redact`
    /// returned, or `false` when the call did not fail or its error carries no text.
    pub fn redact_error(&mut self, redact: impl FnOnce(&mut String) -> bool) -> bool {
        let changed = self
            .error
            .as_mut()
            .and_then(ModelError::message_mut)
            .is_some_and(redact);
        if changed {
            self.tracker.mark(Field::Error);
        }
        changed
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

    /// Says why the reply was discarded: added to the next request as an automated user
    /// message, and to the conversation once the before-model-call hooks accepted that request
    /// (so a guard among them judges it first). Marks [`Field::RetryFeedback`].
    pub fn set_retry_feedback(&mut self, feedback: impl Into<String>) {
        self.tracker.mark(Field::RetryFeedback);
        self.retry_feedback = Some(feedback.into());
    }

    /// The feedback for the retry, if any.
    pub fn retry_feedback(&self) -> Option<&str> {
        self.retry_feedback.as_deref()
    }

    /// What the hooks left.
    pub fn into_outcome(self) -> ModelCallOutcome {
        ModelCallOutcome {
            response: self.response,
            error: self.error,
            retry: self.retry,
            retry_feedback: self.retry_feedback,
        }
    }
}

tracked!(AfterModelCallEvent<'_>);

/// One piece of a streamed reply, before the consumer sees it (see
/// [`stream`](crate::stream)): hooks may rewrite it or hold text back (set less text and keep
/// the rest, keyed by run id, to hand over in a later piece). The last event of a reply
/// ([`is_last`](Self::is_last)) carries an empty text piece: what a hook still holds goes there.
/// The assembled reply goes through the after-model-call hooks as always.
///
/// ```
/// use hooks_core::{EventContext, Extensions, ModelDeltaEvent, RunId};
/// use hooks_core::stream::ModelDelta;
/// let (run, ext) = (RunId::new("r1"), Extensions::new());
/// let mut e = ModelDeltaEvent::new(EventContext::new(&run, &ext), "gpt", ModelDelta::Text("Hel".into()), false);
/// e.set_text("He");
/// assert_eq!(e.delta().text(), "He");
/// ```
pub struct ModelDeltaEvent<'a> {
    cx: EventContext<'a>,
    model: &'a str,
    delta: ModelDelta,
    last: bool,
    tracker: ChangeTracker,
}

impl<'a> ModelDeltaEvent<'a> {
    /// A piece of the reply of `model`; `last` for the closing (empty) piece.
    pub fn new(cx: EventContext<'a>, model: &'a str, delta: ModelDelta, last: bool) -> Self {
        Self {
            cx,
            model,
            delta,
            last,
            tracker: ChangeTracker::default(),
        }
    }

    /// The model's name.
    pub fn model(&self) -> &'a str {
        self.model
    }

    /// The piece, as earlier hooks left it.
    pub fn delta(&self) -> &ModelDelta {
        &self.delta
    }

    /// True for the reply's closing piece: hand over anything held back now.
    pub fn is_last(&self) -> bool {
        self.last
    }

    /// Replaces the piece's text (a text piece's text, a tool-call piece's arguments): less to
    /// hold some back, more to release what was held.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.tracker.mark(Field::Delta);
        *self.delta.text_mut() = text.into();
    }

    /// The piece, to rewrite.
    pub fn delta_mut(&mut self) -> &mut ModelDelta {
        self.tracker.mark(Field::Delta);
        &mut self.delta
    }

    /// The piece as the hooks left it.
    pub fn into_delta(self) -> ModelDelta {
        self.delta
    }
}

context_getters!(ModelDeltaEvent<'a>);
tracked!(ModelDeltaEvent<'_>);
