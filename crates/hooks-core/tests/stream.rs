//! Streamed runs: pieces through the delta hooks to the consumer, guards that see the whole
//! reply first, retractions and corrections, backpressure, abandonment and tool events.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use hooks_core::agent::{Agent, FnTool, Model, ModelRequest};
use hooks_core::event::Field;
use hooks_core::interrupt::RunOutcome;
use hooks_core::stream::{ModelDelta, ModelStream, RunEvent, StreamItem};
use hooks_core::test_util::RecordingProvider;
use hooks_core::{
    AfterModelCallEvent, BeforeToolCallEvent, HookError, HookEvent, HookPriority, HookProvider,
    HookRegistry, HookSet, ModelDeltaEvent, ModelError, ModelResponse, RunError, RunId, ToolCall,
    ToolSpec, async_trait,
};
use serde_json::json;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One scripted reply: text pieces, tool calls (sent as pieces too), or a cut-off stream.
#[derive(Clone)]
enum Reply {
    Pieces(Vec<&'static str>),
    Calls(Vec<ToolCall>),
    CutAfter(Vec<&'static str>),
}

/// A model that streams its script, reply by reply per run, and counts the pieces read.
struct Streamer {
    script: Vec<Reply>,
    cursor: Mutex<HashMap<RunId, usize>>,
    pulled: Arc<AtomicUsize>,
}

impl Streamer {
    fn new(script: Vec<Reply>) -> Self {
        Self {
            script,
            cursor: Mutex::default(),
            pulled: Arc::default(),
        }
    }

    fn next_reply(&self, run: &RunId) -> Reply {
        let mut c = self.cursor.lock().unwrap();
        let n = c.entry(run.clone()).or_insert(0);
        let r = self.script[(*n).min(self.script.len() - 1)].clone();
        *n += 1;
        r
    }
}

#[async_trait]
impl Model for Streamer {
    fn name(&self) -> &str {
        "streamer"
    }

    async fn complete(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        match self.next_reply(request.run_id) {
            Reply::Pieces(p) => Ok(ModelResponse::text(p.concat())),
            Reply::Calls(c) => Ok(ModelResponse::tool_calls(c)),
            Reply::CutAfter(_) => Err(ModelError::Server {
                status: None,
                message: "cut off".into(),
            }),
        }
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> ModelStream<'a> {
        let reply = self.next_reply(request.run_id);
        let pulled = Arc::clone(&self.pulled);
        let items: Vec<Result<StreamItem, ModelError>> = match reply {
            Reply::Pieces(p) => p
                .iter()
                .map(|t| Ok(StreamItem::Delta(ModelDelta::Text((*t).to_owned()))))
                .chain([Ok(StreamItem::Done(ModelResponse::text(p.concat())))])
                .collect(),
            Reply::Calls(calls) => calls
                .iter()
                .enumerate()
                .map(|(index, c)| {
                    Ok(StreamItem::Delta(ModelDelta::ToolCall {
                        index,
                        id: Some(c.id.clone()),
                        name: Some(c.name.clone()),
                        arguments: c.arguments.to_string(),
                    }))
                })
                .chain([Ok(StreamItem::Done(ModelResponse::tool_calls(
                    calls.clone(),
                )))])
                .collect(),
            Reply::CutAfter(p) => p
                .iter()
                .map(|t| Ok(StreamItem::Delta(ModelDelta::Text((*t).to_owned()))))
                .chain([Err(ModelError::Server {
                    status: None,
                    message: "the connection dropped".into(),
                })])
                .collect(),
        };
        Box::pin(futures_util::stream::iter(items).inspect(move |_| {
            pulled.fetch_add(1, Ordering::Relaxed);
        }))
    }
}

fn agent(model: impl Model + 'static, registry: HookRegistry) -> Agent {
    Agent::builder("streamer", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("lookup", "Looks up", json!({"type": "object"})),
            |args| Ok(format!("found {}", args.len())),
        ))
        .build()
        .unwrap()
}

fn collect(agent: &Agent, prompt: &str) -> Vec<RunEvent> {
    rt().block_on(agent.run_stream(prompt, 8).collect())
}

fn text_of(events: &[RunEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[RunEvent]) -> &Result<RunOutcome, hooks_core::agent::RunFailure> {
    match events.last() {
        Some(RunEvent::Finished(r)) => r,
        other => panic!("the last event is not Finished: {other:?}"),
    }
}

#[test]
fn pieces_reach_the_consumer_in_order_and_the_run_finishes() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["Hel", "lo, ", "world"])]);
    let events = collect(&agent(model, HookRegistry::new()), "hi");
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hel", "lo, ", "world"]);
    let Ok(RunOutcome::Completed(out)) = finished(&events) else {
        panic!()
    };
    assert_eq!(out.answer, "Hello, world");
}

