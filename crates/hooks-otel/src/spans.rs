//! Span storage: a run's open spans, and how they end when the run (or a call) ends.

use std::collections::HashMap;
use std::time::Instant;

use opentelemetry::global::BoxedSpan;
use opentelemetry::trace::{Span, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use crate::semconv::HOOKS_CLOSED_BY;

/// A run's spans that are still open.
pub(crate) struct RunSpans {
    pub(crate) invocation: Context,
    pub(crate) iteration: Option<Context>,
    pub(crate) model: Option<(BoxedSpan, Instant, String)>,
    pub(crate) tools: HashMap<String, (BoxedSpan, Instant)>,
    /// The current model call's streamed pieces: time to the first, and how many.
    pub(crate) first_piece: Option<std::time::Duration>,
    pub(crate) pieces: u64,
}

impl RunSpans {
    pub(crate) fn parent(&self) -> &Context {
        self.iteration.as_ref().unwrap_or(&self.invocation)
    }
}

/// Ends a span the hook found still open when its run (or call) ended.
pub(crate) fn close_dangling(mut span: BoxedSpan, why: &'static str) {
    span.set_attribute(KeyValue::new(HOOKS_CLOSED_BY, why));
    span.end();
}

/// Ends every span of a run: open calls and iteration first, the invocation last.
pub(crate) fn end_run(run: RunSpans, why: &'static str) {
    for (_, (span, _)) in run.tools {
        close_dangling(span, why);
    }
    if let Some((span, ..)) = run.model {
        close_dangling(span, why);
    }
    if let Some(cx) = run.iteration {
        cx.span().set_attribute(KeyValue::new(HOOKS_CLOSED_BY, why));
        cx.span().end();
    }
    run.invocation.span().end();
}
