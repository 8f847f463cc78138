//! Steering for agent runs: a judge model decides, for each tool call, PROCEED, GUIDE (cancel
//! with guidance the model sees) or INTERRUPT (needs a human's approval).
//!
//! [`SteeringHook`] asks a [`JudgeModel`] — [`ModelJudge`] asks any core
//! [`Model`](hooks_core::agent::Model) (`OpenAiModel` from `hooks-openai` for an
//! OpenAI-compatible server, hosted or local), [`RuleJudge`] decides by rules without a
//! model. This crate has no HTTP client of its own. Stricter than the Python original, which fails open on everything: the verdict must
//! be a whole word at the start of the answer, and a judge that errs, times out, is cut off
//! or answers garbage follows an explicit [`FailurePolicy`] (default: fail closed).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooks_core::HookRegistry;
//! use hooks_openai::OpenAiModel;
//! use hooks_steering::{ModelJudge, SteeringHook};
//!
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let model = OpenAiModel::builder("smollm2").with_base_url("http://127.0.0.1:8080/v1").build()?;
//! let judge = ModelJudge::new(model);
//! let steering = Arc::new(
//!     SteeringHook::builder(judge)
//!         .with_policy("Read-only access; never modify customer records.")
//!         .with_interrupt_tools(["refund"])
//!         .build(),
//! );
//! let mut registry = HookRegistry::new();
//! registry.add(steering.clone())?;
//! # Ok(()) }
//! ```
//!
//! # Features
//!
//! This crate has no features; the umbrella crate `hooks` exposes it as `hooks::steering`
//! behind its `steering` feature. It needs a `tokio` runtime (the judge's deadline).

mod error;
mod hook;
mod judge;
mod verdict;

pub use error::JudgeError;
pub use hook::{
    ApprovalRequest, Approver, DEFAULT_MAX_ARGUMENT_CHARS, Decision, DecisionSource, FailurePolicy,
    RECENT_CALLS, SYSTEM_PROMPT, StdinApprover, SteeringHook, SteeringHookBuilder, escape_data,
};
pub use judge::{JudgeModel, JudgeReply, JudgeRequest, ModelJudge, RuleJudge, decision_schema};
pub use verdict::{
    MAX_REASON_CHARS, NO_REASON, ParseError, SteeringAction, Verdict, parse_verdict,
};
