//! The hooks' semantics for any agent loop: one run, one model call, one tool call.
//!
//! [`HookRegistry::run`] wraps a loop body with before/after invocation (and
//! `on_run_abandoned` when the run's future is dropped); inside it, [`Run::model_call`] and
//! [`Run::tool_call`] / [`Run::tool_calls`] give each call its hooks: rewritten messages and
//! arguments, secret arguments, cancel, bounded retry with feedback, over-deep arguments
//! refused, panics caught, and every tool record and message written into the state. The
//! reference [`Agent`](crate::agent::Agent) is a thin user of this module, so its semantics and
//! an integrator's cannot drift.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use futures_util::future::join_all;
use serde_json::{Map, Value};

use crate::agent::{ModelRequest, RecordedChange, RunFailure, RunOutput, ToolError, ToolInput};
use crate::error::{DispatchError, RetryTarget, RunError};
use crate::event::PersonApproval;
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Change, EventContext, Field, HookEvent,
    IterationEvent, ToolOutcome,
};
use crate::extensions::Extensions;
use crate::interrupt::{
    Decision, DecisionKind, Interruption, MemoryLedger, PausedRun, REQUIRES_APPROVAL, ResumeError,
    ResumeLedger, RunOutcome, arguments_hash, match_decisions,
};
use crate::json::{MAX_ARGUMENT_DEPTH, drop_deep, nests_deeper_than};
use crate::registry::HookRegistry;
use crate::state::{
    AgentState, Message, ModelError, ModelOptions, ModelResponse, ParentRun, RunId, ToolCall,
    ToolExecution, ToolSpec,
};
use crate::stream::{EventSink, ModelDelta, RunEvent, emit};
use crate::text::preview;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a driven run calls its model and tools.
#[derive(Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// The model's name, for events (spans, logs).
    pub model: String,
    /// The tools offered to the model (shared by every call; a hook that changes them for one
    /// call gets its own copy).
    pub tools: Arc<Vec<ToolSpec>>,
    /// Tool choice and sampling for every model call (a hook may change them per call).
    pub model_options: ModelOptions,
    /// The most retries hooks may ask for, per model call and per tool call. Default 3.
    pub max_retries: u32,
    /// Run the tool calls of one model response concurrently ([`Run::tool_calls`]).
    /// Default true.
    pub parallel_tool_calls: bool,
    /// The run's iteration limit, written into the state after before-invocation (so no
    /// hook can raise it); `None` keeps the state's own `max_iterations`.
    pub max_iterations: Option<u32>,
    /// Where resumes are recorded so no paused run resumes twice; `None`: the process's
    /// [`MemoryLedger::global`].
    pub resume_ledger: Option<Arc<dyn ResumeLedger>>,
    /// The key paused runs are sealed with (HMAC-SHA256) and checked against on resume; see
    /// [`AgentBuilder::resume_key`](crate::agent::AgentBuilder::resume_key).
    pub resume_key: Option<Arc<[u8]>>,
    /// How deep runs may nest under this one (agents run as tools; see
    /// [`NestedCall`]). Read from the top-level run only: nested runs share its limit.
    /// Default [`DEFAULT_MAX_DEPTH`]; never more than [`MAX_NESTING_DEPTH`].
    pub max_depth: u32,
    /// Where the run hands its [`RunEvent`]s (streamed text, tool calls starting and
    /// finishing); `None`: nowhere. See [`Run::model_call_stream`].
    pub events: Option<Arc<dyn EventSink>>,
}

/// How deep runs nest by default (a top-level run is depth 0; its child agent's run 1, …).
pub const DEFAULT_MAX_DEPTH: u32 = 3;

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .field("model_options", &self.model_options)
            .field("max_retries", &self.max_retries)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("max_iterations", &self.max_iterations)
            .field("resume_ledger", &self.resume_ledger.is_some())
            .field("resume_key", &self.resume_key.as_ref().map(|_| "***"))
            .field("max_depth", &self.max_depth)
            .field("events", &self.events.is_some())
            .finish()
    }
}

impl RunOptions {
    /// Options for a model named `model`: no tools, default sampling, 3 retries, parallel
    /// tool calls.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            tools: Arc::default(),
            model_options: ModelOptions::default(),
            max_retries: 3,
            parallel_tool_calls: true,
            max_iterations: None,
            resume_ledger: None,
            resume_key: None,
            max_depth: DEFAULT_MAX_DEPTH,
            events: None,
        }
    }

    /// With a sink for the run's [`RunEvent`]s (see [`RunOptions::events`]).
    #[must_use]
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// How deep runs may nest under this one (see [`RunOptions::max_depth`]).
    #[must_use]
    pub fn with_max_depth(mut self, n: u32) -> Self {
        self.max_depth = n;
        self
    }

    /// With the key paused runs are sealed with and checked against.
    #[must_use]
    pub fn with_resume_key(mut self, key: impl Into<Arc<[u8]>>) -> Self {
        self.resume_key = Some(key.into());
        self
    }

    /// With the ledger that records resumes (see [`RunOptions::resume_ledger`]).
    #[must_use]
    pub fn with_resume_ledger(mut self, ledger: Arc<dyn ResumeLedger>) -> Self {
        self.resume_ledger = Some(ledger);
        self
    }

    /// With the tools offered to the model (a `Vec`, or an `Arc` to share one list among
    /// runs without copying it).
    #[must_use]
    pub fn with_tools(mut self, tools: impl Into<Arc<Vec<ToolSpec>>>) -> Self {
        self.tools = tools.into();
        self
    }

    /// With tool choice and sampling for every call.
    #[must_use]
    pub fn with_model_options(mut self, options: ModelOptions) -> Self {
        self.model_options = options;
        self
    }

    /// With the retry bound.
    #[must_use]
    pub fn with_max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// The run's iteration limit (see [`RunOptions::max_iterations`]).
    #[must_use]
    pub fn with_max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// Concurrent or sequential tool calls in [`Run::tool_calls`].
    #[must_use]
    pub fn with_parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = on;
        self
    }
}

/// One model call as the driver hands it to the caller's closure: what the hooks left of the
/// request, owned. [`request`](Self::request) borrows it as a [`ModelRequest`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ModelCall {
    /// The run's id.
    pub run_id: RunId,
    /// The conversation to send (shared with the driver, which keeps it for the
    /// after-model-call hooks: no copy is made).
    pub messages: Arc<Vec<Message>>,
    /// The tools to offer.
    pub tools: Arc<Vec<ToolSpec>>,
    /// Tool choice and sampling.
    pub options: ModelOptions,
}

impl ModelCall {
    /// The call as a [`ModelRequest`] for a [`Model`](crate::agent::Model).
    pub fn request(&self) -> ModelRequest<'_> {
        ModelRequest::new(&self.run_id, &self.messages)
            .with_tools(&self.tools)
            .with_options(&self.options)
    }
}

/// One tool execution as the driver hands it to the caller's closure: the arguments the hooks
/// left, secret arguments merged in (and never seen anywhere else), and the run it belongs to
/// (so an agent run as the tool nests under it: see [`NestedCall`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolInvocation<'r> {
    /// The run's id.
    pub run_id: RunId,
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, secret ones merged in.
    pub arguments: Map<String, Value>,
    /// The keys of the secret arguments (empty unless a hook added some).
    secret_keys: Vec<String>,
    run: Run<'r>,
    /// Whether the call may pause (an agent run as the tool may then pause for a person).
    pausable: bool,
    /// This execution's slot among the run's (what a nested run under it is filed by).
    slot: u64,
}

impl std::fmt::Debug for ToolInvocation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The arguments hold the secret ones: never printed.
        f.debug_struct("ToolInvocation")
            .field("run_id", &self.run_id)
            .field("call_id", &self.call_id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'r> ToolInvocation<'r> {
    /// The invocation as a [`ToolInput`] for a [`Tool`](crate::agent::Tool): with the run's
    /// extensions, the secret keys, and the run to nest under ([`ToolInput::nested`]).
    pub fn input(&self) -> ToolInput<'_> {
        ToolInput::new(&self.run_id, &self.call_id, &self.arguments)
            .with_extensions(&self.run.shared.extensions)
            .with_secret_keys(&self.secret_keys)
            .with_nested(NestedCall {
                run: &self.run,
                call_id: &self.call_id,
                pausable: self.pausable,
                slot: self.slot,
            })
    }

    /// The run's extensions.
    pub fn extensions(&self) -> &Extensions {
        &self.run.shared.extensions
    }

    /// True when `key` holds a secret argument (added by a hook; the model never saw it).
    pub fn is_secret(&self, key: &str) -> bool {
        self.secret_keys.iter().any(|k| k == key)
    }
}

/// How one tool call ended, with every attempt's hooks run: what was recorded in the state.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The record (also pushed to the state's tool executions).
    pub execution: ToolExecution,
    /// How it ended.
    pub outcome: ToolOutcome,
    /// True when hooks still asked for a retry after the last allowed attempt (the last
    /// result went to the model; the run's `retries_exhausted` names the call).
    pub retries_exhausted: bool,
}

impl ToolCallRecord {
    /// The result the model sees.
    pub fn result(&self) -> &str {
        &self.execution.result
    }
}

/// What the driver gathers for the run's output besides the state.
#[derive(Default)]
struct Report {
    changes: Vec<RecordedChange>,
    exhausted: Vec<RetryTarget>,
}

struct Shared {
    run_id: RunId,
    /// The current iteration, readable without the state's lock.
    iteration: std::sync::atomic::AtomicU32,
    options: RunOptions,
    state: Mutex<AgentState>,
    report: Mutex<Report>,
    extensions: Arc<Extensions>,
    /// Calls whose arguments were nested too deeply and were refused (their arguments were
    /// replaced by `{}` in the conversation).
    refused: Mutex<HashSet<String>>,
    /// Whether an interrupt pauses the run (`start`/`resume`) or cancels the call (`run`).
    pausable: bool,
    /// Calls interrupted so far, as the model made them, with their interruption.
    interrupted: Mutex<Vec<(ToolCall, Interruption)>>,
    /// On resume: the paused calls and their decisions, until `resume_pending` takes them.
    resumed: Mutex<Option<Vec<Paused>>>,
    /// Tools a person approved for the rest of the run.
    always_approved: Mutex<HashSet<String>>,
    /// For a nested run: the run and call that started it.
    parent: Option<Box<ParentRun>>,
    /// What the runs of one tree share: the depth limit and the iteration budget. Made when
    /// the run first nests one (or comes with it: a nested run, a resumed tree).
    tree: std::sync::OnceLock<Arc<Tree>>,
    /// The next tool execution's slot.
    next_slot: std::sync::atomic::AtomicU64,
    /// Nested runs under this run's calls (allocated when the run first nests one).
    nesting: Mutex<Option<Box<Nesting>>>,
}

