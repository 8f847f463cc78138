//! An OTLP collector that is down: runs go on, and the export failure is logged once.
//!
//! The batch exporter runs on its own thread, so the test installs a *global* tracing
//! subscriber to see its log lines — process-wide state, hence a file of its own.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use hooks_otel::OtlpSetup;
use serde_json::json;

fn agent(hook: Arc<hooks_otel::TelemetryHook>) -> Agent {
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    Agent::builder(
        "down",
        ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "search",
                json!({"q": "x"}),
            )])),
            Ok(ModelResponse::text("sunny in both")),
        ]),
    )
    .tool(FnTool::new(ToolSpec::new("search", "s", json!({})), |_| {
        Ok("ok".into())
    }))
    .registry(Arc::new(registry))
    .build()
    .unwrap()
}

/// Counts `hooks::otel` warnings.
#[derive(Clone, Default)]
struct Warnings(Arc<std::sync::atomic::AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, e: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if e.metadata().target() == "hooks::otel" && *e.metadata().level() == tracing::Level::WARN {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

#[test]
fn a_collector_that_is_down_does_not_stop_runs_and_is_logged_once() {
    use tracing_subscriber::layer::SubscriberExt;
    let warnings = Warnings::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(warnings.clone()))
        .unwrap();
    // A port that was just free: nothing listens there.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let guard = OtlpSetup::new()
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_millis(500))
        .install()
        .unwrap();
    let hook = Arc::new(guard.hook().build());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..3 {
        let out = rt.block_on(agent(hook.clone()).run("weather?")).unwrap();
        assert_eq!(out.answer, "sunny in both");
        let _ = guard.force_flush();
    }
    assert!(
        guard.export_failures() >= 2,
        "{} failures",
        guard.export_failures()
    );
    assert_eq!(guard.spans_exported(), 0);
    assert_eq!(
        warnings.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "logged once, not per batch"
    );
    let _ = guard.shutdown();
}
