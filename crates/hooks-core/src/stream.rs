//! Streaming: a model's reply in pieces ([`ModelDelta`]), what a streamed run hands its
//! consumer ([`RunEvent`]), and the bounded queue between them ([`RunStream`]).
//!
//! A streamed reply goes through the hooks like any other: `on_model_delta` sees (and may
//! rewrite or hold back) each piece before the consumer does, and the assembled reply goes
//! through `on_after_model_call` exactly as a non-streamed one. **Guards first:** when a
//! provider guards model output (its priority on after-model-call is in the security band or
//! [`OUTPUT_GUARD`](crate::HookPriority::OUTPUT_GUARD)) and does not handle
//! [`HookSet::MODEL_DELTA`](crate::HookSet::MODEL_DELTA), no piece reaches the consumer before
//! that guard saw the whole reply: the reply is held and handed over, as the hooks left it,
//! once after-model-call ran.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_util::Stream;
use futures_util::stream::BoxStream;

use crate::agent::RunFailure;
use crate::interrupt::RunOutcome;
use crate::state::{ModelError, ModelResponse};

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelDelta {
    /// More text.
    Text(String),
    /// A piece of tool call number `index` of the reply: its id and name usually come first,
    /// the arguments' JSON text in pieces after.
    ToolCall {
        /// The call's position in the reply.
        index: usize,
        /// The call's id, when this piece carries it.
        id: Option<String>,
        /// The tool's name, when this piece carries it.
        name: Option<String>,
        /// More of the arguments' JSON text.
        arguments: String,
    },
}

impl ModelDelta {
    /// The text this piece adds (a text piece's text, a tool-call piece's arguments).
    pub fn text(&self) -> &str {
        match self {
            ModelDelta::Text(t) => t,
            ModelDelta::ToolCall { arguments, .. } => arguments,
        }
    }

    /// The text this piece adds, to rewrite.
    pub fn text_mut(&mut self) -> &mut String {
        match self {
            ModelDelta::Text(t) => t,
            ModelDelta::ToolCall { arguments, .. } => arguments,
        }
    }

    /// True when it carries nothing (no text, no id, no name).
    pub fn is_empty(&self) -> bool {
        match self {
            ModelDelta::Text(t) => t.is_empty(),
            ModelDelta::ToolCall {
                id,
                name,
                arguments,
                ..
            } => id.is_none() && name.is_none() && arguments.is_empty(),
        }
    }
}

/// What a [`Model::stream`](crate::agent::Model::stream) yields: pieces, then the whole reply.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamItem {
    /// A piece of the reply.
    Delta(ModelDelta),
    /// The whole reply, assembled (the last item).
    Done(ModelResponse),
}

/// A model's streamed reply.
pub type ModelStream<'a> = BoxStream<'a, Result<StreamItem, ModelError>>;

/// What a streamed run hands its consumer, in order.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunEvent {
    /// More of the reply's text, as the hooks left it.
    Text {
        /// The iteration (1-based).
        iteration: u32,
        /// The model call's attempt (0 for the first try).
        attempt: u32,
        /// The text.
        text: String,
    },
    /// A piece of a tool call the model is writing, as the hooks left it.
    ToolCallDelta {
        /// The iteration.
        iteration: u32,
        /// The attempt.
        attempt: u32,
        /// The piece.
        delta: ModelDelta,
    },
    /// The hooks discarded attempt `attempt` of the iteration's model call (a retry follows):
    /// drop what it streamed.
    Retracted {
        /// The iteration.
        iteration: u32,
        /// The discarded attempt.
        attempt: u32,
    },
    /// The reply's text as the after-model-call hooks left it differs from what streamed
    /// (a guard redacted it, say): show this instead of the attempt's text.
    Corrected {
        /// The iteration.
        iteration: u32,
        /// The attempt.
        attempt: u32,
        /// The whole text.
        text: String,
    },
    /// A tool call starts, with the arguments the before-tool hooks left (never a secret one).
    ToolStarted {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments.
        arguments: serde_json::Value,
    },
    /// A tool call ended; `result` is what the model sees, as the after-tool hooks left it.
    ToolFinished {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// What the model sees.
        result: String,
        /// How it ended: `ran`, `failed`, `cancelled` or `interrupted`.
        outcome: &'static str,
    },
    /// The run ended: its output, or the paused run, or why it failed (the last item; boxed,
    /// so the other events stay small).
    Finished(Box<Result<RunOutcome, RunFailure>>),
}

