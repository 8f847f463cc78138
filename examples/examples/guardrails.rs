//! GuardrailsHook: PII redacted everywhere, a blocked tool, a tool gate, and the violations
//! it recorded (without the values). Run with `cargo run --example guardrails`.

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook, ToolGate};
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = GuardrailConfig::default().with_tool_gate(ToolGate::new().deny_if(
        "refund",
        |a| a["amount"].as_f64().unwrap_or(f64::MAX) > 100.0,
        "refunds above 100 need a human",
    ));
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    let mut registry = HookRegistry::new();
    let guard = std::sync::Arc::new(GuardrailsHook::new(config)?);
    registry.add(guard.clone())?;

    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new(
                "c1",
                "crm_lookup",
                json!({"customer": {"email": "ana.lopez@example.com", "card": "4111 1111 1111 1111"}}),
            ),
            ToolCall::new("c2", "refund", json!({"amount": 450})),
            ToolCall::new("c3", "shell", json!({"cmd": "rm -rf /"})),
        ])),
        Ok(ModelResponse::text("Done. Her phone is +44 20 7981 2838.")),
    ]);
    let crm = FnTool::new(ToolSpec::new("crm_lookup", "CRM", json!({})), |a| {
        Ok(format!("record for {a:?}, last login from 203.0.113.7"))
    });
    let refund = FnTool::new(ToolSpec::new("refund", "Refunds", json!({})), |_| {
        Ok("refunded".into())
    });
    let shell = FnTool::new(ToolSpec::new("shell", "Shell", json!({})), |_| {
        Ok("ran".into())
    });
    let agent = Agent::builder("guardrails-demo", model)
        .tool(crm)
        .tool(refund)
        .tool(shell)
        .registry(Arc::new(registry))
        .build()?;
    let out = agent
        .run("Refund ana.lopez@example.com (SSN 123-45-6789) 450 EUR")
        .await?;
    for m in &out.state.messages {
        println!("{:>9}: {}", m.role.as_str(), m.content);
        for c in &m.tool_calls {
            println!("           call {} {}", c.name, c.arguments);
        }
    }
    println!("\nviolations:");
    for v in guard.violations() {
        println!(
            "  {} at {} -> {}: {}",
            v.rule, v.location, v.action, v.description
        );
    }
    Ok(())
}
