//! The reference agent loop: drives a [`Model`] and [`Tool`]s through a [`HookRegistry`].

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt as _;
use futures_util::future::join_all;
use serde_json::{Map, Value};

use crate::error::{DispatchError, RetryTarget, RunError};
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Change, Field, HookEvent, IterationEvent,
};
use crate::registry::HookRegistry;
use crate::state::{
    AgentState, Message, ModelError, ModelResponse, RunId, ToolCall, ToolExecution, ToolSpec,
};
use crate::text::preview;

/// Tool-call arguments nested deeper than this are refused: the call gets an error result and
/// the value is taken apart without recursion, so no hook, log or span meets it (a value
/// nested 100 000 levels deep would otherwise overflow the stack when cloned or dropped).
pub const MAX_ARGUMENT_DEPTH: usize = 128;

/// True when `v` nests arrays and objects more than `max` levels deep (checked without
/// recursion; `[[1]]` is 2 levels).
pub fn nests_deeper_than(v: &Value, max: usize) -> bool {
    let container = |v: &Value| matches!(v, Value::Array(_) | Value::Object(_));
    let mut stack: Vec<(&Value, usize)> = if container(v) {
        vec![(v, 1)]
    } else {
        Vec::new()
    };
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => Box::new(std::iter::empty()),
        };
        stack.extend(children.filter(|c| container(c)).map(|c| (c, depth + 1)));
    }
    false
}

/// Drops `v` without recursion (the default drop of a deeply nested value recurses).
pub fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// What replaces refused arguments.
const REFUSED_ARGUMENTS: &str = "<refused: nested too deeply>";

/// Takes over-deep arguments out of a response; returns the ids of the calls concerned.
fn refuse_deep_arguments(response: &mut ModelResponse) -> Vec<String> {
    let mut refused = Vec::new();
    for call in &mut response.message.tool_calls {
        if nests_deeper_than(&call.arguments, MAX_ARGUMENT_DEPTH) {
            let deep = std::mem::replace(
                &mut call.arguments,
                Value::String(REFUSED_ARGUMENTS.to_owned()),
            );
            drop_deep(deep);
            refused.push(call.id.clone());
        }
    }
    refused
}

/// One model call's input.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The run's id.
    pub run_id: &'a RunId,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
}

/// A chat model the loop can call.
#[async_trait]
pub trait Model: Send + Sync {
    /// The model's name, for spans and logs.
    fn name(&self) -> &str;

    /// Answers the conversation.
    async fn complete(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError>;
}

/// The future a model call returns (what `#[async_trait]` makes of it).
type ModelFuture<'f> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ModelResponse, ModelError>> + Send + 'f>,
>;

/// The future a tool call returns (what `#[async_trait]` makes of it).
type ToolFuture<'f> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, ToolError>> + Send + 'f>>;

// Shared and boxed models and tools are models and tools, so one can be handed to several
// agents. Written out so the inner future is not boxed a second time.
macro_rules! forward_model_and_tool {
    ($ptr:ident) => {
        impl<T: Model + ?Sized> Model for $ptr<T> {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn complete<'s, 'a, 'f>(&'s self, request: ModelRequest<'a>) -> ModelFuture<'f>
            where
                's: 'f,
                'a: 'f,
            {
                (**self).complete(request)
            }
        }
        impl<T: Tool + ?Sized> Tool for $ptr<T> {
            fn spec(&self) -> &ToolSpec {
                (**self).spec()
            }
            fn call<'s, 'a, 'f>(&'s self, input: ToolInput<'a>) -> ToolFuture<'f>
            where
                's: 'f,
                'a: 'f,
            {
                (**self).call(input)
            }
        }
    };
}
forward_model_and_tool!(Arc);
forward_model_and_tool!(Box);

/// A tool failed; the model sees `Error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A tool error with a message the model can act on.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Turns a tool's raw output into text, refusing invalid UTF-8 with an error that says where it
/// is instead of silently replacing bytes.
///
/// ```
/// use hooks_core::tool_output_from_bytes;
/// assert_eq!(tool_output_from_bytes(b"ok".to_vec()).unwrap(), "ok");
/// let err = tool_output_from_bytes(vec![b'a', 0xff]).unwrap_err();
/// assert!(err.to_string().contains("byte 1"));
/// ```
///
/// # Errors
/// A [`ToolError`] naming the first invalid byte.
pub fn tool_output_from_bytes(bytes: Vec<u8>) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let total = e.as_bytes().len();
        ToolError::new(format!(
            "tool output is not valid UTF-8 (first invalid byte at byte {at} of {total}); return text or encode binary output (e.g. base64)"
        ))
    })
}