/// What a run keeps of the runs nested under its calls.
#[derive(Default)]
struct Nesting {
    /// Nested runs that paused, by the call of this run that started them (see
    /// [`NestedCall::pause`]).
    paused: HashMap<String, PausedRun>,
    /// Executions that started a nested run (one each).
    started: HashSet<u64>,
    /// Nested runs that paused, by the execution that started them, until the driver files
    /// them under their call.
    slots: HashMap<u64, PausedRun>,
    /// On resume: the paused nested runs to resume, with the decisions for them, by call.
    resume: HashMap<String, (PausedRun, Vec<Decision>)>,
}

/// What a run and every run nested in it share.
#[derive(Debug)]
struct Tree {
    max_depth: u32,
    /// The top-level run's iteration limit: every run of the tree draws from it.
    budget: u32,
    /// Iterations the tree used, earlier segments (before a pause) included.
    used: AtomicU32,
}

/// The deepest runs may ever nest, whatever a run's options say: every level adds to the
/// stack of the task that polls the tree.
pub const MAX_NESTING_DEPTH: u32 = 8;

/// How a nested run hangs off its parent.
struct Link {
    parent: ParentRun,
    tree: Arc<Tree>,
    /// Providers left out of the nested run (recorded in its changes).
    opted_out: Vec<String>,
}

/// A paused call, its interruption, and the decision about it (if one was made).
type Paused = (ToolCall, Interruption, Option<Decision>);

/// How a person approved a call being driven again on resume.
#[derive(Debug, Clone)]
enum Approval {
    /// Not approved: hooks may interrupt it.
    None,
    /// Approved as shown: runs only if the hooks leave arguments with this hash.
    Exact(String),
    /// Approved with arguments the person wrote (the hooks still apply).
    Edited,
    /// Rejected: does not run; the model sees the message.
    Rejected(String),
}

/// Where a run starts from.
// The fresh state moves into the run at once; boxing it would cost every run an allocation.
// (It outgrows the lint's bound when a dependency turns on serde_json's `preserve_order`.)
#[allow(clippy::large_enum_variant)]
enum Begin {
    Fresh(AgentState),
    /// Boxed: a fresh run's future does not carry its size.
    Resumed(Box<Resumed>),
}

struct Resumed {
    state: AgentState,
    work: Vec<Paused>,
    always_approved: Vec<String>,
    provider_states: Map<String, Value>,
    /// What the ledger recorded before anything ran: the pause, and each decided
    /// interruption (given back if the run never starts).
    claims: Vec<String>,
    /// Paused nested runs of undecided calls (they pause again with them).
    nested_waiting: HashMap<String, PausedRun>,
    /// Paused nested runs of decided calls, with the decisions for them.
    nested_resume: HashMap<String, (PausedRun, Vec<Decision>)>,
    /// Iterations the tree used before the pause.
    tree_used: u32,
}

/// A run in progress, handed to the body of [`HookRegistry::run`]. Cheap to clone (share it
/// among the concurrent parts of one run); every clone is the same run.
#[derive(Clone)]
pub struct Run<'r> {
    registry: &'r HookRegistry,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("run_id", &self.shared.run_id)
            .field("iteration", &self.iteration())
            .finish_non_exhaustive()
    }
}

/// The run's state lent out of its slot; put back when dropped.
struct Lent<'a> {
    slot: &'a Mutex<AgentState>,
    state: Option<AgentState>,
}

impl Lent<'_> {
    fn get(&self) -> &AgentState {
        // Always `Some` until dropped.
        self.state.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            *lock(self.slot) = state;
        }
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

fn record_changes(
    report: &mut Report,
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
        report.changes.push(RecordedChange {
            event,
            tool_call_id: tool_call_id.map(str::to_owned),
            change,
        });
    }
}

