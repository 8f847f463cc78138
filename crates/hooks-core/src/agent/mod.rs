//! The reference agent loop: drives a [`Model`] and [`Tool`]s through a [`HookRegistry`], as a
//! thin user of the [`driver`](crate::driver) any loop can use.

mod model;
mod nested;
mod output;
mod tool;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub use model::{Model, ModelRequest};
pub use nested::{AgentTool, NestedRegistry};
pub use output::{AgentConfig, AgentError, RecordedChange, RunFailure, RunOutput};
pub use tool::{FnTool, Tool, ToolError, ToolInput, tool_output_from_bytes};

use crate::driver::{Run, RunOptions, ToolInvocation};
use crate::error::RunError;
use crate::interrupt::{Approver, Decision, PausedRun, ResumeLedger, RunOutcome};
use crate::state::ModelError;
use crate::stream::{RunStream, StreamItem};

/// The shortest [`AgentBuilder::resume_key`]: 32 bytes.
pub const MIN_RESUME_KEY_BYTES: usize = 32;
use crate::registry::HookRegistry;
use crate::state::{AgentState, Message, ToolSpec};
use crate::text::preview;

/// The reference agent loop.
///
/// ```
/// # tokio_test_shim::block_on(async {
/// use std::sync::Arc;
/// use hooks_core::HookRegistry;
/// use hooks_core::agent::Agent;
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
    specs: Arc<Vec<ToolSpec>>,
    registry: Arc<HookRegistry>,
    config: AgentConfig,
    ledger: Option<Arc<dyn ResumeLedger>>,
    key: Option<Arc<[u8]>>,
    /// Built with a registry of its own (as a tool, it then keeps it, plus the caller's guards).
    own_registry: bool,
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
    ledger: Option<Arc<dyn ResumeLedger>>,
    key: Option<Arc<[u8]>>,
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

    /// Where resumes are recorded so no paused run resumes twice (default: the process's
    /// [`MemoryLedger::global`](crate::interrupt::MemoryLedger::global)). Give every process
    /// that resumes runs the same persistent ledger to refuse replays across processes.
    #[must_use]
    pub fn resume_ledger(mut self, ledger: Arc<dyn ResumeLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Seals every paused run with `key` (HMAC-SHA256 over the whole paused run) and refuses
    /// on resume any paused run whose seal is missing or does not match: whoever can write
    /// where paused runs are stored cannot swap a pending call, add an approved tool or edit
    /// a provider's saved state. Give every process that resumes the agent's runs the same
    /// key (at least 32 bytes, e.g. from your secret store). Without a key, store paused runs
    /// where only the application can write.
    #[must_use]
    pub fn resume_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = Some(key.into().into());
        self
    }

    /// See [`AgentConfig::max_depth`].
    #[must_use]
    pub fn max_depth(mut self, n: u32) -> Self {
        self.config.max_depth = n;
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
        if self.config.max_depth > crate::driver::MAX_NESTING_DEPTH {
            return Err(AgentError::DepthTooLarge(self.config.max_depth));
        }
        if let Some(key) = &self.key
            && key.len() < MIN_RESUME_KEY_BYTES
        {
            return Err(AgentError::ShortResumeKey(key.len()));
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
            specs: Arc::new(specs),
            own_registry: self.registry.is_some(),
            registry: self.registry.unwrap_or_default(),
            config: self.config,
            ledger: self.ledger,
            key: self.key,
        })
    }
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
            ledger: None,
            key: None,
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
    pub fn run(
        &self,
        prompt: impl Into<String>,
    ) -> impl Future<Output = Result<RunOutput, RunFailure>> + '_ {
        // The driver's future itself (no `async` layer keeping the arguments a second time:
        // a run's future is what each in-flight run costs).
        self.run_state(self.new_state(prompt))
    }

    /// Runs the agent from `state` (its messages must hold the prompt). The agent's
    /// configured `max_iterations` applies (it is written into the state after the
    /// before-invocation hooks), whatever the state or a hook held.
    ///
    /// Dropping the returned future stops the run at its next await point.
    ///
    /// # Errors
    /// A [`RunFailure`] holding the [`RunError`] and the state when the run ended.
    pub fn run_state(
        &self,
        state: AgentState,
    ) -> impl Future<Output = Result<RunOutput, RunFailure>> + '_ {
        self.registry
            .run(state, self.options(), move |run| self.body(run))
    }

    /// Runs the agent on `prompt`; a hook's interrupt pauses the run instead of cancelling
    /// the call (see [`interrupt`](crate::interrupt)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hooks_core::prelude::*;
    /// use hooks_core::interrupt::{Decision, PausedRun, RunOutcome};
    /// use hooks_core::test_util::ScriptedModel;
    /// use serde_json::json;
    ///
    /// struct AskFirst;
    /// #[async_trait]
    /// impl HookProvider for AskFirst {
    ///     fn hooks(&self) -> HookSet { HookSet::BEFORE_TOOL_CALL }
    ///     async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
    ///         e.interrupt("deleting needs a person's OK", json!({"risk": "high"}));
    ///         Ok(())
    ///     }
    /// }
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let agent = |model| {
    ///     let registry = Arc::new(HookRegistry::new().with(AskFirst).unwrap());
    ///     let delete = FnTool::new(ToolSpec::new("delete", "Deletes", json!({"type": "object"})), |_| Ok("deleted".into()));
    ///     Agent::builder("ops", model).tool(delete).registry(registry).build().unwrap()
    /// };
    /// let model = Arc::new(ScriptedModel::new(vec![
    ///     Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "delete", json!({"path": "/tmp/x"}))])),
    ///     Ok(ModelResponse::text("done")),
    /// ]));
    /// let RunOutcome::Interrupted(paused) = agent(model.clone()).start("clean up").await.unwrap() else { panic!() };
    /// let stored = paused.to_json().unwrap();              // keep it anywhere
    ///
    /// let paused = PausedRun::from_json(&stored).unwrap(); // later, maybe in another process
    /// let yes = Decision::approve(&paused.interruptions()[0]).by("alice");
    /// let RunOutcome::Completed(out) = agent(model).resume(paused, vec![yes]).await.unwrap() else { panic!() };
    /// assert_eq!(out.answer, "done");
    /// assert_eq!(out.state.tool_executions[0].result, "deleted");
    /// # });
    /// ```
    ///
    /// # Errors
    /// A [`RunFailure`] as for [`run`](Self::run).
    pub fn start(
        &self,
        prompt: impl Into<String>,
    ) -> impl Future<Output = Result<RunOutcome, RunFailure>> + '_ {
        self.start_state(self.new_state(prompt))
    }

    /// [`start`](Self::start) from `state`.
    ///
    /// # Errors
    /// A [`RunFailure`] as for [`run`](Self::run).
    pub fn start_state(
        &self,
        state: AgentState,
    ) -> impl Future<Output = Result<RunOutcome, RunFailure>> + '_ {
        self.registry
            .start(state, self.options(), move |run| self.body(run))
    }

    /// Runs the agent on `prompt` and streams what happens: the reply's text as it comes
    /// (through the `on_model_delta` hooks), tool calls starting and finishing, retractions
    /// and corrections, and last [`RunEvent::Finished`](crate::stream::RunEvent::Finished) with the outcome (the run may pause,
    /// as with [`start`](Self::start)). See [`stream`](crate::stream) for what a guard holds
    /// back. At most `capacity` events wait for the consumer; the run advances only while the
    /// stream is polled, and dropping it abandons the run.
    ///
    /// ```
    /// use futures_util::StreamExt as _;
    /// use hooks_core::prelude::*;
    /// use hooks_core::stream::RunEvent;
    /// use hooks_core::test_util::ScriptedModel;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let agent = Agent::builder("a", ScriptedModel::new(vec![Ok(ModelResponse::text("hello"))]))
    ///     .build().unwrap();
    /// let events: Vec<RunEvent> = agent.run_stream("hi", 16).collect().await;
    /// assert!(matches!(&events[0], RunEvent::Text { text, .. } if text == "hello"));
    /// assert!(matches!(events.last(), Some(RunEvent::Finished(r)) if r.is_ok()));
    /// # });
    /// ```
    pub fn run_stream(&self, prompt: impl Into<String>, capacity: usize) -> RunStream<'_> {
        let queue = crate::stream::Queue::new(capacity);
        let options = self.options().with_events(queue.clone());
        let run = self
            .registry
            .start(self.new_state(prompt), options, move |run| self.body(run));
        RunStream::new(run, queue)
    }

    /// Resumes a paused run with decisions for some or all of its interruptions (see
    /// [`HookRegistry::resume`]); it may pause again.
    ///
    /// # Errors
    /// [`RunError::Resume`] (nothing ran) for decisions that do not fit the paused run or a
    /// paused run resumed before; otherwise as for [`run`](Self::run).
    pub async fn resume(
        &self,
        paused: PausedRun,
        decisions: Vec<Decision>,
    ) -> Result<RunOutcome, RunFailure> {
        self.registry
            .resume(paused, decisions, self.options(), |run| self.body(run))
            .await
    }

    /// Runs the agent on `prompt`, asking `approver` for each interruption and resuming
    /// until the run ends. An approver that gives no decision, fails, or decides another
    /// interruption rejects the call (fail closed; the model sees that approval is missing).
    ///
    /// # Errors
    /// A [`RunFailure`] as for [`run`](Self::run); [`RunError::Interrupted`] if the run
    /// still paused after as many rounds as it has iterations (hooks that interrupt every
    /// approved call again).
    pub async fn run_with_approver(
        &self,
        prompt: impl Into<String>,
        approver: &dyn Approver,
    ) -> Result<RunOutput, RunFailure> {
        let mut outcome = self.start(prompt).await?;
        let rounds = self.config.max_iterations.saturating_mul(2).max(4);
        for _ in 0..rounds {
            let paused = match outcome {
                RunOutcome::Completed(out) => return Ok(out),
                RunOutcome::Interrupted(paused) => paused,
            };
            let mut decisions = Vec::with_capacity(paused.interruptions().len());
            for i in paused.interruptions() {
                let decision = match approver.decide(i).await {
                    Ok(Some(d)) => match crate::interrupt::check_decision(Some(i), &d) {
                        Ok(()) => d,
                        Err(crate::interrupt::ResumeError::UnknownInterruption(_)) => {
                            crate::interrupt::fail_closed(
                                i,
                                "the approver decided another interruption",
                            )
                        }
                        Err(e) => {
                            tracing::warn!(target: "hooks::interrupt", run_id = i.run_id.as_str(), interruption = i.id.as_str(), "the approver's decision does not fit, so the call is rejected: {e}");
                            crate::interrupt::fail_closed(
                                i,
                                "the approver's decision does not fit the call",
                            )
                        }
                    },
                    Ok(None) => crate::interrupt::fail_closed(i, "the approver gave no decision"),
                    Err(e) => {
                        tracing::warn!(target: "hooks::interrupt", run_id = i.run_id.as_str(), interruption = i.id.as_str(), "the approver failed, so the call is rejected: {e}");
                        crate::interrupt::fail_closed(i, "the approver failed")
                    }
                };
                decisions.push(decision);
            }
            outcome = self.resume(paused, decisions).await?;
        }
        match outcome {
            RunOutcome::Completed(out) => Ok(out),
            RunOutcome::Interrupted(paused) => Err(RunFailure {
                error: RunError::Interrupted {
                    interruptions: paused.interruptions().len(),
                },
                state: Box::new(paused.state().clone()),
                changes: Vec::new(),
            }),
        }
    }

    fn options(&self) -> RunOptions {
        let options = RunOptions::new(self.model.name())
            .with_max_iterations(self.config.max_iterations)
            .with_max_depth(self.config.max_depth)
            .with_tools(Arc::clone(&self.specs))
            .with_max_retries(self.config.max_retries)
            .with_parallel_tool_calls(self.config.parallel_tool_calls);
        let options = match &self.key {
            Some(k) => options.with_resume_key(Arc::clone(k)),
            None => options,
        };
        match &self.ledger {
            Some(l) => options.with_resume_ledger(Arc::clone(l)),
            None => options,
        }
    }

    /// The loop: decided calls of a resumed run first, then iterations until an answer.
    async fn body(&self, run: Run<'_>) -> Result<String, RunError> {
        if run.is_resuming() {
            // Boxed: only a resumed run pays for this future's size.
            Box::pin(run.resume_pending(|tool| self.execute(tool))).await?;
        }
        loop {
            run.start_iteration().await?;
            let step = self.step(&run).await;
            run.end_iteration().await;
            if let Some(answer) = step? {
                return Ok(answer);
            }
        }
    }

    /// One iteration: the model call, then its tool calls. `Some(answer)` ends the run.
    async fn step(&self, run: &Run<'_>) -> Result<Option<String>, RunError> {
        let response = if run.options().events.is_some() {
            // Boxed: only a streamed run pays for this future's size.
            Box::pin(run.model_call_stream(|call, sink| {
                let model = Arc::clone(&self.model);
                async move {
                    use futures_util::StreamExt as _;
                    let mut stream = model.stream(call.request());
                    let mut whole = None;
                    while let Some(item) = stream.next().await {
                        match item? {
                            StreamItem::Delta(delta) => sink.send(delta).await?,
                            StreamItem::Done(response) => whole = Some(response),
                        }
                    }
                    whole.ok_or_else(|| ModelError::Server {
                        status: None,
                        message: "the model's stream ended before the whole reply".into(),
                    })
                }
            }))
            .await?
        } else {
            run.model_call(|call| {
                let model = Arc::clone(&self.model);
                async move { model.complete(call.request()).await }
            })
            .await?
        };
        if response.message.tool_calls.is_empty() {
            return Ok(Some(response.message.content));
        }
        run.tool_calls(&response.message.tool_calls, |tool| self.execute(tool))
            .await?;
        Ok(None)
    }

    /// Runs the named tool, or says which tools there are.
    async fn execute(&self, invocation: ToolInvocation<'_>) -> Result<String, ToolError> {
        let Some(tool) = self.tools.get(&invocation.name) else {
            let mut known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(ToolError::new(format!(
                "unknown tool '{}'; available tools: {}",
                preview(&invocation.name, 64),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        };
        tool.call(invocation.input()).await
    }
}
