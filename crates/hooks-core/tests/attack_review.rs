//! What a hostile review of the driver and registry found, as regressions: each test is an
//! attack that used to get through.

#![allow(clippy::unwrap_used, missing_docs)] // tests fail loudly on the first unexpected error

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool, Model, ModelRequest};
use hooks_core::driver::RunOptions;
use hooks_core::test_util::{RecordingProvider, ScriptedModel};
use hooks_core::{
    AfterToolCallEvent, AgentState, BeforeInvocationEvent, BeforeToolCallEvent, HookError,
    HookEvent, HookPriority, HookProvider, HookRegistry, HookSet, Message, ModelError,
    ModelResponse, RunError, RunId, RunLocal, ToolCall, ToolSpec, async_trait,
};
use serde_json::{Value, json};

const MARKER: &str = "SECRETMARKER_7f3a";

fn tc(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

/// Adds a nested secret (an object holding the marker).
struct NestedSecret;
#[async_trait]
impl HookProvider for NestedSecret {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut()
            .insert("auth", json!({"token": MARKER}));
        e.secret_arguments_mut().insert("pin", json!(98765432));
        Ok(())
    }
}

/// Sees what after-tool hooks get.
#[derive(Default)]
struct AfterSpy(Mutex<Vec<String>>);
#[async_trait]
impl HookProvider for AfterSpy {
    fn name(&self) -> &str {
        "AfterSpy"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_TOOL_CALL
    }
    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push(format!("{} | {:?}", e.result(), e.outcome()));
        Ok(())
    }
}

fn echo_agent(registry: HookRegistry, model: ScriptedModel) -> Agent {
    Agent::builder("a", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("echo", "echoes its args", json!({"type": "object"})),
            |args| Ok(serde_json::to_string(args).unwrap()),
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn nested_and_numeric_secret_values_are_scrubbed() {
    let spy = Arc::new(AfterSpy::default());
    let mut r = HookRegistry::new();
    r.add(NestedSecret).unwrap();
    r.add(Arc::clone(&spy)).unwrap();
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![tc(
            "c1",
            "echo",
            json!({"q": "x"}),
        )])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = echo_agent(r, model);
    let out = agent.run("go").await.unwrap();
    let result = &out.state.tool_executions[0].result;
    assert!(
        !result.contains(MARKER),
        "nested secret leaked into state: {result}"
    );
    assert!(!result.contains("98765432"), "numeric secret leaked");
    assert!(!spy.0.lock().unwrap()[0].contains(MARKER));
    assert!(
        !out.state
            .messages
            .iter()
            .any(|m| m.content.contains(MARKER))
    );
}

/// Two secrets, one a prefix of the other: the shorter is replaced first.
struct OverlappingSecrets;
#[async_trait]
impl HookProvider for OverlappingSecrets {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut().insert("a_prefix", "sk-live");
        e.secret_arguments_mut()
            .insert("b_key", format!("sk-live{MARKER}"));
        Ok(())
    }
}

#[tokio::test]
async fn overlapping_secrets_leave_no_tail() {
    let mut r = HookRegistry::new();
    r.add(OverlappingSecrets).unwrap();
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![tc("c1", "echo", json!({}))])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = echo_agent(r, model);
    let out = agent.run("go").await.unwrap();
    let result = &out.state.tool_executions[0].result;
    assert!(
        !result.contains(MARKER),
        "tail of the long secret leaked: {result}"
    );
}

/// A plain string secret; tool returns the JSON of its args when the secret needs escaping.
struct QuoteSecret;
#[async_trait]
impl HookProvider for QuoteSecret {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut()
            .insert("pw", format!("{MARKER}\"quoted\\"));
        Ok(())
    }
}

#[tokio::test]
async fn a_secret_needing_json_escapes_is_scrubbed_from_a_json_echo() {
    let mut r = HookRegistry::new();
    r.add(QuoteSecret).unwrap();
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![tc("c1", "echo", json!({}))])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = echo_agent(r, model);
    let out = agent.run("go").await.unwrap();
    let result = &out.state.tool_executions[0].result;
    assert!(!result.contains(MARKER), "{result}");
}

