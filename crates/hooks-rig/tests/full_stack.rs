//! Our whole stack inside a real rig agent (rig's scripted mock model): a PII argument is
//! redacted before the rig tool sees it, a blocked tool is skipped with the reason the model
//! sees, steering GUIDE and INTERRUPT (a judge model over real HTTP on loopback) become skips, each prompt is one `invoke_agent` span
//! tree exported over a real OTLP connection on loopback, and no marker value reaches a rig
//! request, rig's history, a log line or an exported span.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::{Calls, Lookup, LookupAll, Pay, Wipe, names};
use hooks_core::HookRegistry;
use hooks_core::http::HttpConfig;
use hooks_core::test_util::{TestReply, TestServer};
use hooks_guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks_logging::LoggingHook;
use hooks_openai::OpenAiModel;
use hooks_otel::OtlpSetup;
use hooks_otel::testing::{OtlpReceiver, ReceivedSpan};
use hooks_rig::RigHooks;
use hooks_steering::{ModelJudge, SteeringHook};
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;

const EMAIL: &str = "rig.marker.5521@example.com";
const CARD: &str = "4111 1111 1111 1111";

// One thread: the test's log subscriber sees every hook's line.
#[tokio::test]
async fn every_provider_holds_inside_a_rig_agent() {
    let (logs, _guard) = common::our_logs();
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
    // The steering judge: a model over real HTTP, served on loopback.
    let judge_server = TestServer::start(|req| {
        let body = String::from_utf8_lossy(&req.body);
        let (decision, reason) = if body.contains("proposed tool: pay") {
            ("INTERRUPT", "a person approves payments")
        } else if body.contains("proposed tool: lookup_all") {
            ("GUIDE", "look up one customer")
        } else {
            ("PROCEED", "fine")
        };
        let content = json!({"decision": decision, "reason": reason}).to_string();
        TestReply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}),
        )
    })
    .await;
    let judge = OpenAiModel::builder("judge")
        .with_base_url(format!("{}/v1", judge_server.url()))
        .with_api_key("sk-test-key-not-real")
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    registry
        .add(SteeringHook::builder(ModelJudge::new(judge)).build())
        .unwrap();
    let hooks = RigHooks::new(Arc::new(registry))
        .agent_id("support")
        .model("mock-model");

    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "k1",
            "lookup",
            json!({"email": EMAIL, "note": format!("customer {EMAIL}")}),
        ),
        MockTurn::tool_call("k2", "wipe", json!({"all": true})),
        MockTurn::tool_call("k3", "pay", json!({"card": CARD})),
        MockTurn::tool_call("k4", "lookup_all", json!({})),
        MockTurn::text(format!("Refunded {EMAIL} on {CARD}.")),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, format!("found {EMAIL}")))
        .tool(Wipe::new(&calls, "wiped"))
        .tool(Pay::new(&calls, format!("charged {CARD}")))
        .tool(LookupAll::new(&calls, "everyone"))
        .add_hook(hooks)
        .build();
    let out = agent
        .prompt(format!("Customer {EMAIL} wants a refund."))
        .max_turns(8)
        .await
        .unwrap();

    // Guardrails: the rig tool got the redacted argument; wipe was skipped; steering's
    // INTERRUPT became a skip too (rig runs cannot pause).
    assert_eq!(names(&calls), ["lookup"]);
    assert_eq!(calls.lock().unwrap()[0].1["email"], "[REDACTED_EMAIL]");
    let requests: Vec<String> = model
        .requests()
        .iter()
        .map(|r| format!("{:?}", r.chat_history))
        .collect();
    assert_eq!(requests.len(), 5);
    assert!(requests[2].contains("wipe"), "{}", requests[2]);
    assert!(
        requests[2].contains("blocked") || requests[2].contains("not allowed"),
        "the model sees why wipe was skipped: {}",
        requests[2]
    );
    assert!(
        requests[3].contains("REQUIRES APPROVAL") || requests[3].contains("approv"),
        "the model sees why pay was skipped: {}",
        requests[3]
    );
    // Steering GUIDE: the tool is skipped with the judge's guidance.
    assert!(
        requests[4].contains("look up one customer"),
        "the model sees the guidance: {}",
        requests[4]
    );
    // The answer and rig's history hold the redacted reply.
    assert_eq!(
        out.output(),
        "Refunded [REDACTED_EMAIL] on [REDACTED_CREDIT_CARD]."
    );
    // Rig's history holds the redacted prompt and answer. (Rig replaces no turn with tool
    // calls: those turns keep the arguments the model sent, in rig's history only — every
    // request carries the hooks' version, as asserted below.)
    let history = format!("{:?}", out.messages());
    assert!(
        history.contains("Customer [REDACTED_EMAIL] wants a refund."),
        "{history}"
    );

    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(18, Duration::from_secs(10));
    let exported = String::from_utf8_lossy(&receiver.raw_bodies().concat()).into_owned();
    let judged: Vec<String> = judge_server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(
        judged.len(),
        3,
        "the judge saw each tool call but the blocked one"
    );
    let logs = logs.text();
    assert!(
        logs.contains("REDACTED_EMAIL"),
        "content was logged, redacted"
    );
    for marker in [EMAIL, CARD] {
        for (what, text) in [
            ("a rig request", requests.join("\n")),
            ("logs", logs.clone()),
            ("the judge", judged.join("\n")),
            ("OTLP", exported.clone()),
        ] {
            assert!(!text.contains(marker), "{marker} reached {what}");
        }
    }
    // One tree: invoke_agent at the root, chat and execute_tool spans under it.
    let by_id: HashMap<&str, &ReceivedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let roots: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent support")
        .collect();
    assert_eq!(roots.len(), 1, "{:?}", span_names(&spans));
    let traces: std::collections::HashSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "{:?}", span_names(&spans));
    let count = |name: &str| spans.iter().filter(|s| s.name == name).count();
    assert_eq!(count("chat mock-model"), 5, "{:?}", span_names(&spans));
    // The judge's calls are in the run's trace too.
    assert_eq!(count("chat judge"), 3, "{:?}", span_names(&spans));
    // invoke_agent ⊃ iteration n ⊃ chat / execute_tool.
    for s in spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool") || s.name == "chat mock-model")
    {
        let iteration = by_id[s.parent_span_id.as_str()];
        assert!(
            iteration.name.starts_with("iteration"),
            "{}",
            iteration.name
        );
        assert_eq!(
            by_id[iteration.parent_span_id.as_str()].name,
            "invoke_agent support"
        );
    }
}

