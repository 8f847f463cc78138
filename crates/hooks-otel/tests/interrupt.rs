//! A paused run's spans say it paused (not failed), and the resumed run — with a new
//! telemetry hook, as in another process — continues the same trace: its root is a child of
//! the paused root and links to it, with the same conversation id. Exported over a real OTLP
//! connection on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool};
use hooks_core::interrupt::{Decision, PausedRun, RunOutcome};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    BeforeToolCallEvent, HookError, HookProvider, HookRegistry, HookSet, ModelResponse, ToolCall,
    ToolSpec, async_trait,
};
use hooks_otel::OtlpSetup;
use hooks_otel::testing::OtlpReceiver;
use serde_json::json;

struct Ask;

#[async_trait]
impl HookProvider for Ask {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if !e.approved() {
            e.interrupt("needs a person", json!(null));
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_continues_the_paused_runs_trace() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({}),
        )])),
        Ok(ModelResponse::text("done")),
    ]));
    let agent = |hook| {
        let registry = HookRegistry::new().with(hook).unwrap().with(Ask).unwrap();
        Agent::builder("bank", Arc::clone(&model))
            .registry(Arc::new(registry))
            .tool(FnTool::new(ToolSpec::new("wire", "w", json!({})), |_| {
                Ok("wired".into())
            }))
            .build()
            .unwrap()
    };
    let RunOutcome::Interrupted(paused) = agent(guard.hook().build()).start("pay").await.unwrap()
    else {
        panic!("expected a pause")
    };
    let stored = paused.to_json().unwrap();
    let run_id = paused.run_id().to_string();
    drop(paused);
    // A new hook, as a new process would have.
    let paused = PausedRun::from_json(&stored).unwrap();
    let yes = Decision::approve(&paused.interruptions()[0]);
    let RunOutcome::Completed(out) = agent(guard.hook().build())
        .resume(paused, vec![yes])
        .await
        .unwrap()
    else {
        panic!("expected an answer")
    };
    assert_eq!(out.answer, "done");
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(6, Duration::from_secs(10));
    let roots: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent bank")
        .collect();
    assert_eq!(
        roots.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let paused_root = roots.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    let resumed_root = roots.iter().find(|s| !s.parent_span_id.is_empty()).unwrap();
    assert_eq!(
        paused_root
            .attributes
            .get("hooks.interrupted")
            .and_then(|v| v.as_bool()),
        Some(true)
    );
    assert_eq!(
        paused_root
            .attributes
            .get("hooks.interruptions")
            .and_then(|v| v.as_i64()),
        Some(1)
    );
    assert_ne!(paused_root.status_code, 2, "a pause is not an error");
    assert_eq!(resumed_root.trace_id, paused_root.trace_id, "one trace");
    assert_eq!(resumed_root.parent_span_id, paused_root.span_id);
    assert_eq!(
        resumed_root.links,
        [(paused_root.trace_id.clone(), paused_root.span_id.clone())]
    );
    assert_eq!(
        resumed_root
            .attributes
            .get("hooks.resumed")
            .and_then(|v| v.as_bool()),
        Some(true)
    );
    for root in [paused_root, resumed_root] {
        assert_eq!(
            root.str_attr("gen_ai.conversation.id"),
            Some(run_id.as_str())
        );
    }
    let tools: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool wire")
        .collect();
    assert_eq!(
        tools.len(),
        2,
        "the interrupted attempt and the approved one"
    );
    let interrupted: Vec<_> = tools
        .iter()
        .filter(|s| {
            s.attributes
                .get("hooks.interrupted")
                .and_then(|v| v.as_bool())
                == Some(true)
        })
        .collect();
    assert_eq!(interrupted.len(), 1, "only the paused attempt is marked");
    assert!(tools.iter().all(|t| t.trace_id == paused_root.trace_id));
}
