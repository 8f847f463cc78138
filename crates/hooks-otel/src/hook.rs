//! `TelemetryHook`: one span tree per run, GenAI semantic conventions, and metrics.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use hooks_core::observe::{ModelCallTracer, RunTrace, RunTracer};
use hooks_core::text::{json_preview, preview};
use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Extensions, HookError, HookPriority, HookProvider,
    HookSet, IterationEvent, ModelError, ModelResponse, RunId, RunLocal, async_trait,
};
use opentelemetry::global::{BoxedSpan, BoxedTracer};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Array, Context, InstrumentationScope, KeyValue, StringValue, Value};

use crate::builder::TelemetryHookBuilder;
use crate::metrics::Instruments;
use crate::semconv::*;
use crate::spans::{RunSpans, close_dangling, end_run};

/// The instrumentation scope's name.
pub const SCOPE: &str = "hooks";

/// Traces and measures agent runs with OpenTelemetry.
///
/// Per run: `invoke_agent {agent}` is the root; `iteration {n}` spans are its children;
/// `chat {model}` and `execute_tool {tool}` spans are children of their iteration. Spans are
/// parented explicitly through [`Context`] and kept per run id and tool call id, so
/// concurrent runs and parallel calls of one tool never mix. Cancelled calls end their span
/// (`hooks.cancelled = true`); whatever is still open when a run ends is ended with it.
///
/// Arguments and results are recorded (`gen_ai.tool.call.arguments` / `.result`, truncated)
/// only with [`with_content_capture`](TelemetryHookBuilder::with_content_capture).
///
/// Metrics: `gen_ai.client.operation.duration`, `gen_ai.client.token.usage`,
/// `hooks.agent.invocations`, `hooks.agent.iterations`, `hooks.tool.calls`, `hooks.tool.errors`
/// and `hooks.tool.duration`.
///
/// ```
/// use hooks_otel::TelemetryHook;
/// // Uses the global tracer and meter providers (no-ops until the program installs some).
/// let hook = TelemetryHook::builder().with_agent_name("support-bot").build();
/// # let _ = hook;
/// ```
pub struct TelemetryHook {
    pub(crate) tracer: Arc<BoxedTracer>,
    pub(crate) instruments: Arc<Instruments>,
    pub(crate) runs: Arc<RunLocal<RunSpans>>,
    /// Paused runs being resumed: the root span of the paused segment, which the resumed
    /// segment's root continues (as its parent, in the same trace) and links to.
    pub(crate) resumed_from: RunLocal<opentelemetry::trace::SpanContext>,
    /// Set once the first run found no room, so the warning is logged once.
    pub(crate) full_warned: std::sync::atomic::AtomicBool,
    pub(crate) options: Options,
}

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) agent_name: Option<String>,
    pub(crate) capture_content: bool,
    pub(crate) max_content_chars: usize,
    pub(crate) priority: HookPriority,
    pub(crate) max_runs: usize,
    pub(crate) name: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            agent_name: None,
            capture_content: false,
            max_content_chars: 1_000,
            priority: HookPriority::OBSERVABILITY_DEFAULT,
            max_runs: hooks_core::DEFAULT_MAX_RUNS,
            name: None,
        }
    }
}

impl fmt::Debug for TelemetryHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryHook")
            .field("options", &self.options)
            .field("open_runs", &self.open_runs())
            .finish_non_exhaustive()
    }
}

pub(crate) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Default for TelemetryHook {
    fn default() -> Self {
        Self::new()
    }
}

impl TelemetryHook {
    /// A hook on the global tracer and meter providers, with the defaults.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder (global providers unless others are given).
    pub fn builder() -> TelemetryHookBuilder {
        TelemetryHookBuilder {
            tracer: None,
            meter: None,
            options: Options::default(),
        }
    }

    /// How many runs have spans open (for diagnostics and tests: 0 when every run has ended).
    pub fn open_runs(&self) -> usize {
        self.runs.len()
    }

    /// The parent for a new span of `run`: its iteration, else its invocation; `None` when
    /// the run is not traced (it never started here, or found no room).
    fn parent_of(&self, run: &RunId) -> Option<Context> {
        self.runs.get(run, |r| r.parent().clone())
    }

