//! The driver (`HookRegistry::run`, `Run::model_call`, `Run::tool_call`): the hooks'
//! semantics for a loop we did not write.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::sync::{Arc, Mutex};

use hooks_core::agent::{Model, ModelRequest, ToolError};
use hooks_core::driver::RunOptions;
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    AfterToolCallEvent, AgentState, BeforeModelCallEvent, BeforeToolCallEvent, HookError,
    HookProvider, HookRegistry, HookSet, Message, ModelError, ModelOptions, ModelResponse,
    RunError, ToolCall, ToolChoice, ToolSpec, async_trait,
};
use serde_json::json;

/// Remembers what each request carried besides the messages.
#[derive(Default)]
struct Seen {
    tools: Mutex<Vec<Vec<String>>>,
    options: Mutex<Vec<ModelOptions>>,
    calls: Mutex<u32>,
}

struct Probe(Arc<Seen>, Vec<ModelResponse>);

#[async_trait]
impl Model for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    async fn complete(&self, r: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let mut n = self.0.calls.lock().unwrap();
        self.0
            .tools
            .lock()
            .unwrap()
            .push(r.tools.iter().map(|t| t.name.clone()).collect());
        self.0.options.lock().unwrap().push(r.options.clone());
        let reply = self.1[*n as usize % self.1.len()].clone();
        *n += 1;
        Ok(reply)
    }
}

/// Narrows the tools, forces a choice and sets sampling; answers from its cache on the
/// second iteration.
struct Shaper;

#[async_trait]
impl HookProvider for Shaper {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        if e.iteration() == 2 {
            e.respond_with(ModelResponse::text("from the cache"));
            return Ok(());
        }
        e.tools_mut().retain(|t| t.name == "search");
        *e.options_mut() = ModelOptions::default()
            .with_tool_choice(ToolChoice::Tool("search".into()))
            .with_temperature(0.0);
        Ok(())
    }
}

fn specs() -> Vec<ToolSpec> {
    ["search", "delete"]
        .map(|n| ToolSpec::new(n, n, json!({"type": "object"})))
        .to_vec()
}

#[tokio::test]
async fn before_model_hooks_shape_tools_and_options_and_may_answer_from_a_cache() {
    let seen = Arc::new(Seen::default());
    let model = Arc::new(Probe(
        seen.clone(),
        vec![ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "search",
            json!({}),
        )])],
    ));
    let mut registry = HookRegistry::new();
    registry.add(Shaper).unwrap();
    let agent = hooks_core::agent::Agent::builder("a", model)
        .tool(hooks_core::agent::FnTool::new(specs()[0].clone(), |_| {
            Ok("found".into())
        }))
        .tool(hooks_core::agent::FnTool::new(specs()[1].clone(), |_| {
            Ok("gone".into())
        }))
        .registry(Arc::new(registry))
        .build()
        .unwrap();
    let out = agent.run("find it").await.unwrap();
    // The second model call never reached the model: the hook answered it.
    assert_eq!(out.answer, "from the cache");
    assert_eq!(*seen.calls.lock().unwrap(), 1);
    assert_eq!(seen.tools.lock().unwrap()[0], ["search"]);
    let options = &seen.options.lock().unwrap()[0];
    assert_eq!(options.tool_choice, Some(ToolChoice::Tool("search".into())));
    assert_eq!(options.temperature, Some(0.0));
    // The shaped tools were for that call only: the run still offers both.
    assert_eq!(out.state.messages.last().unwrap().content, "from the cache");
}

#[derive(Clone, Debug, PartialEq)]
struct Tenant(String);

/// Stores the tenant for the run, adds a secret, cancels `delete`, retries a flaky tool once.
struct Policy;

