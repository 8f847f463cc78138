//! A rig agent on the real llama.cpp server (the one the steering tests use), through rig's own
//! OpenAI-compatible client, with our hooks: every event of the run in order, the hooks'
//! sampling options carried into rig's request, the prompt's e-mail redacted before the model
//! (the recorder, after the guard, sees only the placeholder).
//!
//! Needs the project's Python environment: `cargo xtask judge-env` (run by `cargo xtask ci`)
//! creates `.venv`. Without it the test prints how to run it and returns, unless
//! `HOOKS_LIVE_TESTS=1` (set by `cargo xtask ci`), which makes that a failure.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hooks_core::http::HttpConfig;
use hooks_core::prelude::*;
use hooks_core::test_util::{LocalModelServer, RecordingProvider};
use hooks_guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks_rig::RigHooks;
use rig_agent::AgentBuilder;

const EMAIL: &str = "live.rig.marker.8812@example.com";

/// Keeps replies short and deterministic; records the conversation each model call sends.
struct Short(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl HookProvider for Short {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        let o = e.options_mut();
        o.temperature = Some(0.0);
        o.max_tokens = Some(24);
        let sent = serde_json::to_string(e.messages()).unwrap();
        self.0.lock().unwrap().push(sent);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_agent_on_a_real_model_runs_through_our_hooks() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(server) = LocalModelServer::start(&workspace) else {
        return;
    };
    let recorder = RecordingProvider::new("rec");
    let sink = recorder.sink();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut registry = HookRegistry::new();
    registry
        .add(
            GuardrailsHook::new(
                GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
            )
            .unwrap(),
        )
        .unwrap();
    registry.add(recorder).unwrap();
    registry.add(Short(Arc::clone(&sent))).unwrap();

    let http =
        rig_reqwest::ReqwestClient::from(HttpConfig::new().without_proxy().client().unwrap());
    let client = rig_core::providers::openai::OpenAIConfig::new("none")
        .with_base_url(server.base_url())
        .connect(http);
    let agent = AgentBuilder::new(client.chat("smollm2"))
        .preamble("Answer in one short sentence.")
        .add_hook(RigHooks::new(Arc::new(registry)).model("smollm2"))
        .build();
    let out = agent
        .prompt(format!(
            "My e-mail is {EMAIL}. What is the capital of France?"
        ))
        .max_turns(2)
        .await
        .unwrap();
    assert!(!out.output().is_empty());
    assert!(!out.output().contains(EMAIL));

    let events: Vec<HookEvent> = sink.lock().unwrap().iter().map(|r| r.event).collect();
    use HookEvent::*;
    assert_eq!(
        events,
        [
            BeforeInvocation,
            IterationStart,
            BeforeModelCall,
            AfterModelCall,
            IterationEnd,
            AfterInvocation
        ]
    );
    let sent = sent.lock().unwrap().join("\n");
    assert!(sent.contains("[REDACTED_EMAIL]"), "{sent}");
    assert!(!sent.contains(EMAIL), "{sent}");
    // Rig's history holds the prompt as the guard left it.
    assert!(!format!("{:?}", out.messages()).contains(EMAIL));
}
