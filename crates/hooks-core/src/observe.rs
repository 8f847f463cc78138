//! Tracing what is done on a run's behalf outside the loop's own calls: a steering judge's
//! model call, a tool's own HTTP request.
//!
//! A telemetry provider puts a [`RunTrace`] in each run's [`Extensions`] when the run starts;
//! anything else of that run — a hook, a tool — finds it there without depending on the
//! telemetry crate:
//!
//! - [`RunTrace::traceparent`] gives the W3C `traceparent` of a tool call's span (or of the
//!   run), so a tool can continue the trace in its own HTTP calls;
//! - [`RunTrace::start_model_call`] opens a GenAI `chat` span, child of a tool call's span
//!   (or of the run's current iteration), for a model call a hook makes, and feeds the
//!   token-usage metric when it ends.
//!
//! With no telemetry provider there is no `RunTrace`, and callers simply do not trace.
//!
//! ```
//! use hooks_core::observe::RunTrace;
//! use hooks_core::Extensions;
//! let ext = Extensions::new();
//! // No telemetry provider in this run: nothing to continue.
//! assert!(RunTrace::of(&ext).is_none());
//! ```

use std::fmt;
use std::sync::Arc;

use crate::extensions::Extensions;
use crate::state::{ModelError, ModelResponse};

/// What a telemetry provider implements for one run (see the [module](self) docs).
pub trait RunTracer: Send + Sync {
    /// The W3C `traceparent` header value of the span of tool call `tool_call_id` while it
    /// is open, or of the run's current span when `None`; `None` when not traced.
    fn traceparent(&self, tool_call_id: Option<&str>) -> Option<String>;

    /// Opens a `chat {model}` span for a model call made on the run's behalf, child of the
    /// span of `tool_call_id` (or of the run's current span when `None` or not open).
    fn start_model_call(&self, tool_call_id: Option<&str>, model: &str)
    -> Box<dyn ModelCallTracer>;
}

/// One traced model call, ended by [`end`](Self::end).
pub trait ModelCallTracer: Send {
    /// Sets a string attribute (e.g. `hooks.steering.verdict`).
    fn set_attribute(&mut self, key: &'static str, value: String);

    /// Ends the span with the call's outcome: finish reason, response model and token usage
    /// (also recorded on the token-usage metric), or the error.
    fn end(self: Box<Self>, outcome: Result<&ModelResponse, &ModelError>);
}

/// The run's tracer, as found in its [`Extensions`]. Cheap to clone.
#[derive(Clone)]
pub struct RunTrace(Arc<dyn RunTracer>);

impl fmt::Debug for RunTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunTrace").finish_non_exhaustive()
    }
}

impl RunTrace {
    /// Wraps a provider's tracer (to insert into a run's extensions).
    pub fn new(tracer: impl RunTracer + 'static) -> Self {
        Self(Arc::new(tracer))
    }

    /// The tracer of the run whose extensions these are, if a telemetry provider set one.
    pub fn of(extensions: &Extensions) -> Option<Self> {
        extensions.get::<Self>()
    }

    /// See [`RunTracer::traceparent`].
    pub fn traceparent(&self, tool_call_id: Option<&str>) -> Option<String> {
        self.0.traceparent(tool_call_id)
    }

    /// See [`RunTracer::start_model_call`]. The span ends when [`ModelCallSpan::end`] is
    /// called, or — marked as abandoned — when the handle is dropped.
    pub fn start_model_call(&self, tool_call_id: Option<&str>, model: &str) -> ModelCallSpan {
        ModelCallSpan(Some(self.0.start_model_call(tool_call_id, model)))
    }
}

/// A model call's span; ends at [`end`](Self::end), or with an `abandoned` error on drop.
pub struct ModelCallSpan(Option<Box<dyn ModelCallTracer>>);

impl fmt::Debug for ModelCallSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelCallSpan")
            .field("open", &self.0.is_some())
            .finish()
    }
}

impl ModelCallSpan {
    /// Sets a string attribute.
    pub fn set_attribute(&mut self, key: &'static str, value: impl Into<String>) {
        if let Some(t) = &mut self.0 {
            t.set_attribute(key, value.into());
        }
    }

    /// Ends the span with the call's outcome.
    pub fn end(mut self, outcome: Result<&ModelResponse, &ModelError>) {
        if let Some(t) = self.0.take() {
            t.end(outcome);
        }
    }
}

impl Drop for ModelCallSpan {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.end(Err(&ModelError::Other(
                "the model call was abandoned before it ended".to_owned(),
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default, Clone)]
    struct Log(Arc<Mutex<Vec<String>>>);

    struct Call(Log);
    impl ModelCallTracer for Call {
        fn set_attribute(&mut self, key: &'static str, value: String) {
            self.0
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{key}={value}"));
        }
        fn end(self: Box<Self>, outcome: Result<&ModelResponse, &ModelError>) {
            let s = match outcome {
                Ok(r) => format!("end ok {}", r.message.content),
                Err(e) => format!("end err {e}"),
            };
            self.0.0.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        }
    }
    struct Tracer(Log);
    impl RunTracer for Tracer {
        fn traceparent(&self, id: Option<&str>) -> Option<String> {
            id.map(|i| format!("tp-{i}"))
        }
        fn start_model_call(&self, id: Option<&str>, model: &str) -> Box<dyn ModelCallTracer> {
            self.0
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("start {model} {id:?}"));
            Box::new(Call(self.0.clone()))
        }
    }

    #[test]
    fn a_span_ends_once_with_its_outcome_or_as_abandoned() {
        let log = Log::default();
        let ext = Extensions::new();
        ext.insert(RunTrace::new(Tracer(log.clone())));
        let trace = RunTrace::of(&ext).unwrap_or_else(|| unreachable!());
        assert_eq!(trace.traceparent(Some("c1")).as_deref(), Some("tp-c1"));
        let mut span = trace.start_model_call(Some("c1"), "judge");
        span.set_attribute("hooks.steering.verdict", "PROCEED");
        span.end(Ok(&ModelResponse::text("PROCEED")));
        drop(trace.start_model_call(None, "judge"));
        let got = log.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(
            got,
            [
                "start judge Some(\"c1\")",
                "hooks.steering.verdict=PROCEED",
                "end ok PROCEED",
                "start judge None",
                "end err model call failed: the model call was abandoned before it ended",
            ]
        );
    }
}
