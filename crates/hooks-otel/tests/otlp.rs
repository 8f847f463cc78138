//! TelemetryHook over a real OTLP/HTTP connection to a receiver on 127.0.0.1: span trees,
//! parenting under concurrency, cancels, failures, content capture, metrics, both export
//! modes and the standard environment variables.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool, ToolError};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    BeforeToolCallEvent, HookError, HookProvider, HookRegistry, HookSet, ModelError, ModelResponse,
    TokenUsage, ToolCall, ToolSpec, async_trait,
};
use hooks_otel::testing::{AttrValue, OtlpReceiver, ReceivedSpan};
use hooks_otel::{ExportMode, OtlpSetup, TelemetryGuard, TelemetryHook, semconv};
use serde_json::json;

fn setup(mode: ExportMode, capture: bool) -> (OtlpReceiver, TelemetryGuard, Arc<TelemetryHook>) {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .with_service_name("otel-test")
        .with_export_mode(mode)
        .install()
        .unwrap();
    let hook = Arc::new(
        guard
            .hook()
            .with_agent_name("tester")
            .with_content_capture(capture)
            .build(),
    );
    (receiver, guard, hook)
}

struct CancelSecret;

#[async_trait]
impl HookProvider for CancelSecret {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.arguments().get("secret").is_some() {
            e.cancel("no secrets");
        }
        Ok(())
    }
}

fn agent(hook: Arc<TelemetryHook>, script: Vec<Result<ModelResponse, ModelError>>) -> Agent {
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    registry.add(CancelSecret).unwrap();
    let search = FnTool::new(ToolSpec::new("search", "searches", json!({})), |args| {
        if args.get("fail").is_some() {
            return Err(ToolError::new("backend down"));
        }
        Ok(format!(
            "results for {}",
            args.get("q").and_then(|v| v.as_str()).unwrap_or("?")
        ))
    });
    Agent::builder(
        "support-bot",
        ScriptedModel::new(script).with_name("gpt-test"),
    )
    .tool(search)
    .registry(Arc::new(registry))
    .build()
    .unwrap()
}

fn by_name<'a>(spans: &'a [ReceivedSpan], prefix: &str) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.name.starts_with(prefix))
        .collect()
}

