//! The adapter's mapping, driven by a real rig agent (rig's scripted mock model): each rig
//! prompt is one of our runs with every event in order; our decisions become rig's actions.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{Calls, Failed, Lookup, Wipe, names};
use hooks_core::prelude::*;
use hooks_core::test_util::RecordingProvider;
use hooks_rig::RigHooks;
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;

/// Cancels `wipe`, rewrites `lookup`'s `id` argument, marks results, redacts `secret` from
/// replies, asks for a reply again once when it says `again`.
struct Policy {
    retried: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl HookProvider for Policy {
    fn name(&self) -> &str {
        "policy"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL | HookSet::AFTER_TOOL_CALL | HookSet::AFTER_MODEL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        match e.tool_name() {
            "wipe" => e.cancel("wiping is not allowed"),
            "lookup" => {
                e.arguments_mut()["id"] = json!("rewritten");
            }
            _ => {}
        }
        Ok(())
    }
    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        if e.tool_name() == "lookup" {
            let r = format!("checked: {}", e.result());
            e.set_result(r);
        }
        Ok(())
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let again = e
            .response()
            .is_some_and(|r| r.message.content.contains("again"));
        if again && !self.retried.swap(true, std::sync::atomic::Ordering::SeqCst) {
            e.request_retry();
            e.set_retry_feedback("say it once more");
            return Ok(());
        }
        e.edit_response(|r| {
            let before = r.message.content.clone();
            r.message.content = before.replace("secret", "[hidden]");
            r.message.content != before
        });
        Ok(())
    }
}

fn registry(recorder: RecordingProvider) -> Arc<HookRegistry> {
    let mut r = HookRegistry::new();
    r.add(recorder).unwrap();
    r.add(Policy {
        retried: Default::default(),
    })
    .unwrap();
    Arc::new(r)
}

fn transcript(model: &MockCompletionModel, call: usize) -> String {
    format!("{:?}", model.requests()[call].chat_history)
}

#[tokio::test]
async fn one_prompt_is_one_run_with_every_event_in_order() {
    let recorder = RecordingProvider::new("rec");
    let sink = recorder.sink();
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"id": "original"})),
        MockTurn::text("found it"),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "ok"))
        .add_hook(RigHooks::new(registry(recorder)).agent_id("support"))
        .build();
    let out = agent.prompt("look it up").max_turns(4).await.unwrap();
    assert_eq!(out.output(), "found it");

    let records = sink.lock().unwrap().clone();
    let run_ids: std::collections::HashSet<_> = records.iter().map(|r| r.run_id.clone()).collect();
    assert_eq!(run_ids.len(), 1, "one run id for the prompt");
    let events: Vec<HookEvent> = records.iter().map(|r| r.event).collect();
    use HookEvent::*;
    assert_eq!(
        events,
        [
            BeforeInvocation,
            IterationStart,
            BeforeModelCall,
            AfterModelCall,
            BeforeToolCall,
            AfterToolCall,
            IterationEnd,
            IterationStart,
            BeforeModelCall,
            AfterModelCall,
            IterationEnd,
            AfterInvocation,
        ]
    );
    // The tool ran with the hooks' arguments; the model saw the hooks' result.
    assert_eq!(calls.lock().unwrap()[0].1, json!({"id": "rewritten"}));
    let seen = transcript(&model, 1);
    assert!(seen.contains("checked: ok"), "{seen}");
}

#[tokio::test]
async fn a_cancelled_call_is_skipped_with_the_reason_the_model_sees() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "wipe", json!({"all": true})),
        MockTurn::text("I could not wipe."),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .tool(Wipe::new(&calls, "wiped"))
        .add_hook(RigHooks::new(registry(RecordingProvider::new("rec"))))
        .build();
    let out = agent.prompt("wipe everything").max_turns(4).await.unwrap();
    assert_eq!(out.output(), "I could not wipe.");
    assert!(names(&calls).is_empty(), "the tool never ran");
    let seen = transcript(&model, 1);
    assert!(seen.contains("wiping is not allowed"), "{seen}");
}

