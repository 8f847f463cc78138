//! [`RigHooks`]: a rig [`AgentHook`] that runs each rig prompt as one of our runs.
//!
//! Rig drives its loop and calls a hook at each step; our driver gives a loop the hooks'
//! semantics (secret arguments, retries, redacted errors, records) around calls it makes. The
//! adapter joins the two: each rig run gets a task that runs our driver
//! ([`HookRegistry::run`]) and makes each model and tool call *when rig makes it*: rig's
//! dispatch hands the call to the driver, which runs the before-hooks and answers with what
//! rig should send (rig's patch or skip); rig's outcome hands the answer to the driver, which
//! runs the after-hooks and answers with what the model should see (rig's replacement).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::stream::{FuturesUnordered, StreamExt};
use hooks_core::driver::{ModelCall, Run, RunOptions};
use hooks_core::prelude::ToolError;
use hooks_core::{
    AgentState, HookEvent, HookRegistry, Message, ModelError, ModelResponse, Role, RunError,
    ToolCall,
};
use rig_agent::agent::{
    AgentHook, DispatchAction, DispatchEvent, HookContext, ModelTurnAction, ModelTurnFinished,
    OutcomeAction, OutcomeEvent, RunSettled, RunStart, RunStartAction, SettledOutcome,
};
use rig_agent::tool::{ToolExecutionError, ToolOutput, ToolResult};
use rig_core::completion::{CompletionRequest, CompletionResponse};
use rig_core::effect::{EffectId, EffectKind, Outcome};
use rig_core::error::{ErrorKind, ErrorReport};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::convert;

/// The iteration bound our driver applies under rig by default (rig's `max_turns` bounds the
/// run first in practice).
pub const DEFAULT_MAX_ITERATIONS: u32 = 1_000;

/// Every provider of a [`HookRegistry`] inside rig agents: one rig [`AgentHook`].
///
/// Add it to a rig agent (`AgentBuilder::add_hook`) or to one prompt
/// (`agent.prompt(..).add_hook(..)`); each rig prompt then is one of our runs — one run id,
/// one `invoke_agent` span tree, before/after-invocation around it, before/after-model-call
/// around each completion, before/after-tool-call around each tool call. What holds under
/// rig and what does not is in the [crate docs](crate#what-holds-under-rig).
///
/// ```
/// use std::sync::Arc;
/// use hooks_core::HookRegistry;
/// use hooks_rig::RigHooks;
/// use rig_agent::AgentBuilder;
/// use rig_core::test_utils::{MockCompletionModel, MockTurn};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = Arc::new(HookRegistry::new());
/// let model = MockCompletionModel::from_turns([MockTurn::text("hello")]);
/// let agent = AgentBuilder::new(model)
///     .add_hook(RigHooks::new(registry).agent_id("greeter"))
///     .build();
/// let answer = agent.prompt("hi").await?;
/// assert_eq!(answer.output(), "hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct RigHooks {
    registry: Arc<HookRegistry>,
    config: Arc<Config>,
    /// This adapter's identity in a run (clones share it): several adapters on one agent
    /// each keep their own run.
    id: u64,
    /// True when a provider guards something (a security-band or output-guard priority).
    guarded: bool,
}

#[derive(Clone)]
struct Config {
    agent_id: String,
    model: String,
    max_retries: u32,
    max_iterations: u32,
    unguarded_streams: bool,
    unguarded_documents: bool,
}

impl std::fmt::Debug for RigHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RigHooks")
            .field("providers", &self.registry.names().collect::<Vec<_>>())
            .field("agent_id", &self.config.agent_id)
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

impl RigHooks {
    /// An adapter over `registry`: agent id `"rig-agent"`, model name `"rig"` (what our hooks
    /// and spans name the model; set it with [`model`](Self::model)).
    pub fn new(registry: Arc<HookRegistry>) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let guarded = registry.names().any(|name| {
            registry.get(name).is_some_and(|p| {
                let hooks = p.hooks();
                HookEvent::ALL
                    .iter()
                    .any(|&e| hooks.contains(e) && p.priority_for(e).is_guard())
            })
        });
        Self {
            registry,
            config: Arc::new(Config {
                agent_id: "rig-agent".to_owned(),
                model: "rig".to_owned(),
                max_retries: 2,
                max_iterations: DEFAULT_MAX_ITERATIONS,
                unguarded_streams: false,
                unguarded_documents: false,
            }),
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            guarded,
        }
    }

    fn config(mut self, f: impl FnOnce(&mut Config)) -> Self {
        f(Arc::make_mut(&mut self.config));
        self
    }

    /// The agent id our hooks see (`AgentState::agent_id`; the `invoke_agent` span's name).
    pub fn agent_id(self, id: impl Into<String>) -> Self {
        let id = id.into();
        self.config(|c| c.agent_id = id)
    }

    /// The model name our hooks see (`gen_ai.request.model`).
    pub fn model(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.config(|c| c.model = name)
    }

    /// How many times after-model-call hooks may ask for the reply again (default 2). Under
    /// rig a retry is rig's repeat of a tool-free turn; see the crate docs.
    pub fn max_retries(self, n: u32) -> Self {
        self.config(|c| c.max_retries = n)
    }

    /// Our driver's iteration bound (default [`DEFAULT_MAX_ITERATIONS`]); rig's `max_turns`
    /// bounds the run too.
    pub fn max_iterations(self, n: u32) -> Self {
        self.config(|c| c.max_iterations = n.max(1))
    }

    /// Let rig stream runs although a provider wants to see model output before anyone
    /// else (an output guard). Off by default: rig hands streamed pieces to its consumer
    /// before any hook can change them, so such a run is refused at its start.
    pub fn allow_unguarded_streams(self, on: bool) -> Self {
        self.config(|c| c.unguarded_streams = on)
    }

    /// Let requests that carry rig documents (static or dynamic context) go to the model
    /// although a provider guards: no hook judges documents (they enter no event), so such a
    /// request is refused by default while a provider guards.
    pub fn allow_unguarded_documents(self, on: bool) -> Self {
        self.config(|c| c.unguarded_documents = on)
    }

    /// The registry this adapter dispatches to.
    pub fn registry(&self) -> &Arc<HookRegistry> {
        &self.registry
    }
}

