//! What a hostile review of the rig adapter tried, each a promise it keeps: no marker value
//! reaches a tool, a request, an answer or our logs (parallel calls, duplicate ids, failing
//! tools, retries, a hook answering in the model's place, two adapters on one agent); a
//! blocked or steered call never runs; nothing hangs (rig's invalid-tool-call recovery,
//! streaming, model errors, other rig hooks denying, dropped prompts); no crosstalk between
//! concurrent prompts; no panic on odd arguments. Every run is bounded by a timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Calls, Lookup, Pay, Wipe, call, guard_registry, names, our_logs};
use futures_util::StreamExt;
use hooks_core::prelude::*;
use hooks_logging::LoggingHook;
use hooks_rig::RigHooks;
use hooks_steering::{RuleJudge, SteeringAction, SteeringHook};
use rig_agent::AgentBuilder;
use rig_agent::agent::{AgentHook, DispatchAction, DispatchEvent, HookContext};
use rig_agent::run::policy::{InvalidToolCallAction, InvalidToolCallContext};
use rig_core::effect::EffectKind;
use rig_core::message::AssistantContent;
use rig_core::test_utils::{MockCompletionModel, MockStreamEvent, MockTurn};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);

fn full_registry() -> Arc<HookRegistry> {
    let mut r = guard_registry(&["wipe"]);
    r.add(
        LoggingHook::builder()
            .with_log_arguments(true)
            .with_log_results(true)
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(
        SteeringHook::builder(
            RuleJudge::new(SteeringAction::Proceed)
                .rule(
                    "pay",
                    SteeringAction::Interrupt,
                    "a person approves payments",
                )
                .rule("lookup_all", SteeringAction::Guide, "look up one customer"),
        )
        .build(),
    )
    .unwrap();
    Arc::new(r)
}

/// A rig hook that resolves invalid tool calls the way it is told.
struct Invalid(fn() -> InvalidToolCallAction);
impl AgentHook for Invalid {
    async fn on_invalid_tool_call(
        &self,
        _ctx: &HookContext,
        _event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        Some((self.0)())
    }
}

// ---- 3. hangs: rig's invalid-tool-call recovery -------------------------------------------

#[tokio::test]
async fn a01_invalid_call_repaired_by_a_rig_hook_does_not_hang() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lokup", json!({"q": "x"})),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .add_hook(Invalid(|| InvalidToolCallAction::repair("lookup")))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(out.is_ok(), "the prompt hung (repaired invalid tool call)");
}

#[tokio::test]
async fn a02_invalid_call_retried_by_a_rig_hook_does_not_hang() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lokup", json!({"q": "x"})),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .add_hook(Invalid(|| InvalidToolCallAction::retry("use lookup")))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(out.is_ok(), "the prompt hung (retried invalid tool call)");
}

#[tokio::test]
async fn a03_invalid_call_skipped_or_ignored_does_not_hang() {
    for skip in [true, false] {
        let calls: Calls = Arc::default();
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([
                call("c1", "lokup", json!({"q": "x"})),
                call("c2", "wipe", json!({})),
            ]),
            MockTurn::text("done"),
        ]);
        let mut b = AgentBuilder::new(model)
            .tool(Lookup::new(&calls, "found"))
            .tool(Wipe::new(&calls, "wiped"))
            .add_hook(RigHooks::new(full_registry()));
        if skip {
            b = b.add_hook(Invalid(|| InvalidToolCallAction::skip("no such tool")));
        }
        let agent = b.build();
        let out = tokio::time::timeout(T, async {
            agent
                .prompt("go")
                .max_turns(4)
                .unhandled_invalid_tool_call(rig_agent::run::UnhandledInvalidToolCall::Ignore)
                .await
        })
        .await;
        assert!(out.is_ok(), "the prompt hung (skip={skip})");
        assert!(
            !names(&calls).contains(&"wipe".to_owned()),
            "wipe ran (skip={skip})"
        );
    }
}

// ---- 2/4. duplicate ids ---------------------------------------------------------------------