impl HookRegistry {
    /// Runs `body` as one agent run with the hooks' semantics: before-invocation (which may
    /// replace the state; an error refuses the run), then `body`, then after-invocation with
    /// the outcome, however it ended. Dropping the returned future calls `on_run_abandoned`.
    ///
    /// `body` gets a [`Run`]: drive iterations, model calls and tool calls through it, and
    /// return the final answer. The state it leaves (messages, tool records, errors) is what
    /// after-invocation hooks and the output see.
    ///
    /// A custom loop in 30 lines, with every hook semantic the reference agent has:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hooks_core::prelude::*;
    /// use hooks_core::driver::RunOptions;
    /// use hooks_core::test_util::ScriptedModel;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = Arc::new(ScriptedModel::new(vec![
    ///     Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "add", json!({"a": 2, "b": 2}))])),
    ///     Ok(ModelResponse::text("4")),
    /// ]));
    /// let registry = HookRegistry::new();
    /// let state = AgentState::new("calc").with_message(Message::user("2 + 2?"));
    /// let options = RunOptions::new(model.name())
    ///     .with_tools(vec![ToolSpec::new("add", "Adds", json!({"type": "object"}))]);
    /// let out = registry.run(state, options, |run| async move {
    ///     loop {
    ///         run.start_iteration().await?;
    ///         let reply = run.model_call(|call| {
    ///             let model = model.clone();
    ///             async move { model.complete(call.request()).await }
    ///         }).await;
    ///         let reply = match reply {
    ///             Ok(reply) => reply,
    ///             Err(e) => { run.end_iteration().await; return Err(e); }
    ///         };
    ///         if reply.message.tool_calls.is_empty() {
    ///             run.end_iteration().await;
    ///             return Ok(reply.message.content);
    ///         }
    ///         let done = run.tool_calls(&reply.message.tool_calls, |tool| async move {
    ///             let n = |k: &str| tool.arguments.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
    ///             Ok((n("a") + n("b")).to_string())
    ///         }).await;
    ///         run.end_iteration().await;
    ///         done?;
    ///     }
    /// }).await.unwrap();
    /// assert_eq!(out.answer, "4");
    /// assert_eq!(out.state.tool_executions[0].result, "4");
    /// # });
    /// ```
    ///
    /// # Errors
    /// A [`RunFailure`] holding the [`RunError`] (a hook's, the body's, or the model's) and
    /// the state when the run ended.
    pub fn run<'r, F, Fut>(
        &'r self,
        state: AgentState,
        options: RunOptions,
        body: F,
    ) -> impl Future<Output = Result<RunOutput, RunFailure>>
    where
        F: FnOnce(Run<'r>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        // Not an `async fn` (nor an `async` block around the segment): its arguments would be
        // kept twice, and a run's future is what each in-flight run costs.
        self.segment(Begin::Fresh(state), options, body, false, None)
            .map(|outcome| match outcome? {
                RunOutcome::Completed(out) => Ok(out),
                // A run that cannot pause cancels its interrupted calls instead.
                RunOutcome::Interrupted(paused) => Err(RunFailure {
                    error: RunError::Interrupted {
                        interruptions: paused.interruptions().len(),
                    },
                    state: Box::new(paused.state().clone()),
                    changes: Vec::new(),
                }),
            })
    }

    /// Like [`run`](Self::run), but a hook's [`interrupt`](crate::BeforeToolCallEvent::interrupt)
    /// pauses the run: the calls of that turn that were not interrupted run, then the body's
    /// [`RunError::Interrupted`] (returned by [`Run::tool_calls`]) ends it as
    /// [`RunOutcome::Interrupted`] with a serialisable [`PausedRun`]. Continue it with
    /// [`resume`](Self::resume). See [`interrupt`](crate::interrupt).
    ///
    /// # Errors
    /// A [`RunFailure`] as for [`run`](Self::run).
    pub fn start<'r, F, Fut>(
        &'r self,
        state: AgentState,
        options: RunOptions,
        body: F,
    ) -> impl Future<Output = Result<RunOutcome, RunFailure>>
    where
        F: FnOnce(Run<'r>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        self.segment(Begin::Fresh(state), options, body, true, None)
    }

    /// Resumes a paused run with decisions for some or all of its interruptions. The body is
    /// the same loop as [`start`](Self::start)'s; it must call [`Run::resume_pending`] before
    /// its first model call (that runs the decided calls: approved and edited ones through
    /// the before-tool hooks again, rejected ones with the person's message as the result).
    /// Interruptions without a decision stay pending: the run pauses again with them.
    ///
    /// # Errors
    /// [`RunError::Resume`] (nothing ran, no hook was called) when a decision names an
    /// interruption the paused run does not hold or other arguments, or the paused run was
    /// resumed before; otherwise as [`run`](Self::run).
    pub async fn resume<'r, F, Fut>(
        &'r self,
        paused: PausedRun,
        decisions: Vec<Decision>,
        options: RunOptions,
        body: F,
    ) -> Result<RunOutcome, RunFailure>
    where
        F: FnOnce(Run<'r>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        self.resume_linked(paused, decisions, options, body, None)
            .await
    }

    async fn resume_linked<'r, F, Fut>(
        &'r self,
        paused: PausedRun,
        decisions: Vec<Decision>,
        options: RunOptions,
        body: F,
        link: Option<Box<Link>>,
    ) -> Result<RunOutcome, RunFailure>
    where
        F: FnOnce(Run<'r>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        let refuse = |error: ResumeError, state: AgentState| RunFailure {
            error: RunError::Resume(error),
            state: Box::new(state),
            changes: Vec::new(),
        };
        if let Err(e) = paused
            .verify(options.resume_key.as_deref())
            .and_then(|()| paused.check())
        {
            return Err(refuse(e, paused.into_parts().state));
        }
        // A nested run resumes only under the call it paused under (its caller's guards, its
        // tree's budget), never on its own.
        let placed = match (&link, paused.state().parent.as_deref()) {
            (None, None) => Ok(()),
            (None, Some(p)) => Err(ResumeError::Nested(format!(
                "this paused run is nested under call {} of run {}: resume that run with the decision instead",
                preview(&p.tool_call_id, 64),
                p.run_id.as_str()
            ))),
            (Some(l), Some(p)) if l.parent == *p => Ok(()),
            (Some(_), _) => Err(ResumeError::Inconsistent(
                "the nested paused run does not belong to the call resuming it".to_owned(),
            )),
        };
        if let Err(e) = placed {
            return Err(refuse(e, paused.into_parts().state));
        }
        let mut parts = paused.into_parts();
        let mut decided = match match_decisions(&parts.interruptions, decisions) {
            Ok(d) => d,
            Err(e) => return Err(refuse(e, parts.state)),
        };
        let mut claims = vec![parts.pause_id];
        let mut work = Vec::with_capacity(parts.pending.len());
        let mut nested_waiting = HashMap::new();
        let mut nested_resume = HashMap::new();
        for (call, interruption) in parts.pending.into_iter().zip(parts.interruptions) {
            let mut decision = decided.remove(&interruption.id);
            if let Some(child) = parts.nested.remove(&call.id) {
                // The call waits on a nested run that paused: the decision is about the calls
                // waiting in it. The call is driven again (its hooks see it approved as
                // shown) and its tool resumes the nested run with the decision.
                match decision.take() {
                    None => {
                        nested_waiting.insert(call.id.clone(), child);
                    }
                    Some(d) => {
                        let inner = match nested_decisions(&child, &d, &interruption.id) {
                            Ok(inner) => inner,
                            Err(e) => return Err(refuse(e, parts.state)),
                        };
                        nested_resume.insert(call.id.clone(), (child, inner));
                        let mut approve = Decision::approve(&interruption);
                        if let Some(by) = d.decided_by() {
                            approve = approve.by(by);
                        }
                        decision = Some(approve);
                    }
                }
            }
            if let Some(d) = &decision {
                claims.push(interruption.id.clone());
                tracing::info!(
                    target: "hooks::interrupt",
                    run_id = parts.state.run_id.as_str(),
                    interruption = interruption.id.as_str(),
                    tool = interruption.tool_name.as_str(),
                    tool_call_id = interruption.tool_call_id.as_str(),
                    decision = %d.kind(),
                    by = d.decided_by().unwrap_or("unknown"),
                    "interruption {} of tool '{}' decided: {}", interruption.id, preview(&interruption.tool_name, 64), d.kind()
                );
            }
            work.push((call, interruption, decision));
        }
        // Claimed before anything of the run happens (no provider state restored, no hook
        // called): a replay of a run being resumed is refused without touching it.
        if let Err(e) = claim(options.resume_ledger.as_ref(), &claims) {
            return Err(refuse(e, parts.state));
        }
        let begin = Begin::Resumed(Box::new(Resumed {
            state: parts.state,
            work,
            always_approved: parts.always_approved,
            provider_states: parts.provider_states,
            claims,
            nested_waiting,
            nested_resume,
            tree_used: parts.tree_iterations,
        }));
        self.segment(begin, options, body, true, link).await
    }

    async fn segment<'r, F, Fut>(
        &'r self,
        begin: Begin,
        options: RunOptions,
        body: F,
        pausable: bool,
        link: Option<Box<Link>>,
    ) -> Result<RunOutcome, RunFailure>
    where
        F: FnOnce(Run<'r>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        let started = Instant::now();
        // What a resumed run brings stays boxed (a fresh run's future does not carry it).
        let (mut state, rest) = match begin {
            Begin::Fresh(state) => (state, None),
            Begin::Resumed(mut r) => {
                let hollow = AgentState::hollow(r.state.run_id.clone());
                let state = std::mem::replace(&mut r.state, hollow);
                self.restore_run_states(&state.run_id, std::mem::take(&mut r.provider_states));
                (state, Some(r))
            }
        };
        // Where the run sits is the driver's to say, never the state's (a stored or hooked
        // state cannot make a nested run look top-level, or the other way round).
        state.parent = link.as_ref().map(|l| Box::new(l.parent.clone()));
        let is_resumed = rest.is_some();
        // Dropped before the run ends (the future was dropped)? Then tell the providers.
        let mut abandon = Abandon {
            registry: self,
            run_id: Some(state.run_id.clone()),
        };
        let mut report = Report::default();
        let extensions = Arc::new(Extensions::new());
        let mut event = BeforeInvocationEvent::for_run(state, Arc::clone(&extensions));
        if is_resumed {
            event = event.resumed_run();
        }
        let before = self.before_invocation(&mut event).await;
        let changes = event.take_changes();
        let mut state = event.into_state();
        state.parent = link.as_ref().map(|l| Box::new(l.parent.clone()));
        if state.run_id != *abandon.run_id.as_ref().unwrap_or(&state.run_id) {
            // Every provider keys its per-run state by the id it saw at the start: a run whose
            // id changed midway could never be ended for them. Identity is not writable.
            tracing::warn!(target: "hooks::agent", run_id = state.run_id.as_str(), "a before-invocation hook changed the run id; the original id is kept");
            if let Some(original) = &abandon.run_id {
                state.run_id = original.clone();
            }
        }
        if let Some(max) = options.max_iterations {
            // After the hooks, so none of them can raise the run's limit.
            state.max_iterations = max;
        }
        record_changes(
            &mut report,
            &state.run_id,
            HookEvent::BeforeInvocation,
            None,
            changes,
        );
        if let Some(l) = link.as_ref().filter(|l| !l.opted_out.is_empty()) {
            let left_out = l
                .opted_out
                .iter()
                .map(|name| Change {
                    provider: name.as_str().into(),
                    field: Field::NestedOptOut,
                })
                .collect();
            record_changes(
                &mut report,
                &state.run_id,
                HookEvent::BeforeInvocation,
                None,
                left_out,
            );
        }
        // Built outside this future (a plain function): what goes into the run's shared part
        // is not kept here a second time.
        let (shared, claims) = new_shared(state, options, report, extensions, pausable, rest, link);
        let result = match before {
            Err(e) => {
                // The run never started: the paused run may be tried again.
                release(shared.options.resume_ledger.as_ref(), &claims);
                Err(RunError::Hook(e))
            }
            Ok(()) => {
                body(Run {
                    registry: self,
                    shared: Arc::clone(&shared),
                })
                .await
            }
        };
        // The body is done. Paused? Then what waits, and what the providers keep of the run
        // (saved before the after-invocation hooks let go of it).
        let paused = match &result {
            Err(RunError::Interrupted { .. }) if pausable => {
                let waiting = std::mem::take(&mut *lock(&shared.interrupted));
                let mut approved: Vec<String> =
                    lock(&shared.always_approved).iter().cloned().collect();
                approved.sort_unstable();
                let mut children = lock(&shared.nesting)
                    .as_mut()
                    .map(|n| std::mem::take(&mut n.paused))
                    .unwrap_or_default();
                (!waiting.is_empty()).then(|| {
                    let (pending, interruptions): (Vec<ToolCall>, Vec<_>) =
                        waiting.into_iter().unzip();
                    // Only the nested runs of calls that still wait are kept.
                    let nested: BTreeMap<String, PausedRun> = pending
                        .iter()
                        .filter_map(|c| children.remove(&c.id).map(|p| (c.id.clone(), p)))
                        .collect();
                    (pending, interruptions, approved, nested)
                })
            }
            _ => None,
        };
        let provider_states = match &paused {
            Some(_) => self.save_run_states(&shared.run_id),
            None => Map::new(),
        };
        let tree_used = match shared.tree.get() {
            Some(tree) => tree.used.load(Ordering::Relaxed),
            None => lock(&shared.state).iteration,
        };
        let key = shared.options.resume_key.clone();
        // The body is done: its clones of the run are gone (or the caller kept one; then the
        // state is copied out rather than taken).
        let (mut state, report) = match Arc::try_unwrap(shared) {
            Ok(shared) => (
                shared
                    .state
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner),
                shared
                    .report
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner),
            ),
            Err(shared) => (
                lock(&shared.state).clone(),
                std::mem::take(&mut *lock(&shared.report)),
            ),
        };
        state.touch();

        let empty = Vec::new();
        let interruptions = paused.as_ref().map_or(&empty, |(_, i, _, _)| i);
        let error = if paused.is_some() {
            None
        } else {
            result.as_ref().err()
        };
        let after = AfterInvocationEvent::new(&state, error, started.elapsed())
            .with_interruptions(interruptions);
        let after = self.after_invocation(&after).await;
        abandon.run_id = None;
        if let Some((pending, interruptions, approved, nested)) = paused {
            return match after {
                Ok(()) => {
                    tracing::info!(target: "hooks::interrupt", run_id = state.run_id.as_str(), interruptions = interruptions.len(), "the run paused for a person's decision");
                    let paused =
                        PausedRun::new(state, interruptions, pending, approved, provider_states)
                            .with_nested(nested)
                            .with_tree_iterations(tree_used);
                    Ok(RunOutcome::Interrupted(match &key {
                        Some(key) => paused.sealed(key),
                        None => paused,
                    }))
                }
                Err(e) => Err(RunFailure {
                    error: RunError::Hook(e),
                    state: Box::new(state),
                    changes: report.changes,
                }),
            };
        }
        let result = match (result, after) {
            (Ok(_), Err(e)) => Err(RunError::Hook(e)),
            (Err(run_error), Err(e)) => {
                tracing::warn!(target: "hooks::agent", run_id = state.run_id.as_str(), "{e}");
                Err(run_error)
            }
            (r, Ok(())) => r,
        };
        match result {
            Ok(answer) => Ok(RunOutcome::Completed(RunOutput {
                answer,
                state,
                changes: report.changes,
                retries_exhausted: report.exhausted,
            })),
            Err(error) => Err(RunFailure {
                error,
                state: Box::new(state),
                changes: report.changes,
            }),
        }
    }
}

/// The shared part of a run about to start its body: the state after before-invocation, what
/// a resumed run brought (`rest`), and where a nested run sits (`link`). Returns it with the
/// resume's ledger claims (given back if the run never starts).
#[allow(clippy::too_many_arguments)]
fn new_shared(
    state: AgentState,
    options: RunOptions,
    report: Report,
    extensions: Arc<Extensions>,
    pausable: bool,
    rest: Option<Box<Resumed>>,
    link: Option<Box<Link>>,
) -> (Arc<Shared>, Vec<String>) {
    let (resumed, always_approved, claims, nested_waiting, nested_resume, tree_used) = match rest {
        Some(r) => {
            let r = *r;
            (
                Some(r.work),
                r.always_approved,
                r.claims,
                r.nested_waiting,
                r.nested_resume,
                r.tree_used,
            )
        }
        None => (
            None,
            Vec::new(),
            Vec::new(),
            HashMap::new(),
            HashMap::new(),
            0,
        ),
    };
    let tree = std::sync::OnceLock::new();
    let parent = match link {
        Some(l) => {
            let l = *l;
            let _ = tree.set(l.tree);
            Some(Box::new(l.parent))
        }
        None => {
            if tree_used > state.iteration {
                // Runs nested in it used some of the budget before the pause.
                let _ = tree.set(Arc::new(Tree {
                    max_depth: options.max_depth.min(MAX_NESTING_DEPTH),
                    budget: state.max_iterations,
                    used: AtomicU32::new(tree_used),
                }));
            }
            None
        }
    };
    let nesting = (!nested_waiting.is_empty() || !nested_resume.is_empty()).then(|| {
        Box::new(Nesting {
            paused: nested_waiting,
            resume: nested_resume,
            ..Nesting::default()
        })
    });
    let shared = Arc::new(Shared {
        run_id: state.run_id.clone(),
        iteration: std::sync::atomic::AtomicU32::new(state.iteration),
        options,
        state: Mutex::new(state),
        report: Mutex::new(report),
        extensions,
        refused: Mutex::default(),
        pausable,
        interrupted: Mutex::default(),
        resumed: Mutex::new(resumed),
        always_approved: Mutex::new(always_approved.into_iter().collect()),
        parent,
        tree,
        next_slot: std::sync::atomic::AtomicU64::new(0),
        nesting: Mutex::new(nesting),
    });
    (shared, claims)
}