/// Upper-cases text pieces and holds back everything after the last space until the next
/// piece (or the end): a hook that holds text back across pieces, keyed by run.
struct Shouty {
    held: Mutex<HashMap<RunId, String>>,
}

#[async_trait]
impl HookProvider for Shouty {
    fn hooks(&self) -> HookSet {
        HookSet::MODEL_DELTA
    }
    async fn on_model_delta(&self, e: &mut ModelDeltaEvent<'_>) -> Result<(), HookError> {
        let mut held = self.held.lock().unwrap();
        let buf = held.entry(e.run_id().clone()).or_default();
        buf.push_str(&e.delta().text().to_uppercase());
        let release = if e.is_last() {
            std::mem::take(buf)
        } else {
            let cut = buf.rfind(' ').map_or(0, |i| i + 1);
            buf.drain(..cut).collect()
        };
        e.set_text(release);
        Ok(())
    }
}

#[test]
fn a_delta_hook_rewrites_and_holds_back_and_its_rewrite_stands() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["one tw", "o thr", "ee"])]);
    let registry = HookRegistry::new()
        .with(Shouty {
            held: Mutex::default(),
        })
        .unwrap();
    let events = collect(&agent(model, registry), "hi");
    let pieces: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces, ["ONE ", "TWO ", "THREE"]);
    // No after-model-call hook changed the reply: no correction undoes the delta hook's
    // rewrite (found by a review: it used to send the raw reply back).
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RunEvent::Corrected { .. })),
        "{events:?}"
    );
    let Ok(RunOutcome::Completed(out)) = finished(&events) else {
        panic!()
    };
    assert!(
        out.changes
            .iter()
            .any(|c| c.event == HookEvent::ModelDelta && c.change.field == Field::Delta)
    );
}

/// A guard of model output that does not handle pieces: it redacts a word after the reply.
struct WordGuard;

#[async_trait]
impl HookProvider for WordGuard {
    fn priority(&self) -> HookPriority {
        HookPriority::SECURITY_DEFAULT
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(text) = e.response().map(|r| r.message.content.clone())
            && text.contains("hunter2")
        {
            let mut r = e.response().unwrap().clone();
            r.message.content = text.replace("hunter2", "[REDACTED]");
            e.set_response(r);
        }
        e.redact_error(|error| {
            let hit = error.contains("hunter2");
            *error = error.replace("hunter2", "[REDACTED]");
            hit
        });
        Ok(())
    }
}

#[test]
fn a_guard_that_does_not_handle_pieces_sees_the_whole_reply_before_the_consumer_does() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["the password is hun", "ter2, ok"])]);
    let registry = HookRegistry::new().with(WordGuard).unwrap();
    assert!(!registry.streams_live());
    let events = collect(&agent(model, registry), "hi");
    let everything = format!("{events:?}");
    assert!(!everything.contains("hun"), "{everything}");
    assert_eq!(text_of(&events), "the password is [REDACTED], ok");
    // A provider that is not a guard does not hold the stream.
    let registry = HookRegistry::new()
        .with(RecordingProvider::new("rec"))
        .unwrap();
    assert!(registry.streams_live());
}

/// Asks for a retry of the first attempt of every model call.
struct RetryOnce;

#[async_trait]
impl HookProvider for RetryOnce {
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.attempt() == 0 {
            e.request_retry();
        }
        Ok(())
    }
}