#[tokio::test]
async fn a04_duplicate_ids_each_call_keeps_its_own_arguments() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            call("c1", "lookup", json!({"q": "first"})),
            call("c1", "lookup", json!({"q": "second"})),
        ]),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    out.unwrap();
    let got: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a["q"].clone())
        .collect();
    assert_eq!(
        got,
        [json!("first"), json!("second")],
        "a call ran with another's arguments"
    );
}

#[tokio::test]
async fn a05_duplicate_ids_block_still_skips_and_allowed_call_runs() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            call("c1", "wipe", json!({})),
            call("c1", "lookup", json!({"q": "ok"})),
            call("c1", "pay", json!({"card": "4111 1111 1111 1111"})),
        ]),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .tool(Wipe::new(&calls, "wiped"))
        .tool(Pay::new(&calls, "paid"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    let n = names(&calls);
    assert!(
        !n.contains(&"wipe".to_owned()) && !n.contains(&"pay".to_owned()),
        "{n:?}"
    );
    assert_eq!(n, ["lookup"], "the allowed call did not run");
}

// ---- 1. PII in a tool-call id ---------------------------------------------------------------

#[tokio::test]
async fn a06_pii_in_a_tool_call_id_reaches_no_log() {
    const M: &str = "attack.marker.6@example.com";
    let (logs, _g) = our_logs();
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            call(M, "lookup", json!({"q": "a"})),
            call(M, "lookup", json!({"q": "b"})),
        ]),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let _ = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    let requests = format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| &r.chat_history)
            .collect::<Vec<_>>()
    );
    let logs = logs.text();
    assert!(
        !logs.contains(M),
        "marker in our logs: {}",
        logs.lines().find(|l| l.contains(M)).unwrap_or("")
    );
    // The ids go back to the model that made them up, as rig keeps them (the crate docs say
    // so): the calls themselves are in every later request.
    assert!(requests.contains("lookup"));
}

// ---- 3. streaming ---------------------------------------------------------------------------

fn stream_model(m: &str) -> MockCompletionModel {
    MockCompletionModel::from_stream_turns([
        vec![
            MockStreamEvent::tool_call("t1", "lookup", json!({"email": m})).with_call_id("s1"),
            MockStreamEvent::tool_call("t2", "wipe", json!({})).with_call_id("s2"),
            MockStreamEvent::final_response_with_total_tokens(4),
        ],
        vec![
            MockStreamEvent::text(format!("bye {m}")),
            MockStreamEvent::final_response_with_total_tokens(6),
        ],
    ])
}

#[tokio::test]
async fn a07_streaming_unguarded_ends_and_still_guards_tools() {
    const M: &str = "attack.marker.7@example.com";
    let calls: Calls = Arc::default();
    let model = stream_model(M);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(full_registry()).allow_unguarded_streams(true))
        .build();
    let items = tokio::time::timeout(T, async {
        let mut s = agent.prompt("go").max_turns(4).stream();
        let mut items = Vec::new();
        while let Some(i) = s.next().await {
            items.push(format!("{i:?}"));
        }
        items
    })
    .await
    .expect("the streamed prompt hung");
    assert!(!items.is_empty());
    assert_eq!(names(&calls), ["lookup"], "{items:?}");
    assert!(!format!("{:?}", calls.lock().unwrap()).contains(M));
    let requests = format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| &r.chat_history)
            .collect::<Vec<_>>()
    );
    assert!(!requests.contains(M), "marker in a streamed run's request");
}

#[tokio::test]
async fn a08_streaming_guarded_is_refused_without_hanging_or_running_tools() {
    const M: &str = "attack.marker.8@example.com";
    let calls: Calls = Arc::default();
    let agent = AgentBuilder::new(stream_model(M))
        .tool(Lookup::new(&calls, "found"))
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let items = tokio::time::timeout(T, async {
        let mut s = agent.prompt("go").stream();
        let mut items = Vec::new();
        while let Some(i) = s.next().await {
            items.push(format!("{i:?}"));
        }
        items
    })
    .await
    .expect("hung");
    assert!(names(&calls).is_empty());
    assert!(
        !items.join("").contains(M),
        "a refused stream still streamed the marker"
    );
}

// ---- 3. errors, other hooks, max_turns, retry ---------------------------------------------

