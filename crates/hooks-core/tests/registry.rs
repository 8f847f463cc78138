//! The registry's dispatch table (DESIGN.md §4): order, error policy, concurrency, names,
//! panic isolation and change tracking.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hooks_core::test_util::{Record, RecordingProvider};
use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, AgentState,
    BeforeInvocationEvent, BeforeModelCallEvent, BeforeToolCallEvent, CustomEvent, Field,
    HookError, HookEvent, HookPriority, HookProvider, HookRegistry, HookSet, IterationEvent,
    Message, ModelResponse, RunId, async_trait,
};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

/// A provider that logs `name:event` and can fail, panic or write on any event.
struct Probe {
    name: &'static str,
    priority: i32,
    log: Log,
    fail_on: Option<HookEvent>,
    panic_on: Option<HookEvent>,
    hooks: HookSet,
}

impl Probe {
    fn new(name: &'static str, priority: i32, log: &Log) -> Self {
        Self {
            name,
            priority,
            log: Arc::clone(log),
            fail_on: None,
            panic_on: None,
            hooks: HookSet::ALL,
        }
    }
    fn failing(mut self, e: HookEvent) -> Self {
        self.fail_on = Some(e);
        self
    }
    fn panicking(mut self, e: HookEvent) -> Self {
        self.panic_on = Some(e);
        self
    }
    fn hit(&self, e: HookEvent) -> Result<(), HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.name, e.method_name()));
        if self.panic_on == Some(e) {
            panic!("{} exploded", self.name);
        }
        if self.fail_on == Some(e) {
            return Err(HookError::new(format!("{} refuses", self.name)));
        }
        Ok(())
    }
}

#[async_trait]
impl HookProvider for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn priority(&self) -> HookPriority {
        HookPriority::new(self.priority)
    }
    fn hooks(&self) -> HookSet {
        self.hooks
    }
    async fn on_before_invocation(&self, _: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.hit(HookEvent::BeforeInvocation)
    }
    async fn on_after_invocation(&self, _: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.hit(HookEvent::AfterInvocation)
    }
    async fn on_iteration_start(&self, _: &IterationEvent<'_>) -> Result<(), HookError> {
        self.hit(HookEvent::IterationStart)
    }
    async fn on_iteration_end(&self, _: &IterationEvent<'_>) -> Result<(), HookError> {
        self.hit(HookEvent::IterationEnd)
    }
    async fn on_before_model_call(
        &self,
        _: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.hit(HookEvent::BeforeModelCall)
    }
    async fn on_after_model_call(&self, _: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        self.hit(HookEvent::AfterModelCall)
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if self.name == "writer" {
            e.arguments_mut()["rewritten"] = json!(true);
        }
        self.hit(HookEvent::BeforeToolCall)
    }
    async fn on_after_tool_call(&self, _: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        self.hit(HookEvent::AfterToolCall)
    }
    async fn on_custom_event(&self, e: &CustomEvent<'_>) -> Result<Option<Value>, HookError> {
        self.hit(HookEvent::Custom)?;
        Ok(match self.name {
            "silent" => None,
            n => Some(json!({ "from": n, "event": e.name() })),
        })
    }
}

fn three(log: &Log, configure: impl Fn(Probe) -> Probe) -> HookRegistry {
    let mut r = HookRegistry::new();
    // Registered out of order; "b" and "b2" share a priority and keep registration order.
    r.add(configure(Probe::new("c", 300, log))).unwrap();
    r.add(configure(Probe::new("a", 50, log))).unwrap();
    r.add(configure(Probe::new("b", 150, log))).unwrap();
    r.add(configure(Probe::new("b2", 150, log))).unwrap();
    r
}