    /// Opens a run's root span.
    fn start_run(&self, state: &hooks_core::AgentState, extensions: &Extensions) {
        let name = self
            .options
            .agent_name
            .clone()
            .unwrap_or_else(|| state.agent_id.clone());
        let mut builder = self
            .tracer
            .span_builder(format!("{OP_INVOKE_AGENT} {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(GEN_AI_OPERATION_NAME, OP_INVOKE_AGENT),
                KeyValue::new(GEN_AI_AGENT_ID, state.agent_id.clone()),
                KeyValue::new(GEN_AI_AGENT_NAME, name),
                KeyValue::new(GEN_AI_CONVERSATION_ID, state.run_id.to_string()),
            ]);
        // A nested run (an agent run as a tool) is a child of the calling run's execute_tool
        // span, in the same trace.
        let caller = state.parent.as_deref().and_then(|p| {
            let attrs = builder.attributes.get_or_insert_with(Vec::new);
            attrs.push(KeyValue::new(HOOKS_DEPTH, i64::from(p.depth)));
            attrs.push(KeyValue::new(HOOKS_PARENT_RUN_ID, p.run_id.to_string()));
            self.runs
                .get(&p.run_id, |r| {
                    r.tools
                        .get(&p.tool_call_id)
                        .map(|(span, _)| span.span_context().clone())
                })
                .flatten()
                .filter(opentelemetry::trace::SpanContext::is_valid)
        });
        // A resumed run continues the paused one's trace: its root is a child of the paused
        // root (or, nested, of the calling run's new execute_tool span), and links to it.
        let parent = match (self.resumed_from.end(&state.run_id), caller) {
            (Some(paused), caller) => {
                builder = builder.with_links(vec![opentelemetry::trace::Link::with_context(
                    paused.clone(),
                )]);
                builder
                    .attributes
                    .get_or_insert_with(Vec::new)
                    .push(KeyValue::new(HOOKS_RESUMED, true));
                Context::new().with_remote_span_context(caller.unwrap_or(paused))
            }
            (None, Some(caller)) => Context::new().with_remote_span_context(caller),
            (None, None) => Context::new(),
        };
        let span = builder.start_with_context(&*self.tracer, &parent);
        let run = RunSpans {
            invocation: Context::new().with_span(span),
            iteration: None,
            model: None,
            tools: HashMap::new(),
            first_piece: None,
            pieces: 0,
        };
        // Hooks and tools of this run find the run's tracer in its extensions (a judge's own
        // model call, a tool's traceparent).
        extensions.insert(RunTrace::new(OtelRunTracer {
            tracer: self.tracer.clone(),
            instruments: self.instruments.clone(),
            runs: self.runs.clone(),
            run_id: state.run_id.clone(),
        }));
        match self.runs.insert(&state.run_id, run) {
            Ok(None) => {}
            // A run id reused while its first run is open: end the old tree rather than leak it.
            Ok(Some(old)) => end_run(old, "run_id_reused"),
            // No room: this run is not traced (its root span ends at once, marked), and that is
            // said once rather than per run.
            Err((full, run)) => {
                if !self
                    .full_warned
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    tracing::warn!(target: "hooks::otel", "{full}; runs past the bound are not traced");
                }
                run.invocation
                    .span()
                    .set_attribute(KeyValue::new(HOOKS_CLOSED_BY, "no_room"));
                end_run(run, "no_room");
            }
        }
    }

    fn content(&self, text: &str) -> String {
        preview(text, self.options.max_content_chars).into_owned()
    }
}

#[async_trait]
impl HookProvider for TelemetryHook {
    fn name(&self) -> &str {
        self.options.name.as_deref().unwrap_or("TelemetryHook")
    }

    fn priority(&self) -> HookPriority {
        self.options.priority
    }

