//! Operator hooks send event data out of the process (a script's stdin, an HTTP body): with
//! guardrails on REDACT, what they get is redacted — the prompt, the tool arguments and the
//! tool result — and what they add goes through the guard's output side like everything else.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::command::CommandHooks;
use hooks::guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use serde_json::json;

const EMAIL: &str = "hook.marker.3318@example.com";

#[tokio::test]
async fn operator_hooks_see_only_redacted_event_data() {
    let server = TestServer::start(|_| TestReply::json(200, &json!({}))).await;
    let url = format!("{}/hook", server.url());
    let handler = json!([{"type": "http", "url": url, "timeout": 5}]);
    let settings = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": handler}],
        "PreToolUse": [{"hooks": handler}],
        "PostToolUse": [{"hooks": handler}],
        "Stop": [{"hooks": handler}],
    }});
    let mut config = GuardrailConfig::default();
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    // Registered first, so a tie would favour the hooks: the default priorities must still
    // put the guard first on the way in.
    let registry = HookRegistry::new()
        .with(CommandHooks::from_json(&settings.to_string()).unwrap())
        .unwrap()
        .with(GuardrailsHook::new(config).unwrap())
        .unwrap();
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "lookup",
            json!({"who": EMAIL}),
        )])),
        Ok(ModelResponse::text(format!("It is {EMAIL}."))),
    ]);
    let agent = Agent::builder("a", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(ToolSpec::new("lookup", "l", json!({})), |_| {
            Ok(format!("found {EMAIL}"))
        }))
        .build()
        .unwrap();
    agent.run(format!("Who is {EMAIL}?")).await.unwrap();
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(
        bodies.len(),
        4,
        "every event reached the handler: {bodies:?}"
    );
    for b in &bodies {
        assert!(
            !b.contains(EMAIL),
            "an operator hook got the raw value: {b}"
        );
    }
    assert!(bodies.iter().any(|b| b.contains("[REDACTED_EMAIL]")));
}