/// The run's ledger, or the process's.
fn with_ledger<R>(
    ledger: Option<&Arc<dyn ResumeLedger>>,
    f: impl FnOnce(&dyn ResumeLedger) -> R,
) -> R {
    match ledger {
        Some(l) => f(&**l),
        None => f(&*MemoryLedger::global()),
    }
}

/// Records every claim in the ledger, all or nothing; any already there refuses the resume.
fn claim(ledger: Option<&Arc<dyn ResumeLedger>>, claims: &[String]) -> Result<(), ResumeError> {
    with_ledger(ledger, |ledger| {
        for (n, id) in claims.iter().enumerate() {
            let refused = match ledger.claim(id) {
                Ok(true) => continue,
                Ok(false) => ResumeError::AlreadyResumed(preview(id, 64).into_owned()),
                Err(e) => ResumeError::Ledger(e.to_string()),
            };
            // What this resume claimed before is given back.
            for earlier in &claims[..n] {
                ledger.release(earlier);
            }
            return Err(refused);
        }
        Ok(())
    })
}

/// Forgets the claims of a resume that never started.
fn release(ledger: Option<&Arc<dyn ResumeLedger>>, claims: &[String]) {
    with_ledger(ledger, |ledger| {
        for id in claims {
            ledger.release(id);
        }
    });
}

