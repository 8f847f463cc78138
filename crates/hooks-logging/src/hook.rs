//! `LoggingHook`: one `tracing` event per lifecycle event, with the Python original's messages
//! and fields.

use hooks_core::HookPriority;
use tracing::Level;
use tracing::field::Value;

use crate::callsite::Site;
use crate::error::{Error, Result};
use crate::fields::{self, Content, Kind, Val};

/// The default target of every event.
pub const DEFAULT_TARGET: &str = "hooks::agent";

/// The configuration both logging hooks share.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) level: Level,
    pub(crate) model_level: Level,
    pub(crate) target: String,
    pub(crate) extras: Vec<(String, Val)>,
    pub(crate) content: Content,
    pub(crate) priority: HookPriority,
    /// The name in a registry; `None` for the type's name.
    pub(crate) name: Option<String>,
    /// One line per piece of a streamed reply (off: one line per reply).
    pub(crate) deltas: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            level: Level::INFO,
            model_level: Level::INFO,
            target: DEFAULT_TARGET.to_owned(),
            extras: Vec::new(),
            content: Content {
                arguments: false,
                results: false,
            },
            priority: HookPriority::OBSERVABILITY_DEFAULT,
            name: None,
            deltas: false,
        }
    }
}

impl Options {
    pub(crate) fn level_of(&self, kind: Kind) -> Level {
        if kind.is_model() {
            self.model_level
        } else {
            self.level
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.target.is_empty() {
            return Err(Error::EmptyTarget);
        }
        if self.extras.len() > crate::MAX_EXTRA_FIELDS {
            return Err(Error::TooManyExtraFields {
                given: self.extras.len(),
                max: crate::MAX_EXTRA_FIELDS,
            });
        }
        Ok(())
    }
}

/// Builder methods shared by [`LoggingHookBuilder`] and
/// [`StructuredLoggingHookBuilder`](crate::StructuredLoggingHookBuilder).
macro_rules! option_setters {
    () => {
        /// The level of invocation, iteration and tool events (default INFO).
        #[must_use]
        pub fn with_level(mut self, level: tracing::Level) -> Self {
            self.options.level = level;
            self
        }

        /// The level of model-call events (default INFO, like tool calls).
        #[must_use]
        pub fn with_model_level(mut self, level: tracing::Level) -> Self {
            self.options.model_level = level;
            self
        }

        /// The target of every event (default `hooks::agent`).
        #[must_use]
        pub fn with_target(mut self, target: impl Into<String>) -> Self {
            self.options.target = target.into();
            self
        }

        /// Adds a field to every event. Any key works: one that collides with a reserved name
        /// (`message`, `event`, `timestamp`, `level`, `target`, `fields`) or an event's own
        /// field is logged as `extra.<key>`.
        #[must_use]
        pub fn with_field(
            mut self,
            key: impl AsRef<str>,
            value: impl Into<serde_json::Value>,
        ) -> Self {
            let key = crate::fields::extra_key(key.as_ref()).into_owned();
            let value = crate::fields::Val::from_json(&value.into());
            match self.options.extras.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => self.options.extras.push((key, value)),
            }
            self
        }

        /// Logs tool arguments (truncated to 200 characters) instead of their keys. Off by
        /// default: argument values may hold personal data.
        #[must_use]
        pub fn with_log_arguments(mut self, on: bool) -> Self {
            self.options.content.arguments = on;
            self
        }

        /// Logs a line (at the model level) for every piece of a streamed reply: its length,
        /// never its text. Off by default: a streamed reply gets one line, like any other.
        #[must_use]
        pub fn with_log_deltas(mut self, on: bool) -> Self {
            self.options.deltas = on;
            self
        }

        /// Logs a preview of tool results (200 characters) and their length. Off by default.
        #[must_use]
        pub fn with_log_results(mut self, on: bool) -> Self {
            self.options.content.results = on;
            self
        }

        /// The priority (default OBSERVABILITY_DEFAULT).
        #[must_use]
        pub fn with_priority(mut self, priority: hooks_core::HookPriority) -> Self {
            self.options.priority = priority;
            self
        }

        /// The name in a registry (default: the type's name); two hooks of this type with
        /// different settings need different names.
        #[must_use]
        pub fn with_name(mut self, name: impl Into<String>) -> Self {
            self.options.name = Some(name.into());
            self
        }
    };
}
pub(crate) use option_setters;