// ---------------------------------------------------------------------------------------
// What the rig side hands the driver task, and what it answers.

/// A completion rig is about to send.
struct ModelCmd {
    request: CompletionRequest,
    /// Turns with tool calls: (as rig holds it, as the hooks left it, in rig's ids).
    overrides: Vec<(Message, Message)>,
    /// What rig sends: a patch, as it is, or nothing (the hooks failed or answered).
    dispatch: oneshot::Sender<ModelDispatch>,
    /// Rig's answer (registered under the dispatch's id).
    outcome: oneshot::Receiver<Result<CompletionResponse, ErrorReport>>,
    /// What the model's answer becomes after the hooks.
    verdict: oneshot::Sender<ModelVerdict>,
}

enum ModelDispatch {
    /// Send this request (`None`: as it is).
    Send(Option<Box<CompletionRequest>>),
    /// A hook answered in the model's place: rig's answer is replaced by this; rig (which
    /// cannot skip a call) sends the request as the hooks left it.
    Answered(Box<ModelResponse>, Option<Box<CompletionRequest>>),
    /// The hooks failed: the run stops with this (already redacted) text.
    Fail(String),
}

enum ModelVerdict {
    /// The reply as the hooks left it.
    Done(Box<ModelResponse>),
    /// The hooks asked for the reply again (their feedback, if any, is in the conversation our
    /// driver holds, which the retry's request carries).
    Retry,
    /// The call failed after the hooks: the run stops with this text.
    Fail(String),
}

/// A tool call rig is about to run.
struct ToolCmd {
    call: ToolCall,
    /// The arguments rig runs the tool with unless patched.
    rig_args: Option<Map<String, Value>>,
    dispatch: oneshot::Sender<ToolDispatch>,
    outcome: oneshot::Receiver<Result<ToolResult, ErrorReport>>,
    verdict: oneshot::Sender<ToolVerdict>,
}

enum ToolDispatch {
    /// Run the tool with these arguments (`None`: as the model sent them).
    Run(Option<Map<String, Value>>),
    /// Do not run it; the model sees this.
    Skip(String),
    /// The hooks failed: the run stops with this text.
    Fail(String),
}

enum ToolVerdict {
    /// What the model sees: the result text, and whether it is an error.
    Result { text: String, failed: bool },
    /// The hooks failed: the run stops with this text.
    Fail(String),
}

enum Cmd {
    /// Boxed: the request is large, and a tool call's command should not carry its size.
    Model(Box<ModelCmd>),
    Tool(ToolCmd),
    /// Rig settled the run: its answer, or that it failed.
    Finish(Result<String, String>),
}

/// What rig's outcome is awaited by, keyed by the dispatch's id.
enum Pending {
    Model(
        oneshot::Sender<Result<CompletionResponse, ErrorReport>>,
        oneshot::Receiver<ModelVerdict>,
    ),
    Tool(
        oneshot::Sender<Result<ToolResult, ErrorReport>>,
        oneshot::Receiver<ToolVerdict>,
    ),
    /// The hooks answered in the model's place: rig's answer is replaced by this.
    Answered(Box<ModelResponse>),
}

/// One rig run's link to its driver task; dropped with rig's run (it lives in the run's
/// scratchpad), which abandons our run.
struct Link {
    tx: mpsc::UnboundedSender<Cmd>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pending: Mutex<HashMap<EffectId, Pending>>,
    /// The hooks asked for the reply again: rig's model-turn verdict repeats the turn.
    retry: std::sync::atomic::AtomicBool,
    /// Why our side stopped the run (already redacted).
    stopped: Mutex<Option<String>>,
    /// The tool-call ids of the current model turn: a repeated one (local models send them)
    /// gets `#2`, `#3`, … as our driver gives it, so a hook's decision about one call never
    /// lands on another.
    turn_ids: Mutex<std::collections::HashSet<String>>,
    /// The tool calls of the current turn as the after-model-call hooks left them, by id:
    /// rig cannot replace a turn with tool calls, so each call is brought to this at its
    /// dispatch (arguments rewritten; a call the hooks removed is skipped).
    /// (`None` for a call they left as it was: it runs as rig dispatches it, with any
    /// earlier rig hook's rewrite.)
    turn_calls: Mutex<Option<HashMap<String, Option<ToolCall>>>>,
    /// Turns with tool calls as the after-model-call hooks left them (rig keeps its own in
    /// its history): every later request carries these instead.
    overrides: Mutex<Vec<(Message, Message)>>,
}

