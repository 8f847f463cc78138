//! A second hostile review of the rig adapter, on the first one's fixes: document parts in
//! messages are refused like rig's documents; a retry after a failed model call ends; a call a
//! hook removed leaves later requests without its arguments; a turn's rewrite lands only on its
//! own turn when ids repeat; the same adapter twice is refused; concurrent prompts, renamed
//! calls and streamed retries end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Calls, Lookup, Pay, call, guard_registry, names, our_logs};
use hooks_core::ModelErrorKind;
use hooks_core::prelude::*;
use hooks_logging::LoggingHook;
use hooks_rig::RigHooks;
use rig_agent::AgentBuilder;
use rig_core::completion::message::{Document, DocumentSourceKind, UserContent};
use rig_core::message::AssistantContent;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;

const T: Duration = Duration::from_secs(10);

fn logging() -> LoggingHook {
    LoggingHook::builder()
        .with_log_arguments(true)
        .with_log_results(true)
        .build()
        .unwrap()
}

fn reqs(model: &MockCompletionModel) -> String {
    format!(
        "{:?}",
        model
            .requests()
            .iter()
            .map(|r| (&r.chat_history, &r.documents, &r.additional_params))
            .collect::<Vec<_>>()
    )
}

// ---- b01: a document part inside the prompt (not request.documents) ----------------------

#[tokio::test]
async fn b01_document_part_in_the_prompt_is_judged_or_refused() {
    const M: &str = "attack2.marker.1@example.com";
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(guard_registry(&[]))))
        .build();
    let prompt: rig_core::completion::Message = vec![
        UserContent::Document(Document {
            data: DocumentSourceKind::String(format!("customer e-mail: {M}")),
            media_type: None,
            additional_params: None,
        }),
        UserContent::text("summarise the file"),
    ]
    .into();
    let out = tokio::time::timeout(T, async { agent.prompt(prompt).await })
        .await
        .expect("hung");
    let err = out.expect_err("a document part is refused while a provider guards");
    assert!(
        err.to_string().contains("allow_unguarded_documents"),
        "{err}"
    );
    assert!(
        !reqs(&model).contains(M),
        "marker reached the model in a document part: {}",
        reqs(&model)
    );
}

// same, through the caller's history
#[tokio::test]
async fn b01b_document_part_in_history() {
    const M: &str = "attack2.marker.1b@example.com";
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(guard_registry(&[]))))
        .build();
    let old: rig_core::completion::Message = vec![UserContent::Document(Document {
        data: DocumentSourceKind::String(format!("card 4111 1111 1111 1111, {M}")),
        media_type: None,
        additional_params: None,
    })]
    .into();
    let out = tokio::time::timeout(T, async {
        agent.prompt("what was in it").history(vec![old]).await
    })
    .await
    .expect("hung");
    let err = out.expect_err("a document part in the history is refused while a provider guards");
    assert!(
        err.to_string().contains("allow_unguarded_documents"),
        "{err}"
    );
    assert!(
        !reqs(&model).contains(M),
        "marker reached the model via history document: {}",
        reqs(&model)
    );
}

// ---- b02: a hook that retries failed model calls -----------------------------------------

struct RetryErrors;
#[async_trait]
impl HookProvider for RetryErrors {
    fn name(&self) -> &str {
        "retry-errors"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.response().is_none() {
            e.request_retry();
        }
        Ok(())
    }
}

#[tokio::test]
async fn b02_retrying_a_failed_model_call_does_not_hang() {
    let model = MockCompletionModel::from_turns([MockTurn::error("boom"), MockTurn::text("ok")]);
    let mut r = HookRegistry::new();
    r.add(RetryErrors).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(
        out.is_ok(),
        "the prompt hung: a hook retried a failed model call"
    );
}

// ---- b03: retry on the last allowed turn, rejected reply with a marker --------------------

struct RetryMarked(AtomicUsize);
#[async_trait]
impl HookProvider for RetryMarked {
    fn name(&self) -> &str {
        "retry-marked"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.response()
            .is_some_and(|r| r.message.content.contains("attack2"))
        {
            self.0.fetch_add(1, Ordering::SeqCst);
            e.request_retry();
            e.set_retry_feedback("do not quote personal data");
        }
        Ok(())
    }
}