impl<'r> Run<'r> {
    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.shared.run_id
    }

    /// The current iteration (0 before the first).
    pub fn iteration(&self) -> u32 {
        self.shared
            .iteration
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The run's extensions: what its hooks and tools stored.
    pub fn extensions(&self) -> &Extensions {
        &self.shared.extensions
    }

    /// The options the run was started with.
    pub fn options(&self) -> &RunOptions {
        &self.shared.options
    }

    /// Calls `f` with the run's state (under a short lock: inside `f`, call no method of this
    /// run other than [`run_id`](Self::run_id), [`iteration`](Self::iteration),
    /// [`options`](Self::options) and [`extensions`](Self::extensions): the others take the
    /// same lock).
    pub fn with_state<R>(&self, f: impl FnOnce(&mut AgentState) -> R) -> R {
        f(&mut lock(&self.shared.state))
    }

    /// A copy of the run's state (during an iteration event it is lent to the hooks and this
    /// copy is a placeholder holding only the run id).
    pub fn state(&self) -> AgentState {
        lock(&self.shared.state).clone()
    }

    fn record(&self, event: HookEvent, tool_call_id: Option<&str>, changes: Vec<Change>) {
        if !changes.is_empty() {
            record_changes(
                &mut lock(&self.shared.report),
                &self.shared.run_id,
                event,
                tool_call_id,
                changes,
            );
        }
    }

    /// Starts the next iteration: counts it and dispatches iteration-start (concurrently;
    /// errors are logged, never returned).
    ///
    /// # Errors
    /// [`RunError::IterationLimit`] when the state's `max_iterations` are used up.
    pub async fn start_iteration(&self) -> Result<u32, RunError> {
        let iteration = {
            let mut state = lock(&self.shared.state);
            if state.iteration >= state.max_iterations {
                return Err(RunError::IterationLimit {
                    max_iterations: state.max_iterations,
                });
            }
            // Every run of the tree draws from the top-level run's budget.
            if let Some(tree) = self.shared.tree.get()
                && tree
                    .used
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                        (used < tree.budget).then_some(used + 1)
                    })
                    .is_err()
            {
                return Err(RunError::TreeIterationLimit {
                    max_iterations: tree.budget,
                });
            }
            state.iteration += 1;
            state.touch();
            self.shared
                .iteration
                .store(state.iteration, std::sync::atomic::Ordering::Relaxed);
            state.iteration
        };
        self.iteration_event(HookEvent::IterationStart).await;
        Ok(iteration)
    }

    /// Ends the current iteration: dispatches iteration-end (concurrently; errors are logged,
    /// never returned).
    pub async fn end_iteration(&self) {
        lock(&self.shared.state).touch();
        self.iteration_event(HookEvent::IterationEnd).await;
    }

    /// Dispatches an iteration event with the run's state. The state is lent to the hooks
    /// (taken out and put back, not copied): iteration boundaries are where the loop waits
    /// for them, so nothing else of the run reads it meanwhile.
    async fn iteration_event(&self, kind: HookEvent) {
        if !self.registry.has_subscribers(kind) {
            return;
        }
        let state = std::mem::replace(
            &mut *lock(&self.shared.state),
            AgentState::hollow(self.shared.run_id.clone()),
        );
        // Put back even if this future is dropped midway.
        let lent = Lent {
            slot: &self.shared.state,
            state: Some(state),
        };
        let event = IterationEvent::new(lent.get());
        if kind == HookEvent::IterationStart {
            self.registry.iteration_start(&event).await;
        } else {
            self.registry.iteration_end(&event).await;
        }
    }

    /// One model call with its hooks: before-model-call (which may rewrite the messages, the
    /// tools and the options, or answer in the model's place), `call` (unless a hook
    /// answered), after-model-call (which may replace the response, or ask for a retry with
    /// feedback, bounded by `max_retries`). Over-deep tool-call arguments in the reply are
    /// refused before any hook sees them. The response's message is appended to the state and
    /// the response returned.
    ///
    /// # Errors
    /// A hook's error; [`RunError::Model`] when the call failed and no hook recovered it;
    /// [`RunError::RetriesExhausted`] when hooks kept asking for retries.
    pub async fn model_call<F, Fut>(&self, mut call: F) -> Result<ModelResponse, RunError>
    where
        F: FnMut(ModelCall) -> Fut,
        Fut: Future<Output = Result<ModelResponse, ModelError>>,
    {
        self.model_call_with(|request, _| call(request), false)
            .await
    }

    /// [`model_call`](Self::model_call) for a streamed reply: `call` gets a [`DeltaSink`] to
    /// hand each piece to as it arrives ([`DeltaSink::send`]: the `on_model_delta` hooks, then
    /// the run's [`events`](RunOptions::events) sink), and returns the whole reply, which goes
    /// through the after-model-call hooks as always. The consumer sees:
    /// - the pieces as the hooks left them, live — unless a provider guards model output
    ///   without handling pieces ([`HookRegistry::streams_live`]): then nothing until the
    ///   after-model-call hooks ran, and the reply's text as they left it, at once;
    /// - [`RunEvent::Retracted`] when the hooks discard the attempt (a retry follows, or the
    ///   call failed after a part streamed);
    /// - [`RunEvent::Corrected`] when the text the after-model-call hooks left differs from
    ///   what streamed.
    ///
    /// # Errors
    /// As [`model_call`](Self::model_call); a delta hook's error ends the call
    /// ([`RunError::Hook`], after the after-model-call hooks saw the call fail).
    pub async fn model_call_stream<F, Fut>(&self, call: F) -> Result<ModelResponse, RunError>
    where
        F: FnMut(ModelCall, DeltaSink<'r>) -> Fut,
        Fut: Future<Output = Result<ModelResponse, ModelError>>,
    {
        let mut call = call;
        self.model_call_with(
            |request, sink| match sink {
                Some(sink) => call(request, sink),
                None => unreachable!("a streamed call always has a sink"),
            },
            true,
        )
        .await
    }

    async fn model_call_with<F, Fut>(
        &self,
        mut call: F,
        streaming: bool,
    ) -> Result<ModelResponse, RunError>
    where
        F: FnMut(ModelCall, Option<DeltaSink<'r>>) -> Fut,
        Fut: Future<Output = Result<ModelResponse, ModelError>>,
    {
        let shared = &*self.shared;
        let max = shared.options.max_retries;
        let model = shared.options.model.as_str();
        // Never a model call past unanswered tool calls: paused ones, or (on resume) decided
        // ones the loop has not run yet.
        let waiting = lock(&shared.interrupted).len();
        if waiting > 0 {
            return Err(RunError::Interrupted {
                interruptions: waiting,
            });
        }
        if lock(&shared.resumed).is_some() {
            return Err(RunError::Resume(ResumeError::Inconsistent(
                "the loop made a model call before Run::resume_pending ran the decided calls"
                    .to_owned(),
            )));
        }
        let mut attempt = 0;
        // A retry's feedback: part of the next request, and of the conversation only once the
        // before-model-call hooks accepted that request (a guard among them judges it there).
        let mut feedback: Option<Message> = None;
        loop {
            // The hooks get a copy of the conversation; the state keeps it meanwhile, so a call
            // dropped midway (a timeout around it) or a concurrent part of the run that adds a
            // message loses nothing.
            let (iteration, messages, base_len) = {
                let state = lock(&shared.state);
                if attempt == 0 {
                    // Refusals are per response: a new call starts afresh.
                    lock(&shared.refused).clear();
                }
                let n = state.messages.len();
                let mut messages = Vec::with_capacity(n + usize::from(feedback.is_some()));
                messages.extend_from_slice(&state.messages);
                messages.extend(feedback.clone());
                (state.iteration, messages, n)
            };
            let cx = EventContext::new(&shared.run_id, &shared.extensions)
                .with_parent(shared.parent.as_deref())
                .with_iteration(iteration)
                .with_attempt(attempt)
                .with_pausable(shared.pausable);
            let mut event = BeforeModelCallEvent::new(cx, model, messages)
                .with_tools(shared.options.tools.clone())
                .with_options(shared.options.model_options.clone());
            let before = self.registry.before_model_call(&mut event).await;
            let changes = event.take_changes();
            let rewritten = changes.iter().any(|c| c.field == Field::Messages);
            let parts = event.into_parts();
            self.record(HookEvent::BeforeModelCall, None, changes);
            // A refused request leaves the conversation as it was: the hooks that refused it
            // may have run before a guard that would have judged what it added.
            before?;
            if rewritten {
                // The rewrite stays in the conversation; what was added meanwhile follows it.
                let mut state = lock(&shared.state);
                let keep = base_len.min(state.messages.len());
                let tail = state.messages.split_off(keep);
                state.messages.clone_from(&parts.messages);
                state.messages.extend(tail);
            } else if let Some(f) = feedback.take() {
                let mut state = lock(&shared.state);
                let at = base_len.min(state.messages.len());
                state.messages.insert(at, f);
            }

            let t0 = Instant::now();
            // Shared with the call and the after-hooks, not copied again.
            let messages = Arc::new(parts.messages);
            // Boxed: a call that does not stream carries one pointer for it.
            let sink =
                streaming.then(|| Box::new(DeltaSink::new(self.clone(), iteration, attempt)));
            let mut outcome = match parts.response {
                Some(answer) => Ok(answer),
                None => {
                    let request = ModelCall {
                        run_id: shared.run_id.clone(),
                        messages: Arc::clone(&messages),
                        tools: parts.tools,
                        options: parts.options,
                    };
                    // A panic while making the future, or while polling it, is an error.
                    let handed = sink.as_deref().cloned();
                    let made = std::panic::catch_unwind(AssertUnwindSafe(|| call(request, handed)));
                    let polled = match made {
                        Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                        Err(payload) => Err(payload),
                    };
                    match polled {
                        Ok(r) => r,
                        Err(payload) => Err(ModelError::Other(format!(
                            "the model call panicked: {}",
                            crate::registry::panic_message(payload.as_ref())
                        ))),
                    }
                }
            };
            // A streamed reply: the closing piece (what hooks held back), and a delta hook's
            // error, which ends the call.
            let mut stopped = None;
            if let Some(sink) = &sink {
                if outcome.is_ok() {
                    // Boxed: only a streamed call pays for the delta hooks' future.
                    Box::pin(sink.close()).await;
                }
                if let Some(e) = sink.take_error() {
                    outcome = Err(ModelError::Other(format!("the stream was stopped: {e}")));
                    stopped = Some(Box::new(e));
                }
            }
            if let Ok(response) = &mut outcome {
                // Ids first: a refusal is remembered by the call's final id.
                self.rekey_duplicate_ids(response);
                self.refuse_deep_arguments(response);
            }
            // A streamed reply's text before the after-model-call hooks: a correction is sent
            // only for what they changed.
            let raw = match (&sink, &outcome) {
                (Some(_), Ok(r)) => Some(r.message.content.clone()),
                _ => None,
            };
            let mut event =
                AfterModelCallEvent::new(cx, model, &messages, outcome).with_duration(t0.elapsed());
            let after = self.registry.after_model_call(&mut event).await;
            let changes = event.take_changes();
            let out = event.into_outcome();
            drop(messages);
            self.record(HookEvent::AfterModelCall, None, changes);
            if let Some(sink) = &sink {
                // Nothing is handed over from a call whose after-model-call hooks failed: a
                // guard among them may not have run.
                let discarded = out.retry || stopped.is_some() || after.is_err();
                let kept = match (&out.response, discarded) {
                    (Some(r), false) => Some(r.message.content.as_str()),
                    _ => None,
                };
                Box::pin(sink.settle(kept, raw.as_deref())).await;
            }
            if let Some(e) = stopped {
                // The hook's error as the after-model-call hooks left the call's (a guard may
                // have redacted the piece it quotes).
                let message = out.error.as_ref().map_or_else(
                    || e.cause().message().to_owned(),
                    |err| {
                        let text = err.to_string();
                        text.strip_prefix("the stream was stopped: ")
                            .unwrap_or(&text)
                            .to_owned()
                    },
                );
                return Err(RunError::Hook(DispatchError::new(
                    e.provider(),
                    e.event(),
                    crate::error::HookError::new(message),
                )));
            }
            after?;

            let attempts = attempt + 1;
            if out.retry {
                if attempt < max {
                    feedback = out
                        .retry_feedback
                        .map(|text| Message::user(text).automated());
                    attempt += 1;
                    continue;
                }
                tracing::warn!(target: "hooks::agent", run_id = shared.run_id.as_str(), iteration, attempts, "model call retries exhausted");
                return Err(match (out.response, out.error) {
                    (None, Some(source)) => RunError::Model {
                        error: source,
                        attempts,
                    },
                    _ => RunError::RetriesExhausted {
                        target: RetryTarget::Model { iteration },
                        attempts,
                    },
                });
            }
            return match (out.response, out.error) {
                (Some(response), _) => {
                    lock(&shared.state).messages.push(response.message.clone());
                    Ok(response)
                }
                (None, Some(source)) => Err(RunError::Model {
                    error: source,
                    attempts,
                }),
                (None, None) => Err(RunError::Model {
                    error: ModelError::Other(
                        "the model returned neither a response nor an error".into(),
                    ),
                    attempts,
                }),
            };
        }
    }

    /// Gives every tool call of a response its own id: local models often send empty or
    /// repeated ids, and a hook's decision about one call (a guard's BLOCK, say) must never
    /// land on another. A repeated id gets `#2`, `#3`, …; an empty one `call_<n>`.
    fn rekey_duplicate_ids(&self, response: &mut ModelResponse) {
        let calls = &mut response.message.tool_calls;
        if calls.len() < 2 && calls.iter().all(|c| !c.id.is_empty()) {
            return;
        }
        let mut seen: HashSet<String> = HashSet::with_capacity(calls.len());
        for (i, call) in calls.iter_mut().enumerate() {
            let base = if call.id.is_empty() {
                format!("call_{i}")
            } else {
                call.id.clone()
            };
            let id = crate::text::unique(&base, |id| seen.contains(id));
            if id != call.id {
                tracing::warn!(target: "hooks::agent", run_id = self.shared.run_id.as_str(), "tool call id {:?} was empty or repeated in one response; it is now {id:?}", preview(&call.id, 64));
                call.id = id.clone();
            }
            seen.insert(id);
        }
    }

    /// Takes over-deep arguments out of a response (they become `{}`), remembering the calls.
    fn refuse_deep_arguments(&self, response: &mut ModelResponse) {
        for call in &mut response.message.tool_calls {
            if nests_deeper_than(&call.arguments, MAX_ARGUMENT_DEPTH) {
                let deep = std::mem::replace(&mut call.arguments, Value::Object(Map::new()));
                drop_deep(deep);
                tracing::warn!(target: "hooks::agent", run_id = self.shared.run_id.as_str(), tool_call_id = call.id.as_str(), "tool-call arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels were refused");
                lock(&self.shared.refused).insert(call.id.clone());
            }
        }
    }

    /// One tool call with its hooks, recorded in the state (its execution, and the result
    /// message the model sees) as soon as it is done. For the calls of one model response use
    /// [`tool_calls`](Self::tool_calls), which keeps their order.
    ///
    /// `execute` runs the tool with the arguments the hooks left, secret ones merged in; it
    /// is not called for a cancelled call, nor for arguments that are not an object or were
    /// refused for their depth (those get an error result the model can act on). A panic in
    /// it becomes an error result. Hooks may ask for retries, bounded by `max_retries`.
    ///
    /// # Errors
    /// A hook's error (the call is still recorded, with that error).
    pub async fn tool_call<F, Fut>(
        &self,
        call: &ToolCall,
        execute: F,
    ) -> Result<ToolCallRecord, RunError>
    where
        F: FnMut(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        self.refuse_while_paused()?;
        let (record, changes, error) = self.drive_tool(call, Approval::None, execute).await;
        self.record_tool(&record, changes);
        if self.shared.options.events.is_some() {
            Box::pin(self.tool_finished(&record)).await;
        }
        match error {
            Some(e) => Err(RunError::Hook(e)),
            None if record.outcome.interrupted().is_some() => Err(self.pause()),
            None => Ok(record),
        }
    }

    /// Paused: nothing more runs until a person decides.
    fn refuse_while_paused(&self) -> Result<(), RunError> {
        let waiting = lock(&self.shared.interrupted).len();
        if waiting > 0 {
            return Err(RunError::Interrupted {
                interruptions: waiting,
            });
        }
        Ok(())
    }

    /// The error that pauses the run (how many calls wait).
    fn pause(&self) -> RunError {
        RunError::Interrupted {
            interruptions: lock(&self.shared.interrupted).len(),
        }
    }

    /// The tool calls of one model response, each through [`tool_call`](Self::tool_call)'s
    /// semantics: concurrently when the run's options say so (a hook error then stops none of
    /// the others), else one after the other (a hook error stops the rest). Results reach the
    /// state — and so the model — in the order of `calls`.
    ///
    /// # Errors
    /// The first hook error, after every started call was recorded.
    pub async fn tool_calls<F, Fut>(
        &self,
        calls: &[ToolCall],
        execute: F,
    ) -> Result<Vec<ToolCallRecord>, RunError>
    where
        F: Fn(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        self.refuse_while_paused()?;
        let calls: Vec<(&ToolCall, Approval)> = calls.iter().map(|c| (c, Approval::None)).collect();
        self.drive_all(&calls, &execute).await
    }

    /// Drives `calls` (each with how a person approved it) concurrently or in order, records
    /// them in order, and pauses when any was interrupted.
    async fn drive_all<F, Fut>(
        &self,
        calls: &[(&ToolCall, Approval)],
        execute: &F,
    ) -> Result<Vec<ToolCallRecord>, RunError>
    where
        F: Fn(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let done = if self.shared.options.parallel_tool_calls && calls.len() > 1 {
            join_all(
                calls
                    .iter()
                    .map(|(c, a)| self.drive_tool(c, a.clone(), execute)),
            )
            .await
        } else {
            let mut done = Vec::with_capacity(calls.len());
            for (c, a) in calls {
                let d = self.drive_tool(c, a.clone(), execute).await;
                let stop = d.2.is_some();
                done.push(d);
                if stop {
                    break;
                }
            }
            done
        };
        let mut first_error = None;
        let mut records = Vec::with_capacity(done.len());
        let mut interrupted = false;
        for (record, changes, error) in done {
            self.record_tool(&record, changes);
            if let Some(e) = error {
                first_error.get_or_insert(e);
            }
            interrupted |= record.outcome.interrupted().is_some();
            records.push(record);
        }
        if self.shared.options.events.is_some() {
            // Boxed: only a run with a consumer pays for this future.
            Box::pin(async {
                for record in &records {
                    self.tool_finished(record).await;
                }
            })
            .await;
        }
        match first_error {
            Some(e) => Err(RunError::Hook(e)),
            None if interrupted => Err(self.pause()),
            None => Ok(records),
        }
    }

    /// True when the run resumes and [`resume_pending`](Self::resume_pending) has calls to
    /// run (or to leave waiting).
    pub fn is_resuming(&self) -> bool {
        lock(&self.shared.resumed).is_some()
    }

    /// On a resumed run, runs the calls a person decided on, in the order they were made:
    /// approved ones (and edited ones, with the new arguments) through the before-tool hooks
    /// again — a cancel still wins, an interrupt is not asked twice, and an approved call
    /// whose hooks now leave other arguments than were approved is interrupted again instead
    /// of run — and rejected ones with the person's message as the result the model sees.
    /// Call it before the loop's first model call; on a fresh run it does nothing.
    ///
    /// # Errors
    /// [`RunError::Interrupted`] when calls still wait (undecided, or interrupted again):
    /// return it, and the run pauses again. A hook's error as for [`tool_calls`](Self::tool_calls).
    pub async fn resume_pending<F, Fut>(&self, execute: F) -> Result<Vec<ToolCallRecord>, RunError>
    where
        F: Fn(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let Some(work) = lock(&self.shared.resumed).take() else {
            return Ok(Vec::new());
        };
        let mut edited: Vec<ToolCall> = Vec::new();
        let mut plan: Vec<(usize, Approval)> = Vec::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        for (call, interruption, decision) in work {
            let Some(decision) = decision else {
                lock(&self.shared.interrupted).push((call, interruption));
                continue;
            };
            let approval = match decision.kind() {
                DecisionKind::Approve => Approval::Exact(interruption.arguments_hash.clone()),
                DecisionKind::ApproveAlways => {
                    lock(&self.shared.always_approved).insert(call.name.clone());
                    Approval::Exact(interruption.arguments_hash.clone())
                }
                DecisionKind::Edit { arguments } => {
                    let mut call = call.clone();
                    call.arguments = arguments.clone();
                    edited.push(call);
                    plan.push((usize::MAX, Approval::Edited));
                    continue;
                }
                DecisionKind::Reject { message } => {
                    // Recorded with the arguments as the hooks left them (redacted), never
                    // the model's own.
                    let mut call = call.clone();
                    call.arguments = interruption.arguments.clone();
                    plan.push((calls.len(), Approval::Rejected(message.clone())));
                    calls.push(call);
                    continue;
                }
            };
            plan.push((calls.len(), approval));
            calls.push(call);
        }
        // Edited calls keep their place in the order.
        let mut next_edit = edited.iter();
        let driven: Vec<(&ToolCall, Approval)> = plan
            .into_iter()
            .filter_map(|(i, a)| match i {
                usize::MAX => next_edit.next().map(|c| (c, a)),
                i => calls.get(i).map(|c| (c, a)),
            })
            .collect();
        let undecided = !lock(&self.shared.interrupted).is_empty();
        let records = self.drive_all(&driven, &execute).await;
        match records {
            Ok(_) if undecided => Err(self.pause()),
            r => r,
        }
    }

    /// Tells the run's consumer a call ended (what the model sees, as the hooks left it).
    async fn tool_finished(&self, record: &ToolCallRecord) {
        let Some(events) = &self.shared.options.events else {
            return;
        };
        let outcome = match &record.outcome {
            ToolOutcome::Ran => "ran",
            ToolOutcome::Failed { .. } => "failed",
            ToolOutcome::Cancelled { .. } => "cancelled",
            ToolOutcome::Interrupted { .. } => "interrupted",
        };
        let exec = &record.execution;
        emit(
            &**events,
            RunEvent::ToolFinished {
                call_id: exec.tool_call_id.clone(),
                name: exec.tool_name.clone(),
                result: exec.result.clone(),
                outcome,
            },
        )
        .await;
    }

    /// Writes a finished call into the report and the state.
    fn record_tool(&self, record: &ToolCallRecord, changes: Vec<(HookEvent, Vec<Change>)>) {
        let exec = &record.execution;
        for (event, changes) in changes {
            self.record(event, Some(&exec.tool_call_id), changes);
        }
        if record.outcome.interrupted().is_some() {
            // Nothing happened yet: it waits for a person (recorded when decided).
            return;
        }
        let mut state = lock(&self.shared.state);
        if record.retries_exhausted {
            let target = RetryTarget::Tool {
                name: exec.tool_name.clone(),
                call_id: exec.tool_call_id.clone(),
            };
            state.errors.push(format!(
                "retries exhausted for the {target} after {} attempt(s)",
                exec.attempts
            ));
            tracing::warn!(target: "hooks::agent", run_id = self.shared.run_id.as_str(), tool_call_id = exec.tool_call_id.as_str(), attempts = exec.attempts, "tool call retries exhausted");
            lock(&self.shared.report).exhausted.push(target);
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
        state.tool_executions.push(exec.clone());
    }

    /// Every attempt of one tool call; records nothing (the caller does, in order).
    async fn drive_tool<F, Fut>(
        &self,
        call: &ToolCall,
        approval: Approval,
        mut execute: F,
    ) -> (
        ToolCallRecord,
        Vec<(HookEvent, Vec<Change>)>,
        Option<DispatchError>,
    )
    where
        F: FnMut(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let shared = &*self.shared;
        let max = shared.options.max_retries;
        let iteration = self.iteration();
        // Refused when its response was read (and its arguments replaced by `{}`), or handed
        // in directly with arguments too deep to copy safely.
        let refused = lock(&shared.refused).remove(&call.id)
            || nests_deeper_than(&call.arguments, MAX_ARGUMENT_DEPTH);
        let mut changes = Vec::new();
        let approved = match &approval {
            Approval::None => lock(&shared.always_approved)
                .contains(&call.name)
                .then_some(PersonApproval::Tool),
            Approval::Exact(_) | Approval::Edited => Some(PersonApproval::ThisCall),
            Approval::Rejected(message) => {
                // Boxed: rare, and this future is one per parallel call.
                return Box::pin(self.rejected(call, message.clone(), iteration)).await;
            }
        };
        let mut attempt = 0;
        loop {
            let cx = EventContext::new(&shared.run_id, &shared.extensions)
                .with_parent(shared.parent.as_deref())
                .with_iteration(iteration)
                .with_attempt(attempt)
                // A call already run once is not paused on a retry (it ran unasked).
                .with_pausable(shared.pausable && attempt == 0);
            let mut before = if refused {
                BeforeToolCallEvent::with_arguments(cx, call, Value::Object(Map::new()))
            } else {
                BeforeToolCallEvent::new(cx, call)
            };
            if let Some(kind) = approved {
                before = before.with_person_approval(kind);
            }
            let r = self.registry.before_tool_call(&mut before).await;
            let before_changes = before.take_changes();
            let mut interrupters: Vec<&str> = Vec::new();
            for c in before_changes
                .iter()
                .filter(|c| c.field == Field::Interrupt)
            {
                if !interrupters.contains(&&*c.provider) {
                    interrupters.push(&c.provider);
                }
            }
            let interrupter = (!interrupters.is_empty()).then(|| interrupters.join(", "));
            push_changes(&mut changes, HookEvent::BeforeToolCall, before_changes);
            let mut parts = before.into_parts();
            if let Err(e) = r {
                let outcome = ToolOutcome::Failed {
                    error: e.to_string(),
                };
                let execution = execution(
                    call,
                    parts.arguments,
                    String::new(),
                    &outcome,
                    attempt + 1,
                    Duration::ZERO,
                );
                let record = ToolCallRecord {
                    execution,
                    outcome,
                    retries_exhausted: false,
                };
                return (record, changes, Some(e));
            }

            let t0 = Instant::now();
            let slot = shared.next_slot.fetch_add(1, Ordering::Relaxed);
            // Settled before any await: an interruption is stored at once, so no large value
            // lives across the tool's execution (this future is one per parallel call).
            let settled = {
                let interrupt = if refused {
                    // Refused for its depth: it fails anyway, and is not kept for a person.
                    parts.interrupted = None;
                    None
                } else {
                    self.settle_interrupt(
                        call,
                        &approval,
                        approved.is_some(),
                        &mut parts,
                        interrupter,
                        shared.pausable && attempt == 0,
                    )
                };
                match (parts.cancelled.take(), interrupt) {
                    (Some(reason), _) => Some((
                        ToolOutcome::Cancelled {
                            reason: reason.clone(),
                        },
                        reason,
                    )),
                    (None, Some(interruption)) => {
                        let reason = interruption.reason.clone();
                        lock(&shared.interrupted).push((call.clone(), interruption));
                        Some((ToolOutcome::Interrupted { reason }, String::new()))
                    }
                    (None, None) => None,
                }
            };
            let (outcome, result) = match settled {
                Some(done) => done,
                None => {
                    let ran = if refused {
                        Err(ToolError::new(format!(
                            "arguments for tool '{}' were nested deeper than {MAX_ARGUMENT_DEPTH} levels and were refused; send flatter arguments",
                            preview(&call.name, 64)
                        )))
                    } else {
                        if attempt == 0
                            && let Some(events) = &shared.options.events
                        {
                            // The arguments as the hooks left them: never a secret one. Boxed:
                            // only a run with a consumer pays for this future.
                            Box::pin(emit(
                                &**events,
                                RunEvent::ToolStarted {
                                    call_id: call.id.clone(),
                                    name: call.name.clone(),
                                    arguments: parts.arguments.clone(),
                                },
                            ))
                            .await;
                        }
                        self.execute(
                            call,
                            &parts,
                            shared.pausable && attempt == 0,
                            slot,
                            &mut execute,
                        )
                        .await
                    };
                    let secrets = &parts.secret_arguments;
                    let child = lock(&shared.nesting)
                        .as_mut()
                        .and_then(|n| n.slots.remove(&slot));
                    match (ran, child) {
                        (_, Some(child)) if shared.pausable && attempt == 0 => {
                            // The agent run as this tool paused for a person: so does this
                            // call, with what the nested run waits for.
                            let interruption =
                                nested_interruption(&shared.run_id, call, &parts.arguments, &child);
                            let reason = interruption.reason.clone();
                            lock(&shared.interrupted).push((call.clone(), interruption));
                            lock(&shared.nesting)
                                .get_or_insert_with(Box::default)
                                .paused
                                .insert(call.id.clone(), child);
                            (ToolOutcome::Interrupted { reason }, String::new())
                        }
                        (_, Some(_)) => {
                            let error = "the agent run as this tool paused for a person, but this call cannot pause (the run was started with run(), or the call is a retry); start the run with start() to let nested agents ask".to_owned();
                            (
                                ToolOutcome::Failed {
                                    error: error.clone(),
                                },
                                format!("Error: {error}"),
                            )
                        }
                        (Ok(text), _) => (ToolOutcome::Ran, secrets.scrub(text)),
                        (Err(e), _) => {
                            let error = secrets.scrub(e.message().to_owned());
                            let result = format!("Error: {error}");
                            (ToolOutcome::Failed { error }, result)
                        }
                    }
                }
            };
            let duration = t0.elapsed();

            let mut after = AfterToolCallEvent::new(cx, call, &parts.arguments, &outcome, result)
                .with_duration(duration);
            let r = self.registry.after_tool_call(&mut after).await;
            let after_changes = after.take_changes();
            let after = after.into_parts();
            let (result, retry) = (after.result, after.retry);
            // A hook may have redacted the error text: that is what is recorded. A cancel's
            // reason is what the model sees, as the hooks left it (a guard may have redacted it).
            let outcome = match after.redacted.unwrap_or(outcome) {
                ToolOutcome::Cancelled { .. } => ToolOutcome::Cancelled {
                    reason: result.clone(),
                },
                other => other,
            };
            let cancelled = matches!(
                outcome,
                ToolOutcome::Cancelled { .. } | ToolOutcome::Interrupted { .. }
            );
            let retry = retry && !cancelled;
            if cancelled && after_changes.iter().any(|c| c.field == Field::Retry) {
                tracing::debug!(target: "hooks::agent", tool_call_id = call.id.as_str(), "retry asked for a cancelled tool call is ignored");
            }
            push_changes(&mut changes, HookEvent::AfterToolCall, after_changes);
            let attempts = attempt + 1;
            if r.is_ok() && retry && attempt < max {
                attempt += 1;
                continue;
            }
            let record = ToolCallRecord {
                execution: execution(call, parts.arguments, result, &outcome, attempts, duration),
                outcome,
                retries_exhausted: r.is_ok() && retry,
            };
            return (record, changes, r.err());
        }
    }

    /// What becomes of a hook's interrupt (and of a person's approval) once the before-tool
    /// hooks ran: the interruption to pause for, or none (the call runs, or is cancelled).
    ///
    /// - An approval as shown holds only for the arguments it was shown: other arguments now
    ///   are interrupted again.
    /// - An approved call is not interrupted again by a hook.
    /// - A run that cannot pause cancels an interrupted call with `REQUIRES APPROVAL`.
    fn settle_interrupt(
        &self,
        call: &ToolCall,
        approval: &Approval,
        approved: bool,
        parts: &mut crate::event::ToolCallParts,
        interrupter: Option<String>,
        pausable: bool,
    ) -> Option<Interruption> {
        let asked = parts.interrupted.take();
        if parts.cancelled.is_some() {
            return None;
        }
        let (reason, payload, provider) = match (approval, asked) {
            (Approval::Exact(hash), asked) if arguments_hash(&parts.arguments) != *hash => {
                let why = "the arguments differ from those a person approved".to_owned();
                let reason = match &asked {
                    Some((r, _)) => format!("{why}; {r}"),
                    None => why,
                };
                let payload = asked.map_or(Value::Null, |(_, p)| p);
                (reason, payload, "hooks".to_owned())
            }
            (_, Some((reason, payload))) if !approved => {
                (reason, payload, interrupter.unwrap_or_default())
            }
            (_, Some(_)) => {
                tracing::debug!(target: "hooks::interrupt", run_id = self.shared.run_id.as_str(), tool_call_id = call.id.as_str(), "an interrupt for a call a person approved is not asked again");
                return None;
            }
            (_, None) => return None,
        };
        if !pausable {
            // A run that cannot pause, or a retry of a call that already ran once (it is not
            // paused halfway): the call is cancelled instead.
            parts.cancelled = Some(format!("{REQUIRES_APPROVAL}: {reason}"));
            return None;
        }
        Some(Interruption {
            id: format!("int-{}", uuid::Uuid::now_v7()),
            run_id: self.shared.run_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments_hash: arguments_hash(&parts.arguments),
            arguments: parts.arguments.clone(),
            reason,
            payload,
            provider,
        })
    }

    /// A call a person rejected: not run; the after-tool hooks see it cancelled with the
    /// person's message, which is what the model sees (as they leave it).
    async fn rejected(
        &self,
        call: &ToolCall,
        message: String,
        iteration: u32,
    ) -> (
        ToolCallRecord,
        Vec<(HookEvent, Vec<Change>)>,
        Option<DispatchError>,
    ) {
        let shared = &*self.shared;
        let cx = EventContext::new(&shared.run_id, &shared.extensions)
            .with_parent(shared.parent.as_deref())
            .with_iteration(iteration);
        let message = if message.trim().is_empty() {
            "A person rejected this call.".to_owned()
        } else {
            message
        };
        let outcome = ToolOutcome::Cancelled {
            reason: message.clone(),
        };
        let mut after = AfterToolCallEvent::new(cx, call, &call.arguments, &outcome, message);
        let r = self.registry.after_tool_call(&mut after).await;
        let mut changes = Vec::new();
        push_changes(&mut changes, HookEvent::AfterToolCall, after.take_changes());
        let after = after.into_parts();
        // The person's message as the hooks left it (a guard may have redacted it).
        let outcome = match after.redacted.unwrap_or(outcome) {
            ToolOutcome::Cancelled { .. } => ToolOutcome::Cancelled {
                reason: after.result.clone(),
            },
            other => other,
        };
        let record = ToolCallRecord {
            execution: execution(
                call,
                call.arguments.clone(),
                after.result,
                &outcome,
                1,
                Duration::ZERO,
            ),
            outcome,
            retries_exhausted: false,
        };
        (record, changes, r.err())
    }

    /// Runs the caller's tool with the merged arguments; non-object arguments and panics
    /// become errors.
    async fn execute<F, Fut>(
        &self,
        call: &ToolCall,
        parts: &crate::event::ToolCallParts,
        pausable: bool,
        slot: u64,
        execute: &mut F,
    ) -> Result<String, ToolError>
    where
        F: FnMut(ToolInvocation<'r>) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let merged = parts.secret_arguments.merged_over(&parts.arguments);
        let Value::Object(arguments) = merged else {
            return Err(ToolError::new(format!(
                "arguments for tool '{}' must be a JSON object, got {}",
                preview(&call.name, 64),
                crate::json::kind_name(&merged)
            )));
        };
        let invocation = ToolInvocation {
            run_id: self.shared.run_id.clone(),
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
            secret_keys: parts.secret_arguments.keys(),
            run: self.clone(),
            pausable,
            slot,
        };
        // A panic while making the future, or while polling it, is an error result.
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| execute(invocation)));
        let polled = match made {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
            Err(payload) => Err(payload),
        };
        match polled {
            Ok(r) => r,
            Err(payload) => Err(ToolError::new(format!(
                "tool '{}' panicked: {}",
                preview(&call.name, 64),
                crate::registry::panic_message(payload.as_ref())
            ))),
        }
    }
}

