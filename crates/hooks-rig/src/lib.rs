//! Every hooks provider inside [rig](https://crates.io/crates/rig-agent) agents.
//!
//! [`RigHooks`] is a rig `AgentHook` over an `Arc<HookRegistry>`: add it to a rig agent and
//! each rig prompt becomes one of our runs, with our logging, telemetry, guardrails, steering
//! and retry providers around its model and tool calls.
//!
//! ```
//! use std::sync::Arc;
//! use hooks_core::prelude::*;
//! use hooks_rig::RigHooks;
//! use rig_agent::AgentBuilder;
//! use rig_core::test_utils::{MockCompletionModel, MockTurn};
//! use serde_json::json;
//!
//! struct NoDelete;
//!
//! #[async_trait]
//! impl HookProvider for NoDelete {
//!     fn hooks(&self) -> HookSet { HookSet::BEFORE_TOOL_CALL }
//!     async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
//!         if e.arguments()["x"] == 13 { e.cancel("13 is unlucky"); }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = MockCompletionModel::from_turns([
//!     MockTurn::tool_call("c1", "add", json!({"x": 13, "y": 1})),
//!     MockTurn::text("I may not add 13."),
//! ]);
//! let recorded = model.clone();
//! let registry = Arc::new(HookRegistry::new().with(NoDelete)?);
//! let agent = rig_agent::AgentBuilder::new(model)
//!     .tool(rig_agent::test_utils::MockAddTool)
//!     .add_hook(RigHooks::new(registry))
//!     .build();
//! let answer = agent.prompt("add 13 and 1").max_turns(3).await?;
//! assert_eq!(answer.output(), "I may not add 13.");
//! // The model saw the cancellation as the tool's result.
//! let seen = format!("{:?}", recorded.requests()[1].chat_history);
//! assert!(seen.contains("13 is unlucky"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # What holds under rig
//!
//! Rig drives its own loop; the adapter maps each step to ours through our driver, so what a
//! provider does is what it does under our own agent — except where rig's hook API has no
//! way to say it:
//!
//! | our semantics | under rig |
//! |---|---|
//! | one run per prompt: run id, before/after-invocation, one span tree | holds (rig's run id is in the state's metadata as `rig.run_id`) |
//! | before-invocation rewrites the prompt | holds (rig's prompt rewrite) |
//! | before-invocation rewrites the history | **refused**: rig takes only a new prompt, so the run stops |
//! | before-invocation error | the run stops before any model call, with the (redacted) error |
//! | before-model-call rewrites messages (redaction) | holds for what is sent (rig's request patch); rig's own history keeps its originals |
//! | before-model-call changes temperature / max tokens | holds |
//! | before-model-call changes the tool list | **not carried**: hooks see no tool list under rig (rig sends its own) |
//! | a hook answers in the model's place | rig still makes the call (it cannot skip one), with the request as the hooks left it; its answer is replaced by the hook's |
//! | after-model-call rewrites a reply without tool calls (redaction) | holds (rig's completion replacement): rig's history and the answer hold the rewrite |
//! | after-model-call rewrites a reply with tool calls | rig cannot replace such a turn: each call is brought to the hooks' version at its dispatch (arguments rewritten, a removed call skipped), and every later request carries the hooks' version of the turn; **rig's own history keeps the turn as the model sent it** |
//! | after-model-call retry | holds for a tool-free turn: rig's repeat (counted in rig's `max_turns`), the rejected reply discarded; the feedback reaches the model in the retry's request (not rig's history), judged by a guard like any new message; **a turn with tool calls stops the run** (rig never retries one) |
//! | a model turn rig accepts without showing it to its hooks (a rig hook repairing or skipping an invalid tool call) | **the run stops**: no guard judged that turn |
//! | after-model-call error | the run stops with the (redacted) error |
//! | a failed model call | rig ends the run (rig's own retry policy aside); our after-model-call hooks see rig's error (a guard redacts it like any), and a retry they ask for **cannot happen** |
//! | before-tool-call cancel (a guard's BLOCK) | holds: the tool is skipped and the model sees the reason |
//! | before-tool-call interrupt (approval, steering INTERRUPT) | the call is **cancelled**, not paused: rig runs cannot pause; the model sees the reason |
//! | before-tool-call rewrites arguments (redaction) | holds (rig's argument rewrite) |
//! | secret arguments | reach the tool through rig's argument rewrite; rig may record the rewritten arguments in its own telemetry |
//! | after-tool-call rewrites the result or error (redaction) | holds: the model, rig's history and rig's result see the rewrite |
//! | after-tool-call retry | **not carried**: rig runs a tool once; the first attempt's result stands (a warning is logged) |
//! | iteration start / end | one iteration per rig model turn (a retry stays in its iteration) |
//! | streamed pieces (`on_model_delta`) | **not carried**: rig hands pieces to its consumer before any hook; a streaming rig run is refused while a provider guards model output ([`RigHooks::allow_unguarded_streams`] lifts it) |
//! | dropping the run | holds: dropping rig's run abandons ours (`on_run_abandoned`) |
//! | agents as tools, pausing and resuming | not available under rig |
//! | documents (rig's static or dynamic context, a document part of a message) | enter no event, so no hook judges them: **a request carrying documents is refused** while a provider guards ([`RigHooks::allow_unguarded_documents`] lifts it) |
//! | the agent's preamble | judged with each request (our hooks see it as the conversation's system message, and a guard judges every message of a request it has not judged in the run); a redaction holds for what is sent (rig's request patch) |
//! | rig's own request content: provider parameters, another rig hook's request patch | **not judged**: it is the developer's configuration, added to the request after our hooks ran |
//! | reasoning blocks, images, audio, tool-call ids | **not judged**: our messages have no field for them; they go back to the model as rig keeps them (reasoning and ids are the model's own output) |
//! | several `RigHooks` on one agent | each runs its own run over its own registry; a later one sees what earlier ones rewrote. The same `RigHooks` added twice to one run is refused |
//! | rig's own logs and spans | rig's, not ours: rig logs provider replies under its `rig::…` targets before any hook runs, so turn those targets off (or down) where redaction matters |
//!
//! Rig 0.44 is the newest release that builds on this workspace's toolchain (1.95): rig
//! 0.45 and 0.46 need rustc 1.97.1. The version is pinned exactly, since the adapter maps
//! rig's hook API, which changes between releases.

mod adapter;
pub mod convert;

pub use adapter::{DEFAULT_MAX_ITERATIONS, RigHooks};
pub use convert::ConvertError;