#[tokio::test]
async fn the_reply_is_rewritten_and_a_retry_is_rigs_repeat() {
    let model = MockCompletionModel::from_turns([
        MockTurn::text("again please"),
        MockTurn::text("the secret is out"),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(registry(RecordingProvider::new("rec"))))
        .build();
    let out = agent.prompt("tell me").max_turns(4).await.unwrap();
    assert_eq!(out.output(), "the [hidden] is out");
    assert_eq!(
        model.request_count(),
        2,
        "the hooks' retry made a second call"
    );
    let seen = transcript(&model, 1);
    assert!(
        seen.contains("say it once more"),
        "the feedback reached the model: {seen}"
    );
    // Rig's history holds the rewritten reply, never the original.
    let history = format!("{:?}", out.messages());
    assert!(!history.contains("secret"), "{history}");
}

#[tokio::test]
async fn a_tool_error_goes_through_the_after_hooks() {
    struct Redact;
    #[async_trait]
    impl HookProvider for Redact {
        fn hooks(&self) -> HookSet {
            HookSet::AFTER_TOOL_CALL
        }
        async fn on_after_tool_call(
            &self,
            e: &mut AfterToolCallEvent<'_>,
        ) -> Result<(), HookError> {
            // A guard takes it out of the error and of what the model sees.
            e.redact_error(|text| {
                let before = text.clone();
                *text = text.replace("hunter2", "[PASSWORD]");
                *text != before
            });
            let result = e.result().replace("hunter2", "[PASSWORD]");
            e.set_result(result);
            Ok(())
        }
    }
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({})),
        MockTurn::text("it failed"),
    ]);
    let registry = Arc::new(HookRegistry::new().with(Redact).unwrap());
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::failing(&calls, "login hunter2 rejected"))
        .add_hook(RigHooks::new(registry))
        .build();
    let out = agent.prompt("go").max_turns(4).await.unwrap();
    assert_eq!(out.output(), "it failed");
    let seen = transcript(&model, 1);
    assert!(!seen.contains("hunter2"), "{seen}");
    assert!(seen.contains("[PASSWORD]"), "{seen}");
    // Rig's own record of the call holds no more than the model saw.
    let history = format!("{:?}", out.messages());
    assert!(!history.contains("hunter2"), "{history}");
}

#[tokio::test]
async fn a_before_invocation_error_stops_the_run_before_any_model_call() {
    struct Refuse;
    #[async_trait]
    impl HookProvider for Refuse {
        fn hooks(&self) -> HookSet {
            HookSet::BEFORE_INVOCATION
        }
        async fn on_before_invocation(
            &self,
            _e: &mut BeforeInvocationEvent,
        ) -> Result<(), HookError> {
            Err(HookError::new("not today"))
        }
    }
    let model = MockCompletionModel::from_turns([MockTurn::text("never")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(
            HookRegistry::new().with(Refuse).unwrap(),
        )))
        .build();
    let err = agent.prompt("hi").await.unwrap_err();
    assert!(err.to_string().contains("not today"), "{err}");
    assert_eq!(model.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_prompts_on_one_adapter_keep_their_own_runs() {
    let recorder = RecordingProvider::new("rec");
    let sink = recorder.sink();
    let hooks = RigHooks::new(registry(recorder));
    let mut joins = Vec::new();
    for i in 0..50 {
        let hooks = hooks.clone();
        joins.push(tokio::spawn(async move {
            let calls: Calls = Arc::default();
            let model = MockCompletionModel::from_turns([
                MockTurn::tool_call(format!("c{i}"), "lookup", json!({"id": i})),
                MockTurn::text(format!("answer {i}")),
            ]);
            let agent = AgentBuilder::new(model.clone())
                .tool(Lookup::new(&calls, format!("result {i}")))
                .add_hook(hooks)
                .build();
            let out = agent
                .prompt(format!("question {i}"))
                .max_turns(4)
                .await
                .unwrap();
            assert_eq!(out.output(), format!("answer {i}"));
            let seen = transcript(&model, 1);
            assert!(seen.contains(&format!("checked: result {i}")), "{seen}");
        }));
    }
    for j in joins {
        j.await.unwrap();
    }
    let records = sink.lock().unwrap().clone();
    let runs: std::collections::HashSet<_> = records.iter().map(|r| r.run_id.clone()).collect();
    assert_eq!(runs.len(), 50);
    for run in runs {
        let n = records.iter().filter(|r| r.run_id == run).count();
        assert_eq!(n, 12, "every run saw its own 12 events");
    }
}

#[tokio::test]
async fn dropping_rigs_run_abandons_ours() {
    struct Abandon(Arc<std::sync::atomic::AtomicUsize>);
    #[async_trait]
    impl HookProvider for Abandon {
        fn hooks(&self) -> HookSet {
            HookSet::RUN_ABANDONED
        }
        fn on_run_abandoned(&self, _run_id: &RunId) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    struct Slow;
    impl rig_agent::tool::Tool for Slow {
        const NAME: &'static str = "slow";
        type Args = serde_json::Map<String, serde_json::Value>;
        type Output = String;
        type Error = Failed;
        fn description(&self) -> String {
            "slow".into()
        }
        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object"})
        }
        async fn call(
            &self,
            _c: &mut rig_agent::tool::ToolContext,
            _a: Self::Args,
        ) -> Result<String, Failed> {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            Ok("late".into())
        }
    }
    let abandoned = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let registry = Arc::new(
        HookRegistry::new()
            .with(Abandon(Arc::clone(&abandoned)))
            .unwrap(),
    );
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "slow", json!({})),
        MockTurn::text("done"),
    ]);
    let agent = AgentBuilder::new(model)
        .tool(Slow)
        .add_hook(RigHooks::new(registry))
        .build();
    let run = agent.prompt("go").max_turns(4).into_future();
    let timed = tokio::time::timeout(std::time::Duration::from_millis(300), run).await;
    assert!(timed.is_err(), "the slow tool keeps the run going");
    // The driver task ends with the abort; give it a moment to run its drop.
    for _ in 0..100 {
        if abandoned.load(std::sync::atomic::Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(abandoned.load(std::sync::atomic::Ordering::SeqCst), 1);
}