/// One tool call's input.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolInput<'a> {
    /// The run's id.
    pub run_id: &'a RunId,
    /// The call's id.
    pub call_id: &'a str,
    /// The arguments, secret ones merged in.
    pub arguments: &'a Map<String, Value>,
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool.
    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError>;
}

type ToolFn = dyn Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync;

/// A tool made from a synchronous closure.
///
/// ```
/// use hooks_core::{FnTool, ToolError, ToolSpec};
/// use serde_json::json;
/// let echo = FnTool::new(
///     ToolSpec::new("echo", "Echoes its text", json!({"type": "object"})),
///     |args| args.get("text").and_then(|v| v.as_str()).map(str::to_owned)
///         .ok_or_else(|| ToolError::new("missing 'text'")),
/// );
/// # let _ = echo;
/// ```
pub struct FnTool {
    spec: ToolSpec,
    f: Box<ToolFn>,
}

impl FnTool {
    /// A tool that calls `f` with the arguments.
    pub fn new(
        spec: ToolSpec,
        f: impl Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec,
            f: Box::new(f),
        }
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").field("spec", &self.spec).finish()
    }
}

#[async_trait]
impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        (self.f)(input.arguments)
    }
}

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
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_retries: 3,
            parallel_tool_calls: true,
            system_prompt: None,
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

/// A run that ended with an error; the state is kept.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailure {
    /// Why it ended.
    #[source]
    pub error: RunError,
    /// The state when it ended.
    pub state: Box<AgentState>,
    /// Every field a hook changed, in order.
    pub changes: Vec<RecordedChange>,
}

/// The reference agent loop.
///
/// ```
/// # tokio_test_shim::block_on(async {
/// use std::sync::Arc;
/// use hooks_core::{Agent, HookRegistry};
/// use hooks_core::test_util::ScriptedModel;
/// use hooks_core::ModelResponse;
///
/// let model = ScriptedModel::new(vec![Ok(ModelResponse::text("4"))]);
/// let agent = Agent::builder("calc", model).registry(Arc::new(HookRegistry::new())).build().unwrap();
/// let out = agent.run("2 + 2?").await.unwrap();
/// assert_eq!(out.answer, "4");
/// # });
/// # mod tokio_test_shim { pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f) } }
/// ```
pub struct Agent {
    name: String,
    model: Arc<dyn Model>,
    tools: HashMap<String, Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    registry: Arc<HookRegistry>,
    config: AgentConfig,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("model", &self.model.name())
            .field(
                "tools",
                &self.specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish()
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    name: String,
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
    registry: Option<Arc<HookRegistry>>,
    config: AgentConfig,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// Adds a tool (an `Arc<T>` of a tool is a tool too, to share one among agents).
    #[must_use]
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// The hooks (default: none).
    #[must_use]
    pub fn registry(mut self, registry: Arc<HookRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// See [`AgentConfig::max_iterations`].
    #[must_use]
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.config.max_iterations = n;
        self
    }

    /// See [`AgentConfig::max_retries`].
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.config.max_retries = n;
        self
    }

    /// See [`AgentConfig::parallel_tool_calls`].
    #[must_use]
    pub fn parallel_tool_calls(mut self, on: bool) -> Self {
        self.config.parallel_tool_calls = on;
        self
    }