/// Where a streamed model call hands its reply's pieces (see [`Run::model_call_stream`]):
/// each goes through the `on_model_delta` hooks, then — when the run streams live — to the
/// run's [`events`](RunOptions::events) sink, waiting while the consumer is behind.
#[derive(Clone)]
pub struct DeltaSink<'r> {
    run: Run<'r>,
    iteration: u32,
    attempt: u32,
    state: Arc<Mutex<SinkState>>,
}

#[derive(Default)]
struct SinkState {
    /// The text handed to the consumer so far (this attempt).
    emitted: String,
    /// Anything handed to the consumer (text or a tool-call piece).
    any: bool,
    /// A delta hook's error: the call ends.
    error: Option<DispatchError>,
    closed: bool,
}

impl std::fmt::Debug for DeltaSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaSink")
            .field("run_id", &self.run.shared.run_id)
            .field("iteration", &self.iteration)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl<'r> DeltaSink<'r> {
    fn new(run: Run<'r>, iteration: u32, attempt: u32) -> Self {
        Self {
            run,
            iteration,
            attempt,
            state: Arc::default(),
        }
    }

    /// True when pieces reach the consumer as they come (a consumer is set and no guard
    /// needs the whole reply first).
    pub fn is_live(&self) -> bool {
        self.run.shared.options.events.is_some() && self.run.registry.streams_live()
    }

    /// Hands one piece of the reply over: the delta hooks, then the consumer.
    ///
    /// # Errors
    /// A delta hook failed (or the call already ended): stop reading the stream and return
    /// the error; the call ends with the hook's error.
    pub async fn send(&self, delta: ModelDelta) -> Result<(), ModelError> {
        self.deliver(delta, false).await
    }

    async fn deliver(&self, delta: ModelDelta, last: bool) -> Result<(), ModelError> {
        {
            let state = lock(&self.state);
            if state.error.is_some() || (state.closed && !last) {
                return Err(ModelError::Other(
                    "the stream was stopped by a hook (or already closed)".into(),
                ));
            }
        }
        let shared = &*self.run.shared;
        let delta = if self.run.registry.has_subscribers(HookEvent::ModelDelta) {
            let cx = EventContext::new(&shared.run_id, &shared.extensions)
                .with_parent(shared.parent.as_deref())
                .with_iteration(self.iteration)
                .with_attempt(self.attempt)
                .with_pausable(shared.pausable);
            let mut event =
                crate::event::ModelDeltaEvent::new(cx, &shared.options.model, delta, last);
            let r = self.run.registry.model_delta(&mut event).await;
            let changes = event.take_changes();
            self.run.record(HookEvent::ModelDelta, None, changes);
            if let Err(e) = r {
                let message = e.to_string();
                lock(&self.state).error = Some(e);
                return Err(ModelError::Other(message));
            }
            event.into_delta()
        } else {
            delta
        };
        if delta.is_empty() || !self.is_live() {
            return Ok(());
        }
        let Some(events) = &shared.options.events else {
            return Ok(());
        };
        let event = match delta {
            ModelDelta::Text(text) => {
                let mut state = lock(&self.state);
                state.emitted.push_str(&text);
                state.any = true;
                RunEvent::Text {
                    iteration: self.iteration,
                    attempt: self.attempt,
                    text,
                }
            }
            delta => {
                lock(&self.state).any = true;
                RunEvent::ToolCallDelta {
                    iteration: self.iteration,
                    attempt: self.attempt,
                    delta,
                }
            }
        };
        emit(&**events, event).await;
        Ok(())
    }

    /// The reply's closing piece: hooks hand over what they held back.
    async fn close(&self) {
        if lock(&self.state).closed {
            return;
        }
        // An error here is kept in the state (the call then ends with it).
        let _ = self.deliver(ModelDelta::Text(String::new()), true).await;
        lock(&self.state).closed = true;
    }

    fn take_error(&self) -> Option<DispatchError> {
        lock(&self.state).error.take()
    }

    /// After the after-model-call hooks: `kept` is the reply's text as they left it (`None`
    /// when the attempt is discarded or failed). Tells the consumer what changed.
    async fn settle(&self, kept: Option<&str>, raw: Option<&str>) {
        let Some(events) = &self.run.shared.options.events else {
            return;
        };
        let (emitted, any) = {
            let state = lock(&self.state);
            (state.emitted.clone(), state.any)
        };
        let event = match kept {
            None if any => RunEvent::Retracted {
                iteration: self.iteration,
                attempt: self.attempt,
            },
            None => return,
            // Held until the hooks saw the whole reply: handed over now, as they left it.
            Some(text) if !self.is_live() => {
                if text.is_empty() {
                    return;
                }
                RunEvent::Text {
                    iteration: self.iteration,
                    attempt: self.attempt,
                    text: text.to_owned(),
                }
            }
            // Corrected only for what the after-model-call hooks changed: a delta hook's own
            // rewrite of the pieces stands.
            Some(text) if text != emitted && raw != Some(text) => RunEvent::Corrected {
                iteration: self.iteration,
                attempt: self.attempt,
                text: text.to_owned(),
            },
            Some(_) => return,
        };
        emit(&**events, event).await;
    }
}