#[tokio::test]
async fn b03_retry_on_the_last_turn_ends_and_the_rejected_reply_is_not_returned() {
    const M: &str = "attack2.marker.3@example.com";
    let (logs, _g) = our_logs();
    let model = MockCompletionModel::from_turns([
        MockTurn::text(format!("the customer is {M}")),
        MockTurn::text("clean"),
    ]);
    let mut r = HookRegistry::new();
    r.add(RetryMarked(AtomicUsize::new(0))).unwrap();
    r.add(logging()).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(1).await })
        .await
        .expect("hung (retry on the last turn)");
    let shown = match &out {
        Ok(r) => format!("OK {} {:?}", r.output(), r.messages()),
        Err(e) => format!("ERR {e} / {e:?}"),
    };
    assert!(
        !shown.contains(M),
        "the rejected reply reached the caller: {shown}"
    );
    assert!(!logs.text().contains(M), "our logs");
}

// b03b: same with a hook that also retries errors (retry exhausted path)
#[tokio::test]
async fn b03b_retry_on_the_last_turn_with_an_error_retrier_does_not_hang() {
    let model =
        MockCompletionModel::from_turns([MockTurn::text("attack2 reply"), MockTurn::text("clean")]);
    let mut r = HookRegistry::new();
    r.add(RetryMarked(AtomicUsize::new(0))).unwrap();
    r.add(RetryErrors).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(1).await }).await;
    assert!(out.is_ok(), "hung");
}

// ---- b05: a hook removing a tool call after the model replied --------------------------------

struct DropPay;
#[async_trait]
impl HookProvider for DropPay {
    fn name(&self) -> &str {
        "drop-pay"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(r) = e.response_mut() {
            r.message.tool_calls.retain(|c| c.name != "pay");
        }
        Ok(())
    }
}

#[tokio::test]
async fn b05_removed_tool_call_is_gone_from_later_requests() {
    const CARD: &str = "4111 1111 1111 1111";
    let mut leaks = Vec::new();
    for guarded in [false, true] {
        let calls: Calls = Arc::default();
        let model = MockCompletionModel::from_turns([
            MockTurn::from_contents([
                call("c1", "lookup", json!({"q": "ok"})),
                call("c2", "pay", json!({"card": CARD})),
            ]),
            MockTurn::text("done"),
        ]);
        let mut r = if guarded {
            guard_registry(&[])
        } else {
            HookRegistry::new()
        };
        r.add(DropPay).unwrap();
        let agent = AgentBuilder::new(model.clone())
            .tool(Lookup::new(&calls, "found"))
            .tool(Pay::new(&calls, "paid"))
            .add_hook(RigHooks::new(Arc::new(r)))
            .build();
        let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
            .await
            .expect("hung");
        assert!(out.is_ok(), "{out:?}");
        assert!(!names(&calls).contains(&"pay".to_owned()), "pay ran");
        let all = model.requests();
        let later = format!("{:?}", all.get(1).map(|r| &r.chat_history));
        leaks.push((guarded, later.contains(CARD)));
    }
    assert!(
        leaks.iter().all(|(_, l)| !l),
        "removed call still in request 2: {leaks:?}"
    );
}

// ---- b06: a hook redacting a call's arguments: tool and later request get the redaction -----

struct RenameArgs;
#[async_trait]
impl HookProvider for RenameArgs {
    fn name(&self) -> &str {
        "mask-args"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(r) = e.response_mut() {
            for c in &mut r.message.tool_calls {
                if c.arguments.get("secret").is_some() {
                    c.arguments = json!({"secret": "[MASKED]"});
                }
            }
            if r.message.content.contains("attack2") {
                r.message.content = "[text masked]".into();
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn b06_masked_arguments_reach_the_tool_and_later_requests() {
    const M: &str = "attack2.secret.6";
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            AssistantContent::text(format!("calling with {M}")),
            call("c1", "lookup", json!({"secret": M})),
        ]),
        MockTurn::text("done"),
    ]);
    let mut r = HookRegistry::new();
    r.add(RenameArgs).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let _out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung")
        .unwrap();
    let got = format!("{:?}", calls.lock().unwrap());
    assert!(!got.contains(M), "tool got the unmasked args: {got}");
    let later = format!("{:?}", model.requests()[1].chat_history);
    assert!(
        !later.contains(M),
        "request 2 carries the unmasked turn: {later}"
    );
}