fn taken(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn names(log: &[String]) -> Vec<&str> {
    log.iter().map(|s| s.split(':').next().unwrap()).collect()
}

fn run_id() -> RunId {
    RunId::new("run-1")
}

#[tokio::test]
async fn before_events_run_in_priority_order_with_ties_in_registration_order() {
    let log = Log::default();
    let r = three(&log, |p| p);
    let mut ev = BeforeInvocationEvent::new(AgentState::new("x"));
    r.before_invocation(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["a", "b", "b2", "c"]);

    let id = run_id();
    let ev_ext = hooks_core::Extensions::new();
    let mut ev = BeforeModelCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        "m",
        vec![],
    );
    r.before_model_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["a", "b", "b2", "c"]);

    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", json!({}));
    let mut ev = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
    );
    r.before_tool_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["a", "b", "b2", "c"]);
}

#[tokio::test]
async fn after_events_run_in_reverse_priority_order() {
    let log = Log::default();
    let r = three(&log, |p| p);
    let id = run_id();
    let ev_ext = hooks_core::Extensions::new();
    let mut ev = AfterModelCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        "m",
        &[],
        Ok(ModelResponse::text("x")),
    )
    .with_duration(Default::default());
    r.after_model_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);

    let args = json!({});
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "r".into(),
    )
    .with_duration(Default::default());
    r.after_tool_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);

    let state = AgentState::new("x");
    r.after_invocation(&AfterInvocationEvent::new(&state, None, Default::default()))
        .await
        .unwrap();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);
}

#[tokio::test]
async fn stop_at_once_events_stop_at_the_first_error_and_return_it() {
    let id = run_id();
    for event in [
        HookEvent::BeforeInvocation,
        HookEvent::BeforeModelCall,
        HookEvent::BeforeToolCall,
        HookEvent::AfterModelCall,
    ] {
        let log = Log::default();
        let r = three(&log, |p| if p.name == "b" { p.failing(event) } else { p });
        let err = match event {
            HookEvent::BeforeInvocation => {
                r.before_invocation(&mut BeforeInvocationEvent::new(AgentState::new("x")))
                    .await
            }
            HookEvent::BeforeModelCall => {
                r.before_model_call(&mut BeforeModelCallEvent::new(
                    hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
                        .with_iteration(1)
                        .with_attempt(0),
                    "m",
                    vec![],
                ))
                .await
            }
            HookEvent::BeforeToolCall => {
                r.before_tool_call(&mut BeforeToolCallEvent::new(
                    hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
                        .with_iteration(1)
                        .with_attempt(0),
                    &hooks_core::ToolCall::new("c", "t", json!({})),
                ))
                .await
            }
            _ => {
                r.after_model_call(
                    &mut AfterModelCallEvent::new(
                        hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
                            .with_iteration(1)
                            .with_attempt(0),
                        "m",
                        &[],
                        Ok(ModelResponse::text("")),
                    )
                    .with_duration(Default::default()),
                )
                .await
            }
        }
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Hook provider 'b' failed in {event}: b refuses")
        );
        assert_eq!(err.provider(), "b");
        assert_eq!(err.event(), event);
        let ran = names(&taken(&log))
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if event == HookEvent::AfterModelCall {
            assert_eq!(ran, ["c", "b2", "b"], "a never runs after b failed");
        } else {
            assert_eq!(ran, ["a", "b"], "b2 and c never run after b failed");
        }
    }
}

#[tokio::test]
async fn after_tool_call_runs_every_provider_and_returns_the_first_error() {
    let log = Log::default();
    let r = three(&log, |p| {
        if p.name == "b" || p.name == "a" {
            p.failing(HookEvent::AfterToolCall)
        } else {
            p
        }
    });
    let id = run_id();
    let args = json!({});
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "r".into(),
    )
    .with_duration(Default::default());
    let err = r.after_tool_call(&mut ev).await.unwrap_err();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);
    assert_eq!(
        err.to_string(),
        "Hook provider 'b' failed in on_after_tool_call: b refuses"
    );
    assert_eq!(err.cause().to_string(), "b refuses");
}