impl Drop for Link {
    fn drop(&mut self) {
        // Rig dropped the run before it settled: our run is abandoned with it.
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The links of one rig run, by adapter: rig keeps one value per type in a run's scratchpad.
#[derive(Clone, Default)]
struct Links(Arc<Mutex<HashMap<u64, Arc<Link>>>>);

impl RigHooks {
    fn link(&self, ctx: &HookContext) -> Option<Arc<Link>> {
        let links = ctx.scratchpad().get::<Links>()?;
        let map = lock(&links.0);
        map.get(&self.id).cloned()
    }

    /// A model turn rig went on from without handing its answer to `on_outcome` (rig's
    /// invalid-tool-call repair or skip): our after-model-call hooks never judged it, so the
    /// run stops. `None` when no completion waits for its answer.
    fn unjudged_turn(link: &Link) -> Option<String> {
        let mut pending = lock(&link.pending);
        let waiting: Vec<EffectId> = pending
            .iter()
            .filter(|(_, p)| matches!(p, Pending::Model(..)))
            .map(|(id, _)| *id)
            .collect();
        if waiting.is_empty() {
            return None;
        }
        let reason = "hooks-rig: rig went on from a model turn without showing it to the hooks \
                      (an invalid tool call repaired or skipped by a rig hook, or a failed call \
                      rig recovered), so no guard judged it; the run stops";
        for id in waiting {
            if let Some(Pending::Model(otx, _)) = pending.remove(&id) {
                let _ = otx.send(Err(ErrorReport::new(ErrorKind::Cancelled, reason)));
            }
        }
        drop(pending);
        Some(Self::stop_reason(link, reason))
    }

    fn stop_reason(link: &Link, text: &str) -> String {
        let mut s = lock(&link.stopped);
        s.get_or_insert_with(|| text.to_owned()).clone()
    }
}

/// A rig error report that stops the run with `reason`.
fn cancelled(reason: impl Into<String>) -> ErrorReport {
    ErrorReport::new(ErrorKind::Cancelled, reason)
}

/// Our conversation's text for a rig error we do not pass on: rig's own error texts may
/// quote what a guard redacts.
const RIG_FAILED: &str = "the rig run ended with an error (rig's error is what the caller got)";

// ---------------------------------------------------------------------------------------
// The driver task.

type Boxed<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

async fn drive(
    registry: Arc<HookRegistry>,
    config: Arc<Config>,
    state: AgentState,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
    started: oneshot::Sender<Result<Vec<Message>, String>>,
) {
    let options = RunOptions::new(config.model.clone())
        .with_max_retries(config.max_retries)
        .with_max_iterations(config.max_iterations);
    let started = Arc::new(Mutex::new(Some(started)));
    let body_started = Arc::clone(&started);
    let outcome = registry
        .run(state, options, move |run| async move {
            if let Some(tx) = lock(&body_started).take() {
                let _ = tx.send(Ok(run.state().messages));
            }
            body(run, &mut rx).await
        })
        .await;
    // Before-invocation refused the run: rig stops it with the (redacted) reason.
    if let (Some(tx), Err(failure)) = (lock(&started).take(), &outcome) {
        let _ = tx.send(Err(failure.error.to_string()));
    }
}

async fn body(run: Run<'_>, rx: &mut mpsc::UnboundedReceiver<Cmd>) -> Result<String, RunError> {
    let mut tools: FuturesUnordered<Boxed<'_>> = FuturesUnordered::new();
    let mut in_iteration = false;
    let mut first_error: Option<RunError> = None;
    // A command the model call took but did not use (rig settled instead of asking again).
    let parked: Arc<Mutex<Option<Cmd>>> = Arc::new(Mutex::new(None));
    loop {
        let parked_cmd = lock(&parked).take();
        let cmd = match parked_cmd {
            Some(cmd) => Some(cmd),
            None => {
                tokio::select! {
                    cmd = rx.recv() => cmd,
                    Some(()) = tools.next(), if !tools.is_empty() => continue,
                }
            }
        };
        let Some(cmd) = cmd else {
            // Rig went away without settling; the task is being dropped with it.
            return Err(RunError::Model {
                error: ModelError::Other("the rig run was dropped".into()),
                attempts: 1,
            });
        };
        match cmd {
            Cmd::Tool(t) => tools.push(Box::pin(tool(run.clone(), t))),
            Cmd::Model(m) => {
                while tools.next().await.is_some() {}
                if in_iteration {
                    run.end_iteration().await;
                }
                if let Err(e) = run.start_iteration().await {
                    in_iteration = false;
                    let _ = m.dispatch.send(ModelDispatch::Fail(e.to_string()));
                    first_error.get_or_insert(e);
                    continue;
                }
                in_iteration = true;
                if let Err(e) = model(&run, m, rx, &parked).await {
                    first_error.get_or_insert(e);
                }
            }
            Cmd::Finish(result) => {
                while tools.next().await.is_some() {}
                if in_iteration {
                    run.end_iteration().await;
                }
                return match (first_error, result) {
                    (Some(e), _) => Err(e),
                    (None, Ok(answer)) => Ok(answer),
                    (None, Err(text)) => Err(RunError::Model {
                        error: ModelError::Other(text),
                        attempts: 1,
                    }),
                };
            }
        }
    }
}

/// One model call of rig's (and the retries our hooks ask for) through the driver.
async fn model(
    run: &Run<'_>,
    first: Box<ModelCmd>,
    rx: &mut mpsc::UnboundedReceiver<Cmd>,
    parked: &Arc<Mutex<Option<Cmd>>>,
) -> Result<(), RunError> {
    // Rig's conversation is the one the hooks see: it holds what rig added (its preamble, a
    // retry's feedback, memory).
    let mut messages = convert::request_to_hooks(&first.request);
    for m in messages.iter_mut().filter(|m| !m.tool_calls.is_empty()) {
        // The same turn (ids repeat across turns with local models: the whole turn decides).
        if let Some((_, mine)) = first.overrides.iter().find(|(rig, _)| rig == m) {
            *m = mine.clone();
        }
    }
    run.with_state(|s| s.messages = messages);
    let current: Mutex<Option<ModelCmd>> = Mutex::new(Some(*first));
    let verdict: Mutex<Option<oneshot::Sender<ModelVerdict>>> = Mutex::new(None);
    let called = std::sync::atomic::AtomicBool::new(false);
    let rx = tokio::sync::Mutex::new(rx);
    let result = run
        .model_call(|call: ModelCall| {
            let current = &current;
            let verdict = &verdict;
            let called = &called;
            let rx = &rx;
            async move {
                let was_called = called.swap(true, std::sync::atomic::Ordering::Relaxed);
                let initial = if was_called {
                    None
                } else {
                    lock(current).take()
                };
                let cmd = match initial {
                    Some(cmd) => cmd,
                    None => {
                        // A retry: tell rig's pending outcome, then wait for rig's next call.
                        if let Some(tx) = lock(verdict).take() {
                            let _ = tx.send(ModelVerdict::Retry);
                        }
                        if lock(parked).is_some() {
                            // Rig settled already: no call comes again.
                            return Err(ModelError::Other(
                                "rig did not ask the model again".into(),
                            ));
                        }
                        match rx.lock().await.recv().await {
                            Some(Cmd::Model(next)) => *next,
                            Some(other) => {
                                *lock(parked) = Some(other);
                                return Err(ModelError::Other(
                                    "rig did not ask the model again".into(),
                                ));
                            }
                            None => {
                                return Err(ModelError::Other("the rig run was dropped".into()));
                            }
                        }
                    }
                };
                let ModelCmd {
                    request,
                    dispatch,
                    outcome,
                    verdict: v,
                    overrides: _,
                } = cmd;
                *lock(verdict) = Some(v);
                let patched = patch_request(&request, &call);
                let _ = dispatch.send(ModelDispatch::Send(patched.map(Box::new)));
                match outcome.await {
                    Ok(Ok(response)) => Ok(convert::response_to_hooks(&response)),
                    Ok(Err(report)) => Err(model_error(&report)),
                    Err(_) => Err(ModelError::Other(
                        "rig did not hand over the model's answer".into(),
                    )),
                }
            }
        })
        .await;
    let unused = lock(&current).take();
    match unused {
        // The hooks failed or answered before any call: rig's dispatch hears it.
        Some(cmd) => {
            let reply = match &result {
                Ok(response) => {
                    // The conversation as the before-model-call hooks left it (the state
                    // keeps their rewrite; the answer was appended after it).
                    let mut sent = run.state().messages;
                    if sent.last() == Some(&response.message) {
                        sent.pop();
                    }
                    let patched = patch_messages(&cmd.request, &sent);
                    ModelDispatch::Answered(Box::new(response.clone()), patched.map(Box::new))
                }
                Err(e) => ModelDispatch::Fail(e.to_string()),
            };
            let _ = cmd.dispatch.send(reply);
        }
        None => {
            if let Some(tx) = lock(&verdict).take() {
                let _ = tx.send(match &result {
                    Ok(response) => ModelVerdict::Done(Box::new(response.clone())),
                    Err(e) => ModelVerdict::Fail(e.to_string()),
                });
            }
        }
    }
    result.map(drop)
}

/// Rig's request as the before-model-call hooks left it (`None`: unchanged).
fn patch_request(request: &CompletionRequest, call: &ModelCall) -> Option<CompletionRequest> {
    let mut out = patch_messages(request, &call.messages);
    if let Some(t) = call.options.temperature
        && request.temperature != Some(f64::from(t))
    {
        out.get_or_insert_with(|| request.clone()).temperature = Some(f64::from(t));
    }
    if let Some(n) = call.options.max_tokens
        && request.max_tokens != Some(u64::from(n))
    {
        out.get_or_insert_with(|| request.clone()).max_tokens = Some(u64::from(n));
    }
    out
}

/// Rig's request with the conversation our hooks left (`None`: unchanged).
fn patch_messages(request: &CompletionRequest, messages: &[Message]) -> Option<CompletionRequest> {
    let mut out: Option<CompletionRequest> = None;
    match convert::merge_messages(&request.chat_history, messages) {
        Ok(Some(history)) => {
            out.get_or_insert_with(|| request.clone()).chat_history = history;
        }
        Ok(None) => {}
        Err(e) => {
            // A conversation rig cannot hold: ours, as plain text messages, rather than the
            // unredacted original.
            tracing::warn!(target: "hooks::rig", "{e}; the request carries the hooks' messages as text");
            out.get_or_insert_with(|| request.clone()).chat_history = messages
                .iter()
                .map(|m| match m.role {
                    Role::System => rig_core::completion::Message::system(m.content.clone()),
                    Role::Assistant => rig_core::completion::Message::assistant(m.content.clone()),
                    _ => rig_core::completion::Message::user(m.content.clone()),
                })
                .collect();
        }
    }
    out
}

fn model_error(report: &ErrorReport) -> ModelError {
    ModelError::Other(report.message.clone())
}

/// One tool call of rig's through the driver.
async fn tool(run: Run<'_>, t: ToolCmd) {
    let ToolCmd {
        call,
        rig_args,
        dispatch,
        outcome,
        verdict,
    } = t;
    let dispatch = Mutex::new(Some(dispatch));
    let outcome = tokio::sync::Mutex::new(Some(outcome));
    // Rig runs a tool once: a retry the hooks ask for gets the first attempt's answer.
    let first: tokio::sync::Mutex<Option<Result<String, ToolError>>> =
        tokio::sync::Mutex::new(None);
    let original = rig_args;
    let record = run
        .tool_call(&call, |inv| {
            let dispatch = &dispatch;
            let outcome = &outcome;
            let first = &first;
            let original = &original;
            async move {
                let mut done = first.lock().await;
                if let Some(previous) = done.as_ref() {
                    tracing::warn!(target: "hooks::rig", tool_call_id = inv.call_id.as_str(), "a hook asked to run the tool again; rig runs a tool once, so the first attempt's result stands");
                    return previous.clone();
                }
                let args = (original.as_ref() != Some(&inv.arguments)).then(|| inv.arguments.clone());
                if let Some(tx) = lock(dispatch).take() {
                    let _ = tx.send(ToolDispatch::Run(args));
                }
                let rx = outcome.lock().await.take();
                let answer = match rx {
                    Some(rx) => match rx.await {
                        Ok(Ok(result)) => tool_answer(&result),
                        Ok(Err(report)) => Err(ToolError::new(report.message)),
                        Err(_) => Err(ToolError::new("rig did not hand over the tool's result")),
                    },
                    None => Err(ToolError::new("rig did not hand over the tool's result")),
                };
                *done = Some(answer.clone());
                answer
            }
        })
        .await;
    let unused = lock(&dispatch).take();
    match (unused, record) {
        // The tool did not run: cancelled, interrupted (our run cannot pause under rig, so
        // an interruption cancels), refused arguments.
        (Some(tx), Ok(record)) => {
            let _ = tx.send(ToolDispatch::Skip(record.result().to_owned()));
        }
        (Some(tx), Err(e)) => {
            let _ = tx.send(ToolDispatch::Fail(e.to_string()));
        }
        (None, Ok(record)) => {
            let failed = record.execution.error.is_some();
            let _ = verdict.send(ToolVerdict::Result {
                text: record.result().to_owned(),
                failed,
            });
        }
        (None, Err(e)) => {
            let _ = verdict.send(ToolVerdict::Fail(e.to_string()));
        }
    }
}

/// A rig tool result as our driver takes it: success text, or the error the model sees.
fn tool_answer(result: &ToolResult) -> Result<String, ToolError> {
    let text = result.output().render();
    if result.is_success() || result.is_skipped() {
        Ok(text)
    } else {
        let message = result.error().or(result.refusal()).map_or(text, |e| {
            let m = e.message();
            if m.is_empty() {
                e.model_output().render()
            } else {
                m.to_owned()
            }
        });
        Err(ToolError::new(message))
    }
}

// ---------------------------------------------------------------------------------------
// The rig side.

impl RigHooks {
    async fn start(&self, ctx: &HookContext, event: RunStart<'_>) -> RunStartAction {
        if ctx.is_streaming() && !self.config.unguarded_streams {
            let guarded = !self.registry.streams_live()
                || self.registry.has_subscribers(HookEvent::ModelDelta);
            if guarded {
                return RunStartAction::stop(
                    "hooks-rig: a provider guards model output, and rig hands streamed pieces \
                     to the consumer before any hook can change them; use rig's prompt (not \
                     stream_prompt), or RigHooks::allow_unguarded_streams(true) to stream \
                     unguarded",
                );
            }
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return RunStartAction::stop("hooks-rig needs a tokio runtime to run its hooks");
        };
        let mut history = event.history.to_vec();
        history.push(event.prompt.clone());
        let mut state = AgentState::new(self.config.agent_id.clone());
        state.messages = convert::messages_to_hooks(&history);
        state.metadata.insert(
            "rig.run_id".to_owned(),
            Value::String(ctx.run_id().to_string()),
        );
        let before = state.messages.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let (started_tx, started_rx) = oneshot::channel();
        let task = handle.spawn(drive(
            Arc::clone(&self.registry),
            Arc::clone(&self.config),
            state,
            rx,
            started_tx,
        ));
        let link = Arc::new(Link {
            tx,
            task: Mutex::new(Some(task)),
            pending: Mutex::new(HashMap::new()),
            retry: std::sync::atomic::AtomicBool::new(false),
            stopped: Mutex::new(None),
            turn_ids: Mutex::new(std::collections::HashSet::new()),
            turn_calls: Mutex::new(None),
            overrides: Mutex::new(Vec::new()),
        });
        let links = ctx.scratchpad().update::<Links, _>(|l| l.clone());
        if lock(&links.0).insert(self.id, Arc::clone(&link)).is_some() {
            return RunStartAction::stop(
                "hooks-rig: the same RigHooks was added twice to this run (to the agent and to \
                 the prompt?); add it once",
            );
        }
        match started_rx.await {
            Ok(Ok(after)) => {
                if after == before {
                    return RunStartAction::continue_run();
                }
                // The hooks' prompt: what they left of its message (the last one).
                match (before.len() == after.len(), after.last(), history.last()) {
                    (true, Some(mine), Some(rig)) => {
                        match convert::merge_messages(
                            std::slice::from_ref(rig),
                            std::slice::from_ref(mine),
                        ) {
                            Ok(Some(mut m)) if m.len() == 1 => RunStartAction::rewrite(m.remove(0)),
                            Ok(_) => RunStartAction::continue_run(),
                            Err(e) => RunStartAction::stop(format!("hooks-rig: {e}")),
                        }
                    }
                    // Rig takes a new prompt only, never a new history: a hook that changed
                    // the history stops the run rather than have rig send what it removed.
                    _ => RunStartAction::stop(
                        "hooks-rig: a before-invocation hook changed the conversation's history, \
                         which rig cannot take at the start of a run",
                    ),
                }
            }
            Ok(Err(reason)) => RunStartAction::stop(Self::stop_reason(&link, &reason)),
            Err(_) => RunStartAction::stop("hooks-rig: the run's hooks ended before it started"),
        }
    }

    async fn dispatch(&self, ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        let Some(link) = self.link(ctx) else {
            return DispatchAction::proceed();
        };
        if matches!(
            event.kind,
            EffectKind::Completion { .. } | EffectKind::ToolCall { .. }
        ) && let Some(reason) = Self::unjudged_turn(&link)
        {
            return DispatchAction::stop(reason);
        }
        match event.kind {
            EffectKind::Completion { request, stream } => {
                if carries_documents(request) && self.guarded && !self.config.unguarded_documents {
                    return DispatchAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the request carries documents (rig's static or dynamic context, \
                         or a document part of a message), which no hook judges, while a \
                         provider guards; leave them out, or \
                         RigHooks::allow_unguarded_documents(true) to send them",
                    ));
                }
                let (dtx, drx) = oneshot::channel();
                let (otx, orx) = oneshot::channel();
                let (vtx, vrx) = oneshot::channel();
                {
                    let mut pending = lock(&link.pending);
                    // Rig asks the model again only once every tool call of the turn was
                    // answered: a call still waiting was denied by a later rig hook and will
                    // never be, so it stops waiting (its tool call ends as not run).
                    pending.retain(|_, p| !matches!(p, Pending::Tool(..)));
                    pending.insert(event.id, Pending::Model(otx, vrx));
                }
                link.retry
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                lock(&link.turn_ids).clear();
                *lock(&link.turn_calls) = None;
                let cmd = Cmd::Model(Box::new(ModelCmd {
                    request: request.clone(),
                    overrides: lock(&link.overrides).clone(),
                    dispatch: dtx,
                    outcome: orx,
                    verdict: vtx,
                }));
                if link.tx.send(cmd).is_err() {
                    lock(&link.pending).remove(&event.id);
                    return DispatchAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the run's hooks ended",
                    ));
                }
                match drx.await {
                    Ok(ModelDispatch::Send(None)) => DispatchAction::proceed(),
                    Ok(ModelDispatch::Send(Some(request))) => {
                        DispatchAction::patch(EffectKind::Completion {
                            request: *request,
                            stream: *stream,
                        })
                    }
                    Ok(ModelDispatch::Answered(response, patched)) => {
                        // Rig cannot skip a completion: it makes the call (with the request as
                        // the hooks left it), and its answer is replaced by the hooks'.
                        lock(&link.pending).insert(event.id, Pending::Answered(response));
                        match patched {
                            None => DispatchAction::proceed(),
                            Some(request) => DispatchAction::patch(EffectKind::Completion {
                                request: *request,
                                stream: *stream,
                            }),
                        }
                    }
                    Ok(ModelDispatch::Fail(reason)) => {
                        lock(&link.pending).remove(&event.id);
                        DispatchAction::deny(cancelled(Self::stop_reason(&link, &reason)))
                    }
                    Err(_) => {
                        lock(&link.pending).remove(&event.id);
                        DispatchAction::deny(cancelled(Self::stop_reason(
                            &link,
                            "hooks-rig: the run's hooks ended",
                        )))
                    }
                }
            }
            EffectKind::ToolCall { name, args } => {
                let id = event.call_id.map_or_else(
                    || format!("rig_effect_{}", event.id.as_u64()),
                    |c| c.wire().into_owned(),
                );
                // The call as the after-model-call hooks left it.
                let hooks_call = lock(&link.turn_calls)
                    .as_ref()
                    .map(|calls| calls.get(&id).cloned());
                let arguments = match hooks_call {
                    Some(None) => {
                        return DispatchAction::skip(
                            "this tool call was removed by a hook after the model replied",
                        );
                    }
                    Some(Some(Some(c))) if c.name == *name => c.arguments,
                    Some(Some(Some(_))) => {
                        return DispatchAction::skip(
                            "a hook changed this tool call's tool after the model replied",
                        );
                    }
                    Some(Some(None)) | None => convert::arguments_from_text(args),
                };
                let call = ToolCall::new(id, name.clone(), arguments);
                let (dtx, drx) = oneshot::channel();
                let (otx, orx) = oneshot::channel();
                let (vtx, vrx) = oneshot::channel();
                lock(&link.pending).insert(event.id, Pending::Tool(otx, vrx));
                let rig_args = match convert::arguments_from_text(args) {
                    Value::Object(m) => Some(m),
                    _ => None,
                };
                let cmd = Cmd::Tool(ToolCmd {
                    call,
                    rig_args,
                    dispatch: dtx,
                    outcome: orx,
                    verdict: vtx,
                });
                if link.tx.send(cmd).is_err() {
                    lock(&link.pending).remove(&event.id);
                    return DispatchAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the run's hooks ended",
                    ));
                }
                let reply = drx.await;
                if !matches!(reply, Ok(ToolDispatch::Run(_))) {
                    lock(&link.pending).remove(&event.id);
                }
                match reply {
                    Ok(ToolDispatch::Run(None)) => DispatchAction::proceed(),
                    Ok(ToolDispatch::Run(Some(args))) => {
                        DispatchAction::rewrite_tool_args(event.kind, Value::Object(args))
                    }
                    Ok(ToolDispatch::Skip(reason)) => DispatchAction::skip(reason),
                    Ok(ToolDispatch::Fail(reason)) => {
                        DispatchAction::stop(Self::stop_reason(&link, &reason))
                    }
                    Err(_) => DispatchAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the run's hooks ended",
                    )),
                }
            }
            _ => DispatchAction::proceed(),
        }
    }

    async fn outcome(&self, ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        let Some(link) = self.link(ctx) else {
            return OutcomeAction::proceed();
        };
        let Some(pending) = lock(&link.pending).remove(&event.id) else {
            return OutcomeAction::proceed();
        };
        match pending {
            Pending::Answered(response) => match event.completion() {
                Some(rig) => replace_completion(&link, rig, &response),
                None => OutcomeAction::proceed(),
            },
            Pending::Model(otx, vrx) => {
                let answer = match event.outcome {
                    Ok(Outcome::Completion(r)) => Ok(r.clone()),
                    Ok(_) => Err(ErrorReport::new(
                        ErrorKind::Internal,
                        "a completion answered with another kind",
                    )),
                    Err(report) => Err(report.clone()),
                };
                let rig = answer.as_ref().ok().cloned();
                let _ = otx.send(answer);
                match vrx.await {
                    Ok(ModelVerdict::Done(response)) => match &rig {
                        Some(rig) => replace_completion(&link, rig, &response),
                        // Rig hands its hooks successful completions only; anything else
                        // has no reply to replace: fail closed.
                        None => OutcomeAction::stop(Self::stop_reason(
                            &link,
                            "hooks-rig: a completion outcome without a reply",
                        )),
                    },
                    Ok(ModelVerdict::Retry) => {
                        link.retry.store(true, std::sync::atomic::Ordering::Relaxed);
                        OutcomeAction::proceed()
                    }
                    Ok(ModelVerdict::Fail(reason)) => {
                        OutcomeAction::stop(Self::stop_reason(&link, &reason))
                    }
                    Err(_) => OutcomeAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the run's hooks ended",
                    )),
                }
            }
            Pending::Tool(otx, vrx) => {
                let answer = match event.outcome {
                    Ok(Outcome::ToolResult { result }) => Ok(result.clone()),
                    Ok(_) => Err(ErrorReport::new(
                        ErrorKind::Internal,
                        "a tool call answered with another kind",
                    )),
                    Err(report) => Err(report.clone()),
                };
                let _ = otx.send(answer);
                match vrx.await {
                    Ok(ToolVerdict::Result { text, failed }) => {
                        tool_replacement(event.outcome, text, failed)
                    }
                    Ok(ToolVerdict::Fail(reason)) => {
                        OutcomeAction::stop(Self::stop_reason(&link, &reason))
                    }
                    Err(_) => OutcomeAction::stop(Self::stop_reason(
                        &link,
                        "hooks-rig: the run's hooks ended",
                    )),
                }
            }
        }
    }

    async fn settled(&self, ctx: &HookContext, event: RunSettled<'_>) {
        let Some(link) = self.link(ctx) else {
            return;
        };
        {
            let mut pending = lock(&link.pending);
            if let SettledOutcome::Error(text) = event.outcome {
                // A model call that failed (rig shows no failed call to its hooks): our
                // after-model-call hooks see rig's error (a guard redacts it like any).
                for (_, p) in pending.drain() {
                    if let Pending::Model(otx, _) = p {
                        let _ = otx.send(Err(ErrorReport::new(ErrorKind::Other, text)));
                    }
                }
            }
            pending.clear();
        }
        let result = match event.outcome {
            SettledOutcome::Response(r) => Ok(r.output()),
            SettledOutcome::Error(_) => Err(lock(&link.stopped)
                .clone()
                .unwrap_or_else(|| RIG_FAILED.to_owned())),
        };
        let _ = link.tx.send(Cmd::Finish(result));
        let task = lock(&link.task).take();
        if let Some(task) = task {
            // After-invocation hooks (telemetry, logs) are done when rig's prompt returns.
            let _ = task.await;
        }
    }
}