// ---- b07: same RigHooks on the agent and on the prompt --------------------------------------

#[tokio::test]
async fn b07_same_righooks_twice_is_refused_without_hang_or_call() {
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let hooks = RigHooks::new(Arc::new(guard_registry(&[])));
    let agent = AgentBuilder::new(model.clone())
        .add_hook(hooks.clone())
        .build();
    let out = tokio::time::timeout(T, async {
        agent.prompt("go").add_hook(hooks.clone()).await
    })
    .await
    .expect("hung");
    assert!(out.is_err());
    assert_eq!(model.request_count(), 0);
    // the adapter still works afterwards
    let model = MockCompletionModel::from_turns([MockTurn::text("ok")]);
    let agent = AgentBuilder::new(model).add_hook(hooks).build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").await })
        .await
        .expect("hung");
    assert!(out.is_ok());
}

// ---- b09: concurrent prompts on one agent with tool concurrency ---------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b09_concurrent_prompts_with_tool_concurrency_do_not_hang() {
    const M: &str = "attack2.marker.9@example.com";
    let calls: Calls = Arc::default();
    let turns = (0..8).flat_map(|i| {
        [
            MockTurn::from_contents([
                call(&format!("a{i}"), "lookup", json!({"email": M})),
                call(&format!("b{i}"), "lookup", json!({"q": i})),
            ]),
            MockTurn::text("done"),
        ]
    });
    let model = MockCompletionModel::from_turns(turns);
    let agent = Arc::new(
        AgentBuilder::new(model.clone())
            .tool(Lookup::new(&calls, "found"))
            .add_hook(RigHooks::new(Arc::new(guard_registry(&[]))))
            .build(),
    );
    let mut handles = Vec::new();
    for _ in 0..4 {
        let agent = Arc::clone(&agent);
        handles.push(tokio::spawn(async move {
            agent
                .prompt("go")
                .max_turns(4)
                .tool_concurrency(2)
                .await
                .map(|r| r.output())
        }));
    }
    let _out = tokio::time::timeout(T, futures_util::future::join_all(handles))
        .await
        .expect("hung");
    assert!(
        !format!("{:?}", calls.lock().unwrap()).contains(M),
        "tool got the marker"
    );
}

// ---- b02c: the project's own ModelRetryHook configured to retry any error ------------------

#[tokio::test]
async fn b02c_model_retry_hook_on_other_errors_does_not_hang() {
    let model =
        MockCompletionModel::from_turns([MockTurn::error("503 upstream"), MockTurn::text("ok")]);
    let retry = hooks_retry::ModelRetryHook::builder()
        .with_retry_on([ModelErrorKind::Other])
        .with_initial_delay(Duration::from_millis(5))
        .with_max_delay(Duration::from_millis(5))
        .build()
        .unwrap();
    let mut r = HookRegistry::new();
    r.add(retry).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(
        out.is_ok(),
        "the prompt hung: ModelRetryHook retried a failed call"
    );
}

// ---- b10: tool-call ids repeated across turns (local models send call_0 every turn) -------

#[tokio::test]
async fn b10_an_override_lands_only_on_its_own_turn() {
    const M: &str = "attack2.secret.10";
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([call("call_0", "lookup", json!({"secret": M}))]),
        MockTurn::from_contents([call("call_0", "lookup", json!({"q": "second"}))]),
        MockTurn::text("done"),
    ]);
    let mut r = HookRegistry::new();
    r.add(RenameArgs).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let _out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(5).await })
        .await
        .expect("hung");
    let all = model.requests();
    let third = format!("{:?}", all.get(2).map(|r| &r.chat_history));
    assert!(!third.contains(M), "marker in request 3");
    assert!(
        third.contains("second"),
        "turn 2's call was replaced by turn 1's override: {third}"
    );
}

// ---- b12: a hook renaming the tool of a call -------------------------------------------------

