//! TelemetryHook: one span tree per run. Exports OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is
//! set, prints the spans otherwise. Run with `cargo run --example telemetry`.

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::otel::{OtlpSetup, TelemetryGuard};
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelResponse, TokenUsage, ToolCall, ToolSpec};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let telemetry = if OtlpSetup::endpoint_in_env() {
        OtlpSetup::new()
            .with_service_name("telemetry-demo")
            .install()?
    } else {
        TelemetryGuard::stdout()
    };
    let mut registry = HookRegistry::new();
    registry.add(telemetry.hook().with_agent_name("demo").build())?;

    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "search", json!({"q": "rust hooks"})),
            ToolCall::new("c2", "search", json!({"q": "opentelemetry genai"})),
        ])
        .with_usage(TokenUsage::new(120, 30))),
        Ok(ModelResponse::text("Here is what I found.").with_usage(TokenUsage::new(200, 12))),
    ])
    .with_name("demo-model");
    let search = FnTool::new(ToolSpec::new("search", "Searches", json!({})), |_| {
        Ok("3 results".into())
    });
    let agent = Agent::builder("telemetry-demo", model)
        .tool(search)
        .registry(Arc::new(registry))
        .build()?;
    agent.run("Find me things").await?;
    telemetry.force_flush()?;
    println!("spans exported: {}", telemetry.spans_exported());
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await??;
    Ok(())
}