/// Plain top-level secret; the tool Debug-prints its ToolInput (as a tool author might in a log).
struct PlainSecret;
#[async_trait]
impl HookProvider for PlainSecret {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut().insert("api_key", MARKER);
        Ok(())
    }
}

#[tokio::test]
async fn tool_input_debug_prints_no_secret_arguments() {
    let mut r = HookRegistry::new();
    r.add(PlainSecret).unwrap();
    let printed = Arc::new(Mutex::new(String::new()));
    let p = Arc::clone(&printed);
    let state = AgentState::new("a").with_message(Message::user("go"));
    let _ = r
        .run(state, RunOptions::new("m"), |run| async move {
            run.start_iteration().await?;
            let call = tc("c1", "t", json!({"q": 1}));
            run.tool_call(&call, |inv| {
                let p = Arc::clone(&p);
                async move {
                    // ToolInvocation's Debug hides args; ToolInput's (derived) does not
                    *p.lock().unwrap() = format!("{:?} / {:?}", inv, inv.input());
                    Ok("ok".to_owned())
                }
            })
            .await?;
            Ok(String::new())
        })
        .await
        .unwrap();
    let s = printed.lock().unwrap().clone();
    assert!(!s.contains(MARKER), "{s}");
    assert!(s.contains("api_key"), "the keys are shown: {s}");
}

#[tokio::test]
async fn dropping_a_model_call_future_keeps_the_conversation() {
    let r = HookRegistry::new();
    let state = AgentState::new("a")
        .with_message(Message::system("sys"))
        .with_message(Message::user("hello"));
    let out = r
        .run(state, RunOptions::new("m"), |run| async move {
            run.start_iteration().await?;
            // a custom loop puts a timeout on a slow model, then falls back
            let slow = tokio::time::timeout(
                Duration::from_millis(20),
                run.model_call(|_| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    Ok(ModelResponse::text("late"))
                }),
            )
            .await;
            assert!(slow.is_err());
            let fallback = run
                .model_call(|call| async move {
                    Ok(ModelResponse::text(format!(
                        "saw {} messages",
                        call.messages.len()
                    )))
                })
                .await?;
            Ok(fallback.message.content)
        })
        .await
        .unwrap();
    assert_eq!(out.answer, "saw 2 messages");
    assert!(out.state.messages.iter().any(|m| m.content == "hello"));
}

#[tokio::test]
async fn a_tool_message_added_during_a_model_call_is_kept() {
    let r = HookRegistry::new();
    let state = AgentState::new("a").with_message(Message::user("hello"));
    let out = r
        .run(state, RunOptions::new("m"), |run| async move {
            run.start_iteration().await?;
            let call = tc("c1", "t", json!({}));
            let m = run.model_call(|_| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(ModelResponse::text("x"))
            });
            let t = run.tool_call(&call, |_| async { Ok("TOOLRESULT".to_owned()) });
            let (m, t) = tokio::join!(m, t);
            m?;
            t?;
            Ok(String::new())
        })
        .await
        .unwrap();
    assert_eq!(out.state.tool_executions.len(), 1);
    assert!(
        out.state.messages.iter().any(|m| m.content == "TOOLRESULT"),
        "tool message lost: {:?}",
        out.state.messages
    );
}

#[test]
fn a_synchronous_panic_in_the_tool_closure_is_an_error_result() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = HookRegistry::new();
    let rec = Arc::new(RecordingProvider::new("rec").with_hooks(HookSet::RUN_ABANDONED));
    let mut r = r;
    r.add(Arc::clone(&rec)).unwrap();
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let state = AgentState::new("a").with_message(Message::user("x"));
            r.run(state, RunOptions::new("m"), |run| async move {
                run.start_iteration().await?;
                let call = tc("c1", "t", json!({}));
                run.tool_call(&call, |_inv| {
                    // Closure panics before returning its future (a sync tool adapter)
                    if true {
                        panic!("boom in closure");
                    }
                    async { Ok(String::new()) }
                })
                .await?;
                Ok(String::new())
            })
            .await
        })
    }));
    let out = res.expect("the panic did not escape").unwrap();
    assert!(
        out.state.tool_executions[0]
            .result
            .contains("panicked: boom in closure"),
        "{:?}",
        out.state.tool_executions[0]
    );
    assert!(rec.records().is_empty(), "the run ended normally");
}