struct Rename;
#[async_trait]
impl HookProvider for Rename {
    fn name(&self) -> &str {
        "rename"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(r) = e.response_mut() {
            for c in &mut r.message.tool_calls {
                if c.name == "pay" {
                    c.name = "lookup".into();
                }
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn b12_renamed_call_runs_neither_tool_and_does_not_hang() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([call("c1", "pay", json!({"card": "4111 1111 1111 1111"}))]),
        MockTurn::text("done"),
    ]);
    let mut r = HookRegistry::new();
    r.add(Rename).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .tool(Pay::new(&calls, "paid"))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let _out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await })
        .await
        .expect("hung");
    assert!(names(&calls).is_empty(), "a tool ran: {:?}", names(&calls));
}

// ---- b13: streaming (unguarded opt-in) with an after-model retry ----------------------------

#[tokio::test]
async fn b13_streaming_with_a_retry_does_not_hang() {
    use futures_util::StreamExt;
    use rig_core::test_utils::MockStreamEvent;
    let model = MockCompletionModel::from_stream_turns([
        vec![
            MockStreamEvent::text("attack2 first"),
            MockStreamEvent::final_response_with_total_tokens(3),
        ],
        vec![
            MockStreamEvent::text("second"),
            MockStreamEvent::final_response_with_total_tokens(3),
        ],
    ]);
    let mut r = HookRegistry::new();
    r.add(RetryMarked(AtomicUsize::new(0))).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .add_hook(RigHooks::new(Arc::new(r)).allow_unguarded_streams(true))
        .build();
    let items = tokio::time::timeout(T, async {
        let mut s = agent.prompt("go").max_turns(4).stream();
        let mut items = Vec::new();
        while let Some(i) = s.next().await {
            items.push(format!("{i:?}"));
        }
        items
    })
    .await;
    assert!(items.is_ok(), "streamed prompt with a retry hung");
}

// ---- b14: tool error after a retry-on-error hook (tool path) -------------------------------

#[tokio::test]
async fn b14_model_error_after_a_tool_turn_with_error_retrier() {
    let calls: Calls = Arc::default();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "lookup", json!({"q": "x"})),
        MockTurn::error("boom"),
        MockTurn::text("ok"),
    ]);
    let mut r = HookRegistry::new();
    r.add(RetryErrors).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .tool(Lookup::new(&calls, "found"))
        .add_hook(RigHooks::new(Arc::new(r)).max_retries(1))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("go").max_turns(4).await }).await;
    assert!(out.is_ok(), "hung with max_retries(1)");
}

// ---- b20: what enters the requests without an event of its own is judged at each call -------

/// Turns down the first reply with feedback that quotes a marker.
struct FeedbackOnce(&'static str);
#[async_trait]
impl HookProvider for FeedbackOnce {
    fn name(&self) -> &str {
        "feedback-once"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.attempt() == 0 {
            e.request_retry();
            e.set_retry_feedback(format!("the customer wrote {}", self.0));
        }
        Ok(())
    }
}

#[tokio::test]
async fn b20_the_preamble_and_a_retrys_feedback_are_redacted_in_rigs_requests() {
    const P: &str = "preamble.marker.20@example.com";
    const F: &str = "feedback.marker.20@example.com";
    let (logs, _g) = our_logs();
    let model =
        MockCompletionModel::from_turns([MockTurn::text("first"), MockTurn::text("second")]);
    let mut r = guard_registry(&[]);
    r.add(FeedbackOnce(F)).unwrap();
    r.add(logging()).unwrap();
    let agent = AgentBuilder::new(model.clone())
        .preamble(format!("You support the account of {P}."))
        .add_hook(RigHooks::new(Arc::new(r)))
        .build();
    let out = tokio::time::timeout(T, async { agent.prompt("hi").max_turns(3).await })
        .await
        .expect("hung");
    let shown = match &out {
        Ok(r) => format!("OK {} {:?}", r.output(), r.messages()),
        Err(e) => format!("ERR {e} / {e:?}"),
    };
    let requests = format!("{:?}", model.requests());
    for (place, text) in [
        ("requests", &requests),
        ("caller", &shown),
        ("logs", &logs.text()),
    ] {
        assert!(
            !text.contains(P),
            "the preamble's marker reached {place}: {text}"
        );
        assert!(
            !text.contains(F),
            "the feedback's marker reached {place}: {text}"
        );
    }
    assert!(requests.contains("[REDACTED_EMAIL]"), "{requests}");
    assert_eq!(model.requests().len(), 2);
}
