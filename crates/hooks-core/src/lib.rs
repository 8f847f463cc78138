//! Lifecycle hooks for LLM agents: the contract, the registry, the events and a reference loop.
//!
//! A [`HookProvider`] hooks into any of eight lifecycle events of an agent run — before and
//! after the run, each iteration, each model call and each tool call — plus custom events.
//! A [`HookRegistry`] holds providers in [`HookPriority`] order and dispatches events to the
//! providers that declared them. Events hand out `&mut` only to the fields a hook may change,
//! and record which provider changed what.
//!
//! - [`driver`] gives any agent loop the hooks' semantics: [`HookRegistry::run`] around a
//!   run, [`driver::Run::model_call`] and [`driver::Run::tool_call`] around each call.
//! - [`agent`] is a small reference loop built on that driver: an [`agent::Agent`] that drives
//!   an [`agent::Model`] and [`agent::Tool`]s.
//! - [`RunLocal`] keeps a provider's per-run state; [`Extensions`] carries typed values
//!   between the hooks and tools of one run.
//! - [`prelude`] has the common names in one `use`.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use hooks_core::prelude::*;
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
//! | `test-util` | `test_util::RecordingProvider` and `test_util::ScriptedModel` for tests |
//! | `rt-tokio` | `TokioTimer`, the per-hook deadline's timer on tokio |
//! | `http` | [`http::HttpConfig`]: the rustls HTTP client (system and custom roots, proxies) the HTTP siblings share |
//! | `http-blocking` | `HttpConfig::blocking_client` too |
//! | `test-tls` | `test_util::TestCa`: a throwaway CA and a server certificate for 127.0.0.1 |
//! | `test-server` | `test_util::TestServer`: an HTTP(S) server on loopback for tests |

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
pub mod driver;
mod error;
pub mod event;
mod extensions;
#[cfg(feature = "http")]
pub mod http;
pub mod interrupt;
pub mod json;
pub mod observe;
mod offload;
mod priority;
mod provider;
mod registry;
mod run_local;
mod state;
pub mod stream;
pub mod text;

#[cfg(feature = "test-util")]
pub mod test_util;

#[cfg(feature = "rt-tokio")]
mod timer;

pub use async_trait::async_trait;
pub use error::{BoxError, DispatchError, HookError, RegistryError, RetryTarget, RunError};
pub use event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Change, EventContext, Field, HookEvent, HookSet,
    IterationEvent, ModelDeltaEvent, SecretArguments, ToolOutcome,
};
pub use extensions::Extensions;
pub use offload::offload;
pub use priority::HookPriority;
pub use provider::{CustomEvent, HookProvider};
pub use registry::{HookRegistry, Timer};
pub use run_local::{DEFAULT_MAX_RUNS, RunLocal, RunLocalFull};
pub use serde_json;
pub use state::{
    AgentState, FinishReason, Message, ModelError, ModelErrorKind, ModelOptions, ModelResponse,
    ParentRun, ResponseFormat, Role, RunId, TokenUsage, ToolCall, ToolChoice, ToolExecution,
    ToolSpec,
};
#[cfg(feature = "rt-tokio")]
pub use timer::TokioTimer;

/// The names most code needs: the contract, the events, the vocabulary and the reference loop.
///
/// ```
/// use hooks_core::prelude::*;
/// struct Quiet;
/// impl HookProvider for Quiet {
///     fn hooks(&self) -> HookSet { HookSet::NONE }
/// }
/// ```
pub mod prelude {
    pub use crate::agent::{Agent, FnTool, Model, Tool, ToolError};
    pub use crate::{
        AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, AgentState,
        BeforeInvocationEvent, BeforeModelCallEvent, BeforeToolCallEvent, HookError, HookEvent,
        HookPriority, HookProvider, HookRegistry, HookSet, IterationEvent, Message, ModelError,
        ModelResponse, RunId, ToolCall, ToolSpec, async_trait,
    };
}
