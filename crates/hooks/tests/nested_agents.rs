//! Agents as tools with the full stack: inside a child agent, a PII argument is redacted before
//! its tool sees it, a blocked tool is cancelled, a steering INTERRUPT pauses the parent and the
//! decision resumes the child; the spans (parent → execute_tool → child invoke_agent → its
//! chat / execute_tool) arrive at a real OTLP receiver in one trace; and no marker value
//! reaches the paused run, a log line, the state or an exported span.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks::agent::{Agent, FnTool};
use hooks::guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::interrupt::{Decision, PausedRun, RunOutcome};
use hooks::logging::LoggingHook;
use hooks::otel::OtlpSetup;
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};
use hooks::{HookRegistry, ModelResponse, ToolCall, ToolSpec};
use hooks_core::test_util::ScriptedModel;
use hooks_otel::testing::{OtlpReceiver, ReceivedSpan};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

const EMAIL: &str = "nested.marker.7731@example.com";
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

type Calls = Arc<Mutex<Vec<(String, Value)>>>;

fn recording_tool(name: &'static str, calls: &Calls, reply: String) -> FnTool {
    let calls = Arc::clone(calls);
    FnTool::new(
        ToolSpec::new(name, name, json!({"type": "object"})),
        move |args| {
            calls
                .lock()
                .unwrap()
                .push((name.to_owned(), Value::Object(args.clone())));
            Ok(reply.clone())
        },
    )
}

// One thread: the test's log subscriber sees every hook's line.
#[tokio::test]
async fn every_guard_reaches_the_child_and_one_trace_holds_the_tree() {
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
    let mut config = GuardrailConfig::default().with_blocked_tools(["wipe"]);
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
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
        .add(telemetry.hook().with_content_capture(true).build())
        .unwrap();
    registry
        .add(
            SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed))
                .with_interrupt_tools(["pay"])
                .build(),
        )
        .unwrap();
    let registry = Arc::new(registry);

    let calls: Calls = Arc::default();
    let child_model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "k1",
            "lookup",
            json!({"email": EMAIL, "note": format!("customer {EMAIL}")}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "k2",
            "wipe",
            json!({"all": true}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "k3",
            "pay",
            json!({"card": CARD}),
        )])),
        Ok(ModelResponse::text(format!("Refunded {EMAIL} on {CARD}."))),
    ]));
    let parent_model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "p1",
            "billing",
            json!({"input": format!("Refund the customer {EMAIL}, card {CARD}.")}),
        )])),
        Ok(ModelResponse::text("Done.")),
    ]));
    let make = || {
        let billing = Agent::builder("billing", Arc::clone(&child_model))
            .tool(recording_tool("lookup", &calls, format!("found {EMAIL}")))
            .tool(recording_tool("wipe", &calls, "wiped".to_owned()))
            .tool(recording_tool("pay", &calls, format!("charged {CARD}")))
            .build()
            .unwrap();
        Agent::builder("support", Arc::clone(&parent_model))
            .tool(billing.as_tool("billing", "Handles billing"))
            .registry(Arc::clone(&registry))
            .build()
            .unwrap()
    };

    let prompt = format!("Customer {EMAIL} wants a refund.");
    let RunOutcome::Interrupted(paused) = make().start(prompt).await.unwrap() else {
        panic!("the child's payment should pause the parent")
    };
    let stored = paused.to_json().unwrap();
    for marker in [EMAIL, CARD] {
        assert!(!stored.contains(marker), "{marker} in the paused run");
    }
    {
        let calls = calls.lock().unwrap();
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["lookup"], "wipe was blocked and pay waits");
        assert_eq!(calls[0].1["email"], "[REDACTED_EMAIL]");
    }
    let i = &paused.interruptions()[0];
    assert_eq!(
        (i.tool_name.as_str(), i.tool_call_id.as_str()),
        ("billing", "p1")
    );
    assert_eq!(i.payload["nested"][0]["tool_name"], "pay");
    assert_eq!(
        i.payload["nested"][0]["arguments"]["card"],
        "[REDACTED_CREDIT_CARD]"
    );

    let paused = PausedRun::from_json(&stored).unwrap();
    let yes = Decision::approve(&paused.interruptions()[0]).by("ops");
    let RunOutcome::Completed(out) = make().resume(paused, vec![yes]).await.unwrap() else {
        panic!("the approval resumes the child and the parent completes")
    };
    assert_eq!(out.answer, "Done.");
    {
        let calls = calls.lock().unwrap();
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["lookup", "pay"]);
        assert_eq!(calls[1].1["card"], "[REDACTED_CREDIT_CARD]");
    }
    // The child's answer went through the parent's output guard too.
    let result = &out.state.tool_executions[0].result;
    assert!(result.contains("Refunded [REDACTED_EMAIL]"), "{result}");
    let state = serde_json::to_string(&out.state).unwrap();

    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(12, Duration::from_secs(10));
    let exported = String::from_utf8_lossy(&receiver.raw_bodies().concat()).into_owned();
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("REDACTED_EMAIL"),
        "content was logged, redacted"
    );
    for marker in [EMAIL, CARD] {
        for (what, text) in [("state", &state), ("logs", &logs), ("OTLP", &exported)] {
            assert!(!text.contains(marker), "{marker} reached the {what}");
        }
    }

    // One trace, and the tree: every child root hangs off an execute_tool billing span.
    let by_id: HashMap<&str, &ReceivedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let traces: std::collections::HashSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "{:?}", names(&spans));
    let child_roots: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent billing")
        .collect();
    assert_eq!(
        child_roots.len(),
        2,
        "paused and resumed: {:?}",
        names(&spans)
    );
    for root in &child_roots {
        let parent = by_id[root.parent_span_id.as_str()];
        assert_eq!(parent.name, "execute_tool billing");
        assert_eq!(
            root.attributes.get("hooks.depth").and_then(|v| v.as_i64()),
            Some(1)
        );
    }
    // Metrics carry the depth.
    let nested_points = receiver
        .points()
        .into_iter()
        .filter(|p| {
            p.metric == "gen_ai.client.operation.duration"
                || p.metric.contains("operation.duration")
        })
        .filter(|p| p.attributes.get("hooks.depth").and_then(|v| v.as_i64()) == Some(1))
        .count();
    assert!(nested_points > 0, "{:?}", receiver.points());
    // The child's own tool spans descend from a child root.
    for name in ["execute_tool lookup", "execute_tool pay"] {
        let span = spans.iter().find(|s| s.name == name).unwrap();
        let mut at = span;
        let mut hops = 0;
        while at.name != "invoke_agent billing" {
            at = by_id[at.parent_span_id.as_str()];
            hops += 1;
            assert!(hops < 10, "{name} does not descend from the child's root");
        }
    }
}

fn names(spans: &[ReceivedSpan]) -> Vec<(&str, &str, &str)> {
    spans
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.span_id.as_str(),
                s.parent_span_id.as_str(),
            )
        })
        .collect()
}