#[tokio::test]
async fn a09_model_error_ends() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"q": "x"})),
        MockTurn::error("boom"),
    ]);
    let calls: Calls = Arc::default();
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    assert!(out.is_err());
}

struct DenyAll {
    cancel: bool,
    completions: bool,
    seen: std::sync::atomic::AtomicUsize,
}
impl AgentHook for DenyAll {
    async fn on_dispatch(&self, _ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        match event.kind {
            EffectKind::ToolCall { .. } if !self.completions => {
                if self.cancel {
                    DispatchAction::deny(rig_core::error::ErrorReport::new(
                        rig_core::error::ErrorKind::Cancelled,
                        "stop",
                    ))
                } else {
                    DispatchAction::skip("later hook says no")
                }
            }
            EffectKind::Completion { .. }
                if self.completions
                    && self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 1 =>
            {
                DispatchAction::skip("no second completion")
            }
            _ => DispatchAction::proceed(),
        }
    }
}

#[tokio::test]
async fn a10_later_rig_hook_denying_ends() {
    for (cancel, completions) in [(false, false), (true, false), (false, true)] {
        let calls: Calls = Arc::default();
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([
                call("c1", "lookup", json!({"q": "x"})),
                call("c2", "lookup", json!({"q": "y"})),
            ]),
            MockTurn::text("done"),
        ]);
        let agent = AgentBuilder::new(model)
            .tool(Lookup::new(&calls, "found"))
            .add_hook(RigHooks::new(full_registry()))
            .add_hook(DenyAll {
                cancel,
                completions,
                seen: Default::default(),
            })
            .build();
        let out = tokio::time::timeout(T, async {
            agent.prompt("go").max_turns(4).tool_concurrency(2).await
        })
        .await;
        assert!(
            out.is_ok(),
            "hung: cancel={cancel} completions={completions}"
        );
    }
}

#[tokio::test]
async fn a11_max_turns_exhausted_ends() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"q": "x"})),
        MockTurn::tool_call("c2", "lookup", json!({"q": "y"})),
        MockTurn::tool_call("c3", "lookup", json!({"q": "z"})),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(1).await })
        .await
        .expect("hung");
    assert!(out.is_err());
}

struct RetryTools;
#[async_trait]
impl HookProvider for RetryTools {
    fn name(&self) -> &str {
        "retry-tools"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.response()
            .is_some_and(|r| !r.message.tool_calls.is_empty())
        {
            e.request_retry();
        }
        Ok(())
    }
}

#[tokio::test]
async fn a12_retry_on_a_tool_turn_stops_without_running_tools() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"q": "x"})),
        MockTurn::tool_call("c2", "lookup", json!({"q": "x"})),
        MockTurn::tool_call("c3", "lookup", json!({"q": "x"})),
        MockTurn::text("done"),
    ]);
    let mut r = HookRegistry::new();
    r.add(RetryTools).unwrap();
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(6).await })
        .await
        .expect("hung");
    assert!(out.is_err());
    assert!(names(&calls).is_empty(), "a tool of a rejected turn ran");
}

// ---- 2. parallel ------------------------------------------------------------------------------

#[tokio::test]
async fn a13_parallel_calls_blocks_hold_and_pii_redacted() {
    const M: &str = "attack.marker.13@example.com";
    let (logs, _g) = our_logs();
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            call("p1", "lookup", json!({"email": M})),
            call("p2", "wipe", json!({"email": M})),
            call("p3", "pay", json!({"card": "4111 1111 1111 1111"})),
            call("p4", "lookup", json!({"email": M, "n": 2})),
        ]),
        MockTurn::text(format!("ok {M}")),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::failing(&calls, format!("no customer {M}")))
        .tool(Wipe::new(&calls, "wiped"))
        .tool(Pay::new(&calls, "paid"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let out = tokio::time::timeout(T, async {
        agent
            .prompt(format!("hi {M}"))
            .max_turns(4)
            .tool_concurrency(4)
            .await
    })
    .await
    .expect("hung")
    .unwrap();
    assert_eq!(names(&calls), ["lookup", "lookup"]);
    assert!(!format!("{:?}", calls.lock().unwrap()).contains(M));
    assert!(!out.output().contains(M));
    let requests = format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| &r.chat_history)
            .collect::<Vec<_>>()
    );
    assert!(!requests.contains(M), "marker in a request");
    assert!(!logs.text().contains(M), "marker in logs");
}