    /// See [`AgentConfig::system_prompt`].
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.config.system_prompt = Some(prompt.into());
        self
    }

    /// Builds the agent.
    ///
    /// # Errors
    /// [`AgentError::DuplicateTool`] when two tools share a name; [`AgentError::ZeroIterations`]
    /// when `max_iterations` is 0.
    pub fn build(self) -> Result<Agent, AgentError> {
        if self.config.max_iterations == 0 {
            return Err(AgentError::ZeroIterations);
        }
        let mut tools = HashMap::with_capacity(self.tools.len());
        let mut specs = Vec::with_capacity(self.tools.len());
        for tool in self.tools {
            let spec = tool.spec().clone();
            if tools.insert(spec.name.clone(), tool).is_some() {
                return Err(AgentError::DuplicateTool(spec.name));
            }
            specs.push(spec);
        }
        Ok(Agent {
            name: self.name,
            model: self.model,
            tools,
            specs,
            registry: self.registry.unwrap_or_default(),
            config: self.config,
        })
    }
}

/// Calls `on_run_abandoned` if the run's future is dropped before after-invocation ran.
struct Abandon<'a> {
    registry: &'a HookRegistry,
    run_id: Option<RunId>,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some(run_id) = self.run_id.take() {
            self.registry.run_abandoned(&run_id);
        }
    }
}

/// Collects what a run reports besides its answer.
#[derive(Default)]
struct Report {
    changes: Vec<RecordedChange>,
    exhausted: Vec<RetryTarget>,
}

impl Report {
    fn record(
        &mut self,
        run_id: &RunId,
        event: HookEvent,
        tool_call_id: Option<&str>,
        changes: Vec<Change>,
    ) {
        for change in changes {
            tracing::debug!(
                target: "hooks::changes",
                run_id = run_id.as_str(),
                event = event.method_name(),
                provider = &*change.provider,
                field = change.field.as_str(),
                tool_call_id,
                "hook provider '{}' changed {} in {}",
                change.provider,
                change.field,
                event
            );
            self.changes.push(RecordedChange {
                event,
                tool_call_id: tool_call_id.map(str::to_owned),
                change,
            });
        }
    }
}

/// The outcome of one tool call with all its attempts.
struct ToolOutcome {
    execution: ToolExecution,
    changes: Vec<(HookEvent, Vec<Change>)>,
    hook_error: Option<DispatchError>,
    exhausted: bool,
}

impl Agent {
    /// Starts building an agent named `name` around `model` (an `Arc<T>` of a model is a
    /// model too, to share one among agents).
    pub fn builder(name: impl Into<String>, model: impl Model + 'static) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            model: Arc::new(model),
            tools: Vec::new(),
            registry: None,
            config: AgentConfig::default(),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<HookRegistry> {
        &self.registry
    }

    /// A fresh state for a run of this agent on `prompt`.
    pub fn new_state(&self, prompt: impl Into<String>) -> AgentState {
        let mut state =
            AgentState::new(self.name.clone()).with_max_iterations(self.config.max_iterations);
        if let Some(system) = &self.config.system_prompt {
            state.messages.push(Message::system(system.clone()));
        }
        state.messages.push(Message::user(prompt));
        state
    }

    /// Runs the agent on `prompt` with a fresh state.
    ///
    /// # Errors
    /// A [`RunFailure`] holding the [`RunError`] and the state when the run ended.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunOutput, RunFailure> {
        self.run_state(self.new_state(prompt)).await
    }