#[async_trait]
impl HookProvider for Policy {
    fn hooks(&self) -> HookSet {
        HookSet::TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.extensions().insert(Tenant("acme".into()));
        e.secret_arguments_mut().insert("api_key", "sk-SECRET-7f3a");
        if e.tool_name() == "delete" {
            e.cancel("deleting needs a human");
        }
        Ok(())
    }
    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        if e.error().is_some() && e.attempt() == 0 {
            e.request_retry();
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_hand_written_loop_gets_cancel_secrets_retry_extensions_and_records() {
    let mut registry = HookRegistry::new();
    registry.add(Policy).unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "search", json!({"q": "x"})),
            ToolCall::new("c2", "delete", json!({"id": 7})),
            ToolCall::new("c3", "flaky", json!({})),
        ])),
        Ok(ModelResponse::text("done")),
    ]));
    let executed = Arc::new(Mutex::new(Vec::new()));
    let state = AgentState::new("custom").with_message(Message::user("go"));
    let options = RunOptions::new("scripted").with_tools(specs());
    let ran = executed.clone();
    let out = registry
        .run(state, options, |run| async move {
            loop {
                run.start_iteration().await?;
                let reply = run
                    .model_call(|call| {
                        let model = model.clone();
                        async move { model.complete(call.request()).await }
                    })
                    .await?;
                if reply.message.tool_calls.is_empty() {
                    run.end_iteration().await;
                    return Ok(reply.message.content);
                }
                run.tool_calls(&reply.message.tool_calls, |tool| {
                    let ran = ran.clone();
                    async move {
                        let tenant = tool.extensions().get::<Tenant>();
                        let key = tool.arguments["api_key"].as_str().unwrap().to_owned();
                        let attempt = {
                            let mut ran = ran.lock().unwrap();
                            ran.push(tool.name.clone());
                            ran.iter().filter(|n| **n == tool.name).count()
                        };
                        match tool.name.as_str() {
                            "flaky" if attempt == 1 => Err(ToolError::new("timeout")),
                            // Echoes its secret: the driver scrubs it from the result.
                            _ => Ok(format!("{} for {tenant:?} with {key}", tool.name)),
                        }
                    }
                })
                .await?;
                run.end_iteration().await;
            }
        })
        .await
        .unwrap();
    assert_eq!(out.answer, "done");
    // `delete` was cancelled, never executed; `flaky` ran twice.
    assert_eq!(*executed.lock().unwrap(), ["search", "flaky", "flaky"]);
    let ex = &out.state.tool_executions;
    assert_eq!(ex.len(), 3, "every call is recorded in the state");
    assert_eq!(ex[0].result, "search for Some(Tenant(\"acme\")) with ***");
    assert_eq!(ex[1].cancelled.as_deref(), Some("deleting needs a human"));
    assert_eq!(ex[2].attempts, 2);
    // Secrets are in no record, message or argument.
    let all = format!("{:?}", out.state);
    assert!(!all.contains("sk-SECRET-7f3a"), "{all}");
    // Results reached the conversation in call order.
    let tool_ids: Vec<_> = out
        .state
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    assert_eq!(tool_ids, ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn the_state_iteration_limit_is_the_one_limit() {
    let registry = HookRegistry::new();
    let state = AgentState::new("x")
        .with_message(Message::user("go"))
        .with_max_iterations(2);
    let err = registry
        .run(state, RunOptions::new("m"), |run| async move {
            loop {
                run.start_iteration().await?;
                run.end_iteration().await;
            }
        })
        .await
        .unwrap_err();
    assert!(matches!(
        err.error,
        RunError::IterationLimit { max_iterations: 2 }
    ));
    assert_eq!(err.state.iteration, 2);
}

#[tokio::test]
async fn the_agents_configured_limit_applies_to_a_state_it_is_given() {
    let model = ScriptedModel::new(vec![Ok(ModelResponse::tool_calls(vec![ToolCall::new(
        "c1",
        "nope",
        json!({}),
    )]))]);
    let agent = hooks_core::agent::Agent::builder("a", model)
        .max_iterations(1)
        .build()
        .unwrap();
    let state = AgentState::new("a")
        .with_message(Message::user("go"))
        .with_max_iterations(50);
    let err = agent.run_state(state).await.unwrap_err();
    assert!(matches!(
        err.error,
        RunError::IterationLimit { max_iterations: 1 }
    ));
}

#[tokio::test]
async fn repeated_and_empty_tool_call_ids_in_one_response_are_made_unique() {
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c", "echo", json!({"n": 1})),
            ToolCall::new("c", "echo", json!({"n": 2})),
            ToolCall::new("", "echo", json!({"n": 3})),
        ])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = hooks_core::agent::Agent::builder("a", model)
        .tool(hooks_core::agent::FnTool::new(
            ToolSpec::new("echo", "e", json!({})),
            |a| Ok(a["n"].to_string()),
        ))
        .build()
        .unwrap();
    let out = agent.run("go").await.unwrap();
    let ids: Vec<&str> = out
        .state
        .tool_executions
        .iter()
        .map(|e| e.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["c", "c#2", "call_2"]);
    // The conversation the model sees again carries the same ids as its results.
    let asked: Vec<&str> = out.state.messages[1]
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(asked, ids);
}