fn two_step() -> Vec<Result<ModelResponse, ModelError>> {
    vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("call-a", "search", json!({"q": "paris weather"})),
            ToolCall::new("call-b", "search", json!({"q": "rome weather"})),
            ToolCall::new("call-c", "search", json!({"secret": "x"})),
        ])
        .with_usage(TokenUsage::new(100, 20))
        .with_model("gpt-test-2026")),
        Ok(ModelResponse::text("sunny in both").with_usage(TokenUsage::new(150, 5))),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_one_tree_with_genai_names_and_attributes_over_real_otlp() {
    let (receiver, guard, hook) = setup(ExportMode::Blocking, false);
    let out = agent(hook.clone(), two_step())
        .run("weather?")
        .await
        .unwrap();
    assert_eq!(hook.open_runs(), 0);
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    // invoke_agent, 2 iterations, 2 chats, 3 tool calls.
    let spans = receiver.wait_for_spans(8, Duration::from_secs(10));
    assert_eq!(
        spans.len(),
        8,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    let root = by_name(&spans, "invoke_agent")[0];
    assert_eq!(root.name, "invoke_agent tester");
    assert_eq!(root.parent_span_id, "");
    assert_eq!(root.scope, "hooks");
    assert_eq!(
        root.resource.get("service.name"),
        Some(&AttrValue::Str("otel-test".into()))
    );
    assert_eq!(
        root.str_attr(semconv::GEN_AI_OPERATION_NAME),
        Some("invoke_agent")
    );
    assert_eq!(root.str_attr(semconv::GEN_AI_AGENT_NAME), Some("tester"));
    assert_eq!(root.str_attr(semconv::GEN_AI_AGENT_ID), Some("support-bot"));
    assert_eq!(
        root.str_attr(semconv::GEN_AI_CONVERSATION_ID),
        Some(out.state.run_id.as_str())
    );
    assert_eq!(
        root.attributes.get(semconv::HOOKS_SUCCESS),
        Some(&AttrValue::Bool(true))
    );
    assert_eq!(
        root.attributes.get(semconv::HOOKS_ITERATIONS),
        Some(&AttrValue::Int(2))
    );
    assert_eq!(
        root.attributes.get(semconv::HOOKS_TOOL_CALLS),
        Some(&AttrValue::Int(3))
    );
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace per run"
    );

    let iterations = by_name(&spans, "iteration");
    assert_eq!(iterations.len(), 2);
    assert!(iterations.iter().all(|s| s.parent_span_id == root.span_id));
    let it1 = iterations.iter().find(|s| s.name == "iteration 1").unwrap();

    let chats = by_name(&spans, "chat");
    assert_eq!(chats.len(), 2);
    assert!(
        chats
            .iter()
            .all(|s| s.name == "chat gpt-test" && s.kind == 3)
    );
    let first_chat = chats
        .iter()
        .find(|s| s.parent_span_id == it1.span_id)
        .unwrap();
    assert_eq!(
        first_chat.str_attr(semconv::GEN_AI_REQUEST_MODEL),
        Some("gpt-test")
    );
    assert_eq!(
        first_chat.str_attr(semconv::GEN_AI_RESPONSE_MODEL),
        Some("gpt-test-2026")
    );
    assert_eq!(
        first_chat
            .attributes
            .get(semconv::GEN_AI_USAGE_INPUT_TOKENS),
        Some(&AttrValue::Int(100))
    );
    assert_eq!(
        first_chat
            .attributes
            .get(semconv::GEN_AI_USAGE_OUTPUT_TOKENS),
        Some(&AttrValue::Int(20))
    );
    assert_eq!(
        first_chat
            .attributes
            .get(semconv::GEN_AI_RESPONSE_FINISH_REASONS),
        Some(&AttrValue::Array(vec![AttrValue::Str("tool_calls".into())]))
    );

    // Two parallel calls of one tool are two spans, each with its own call id, under iteration 1.
    let tools = by_name(&spans, "execute_tool search");
    assert_eq!(tools.len(), 3);
    assert!(tools.iter().all(|s| s.parent_span_id == it1.span_id));
    let ids: HashSet<&str> = tools
        .iter()
        .filter_map(|s| s.str_attr(semconv::GEN_AI_TOOL_CALL_ID))
        .collect();
    assert_eq!(ids, HashSet::from(["call-a", "call-b", "call-c"]));
    assert!(
        tools
            .iter()
            .all(|s| s.str_attr(semconv::GEN_AI_TOOL_TYPE) == Some("function"))
    );

    // The cancelled call still ended its span, marked as cancelled.
    let cancelled = tools
        .iter()
        .find(|s| s.str_attr(semconv::GEN_AI_TOOL_CALL_ID) == Some("call-c"))
        .unwrap();
    assert_eq!(
        cancelled.attributes.get(semconv::HOOKS_CANCELLED),
        Some(&AttrValue::Bool(true))
    );
    assert_eq!(cancelled.events[0].0, "cancelled");
    // Its reason is free text: exported only with content capture.
    assert!(cancelled.events[0].1.is_empty(), "{:?}", cancelled.events);

    // Content is not captured by default.
    for s in &spans {
        assert!(
            !s.attributes
                .contains_key(semconv::GEN_AI_TOOL_CALL_ARGUMENTS)
        );
        assert!(!s.attributes.contains_key(semconv::GEN_AI_TOOL_CALL_RESULT));
    }
    let raw: Vec<u8> = receiver.raw_bodies().concat();
    assert!(!String::from_utf8_lossy(&raw).contains("paris weather"));

    // Metrics arrived over the same wire.
    let points = receiver.points();
    // Every instrument carries its UCUM unit, as the GenAI conventions do.
    for (metric, unit) in [
        (semconv::METRIC_INVOCATIONS, "{invocation}"),
        (semconv::METRIC_ITERATIONS, "{iteration}"),
        (semconv::METRIC_TOOL_CALLS, "{call}"),
        (semconv::METRIC_TOOL_DURATION, "s"),
        (semconv::METRIC_TOKEN_USAGE, "{token}"),
    ] {
        let of: Vec<_> = points.iter().filter(|p| p.metric == metric).collect();
        assert!(!of.is_empty(), "{metric} was not exported");
        assert!(
            of.iter().all(|p| p.unit == unit),
            "{metric} has no unit {unit}"
        );
    }
    let duration: Vec<_> = points
        .iter()
        .filter(|p| p.metric == semconv::METRIC_OPERATION_DURATION)
        .collect();
    assert!(!duration.is_empty());
    assert!(
        duration.iter().all(|p| p.kind == "histogram"
            && p.unit == "s"
            && p.bounds == semconv::DURATION_BUCKETS)
    );
    let chat_points: u64 = duration
        .iter()
        .filter(|p| {
            p.attributes.get(semconv::GEN_AI_OPERATION_NAME) == Some(&AttrValue::Str("chat".into()))
        })
        .map(|p| p.count)
        .sum();
    assert_eq!(chat_points, 2);
    let tokens: BTreeMap<String, f64> = points
        .iter()
        .filter(|p| p.metric == semconv::METRIC_TOKEN_USAGE)
        .map(|p| {
            (
                p.attributes[semconv::GEN_AI_TOKEN_TYPE]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                p.value,
            )
        })
        .collect();
    assert_eq!(
        tokens,
        BTreeMap::from([("input".into(), 250.0), ("output".into(), 25.0)])
    );
    let calls: f64 = points
        .iter()
        .filter(|p| p.metric == semconv::METRIC_TOOL_CALLS)
        .map(|p| p.value)
        .sum();
    assert_eq!(calls, 3.0);
    let invocations: f64 = points
        .iter()
        .filter(|p| p.metric == semconv::METRIC_INVOCATIONS)
        .map(|p| p.value)
        .sum();
    assert_eq!(invocations, 1.0);
    let iterations: f64 = points
        .iter()
        .filter(|p| p.metric == semconv::METRIC_ITERATIONS)
        .map(|p| p.value)
        .sum();
    assert_eq!(iterations, 2.0);
}

