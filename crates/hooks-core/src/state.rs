//! The agent vocabulary: run state, messages, tool calls, tool specs and model replies.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The identifier of one agent run; cheap to clone (a shared string).
///
/// Every event carries it, so a provider can key its per-run state by it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(Arc<str>);

impl RunId {
    /// Wraps an existing identifier.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// A fresh identifier, unique within this process and unlikely to collide across processes.
    ///
    /// ```
    /// let a = hooks_core::RunId::generate();
    /// let b = hooks_core::RunId::generate();
    /// assert_ne!(a, b);
    /// ```
    pub fn generate() -> Self {
        // UUIDv7: time-ordered, 74 random bits, unique across processes and machines (it is
        // also the run's GenAI conversation id).
        Self(format!("run-{}", uuid::Uuid::now_v7()).into())
    }

    /// The identifier as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RunId {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for RunId {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The user (or, when [`Message::automated`] is set, the agent loop speaking for a hook).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// The lowercase name used by chat-completion APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Tool calls the assistant asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`] messages: the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// True when the loop wrote this message on a hook's behalf (retry feedback), not the user.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automated: bool,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            automated: false,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(tool_call_id.into());
        m
    }

    /// Adds tool calls (assistant messages).
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// Marks the message as written by the loop for a hook (see [`Message::automated`]).
    #[must_use]
    pub fn automated(mut self) -> Self {
        self.automated = true;
        self
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The id the model gave this call; results are matched to calls by it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments; a JSON object when the model behaves. Anything else is answered with an
    /// error result by the reference loop, never a panic.
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// What a tool is, for the model: name, description and a JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool spec.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// It wants tool calls run.
    ToolCalls,
    /// Cut off at the token limit.
    Length,
    /// Stopped by the provider's content filter.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

impl FinishReason {
    /// The reason a provider named, in any case and under any common name: `stop`, `eos`,
    /// `end_turn`, `stop_sequence`; `tool_calls`, `function_call`, `tool_use`; `length`,
    /// `max_tokens`, `model_length`, `max_output_tokens`; `content_filter`. Anything else is
    /// [`Other`](Self::Other), shortened to 64 characters.
    ///
    /// ```
    /// use hooks_core::FinishReason;
    /// assert_eq!(FinishReason::from_provider("MAX_TOKENS"), FinishReason::Length);
    /// assert_eq!(FinishReason::from_provider("tool_use"), FinishReason::ToolCalls);
    /// ```
    pub fn from_provider(name: &str) -> Self {
        match name.trim().to_ascii_lowercase().as_str() {
            "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "length" | "max_tokens" | "model_length" | "max_output_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Other(crate::text::preview(name.trim(), 64).into_owned()),
        }
    }

    /// The name used by the OpenAI-compatible APIs and the GenAI conventions.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// Tokens used by a model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl TokenUsage {
    /// Token usage.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
        }
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Which tool the model must (or may) call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Tool(String),
}

/// How a model call is made beyond its messages and tools: tool choice and sampling. `None`
/// leaves a setting to the model's default. A before-model-call hook may change any of them
/// for one call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelOptions {
    /// Which tool the model must or may call.
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
    /// Sequences that stop generation.
    pub stop: Vec<String>,
    /// The shape of the answer: free text, any JSON object, or JSON matching a schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// A seed for reproducible sampling, where the provider supports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Whether the model may ask for several tool calls in one reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Provider-specific request fields sent as they are (e.g. `{"top_k": 40}` for a local
    /// server). A field the client sets itself (`model`, `messages`, …) is not overridden.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// The shape a model's answer must take.
///
/// ```
/// use hooks_core::{ModelOptions, ResponseFormat};
/// let schema = serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
/// let options = ModelOptions::default()
///     .with_response_format(ResponseFormat::json_schema("verdict", schema));
/// assert!(matches!(options.response_format, Some(ResponseFormat::JsonSchema { strict: true, .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching `schema`.
    JsonSchema {
        /// The schema's name (providers require one).
        name: String,
        /// The JSON schema.
        schema: Value,
        /// Whether the provider must follow the schema exactly.
        strict: bool,
    },
}

impl ResponseFormat {
    /// A strict JSON schema named `name`.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        ResponseFormat::JsonSchema {
            name: name.into(),
            schema,
            strict: true,
        }
    }
}

impl ModelOptions {
    /// Sets the tool choice.
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn with_temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets top-p.
    #[must_use]
    pub fn with_top_p(mut self, p: f32) -> Self {
        self.top_p = Some(p);
        self
    }

    /// Sets the token limit.
    #[must_use]
    pub fn with_max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Adds a stop sequence.
    #[must_use]
    pub fn with_stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// Sets the answer's shape.
    #[must_use]
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// Sets the sampling seed.
    #[must_use]
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Allows or forbids several tool calls in one reply.
    #[must_use]
    pub fn with_parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = Some(on);
        self
    }

    /// Adds a provider-specific request field.
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelResponse {
    /// The assistant message, with any tool calls.
    pub message: Message,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens used, when the model reports them.
    pub usage: Option<TokenUsage>,
    /// The model that answered, when known.
    pub model: Option<String>,
}

