//! SteeringHook: a judge decides each tool call. Uses the OpenAI-compatible server named by
//! `HOOKS_JUDGE_BASE_URL` (model `HOOKS_JUDGE_MODEL`) when set, else a deterministic rule
//! judge. With `--approve`, INTERRUPTs are put to you on the terminal.
//! Run with `cargo run --example steering`.

use std::sync::Arc;

use hooks::agent::{Agent, FnTool};
use hooks::openai::OpenAiModel;
use hooks::steering::{
    JudgeModel, ModelJudge, RuleJudge, StdinApprover, SteeringAction, SteeringHook,
};
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let judge: Arc<dyn JudgeModel> = match std::env::var("HOOKS_JUDGE_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => Arc::new(ModelJudge::new(
            OpenAiModel::builder(
                std::env::var("HOOKS_JUDGE_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
            )
            .with_base_url(url)
            .build()?,
        )),
        _ => Arc::new(
            RuleJudge::new(SteeringAction::Proceed)
                .rule(
                    "delete_",
                    SteeringAction::Interrupt,
                    "deleting needs a human",
                )
                .rule(
                    "email_",
                    SteeringAction::Guide,
                    "draft the e-mail for review instead",
                ),
        ),
    };
    println!("judge: {}", judge.name());
    let mut builder = SteeringHook::builder(judge)
        .with_policy("Help with the account; never delete data or send e-mails without review.")
        .with_interrupt_tools(["wire_transfer"]);
    if std::env::args().any(|a| a == "--approve") {
        builder = builder.with_approver(StdinApprover);
    }
    let steering = Arc::new(builder.build());
    let mut registry = HookRegistry::new();
    registry.add(steering.clone())?;

    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "read_account", json!({"id": 7})),
            ToolCall::new("c2", "email_customer", json!({"id": 7, "text": "hi"})),
            ToolCall::new("c3", "delete_account", json!({"id": 7})),
            ToolCall::new("c4", "wire_transfer", json!({"amount": 900})),
        ])),
        Ok(ModelResponse::text(
            "Read the account; the rest needs review.",
        )),
    ]);
    let mut agent = Agent::builder("steering-demo", model)
        .registry(Arc::new(registry))
        .parallel_tool_calls(false);
    for name in [
        "read_account",
        "email_customer",
        "delete_account",
        "wire_transfer",
    ] {
        agent = agent.tool(FnTool::new(
            ToolSpec::new(name, name, json!({})),
            move |_| Ok(format!("{name}: done")),
        ));
    }
    let out = agent.build()?.run("Tidy up account 7").await?;
    for t in &out.state.tool_executions {
        println!("{:>15} -> {}", t.tool_name, t.result);
    }
    for d in steering.decisions() {
        println!(
            "decision: {} {} ({:?})",
            d.tool_name.as_deref().unwrap_or("-"),
            d.action,
            d.source
        );
    }
    Ok(())
}