/// True when a request carries documents: rig's context documents, or a document part of a
/// message (neither enters one of our events, so no hook judges them).
fn carries_documents(request: &CompletionRequest) -> bool {
    !request.documents.is_empty()
        || request.chat_history.iter().any(|m| match m {
            rig_core::completion::Message::User { content } => content
                .iter()
                .any(|p| matches!(p, rig_core::message::UserContent::Document(_))),
            _ => false,
        })
}

/// Rig's completion replaced by the hooks' reply, where they changed it.
fn replace_completion(
    link: &Link,
    rig: &CompletionResponse,
    ours: &ModelResponse,
) -> OutcomeAction {
    let has_calls = rig
        .choice
        .iter()
        .any(|b| matches!(b, rig_core::completion::AssistantContent::ToolCall(_)));
    if has_calls || !ours.message.tool_calls.is_empty() {
        // Rig replaces no turn with tool calls: each call is brought to the hooks' version at
        // its dispatch; the turn's text stays rig's (every later request is judged again).
        // What the hooks changed, against rig's reply with ids as our driver gives them.
        let mut before = convert::response_to_hooks(rig).message;
        let mut seen = std::collections::HashSet::new();
        for (i, c) in before.tool_calls.iter_mut().enumerate() {
            let base = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id.clone()
            };
            c.id = hooks_core::text::unique(&base, |n| seen.contains(n));
            seen.insert(c.id.clone());
        }
        let changed =
            before.content != ours.message.content || before.tool_calls != ours.message.tool_calls;
        *lock(&link.turn_calls) = Some(
            ours.message
                .tool_calls
                .iter()
                .map(|c| {
                    let same = before.tool_calls.iter().any(|b| b == c);
                    (c.id.clone(), (!same).then(|| c.clone()))
                })
                .collect(),
        );
        // Later requests carry the hooks' version of this turn, in rig's ids: rig's calls in
        // their order, each as the hooks left it; a call they removed keeps its place (rig
        // answered it as skipped) with no arguments.
        if changed {
            let original = convert::response_to_hooks(rig).message;
            let mut mine = ours.message.clone();
            mine.tool_calls = original
                .tool_calls
                .iter()
                .zip(&before.tool_calls)
                .map(|(rig_call, keyed)| {
                    match ours.message.tool_calls.iter().find(|c| c.id == keyed.id) {
                        Some(c) => {
                            ToolCall::new(rig_call.id.clone(), c.name.clone(), c.arguments.clone())
                        }
                        None => ToolCall::new(
                            rig_call.id.clone(),
                            rig_call.name.clone(),
                            Value::Object(Map::new()),
                        ),
                    }
                })
                .collect();
            lock(&link.overrides).push((original, mine));
        }
        if !has_calls {
            return OutcomeAction::stop(RigHooks::stop_reason(
                link,
                "hooks-rig: a hook added tool calls to a reply without any, which rig cannot take",
            ));
        }
        return OutcomeAction::proceed();
    }
    match convert::merge_response(rig, ours) {
        Ok(None) => OutcomeAction::proceed(),
        Ok(Some(r)) => OutcomeAction::replace(Ok(Outcome::Completion(r))),
        Err(e) => OutcomeAction::stop(RigHooks::stop_reason(link, &format!("hooks-rig: {e}"))),
    }
}