impl ModelResponse {
    /// A plain text reply (finish reason `stop`).
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            message: Message::assistant(content),
            finish_reason: FinishReason::Stop,
            usage: None,
            model: None,
        }
    }

    /// A reply asking for tool calls (finish reason `tool_calls`).
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self {
            message: Message::assistant("").with_tool_calls(calls),
            finish_reason: FinishReason::ToolCalls,
            usage: None,
            model: None,
        }
    }

    /// Sets the token usage.
    #[must_use]
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the model name.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the finish reason.
    #[must_use]
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish_reason = reason;
        self
    }

    /// True when the reply has no content and no tool calls (whitespace is content).
    pub fn is_empty(&self) -> bool {
        self.message.content.is_empty() && self.message.tool_calls.is_empty()
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider throttled the call; `retry_after` is its hint, when it gave one.
    #[error("model call rate limited{}; wait and retry", retry_after.map(|d| format!(" (retry after {:.3}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The provider failed (5xx); retrying may help.
    #[error("model server error{}: {message}", status.map(|s| format!(" (status {s})")).unwrap_or_default())]
    Server {
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What the provider said.
        message: String,
    },
    /// The call took too long.
    #[error("model call timed out after {:.3}s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The conversation does not fit the model's context window; retrying the same request
    /// will not help — shorten the conversation or choose a model with a larger window.
    #[error("the conversation exceeds the model's context window: {message}")]
    ContextLength {
        /// What the provider said.
        message: String,
    },
    /// Anything else; usually not worth retrying.
    #[error("model call failed: {0}")]
    Other(String),
}

impl ModelError {
    /// The error's free text (what the provider said), writable: for a guard that takes
    /// personal data out of it. `None` for the kinds that carry none.
    pub fn message_mut(&mut self) -> Option<&mut String> {
        match self {
            ModelError::Server { message, .. } => Some(message),
            ModelError::Other(message) => Some(message),
            ModelError::ContextLength { message } => Some(message),
            ModelError::RateLimited { .. } | ModelError::Timeout(_) => None,
        }
    }

    /// A short, stable name of the kind: `rate_limited`, `server`, `timeout`,
    /// `context_length` or `other`.
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            ModelError::RateLimited { .. } => ModelErrorKind::RateLimited,
            ModelError::Server { .. } => ModelErrorKind::Server,
            ModelError::Timeout(_) => ModelErrorKind::Timeout,
            ModelError::ContextLength { .. } => ModelErrorKind::ContextLength,
            ModelError::Other(_) => ModelErrorKind::Other,
        }
    }

    /// The provider's retry-after hint, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

/// The kind of a [`ModelError`], for configuration and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// [`ModelError::RateLimited`].
    RateLimited,
    /// [`ModelError::Server`].
    Server,
    /// [`ModelError::Timeout`].
    Timeout,
    /// [`ModelError::ContextLength`].
    ContextLength,
    /// [`ModelError::Other`].
    Other,
}

impl ModelErrorKind {
    /// The kind's stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorKind::RateLimited => "rate_limited",
            ModelErrorKind::Server => "server",
            ModelErrorKind::Timeout => "timeout",
            ModelErrorKind::ContextLength => "context_length",
            ModelErrorKind::Other => "other",
        }
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The record of one executed (or cancelled) tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolExecution {
    /// The call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments as executed (never the secret arguments).
    pub arguments: Value,
    /// What the model was given.
    pub result: String,
    /// The error, when the call failed.
    pub error: Option<String>,
    /// The reason, when a hook cancelled the call.
    pub cancelled: Option<String>,
    /// How many times the call ran (1 without retries).
    pub attempts: u32,
    /// Wall time of the last attempt.
    pub duration: Duration,
}

impl ToolExecution {
    /// True when the call ran and did not fail.
    pub fn succeeded(&self) -> bool {
        self.error.is_none() && self.cancelled.is_none()
    }
}

/// Where a nested run sits: the run whose tool call started it (see
/// [`Agent::as_tool`](crate::agent::Agent::as_tool)). Every event of a nested run can read it
/// ([`EventContext::parent`](crate::EventContext::parent), [`AgentState::parent`]), so a
/// provider can tie the child's records to the parent's call.
///
/// ```
/// use hooks_core::{ParentRun, RunId};
/// let p = ParentRun::new(RunId::new("run-1"), "call-7", 1);
/// assert_eq!((p.run_id.as_str(), p.tool_call_id.as_str(), p.depth), ("run-1", "call-7", 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ParentRun {
    /// The parent run's id.
    pub run_id: RunId,
    /// The parent's tool call that runs this one.
    pub tool_call_id: String,
    /// How deep this run is: 1 for a child of a top-level run, 2 for a grandchild, …
    pub depth: u32,
}

