//! Hostile input through the whole stack, each with a clear error and nothing lost: a 100 MB
//! prompt, arguments nested 100 000 levels deep, invalid UTF-8 from a tool, a 1 MB tool name,
//! unknown tools and non-object arguments, a hook that panics and a hook that never returns.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks::TokioTimer;
use hooks::agent::{Agent, FnTool, Model, ModelRequest};
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::logging::{LoggingHook, StructuredLoggingHook};
use hooks::otel::{SpanCollector, TelemetryGuard};
use hooks::retry::ModelRetryHook;
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};
use hooks::{
    BeforeToolCallEvent, HookError, HookProvider, HookRegistry, HookSet, ModelError, ModelResponse,
    Role, RunError, ToolCall, ToolSpec, async_trait,
};
use serde_json::{Map, Value, json};

/// Every provider, logging and telemetry at their most talkative.
fn registry(extra: Vec<Arc<dyn HookProvider>>) -> (HookRegistry, SpanCollector, TelemetryGuard) {
    let spans = SpanCollector::new();
    let telemetry = TelemetryGuard::with_simple_exporter(spans.clone());
    let mut r = HookRegistry::new();
    r.add(
        GuardrailsHook::new(
            GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
        )
        .unwrap(),
    )
    .unwrap();
    r.add(
        LoggingHook::builder()
            .with_log_arguments(true)
            .with_log_results(true)
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(
        StructuredLoggingHook::builder()
            .with_log_arguments(true)
            .with_log_results(true)
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(telemetry.hook().with_content_capture(true).build())
        .unwrap();
    r.add(ModelRetryHook::new()).unwrap();
    r.add(SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed)).build())
        .unwrap();
    for p in extra {
        r.add(p).unwrap();
    }
    (r, spans, telemetry)
}

/// Answers with the given tool calls once, then with text.
struct OneShot(Mutex<Option<Vec<ToolCall>>>);

#[async_trait]
impl Model for OneShot {
    fn name(&self) -> &str {
        "one-shot"
    }
    async fn complete(&self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        Ok(match self.0.lock().unwrap().take() {
            Some(calls) => ModelResponse::tool_calls(calls),
            None => ModelResponse::text("done"),
        })
    }
}

fn agent(calls: Vec<ToolCall>, r: HookRegistry) -> Agent {
    let echo = FnTool::new(ToolSpec::new("echo", "echoes", json!({})), |a| {
        Ok(Value::Object(a.clone()).to_string())
    });
    let raw = FnTool::new(ToolSpec::new("raw", "raw bytes", json!({})), |_| {
        hooks::agent::tool_output_from_bytes(vec![0x66, 0x6f, 0xff, 0xfe])
    });
    Agent::builder("hostile", OneShot(Mutex::new(Some(calls))))
        .tool(echo)
        .tool(raw)
        .registry(Arc::new(r))
        .build()
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_100_mb_prompt_is_refused_by_length_before_anything_else_sees_it() {
    let (r, spans, _t) = registry(vec![]);
    let a = agent(vec![], r);
    let err = rt()
        .block_on(a.run("x".repeat(100 * 1024 * 1024)))
        .unwrap_err();
    assert!(err.to_string().ends_with(
        "Input blocked by guardrails: prompt is 104857600 characters, over the limit of 100000"
    ));
    // The run still ended cleanly: its span is closed and marked failed.
    let root = spans
        .spans()
        .into_iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .unwrap();
    assert!(
        root.attributes
            .iter()
            .any(|kv| kv.key.as_str() == "hooks.success" && kv.value.to_string() == "false")
    );
}

#[test]
fn arguments_nested_100_000_levels_deep_overflow_nothing() {
    let mut deep = Value::String("jane.doe@example.com".into());
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut args = Map::new();
    args.insert("payload".into(), deep);
    let (r, spans, _t) = registry(vec![]);
    let a = agent(
        vec![
            ToolCall::new("c1", "echo", Value::Object(args)),
            ToolCall::new("c2", "echo", json!({"ok": 1})),
        ],
        r,
    );
    // Worker threads have 2 MiB stacks: any recursion over the value would overflow here.
    let out = rt().block_on(a.run("go")).unwrap();
    assert!(
        out.state.tool_executions[0]
            .result
            .contains("nested deeper than 128 levels")
    );
    assert_eq!(
        out.state.tool_executions[1].result, r#"{"ok":1}"#,
        "the other call is not lost"
    );
    assert!(serde_json::to_string(&out.state).is_ok());
    assert_eq!(
        spans
            .spans()
            .iter()
            .filter(|s| s.name.starts_with("execute_tool"))
            .count(),
        2
    );
}

#[test]
fn invalid_utf8_a_1_mb_tool_name_unknown_tools_and_non_object_arguments_become_error_results() {
    let (r, _spans, _t) = registry(vec![]);
    let a = agent(
        vec![
            ToolCall::new("c1", "raw", json!({})),
            ToolCall::new("c2", "n".repeat(1 << 20), json!({})),
            ToolCall::new("c3", "nope", json!({})),
            ToolCall::new("c4", "echo", json!([1, 2])),
        ],
        r,
    );
    let out = rt().block_on(a.run("go")).unwrap();
    let results: Vec<&str> = out
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        results[0].starts_with(
            "Error: tool output is not valid UTF-8 (first invalid byte at byte 2 of 4)"
        )
    );
    assert!(results[1].starts_with("Error: unknown tool 'nnnn") && results[1].len() < 300);
    assert_eq!(
        results[2],
        "Error: unknown tool 'nope'; available tools: echo, raw"
    );
    assert_eq!(
        results[3],
        "Error: arguments for tool 'echo' must be a JSON object, got an array"
    );
    assert_eq!(out.answer, "done");
}

struct Panics;

#[async_trait]
impl HookProvider for Panics {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, _: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        panic!("a bug in a hook");
    }
}

struct NeverReturns;

#[async_trait]
impl HookProvider for NeverReturns {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, _: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[test]
fn a_panicking_hook_and_a_hook_that_never_returns_end_the_run_with_errors_naming_them() {
    let (r, spans, _t) = registry(vec![Arc::new(Panics)]);
    let err = rt()
        .block_on(agent(vec![ToolCall::new("c1", "echo", json!({}))], r).run("go"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'Panics' failed in on_before_tool_call: panicked: a bug in a hook"
    );
    assert!(matches!(err.error, RunError::Hook(_)));
    let open: Vec<_> = spans
        .spans()
        .into_iter()
        .filter(|s| s.name.starts_with("invoke_agent"))
        .collect();
    assert_eq!(open.len(), 1, "the run's spans were closed");

    let (mut r, _spans, _t) = registry(vec![Arc::new(NeverReturns)]);
    r.set_deadline(Duration::from_millis(200), Arc::new(TokioTimer));
    let err = rt()
        .block_on(agent(vec![ToolCall::new("c1", "echo", json!({}))], r).run("go"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'NeverReturns' failed in on_before_tool_call: did not return within 0.200s and was abandoned (the registry's per-hook deadline)"
    );
}