#[test]
fn a_retried_attempt_is_retracted_and_a_cut_off_stream_too() {
    let model = Streamer::new(vec![
        Reply::Pieces(vec!["first ", "try"]),
        Reply::Pieces(vec!["second"]),
    ]);
    let registry = HookRegistry::new().with(RetryOnce).unwrap();
    let events = collect(&agent(model, registry), "hi");
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            RunEvent::Text { attempt, text, .. } => format!("text{attempt}:{text}"),
            RunEvent::Retracted { attempt, .. } => format!("retracted{attempt}"),
            RunEvent::Finished(_) => "finished".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "text0:first ",
            "text0:try",
            "retracted0",
            "text1:second",
            "finished"
        ]
    );

    // Cut off midway, with nothing to retry it: what streamed is retracted, the run fails.
    let model = Streamer::new(vec![Reply::CutAfter(vec!["partial "])]);
    let events = collect(&agent(model, HookRegistry::new()), "hi");
    assert!(matches!(events[0], RunEvent::Text { .. }));
    assert!(matches!(events[1], RunEvent::Retracted { attempt: 0, .. }));
    let Err(failure) = finished(&events) else {
        panic!()
    };
    assert!(matches!(failure.error, RunError::Model { .. }));
}

#[test]
fn a_slow_consumer_slows_the_model_read() {
    let pieces: Vec<&'static str> = vec!["x"; 1000];
    let model = Streamer::new(vec![Reply::Pieces(pieces)]);
    let pulled = Arc::clone(&model.pulled);
    let agent = agent(model, HookRegistry::new());
    rt().block_on(async {
        let mut stream = agent.run_stream("hi", 4);
        // Read two events, then stop reading (but keep the stream).
        for _ in 0..2 {
            stream.next().await.unwrap();
        }
        let read = pulled.load(Ordering::Relaxed);
        assert!(read <= 8, "the model was read {read} pieces ahead");
        drop(stream);
    });
}

#[test]
fn dropping_the_stream_abandons_the_run() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["x"; 100])]);
    let recorder = Arc::new(RecordingProvider::new("rec"));
    let registry = HookRegistry::new().with(Arc::clone(&recorder)).unwrap();
    let agent = agent(model, registry);
    rt().block_on(async {
        let mut stream = agent.run_stream("hi", 2);
        stream.next().await.unwrap();
        drop(stream);
    });
    let events: Vec<HookEvent> = recorder.records().iter().map(|r| r.event).collect();
    assert!(events.contains(&HookEvent::RunAbandoned), "{events:?}");
    assert!(!events.contains(&HookEvent::AfterInvocation));
}

/// Adds a secret argument to every call.
struct Secret;

#[async_trait]
impl HookProvider for Secret {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut()
            .insert("token", "STREAM-SECRET-4471");
        Ok(())
    }
}