impl ParentRun {
    /// The parent `run_id`'s call `tool_call_id`, for a run `depth` levels down.
    pub fn new(run_id: RunId, tool_call_id: impl Into<String>, depth: u32) -> Self {
        Self {
            run_id,
            tool_call_id: tool_call_id.into(),
            depth,
        }
    }
}

/// The state of one agent run.
///
/// ```
/// use hooks_core::AgentState;
/// let state = AgentState::new("support-bot").with_metadata("tenant", "acme");
/// assert_eq!(state.metadata["tenant"], "acme");
/// assert_eq!(state.iteration, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentState {
    /// This run's id.
    pub run_id: RunId,
    /// The agent's name.
    pub agent_id: String,
    /// The current iteration, 1-based; 0 before the first.
    pub iteration: u32,
    /// The most iterations the run may take.
    pub max_iterations: u32,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Every tool call of the run, in order.
    pub tool_executions: Vec<ToolExecution>,
    /// Errors met along the way (failed tools, exhausted retries), as text.
    pub errors: Vec<String>,
    /// When the run started.
    pub started_at: SystemTime,
    /// When the state last changed.
    pub updated_at: SystemTime,
    /// Anything else, as JSON.
    pub metadata: Map<String, Value>,
    /// For a nested run: the run and tool call that started it (set by the driver; hooks
    /// cannot change it). `None` for a top-level run.
    /// (Boxed: a top-level run's state, which every run future holds, stays small.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Box<ParentRun>>,
}

impl AgentState {
    /// A fresh state for `agent_id` with a generated run id and 10 iterations at most.
    pub fn new(agent_id: impl Into<String>) -> Self {
        let now = SystemTime::now();
        Self {
            agent_id: agent_id.into(),
            max_iterations: 10,
            started_at: now,
            updated_at: now,
            ..Self::hollow(RunId::generate())
        }
    }

    /// A placeholder holding only the run id, for while the state is lent out.
    pub(crate) fn hollow(run_id: RunId) -> Self {
        let now = SystemTime::UNIX_EPOCH;
        Self {
            run_id,
            agent_id: String::new(),
            iteration: 0,
            max_iterations: 0,
            messages: Vec::new(),
            tool_executions: Vec::new(),
            errors: Vec::new(),
            started_at: now,
            updated_at: now,
            metadata: Map::new(),
            parent: None,
        }
    }

    /// Sets the run id.
    #[must_use]
    pub fn with_run_id(mut self, run_id: impl Into<RunId>) -> Self {
        self.run_id = run_id.into();
        self
    }

    /// Sets the iteration limit.
    #[must_use]
    pub fn with_max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }

    /// Appends a message.
    #[must_use]
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Adds a metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The first user message's text, if any: what the run was asked.
    pub fn prompt(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.role == Role::User && !m.automated)
            .map(|m| m.content.as_str())
    }

    /// The last assistant message's text, if any.
    pub fn final_answer(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.as_str())
    }

    /// Stamps `updated_at` with the current time.
    pub fn touch(&mut self) {
        self.updated_at = SystemTime::now();
    }

    /// How deep the run is nested: 0 for a top-level run.
    pub fn depth(&self) -> u32 {
        self.parent.as_ref().map_or(0, |p| p.depth)
    }

    /// Time since the run started (zero if the clock went backwards).
    pub fn elapsed(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.started_at)
            .unwrap_or_default()
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> Self {
        id.0.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_no_content_and_no_tool_calls() {
        assert!(ModelResponse::text("").is_empty());
        assert!(!ModelResponse::text(" ").is_empty());
        let call = ToolCall::new("1", "t", Value::Object(Map::new()));
        assert!(!ModelResponse::tool_calls(vec![call]).is_empty());
    }

    #[test]
    fn state_round_trips_through_json() {
        let s = AgentState::new("a")
            .with_message(Message::user("hi"))
            .with_metadata("k", 1);
        let json = serde_json::to_string(&s).expect("serialises");
        let back: AgentState = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, s);
    }

    #[test]
    fn model_error_messages_say_what_happened() {
        let e = ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(1500)),
        };
        assert_eq!(
            e.to_string(),
            "model call rate limited (retry after 1.500s); wait and retry"
        );
        assert_eq!(e.kind().as_str(), "rate_limited");
        let e = ModelError::Server {
            status: Some(503),
            message: "overloaded".into(),
        };
        assert_eq!(e.to_string(), "model server error (status 503): overloaded");
    }

    #[test]
    fn prompt_skips_automated_messages() {
        let s = AgentState::new("a")
            .with_message(Message::user("fix it").automated())
            .with_message(Message::user("real"));
        assert_eq!(s.prompt(), Some("real"));
    }
}