#[tokio::test]
async fn after_invocation_runs_every_provider_and_returns_the_first_error() {
    let log = Log::default();
    let r = three(&log, |p| {
        if p.name == "b" {
            p.failing(HookEvent::AfterInvocation)
        } else {
            p
        }
    });
    let state = AgentState::new("x");
    let err = r
        .after_invocation(&AfterInvocationEvent::new(&state, None, Default::default()))
        .await
        .unwrap_err();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);
    assert_eq!(
        err.to_string(),
        "Hook provider 'b' failed in on_after_invocation: b refuses"
    );
    assert_eq!(err.cause().to_string(), "b refuses");
}

/// Two providers that each wait for the other: only concurrent dispatch completes.
struct Rendezvous {
    name: &'static str,
    arrived: Arc<AtomicUsize>,
}

#[async_trait]
impl HookProvider for Rendezvous {
    fn name(&self) -> &str {
        self.name
    }
    fn hooks(&self) -> HookSet {
        HookSet::ITERATION
    }
    async fn on_iteration_start(&self, _: &IterationEvent<'_>) -> Result<(), HookError> {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        for _ in 0..1000 {
            if self.arrived.load(Ordering::SeqCst) >= 2 {
                return Ok(());
            }
            tokio::task::yield_now().await;
        }
        Err(HookError::new("the other provider never ran concurrently"))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn iteration_events_run_concurrently() {
    let arrived = Arc::new(AtomicUsize::new(0));
    let mut r = HookRegistry::new();
    r.add(Rendezvous {
        name: "x",
        arrived: arrived.clone(),
    })
    .unwrap();
    r.add(Rendezvous {
        name: "y",
        arrived: arrived.clone(),
    })
    .unwrap();
    let state = AgentState::new("a");
    let errors = r.iteration_start(&IterationEvent::new(&state)).await;
    assert!(errors.is_empty(), "{errors:?}");
}

#[tokio::test]
async fn iteration_errors_are_reported_with_the_provider_name_and_never_stop_others() {
    let log = Log::default();
    let r = three(&log, |p| match p.name {
        "a" => p.failing(HookEvent::IterationStart),
        "c" => p.panicking(HookEvent::IterationEnd),
        _ => p,
    });
    let state = AgentState::new("x");
    let errors = r.iteration_start(&IterationEvent::new(&state)).await;
    assert_eq!(taken(&log).len(), 4);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "Hook provider 'a' failed in on_iteration_start: a refuses"
    );
    let errors = r.iteration_end(&IterationEvent::new(&state)).await;
    assert_eq!(taken(&log).len(), 4);
    assert_eq!(
        errors[0].to_string(),
        "Hook provider 'c' failed in on_iteration_end: panicked: c exploded"
    );
}

#[tokio::test]
async fn custom_events_return_the_last_non_empty_reply_and_stop_at_errors() {
    let log = Log::default();
    let mut r = HookRegistry::new();
    r.add(Probe::new("first", 10, &log)).unwrap();
    r.add(Probe::new("second", 20, &log)).unwrap();
    r.add(Probe::new("silent", 30, &log)).unwrap();
    let id = run_id();
    let payload = json!({"k": 1});
    let reply = r
        .custom(&CustomEvent::new(&id, "approval", &payload))
        .await
        .unwrap();
    assert_eq!(reply, Some(json!({"from": "second", "event": "approval"})));
    assert_eq!(names(&taken(&log)), ["first", "second", "silent"]);

    r.add(Probe::new("broken", 15, &log).failing(HookEvent::Custom))
        .unwrap();
    let err = r
        .custom(&CustomEvent::new(&id, "approval", &payload))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'broken' failed in on_custom_event: broken refuses"
    );
    assert_eq!(names(&taken(&log)), ["first", "broken"]);
}