    /// Runs the agent from `state` (its messages must hold the prompt).
    ///
    /// Dropping the returned future stops the run at its next await point.
    ///
    /// # Errors
    /// A [`RunFailure`] holding the [`RunError`] and the state when the run ended.
    pub async fn run_state(&self, state: AgentState) -> Result<RunOutput, RunFailure> {
        let started = Instant::now();
        // Dropped before the run ends (the future was dropped)? Then tell the providers.
        let mut abandon = Abandon {
            registry: &self.registry,
            run_id: Some(state.run_id.clone()),
        };
        let mut report = Report::default();
        let mut event = BeforeInvocationEvent::new(state);
        let before = self.registry.before_invocation(&mut event).await;
        let changes = event.take_changes();
        let mut state = event.into_state();
        report.record(&state.run_id, HookEvent::BeforeInvocation, None, changes);

        let result = match before {
            Err(e) => Err(RunError::Hook(e)),
            Ok(()) => self.iterate(&mut state, &mut report).await,
        };
        state.touch();

        let after = AfterInvocationEvent::new(&state, result.as_ref().err(), started.elapsed());
        let after = self.registry.after_invocation(&after).await;
        abandon.run_id = None;
        let result = match (result, after) {
            (Ok(_), Err(e)) => Err(RunError::Hook(e)),
            (Err(run_error), Err(e)) => {
                tracing::warn!(target: "hooks::agent", run_id = state.run_id.as_str(), "{e}");
                Err(run_error)
            }
            (r, Ok(())) => r,
        };
        match result {
            Ok(answer) => Ok(RunOutput {
                answer,
                state,
                changes: report.changes,
                retries_exhausted: report.exhausted,
            }),
            Err(error) => Err(RunFailure {
                error,
                state: Box::new(state),
                changes: report.changes,
            }),
        }
    }

    async fn iterate(
        &self,
        state: &mut AgentState,
        report: &mut Report,
    ) -> Result<String, RunError> {
        loop {
            if state.iteration >= state.max_iterations {
                return Err(RunError::IterationLimit {
                    max_iterations: state.max_iterations,
                });
            }
            state.iteration += 1;
            state.touch();
            self.registry
                .iteration_start(&IterationEvent::new(state))
                .await;
            let step = self.step(state, report).await;
            state.touch();
            self.registry
                .iteration_end(&IterationEvent::new(state))
                .await;
            if let Some(answer) = step? {
                return Ok(answer);
            }
        }
    }

    /// One iteration: the model call, then its tool calls. `Some(answer)` ends the run.
    async fn step(
        &self,
        state: &mut AgentState,
        report: &mut Report,
    ) -> Result<Option<String>, RunError> {
        let response = self.call_model(state, report).await?;
        let calls = response.message.tool_calls.clone();
        let answer = response.message.content.clone();
        state.messages.push(response.message);
        if calls.is_empty() {
            return Ok(Some(answer));
        }
        self.call_tools(state, &calls, report).await?;
        Ok(None)
    }