/// A tool call of a driven run, as seen by a tool that runs an agent (or any nested run)
/// under it: what [`ToolInput::nested`] gives the tool. The nested run it starts is a child of
/// this run: its own run id, a [`ParentRun`] on every event, the tree's depth limit and shared
/// iteration budget, this run's retry bound as a ceiling, its resume ledger and key, and — if
/// this call may pause — a pause of its own that surfaces as this call's interruption.
///
/// [`Agent::as_tool`](crate::agent::Agent::as_tool) is built on it; a custom loop gets it for
/// free, since every [`ToolInvocation`] carries it.
#[derive(Clone, Copy)]
pub struct NestedCall<'a> {
    run: &'a Run<'a>,
    call_id: &'a str,
    pausable: bool,
    slot: u64,
}

impl std::fmt::Debug for NestedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedCall")
            .field("run_id", &self.run.shared.run_id)
            .field("call_id", &self.call_id)
            .field("depth", &self.depth())
            .finish_non_exhaustive()
    }
}

impl<'a> NestedCall<'a> {
    /// The registry of the calling run: what a nested run dispatches through by default.
    pub fn registry(&self) -> &'a HookRegistry {
        self.run.registry
    }

    /// The tree's shared limits, made when the top-level run first nests one.
    fn tree(&self) -> &'a Arc<Tree> {
        let shared = &self.run.shared;
        shared.tree.get_or_init(|| {
            let state = lock(&shared.state);
            Arc::new(Tree {
                max_depth: shared.options.max_depth.min(MAX_NESTING_DEPTH),
                budget: state.max_iterations,
                used: AtomicU32::new(state.iteration),
            })
        })
    }

    /// The calling run's depth (0 for a top-level run).
    pub fn depth(&self) -> u32 {
        self.run.shared.parent.as_ref().map_or(0, |p| p.depth)
    }

    /// The deepest a run of this tree may be.
    pub fn max_depth(&self) -> u32 {
        self.tree().max_depth
    }

    /// What a run nested here gets as its parent.
    pub fn parent(&self) -> ParentRun {
        ParentRun::new(
            self.run.shared.run_id.clone(),
            self.call_id,
            self.depth() + 1,
        )
    }

    /// True when the call may pause: a nested run started here may then pause for a person
    /// (otherwise its interrupts cancel the calls, as in [`HookRegistry::run`]).
    pub fn can_pause(&self) -> bool {
        self.pausable
    }

    /// The calling run's options.
    pub fn options(&self) -> &'a RunOptions {
        &self.run.shared.options
    }

    /// The calling run's options, with `options`' own model, tools, sampling and iteration
    /// limit: the nested run's. The retry bound is at most the caller's; the resume ledger
    /// and key are the caller's (a nested run pauses and resumes inside its parent's paused
    /// run).
    fn child_options(&self, mut options: RunOptions) -> RunOptions {
        let parent = &self.run.shared.options;
        options.max_retries = options.max_retries.min(parent.max_retries);
        options.resume_ledger = parent.resume_ledger.clone();
        options.resume_key = parent.resume_key.clone();
        options.max_depth = self.max_depth();
        options
    }

    fn link(&self, registry: &HookRegistry, opted_out: &[String]) -> Result<Box<Link>, RunError> {
        let refuse = |reason: String| Err(RunError::NestedRefused { reason });
        // Never through fewer guards than the caller: every guard of its registry is in the
        // nested one (the same provider), or named as left out.
        let caller = self.run.registry;
        if let Some(unknown) = opted_out.iter().find(|n| !caller.contains(n)) {
            return refuse(format!(
                "provider '{}' cannot be left out: the calling run has no provider of that name",
                preview(unknown, 64)
            ));
        }
        let missing = registry.missing_guards_of(caller, opted_out);
        if !missing.is_empty() {
            return refuse(format!(
                "the nested run's registry lacks the calling run's guard(s) {}; build it with HookRegistry::nested, or leave a guard out explicitly",
                missing.join(", ")
            ));
        }
        // One nested run per tool execution: its pause and its resume are filed by the call.
        let first = lock(&self.run.shared.nesting)
            .get_or_insert_with(Box::default)
            .started
            .insert(self.slot);
        if !first {
            return refuse(
                "this tool call already started a nested run; one tool call runs at most one nested agent"
                    .to_owned(),
            );
        }
        if !opted_out.is_empty() {
            // Visible in the calling run's record, on the call that left them out.
            let changes = opted_out
                .iter()
                .map(|name| Change {
                    provider: name.as_str().into(),
                    field: Field::NestedOptOut,
                })
                .collect();
            self.run
                .record(HookEvent::BeforeToolCall, Some(self.call_id), changes);
        }
        let parent = self.parent();
        let max_depth = self.max_depth();
        if parent.depth > max_depth {
            return Err(RunError::TooDeep {
                depth: parent.depth,
                max_depth,
            });
        }
        Ok(Box::new(Link {
            parent,
            tree: Arc::clone(self.tree()),
            opted_out: opted_out.to_vec(),
        }))
    }

    /// Starts a nested run under this call, dispatching through `registry` (this call's
    /// [`registry`](Self::registry), or one holding at least its guards: see
    /// [`HookRegistry::nested`]); `opted_out` names the providers of the caller's registry
    /// left out, recorded in the calling run's changes. The body is a loop like
    /// [`HookRegistry::start`]'s.
    ///
    /// # Errors
    /// A [`RunFailure`] as for [`HookRegistry::run`]; nothing ran with
    /// [`RunError::TooDeep`] (past the tree's depth limit) or [`RunError::NestedRefused`]
    /// (`registry` lacks a guard of the caller's, `opted_out` names a provider the caller does
    /// not have, or this tool call already started a nested run).
    pub async fn start<'s, F, Fut>(
        &self,
        registry: &'s HookRegistry,
        state: AgentState,
        options: RunOptions,
        opted_out: &[String],
        body: F,
    ) -> Result<RunOutcome, RunFailure>
    where
        F: FnOnce(Run<'s>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        let link = match self.link(registry, opted_out) {
            Ok(link) => link,
            Err(error) => return Err(not_started(error, state)),
        };
        let options = self.child_options(options);
        Box::pin(registry.segment(
            Begin::Fresh(state),
            options,
            body,
            self.pausable,
            Some(link),
        ))
        .await
    }

    /// On a resumed run: the nested run that paused under this call, with the decisions for
    /// it, if a person decided (taken once). A tool that runs an agent resumes it with
    /// [`resume`](Self::resume) instead of starting a new one.
    pub fn take_resume(&self) -> Option<(PausedRun, Vec<Decision>)> {
        lock(&self.run.shared.nesting)
            .as_mut()
            .and_then(|n| n.resume.remove(self.call_id))
    }

    /// Resumes a nested run that paused under this call (see [`take_resume`](Self::take_resume)).
    ///
    /// # Errors
    /// As for [`HookRegistry::resume`]; [`RunError::TooDeep`] and [`RunError::NestedRefused`]
    /// as for [`start`](Self::start) (nothing ran).
    pub async fn resume<'s, F, Fut>(
        &self,
        registry: &'s HookRegistry,
        paused: PausedRun,
        decisions: Vec<Decision>,
        options: RunOptions,
        opted_out: &[String],
        body: F,
    ) -> Result<RunOutcome, RunFailure>
    where
        F: FnOnce(Run<'s>) -> Fut,
        Fut: Future<Output = Result<String, RunError>>,
    {
        let link = match self.link(registry, opted_out) {
            Ok(link) => link,
            Err(error) => return Err(not_started(error, paused.state().clone())),
        };
        let options = self.child_options(options);
        Box::pin(registry.resume_linked(paused, decisions, options, body, Some(link))).await
    }

    /// Hands the calling run a nested run that paused: the call pauses too, with one
    /// interruption that shows what the nested run waits for; the person's decision on it
    /// goes to every call waiting in the nested run, which resumes under this call when the
    /// calling run resumes. What the tool returns after this is ignored.
    ///
    /// # Errors
    /// [`RunError::NestedRefused`] (nothing is kept) when `child` was not started under this
    /// call by [`start`](Self::start) or [`resume`](Self::resume), or a paused run was handed
    /// over already.
    pub fn pause(&self, child: PausedRun) -> Result<(), RunError> {
        let refuse = |reason: &str| {
            Err(RunError::NestedRefused {
                reason: reason.to_owned(),
            })
        };
        let expected = self.parent();
        if child.state().parent.as_deref() != Some(&expected) {
            return refuse("the paused run was not started under this tool call");
        }
        let mut nesting = lock(&self.run.shared.nesting);
        let Some(nesting) = nesting.as_mut().filter(|n| n.started.contains(&self.slot)) else {
            return refuse("no nested run was started under this tool call");
        };
        if nesting.slots.contains_key(&self.slot) {
            return refuse("a paused run was already handed over for this tool call");
        }
        nesting.slots.insert(self.slot, child);
        Ok(())
    }
}

