//! StructuredLoggingHook: JSON lines through the bundled subscriber and under a foreign one,
//! and both logging hooks registered together.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{Buffer, Capture};
use hooks_core::agent::{Agent, FnTool};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{HookProvider, HookRegistry, ModelResponse, ToolCall, ToolSpec};
use hooks_logging::{LoggingHook, StructuredLoggingHook, json_subscriber};
use serde_json::{Value, json};
use tracing::Level;

fn agent(hooks: Vec<Arc<dyn HookProvider>>) -> Agent {
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "call-1",
            "search",
            json!({"query": "q", "limit": 5}),
        )])),
        Ok(ModelResponse::text("done")),
    ]);
    let tool = FnTool::new(ToolSpec::new("search", "Searches", json!({})), |_| {
        Ok("result".into())
    });
    Agent::builder("bot", model)
        .tool(tool)
        .registry(Arc::new(HookRegistry::from_providers(hooks).unwrap()))
        .build()
        .unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn events_are_json_lines_with_message_event_extras_fields_and_timestamp() {
    let buf = Buffer::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(json_subscriber(buf.clone()));
    let hook = StructuredLoggingHook::builder()
        .with_field("env", "prod")
        .with_field("event", "clash")
        .build()
        .unwrap();
    block_on(agent(vec![Arc::new(hook)]).run("hello")).unwrap();
    let lines: Vec<Value> = buf
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12);
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events[0], "agent_invocation_starting");
    assert_eq!(events[4], "tool_call_starting");
    assert_eq!(events[11], "agent_invocation_completed");
    for l in &lines {
        assert_eq!(l["env"], "prod");
        assert_eq!(l["extra.event"], "clash");
        let ts = l["timestamp"].as_str().unwrap();
        assert!(
            ts.len() == 27 && ts.ends_with('Z') && &ts[10..11] == "T",
            "{ts}"
        );
    }
    let tool = &lines[4];
    assert_eq!(tool["message"], "Tool call starting");
    assert_eq!(tool["tool_name"], "search");
    assert_eq!(tool["tool_call_id"], "call-1");
    assert_eq!(tool["argument_keys"], "limit,query");
    assert!(tool.get("arguments").is_none());
    let end = &lines[11];
    assert_eq!(end["success"], true);
    assert_eq!(end["iterations"], 2);
    assert_eq!(lines[0]["prompt_preview"], "hello");
    assert_eq!(lines[0]["prompt_length"], 5);
    assert_eq!(lines[0]["level"], "INFO");
    assert_eq!(lines[2]["level"], "INFO");
}

#[test]
fn timestamps_can_be_turned_off() {
    let buf = Buffer::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(json_subscriber(buf.clone()));
    let hook = StructuredLoggingHook::builder()
        .with_timestamps(false)
        .build()
        .unwrap();
    block_on(agent(vec![Arc::new(hook)]).run("hello")).unwrap();
    for line in buf.text().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v.get("timestamp").is_none());
    }
}

#[test]
fn both_hooks_register_together_and_work_under_a_foreign_subscriber() {
    let capture = Capture::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(Level::INFO));
    let hooks: Vec<Arc<dyn HookProvider>> = vec![
        Arc::new(LoggingHook::new()),
        Arc::new(StructuredLoggingHook::new()),
    ];
    assert_eq!(hooks[1].name(), "StructuredLoggingHook");
    block_on(agent(hooks).run("hello")).unwrap();
    let events = capture.events();
    let structured: Vec<_> = events
        .iter()
        .filter(|e| e.name == hooks_logging::STRUCTURED_EVENT_NAME)
        .collect();
    let plain: Vec<_> = events
        .iter()
        .filter(|e| e.name != hooks_logging::STRUCTURED_EVENT_NAME)
        .collect();
    // Invocation, iterations, the tool call and the two model calls: all at INFO.
    assert_eq!(structured.len(), 12);
    assert_eq!(plain.len(), 12);
    let first: Value = serde_json::from_str(structured[0].message()).unwrap();
    assert_eq!(first["message"], "Agent invocation starting");
}

#[test]
fn other_events_are_json_lines_too_under_the_bundled_subscriber() {
    let buf = Buffer::default();
    hooks_core::test_util::with_thread_subscriber(json_subscriber(buf.clone()), || {
        tracing::info!(target: "my_app", answer = 42, "hello");
    });
    let v: Value = serde_json::from_str(buf.text().trim()).unwrap();
    assert_eq!(
        (
            v["target"].as_str(),
            v["answer"].as_u64(),
            v["message"].as_str()
        ),
        (Some("my_app"), Some(42), Some("hello"))
    );
}
