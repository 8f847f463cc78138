//! A tool continues the trace: it reads its call's W3C `traceparent` from the run's
//! extensions (`hooks_core::observe::RunTrace`) and sends it to a service (an HTTP server on
//! 127.0.0.1); the header's trace id and parent id are those of the exported `execute_tool`
//! span.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Agent, Tool, ToolError, ToolInput};
use hooks_core::http::HttpConfig;
use hooks_core::observe::RunTrace;
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use hooks_core::{HookRegistry, ModelResponse, ToolCall, ToolSpec, async_trait};
use hooks_otel::OtlpSetup;
use hooks_otel::testing::OtlpReceiver;
use serde_json::json;

/// Calls `url` with the call's traceparent.
struct Fetch {
    spec: ToolSpec,
    url: String,
    client: hooks_core::http::reqwest::Client,
}

#[async_trait]
impl Tool for Fetch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        let mut req = self.client.get(&self.url);
        if let Some(tp) =
            RunTrace::of(input.extensions).and_then(|t| t.traceparent(Some(input.call_id)))
        {
            req = req.header("traceparent", tp);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        resp.text().await.map_err(|e| ToolError::new(e.to_string()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_sends_its_calls_traceparent_and_it_matches_the_exported_span() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let mut registry = HookRegistry::new();
    registry.add(guard.hook().build()).unwrap();
    // The service the tool calls: answers "ok" and keeps each request.
    let service = TestServer::start(|_| TestReply::with(200, "text/plain", "", b"ok")).await;
    let url = format!("{}/lookup", service.url());
    let fetch = Fetch {
        spec: ToolSpec::new("fetch", "calls a service", json!({"type": "object"})),
        url,
        client: HttpConfig::new().without_proxy().client().unwrap(),
    };
    let agent = Agent::builder(
        "tracer",
        ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "fetch", json!({})),
                ToolCall::new("c2", "fetch", json!({})),
            ])),
            Ok(ModelResponse::text("done")),
        ]),
    )
    .tool(fetch)
    .registry(Arc::new(registry))
    .build()
    .unwrap();
    let out = agent.run("go").await.unwrap();
    assert_eq!(out.answer, "done");
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(5, Duration::from_secs(10));
    let headers: Vec<String> = service
        .requests()
        .iter()
        .filter_map(|r| r.header("traceparent").map(str::to_owned))
        .collect();
    assert_eq!(headers.len(), 2, "{headers:?}");
    let tools: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool fetch")
        .collect();
    assert_eq!(tools.len(), 2);
    for tp in &headers {
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4, "{tp}");
        assert_eq!(parts[0], "00");
        assert_eq!(parts[3], "01", "sampled: {tp}");
        let span = tools
            .iter()
            .find(|s| s.span_id == parts[2])
            .unwrap_or_else(|| panic!("no execute_tool span with id {} ({tp})", parts[2]));
        assert_eq!(span.trace_id, parts[1]);
    }
    assert_ne!(headers[0], headers[1], "each call has its own span");
}