fn span_names(spans: &[ReceivedSpan]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_prompt_is_its_own_span_tree() {
    let receiver = OtlpReceiver::start().unwrap();
    let telemetry = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let registry = Arc::new(HookRegistry::new().with(telemetry.hook().build()).unwrap());
    let hooks = RigHooks::new(registry).agent_id("twice");
    let calls: Calls = Arc::default();
    for i in 0..2 {
        let model = MockCompletionModel::from_turns([
            MockTurn::tool_call(format!("c{i}"), "lookup", json!({"n": i})),
            MockTurn::text("ok"),
        ]);
        let agent = AgentBuilder::new(model)
            .tool(Lookup::new(&calls, "found"))
            .add_hook(hooks.clone())
            .build();
        agent.prompt("go").max_turns(4).await.unwrap();
    }
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap()
        .unwrap();
    let spans = receiver.wait_for_spans(12, Duration::from_secs(10));
    let roots: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent twice")
        .collect();
    assert_eq!(roots.len(), 2, "{:?}", span_names(&spans));
    assert_ne!(roots[0].trace_id, roots[1].trace_id, "one trace per prompt");
    for root in roots {
        let in_trace = spans.iter().filter(|s| s.trace_id == root.trace_id).count();
        assert_eq!(
            in_trace,
            6,
            "invoke_agent, 2 iterations, 2 chats and an execute_tool: {:?}",
            span_names(&spans)
        );
    }
}