/// Where a driven run hands its [`RunEvent`]s (set with
/// [`RunOptions::with_events`](crate::driver::RunOptions::with_events)); [`RunStream`] is one.
/// A sink that is not ready makes the run wait: a slow consumer slows the model read.
pub trait EventSink: Send + Sync {
    /// Ready for one more event; `Pending` (waking `cx` later) while the consumer is behind.
    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()>;
    /// Hands over one event (after `poll_ready` said ready).
    fn push(&self, event: RunEvent);
}

/// Hands `event` to `sink` once it has room, then lets the consumer see it before the run
/// goes on (a tool that starts is announced before it runs, not after).
pub(crate) async fn emit(sink: &dyn EventSink, event: RunEvent) {
    futures_util::future::poll_fn(|cx| sink.poll_ready(cx)).await;
    sink.push(event);
    let mut yielded = false;
    futures_util::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<RunOutcome, RunFailure>> + Send + 'a>>;

/// The bounded queue between a run and its consumer.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<QueueInner>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct QueueInner {
    items: VecDeque<RunEvent>,
    /// The run, waiting for room.
    producer: Option<Waker>,
}

impl Queue {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::default(),
            capacity: capacity.max(1),
        })
    }

    fn pop(&self) -> Option<RunEvent> {
        let mut inner = lock(&self.inner);
        let item = inner.items.pop_front();
        if item.is_some()
            && let Some(w) = inner.producer.take()
        {
            w.wake();
        }
        item
    }
}

impl EventSink for Queue {
    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = lock(&self.inner);
        if inner.items.len() < self.capacity {
            Poll::Ready(())
        } else {
            inner.producer = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    fn push(&self, event: RunEvent) {
        lock(&self.inner).items.push_back(event);
    }
}

/// A streamed run: a [`Stream`] of [`RunEvent`]s ending with [`RunEvent::Finished`]. The run
/// advances only while the stream is polled, and at most `capacity` events wait in between
/// (a slow consumer slows the model read; nothing buffers without bound). Dropping the stream
/// drops the run: its providers see `on_run_abandoned`.
pub struct RunStream<'a> {
    run: Option<RunFuture<'a>>,
    queue: Arc<Queue>,
    finished: Option<Result<RunOutcome, RunFailure>>,
}

impl std::fmt::Debug for RunStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> RunStream<'a> {
    /// A stream over `run`, whose events go to `queue`.
    pub(crate) fn new(
        run: impl Future<Output = Result<RunOutcome, RunFailure>> + Send + 'a,
        queue: Arc<Queue>,
    ) -> Self {
        Self {
            run: Some(Box::pin(run)),
            queue,
            finished: None,
        }
    }
}

impl Stream for RunStream<'_> {
    type Item = RunEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        if let Some(event) = self.queue.pop() {
            return Poll::Ready(Some(event));
        }
        if let Some(run) = self.run.as_mut() {
            if let Poll::Ready(result) = run.as_mut().poll(cx) {
                self.run = None;
                self.finished = Some(result);
            }
            // Whatever the run handed over while it was polled comes first.
            if let Some(event) = self.queue.pop() {
                return Poll::Ready(Some(event));
            }
        }
        match self.finished.take() {
            Some(result) => Poll::Ready(Some(RunEvent::Finished(Box::new(result)))),
            None if self.run.is_none() => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}
