//! A streamed run has the same span tree as a non-streamed one, and its `chat` span says how
//! many pieces the reply came in and when the first arrived; the time to the first piece is a
//! metric too. Exported over a real OTLP connection on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::StreamExt as _;
use hooks_core::agent::{Agent, Model, ModelRequest};
use hooks_core::stream::{ModelDelta, ModelStream, RunEvent, StreamItem};
use hooks_core::{HookRegistry, ModelError, ModelResponse, async_trait};
use hooks_otel::OtlpSetup;
use hooks_otel::testing::OtlpReceiver;

/// Streams "a", "b", "c".
struct Abc;

#[async_trait]
impl Model for Abc {
    fn name(&self) -> &str {
        "abc"
    }
    async fn complete(&self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        Ok(ModelResponse::text("abc"))
    }
    fn stream<'a>(&'a self, _: ModelRequest<'a>) -> ModelStream<'a> {
        let items = ["a", "b", "c"]
            .into_iter()
            .map(|t| Ok(StreamItem::Delta(ModelDelta::Text(t.to_owned()))))
            .chain([Ok(StreamItem::Done(ModelResponse::text("abc")))]);
        Box::pin(futures_util::stream::iter(items))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_keeps_the_span_tree_and_times_its_first_piece() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let registry = HookRegistry::new().with(guard.hook().build()).unwrap();
    let agent = Agent::builder("streamer", Abc)
        .registry(std::sync::Arc::new(registry))
        .build()
        .unwrap();
    let events: Vec<RunEvent> = agent.run_stream("hi", 4).collect().await;
    assert!(matches!(events.last(), Some(RunEvent::Finished(r)) if r.is_ok()));
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(3, Duration::from_secs(10));
    let chat = spans.iter().find(|s| s.name.starts_with("chat")).unwrap();
    assert_eq!(
        chat.attributes
            .get("hooks.stream.chunks")
            .and_then(|v| v.as_i64()),
        Some(3)
    );
    assert!(chat.attributes.contains_key("hooks.time_to_first_token_ms"));
    let iteration = spans
        .iter()
        .find(|s| s.span_id == chat.parent_span_id)
        .unwrap();
    assert!(
        iteration.name.starts_with("iteration"),
        "{}",
        iteration.name
    );
    let root = spans
        .iter()
        .find(|s| s.span_id == iteration.parent_span_id)
        .unwrap();
    assert_eq!(root.name, "invoke_agent streamer");
    let ttft = receiver
        .points()
        .into_iter()
        .filter(|p| p.metric == "gen_ai.server.time_to_first_token")
        .count();
    assert!(ttft > 0);
}