/// The hook methods, forwarded to `self.log(kind, || values)`.
macro_rules! forward_hooks {
    ($ty:ty) => {
        #[hooks_core::async_trait]
        impl hooks_core::HookProvider for $ty {
            fn name(&self) -> &str {
                self.options.name.as_deref().unwrap_or(stringify!($ty))
            }

            fn priority(&self) -> hooks_core::HookPriority {
                self.options.priority
            }

            fn hooks(&self) -> hooks_core::HookSet {
                use hooks_core::HookSet;
                let set = HookSet::INVOCATION
                    | HookSet::ITERATION
                    | HookSet::MODEL_CALL
                    | HookSet::TOOL_CALL
                    | HookSet::RUN_ABANDONED;
                if self.options.deltas {
                    set | HookSet::MODEL_DELTA
                } else {
                    set
                }
            }

            async fn on_model_delta(
                &self,
                e: &mut hooks_core::ModelDeltaEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::ModelDelta, || fields::model_delta(e));
                Ok(())
            }

            fn on_run_abandoned(&self, run_id: &hooks_core::RunId) {
                self.log(Kind::InvocationAbandoned, || {
                    fields::invocation_abandoned(run_id)
                });
            }

            async fn on_before_invocation(
                &self,
                e: &mut hooks_core::BeforeInvocationEvent,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::InvocationStart, || fields::invocation_start(e));
                Ok(())
            }

            async fn on_after_invocation(
                &self,
                e: &hooks_core::AfterInvocationEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::InvocationEnd, || fields::invocation_end(e));
                Ok(())
            }

            async fn on_iteration_start(
                &self,
                e: &hooks_core::IterationEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::IterationStart, || fields::iteration_start(e));
                Ok(())
            }

            async fn on_iteration_end(
                &self,
                e: &hooks_core::IterationEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::IterationEnd, || fields::iteration_end(e));
                Ok(())
            }

            async fn on_before_model_call(
                &self,
                e: &mut hooks_core::BeforeModelCallEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::ModelStart, || fields::model_start(e));
                Ok(())
            }

            async fn on_after_model_call(
                &self,
                e: &mut hooks_core::AfterModelCallEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                self.log(Kind::ModelEnd, || fields::model_end(e));
                Ok(())
            }

            async fn on_before_tool_call(
                &self,
                e: &mut hooks_core::BeforeToolCallEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                let c = self.options.content;
                self.log(Kind::ToolStart, || fields::tool_start(e, c));
                Ok(())
            }

            async fn on_after_tool_call(
                &self,
                e: &mut hooks_core::AfterToolCallEvent<'_>,
            ) -> Result<(), hooks_core::HookError> {
                let c = self.options.content;
                self.log(Kind::ToolEnd, || fields::tool_end(e, c));
                Ok(())
            }
        }
    };
}
pub(crate) use forward_hooks;

/// Logs every lifecycle event as a `tracing` event with the Python original's messages and
/// fields.
///
/// | event | message | fields |
/// |---|---|---|
/// | before invocation | `Agent invocation starting` | run_id, agent_id, prompt_preview (100 chars), prompt_length; for a nested run parent_run_id, parent_tool_call_id, depth |
/// | after invocation | `Agent invocation completed` | run_id, agent_id, success, iterations, tool_calls, errors, duration_ms, error, interrupted (calls a paused run waits on) |
/// | iteration start | `Iteration starting` | run_id, iteration, max_iterations |
/// | iteration end | `Iteration completed` | run_id, iteration, messages |
/// | before model call (DEBUG) | `Model call starting` | run_id, iteration, attempt, model, message_count, tool_count |
/// | after model call (DEBUG) | `Model call completed` | run_id, iteration, attempt, model, success, finish_reason, tool_calls, input_tokens, output_tokens, error_kind, duration_ms |
/// | before tool call | `Tool call starting` | run_id, tool_name, tool_call_id, argument_keys — or arguments with `log_arguments` |
/// | after tool call | `Tool call completed` | run_id, tool_name, tool_call_id, success, duration_ms, error, cancelled, and with `log_results` result_preview (200 chars), result_length; interrupted |
/// | run dropped midway | `Agent invocation abandoned` | run_id |
/// | a streamed reply's piece, with `log_deltas` (at the model level) | `Model reply piece` | run_id, iteration, attempt, length (never the text), last |
///
/// Truncation counts characters and never splits a UTF-8 sequence. Events at a disabled level
/// cost a level check, nothing more.
///
/// ```
/// use hooks_logging::LoggingHook;
/// let hook = LoggingHook::builder()
///     .with_target("my_app::agent")
///     .with_field("service", "checkout")
///     .build()
///     .unwrap();
/// # let _ = hook;
/// ```
#[derive(Debug)]
pub struct LoggingHook {
    options: Options,
    sites: [&'static Site; Kind::ALL.len()],
}

impl Default for LoggingHook {
    fn default() -> Self {
        Self::new()
    }
}

impl LoggingHook {
    /// A hook with the defaults: INFO (model calls DEBUG), target `hooks::agent`, no argument
    /// values or results.
    pub fn new() -> Self {
        Self::from_options(Options::default())
    }

    /// A builder for a configured hook.
    pub fn builder() -> LoggingHookBuilder {
        LoggingHookBuilder {
            options: Options::default(),
        }
    }

    fn from_options(options: Options) -> Self {
        let extra_names: Vec<&str> = options.extras.iter().map(|(k, _)| k.as_str()).collect();
        let sites = Kind::ALL.map(|kind| {
            let mut names = vec!["message".to_owned()];
            names.extend(kind.fields().iter().map(|f| (*f).to_owned()));
            names.extend(extra_names.iter().map(|k| (*k).to_owned()));
            Site::get(
                kind.event(),
                &options.target,
                options.level_of(kind),
                &names,
            )
        });
        Self { options, sites }
    }

    #[inline]
    fn log(&self, kind: Kind, values: impl FnOnce() -> Vec<Option<Val>>) {
        let site = self.sites[kind.index()];
        if !site.enabled() {
            return;
        }
        let values = values();
        let message = kind.message();
        let mut refs: Vec<Option<&dyn Value>> =
            Vec::with_capacity(1 + values.len() + self.options.extras.len());
        refs.push(Some(&message as &dyn Value));
        refs.extend(values.iter().map(|v| v.as_ref().map(Val::as_value)));
        refs.extend(self.options.extras.iter().map(|(_, v)| Some(v.as_value())));
        site.emit(&refs);
    }
}

/// Builds a [`LoggingHook`].
#[derive(Debug, Clone, Default)]
pub struct LoggingHookBuilder {
    options: Options,
}

impl LoggingHookBuilder {
    option_setters!();

    /// Builds the hook.
    ///
    /// # Errors
    /// [`Error::EmptyTarget`] for an empty target; [`Error::TooManyExtraFields`] past
    /// [`MAX_EXTRA_FIELDS`](crate::MAX_EXTRA_FIELDS).
    pub fn build(self) -> Result<LoggingHook> {
        self.options.validate()?;
        Ok(LoggingHook::from_options(self.options))
    }
}

forward_hooks!(LoggingHook);