#[test]
fn tool_calls_start_and_finish_on_the_stream_without_their_secrets() {
    let model = Streamer::new(vec![
        Reply::Calls(vec![ToolCall::new("c1", "lookup", json!({"q": "rust"}))]),
        Reply::Pieces(vec!["done"]),
    ]);
    let registry = HookRegistry::new().with(Secret).unwrap();
    let events = collect(&agent(model, registry), "hi");
    let everything = format!("{events:?}");
    assert!(!everything.contains("STREAM-SECRET-4471"));
    let started = events
        .iter()
        .find_map(|e| match e {
            RunEvent::ToolStarted {
                call_id, arguments, ..
            } => Some((call_id.clone(), arguments.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(started, ("c1".to_owned(), json!({"q": "rust"})));
    let finished_call = events
        .iter()
        .find_map(|e| match e {
            RunEvent::ToolFinished {
                result, outcome, ..
            } => Some((result.clone(), *outcome)),
            _ => None,
        })
        .unwrap();
    // The tool saw two arguments (the secret merged in); its result went to the model.
    assert_eq!(finished_call, ("found 2".to_owned(), "ran"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::ToolCallDelta { .. }))
    );
    assert_eq!(text_of(&events), "done");
}

/// Fails on the second piece.
struct StopSecond(AtomicUsize);

#[async_trait]
impl HookProvider for StopSecond {
    fn hooks(&self) -> HookSet {
        HookSet::MODEL_DELTA
    }
    async fn on_model_delta(&self, _: &mut ModelDeltaEvent<'_>) -> Result<(), HookError> {
        if self.0.fetch_add(1, Ordering::Relaxed) == 1 {
            return Err(HookError::new("policy: no more"));
        }
        Ok(())
    }
}

#[test]
fn a_delta_hook_error_ends_the_call_and_the_run() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["a", "b", "c"])]);
    let pulled = Arc::clone(&model.pulled);
    let registry = HookRegistry::new()
        .with(StopSecond(AtomicUsize::new(0)))
        .unwrap();
    let events = collect(&agent(model, registry), "hi");
    let Err(failure) = finished(&events) else {
        panic!()
    };
    assert!(
        matches!(failure.error, RunError::Hook(_)),
        "{}",
        failure.error
    );
    assert!(failure.error.to_string().contains("policy: no more"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Retracted { .. }))
    );
    assert_eq!(
        pulled.load(Ordering::Relaxed),
        2,
        "reading stopped at the error"
    );
}

#[test]
fn a_model_without_a_stream_of_its_own_streams_its_reply_as_one_piece() {
    let model = hooks_core::test_util::ScriptedModel::new(vec![Ok(ModelResponse::text("whole"))]);
    let events = collect(&agent(model, HookRegistry::new()), "hi");
    assert_eq!(text_of(&events), "whole");
    assert!(matches!(finished(&events), Ok(RunOutcome::Completed(_))));
}

/// Fails every after-model-call, at the output guard's priority (so it runs before the
/// guard on the way out).
struct FailAfter;

#[async_trait]
impl HookProvider for FailAfter {
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        if event.is_after() {
            HookPriority::OUTPUT_GUARD
        } else {
            HookPriority::DEFAULT
        }
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, _: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        Err(HookError::new("audit store down"))
    }
}

#[test]
fn a_held_reply_is_not_handed_over_when_the_after_model_call_hooks_failed() {
    // Found by a review: the guard never ran (a hook before it failed), yet the held reply
    // went to the consumer.
    let model = Streamer::new(vec![Reply::Pieces(vec!["the password is ", "hunter2"])]);
    let registry = HookRegistry::new()
        .with(WordGuard)
        .unwrap()
        .with(FailAfter)
        .unwrap();
    assert!(!registry.streams_live());
    let events = collect(&agent(model, registry), "hi");
    let everything = format!("{events:?}");
    assert!(!everything.contains("hunter2"), "{everything}");
    assert_eq!(text_of(&events), "");
    assert!(matches!(finished(&events), Err(f) if matches!(f.error, RunError::Hook(_))));
}

/// Refuses a piece, quoting it.
struct QuotePiece;

#[async_trait]
impl HookProvider for QuotePiece {
    fn hooks(&self) -> HookSet {
        HookSet::MODEL_DELTA
    }
    async fn on_model_delta(&self, e: &mut ModelDeltaEvent<'_>) -> Result<(), HookError> {
        if e.delta().text().contains("hunter2") {
            return Err(HookError::new(format!(
                "refused piece {:?}",
                e.delta().text()
            )));
        }
        Ok(())
    }
}

#[test]
fn a_delta_hooks_error_is_returned_as_the_guard_left_it() {
    let model = Streamer::new(vec![Reply::Pieces(vec!["pw: hunter2"])]);
    let registry = HookRegistry::new()
        .with(WordGuard)
        .unwrap()
        .with(QuotePiece)
        .unwrap();
    let events = collect(&agent(model, registry), "hi");
    let Err(failure) = finished(&events) else {
        panic!()
    };
    assert!(matches!(failure.error, RunError::Hook(_)));
    let text = failure.error.to_string();
    assert!(
        text.contains("refused piece") && !text.contains("hunter2"),
        "{text}"
    );
}