// ---- 4. concurrency ---------------------------------------------------------------------------

struct CancelQ(&'static str);
#[async_trait]
impl HookProvider for CancelQ {
    fn name(&self) -> &str {
        "cancel-q"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.arguments()["q"] == self.0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            e.cancel("q3 is not allowed");
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a14_concurrent_prompts_no_crosstalk() {
    let mut r = HookRegistry::new();
    r.add(CancelQ("q3")).unwrap();
    let hooks = RigHooks::new(Arc::new(r));
    let calls: Calls = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([
                call("c1", "lookup", json!({"q": format!("q{i}")})),
                call("c2", "lookup", json!({"q": format!("q{i}"), "k": 2})),
            ]),
            MockTurn::text(format!("done{i}")),
        ]);
        let agent = AgentBuilder::new(model)
            .tool(Lookup::new(&calls, format!("found{i}")))
            .add_hook(hooks.clone())
            .build();
        tasks.push(tokio::spawn(async move {
            agent
                .prompt("go")
                .max_turns(4)
                .tool_concurrency(2)
                .await
                .map(|o| o.output().to_owned())
        }));
    }
    let all = tokio::time::timeout(T, futures_util::future::join_all(tasks))
        .await
        .expect("hung");
    for (i, r) in all.into_iter().enumerate() {
        assert_eq!(r.unwrap().unwrap(), format!("done{i}"));
    }
    let mut qs: Vec<String> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a["q"].as_str().unwrap().to_owned())
        .collect();
    qs.sort();
    assert_eq!(qs.len(), 14, "{qs:?}");
    assert!(!qs.contains(&"q3".to_owned()));
}

// ---- 5. odd input -----------------------------------------------------------------------------

#[tokio::test]
async fn a15_odd_arguments_no_panic_no_hang() {
    let mut deep = json!("x");
    for _ in 0..200 {
        deep = json!({ "a": deep });
    }
    let huge = "y".repeat(4_000_000);
    let cases: Vec<(&str, Value)> = vec![
        ("deep", deep),
        ("huge", json!({"q": huge})),
        ("string", json!("attack.marker.15@example.com")),
        ("array", json!([1, 2])),
        ("null", Value::Null),
    ];
    for (what, args) in cases {
        let calls: Calls = Arc::default();
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([call("c1", "wipe", args.clone())]),
            MockTurn::text("done"),
        ]);
        let agent = AgentBuilder::new(model)
            .tool(Wipe::new(&calls, "wiped"))
            .add_hook(RigHooks::new(full_registry()))
            .add_hook(Invalid(|| InvalidToolCallAction::skip("bad args")))
            .build();
        let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
        assert!(out.is_ok(), "hung on {what}");
        assert!(
            names(&calls).is_empty(),
            "blocked wipe ran with {what} arguments"
        );
    }
}

// ---- 1. more PII paths ------------------------------------------------------------------------

/// Answers in the model's place once the conversation holds a tool result (a cache, say).
struct Answerer;
#[async_trait]
impl HookProvider for Answerer {
    fn name(&self) -> &str {
        "answerer"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        if e.messages()
            .iter()
            .any(|m| m.role == hooks_core::Role::Tool)
        {
            e.respond_with(ModelResponse::text("cached answer"));
        }
        Ok(())
    }
}

#[tokio::test]
async fn a16_a_hook_answering_in_the_models_place_leaks_nothing_to_the_model() {
    const M: &str = "attack.marker.16@example.com";
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"email": M})),
        MockTurn::text("model answer"),
    ]);
    let mut r = guard_registry(&[]);
    r.add(Answerer).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    assert_eq!(out.output(), "cached answer");
    let requests = format!("{:?}", model.requests());
    assert!(
        !requests.contains(M),
        "marker reached the model in the request rig still sent"
    );
}

