//! The webhook approver against an HTTP server on loopback: approve, reject, edit, and every
//! way it fails closed (timeout, bad status, a reply that is not a decision), without its
//! token reaching anything the model or the logs see.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool, RunOutput};
use hooks_core::interrupt::WebhookApprover;
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use hooks_core::{
    BeforeToolCallEvent, HookError, HookProvider, HookRegistry, HookSet, ModelResponse, ToolCall,
    ToolSpec, async_trait,
};
use serde_json::{Value, json};

const TOKEN: &str = "tok-9f8e7d6c5b4a";

struct AskForWire;

#[async_trait]
impl HookProvider for AskForWire {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if !e.approved() {
            e.interrupt("over the limit", json!({"limit": 500}));
        }
        Ok(())
    }
}

async fn run(server: &TestServer, deadline: Duration) -> (RunOutput, Vec<Value>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"amount": 900}),
        )])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = Agent::builder("bank", model)
        .registry(Arc::new(HookRegistry::new().with(AskForWire).unwrap()))
        .tool(FnTool::new(
            ToolSpec::new("wire", "w", json!({})),
            move |args| {
                s.lock().unwrap().push(Value::Object(args.clone()));
                Ok("wired".into())
            },
        ))
        .build()
        .unwrap();
    let approver = WebhookApprover::new(format!("{}/decide", server.url()))
        .unwrap()
        .with_deadline(deadline)
        .with_header("authorization", format!("Bearer {TOKEN}"));
    let out = agent.run_with_approver("pay", &approver).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

#[tokio::test]
async fn approve_reject_and_edit_over_http() {
    let server = TestServer::scripted(vec![TestReply::json(
        200,
        &json!({"decision": "approve", "by": "alice"}),
    )])
    .await;
    let (out, seen) = run(&server, Duration::from_secs(10)).await;
    assert_eq!(out.answer, "done");
    assert_eq!(seen, [json!({"amount": 900})]);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    assert_eq!(body["interruption"]["tool_name"], "wire");
    assert_eq!(body["interruption"]["reason"], "over the limit");
    assert_eq!(body["interruption"]["payload"], json!({"limit": 500}));
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    let server = TestServer::scripted(vec![TestReply::json(
        200,
        &json!({"decision": "reject", "message": "Call the client first."}),
    )])
    .await;
    let (out, seen) = run(&server, Duration::from_secs(10)).await;
    assert!(seen.is_empty());
    assert_eq!(
        out.state.tool_executions[0].result,
        "Call the client first."
    );

    let server = TestServer::scripted(vec![TestReply::json(
        200,
        &json!({"decision": "edit", "arguments": {"amount": 400}}),
    )])
    .await;
    let (_, seen) = run(&server, Duration::from_secs(10)).await;
    assert_eq!(seen, [json!({"amount": 400})]);
}

#[tokio::test]
async fn every_failure_rejects_the_call_without_leaking_the_token() {
    let calls = Arc::new(AtomicUsize::new(0));
    let replies: Vec<TestReply> = vec![
        TestReply::Hang,
        TestReply::json(500, &json!({"decision": "approve"})),
        TestReply::json(200, &json!({"decision": "maybe"})),
        TestReply::with(200, "text/plain", "", b"approve"),
        TestReply::with(
            302,
            "text/plain",
            "location: http://127.0.0.1:9/elsewhere\r\n",
            b"",
        ),
    ];
    for reply in replies {
        calls.fetch_add(1, Ordering::SeqCst);
        let server = TestServer::scripted(vec![reply]).await;
        let (out, seen) = run(&server, Duration::from_millis(500)).await;
        assert!(seen.is_empty(), "a failed approval never runs the call");
        let result = &out.state.tool_executions[0].result;
        assert!(
            result.starts_with("REQUIRES APPROVAL: over the limit (no approval"),
            "{result}"
        );
        let everything = serde_json::to_string(&out.state).unwrap();
        assert!(!everything.contains(TOKEN), "the token reached the state");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let approver = WebhookApprover::new("http://user:pw-123@127.0.0.1:9/x?token=QSECRET").unwrap();
    assert!(!format!("{approver:?}").contains("pw-123"));
    assert!(!format!("{approver:?}").contains("QSECRET"));
    // An error (nothing listens on port 9) names neither the password nor the query token.
    let i: hooks_core::interrupt::Interruption = serde_json::from_value(json!({
        "id": "int-1", "run_id": "r", "tool_call_id": "c1", "tool_name": "t", "arguments": {},
        "arguments_hash": "h", "reason": "why", "payload": null, "provider": "p"}))
    .unwrap();
    let e = hooks_core::interrupt::Approver::decide(&approver, &i)
        .await
        .unwrap_err()
        .to_string();
    assert!(!e.contains("pw-123") && !e.contains("QSECRET"), "{e}");
    assert!(WebhookApprover::new("file:///etc/passwd").is_err());
}
