//! Steering for agent runs: a judge model decides, for each tool call, PROCEED, GUIDE (cancel
//! with guidance the model sees) or INTERRUPT (needs a human's approval).
//!
//! [`SteeringHook`] asks a [`JudgeModel`] — [`OpenAiJudge`] speaks the OpenAI-compatible
//! chat-completions API (any local server too), [`RuleJudge`] decides by rules without a
//! model. Stricter than the Python original, which fails open on everything: the verdict must
//! be a whole word at the start of the answer, and a judge that errs, times out, is cut off
//! or answers garbage follows an explicit [`FailurePolicy`] (default: fail closed).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use hooks_core::HookRegistry;
//! use hooks_steering::{OpenAiJudge, SteeringHook};
//!
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let judge = OpenAiJudge::builder().with_base_url("http://127.0.0.1:8080/v1").build()?;
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
//! behind its `steering` feature. It needs a `tokio` runtime (timeouts, the HTTP client).

mod error;
mod hook;
mod judge;
mod verdict;

pub use error::{Error, JudgeError, Result};
pub use hook::{
    ApprovalRequest, Approver, DEFAULT_MAX_ARGUMENT_CHARS, Decision, DecisionSource, FailurePolicy,
    RECENT_CALLS, SYSTEM_PROMPT, StdinApprover, SteeringHook, SteeringHookBuilder, escape_data,
};
pub use judge::{
    JudgeModel, JudgeReply, JudgeRequest, OpenAiJudge, OpenAiJudgeBuilder, RuleJudge,
    decision_schema,
};
pub use verdict::{MAX_REASON_CHARS, ParseError, SteeringAction, Verdict, parse_verdict};