#[tokio::test]
async fn a_panicking_provider_becomes_an_error_naming_it_and_the_event() {
    let log = Log::default();
    let r = three(&log, |p| {
        if p.name == "b2" {
            p.panicking(HookEvent::BeforeToolCall)
        } else {
            p
        }
    });
    let id = run_id();
    let err = r
        .before_tool_call(&mut BeforeToolCallEvent::new(
            hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
                .with_iteration(1)
                .with_attempt(0),
            &hooks_core::ToolCall::new("c", "t", json!({})),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'b2' failed in on_before_tool_call: panicked: b2 exploded"
    );
    // The registry is still usable afterwards.
    r.before_model_call(&mut BeforeModelCallEvent::new(
        hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
            .with_iteration(1)
            .with_attempt(0),
        "m",
        vec![],
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn providers_that_do_not_declare_an_event_are_skipped() {
    let sink: Arc<Mutex<Vec<Record>>> = Arc::default();
    let mut r = HookRegistry::new();
    r.add(
        RecordingProvider::new("tools")
            .with_hooks(HookSet::TOOL_CALL)
            .with_sink(sink.clone()),
    )
    .unwrap();
    r.add(
        RecordingProvider::new("models")
            .with_hooks(HookSet::MODEL_CALL)
            .with_sink(sink.clone()),
    )
    .unwrap();
    let id = run_id();
    r.before_tool_call(&mut BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
            .with_iteration(1)
            .with_attempt(0),
        &hooks_core::ToolCall::new("c", "t", json!({})),
    ))
    .await
    .unwrap();
    let recs = sink.lock().unwrap().clone();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].provider, "tools");
    assert!(r.has_subscribers(HookEvent::BeforeModelCall));
    assert!(!r.has_subscribers(HookEvent::BeforeInvocation));
}

#[test]
fn names_are_unique_and_providers_can_be_removed_got_and_counted() {
    let log = Log::default();
    let mut r = HookRegistry::new();
    assert!(r.is_empty());
    r.add(Probe::new("a", 1, &log)).unwrap();
    let err = r.add(Probe::new("a", 2, &log)).unwrap_err();
    assert_eq!(err.to_string(), "Hook provider 'a' already registered");
    r.add(Probe::new("b", 0, &log)).unwrap();
    assert_eq!(r.len(), 2);
    assert!(r.contains("a"));
    assert_eq!(
        r.get("b").map(|p| p.name().to_owned()).as_deref(),
        Some("b")
    );
    assert_eq!(r.names().collect::<Vec<_>>(), ["b", "a"]);
    assert!(r.remove("a").is_some());
    assert!(r.remove("a").is_none());
    assert!(!r.contains("a"));
    assert_eq!(r.len(), 1);
    // The freed name can be taken again.
    r.add(Probe::new("a", 1, &log)).unwrap();
}

#[test]
fn a_registry_is_built_from_a_list_in_one_call() {
    let log = Log::default();
    let list: Vec<Arc<dyn HookProvider>> = vec![
        Arc::new(Probe::new("x", 200, &log)),
        Arc::new(Probe::new("y", 100, &log)),
    ];
    let r = HookRegistry::from_providers(list).unwrap();
    assert_eq!(r.names().collect::<Vec<_>>(), ["y", "x"]);
    let dup: Vec<Arc<dyn HookProvider>> = vec![
        Arc::new(Probe::new("x", 200, &log)),
        Arc::new(Probe::new("x", 100, &log)),
    ];
    assert_eq!(
        HookRegistry::from_providers(dup).unwrap_err().to_string(),
        "Hook provider 'x' already registered"
    );
}

#[tokio::test]
async fn dispatch_records_which_provider_changed_which_field() {
    let log = Log::default();
    let mut r = three(&log, |p| p);
    r.add(Probe::new("writer", 60, &log)).unwrap();
    let id = run_id();
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c", "t", json!({"q": 1}));
    let mut ev = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
    );
    r.before_tool_call(&mut ev).await.unwrap();
    assert_eq!(ev.arguments(), &json!({"q": 1, "rewritten": true}));
    let changes = ev.changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(&*changes[0].provider, "writer");
    assert_eq!(changes[0].field, Field::Arguments);

    // Nobody writes: nothing is recorded.
    let ev_ext = hooks_core::Extensions::new();
    let mut ev = BeforeModelCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        "m",
        vec![Message::user("hi")],
    );
    r.before_model_call(&mut ev).await.unwrap();
    assert!(ev.changes().is_empty());
}