/// What the model sees of a tool call: rig's result where the hooks left it as it was, the
/// hooks' text (with rig's disposition; a failure's error message replaced too, so rig's
/// records hold no more than the model sees) where they changed it.
fn tool_replacement(
    outcome: &Result<Outcome, ErrorReport>,
    text: String,
    failed: bool,
) -> OutcomeAction {
    match outcome {
        Ok(Outcome::ToolResult { result }) => {
            let same = tool_answer(result)
                .map_or_else(|e| failed && e.message() == text, |t| !failed && t == text);
            if same {
                return OutcomeAction::proceed();
            }
            let replaced = match result.error().or(result.refusal()) {
                Some(e) => ToolResult::failed(
                    ToolExecutionError::new(e.kind(), text.clone())
                        .with_model_output(ToolOutput::text(text)),
                ),
                None if failed => ToolResult::failed(ToolExecutionError::new(
                    rig_agent::tool::ToolErrorKind::Other,
                    text,
                )),
                None => result.clone().with_output(ToolOutput::text(text)),
            };
            OutcomeAction::replace(Ok(Outcome::ToolResult { result: replaced }))
        }
        // Rig's call failed outright: the model sees what the hooks left of it.
        Err(report) => {
            if report.kind == ErrorKind::Cancelled {
                return OutcomeAction::proceed();
            }
            let mut r = report.clone();
            r.message = text;
            OutcomeAction::replace(Err(r))
        }
        Ok(_) => OutcomeAction::proceed(),
    }
}

