//! The steering judge is observable: each judgement gets its own GenAI `chat` span, child of
//! the tool call's `execute_tool` span, with token usage, the verdict and its source, and feeds
//! the token-usage metric — exported over real OTLP to a receiver on 127.0.0.1. Once with a
//! scripted judge model, once with the real llama.cpp judge through `OpenAiModel`.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hooks::agent::{Agent, FnTool, Model};
use hooks::http::HttpConfig;
use hooks::openai::OpenAiModel;
use hooks::otel::OtlpSetup;
use hooks::otel::testing::{AttrValue, OtlpReceiver, ReceivedSpan};
use hooks::steering::{ModelJudge, SteeringHook};
use hooks::test_util::{LocalModelServer, ScriptedModel};
use hooks::{FinishReason, HookRegistry, ModelResponse, TokenUsage, ToolCall, ToolSpec};
use serde_json::json;

/// Runs one tool call judged by `judge_model`; returns the spans and metric points received.
async fn judged_run(
    judge_model: Arc<dyn Model>,
    policy: &str,
) -> (Vec<ReceivedSpan>, Vec<hooks::otel::testing::ReceivedPoint>) {
    let (spans, points, _) = judged_run_raw(judge_model, policy).await;
    (spans, points)
}

/// Like [`judged_run`], with the raw bodies the collector received.
async fn judged_run_raw(
    judge_model: Arc<dyn Model>,
    policy: &str,
) -> (
    Vec<ReceivedSpan>,
    Vec<hooks::otel::testing::ReceivedPoint>,
    Vec<u8>,
) {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let steering =
        SteeringHook::builder(ModelJudge::new(judge_model).with_timeout(Duration::from_secs(120)))
            .with_policy(policy)
            .build();
    let mut registry = HookRegistry::new();
    registry.add(guard.hook().build()).unwrap();
    registry.add(steering).unwrap();
    let agent = Agent::builder(
        "judged",
        ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "search",
                json!({"q": "weather"}),
            )])),
            Ok(ModelResponse::text("done")),
        ]),
    )
    .tool(FnTool::new(ToolSpec::new("search", "s", json!({})), |_| {
        Ok("ran".into())
    }))
    .registry(Arc::new(registry))
    .build()
    .unwrap();
    agent.run("weather?").await.unwrap();
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(6, Duration::from_secs(10));
    (spans, receiver.points(), receiver.raw_bodies().concat())
}

fn int(s: &ReceivedSpan, key: &str) -> i64 {
    s.attributes
        .get(key)
        .and_then(AttrValue::as_i64)
        .unwrap_or_else(|| panic!("{key} missing on {}: {:?}", s.name, s.attributes))
}

