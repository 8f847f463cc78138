//! `TelemetryHookBuilder`: tracer, meter and options.

use std::fmt;

use hooks_core::{HookPriority, RunLocal};
use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Meter, MeterProvider};
use opentelemetry::trace::{Tracer, TracerProvider};

use crate::hook::{Options, TelemetryHook, scope};
use crate::metrics::Instruments;

/// Builds a [`TelemetryHook`].
pub struct TelemetryHookBuilder {
    pub(crate) tracer: Option<BoxedTracer>,
    pub(crate) meter: Option<Meter>,
    pub(crate) options: Options,
}

impl fmt::Debug for TelemetryHookBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryHookBuilder")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TelemetryHookBuilder {
    /// Traces through `provider` (default: the global one).
    #[must_use]
    pub fn with_tracer_provider<P>(mut self, provider: &P) -> Self
    where
        P: TracerProvider,
        P::Tracer: Tracer + Send + Sync + 'static,
        <P::Tracer as Tracer>::Span: Send + Sync + 'static,
    {
        self.tracer = Some(BoxedTracer::new(Box::new(
            provider.tracer_with_scope(scope()),
        )));
        self
    }

    /// Measures through `provider` (default: the global one).
    #[must_use]
    pub fn with_meter_provider(mut self, provider: &impl MeterProvider) -> Self {
        self.meter = Some(provider.meter_with_scope(scope()));
        self
    }

    /// The agent name in span names and `gen_ai.agent.name` (default: the state's agent id).
    #[must_use]
    pub fn with_agent_name(mut self, name: impl Into<String>) -> Self {
        self.options.agent_name = Some(name.into());
        self
    }

    /// Records tool arguments and results (and tool error texts) on spans. Off by default:
    /// they may hold personal data.
    #[must_use]
    pub fn with_content_capture(mut self, on: bool) -> Self {
        self.options.capture_content = on;
        self
    }

    /// The most characters of captured content per attribute (default 1 000).
    #[must_use]
    pub fn with_max_content_chars(mut self, n: usize) -> Self {
        self.options.max_content_chars = n;
        self
    }

    /// The priority (default OBSERVABILITY_DEFAULT).
    #[must_use]
    pub fn with_priority(mut self, p: HookPriority) -> Self {
        self.options.priority = p;
        self
    }

    /// The name in a registry (default `TelemetryHook`); two telemetry hooks (say, to two
    /// tracers) need different names.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.options.name = Some(name.into());
        self
    }

    /// How many runs may have spans open at once (default
    /// [`hooks_core::DEFAULT_MAX_RUNS`]). A run that starts past it is not traced (its root
    /// span ends at once with `hooks.closed_by = no_room`), and a warning says so once.
    #[must_use]
    pub fn with_max_runs(mut self, n: usize) -> Self {
        self.options.max_runs = n;
        self
    }

    /// Builds the hook.
    pub fn build(self) -> TelemetryHook {
        let tracer = self
            .tracer
            .unwrap_or_else(|| opentelemetry::global::tracer_provider().tracer_with_scope(scope()));
        let meter = self
            .meter
            .unwrap_or_else(|| opentelemetry::global::meter_provider().meter_with_scope(scope()));
        TelemetryHook {
            tracer: std::sync::Arc::new(tracer),
            instruments: std::sync::Arc::new(Instruments::new(&meter)),
            runs: std::sync::Arc::new(RunLocal::with_max_runs(self.options.max_runs)),
            resumed_from: RunLocal::with_max_runs(self.options.max_runs),
            full_warned: Default::default(),
            options: self.options,
        }
    }
}
