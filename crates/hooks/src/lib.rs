//! Lifecycle hooks for LLM agents — the umbrella crate.
//!
//! Re-exports [`hooks_core`] at its root and each built-in provider as a module behind a
//! Cargo feature.
//!
//! | feature | module | crate |
//! |---|---|---|
//! | (always) | root | `hooks-core`: the contract, registry, events and reference loop |
//! | `test-util` | [`test_util`] | recording provider and scripted model |
//! | `logging` | `logging` | `hooks-logging`: `LoggingHook`, `StructuredLoggingHook` |
//! | `retry` | `retry` | `hooks-retry`: `ModelRetryHook`, `ToolRetryHook` |
//! | `guardrails` | `guardrails` | `hooks-guardrails`: `GuardrailsHook`, PII detection, tool gate |
//! | `otel` | `otel` | `hooks-otel`: `TelemetryHook`, `NoOpTelemetryHook`, OTLP setup |
//! | `steering` | `steering` | `hooks-steering`: `SteeringHook`, `ModelJudge`, `RuleJudge` |
//! | `openai` | `openai`, `http` | `hooks-openai`: `OpenAiModel` for any OpenAI-compatible server; TLS and proxy settings |
//! | `command` | `command` | `hooks-command`: `CommandHooks`, operator hooks from a settings file |
//! | `rig` | `rig` | `hooks-rig`: `RigHooks`, every provider inside rig agents |
//! | `full` | | every provider |

pub use hooks_core::*;

#[cfg(feature = "logging")]
#[doc(inline)]
pub use hooks_logging as logging;

#[cfg(feature = "retry")]
#[doc(inline)]
pub use hooks_retry as retry;

#[cfg(feature = "guardrails")]
#[doc(inline)]
pub use hooks_guardrails as guardrails;

#[cfg(feature = "otel")]
#[doc(inline)]
pub use hooks_otel as otel;

#[cfg(feature = "steering")]
#[doc(inline)]
pub use hooks_steering as steering;

#[cfg(feature = "openai")]
#[doc(inline)]
pub use hooks_openai as openai;

#[cfg(feature = "command")]
#[doc(inline)]
pub use hooks_command as command;

#[cfg(feature = "rig")]
#[doc(inline)]
pub use hooks_rig as rig;

/// The README's examples, compiled and run as doctests (they use every provider).
#[cfg(all(doctest, feature = "full", feature = "test-util"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