fn check(spans: &[ReceivedSpan], points: &[hooks::otel::testing::ReceivedPoint], judge: &str) {
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool search")
        .unwrap();
    let judge_span = spans
        .iter()
        .find(|s| s.name == format!("chat {judge}"))
        .unwrap_or_else(|| {
            panic!(
                "no judge span: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(
        judge_span.parent_span_id, tool.span_id,
        "child of the tool call"
    );
    assert_eq!(judge_span.trace_id, tool.trace_id);
    assert_eq!(judge_span.kind, 3, "a client span");
    assert_eq!(judge_span.str_attr("gen_ai.request.model"), Some(judge));
    assert_eq!(judge_span.str_attr("hooks.steering.role"), Some("judge"));
    assert_eq!(judge_span.str_attr("hooks.steering.source"), Some("judge"));
    assert!(judge_span.str_attr("hooks.steering.verdict").is_some());
    assert!(int(judge_span, "gen_ai.usage.input_tokens") > 0);
    assert!(int(judge_span, "gen_ai.usage.output_tokens") > 0);
    // Inside the tool call's time.
    assert!(
        judge_span.start_end.0 >= tool.start_end.0 && judge_span.start_end.1 <= tool.start_end.1
    );
    let judge_tokens: Vec<_> = points
        .iter()
        .filter(|p| {
            p.metric == "gen_ai.client.token.usage"
                && p.attributes
                    .get("gen_ai.request.model")
                    .and_then(AttrValue::as_str)
                    == Some(judge)
        })
        .collect();
    assert_eq!(judge_tokens.len(), 2, "input and output: {points:?}");
    assert!(judge_tokens.iter().all(|p| p.value > 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_judges_span_is_a_child_of_the_tool_call_with_usage_and_verdict() {
    let judge = ScriptedModel::new(vec![Ok(ModelResponse::text("GUIDE: use the cache")
        .with_usage(TokenUsage::new(120, 7))
        .with_model("judge-v1"))])
    .with_name("scripted-judge");
    let (spans, points) = judged_run(Arc::new(judge), "cache first").await;
    check(&spans, &points, "scripted-judge");
    let span = spans
        .iter()
        .find(|s| s.name == "chat scripted-judge")
        .unwrap();
    assert_eq!(int(span, "gen_ai.usage.input_tokens"), 120);
    assert_eq!(span.str_attr("hooks.steering.verdict"), Some("GUIDE"));
    assert_eq!(span.str_attr("gen_ai.response.model"), Some("judge-v1"));
    // No prompt, reply or reason text on the span.
    for v in span.attributes.values() {
        if let Some(s) = v.as_str() {
            assert!(!s.contains("cache"), "{s}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_judgement_is_traced_as_a_failure_without_its_text() {
    let judge = ScriptedModel::new(vec![Ok(
        ModelResponse::text("maybe? secret-MARKER").with_usage(TokenUsage::new(10, 2))
    )])
    .with_name("scripted-judge");
    let (spans, _) = judged_run(Arc::new(judge), "anything").await;
    let span = spans
        .iter()
        .find(|s| s.name == "chat scripted-judge")
        .unwrap();
    assert_eq!(span.str_attr("hooks.steering.source"), Some("failure"));
    assert_eq!(span.str_attr("hooks.steering.failure"), Some("unparseable"));
    let all = format!("{span:?}");
    assert!(!all.contains("secret-MARKER"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_judge_server_cannot_put_text_into_telemetry() {
    // Its reply's text, model name and finish reason all carry markers.
    for (text, finish) in [
        (
            "GUIDE: REASONMARKER mail john@example.com",
            FinishReason::Stop,
        ),
        (
            "PROCEED",
            FinishReason::Other("FRMARKER john@example.com".into()),
        ),
        ("maybe REPLYMARKER", FinishReason::Stop),
    ] {
        let judge = ScriptedModel::new(vec![Ok(ModelResponse::text(text)
            .with_finish_reason(finish)
            .with_usage(TokenUsage::new(10, 2))
            .with_model(format!("MODELMARKER echo: {}", "x".repeat(1000))))])
        .with_name("scripted-judge");
        let (spans, _, raw) = judged_run_raw(Arc::new(judge), "anything").await;
        assert!(spans.iter().any(|s| s.name == "chat scripted-judge"));
        let raw = String::from_utf8_lossy(&raw);
        for marker in [
            "REASONMARKER",
            "FRMARKER",
            "REPLYMARKER",
            "MODELMARKER",
            "john@example.com",
        ] {
            assert!(!raw.contains(marker), "{marker} exported ({text})");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_llama_cpp_judges_span_arrives_with_its_token_usage() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(server) = LocalModelServer::start(&workspace) else {
        return;
    };
    let model = OpenAiModel::builder("smollm2")
        .with_base_url(server.base_url())
        .without_api_key()
        .with_timeout(Duration::from_secs(120))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let (spans, points) = judged_run(
        Arc::new(model),
        "Whatever the call is, the decision is PROCEED. Decision: PROCEED",
    )
    .await;
    check(&spans, &points, "smollm2");
}