#[tokio::test]
async fn a17_a_context_document_is_refused_while_a_provider_guards() {
    const M: &str = "attack.marker.17@example.com";
    let document = || rig_core::completion::Document {
        id: "d1".into(),
        text: format!("customer e-mail: {M}"),
        additional_props: Default::default(),
    };
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let err = tokio::time::timeout(T, async {
        agent
            .prompt("summarise the file")
            .document(document())
            .await
    })
    .await
    .expect("hung")
    .unwrap_err();
    assert!(
        err.to_string().contains("allow_unguarded_documents"),
        "{err}"
    );
    assert_eq!(model.request_count(), 0, "nothing reached the model");
    // Opted in: the document is sent (no hook judges it).
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(full_registry()).allow_unguarded_documents(true))
        .build();
    let out = tokio::time::timeout(T, async {
        agent
            .prompt("summarise the file")
            .document(document())
            .await
    })
    .await
    .expect("hung")
    .unwrap();
    assert_eq!(out.output(), "ok");
}

#[tokio::test]
async fn a19_duplicate_ids_with_redaction_keep_every_call_in_later_requests() {
    const M: &str = "attack.marker.19@example.com";
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            call("c1", "lookup", json!({"email": M, "n": 1})),
            call("c1", "lookup", json!({"email": M, "n": 2})),
        ]),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()))
        .build();
    tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    let reqs = model.requests();
    let n_calls: usize = reqs[1]
        .chat_history
        .iter()
        .map(|m| match m {
            rig_core::completion::Message::Assistant(t) => t
                .content
                .iter()
                .filter(|b| matches!(b, AssistantContent::ToolCall(_)))
                .count(),
            _ => 0,
        })
        .sum();
    let req = format!("{:?}", reqs[1].chat_history);
    assert!(!req.contains(M), "marker in request 2");
    assert_eq!(
        n_calls, 2,
        "a tool call vanished from the next request: {req}"
    );
    let ns: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a["n"].clone())
        .collect();
    assert_eq!(
        ns,
        [json!(1), json!(2)],
        "a call ran with another's arguments"
    );
}

// ---- 3. two adapters on one agent -------------------------------------------------------------

#[tokio::test]
async fn a20_two_adapters_on_one_agent_do_not_hang_and_both_guard() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "wipe", json!({})),
        MockTurn::text("done"),
    ]);
    let mut logging = HookRegistry::new();
    logging
        .add(LoggingHook::builder().build().unwrap())
        .unwrap();
    let agent = AgentBuilder::new(model)
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(Arc::new(guard_registry(&["wipe"]))))
        .add_hook(RigHooks::new(Arc::new(logging)).agent_id("logger"))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(
        out.is_ok(),
        "the prompt hung with two RigHooks on one agent"
    );
    assert!(names(&calls).is_empty(), "blocked wipe ran");
}

