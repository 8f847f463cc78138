//! A paused run keeps no redacted value: with every PII entity on REDACT, a marker e-mail and
//! card number sent through the prompt, the model's tool-call arguments and a tool result
//! appear in no paused run (its JSON), no approval request (the webhook's body), no log line
//! and no exported OTLP body — while the approval still runs the call.

#![allow(clippy::unwrap_used)]

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks::agent::{Agent, FnTool};
use hooks::guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::interrupt::{PausedRun, RunOutcome, WebhookApprover};
use hooks::logging::{LoggingHook, StructuredLoggingHook};
use hooks::otel::OtlpSetup;
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use hooks_otel::testing::OtlpReceiver;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

const EMAIL: &str = "pause.marker.5521@example.com";
const CARD: &str = "4111 1111 1111 1111";

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

// One thread: the test's log subscriber sees every hook's line.
#[tokio::test]
async fn a_paused_run_and_its_approval_request_hold_no_redacted_value() {
    let logs = Buffer::default();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(logs.clone())
            .with_ansi(false),
    );
    let _guard = hooks_core::test_util::set_thread_subscriber(subscriber);
    let receiver = OtlpReceiver::start().unwrap();
    let telemetry = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let mut config = GuardrailConfig::default();
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let mut registry = HookRegistry::new();
    registry.add(GuardrailsHook::new(config).unwrap()).unwrap();
    registry
        .add(
            LoggingHook::builder()
                .with_log_arguments(true)
                .with_log_results(true)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add(
            StructuredLoggingHook::builder()
                .with_log_arguments(true)
                .with_log_results(true)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add(telemetry.hook().with_content_capture(true).build())
        .unwrap();
    registry
        .add(
            SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed))
                .with_interrupt_tools(["pay"])
                .build(),
        )
        .unwrap();
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "pay",
            json!({"card": CARD, "receipt_to": EMAIL, "note": format!("card {CARD} for {EMAIL}")}),
        )])),
        Ok(ModelResponse::text(format!(
            "Paid with {CARD}; receipt to {EMAIL}."
        ))),
    ]);
    let agent = Agent::builder("payments", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("pay", "Pays", json!({})),
            move |args| {
                s.lock()
                    .unwrap()
                    .push(serde_json::Value::Object(args.clone()));
                Ok(format!("charged {CARD}, receipt sent to {EMAIL}"))
            },
        ))
        .build()
        .unwrap();

    // Paused: the stored run holds no marker.
    let prompt = format!("Pay the invoice with {CARD} and mail the receipt to {EMAIL}.");
    let RunOutcome::Interrupted(paused) = agent.start(prompt.clone()).await.unwrap() else {
        panic!("the payment should wait for a person")
    };
    let stored = paused.to_json().unwrap();
    for marker in [EMAIL, CARD] {
        assert!(
            !stored.contains(marker),
            "{marker} in the paused run: {stored}"
        );
    }
    let paused = PausedRun::from_json(&stored).unwrap();
    assert_eq!(
        paused.interruptions()[0].arguments["receipt_to"],
        "[REDACTED_EMAIL]"
    );

    // The approval request over HTTP, and the whole run under an approver.
    let approvals =
        TestServer::start(|_| TestReply::json(200, &json!({"decision": "approve", "by": "ops"})))
            .await;
    let approver = WebhookApprover::new(format!("{}/approve", approvals.url()))
        .unwrap()
        .with_deadline(Duration::from_secs(10));
    let out = agent.run_with_approver(prompt, &approver).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "the approved call ran");
    let bodies: Vec<String> = approvals
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 1);
    let state = serde_json::to_string(&out.state).unwrap();
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
    receiver.wait_for_spans(4, Duration::from_secs(10));
    let exported = String::from_utf8_lossy(&receiver.raw_bodies().concat()).into_owned();
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("decided: approve"),
        "who decided what is logged"
    );
    assert!(
        logs.contains("Tool call completed"),
        "the hooks' lines were captured"
    );
    assert!(exported.contains("execute_tool pay"), "spans were exported");
    assert!(
        logs.contains("REDACTED_EMAIL"),
        "content was logged, redacted"
    );
    for marker in [EMAIL, CARD] {
        for (what, text) in [
            ("approval request", &bodies[0]),
            ("state", &state),
            ("logs", &logs),
            ("OTLP", &exported),
        ] {
            assert!(!text.contains(marker), "{marker} reached the {what}");
        }
    }
}