    fn hooks(&self) -> HookSet {
        HookSet::INVOCATION
            | HookSet::ITERATION
            | HookSet::MODEL_CALL
            | HookSet::TOOL_CALL
            | HookSet::RUN_ABANDONED
            | HookSet::MODEL_DELTA
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.resumed_from.end(run_id);
        if let Some(run) = self.runs.end(run_id) {
            run.invocation
                .span()
                .set_status(Status::error("the run was dropped before it ended"));
            run.invocation
                .span()
                .set_attribute(KeyValue::new(ERROR_TYPE, "abandoned"));
            end_run(run, "run_dropped");
        }
    }

    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.start_run(e.state(), e.extensions());
        Ok(())
    }

    async fn on_iteration_start(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        let started = self.runs.get(e.run_id(), |run| {
            if let Some(old) = run.iteration.take() {
                old.span()
                    .set_attribute(KeyValue::new(HOOKS_CLOSED_BY, "next_iteration"));
                old.span().end();
            }
            let span = self
                .tracer
                .span_builder(format!("iteration {}", e.iteration()))
                .with_kind(SpanKind::Internal)
                .with_attributes([KeyValue::new(HOOKS_ITERATION, i64::from(e.iteration()))])
                .start_with_context(&*self.tracer, &run.invocation);
            run.iteration = Some(run.invocation.with_span(span));
        });
        if started.is_some() {
            self.instruments.iterations.add(1, &[]);
        }
        Ok(())
    }

    async fn on_iteration_end(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        let run_id = e.run_id();
        let iteration = self.runs.get(run_id, |r| r.iteration.take()).flatten();
        if let Some(cx) = iteration {
            let span = cx.span();
            span.end();
        }
        Ok(())
    }

    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        let Some(parent) = self.parent_of(e.run_id()) else {
            return Ok(());
        };
        let model = e.model().to_owned();
        let span = start_chat_span(
            &self.tracer,
            &parent,
            &model,
            Some(KeyValue::new(HOOKS_ATTEMPT, i64::from(e.attempt()))),
        );
        let mut span = Some(span);
        self.runs.get(e.run_id(), |run| {
            run.first_piece = None;
            run.pieces = 0;
            if let Some(span) = span.take()
                && let Some((old, ..)) = run.model.replace((span, Instant::now(), model))
            {
                close_dangling(old, "next_model_call");
            }
        });
        if let Some(span) = span {
            close_dangling(span, "no_open_run");
        }
        Ok(())
    }

    /// Counts a streamed reply's pieces and times the first (never reads their text).
    async fn on_model_delta(
        &self,
        e: &mut hooks_core::ModelDeltaEvent<'_>,
    ) -> Result<(), HookError> {
        if e.is_last() {
            return Ok(());
        }
        self.runs.get(e.run_id(), |run| {
            if let Some((_, started, _)) = &run.model {
                run.pieces += 1;
                if run.first_piece.is_none() {
                    run.first_piece = Some(started.elapsed());
                }
            }
        });
        Ok(())
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let taken = self
            .runs
            .get(e.run_id(), |r| {
                let stream = (r.first_piece.take(), std::mem::take(&mut r.pieces));
                r.model.take().map(|m| (m, stream))
            })
            .flatten();
        let Some(((mut span, started, model), (first_piece, pieces))) = taken else {
            return Ok(());
        };
        if let Some(first) = first_piece {
            span.set_attribute(KeyValue::new(HOOKS_STREAM_CHUNKS, pieces as i64));
            span.set_attribute(KeyValue::new(
                HOOKS_TIME_TO_FIRST_TOKEN_MS,
                first.as_secs_f64() * 1000.0,
            ));
            self.instruments.time_to_first_token.record(
                first.as_secs_f64(),
                &[
                    KeyValue::new(GEN_AI_OPERATION_NAME, OP_CHAT),
                    KeyValue::new(GEN_AI_REQUEST_MODEL, model.clone()),
                ],
            );
        }
        let outcome = match (e.response(), e.error()) {
            (Some(r), _) => Some(Ok(r)),
            (None, Some(err)) => Some(Err(err)),
            (None, None) => None,
        };
        end_chat_span(span, started, &model, outcome, &self.instruments);
        Ok(())
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        let Some(parent) = self.parent_of(e.run_id()) else {
            return Ok(());
        };
        let tool = preview(e.tool_name(), 256).into_owned();
        let mut attrs = vec![
            KeyValue::new(GEN_AI_OPERATION_NAME, OP_EXECUTE_TOOL),
            KeyValue::new(GEN_AI_TOOL_NAME, tool.clone()),
            KeyValue::new(
                GEN_AI_TOOL_CALL_ID,
                preview(e.tool_call_id(), 256).into_owned(),
            ),
            KeyValue::new(GEN_AI_TOOL_TYPE, "function"),
            KeyValue::new(HOOKS_ATTEMPT, i64::from(e.attempt())),
        ];
        if self.options.capture_content {
            attrs.push(KeyValue::new(
                GEN_AI_TOOL_CALL_ARGUMENTS,
                json_preview(e.arguments(), self.options.max_content_chars),
            ));
        }
        let span = self
            .tracer
            .span_builder(format!("{OP_EXECUTE_TOOL} {tool}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attrs)
            .start_with_context(&*self.tracer, &parent);
        let mut span = Some(span);
        self.runs.get(e.run_id(), |run| {
            if let Some(span) = span.take()
                && let Some((old, _)) = run
                    .tools
                    .insert(e.tool_call_id().to_owned(), (span, Instant::now()))
            {
                close_dangling(old, "call_id_reused");
            }
        });
        if let Some(span) = span {
            close_dangling(span, "no_open_run");
        }
        Ok(())
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        let taken = self
            .runs
            .get(e.run_id(), |r| r.tools.remove(e.tool_call_id()))
            .flatten();
        let Some((mut span, started)) = taken else {
            return Ok(());
        };
        let tool = preview(e.tool_name(), 256).into_owned();
        if e.outcome().interrupted().is_some() {
            // Waits for a person: not a failure, not a cancel (the reason is content).
            span.set_attribute(KeyValue::new(HOOKS_INTERRUPTED, true));
            span.add_event("interrupted", Vec::new());
        } else if let Some(reason) = e.cancelled() {
            span.set_attribute(KeyValue::new(HOOKS_CANCELLED, true));
            // The reason is free text (a judge's guidance, a server's error): content, so it is
            // exported only with content capture, like arguments and results.
            let attrs = if self.options.capture_content {
                vec![KeyValue::new("hooks.cancel_reason", self.content(reason))]
            } else {
                Vec::new()
            };
            span.add_event("cancelled", attrs);
        } else if let Some(err) = e.error() {
            let description = if self.options.capture_content {
                self.content(err)
            } else {
                "tool call failed".to_owned()
            };
            span.set_status(Status::error(description));
            span.set_attribute(KeyValue::new(ERROR_TYPE, "tool_error"));
        }
        if self.options.capture_content {
            span.set_attribute(KeyValue::new(
                GEN_AI_TOOL_CALL_RESULT,
                self.content(e.result()),
            ));
        }
        span.end();
        let attrs = [
            KeyValue::new(GEN_AI_TOOL_NAME, tool),
            KeyValue::new(HOOKS_SUCCESS, e.success()),
        ];
        self.instruments.tool_calls.add(1, &attrs);
        if e.error().is_some() {
            self.instruments.tool_errors.add(1, &attrs);
        }
        self.instruments
            .tool_duration
            .record(started.elapsed().as_secs_f64(), &attrs);
        Ok(())
    }

    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        let state = e.state();
        self.resumed_from.end(&state.run_id);
        let removed = self.runs.end(&state.run_id);
        // A run refused before this hook saw it start (an earlier hook failed in before
        // invocation) still gets its span, so refusals show up in traces.
        let run = match removed {
            Some(run) => run,
            // (Unless there is no room: then it got its marked root span when it started.)
            None if self.runs.len() >= self.runs.max_runs() => return Ok(()),
            None => {
                // The run has ended: nothing will read its extensions any more.
                self.start_run(state, &Extensions::new());
                match self.runs.end(&state.run_id) {
                    Some(run) => run,
                    None => return Ok(()),
                }
            }
        };
        let span = run.invocation.span();
        span.set_attribute(KeyValue::new(HOOKS_SUCCESS, e.success()));
        span.set_attribute(KeyValue::new(HOOKS_ITERATIONS, i64::from(state.iteration)));
        span.set_attribute(KeyValue::new(
            HOOKS_TOOL_CALLS,
            state.tool_executions.len() as i64,
        ));
        span.set_attribute(KeyValue::new(HOOKS_ERRORS, state.errors.len() as i64));
        span.set_attribute(KeyValue::new(
            HOOKS_DURATION_MS,
            e.duration().as_secs_f64() * 1000.0,
        ));
        let mut attrs = vec![KeyValue::new(GEN_AI_OPERATION_NAME, OP_INVOKE_AGENT)];
        if state.depth() > 0 {
            attrs.push(KeyValue::new(HOOKS_DEPTH, i64::from(state.depth())));
        }
        if e.interrupted() {
            // Paused for a person, not failed: no error status.
            span.set_attribute(KeyValue::new(HOOKS_INTERRUPTED, true));
            span.set_attribute(KeyValue::new(
                HOOKS_INTERRUPTIONS,
                e.interruptions().len() as i64,
            ));
            attrs.push(KeyValue::new(HOOKS_INTERRUPTED, true));
        }
        if let Some(err) = e.error() {
            span.set_status(Status::error(preview(&err.to_string(), 512).into_owned()));
            span.set_attribute(KeyValue::new(ERROR_TYPE, err.kind()));
            attrs.push(KeyValue::new(ERROR_TYPE, err.kind()));
        }
        self.instruments
            .operation_duration
            .record(e.duration().as_secs_f64(), &attrs);
        self.instruments
            .invocations
            .add(1, &[KeyValue::new(HOOKS_SUCCESS, e.success())]);
        end_run(run, "run_end");
        Ok(())
    }

    /// The paused segment's root span, so the resumed segment continues its trace.
    fn save_run_state(&self, run_id: &RunId) -> Option<hooks_core::serde_json::Value> {
        let cx = self
            .runs
            .get(run_id, |r| r.invocation.span().span_context().clone())?;
        cx.is_valid().then(|| {
            hooks_core::serde_json::json!({
                "trace_id": cx.trace_id().to_string(),
                "span_id": cx.span_id().to_string(),
                "sampled": cx.is_sampled(),
            })
        })
    }

    fn restore_run_state(
        &self,
        run_id: &RunId,
        state: hooks_core::serde_json::Value,
    ) -> Result<(), HookError> {
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        let bad = || {
            HookError::new("not a TelemetryHook run state (expected trace_id and span_id in hex)")
        };
        let trace_id = state["trace_id"]
            .as_str()
            .and_then(|t| TraceId::from_hex(t).ok())
            .ok_or_else(bad)?;
        let span_id = state["span_id"]
            .as_str()
            .and_then(|t| SpanId::from_hex(t).ok())
            .ok_or_else(bad)?;
        let flags = if state["sampled"].as_bool().unwrap_or(false) {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let cx = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
        if !cx.is_valid() {
            return Err(bad());
        }
        self.resumed_from.insert(run_id, cx).map_err(|(full, _)| {
            HookError::with_source("no room for the resumed run's trace", full)
        })?;
        Ok(())
    }
}

/// True for what a model id looks like: at most 256 characters of letters, digits and
/// `. _ : / @ + -` (a path to a weights file included).
fn looks_like_a_model_id(m: &str) -> bool {
    !m.is_empty()
        && m.len() <= 256
        && m.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '@' | '+' | '-')
        })
}

