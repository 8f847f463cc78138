//! Lifecycle hooks for LLM agents: the contract, the registry, the events and a reference loop.
//!
//! A [`HookProvider`] hooks into any of eight lifecycle events of an agent run — before and
//! after the run, each iteration, each model call and each tool call — plus custom events.
//! A [`HookRegistry`] holds providers in [`HookPriority`] order and dispatches events to the
//! providers that declared them. Events hand out `&mut` only to the fields a hook may change,
//! and record which provider changed what. [`Agent`] is a small reference loop that drives a
//! [`Model`] and [`Tool`]s through the registry.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use hooks_core::{async_trait, Agent, BeforeToolCallEvent, FnTool, HookError, HookProvider,
//!     HookRegistry, HookSet, ModelResponse, ToolCall, ToolSpec};
//! use hooks_core::test_util::ScriptedModel;
//! use serde_json::json;
//!
//! struct NoShell;
//!
//! #[async_trait]
//! impl HookProvider for NoShell {
//!     fn hooks(&self) -> HookSet { HookSet::BEFORE_TOOL_CALL }
//!     async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
//!         if e.tool_name() == "shell" { e.cancel("no shell here"); }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let model = ScriptedModel::new(vec![
//!     Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "shell", json!({"cmd": "ls"}))])),
//!     Ok(ModelResponse::text("I may not use the shell.")),
//! ]);
//! let shell = FnTool::new(ToolSpec::new("shell", "Runs a command", json!({"type": "object"})),
//!     |_| Ok("ran".into()));
//! let mut registry = HookRegistry::new();
//! registry.add(NoShell)?;
//! let agent = Agent::builder("demo", model).tool(shell).registry(Arc::new(registry)).build()?;
//! let out = agent.run("list files").await?;
//! assert_eq!(out.state.tool_executions[0].cancelled.as_deref(), Some("no shell here"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `test-util` | [`test_util::RecordingProvider`] and [`test_util::ScriptedModel`] for tests |

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
pub mod event;
mod priority;
mod provider;
mod registry;
mod run_local;
mod runner;
mod state;
pub mod text;

#[cfg(feature = "test-util")]
pub mod test_util;

pub use async_trait::async_trait;
pub use error::{BoxError, DispatchError, HookError, RegistryError, RetryTarget, RunError};
pub use event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Change, Field, HookEvent, HookSet, IterationEvent,
    SecretArguments,
};
pub use priority::HookPriority;
pub use provider::{CustomEvent, HookProvider};
pub use registry::{HookRegistry, Timer};
pub use run_local::{DEFAULT_MAX_RUNS, RunLocal, RunLocalFull};
pub use runner::{
    Agent, AgentBuilder, AgentConfig, AgentError, FnTool, MAX_ARGUMENT_DEPTH, Model, ModelRequest,
    RecordedChange, RunFailure, RunOutput, Tool, ToolError, ToolInput, drop_deep,
    nests_deeper_than, tool_output_from_bytes,
};
pub use serde_json;
pub use state::{
    AgentState, FinishReason, Message, ModelError, ModelErrorKind, ModelResponse, Role, RunId,
    TokenUsage, ToolCall, ToolExecution, ToolSpec,
};
