//! LoggingHook and StructuredLoggingHook: the same run logged as `tracing` events and as JSON
//! lines. Run with `cargo run --example logging`.

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::logging::{LoggingHook, StructuredLoggingHook, json_subscriber};
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A subscriber that prints every event as one JSON line (the structured hook's lines as
    // they are). Programs with a subscriber of their own keep it: the hooks log through it.
    tracing::subscriber::set_global_default(json_subscriber(std::io::stdout))?;

    let mut registry = HookRegistry::new();
    registry.add(
        LoggingHook::builder()
            .with_field("service", "demo")
            .build()?,
    )?;
    registry.add(
        StructuredLoggingHook::builder()
            .with_log_arguments(true)
            .with_log_results(true)
            .build()?,
    )?;

    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "weather",
            json!({"city": "Paris"}),
        )])),
        Ok(ModelResponse::text("Sunny, 21 °C.")),
    ]);
    let weather = FnTool::new(
        ToolSpec::new("weather", "Current weather", json!({})),
        |_| Ok("sunny, 21 °C".into()),
    );
    let agent = Agent::builder("logging-demo", model)
        .tool(weather)
        .registry(Arc::new(registry))
        .build()?;
    agent.run("Weather in Paris?").await?;
    Ok(())
}