#[tokio::test]
async fn one_registry_is_shared_by_concurrent_runs_without_crosstalk() {
    let rec = Arc::new(RecordingProvider::new("rec"));
    let mut r = HookRegistry::new();
    r.add(rec.clone()).unwrap();
    let r = Arc::new(r);
    let mut tasks = Vec::new();
    for i in 0..16 {
        let r = r.clone();
        tasks.push(tokio::spawn(async move {
            let id = RunId::new(format!("run-{i}"));
            for j in 0..8 {
                let call = format!("call-{i}-{j}");
                let ev_ext = hooks_core::Extensions::new();
                let ev_call = hooks_core::ToolCall::new(&call, "t", json!({"run": i}));
                let mut ev = BeforeToolCallEvent::new(
                    hooks_core::EventContext::new(&id, &ev_ext)
                        .with_iteration(1)
                        .with_attempt(0),
                    &ev_call,
                );
                r.before_tool_call(&mut ev).await.unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let recs = rec.records();
    assert_eq!(recs.len(), 16 * 8);
    for rec in recs {
        let i: usize = rec.run_id.as_str()["run-".len()..].parse().unwrap();
        assert!(rec.detail.contains(&format!("call-{i}-")), "{rec:?}");
        assert_eq!(rec.payload, Some(json!({"run": i})));
    }
}

#[tokio::test]
async fn a_panic_in_after_tool_call_does_not_stop_the_providers_after_it() {
    let log = Log::default();
    let r = three(&log, |p| match p.name {
        "b2" => p.panicking(HookEvent::AfterToolCall),
        "b" => p.failing(HookEvent::AfterToolCall),
        _ => p,
    });
    let id = run_id();
    let args = json!({});
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "r".into(),
    )
    .with_duration(Default::default());
    let err = r.after_tool_call(&mut ev).await.unwrap_err();
    assert_eq!(names(&taken(&log)), ["c", "b2", "b", "a"]);
    assert_eq!(
        err.to_string(),
        "Hook provider 'b2' failed in on_after_tool_call: panicked: b2 exploded"
    );
}

use hooks_core::TokioTimer;

/// A provider that never returns from `on_before_tool_call`.
struct Stuck;

#[async_trait]
impl HookProvider for Stuck {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL | HookSet::AFTER_TOOL_CALL
    }
    async fn on_before_tool_call(&self, _: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        std::future::pending::<()>().await;
        Ok(())
    }
    async fn on_after_tool_call(&self, _: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_that_never_returns_becomes_an_error_naming_it_at_the_deadline() {
    let log = Log::default();
    let mut r = HookRegistry::new();
    r.add(Stuck).unwrap();
    r.add(Probe::new("after", 400, &log)).unwrap();
    r.set_deadline(std::time::Duration::from_secs(5), Arc::new(TokioTimer));
    assert_eq!(r.deadline(), Some(std::time::Duration::from_secs(5)));
    let id = run_id();
    let err = r
        .before_tool_call(&mut BeforeToolCallEvent::new(
            hooks_core::EventContext::new(&id, &hooks_core::Extensions::new())
                .with_iteration(1)
                .with_attempt(0),
            &hooks_core::ToolCall::new("c", "t", json!({})),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'Stuck' failed in on_before_tool_call: did not return within 5.000s and was abandoned (the registry's per-hook deadline)"
    );
    // Collect-all events still run the others.
    let args = json!({});
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c", "t", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "r".into(),
    )
    .with_duration(Default::default());
    let err = r.after_tool_call(&mut ev).await.unwrap_err();
    assert_eq!(err.provider(), "Stuck");
    assert_eq!(names(&taken(&log)), ["after"]);
}

/// A provider with one priority on the way in and another on the way out.
struct TwoFaced(Log);

#[async_trait]
impl HookProvider for TwoFaced {
    fn priority(&self) -> HookPriority {
        HookPriority::SECURITY_MIN
    }
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        if event.is_after() {
            HookPriority::OUTPUT_GUARD
        } else {
            self.priority()
        }
    }
    fn hooks(&self) -> HookSet {
        HookSet::TOOL_CALL
    }
    async fn on_before_tool_call(&self, _: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push("guard:on_before_tool_call".into());
        Ok(())
    }
    async fn on_after_tool_call(&self, _: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push("guard:on_after_tool_call".into());
        Ok(())
    }
}

#[tokio::test]
async fn a_provider_can_run_first_on_both_sides_with_a_priority_per_event() {
    let log = Log::default();
    let mut r = three(&log, |p| p);
    r.add(TwoFaced(log.clone())).unwrap();
    let id = run_id();
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", json!({}));
    let mut ev = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
    );
    r.before_tool_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["guard", "a", "b", "b2", "c"]);
    let args = json!({});
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "r".into(),
    )
    .with_duration(Default::default());
    r.after_tool_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["guard", "c", "b2", "b", "a"]);
    // `names()` reports the provider's own priority.
    assert_eq!(r.names().next(), Some("TwoFaced"));
}

#[tokio::test]
async fn shared_and_boxed_providers_are_providers() {
    let log = Log::default();
    let shared = Arc::new(Probe::new("shared", 10, &log));
    let boxed: Box<dyn HookProvider> = Box::new(Probe::new("boxed", 20, &log));
    let mut r = HookRegistry::new();
    r.add(Arc::clone(&shared)).unwrap();
    r.add(boxed).unwrap();
    assert_eq!(r.names().collect::<Vec<_>>(), ["shared", "boxed"]);
    let id = run_id();
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "t", json!({}));
    let mut ev = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
    );
    r.before_tool_call(&mut ev).await.unwrap();
    assert_eq!(names(&taken(&log)), ["shared", "boxed"]);
    // The handle still reaches the provider the registry calls.
    assert_eq!(Arc::strong_count(&shared), 2);
}