    async fn call_model(
        &self,
        state: &mut AgentState,
        report: &mut Report,
    ) -> Result<ModelResponse, RunError> {
        let max = self.config.max_retries;
        let model = self.model.name();
        let mut attempt = 0;
        loop {
            let messages = std::mem::take(&mut state.messages);
            let mut event = BeforeModelCallEvent::new(
                &state.run_id,
                state.iteration,
                attempt,
                model,
                &self.specs,
                messages,
            );
            let before = self.registry.before_model_call(&mut event).await;
            let changes = event.take_changes();
            let messages = event.into_messages();
            state.messages = messages;
            report.record(&state.run_id, HookEvent::BeforeModelCall, None, changes);
            before?;

            let t0 = Instant::now();
            let mut outcome = self
                .model
                .complete(ModelRequest {
                    run_id: &state.run_id,
                    messages: &state.messages,
                    tools: &self.specs,
                })
                .await;
            if let Ok(response) = &mut outcome {
                for id in refuse_deep_arguments(response) {
                    tracing::warn!(target: "hooks::agent", run_id = state.run_id.as_str(), tool_call_id = id.as_str(), "tool-call arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels were refused");
                }
            }
            let mut event = AfterModelCallEvent::new(
                &state.run_id,
                state.iteration,
                attempt,
                model,
                &state.messages,
                outcome,
                t0.elapsed(),
            );
            let after = self.registry.after_model_call(&mut event).await;
            let changes = event.take_changes();
            let (response, error, retry, feedback) = event.into_outcome();
            report.record(&state.run_id, HookEvent::AfterModelCall, None, changes);
            after?;

            let attempts = attempt + 1;
            if retry {
                if attempt < max {
                    if let Some(feedback) = feedback {
                        state.messages.push(Message::user(feedback).automated());
                    }
                    attempt += 1;
                    continue;
                }
                tracing::warn!(target: "hooks::agent", run_id = state.run_id.as_str(), iteration = state.iteration, attempts, "model call retries exhausted");
                return Err(match (response, error) {
                    (None, Some(source)) => RunError::Model { source, attempts },
                    _ => RunError::RetriesExhausted {
                        target: RetryTarget::Model {
                            iteration: state.iteration,
                        },
                        attempts,
                    },
                });
            }
            return match (response, error) {
                (Some(response), _) => Ok(response),
                (None, Some(source)) => Err(RunError::Model { source, attempts }),
                (None, None) => Err(RunError::Model {
                    source: ModelError::Other(
                        "the model returned neither a response nor an error".into(),
                    ),
                    attempts,
                }),
            };
        }
    }

    async fn call_tools(
        &self,
        state: &mut AgentState,
        calls: &[ToolCall],
        report: &mut Report,
    ) -> Result<(), RunError> {
        let run_id = state.run_id.clone();
        let iteration = state.iteration;
        let outcomes: Vec<ToolOutcome> = if self.config.parallel_tool_calls && calls.len() > 1 {
            join_all(calls.iter().map(|c| self.call_tool(&run_id, iteration, c))).await
        } else {
            let mut v = Vec::with_capacity(calls.len());
            for c in calls {
                let o = self.call_tool(&run_id, iteration, c).await;
                let stop = o.hook_error.is_some();
                v.push(o);
                if stop {
                    break;
                }
            }
            v
        };
        let mut first_error = None;
        for outcome in outcomes {
            let exec = outcome.execution;
            for (event, changes) in outcome.changes {
                report.record(&run_id, event, Some(&exec.tool_call_id), changes);
            }
            if let Some(e) = outcome.hook_error {
                first_error.get_or_insert(e);
                continue;
            }
            if outcome.exhausted {
                let target = RetryTarget::Tool {
                    name: exec.tool_name.clone(),
                    call_id: exec.tool_call_id.clone(),
                };
                state.errors.push(format!(
                    "retries exhausted for the {target} after {} attempt(s)",
                    exec.attempts
                ));
                tracing::warn!(target: "hooks::agent", run_id = run_id.as_str(), tool_call_id = exec.tool_call_id.as_str(), attempts = exec.attempts, "tool call retries exhausted");
                report.exhausted.push(target);
            }
            if let Some(err) = &exec.error {
                state.errors.push(format!(
                    "tool '{}' failed: {err}",
                    preview(&exec.tool_name, 64)
                ));
            }
            state.messages.push(Message::tool(
                exec.tool_call_id.clone(),
                exec.result.clone(),
            ));
            state.tool_executions.push(exec);
        }
        match first_error {
            Some(e) => Err(RunError::Hook(e)),
            None => Ok(()),
        }
    }

