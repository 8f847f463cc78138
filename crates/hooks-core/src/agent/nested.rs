//! Agents as tools: [`AgentTool`] runs an agent on the calling model's input, as a run nested
//! under the call (see [`NestedCall`](crate::driver::NestedCall)).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Agent, Tool, ToolError, ToolInput};
use crate::error::RunError;
use crate::interrupt::RunOutcome;
use crate::registry::HookRegistry;
use crate::state::ToolSpec;
use crate::text::preview;

/// Which hooks a nested agent's run dispatches through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NestedRegistry {
    /// The calling run's registry: every provider of the caller applies inside (guardrails,
    /// steering, retry, telemetry, logging). The default for an agent built without a
    /// registry.
    Caller,
    /// The agent's own registry plus every guard of the caller's (see
    /// [`HookRegistry::nested`]): never fewer guards than the caller. The default for an
    /// agent built with a registry.
    OwnPlusGuards,
}

/// An agent as a tool (see [`Agent::as_tool`]): the calling model passes `{"input": "…"}`;
/// the agent runs on it as a child of the calling run, and its answer is the tool's result
/// (which the caller's after-tool hooks, its output guard included, see like any result).
///
/// - **Hooks reach inside.** The child dispatches through the caller's registry, or its own
///   plus the caller's guards ([`NestedRegistry`]); leaving a provider out is explicit
///   ([`without_provider`](Self::without_provider)) and recorded in the calling run's changes
///   ([`Field::NestedOptOut`](crate::event::Field::NestedOptOut)).
/// - **One tree.** The child has its own run id and a [`ParentRun`](crate::ParentRun) on every
///   event; it shares the top-level run's iteration budget and depth limit
///   ([`AgentConfig::max_depth`](super::AgentConfig::max_depth), default 3: deeper is an
///   error result the model sees, never a stack overflow), and its retry bound is at most
///   the caller's. Dropping the calling run drops the child (its providers see
///   `on_run_abandoned`).
/// - **Secrets stay out.** The child's prompt is the `input` argument the model wrote; a
///   secret argument (added by a hook) is never passed on, and a secret `input` is refused.
/// - **Interrupts surface.** When the caller can pause, a call the child's hooks interrupt
///   pauses the child and the caller's call with it; the decision on the caller's
///   interruption resumes the child.
///
/// ```
/// use std::sync::Arc;
/// use hooks_core::prelude::*;
/// use hooks_core::test_util::ScriptedModel;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let researcher = Agent::builder("researcher", ScriptedModel::new(vec![
///     Ok(ModelResponse::text("Paris")),
/// ])).build().unwrap();
/// let lead = Agent::builder("lead", ScriptedModel::new(vec![
///     Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "research", json!({"input": "capital of France?"}))])),
///     Ok(ModelResponse::text("It is Paris.")),
/// ]))
/// .tool(researcher.as_tool("research", "Looks things up"))
/// .build()
/// .unwrap();
/// let out = lead.run("Where is the Louvre?").await.unwrap();
/// assert_eq!(out.state.tool_executions[0].result, "Paris");
/// assert_eq!(out.answer, "It is Paris.");
/// # });
/// ```
pub struct AgentTool {
    agent: Arc<Agent>,
    spec: ToolSpec,
    registry: NestedRegistry,
    opted_out: Vec<String>,
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.spec.name)
            .field("agent", &self.agent.name)
            .field("registry", &self.registry)
            .field("opted_out", &self.opted_out)
            .finish()
    }
}

impl Agent {
    /// This agent as a tool named `name` (see [`AgentTool`]).
    pub fn as_tool(self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        AgentTool::new(Arc::new(self), name, description)
    }
}

impl AgentTool {
    /// `agent` as a tool named `name`, taking `{"input": string}`.
    pub fn new(agent: Arc<Agent>, name: impl Into<String>, description: impl Into<String>) -> Self {
        let spec = ToolSpec::new(
            name,
            description,
            json!({
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": "What to ask the agent"}
                },
                "required": ["input"]
            }),
        );
        let registry = if agent.own_registry {
            NestedRegistry::OwnPlusGuards
        } else {
            NestedRegistry::Caller
        };
        Self {
            agent,
            spec,
            registry,
            opted_out: Vec::new(),
        }
    }

    /// Which hooks the nested run dispatches through.
    #[must_use]
    pub fn with_registry(mut self, registry: NestedRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// Leaves the caller's provider `name` out of the nested run. Explicit and visible: the
    /// calling run records a [`Field::NestedOptOut`](crate::event::Field::NestedOptOut)
    /// change for it on every call, and a name the caller's registry does not have is an
    /// error result, never ignored.
    #[must_use]
    pub fn without_provider(mut self, name: impl Into<String>) -> Self {
        self.opted_out.push(name.into());
        self
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    fn failed(&self, error: &RunError) -> ToolError {
        ToolError::new(format!(
            "agent '{}' did not answer: {error}",
            preview(&self.agent.name, 64)
        ))
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        if input.is_secret("input") {
            return Err(ToolError::new(format!(
                "the input of agent tool '{}' is a secret argument; a secret is never passed to a nested agent's model",
                preview(&self.spec.name, 64)
            )));
        }
        let prompt = match input.arguments.get("input") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(ToolError::new(format!(
                    "agent tool '{}' needs a non-empty string argument 'input': what to ask the agent",
                    preview(&self.spec.name, 64)
                )));
            }
        };
        let agent = &*self.agent;
        let Some(nested) = input.nested() else {
            // Not inside a driven run (a wrapper rebuilt the input, say): the caller's guards,
            // budget and depth limit would not reach the agent. Fail closed.
            return Err(ToolError::new(format!(
                "agent tool '{}' was called without the run it belongs to, so its guards could not reach the nested agent; hand the tool the input of the driver's ToolInvocation (ToolInput::with_arguments keeps it), or call Agent::run directly",
                preview(&self.spec.name, 64)
            )));
        };
        let built;
        let registry = match self.registry {
            NestedRegistry::Caller if self.opted_out.is_empty() => nested.registry(),
            NestedRegistry::Caller => {
                built = HookRegistry::nested(nested.registry(), None, &self.opted_out)
                    .map_err(|e| ToolError::new(e.to_string()))?;
                &built
            }
            NestedRegistry::OwnPlusGuards => {
                built = HookRegistry::nested(
                    nested.registry(),
                    Some(agent.registry()),
                    &self.opted_out,
                )
                .map_err(|e| ToolError::new(e.to_string()))?;
                &built
            }
        };
        let outcome = match nested.take_resume() {
            Some((paused, _)) if paused.state().agent_id != agent.name => {
                return Err(ToolError::new(format!(
                    "the paused run under this call belongs to agent '{}', not '{}'; it is not resumed",
                    preview(&paused.state().agent_id, 64),
                    preview(&agent.name, 64)
                )));
            }
            Some((paused, decisions)) => {
                nested
                    .resume(
                        registry,
                        paused,
                        decisions,
                        agent.options(),
                        &self.opted_out,
                        |run| agent.body(run),
                    )
                    .await
            }
            None => {
                nested
                    .start(
                        registry,
                        agent.new_state(prompt),
                        agent.options(),
                        &self.opted_out,
                        |run| agent.body(run),
                    )
                    .await
            }
        };
        match outcome {
            Ok(RunOutcome::Completed(out)) => Ok(out.answer),
            Ok(RunOutcome::Interrupted(paused)) => match nested.pause(paused) {
                Ok(()) => Ok(String::new()),
                Err(e) => Err(self.failed(&e)),
            },
            Err(f) => Err(self.failed(&f.error)),
        }
    }
}