#[tokio::test(flavor = "current_thread")]
async fn the_tokio_export_mode_works_on_a_current_thread_runtime() {
    let (receiver, guard, hook) = setup(ExportMode::Tokio, false);
    agent(hook, two_step()).run("weather?").await.unwrap();
    guard.shutdown_async().await.unwrap();
    let spans = receiver.wait_for_spans(8, Duration::from_secs(10));
    assert_eq!(spans.len(), 8);
    assert!(
        receiver
            .points()
            .iter()
            .any(|p| p.metric == semconv::METRIC_TOOL_CALLS)
    );

    // A blocking shutdown here would stall this very runtime: it is refused with a clear error.
    let (_receiver, guard, _hook) = setup(ExportMode::Tokio, false);
    assert!(matches!(
        guard.shutdown(),
        Err(hooks_otel::Error::WouldBlock)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_on_one_hook_never_parent_each_others_spans() {
    let (receiver, guard, hook) = setup(ExportMode::Blocking, false);
    let agent = Arc::new(agent(hook.clone(), two_step()));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let a = agent.clone();
            tokio::spawn(async move { a.run(format!("run {i}")).await.unwrap().state.run_id })
        })
        .collect();
    let mut run_ids = Vec::new();
    for h in handles {
        run_ids.push(h.await.unwrap());
    }
    assert_eq!(hook.open_runs(), 0);
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver.wait_for_spans(8 * 8, Duration::from_secs(10));
    assert_eq!(spans.len(), 64);
    let ids: BTreeMap<&str, &ReceivedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    for run in &run_ids {
        let root = spans
            .iter()
            .find(|s| s.str_attr(semconv::GEN_AI_CONVERSATION_ID) == Some(run.as_str()))
            .unwrap();
        let tree: Vec<&ReceivedSpan> = spans
            .iter()
            .filter(|s| s.trace_id == root.trace_id)
            .collect();
        assert_eq!(tree.len(), 8, "each run is its own trace of 8 spans");
        for s in tree {
            let mut cur = s;
            while !cur.parent_span_id.is_empty() {
                cur = ids[cur.parent_span_id.as_str()];
                assert_eq!(cur.trace_id, root.trace_id);
            }
            assert_eq!(
                cur.span_id, root.span_id,
                "every span leads to its own run's root"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_set_error_status_and_error_type_and_close_every_span() {
    let (receiver, guard, hook) = setup(ExportMode::Blocking, false);
    let script = vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "search",
            json!({"fail": true}),
        )])),
        Err(ModelError::RateLimited { retry_after: None }),
    ];
    let err = agent(hook.clone(), script).run("go").await.unwrap_err();
    assert_eq!(hook.open_runs(), 0, "no span stays open after a failed run");
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver.wait_for_spans(6, Duration::from_secs(10));
    let tool = by_name(&spans, "execute_tool")[0];
    assert_eq!(tool.status_code, 2);
    assert_eq!(
        tool.status_message, "tool call failed",
        "no tool error text without content capture"
    );
    assert_eq!(tool.str_attr(semconv::ERROR_TYPE), Some("tool_error"));
    let failed_chat = by_name(&spans, "chat")
        .into_iter()
        .find(|s| s.status_code == 2)
        .unwrap();
    assert_eq!(
        failed_chat.str_attr(semconv::ERROR_TYPE),
        Some("rate_limited")
    );
    let root = by_name(&spans, "invoke_agent")[0];
    assert_eq!(root.status_code, 2);
    assert_eq!(root.str_attr(semconv::ERROR_TYPE), Some("model"));
    assert_eq!(
        root.attributes.get(semconv::HOOKS_SUCCESS),
        Some(&AttrValue::Bool(false))
    );
    assert!(err.to_string().contains("rate limited"));
    let errors: f64 = receiver
        .points()
        .iter()
        .filter(|p| p.metric == semconv::METRIC_TOOL_ERRORS)
        .map(|p| p.value)
        .sum();
    assert_eq!(errors, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_capture_records_truncated_arguments_and_results_when_asked() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let hook = Arc::new(
        guard
            .hook()
            .with_content_capture(true)
            .with_max_content_chars(12)
            .build(),
    );
    agent(hook, two_step()).run("weather?").await.unwrap();
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver.wait_for_spans(8, Duration::from_secs(10));
    let a = by_name(&spans, "execute_tool")
        .into_iter()
        .find(|s| s.str_attr(semconv::GEN_AI_TOOL_CALL_ID) == Some("call-a"))
        .unwrap();
    assert_eq!(
        a.str_attr(semconv::GEN_AI_TOOL_CALL_ARGUMENTS),
        Some(r#"{"q":"paris ..."#)
    );
    assert_eq!(
        a.str_attr(semconv::GEN_AI_TOOL_CALL_RESULT),
        Some("results for ...")
    );
}

/// Runs in a child process with the standard variables set (the environment is process-wide,
/// so the parent test does not touch its own).
#[test]
fn env_child() {
    let Ok(endpoint) = std::env::var("HOOKS_OTEL_CHILD_ENDPOINT") else {
        return; // only meaningful as the child of `standard_environment_variables_are_honoured`
    };
    assert_eq!(
        std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap(),
        endpoint
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let guard = OtlpSetup::new().install().unwrap();
    let hook = Arc::new(guard.hook().build());
    rt.block_on(agent(hook, vec![Ok(ModelResponse::text("hi"))]).run("hello"))
        .unwrap();
    guard.shutdown().unwrap();
}

#[test]
fn standard_environment_variables_are_honoured() {
    let receiver = OtlpReceiver::start().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "env_child", "--nocapture", "--test-threads=1"])
        .env("HOOKS_OTEL_CHILD_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "from-env")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=ci,team=agents",
        )
        .status()
        .unwrap();
    assert!(status.success());
    let spans = receiver.wait_for_spans(3, Duration::from_secs(10));
    assert_eq!(spans.len(), 3);
    let r = &spans[0].resource;
    assert_eq!(
        r.get("service.name"),
        Some(&AttrValue::Str("from-env".into()))
    );
    assert_eq!(
        r.get("deployment.environment"),
        Some(&AttrValue::Str("ci".into()))
    );
    assert_eq!(r.get("team"), Some(&AttrValue::Str("agents".into())));
}

#[test]
fn the_tokio_mode_needs_a_runtime() {
    let err = OtlpSetup::new()
        .with_export_mode(ExportMode::Tokio)
        .install()
        .unwrap_err();
    assert!(matches!(err, hooks_otel::Error::NoRuntime));
}

#[test]
fn the_noop_hook_has_the_same_surface_and_subscribes_to_nothing() {
    let noop = hooks_otel::NoOpTelemetryHook::builder()
        .with_agent_name("x")
        .with_content_capture(true)
        .with_max_content_chars(5)
        .build();
    assert_eq!(noop.hooks(), HookSet::NONE);
    let (new, default) = (
        hooks_otel::NoOpTelemetryHook::new(),
        hooks_otel::NoOpTelemetryHook::default(),
    );
    assert_eq!(new.priority(), default.priority());
    assert_eq!(
        new.priority(),
        hooks_core::HookPriority::OBSERVABILITY_DEFAULT
    );
    let mut r = HookRegistry::new();
    r.add(noop).unwrap();
    assert!(!r.has_subscribers(hooks_core::HookEvent::BeforeToolCall));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exported_spans_are_counted_and_stdout_mode_works_without_a_collector() {
    let (receiver, guard, hook) = setup(ExportMode::Blocking, false);
    agent(hook, two_step()).run("weather?").await.unwrap();
    guard.force_flush().unwrap();
    assert_eq!(guard.spans_exported(), 8);
    assert_eq!(receiver.spans().len(), 8);

    let stdout = TelemetryGuard::stdout();
    let hook = Arc::new(stdout.hook().build());
    agent(hook, two_step()).run("weather?").await.unwrap();
    assert_eq!(
        stdout.spans_exported(),
        8,
        "the simple exporter exports as spans end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_dropped_midway_still_ends_every_span() {
    let (receiver, guard, hook) = setup(ExportMode::Blocking, false);
    let mut registry = HookRegistry::new();
    registry.add(hook.clone()).unwrap();
    let hang = FnTool::new(ToolSpec::new("hang", "blocks", json!({})), |_| {
        Ok(String::new())
    });
    // The model never answers its second call: the run hangs there until it is dropped.
    struct Stall;
    #[async_trait]
    impl hooks_core::agent::Model for Stall {
        fn name(&self) -> &str {
            "stall"
        }
        async fn complete(
            &self,
            r: hooks_core::agent::ModelRequest<'_>,
        ) -> Result<ModelResponse, ModelError> {
            if r.messages.iter().any(|m| m.role == hooks_core::Role::Tool) {
                std::future::pending::<()>().await;
            }
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "hang",
                json!({}),
            )]))
        }
    }
    let agent = Agent::builder("dropped", Stall)
        .tool(hang)
        .registry(Arc::new(registry))
        .build()
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(200), agent.run("go"))
            .await
            .is_err()
    );
    assert_eq!(hook.open_runs(), 0, "the dropped run's spans were ended");
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver.wait_for_spans(6, Duration::from_secs(10));
    let root = by_name(&spans, "invoke_agent")[0];
    assert_eq!(root.status_code, 2);
    assert_eq!(root.str_attr(semconv::ERROR_TYPE), Some("abandoned"));
    let chat = by_name(&spans, "chat")
        .into_iter()
        .find(|s| s.str_attr(semconv::HOOKS_CLOSED_BY).is_some())
        .unwrap();
    assert_eq!(chat.str_attr(semconv::HOOKS_CLOSED_BY), Some("run_dropped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_past_the_bound_are_not_traced_and_the_traced_ones_are_whole() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .with_export_mode(ExportMode::Blocking)
        .install()
        .unwrap();
    let hook = Arc::new(guard.hook().with_max_runs(1).build());
    // One run holds the only place (driven by hand, still open) …
    let mut before = hooks_core::BeforeInvocationEvent::new(hooks_core::AgentState::new("held"));
    hook.on_before_invocation(&mut before).await.unwrap();
    assert_eq!(hook.open_runs(), 1);
    // … so a whole agent run finds no room: it runs, untraced, and leaves nothing open.
    agent(hook.clone(), two_step())
        .run("weather?")
        .await
        .unwrap();
    assert_eq!(hook.open_runs(), 1);
    let state = before.into_state();
    hook.on_after_invocation(&hooks_core::AfterInvocationEvent::new(
        &state,
        None,
        Duration::ZERO,
    ))
    .await
    .unwrap();
    assert_eq!(hook.open_runs(), 0);
    // With room again, the next run is traced whole.
    agent(hook.clone(), two_step())
        .run("weather?")
        .await
        .unwrap();
    tokio::task::spawn_blocking(move || guard.shutdown().unwrap())
        .await
        .unwrap();
    let spans = receiver.wait_for_spans(8, Duration::from_secs(10));
    let roots = by_name(&spans, "invoke_agent");
    let no_room: Vec<_> = roots
        .iter()
        .filter(|s| s.str_attr(semconv::HOOKS_CLOSED_BY) == Some("no_room"))
        .collect();
    assert_eq!(no_room.len(), 1, "the refused run's root is marked");
    assert_eq!(
        by_name(&spans, "chat").len(),
        2,
        "only the traced run has chat spans"
    );
}
