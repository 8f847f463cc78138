//! Large scans run off the executor (hooks-core's `offload`, on tokio's blocking pool with
//! the core's `rt-tokio` feature): the thread's other tasks keep moving, and the registry's
//! per-hook deadline bounds the scan, failing the call closed.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hooks_core::{
    AfterModelCallEvent, BeforeToolCallEvent, EventContext, Extensions, HookRegistry,
    ModelResponse, RunId, TokioTimer, ToolCall,
};
use hooks_guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook, OFFLOAD_BYTES};
use serde_json::json;

/// 1 MB of the slowest hostile family: bare nine-digit numbers, comma-separated.
fn hostile_call() -> ToolCall {
    ToolCall::new("c1", "lookup", json!({"csv": "123456789,".repeat(100_000)}))
}

#[tokio::test(flavor = "current_thread")]
async fn a_large_scan_yields_the_thread_instead_of_holding_it() {
    let mut registry = HookRegistry::new();
    registry
        .add(GuardrailsHook::new(GuardrailConfig::default()).unwrap())
        .unwrap();
    let (run, ext) = (RunId::new("r"), Extensions::new());
    let call = hostile_call();
    let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
    let mut fut = pin!(registry.before_tool_call(&mut e));
    // A scan on this thread would finish inside the first poll; off the executor, the hook is
    // pending while it runs, and the thread is free for other tasks.
    let first = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(first.is_pending(), "the scan ran on the executor's thread");
    // Meanwhile another task on this thread makes progress.
    let other = tokio::spawn(async { 41 + 1 });
    assert_eq!(other.await.unwrap(), 42);
    fut.await.unwrap();
    // A small call is judged right where it is: no hop for the usual arguments.
    let small = ToolCall::new("c2", "lookup", json!({"q": "weather"}));
    let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &small);
    let mut fut = pin!(registry.before_tool_call(&mut e));
    let first = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(matches!(first, Poll::Ready(Ok(()))));
    assert!(json!({"q": "weather"}).to_string().len() < OFFLOAD_BYTES);
}

#[tokio::test(flavor = "current_thread")]
async fn the_per_hook_deadline_bounds_a_large_scan_and_the_call_fails_closed() {
    let mut registry = HookRegistry::new();
    registry
        .add(GuardrailsHook::new(GuardrailConfig::default()).unwrap())
        .unwrap();
    // A megabyte of this family takes tens of milliseconds even in release builds; the
    // deadline is a thousandth of a second.
    registry.set_deadline(Duration::from_millis(1), Arc::new(TokioTimer));
    let (run, ext) = (RunId::new("r"), Extensions::new());
    let call = hostile_call();
    let mut e = BeforeToolCallEvent::new(EventContext::new(&run, &ext), &call);
    // The timer fires while the scan is on the blocking pool: the call is abandoned.
    let err = registry.before_tool_call(&mut e).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("did not return within 0.001s and was abandoned"),
        "{err}"
    );
    assert_eq!(err.provider(), "GuardrailsHook");
}

#[tokio::test(flavor = "current_thread")]
async fn a_large_model_reply_is_judged_off_the_executor_and_still_redacted() {
    let mut registry = HookRegistry::new();
    let config = GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact);
    registry.add(GuardrailsHook::new(config).unwrap()).unwrap();
    let (run, ext) = (RunId::new("r"), Extensions::new());
    let reply = format!(
        "{} mail reply.marker@example.com",
        "123456789,".repeat(100_000)
    );
    for response in [
        ModelResponse::text(reply.clone()),
        ModelResponse::tool_calls(vec![ToolCall::new("c1", "send", json!({ "body": reply }))]),
    ] {
        let mut e = AfterModelCallEvent::new(EventContext::new(&run, &ext), "m", &[], Ok(response));
        {
            let mut fut = pin!(registry.after_model_call(&mut e));
            let first = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(
                first.is_pending(),
                "the reply was judged on the executor's thread"
            );
            let other = tokio::spawn(async { 41 + 1 });
            assert_eq!(other.await.unwrap(), 42);
            fut.await.unwrap();
        }
        let out = format!("{:?}", e.response().unwrap());
        assert!(
            !out.contains("reply.marker@example.com"),
            "the large reply kept the address"
        );
        assert!(out.contains("[REDACTED_EMAIL]"));
    }
}