#[test]
fn a_synchronous_panic_in_the_model_closure_is_a_model_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = HookRegistry::new();
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let state = AgentState::new("a").with_message(Message::user("x"));
            r.run(state, RunOptions::new("m"), |run| async move {
                run.start_iteration().await?;
                run.model_call(|_c| {
                    if true {
                        panic!("boom in model closure");
                    }
                    async { Ok(ModelResponse::text("x")) }
                })
                .await?;
                Ok(String::new())
            })
            .await
        })
    }));
    let err = res.expect("the panic did not escape").unwrap_err();
    assert!(
        err.to_string().contains("panicked: boom in model closure"),
        "{err}"
    );
}

/// Raises the iteration bound in before-invocation.
struct Unbound;
#[async_trait]
impl HookProvider for Unbound {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        e.state_mut().max_iterations = 1_000;
        Ok(())
    }
}

#[tokio::test]
async fn a_before_invocation_hook_cannot_raise_the_agents_iteration_limit() {
    let mut r = HookRegistry::new();
    r.add(Unbound).unwrap();
    let steps: Vec<_> = (0..20)
        .map(|i| {
            Ok(ModelResponse::tool_calls(vec![tc(
                &format!("c{i}"),
                "echo",
                json!({}),
            )]))
        })
        .chain([Ok(ModelResponse::text("done"))])
        .collect();
    let agent = Agent::builder("a", ScriptedModel::new(steps))
        .registry(Arc::new(r))
        .max_iterations(3)
        .tool(FnTool::new(
            ToolSpec::new("echo", "e", json!({"type": "object"})),
            |_| Ok("x".into()),
        ))
        .build()
        .unwrap();
    let err = agent.run("go").await.unwrap_err();
    assert!(matches!(
        err.error,
        RunError::IterationLimit { max_iterations: 3 }
    ));
    assert_eq!(err.state.iteration, 3);
}

/// A provider with RunLocal state opened in before-invocation (like TelemetryHook).
#[derive(Default)]
struct Opener(RunLocal<u32>);
#[async_trait]
impl HookProvider for Opener {
    fn name(&self) -> &str {
        "Opener"
    }
    fn priority(&self) -> HookPriority {
        HookPriority::OBSERVABILITY_DEFAULT
    }
    fn hooks(&self) -> HookSet {
        HookSet::INVOCATION | HookSet::RUN_ABANDONED
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.0.with(e.run_id(), |n| *n += 1).unwrap();
        Ok(())
    }
    async fn on_after_invocation(
        &self,
        e: &hooks_core::AfterInvocationEvent<'_>,
    ) -> Result<(), HookError> {
        self.0.end(e.run_id());
        Ok(())
    }
    fn on_run_abandoned(&self, run_id: &RunId) {
        self.0.end(run_id);
    }
}
struct Renamer;
#[async_trait]
impl HookProvider for Renamer {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        // e.g. a session hook that restores a stored conversation with its own run id
        e.state_mut().run_id = RunId::new(format!("{}-restored", e.run_id()));
        Ok(())
    }
}

#[tokio::test]
async fn a_hook_cannot_change_the_run_id_so_run_state_is_always_ended() {
    let opener = Arc::new(Opener::default());
    let mut r = HookRegistry::new();
    r.add(Arc::clone(&opener)).unwrap();
    r.add(Renamer).unwrap(); // DEFAULT priority: after the opener
    let agent = Agent::builder("a", ScriptedModel::new(vec![Ok(ModelResponse::text("x"))]))
        .registry(Arc::new(r))
        .build()
        .unwrap();
    for _ in 0..5 {
        agent.run("go").await.unwrap();
    }
    assert_eq!(opener.0.len(), 0, "every run's state was ended");
}

