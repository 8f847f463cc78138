//! `NoOpTelemetryHook`: the same surface, no telemetry.

use hooks_core::{HookPriority, HookProvider, HookSet};

/// A telemetry hook that does nothing, with [`TelemetryHook`](crate::TelemetryHook)'s constructor surface: swap it in
/// to turn telemetry off without touching the rest of the setup. It subscribes to no event, so
/// the registry never calls it.
#[derive(Debug, Clone)]
pub struct NoOpTelemetryHook {
    priority: HookPriority,
}

impl Default for NoOpTelemetryHook {
    /// The same as [`NoOpTelemetryHook::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl NoOpTelemetryHook {
    /// The no-op hook.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder mirroring [`TelemetryHookBuilder`](crate::TelemetryHookBuilder).
    pub fn builder() -> NoOpTelemetryHookBuilder {
        NoOpTelemetryHookBuilder {
            priority: HookPriority::OBSERVABILITY_DEFAULT,
        }
    }
}

impl HookProvider for NoOpTelemetryHook {
    fn priority(&self) -> HookPriority {
        self.priority
    }

    fn hooks(&self) -> HookSet {
        HookSet::NONE
    }
}

/// Builds a [`NoOpTelemetryHook`]; every option is accepted and ignored.
#[derive(Debug, Clone)]
pub struct NoOpTelemetryHookBuilder {
    priority: HookPriority,
}

impl NoOpTelemetryHookBuilder {
    /// Ignored.
    #[must_use]
    pub fn with_agent_name(self, _name: impl Into<String>) -> Self {
        self
    }

    /// Ignored.
    #[must_use]
    pub fn with_content_capture(self, _on: bool) -> Self {
        self
    }

    /// Ignored.
    #[must_use]
    pub fn with_max_content_chars(self, _n: usize) -> Self {
        self
    }

    /// Ignored.
    #[must_use]
    pub fn with_max_runs(self, _n: usize) -> Self {
        self
    }

    /// The priority (it never runs, but keeps its place in the registry's order).
    #[must_use]
    pub fn with_priority(mut self, p: HookPriority) -> Self {
        self.priority = p;
        self
    }

    /// Builds the hook.
    pub fn build(self) -> NoOpTelemetryHook {
        NoOpTelemetryHook {
            priority: self.priority,
        }
    }
}