/// Opens a `chat {model}` client span under `parent`.
fn start_chat_span(
    tracer: &BoxedTracer,
    parent: &Context,
    model: &str,
    extra: Option<KeyValue>,
) -> BoxedSpan {
    let mut attrs = vec![
        KeyValue::new(GEN_AI_OPERATION_NAME, OP_CHAT),
        KeyValue::new(GEN_AI_REQUEST_MODEL, model.to_owned()),
    ];
    attrs.extend(extra);
    tracer
        .span_builder(format!("{OP_CHAT} {model}"))
        .with_kind(SpanKind::Client)
        .with_attributes(attrs)
        .start_with_context(tracer, parent)
}

/// Ends a `chat` span: finish reason, response model and token usage (also on the token-usage
/// metric), or the error; the operation-duration metric either way.
fn end_chat_span(
    mut span: BoxedSpan,
    started: Instant,
    model: &str,
    outcome: Option<Result<&ModelResponse, &ModelError>>,
    instruments: &Instruments,
) {
    let mut metric_attrs = vec![
        KeyValue::new(GEN_AI_OPERATION_NAME, OP_CHAT),
        KeyValue::new(GEN_AI_REQUEST_MODEL, model.to_owned()),
    ];
    match outcome {
        Some(Ok(r)) => {
            // A closed set: a server's own reason (free text) is "other".
            let finish = match &r.finish_reason {
                hooks_core::FinishReason::Other(_) => "other",
                f => f.as_str(),
            };
            span.set_attribute(KeyValue::new(
                GEN_AI_RESPONSE_FINISH_REASONS,
                Value::Array(Array::String(vec![StringValue::from(finish.to_owned())])),
            ));
            // Server text: kept only when it looks like a model id, so nothing a server echoes
            // (a prompt, a value) rides along.
            if let Some(m) = r.model.as_deref().filter(|m| looks_like_a_model_id(m)) {
                span.set_attribute(KeyValue::new(GEN_AI_RESPONSE_MODEL, m.to_owned()));
            }
            if let Some(u) = r.usage {
                span.set_attribute(KeyValue::new(
                    GEN_AI_USAGE_INPUT_TOKENS,
                    i64::try_from(u.input_tokens).unwrap_or(i64::MAX),
                ));
                span.set_attribute(KeyValue::new(
                    GEN_AI_USAGE_OUTPUT_TOKENS,
                    i64::try_from(u.output_tokens).unwrap_or(i64::MAX),
                ));
                let mut input = metric_attrs.clone();
                input.push(KeyValue::new(GEN_AI_TOKEN_TYPE, "input"));
                instruments.token_usage.record(u.input_tokens, &input);
                let mut output = metric_attrs.clone();
                output.push(KeyValue::new(GEN_AI_TOKEN_TYPE, "output"));
                instruments.token_usage.record(u.output_tokens, &output);
            }
        }
        Some(Err(err)) => {
            span.set_status(Status::error(err.to_string()));
            span.set_attribute(KeyValue::new(ERROR_TYPE, err.kind().as_str()));
            metric_attrs.push(KeyValue::new(ERROR_TYPE, err.kind().as_str()));
        }
        None => {}
    }
    instruments
        .operation_duration
        .record(started.elapsed().as_secs_f64(), &metric_attrs);
    span.end();
}