/// Panics in hooks() during add — after priorities were pushed.
struct PanicsInHooks;
impl HookProvider for PanicsInHooks {
    fn priority(&self) -> HookPriority {
        HookPriority::new(5000)
    }
    fn priority_for(&self, _: HookEvent) -> HookPriority {
        HookPriority::new(5000)
    }
    fn hooks(&self) -> HookSet {
        panic!("hooks() panicked")
    }
}
struct Named(&'static str, i32);
#[async_trait]
impl HookProvider for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn priority(&self) -> HookPriority {
        HookPriority::new(self.1)
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        e.state_mut().metadata.entry("order").or_insert(json!([]));
        if let Some(Value::Array(a)) = e.state_mut().metadata.get_mut("order") {
            a.push(json!(self.0));
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_panic_in_hooks_during_add_leaves_the_registry_whole() {
    let mut r = HookRegistry::new();
    r.add(Named("late", 900)).unwrap();
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.add(PanicsInHooks)));
    assert!(p.is_err());
    // Every provider added from now on is sorted with its predecessor's priorities.
    r.add(Named("early", 1)).unwrap();
    let state = AgentState::new("a").with_message(Message::user("x"));
    let out = r
        .run(state, RunOptions::new("m"), |_run| async {
            Ok(String::new())
        })
        .await
        .unwrap();
    let order = out.state.metadata["order"].clone();
    assert_eq!(order, json!(["early", "late"]));
    assert_eq!(r.names().collect::<Vec<_>>(), ["early", "late"]);
}

#[tokio::test]
async fn a_refused_deep_call_id_does_not_refuse_a_later_call_with_that_id() {
    let mut deep = json!("leaf");
    for _ in 0..200 {
        deep = Value::Array(vec![deep]);
    }
    let ran = Arc::new(AtomicU32::new(0));
    let ran2 = Arc::clone(&ran);
    // Providers that reuse call ids (empty ids, or "call_0" every turn) are common.
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![tc(
            "",
            "t",
            json!({"x": deep}),
        )])),
        Ok(ModelResponse::tool_calls(vec![tc(
            "",
            "t",
            json!({"x": 1}),
        )])),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = Agent::builder("a", model)
        .tool(FnTool::new(
            ToolSpec::new("t", "t", json!({"type": "object"})),
            move |_| {
                ran2.fetch_add(1, Ordering::SeqCst);
                Ok("ran".into())
            },
        ))
        .build()
        .unwrap();
    let out = agent.run("go").await.unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the flat second call ran");
    assert!(out.state.tool_executions[0].result.contains("were refused"));
    assert_eq!(out.state.tool_executions[1].result, "ran");
}

// ---------- things that should hold ----------

#[tokio::test]
async fn parallel_tool_results_keep_call_order_and_cancelled_calls_get_after_hooks() {
    struct CancelB;
    #[async_trait]
    impl HookProvider for CancelB {
        fn hooks(&self) -> HookSet {
            HookSet::TOOL_CALL
        }
        async fn on_before_tool_call(
            &self,
            e: &mut BeforeToolCallEvent<'_>,
        ) -> Result<(), HookError> {
            if e.tool_call_id() == "b" {
                e.cancel("no");
            }
            Ok(())
        }
        async fn on_after_tool_call(
            &self,
            e: &mut AfterToolCallEvent<'_>,
        ) -> Result<(), HookError> {
            e.request_retry(); // always ask: bounded, ignored for cancelled
            Ok(())
        }
    }
    let mut r = HookRegistry::new();
    r.add(CancelB).unwrap();
    let rec = Arc::new(RecordingProvider::new("rec"));
    r.add(Arc::clone(&rec)).unwrap();
    let state = AgentState::new("a").with_message(Message::user("x"));
    let calls = vec![
        tc("a", "slow", json!({})),
        tc("b", "slow", json!({})),
        tc("c", "fast", json!({})),
    ];
    let attempts = Arc::new(AtomicU32::new(0));
    let at = Arc::clone(&attempts);
    let out = r
        .run(state, RunOptions::new("m").with_max_retries(2), |run| {
            let calls = calls.clone();
            async move {
                run.start_iteration().await?;
                run.tool_calls(&calls, |inv| {
                    let at = Arc::clone(&at);
                    async move {
                        at.fetch_add(1, Ordering::SeqCst);
                        if inv.name == "slow" {
                            tokio::time::sleep(Duration::from_millis(30)).await;
                        }
                        Ok(inv.call_id.clone())
                    }
                })
                .await?;
                Ok(String::new())
            }
        })
        .await
        .unwrap();
    let ids: Vec<_> = out
        .state
        .messages
        .iter()
        .skip(1)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(ids, ["a", "no", "c"]);
    let execs = &out.state.tool_executions;
    assert_eq!(execs[1].attempts, 1);
    assert_eq!(execs[0].attempts, 3);
    assert_eq!(attempts.load(Ordering::SeqCst), 6);
    let after_b = rec
        .records()
        .iter()
        .filter(|r| r.event == HookEvent::AfterToolCall && r.detail.contains(" b "))
        .count();
    assert_eq!(after_b, 1);
}