struct Slow;
#[async_trait]
impl HookProvider for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.arguments()["q"] == "slow" {
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a21_dropping_a_prompt_midway_runs_nothing_later_and_the_adapter_still_works() {
    let mut r = HookRegistry::new();
    r.add(Slow).unwrap();
    let hooks = RigHooks::new(Arc::new(r));
    let calls: Calls = Arc::default();
    let mk = |q: &str| {
        AgentBuilder::new(MockCompletionModel::from_turns([
            MockTurn::tool_call("c1", "lookup", json!({"q": q})),
            MockTurn::text("done"),
        ]))
        .tool(Lookup::new(&calls, "found"))
        .add_hook(hooks.clone())
        .build()
    };
    let slow = mk("slow");
    let dropped = tokio::time::timeout(Duration::from_millis(200), async {
        slow.prompt("go").max_turns(4).await
    })
    .await;
    assert!(dropped.is_err());
    let fast = mk("fast");
    let out = tokio::time::timeout(T, async { fast.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    assert_eq!(out.unwrap().output(), "done");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let qs: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a["q"].clone())
        .collect();
    assert_eq!(qs, [json!("fast")], "a dropped prompt's tool ran later");
}

// ---- round 2 ----------------------------------------------------------------------------------

async fn invalid_run(
    turn: Vec<AssistantContent>,
    action: Option<fn() -> InvalidToolCallAction>,
    ignore: bool,
) -> (bool, Vec<String>) {
    let calls: Calls = Arc::default();
    let model =
        MockCompletionModel::from_turns([MockTurn::from_contents(turn), MockTurn::text("done")]);
    let mut b = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(full_registry()));
    if let Some(a) = action {
        b = b.add_hook(Invalid(a));
    }
    let agent = b.build();
    let out = tokio::time::timeout(T, async {
        let mut p = agent.prompt("go").max_turns(4);
        if ignore {
            p = p.unhandled_invalid_tool_call(rig_agent::run::UnhandledInvalidToolCall::Ignore);
        }
        p.await
    })
    .await;
    (out.is_ok(), names(&calls))
}

#[tokio::test]
async fn a22_skip_of_a_lone_invalid_call_does_not_hang() {
    let (ended, _) = invalid_run(
        vec![call("c1", "lokup", json!({"q": "x"}))],
        Some(|| InvalidToolCallAction::skip("no such tool")),
        false,
    )
    .await;
    assert!(ended, "hung");
}

#[tokio::test]
async fn a23_ignore_policy_with_a_valid_peer_does_not_hang() {
    let (ended, n) = invalid_run(
        vec![
            call("c1", "lokup", json!({"q": "x"})),
            call("c2", "wipe", json!({})),
        ],
        None,
        true,
    )
    .await;
    assert!(ended, "hung");
    assert!(n.is_empty(), "{n:?}");
}

#[tokio::test]
async fn a24_two_adapters_guard_last_still_blocks() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "wipe", json!({})),
        MockTurn::text("done"),
    ]);
    let mut logging = HookRegistry::new();
    logging
        .add(LoggingHook::builder().build().unwrap())
        .unwrap();
    let agent = AgentBuilder::new(model)
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(Arc::new(logging)))
        .build();
    let out = tokio::time::timeout(T, async {
        agent
            .prompt("go")
            .max_turns(4)
            .add_hook(RigHooks::new(Arc::new(guard_registry(&["wipe"]))))
            .await
    })
    .await;
    assert!(out.is_ok(), "hung");
    assert!(
        names(&calls).is_empty(),
        "blocked wipe ran (guard added per prompt)"
    );
}

#[tokio::test]
async fn a25_earlier_rig_hook_denying_ends() {
    for (cancel, completions) in [(false, false), (true, false), (false, true)] {
        let calls: Calls = Arc::default();
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([
                call("c1", "lookup", json!({"q": "x"})),
                call("c2", "lookup", json!({"q": "y"})),
            ]),
            MockTurn::text("done"),
        ]);
        let agent = AgentBuilder::new(model)
            .tool(Lookup::new(&calls, "found"))
            .add_hook(DenyAll {
                cancel,
                completions,
                seen: Default::default(),
            })
            .add_hook(RigHooks::new(full_registry()))
            .build();
        let out = tokio::time::timeout(T, async {
            agent.prompt("go").max_turns(4).tool_concurrency(2).await
        })
        .await;
        assert!(
            out.is_ok(),
            "hung: cancel={cancel} completions={completions}"
        );
    }
}

#[tokio::test]
async fn a26_streaming_repair_does_not_hang() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_stream_turns([
        vec![
            MockStreamEvent::tool_call("t1", "lokup", json!({"q": "x"})).with_call_id("s1"),
            MockStreamEvent::final_response_with_total_tokens(4),
        ],
        vec![
            MockStreamEvent::text("done"),
            MockStreamEvent::final_response_with_total_tokens(6),
        ],
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(full_registry()).allow_unguarded_streams(true))
        .add_hook(Invalid(|| InvalidToolCallAction::repair("lookup")))
        .build();
    let r = tokio::time::timeout(T, async {
        let mut s = agent.prompt("go").max_turns(4).stream();
        while let Some(_i) = s.next().await {}
    })
    .await;
    assert!(r.is_ok(), "the streamed prompt hung");
}