/// The run's tracer in its extensions: see [`hooks_core::observe`].
struct OtelRunTracer {
    tracer: Arc<BoxedTracer>,
    instruments: Arc<Instruments>,
    runs: Arc<RunLocal<RunSpans>>,
    run_id: RunId,
}

impl OtelRunTracer {
    /// The parent for a span on the run's behalf: the tool call's span while it is open, else
    /// the run's iteration or invocation.
    fn parent(&self, tool_call_id: Option<&str>) -> Option<Context> {
        self.runs.get(&self.run_id, |run| {
            tool_call_id
                .and_then(|id| run.tools.get(id))
                .map(|(span, _)| {
                    Context::new().with_remote_span_context(span.span_context().clone())
                })
                .unwrap_or_else(|| run.parent().clone())
        })
    }
}

impl RunTracer for OtelRunTracer {
    fn traceparent(&self, tool_call_id: Option<&str>) -> Option<String> {
        let cx = self.parent(tool_call_id)?;
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags().to_u8()
            )
        })
    }

    fn start_model_call(
        &self,
        tool_call_id: Option<&str>,
        model: &str,
    ) -> Box<dyn ModelCallTracer> {
        let parent = self.parent(tool_call_id).unwrap_or_default();
        let model = preview(model, 256).into_owned();
        let span = start_chat_span(&self.tracer, &parent, &model, None);
        Box::new(OtelModelCall {
            span,
            started: Instant::now(),
            model,
            instruments: self.instruments.clone(),
        })
    }
}

struct OtelModelCall {
    span: BoxedSpan,
    started: Instant,
    model: String,
    instruments: Arc<Instruments>,
}

impl ModelCallTracer for OtelModelCall {
    fn set_attribute(&mut self, key: &'static str, value: String) {
        self.span.set_attribute(KeyValue::new(key, value));
    }

    fn end(self: Box<Self>, outcome: Result<&ModelResponse, &ModelError>) {
        let this = *self;
        end_chat_span(
            this.span,
            this.started,
            &this.model,
            Some(outcome),
            &this.instruments,
        );
    }
}