#[tokio::test]
async fn a_run_dropped_mid_tool_call_calls_on_run_abandoned() {
    let rec = Arc::new(RecordingProvider::new("rec"));
    let mut r = HookRegistry::new();
    r.add(Arc::clone(&rec)).unwrap();
    let state = AgentState::new("a").with_message(Message::user("x"));
    let id = state.run_id.clone();
    let fut = r.run(state, RunOptions::new("m"), |run| async move {
        run.start_iteration().await?;
        run.tool_call(&tc("c", "t", json!({})), |_| async {
            std::future::pending::<()>().await;
            Ok(String::new())
        })
        .await?;
        Ok(String::new())
    });
    let t = tokio::time::timeout(Duration::from_millis(20), fut).await;
    assert!(t.is_err());
    assert_eq!(rec.events_for(&id).last(), Some(&HookEvent::RunAbandoned));
}

#[tokio::test]
async fn model_retry_is_bounded_and_a_panicking_model_future_is_an_error() {
    struct AlwaysRetry;
    #[async_trait]
    impl HookProvider for AlwaysRetry {
        fn hooks(&self) -> HookSet {
            HookSet::AFTER_MODEL_CALL
        }
        async fn on_after_model_call(
            &self,
            e: &mut hooks_core::AfterModelCallEvent<'_>,
        ) -> Result<(), HookError> {
            e.request_retry();
            e.set_retry_feedback("again");
            Ok(())
        }
    }
    let mut r = HookRegistry::new();
    r.add(AlwaysRetry).unwrap();
    struct Panicky;
    #[async_trait]
    impl Model for Panicky {
        fn name(&self) -> &str {
            "p"
        }
        async fn complete(&self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
            panic!("model panic")
        }
    }
    let agent = Agent::builder("a", Panicky)
        .registry(Arc::new(r))
        .max_retries(4)
        .build()
        .unwrap();
    let err = agent.run("x").await.unwrap_err();
    assert!(matches!(err.error, RunError::Model { attempts: 5, .. }));
    // feedback messages: 4 (bounded)
    assert_eq!(
        err.state
            .messages
            .iter()
            .filter(|m| m.content == "again")
            .count(),
        4
    );
}

#[tokio::test]
async fn deep_arguments_handed_straight_to_tool_call_are_refused_not_copied() {
    let mut deep = json!("leaf");
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut m = serde_json::Map::new();
    m.insert("x".into(), deep);
    let call = ToolCall::new("c1", "t", Value::Object(m));
    let r = HookRegistry::new();
    let state = AgentState::new("a").with_message(Message::user("x"));
    let call_ref = &call;
    let out = r
        .run(state, RunOptions::new("m"), |run| async move {
            run.start_iteration().await?;
            let rec = run
                .tool_call(call_ref, |_| async { Ok("ran".to_owned()) })
                .await?;
            Ok(rec.result().to_owned())
        })
        .await;
    let o = out.unwrap();
    assert!(o.answer.contains("were refused"), "{}", o.answer);
    assert_eq!(o.state.tool_executions[0].arguments, json!({}));
    hooks_core::json::drop_deep(call.arguments);
}

#[test]
fn building_and_dropping_such_a_call_alone_is_fine() {
    let mut deep = json!("leaf");
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut m = serde_json::Map::new();
    m.insert("x".into(), deep);
    let call = ToolCall::new("c1", "t", Value::Object(m));
    hooks_core::json::drop_deep(call.arguments);
}

#[test]
fn reading_the_iteration_inside_with_state_does_not_deadlock() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = HookRegistry::new();
        let _ = rt.block_on(r.run(
            AgentState::new("a").with_message(Message::user("x")),
            RunOptions::new("m"),
            |run| async move {
                run.with_state(|s| {
                    s.metadata.insert("it".into(), json!(run.iteration()));
                });
                Ok(String::new())
            },
        ));
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "the run deadlocked"
    );
}