    async fn call_tool(&self, run_id: &RunId, iteration: u32, call: &ToolCall) -> ToolOutcome {
        let max = self.config.max_retries;
        let mut changes = Vec::new();
        let mut attempt = 0;
        loop {
            let mut before = BeforeToolCallEvent::new(
                run_id,
                iteration,
                attempt,
                &call.name,
                &call.id,
                call.arguments.clone(),
            );
            let r = self.registry.before_tool_call(&mut before).await;
            push_changes(
                &mut changes,
                HookEvent::BeforeToolCall,
                before.take_changes(),
            );
            let (arguments, secrets, cancel) = before.into_parts();
            if let Err(e) = r {
                return ToolOutcome {
                    execution: record(
                        call,
                        arguments,
                        String::new(),
                        Some(e.to_string()),
                        None,
                        attempt + 1,
                        Duration::ZERO,
                    ),
                    changes,
                    hook_error: Some(e),
                    exhausted: false,
                };
            }

            let t0 = Instant::now();
            let (result, error) = match &cancel {
                Some(reason) => (reason.clone(), None),
                None => match self.execute(run_id, call, &arguments, &secrets).await {
                    Ok(text) => (secrets.scrub(text), None),
                    Err(e) => {
                        let message = secrets.scrub(e.message);
                        (format!("Error: {message}"), Some(message))
                    }
                },
            };
            let duration = t0.elapsed();

            let mut after = AfterToolCallEvent::new(
                run_id,
                iteration,
                attempt,
                &call.name,
                &call.id,
                &arguments,
                result,
                error.as_deref(),
                cancel.as_deref(),
                duration,
            );
            let r = self.registry.after_tool_call(&mut after).await;
            let after_changes = after.take_changes();
            let (result, retry) = after.into_parts();
            let retry = retry && cancel.is_none();
            if cancel.is_some() && after_changes.iter().any(|c| c.field == Field::Retry) {
                tracing::debug!(target: "hooks::agent", tool_call_id = call.id.as_str(), "retry asked for a cancelled tool call is ignored");
            }
            push_changes(&mut changes, HookEvent::AfterToolCall, after_changes);
            let attempts = attempt + 1;
            if let Err(e) = r {
                return ToolOutcome {
                    execution: record(call, arguments, result, error, cancel, attempts, duration),
                    changes,
                    hook_error: Some(e),
                    exhausted: false,
                };
            }
            if retry && attempt < max {
                attempt += 1;
                continue;
            }
            return ToolOutcome {
                execution: record(call, arguments, result, error, cancel, attempts, duration),
                changes,
                hook_error: None,
                exhausted: retry,
            };
        }
    }

    async fn execute(
        &self,
        run_id: &RunId,
        call: &ToolCall,
        arguments: &Value,
        secrets: &crate::event::SecretArguments,
    ) -> Result<String, ToolError> {
        let Some(tool) = self.tools.get(&call.name) else {
            let mut known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(ToolError::new(format!(
                "unknown tool '{}'; available tools: {}",
                preview(&call.name, 64),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        };
        if matches!(arguments, Value::String(s) if s == REFUSED_ARGUMENTS) {
            return Err(ToolError::new(format!(
                "arguments for tool '{}' were nested deeper than {MAX_ARGUMENT_DEPTH} levels and were refused; send flatter arguments",
                preview(&call.name, 64)
            )));
        }
        let merged = secrets.merged_over(arguments);
        let Value::Object(map) = &merged else {
            return Err(ToolError::new(format!(
                "arguments for tool '{}' must be a JSON object, got {}",
                call.name,
                json_kind(&merged)
            )));
        };
        let fut = tool.call(ToolInput {
            run_id,
            call_id: &call.id,
            arguments: map,
        });
        match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(r) => r,
            Err(payload) => Err(ToolError::new(format!(
                "tool '{}' panicked: {}",
                call.name,
                crate::registry::panic_message(payload.as_ref())
            ))),
        }
    }
}

fn push_changes(into: &mut Vec<(HookEvent, Vec<Change>)>, event: HookEvent, changes: Vec<Change>) {
    if !changes.is_empty() {
        into.push((event, changes));
    }
}

fn record(
    call: &ToolCall,
    arguments: Value,
    result: String,
    error: Option<String>,
    cancelled: Option<String>,
    attempts: u32,
    duration: Duration,
) -> ToolExecution {
    ToolExecution {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments,
        result,
        error,
        cancelled,
        attempts,
        duration,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