/// Early only on before-model-call: every other event at the default priority.
struct EarlyOnModel(Log);

#[async_trait]
impl HookProvider for EarlyOnModel {
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        if event == HookEvent::BeforeModelCall {
            HookPriority::SECURITY_MIN
        } else {
            HookPriority::DEFAULT
        }
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL | HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_model_call(
        &self,
        _: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.0.lock().unwrap().push("early:model".into());
        Ok(())
    }
    async fn on_before_tool_call(&self, _: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.0.lock().unwrap().push("early:tool".into());
        Ok(())
    }
}

#[tokio::test]
async fn a_priority_for_one_event_applies_to_that_event_and_no_other() {
    // Found while adding an event: per-event priorities were stored in lifecycle order but
    // read by the event's index, so a priority given for one event could apply to another.
    let log = Log::default();
    let mut r = HookRegistry::new();
    r.add(EarlyOnModel(log.clone())).unwrap();
    r.add(Probe::new("obs", 150, &log)).unwrap();
    let (run, ext) = (RunId::new("r"), hooks_core::Extensions::new());
    let cx = hooks_core::EventContext::new(&run, &ext);
    let mut e = BeforeModelCallEvent::new(cx, "m", vec![Message::user("hi")]);
    r.before_model_call(&mut e).await.unwrap();
    let call = hooks_core::ToolCall::new("c1", "t", json!({}));
    let mut e = BeforeToolCallEvent::new(cx, &call);
    r.before_tool_call(&mut e).await.unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "early:model",
            "obs:on_before_model_call",
            "obs:on_before_tool_call",
            "early:tool"
        ]
    );
}