/// Skips the invalid call and also asks for the turn again from on_model_turn_finished.
struct TurnRetry;
impl AgentHook for TurnRetry {
    async fn on_model_turn_finished(
        &self,
        _ctx: &HookContext,
        event: rig_agent::agent::ModelTurnFinished<'_>,
    ) -> rig_agent::agent::ModelTurnAction {
        let text = event
            .content
            .iter()
            .any(|b| matches!(b, AssistantContent::Text(t) if t.text.contains("first")));
        if text {
            rig_agent::agent::ModelTurnAction::repeat()
        } else {
            rig_agent::agent::ModelTurnAction::continue_run()
        }
    }
}

#[tokio::test]
async fn a27_another_rig_hook_repeating_a_turn_keeps_one_run_and_ends() {
    const M: &str = "attack.marker.27@example.com";
    let model = MockCompletionModel::from_turns([
        MockTurn::text(format!("first {M}")),
        MockTurn::text(format!("second {M}")),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(full_registry()))
        .add_hook(TurnRetry)
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    assert!(!out.output().contains(M), "{}", out.output());
    assert!(!format!("{:?}", out.messages()).contains(M));
}

struct RetryOnce(std::sync::atomic::AtomicBool);
#[async_trait]
impl HookProvider for RetryOnce {
    fn name(&self) -> &str {
        "retry-once"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.response().is_some() && !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            e.request_retry();
            e.set_retry_feedback("again please");
        }
        Ok(())
    }
}

#[tokio::test]
async fn a28_after_model_retry_leaks_no_marker() {
    const M: &str = "attack.marker.28@example.com";
    let (logs, _g) = our_logs();
    let model = MockCompletionModel::from_turns([
        MockTurn::text(format!("first {M}")),
        MockTurn::text(format!("second {M}")),
    ]);
    let mut r = guard_registry(&[]);
    r.add(RetryOnce(Default::default())).unwrap();
    r.add(
        LoggingHook::builder()
            .with_log_arguments(true)
            .with_log_results(true)
            .build()
            .unwrap(),
    )
    .unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    let requests = format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| &r.chat_history)
            .collect::<Vec<_>>()
    );
    assert!(!out.output().contains(M), "answer");
    assert!(!requests.contains(M), "marker in the retry's request");
    let leaked: Vec<String> = out
        .messages()
        .iter()
        .map(|m| format!("{m:?}"))
        .filter(|m| m.contains(M))
        .collect();
    assert!(leaked.is_empty(), "marker in rig's history: {leaked:?}");
    assert!(!logs.text().contains(M), "logs");
}

#[tokio::test]
async fn a29_model_error_text_leaks_no_marker_to_our_logs() {
    const M: &str = "attack.marker.29@example.com";
    let (logs, _g) = our_logs();
    let model =
        MockCompletionModel::from_turns([MockTurn::error(format!("upstream rejected {M}"))]);
    let agent = AgentBuilder::new(model)
        .add_hook(RigHooks::new(full_registry()))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    assert!(out.is_err());
    let logs = logs.text();
    assert!(
        !logs.contains(M),
        "logs: {}",
        logs.lines().find(|l| l.contains(M)).unwrap_or("")
    );
}

#[tokio::test]
async fn a30_two_adapters_redaction_still_holds() {
    const M: &str = "attack.marker.30@example.com";
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"email": M})),
        MockTurn::text(format!("done {M}")),
    ]);
    let mut logging = HookRegistry::new();
    logging
        .add(LoggingHook::builder().build().unwrap())
        .unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(guard_registry(&[]))))
        .add_hook(RigHooks::new(Arc::new(logging)))
        .build();
    let out = tokio::time::timeout(T, async {
        agent.prompt(format!("hi {M}")).max_turns(4).await
    })
    .await
    .expect("hung")
    .unwrap();
    let requests = format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| &r.chat_history)
            .collect::<Vec<_>>()
    );
    assert!(
        !format!("{:?}", calls.lock().unwrap()).contains(M)
            && !requests.contains(M)
            && !out.output().contains(M),
        "tool args={} requests={} answer={}",
        format!("{:?}", calls.lock().unwrap()).contains(M),
        requests.contains(M),
        out.output().contains(M)
    );
}