impl AgentHook for RigHooks {
    fn name(&self) -> Option<String> {
        Some(format!(
            "hooks-rig[{}]",
            self.registry.names().collect::<Vec<_>>().join(",")
        ))
    }

    async fn on_run_start(&self, ctx: &HookContext, event: RunStart<'_>) -> RunStartAction {
        self.start(ctx, event).await
    }

    async fn on_run_settled(&self, ctx: &HookContext, event: RunSettled<'_>) {
        self.settled(ctx, event).await;
    }

    async fn on_model_turn_finished(
        &self,
        ctx: &HookContext,
        event: ModelTurnFinished<'_>,
    ) -> ModelTurnAction {
        let Some(link) = self.link(ctx) else {
            return ModelTurnAction::continue_run();
        };
        let retry = link.retry.swap(false, std::sync::atomic::Ordering::Relaxed);
        match retry {
            false => ModelTurnAction::continue_run(),
            true if event
                .content
                .iter()
                .any(|b| matches!(b, rig_core::completion::AssistantContent::ToolCall(_))) =>
            {
                // Rig never retries a turn with tool calls (its history would hold unanswered
                // calls): the run stops rather than run calls the hooks rejected.
                ModelTurnAction::stop(Self::stop_reason(
                    &link,
                    "hooks-rig: a hook asked for the reply again, and rig cannot retry a turn with tool calls",
                ))
            }
            // Rig discards the rejected reply (its feedback retry would keep it in the
            // history); our feedback reaches the model in the retry's request, which carries
            // the conversation as our driver holds it.
            true => ModelTurnAction::repeat(),
        }
    }

    async fn on_dispatch(&self, ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        self.dispatch(ctx, event).await
    }

    async fn on_outcome(&self, ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        self.outcome(ctx, event).await
    }
}
