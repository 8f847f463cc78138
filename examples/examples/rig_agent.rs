//! A rig agent with our providers: logging, guardrails (an e-mail redacted before the tool
//! sees it), steering (refunds over a limit turned away) and telemetry — all through one
//! `RigHooks`, added to the rig agent like any rig hook.
//!
//! Offline by default: rig's scripted mock model plays the model. With `OPENAI_BASE_URL` set
//! it talks to that OpenAI-compatible server through rig's own OpenAI client (key
//! `OPENAI_API_KEY`, model `HOOKS_LIVE_MODEL`, default `gpt-4o-mini`).
//!
//! ```text
//! cargo run --example rig_agent
//! ```

use std::sync::Arc;

use hooks::HookRegistry;
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::logging::LoggingHook;
use hooks::otel::{OtlpSetup, TelemetryGuard};
use hooks::rig::RigHooks;
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};
use rig_agent::AgentBuilder;
use rig_agent::tool::{Tool, ToolContext};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Map, Value, json};

/// A tool's failure.
#[derive(Debug)]
struct ToolFailed(String);

impl std::fmt::Display for ToolFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolFailed {}

/// Looks a customer up by e-mail (and prints what it was given: the guard's placeholder).
struct LookupCustomer;

impl Tool for LookupCustomer {
    const NAME: &'static str = "lookup_customer";
    type Args = Map<String, Value>;
    type Output = String;
    type Error = ToolFailed;

    fn description(&self) -> String {
        "Looks a customer up by e-mail".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]})
    }

    async fn call(&self, _cx: &mut ToolContext, args: Self::Args) -> Result<String, ToolFailed> {
        println!("  lookup_customer got {}", Value::Object(args));
        Ok("customer #1042, 2 orders, last order #77 (49.90 EUR)".into())
    }
}

/// Refunds an order.
struct RefundOrder;

impl Tool for RefundOrder {
    const NAME: &'static str = "refund_order";
    type Args = Map<String, Value>;
    type Output = String;
    type Error = ToolFailed;

    fn description(&self) -> String {
        "Refunds an order".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"order": {"type": "integer"}, "amount": {"type": "number"}}})
    }

    async fn call(&self, _cx: &mut ToolContext, args: Self::Args) -> Result<String, ToolFailed> {
        println!("  refund_order got {}", Value::Object(args));
        Ok("refunded".into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_target(false).init();

    let mut registry = HookRegistry::new();
    registry.add(LoggingHook::new())?;
    let telemetry = if OtlpSetup::endpoint_in_env() {
        OtlpSetup::new().with_service_name("rig_agent").install()?
    } else {
        TelemetryGuard::stdout()
    };
    registry.add(telemetry.hook().build())?;
    registry.add(GuardrailsHook::new(
        GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
    )?)?;
    registry.add(
        SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed).rule(
            "refund_order",
            SteeringAction::Guide,
            "refunds go through the billing team: tell the customer they will hear from it",
        ))
        .build(),
    )?;
    let hooks = RigHooks::new(Arc::new(registry)).agent_id("support");

    let prompt = "Customer jane.doe@example.com asks for a refund of her last order.";
    println!("Prompt: {prompt}");
    let answer = match std::env::var("OPENAI_BASE_URL") {
        Ok(base) if !base.is_empty() => {
            let key = std::env::var("OPENAI_API_KEY").unwrap_or_else(|_| "none".into());
            let model_name =
                std::env::var("HOOKS_LIVE_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
            let http = rig_reqwest::ReqwestClient::from(hooks::http::HttpConfig::new().client()?);
            let client = rig_core::providers::openai::OpenAIConfig::new(key)
                .with_base_url(base)
                .connect(http);
            let agent = AgentBuilder::new(client.chat(model_name.clone()))
                .preamble("You are a support agent. Use the tools.")
                .tool(LookupCustomer)
                .tool(RefundOrder)
                .add_hook(hooks.model(model_name))
                .build();
            agent.prompt(prompt).max_turns(6).await?.output()
        }
        _ => {
            let model = MockCompletionModel::from_turns([
                MockTurn::tool_call(
                    "c1",
                    "lookup_customer",
                    json!({"email": "jane.doe@example.com"}),
                ),
                MockTurn::tool_call("c2", "refund_order", json!({"order": 77, "amount": 49.9})),
                MockTurn::text(
                    "I found order #77 for jane.doe@example.com; billing will contact you about \
                     the refund.",
                ),
            ]);
            let agent = AgentBuilder::new(model.clone())
                .preamble("You are a support agent. Use the tools.")
                .tool(LookupCustomer)
                .tool(RefundOrder)
                .add_hook(hooks.model("mock-model"))
                .build();
            let answer = agent.prompt(prompt).max_turns(6).await?.output();
            let last = model
                .requests()
                .pop()
                .map(|r| format!("{:?}", r.chat_history));
            if let Some(seen) = last {
                println!(
                    "The model saw the refund turned away: {}",
                    seen.contains("billing team")
                );
                println!(
                    "The model never saw the e-mail: {}",
                    !seen.contains("jane.doe@example.com")
                );
            }
            answer
        }
    };
    println!("Answer: {answer}");
    telemetry.shutdown_async().await?;
    Ok(())
}
