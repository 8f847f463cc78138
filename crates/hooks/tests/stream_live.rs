//! A streamed run against the real llama.cpp server (the one the steering tests use), through
//! the stack: live pieces with logging, telemetry and a delta-reading provider; and, with the
//! output guard, a short reply held until it is complete (it is shorter than the guard's
//! hold-back window).
//!
//! Needs the project's Python environment: `cargo xtask judge-env` (run by `cargo xtask ci`)
//! creates `.venv`. Without it the test prints how to run it and returns, unless
//! `HOOKS_LIVE_TESTS=1` (set by `cargo xtask ci`), which makes that a failure.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use hooks::agent::Agent;
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::http::HttpConfig;
use hooks::interrupt::RunOutcome;
use hooks::logging::LoggingHook;
use hooks::openai::OpenAiModel;
use hooks::otel::NoOpTelemetryHook;
use hooks::stream::RunEvent;
use hooks::{
    BeforeModelCallEvent, HookError, HookProvider, HookRegistry, HookSet, ModelDeltaEvent,
    async_trait,
};
use hooks_core::test_util::LocalModelServer;

/// Keeps replies short and deterministic, and counts the pieces it sees.
struct ShortAndCounted(AtomicUsize);

#[async_trait]
impl HookProvider for ShortAndCounted {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL | HookSet::MODEL_DELTA
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        let o = e.options_mut();
        o.temperature = Some(0.0);
        o.max_tokens = Some(24);
        o.seed = Some(1);
        Ok(())
    }
    async fn on_model_delta(&self, e: &mut ModelDeltaEvent<'_>) -> Result<(), HookError> {
        if !e.is_last() {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

fn texts(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn answer(events: &[RunEvent]) -> String {
    match events.last() {
        Some(RunEvent::Finished(r)) => match r.as_ref() {
            Ok(RunOutcome::Completed(out)) => out.answer.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_streams_through_the_stack() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(server) = LocalModelServer::start(&workspace) else {
        return;
    };
    let model = Arc::new(
        OpenAiModel::builder("smollm2")
            .with_base_url(server.base_url())
            .without_api_key()
            .with_timeout(Duration::from_secs(120))
            .with_http_config(HttpConfig::new().without_proxy())
            .build()
            .unwrap(),
    );
    let prompt = "What is the capital of France? Answer in one short sentence.";

    // Live: every piece reaches the consumer as it comes.
    let counter = Arc::new(ShortAndCounted(AtomicUsize::new(0)));
    let mut registry = HookRegistry::new();
    registry.add(LoggingHook::new()).unwrap();
    registry.add(NoOpTelemetryHook::new()).unwrap();
    registry.add(Arc::clone(&counter)).unwrap();
    assert!(registry.streams_live());
    let agent = Agent::builder("live", Arc::clone(&model))
        .registry(Arc::new(registry))
        .build()
        .unwrap();
    let events: Vec<RunEvent> = agent.run_stream(prompt, 16).collect().await;
    let pieces = texts(&events);
    let answer_live = answer(&events);
    assert!(
        pieces.len() >= 2,
        "a real stream comes in pieces: {pieces:?}"
    );
    assert_eq!(pieces.concat(), answer_live);
    assert!(counter.0.load(Ordering::Relaxed) >= pieces.len());

    // Guarded: the output guard releases text `HOLD_BACK` bytes behind the model; a short
    // reply is handed over once it is complete.
    let counter = Arc::new(ShortAndCounted(AtomicUsize::new(0)));
    let mut registry = HookRegistry::new();
    registry
        .add(
            GuardrailsHook::new(
                GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
            )
            .unwrap(),
        )
        .unwrap();
    registry.add(Arc::clone(&counter)).unwrap();
    assert!(registry.streams_live());
    let agent = Agent::builder("guarded", model)
        .registry(Arc::new(registry))
        .build()
        .unwrap();
    let events: Vec<RunEvent> = agent.run_stream(prompt, 16).collect().await;
    let pieces = texts(&events);
    assert!(answer(&events).len() < hooks::guardrails::HOLD_BACK);
    assert_eq!(pieces.len(), 1, "{pieces:?}");
    assert_eq!(pieces[0], answer(&events));
    assert!(
        counter.0.load(Ordering::Relaxed) >= 2,
        "the delta hooks still saw the pieces"
    );
}