/// A nested run refused before anything of it ran.
fn not_started(error: RunError, state: AgentState) -> RunFailure {
    RunFailure {
        error,
        state: Box::new(state),
        changes: Vec::new(),
    }
}

/// The interruption of a call whose nested run paused: the nested interruptions (as their
/// hooks left them: redacted) are its payload.
fn nested_interruption(
    run_id: &RunId,
    call: &ToolCall,
    arguments: &Value,
    child: &PausedRun,
) -> Interruption {
    let inner = child.interruptions();
    let reasons: Vec<String> = inner
        .iter()
        .map(|i| format!("{} ({})", i.reason, preview(&i.tool_name, 64)))
        .collect();
    let mut providers: Vec<&str> = inner.iter().map(|i| i.provider.as_str()).collect();
    providers.sort_unstable();
    providers.dedup();
    Interruption {
        id: format!("int-{}", uuid::Uuid::now_v7()),
        run_id: run_id.clone(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments_hash: arguments_hash(arguments),
        arguments: arguments.clone(),
        reason: format!(
            "the agent behind tool '{}' waits for a person: {}",
            preview(&call.name, 64),
            reasons.join("; ")
        ),
        payload: serde_json::json!({
            "nested_run_id": child.run_id().as_str(),
            "nested": serde_json::to_value(inner).unwrap_or(Value::Null),
        }),
        provider: providers.join(", "),
    }
}

/// A person's decision on a call whose nested run paused, as decisions for every call waiting
/// in the nested run (approve, approve for the run, or reject with the message; an edit of
/// the parent call's arguments would not reach them: refused).
fn nested_decisions(
    child: &PausedRun,
    decision: &Decision,
    interruption_id: &str,
) -> Result<Vec<Decision>, ResumeError> {
    child
        .interruptions()
        .iter()
        .map(|i| {
            let d = match decision.kind() {
                DecisionKind::Approve => Decision::approve(i),
                DecisionKind::ApproveAlways => Decision::approve_always(i),
                DecisionKind::Reject { message } => Decision::reject(i, message.clone()),
                DecisionKind::Edit { .. } => {
                    return Err(ResumeError::EditNested(interruption_id.to_owned()));
                }
            };
            Ok(match decision.decided_by() {
                Some(by) => d.by(by),
                None => d,
            })
        })
        .collect()
}

fn push_changes(into: &mut Vec<(HookEvent, Vec<Change>)>, event: HookEvent, changes: Vec<Change>) {
    if !changes.is_empty() {
        into.push((event, changes));
    }
}

fn execution(
    call: &ToolCall,
    arguments: Value,
    result: String,
    outcome: &ToolOutcome,
    attempts: u32,
    duration: Duration,
) -> ToolExecution {
    ToolExecution {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments,
        result,
        error: outcome.error().map(str::to_owned),
        cancelled: outcome.cancelled().map(str::to_owned),
        attempts,
        duration,
    }
}
