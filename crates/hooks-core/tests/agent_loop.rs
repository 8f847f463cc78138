//! The reference loop (DESIGN.md §6): every writable field through a real run, cancels, retries,
//! failures, bad model output, parallel tool calls and concurrent runs.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hooks_core::agent::{Agent, FnTool, Tool, ToolError, ToolInput};
use hooks_core::test_util::{RecordingProvider, ScriptedModel};
use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, Field, HookError, HookEvent, HookProvider,
    HookRegistry, HookSet, Message, ModelError, ModelResponse, RetryTarget, Role, RunError,
    ToolCall, ToolSpec, async_trait,
};
use serde_json::{Value, json};

type BeforeTool = Box<dyn Fn(&mut BeforeToolCallEvent<'_>) -> Result<(), HookError> + Send + Sync>;
type AfterTool = Box<dyn Fn(&mut AfterToolCallEvent<'_>) -> Result<(), HookError> + Send + Sync>;
type BeforeModel =
    Box<dyn Fn(&mut BeforeModelCallEvent<'_>) -> Result<(), HookError> + Send + Sync>;
type AfterModel = Box<dyn Fn(&mut AfterModelCallEvent<'_>) -> Result<(), HookError> + Send + Sync>;
type BeforeInv = Box<dyn Fn(&mut BeforeInvocationEvent) -> Result<(), HookError> + Send + Sync>;
type AfterInv = Box<dyn Fn(&AfterInvocationEvent<'_>) -> Result<(), HookError> + Send + Sync>;

/// A provider made of closures, one per event it handles.
#[derive(Default)]
struct Hook {
    name: &'static str,
    before_tool: Option<BeforeTool>,
    after_tool: Option<AfterTool>,
    before_model: Option<BeforeModel>,
    after_model: Option<AfterModel>,
    before_inv: Option<BeforeInv>,
    after_inv: Option<AfterInv>,
}

#[async_trait]
impl HookProvider for Hook {
    fn name(&self) -> &str {
        self.name
    }
    fn hooks(&self) -> HookSet {
        let mut s = HookSet::NONE;
        if self.before_tool.is_some() {
            s |= HookSet::BEFORE_TOOL_CALL;
        }
        if self.after_tool.is_some() {
            s |= HookSet::AFTER_TOOL_CALL;
        }
        if self.before_model.is_some() {
            s |= HookSet::BEFORE_MODEL_CALL;
        }
        if self.after_model.is_some() {
            s |= HookSet::AFTER_MODEL_CALL;
        }
        if self.before_inv.is_some() {
            s |= HookSet::BEFORE_INVOCATION;
        }
        if self.after_inv.is_some() {
            s |= HookSet::AFTER_INVOCATION;
        }
        s
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.before_tool.as_ref().map_or(Ok(()), |f| f(e))
    }
    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        self.after_tool.as_ref().map_or(Ok(()), |f| f(e))
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.before_model.as_ref().map_or(Ok(()), |f| f(e))
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        self.after_model.as_ref().map_or(Ok(()), |f| f(e))
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.before_inv.as_ref().map_or(Ok(()), |f| f(e))
    }
    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.after_inv.as_ref().map_or(Ok(()), |f| f(e))
    }
}

/// A tool that records the arguments it ran with.
struct Echo {
    spec: ToolSpec,
    seen: Arc<Mutex<Vec<Value>>>,
    fail_times: AtomicUsize,
}

impl Echo {
    fn new() -> Self {
        Self {
            spec: ToolSpec::new("echo", "Echoes its arguments", json!({"type": "object"})),
            seen: Arc::default(),
            fail_times: AtomicUsize::new(0),
        }
    }
    fn failing(n: usize) -> Self {
        let e = Self::new();
        e.fail_times.store(n, Ordering::SeqCst);
        e
    }
}

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        self.seen
            .lock()
            .unwrap()
            .push(Value::Object(input.arguments.clone()));
        if self.fail_times.load(Ordering::SeqCst) > 0 {
            self.fail_times.fetch_sub(1, Ordering::SeqCst);
            return Err(ToolError::new("temporarily unavailable"));
        }
        Ok(format!("echo {}", Value::Object(input.arguments.clone())))
    }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn two_step(calls: Vec<ToolCall>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(calls)),
        Ok(ModelResponse::text("done")),
    ]))
}

fn agent(
    model: Arc<ScriptedModel>,
    tools: Vec<Arc<dyn Tool>>,
    hooks: Vec<Arc<dyn HookProvider>>,
) -> Agent {
    let mut b = Agent::builder("test-agent", model)
        .registry(Arc::new(HookRegistry::from_providers(hooks).unwrap()));
    for t in tools {
        b = b.tool(t);
    }
    b.build().unwrap()
}

fn tool_messages(m: &[Message]) -> Vec<(String, String)> {
    m.iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.content.clone()))
        .collect()
}

#[tokio::test]
async fn cancelled_tool_is_not_executed_and_the_model_sees_the_reason() {
    let echo = Arc::new(Echo::new());
    let rec = Arc::new(RecordingProvider::new("rec"));
    let model = two_step(vec![
        call("c1", "echo", json!({"x": 1})),
        call("c2", "echo", json!({"x": 2})),
    ]);
    let cancel: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "gate",
        before_tool: Some(Box::new(|e| {
            match e.tool_call_id() {
                "c1" => e.cancel("not today"),
                _ => e.cancel(""),
            }
            Ok(())
        })),
        after_tool: Some(Box::new(|e| {
            e.request_retry(); // ignored for cancelled calls
            Ok(())
        })),
        ..Default::default()
    });
    let a = agent(model.clone(), vec![echo.clone()], vec![cancel, rec.clone()]);
    let out = a.run("go").await.unwrap();
    assert!(
        echo.seen.lock().unwrap().is_empty(),
        "a cancelled tool never runs"
    );
    let seen = model.received(&out.state.run_id);
    assert_eq!(
        tool_messages(&seen[1]),
        [
            ("c1".to_owned(), "not today".to_owned()),
            ("c2".to_owned(), "Cancelled by hook".to_owned())
        ]
    );
    // After-tool hooks still ran, and saw the cancel.
    let after: Vec<_> = rec
        .records()
        .into_iter()
        .filter(|r| r.event == HookEvent::AfterToolCall)
        .collect();
    assert_eq!(after.len(), 2);
    assert!(after[0].detail.ends_with("cancelled=not today"));
    let exec = &out.state.tool_executions[0];
    assert_eq!(exec.cancelled.as_deref(), Some("not today"));
    assert_eq!(
        exec.attempts, 1,
        "a retry asked for a cancelled call is ignored"
    );
    assert!(out.retries_exhausted.is_empty());
}

#[tokio::test]
async fn rewritten_arguments_are_what_the_tool_runs_with_and_the_change_is_attributed() {
    let echo = Arc::new(Echo::new());
    let model = two_step(vec![call("c1", "echo", json!({"path": "/etc/passwd"}))]);
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "sandbox",
        before_tool: Some(Box::new(|e| {
            e.arguments_mut()["path"] = json!("/sandbox/passwd");
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model, vec![echo.clone()], vec![hook])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        echo.seen.lock().unwrap()[0],
        json!({"path": "/sandbox/passwd"})
    );
    assert_eq!(
        out.state.tool_executions[0].arguments,
        json!({"path": "/sandbox/passwd"})
    );
    let change = &out.changes[0];
    assert_eq!(change.event, HookEvent::BeforeToolCall);
    assert_eq!(&*change.change.provider, "sandbox");
    assert_eq!(change.change.field, Field::Arguments);
    assert_eq!(change.tool_call_id.as_deref(), Some("c1"));
}

#[tokio::test]
async fn secret_arguments_reach_the_tool_only() {
    let echo = Arc::new(Echo::new());
    let rec = Arc::new(RecordingProvider::new("rec"));
    let model = two_step(vec![call("c1", "echo", json!({"q": "weather"}))]);
    let seen_after = Arc::new(Mutex::new(Vec::new()));
    let sa = seen_after.clone();
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "vault",
        before_tool: Some(Box::new(|e| {
            e.secret_arguments_mut().insert("api_key", "hunter2");
            assert_eq!(
                format!("{e:?}").matches("hunter2").count(),
                0,
                "Debug hides secrets"
            );
            Ok(())
        })),
        after_tool: Some(Box::new(move |e| {
            sa.lock().unwrap().push(e.arguments().clone());
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model, vec![echo.clone()], vec![hook, rec.clone()])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        echo.seen.lock().unwrap()[0],
        json!({"q": "weather", "api_key": "hunter2"})
    );
    assert_eq!(seen_after.lock().unwrap()[0], json!({"q": "weather"}));
    assert_eq!(
        out.state.tool_executions[0].arguments,
        json!({"q": "weather"})
    );
    for r in rec.records() {
        assert!(!format!("{r:?}").contains("hunter2"), "recorded: {r:?}");
    }
    // The tool echoed its input, secret included: the loop scrubbed it from the result.
    // (Compared as JSON: the key order is serde_json's, which a dependency may switch to
    // insertion order.)
    let echoed = out.state.tool_executions[0]
        .result
        .strip_prefix("echo ")
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(echoed).unwrap(),
        json!({"api_key": "***", "q": "weather"})
    );
    assert!(!format!("{:?}", out.state).contains("hunter2"));
}

#[tokio::test]
async fn retry_feedback_is_added_as_an_automated_user_message_before_the_retry() {
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::text("")),
        Ok(ModelResponse::text("a real answer")),
    ]));
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "nonempty",
        after_model: Some(Box::new(|e| {
            if e.response().is_some_and(ModelResponse::is_empty) {
                e.request_retry();
                e.set_retry_feedback("Your reply was empty; answer the question.");
            }
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model.clone(), vec![], vec![hook])
        .run("hi")
        .await
        .unwrap();
    assert_eq!(out.answer, "a real answer");
    let calls = model.received(&out.state.run_id);
    assert_eq!(calls.len(), 2);
    let last = calls[1].last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(last.automated);
    assert_eq!(last.content, "Your reply was empty; answer the question.");
}

#[tokio::test]
async fn a_replaced_response_is_what_the_conversation_keeps() {
    let model = Arc::new(ScriptedModel::new(vec![Ok(ModelResponse::text("raw"))]));
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "polish",
        after_model: Some(Box::new(|e| {
            e.set_response(ModelResponse::text("polished"));
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model, vec![], vec![hook]).run("hi").await.unwrap();
    assert_eq!(out.answer, "polished");
    assert_eq!(out.state.final_answer(), Some("polished"));
}

#[tokio::test]
async fn rewritten_messages_reach_the_model() {
    let model = Arc::new(ScriptedModel::new(vec![Ok(ModelResponse::text("ok"))]));
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "redact",
        before_model: Some(Box::new(|e| {
            for m in e.messages_mut() {
                m.content = m.content.replace("secret", "[X]");
            }
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model.clone(), vec![], vec![hook])
        .run("my secret plan")
        .await
        .unwrap();
    assert_eq!(
        model.received(&out.state.run_id)[0][0].content,
        "my [X] plan"
    );
}

#[tokio::test]
async fn model_retries_are_bounded_and_their_exhaustion_is_an_error() {
    let model = Arc::new(ScriptedModel::new(
        (0..10).map(|_| Ok(ModelResponse::text(""))).collect(),
    ));
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "never-happy",
        after_model: Some(Box::new(|e| {
            e.request_retry();
            Ok(())
        })),
        ..Default::default()
    });
    let a = Agent::builder("a", model.clone())
        .registry(Arc::new(HookRegistry::from_providers(vec![hook]).unwrap()))
        .max_retries(2)
        .build()
        .unwrap();
    let err = a.run("hi").await.unwrap_err();
    match &err.error {
        RunError::RetriesExhausted {
            target: RetryTarget::Model { iteration: 1 },
            attempts: 3,
        } => {}
        other => panic!("unexpected: {other:?}"),
    }
    assert_eq!(model.calls(&err.state.run_id), 3);
}

#[tokio::test]
async fn a_failed_model_call_reaches_after_hooks_which_can_retry_or_recover_it() {
    // Retried once, then recovered.
    let model = Arc::new(ScriptedModel::new(vec![
        Err(ModelError::RateLimited { retry_after: None }),
        Err(ModelError::Server {
            status: Some(503),
            message: "busy".into(),
        }),
    ]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "fallback",
        after_model: Some(Box::new(move |e| {
            let kind = e.error().map(|e| e.kind().as_str()).unwrap_or("none");
            s.lock().unwrap().push(kind);
            match e.attempt() {
                0 => e.request_retry(),
                _ => e.set_response(ModelResponse::text("fallback answer")),
            }
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model, vec![], vec![hook]).run("hi").await.unwrap();
    assert_eq!(out.answer, "fallback answer");
    assert_eq!(*seen.lock().unwrap(), ["rate_limited", "server"]);

    // Not recovered: the run ends with the model error.
    let model = Arc::new(ScriptedModel::new(vec![Err(ModelError::Timeout(
        std::time::Duration::from_secs(2),
    ))]));
    let err = agent(model, vec![], vec![]).run("hi").await.unwrap_err();
    assert!(matches!(
        err.error,
        RunError::Model {
            error: ModelError::Timeout(_),
            attempts: 1
        }
    ));
    assert_eq!(
        err.to_string(),
        "model call timed out after 2.000s (after 1 attempt(s))"
    );
}

#[tokio::test]
async fn tool_retries_rerun_the_call_and_exhaustion_is_reported() {
    let retry_failures: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "retry",
        after_tool: Some(Box::new(|e| {
            if e.error().is_some() {
                e.request_retry();
            }
            Ok(())
        })),
        ..Default::default()
    });
    // Fails twice, then works: 3 attempts, success.
    let echo = Arc::new(Echo::failing(2));
    let model = two_step(vec![call("c1", "echo", json!({}))]);
    let out = agent(model, vec![echo.clone()], vec![retry_failures.clone()])
        .run("go")
        .await
        .unwrap();
    assert_eq!(out.state.tool_executions[0].attempts, 3);
    assert!(out.state.tool_executions[0].succeeded());
    assert!(out.retries_exhausted.is_empty());

    // Always fails: 1 + 3 attempts, then the error result goes to the model and it is reported.
    let echo = Arc::new(Echo::failing(100));
    let model = two_step(vec![call("c1", "echo", json!({}))]);
    let out = agent(model.clone(), vec![echo.clone()], vec![retry_failures])
        .run("go")
        .await
        .unwrap();
    assert_eq!(echo.seen.lock().unwrap().len(), 4);
    assert_eq!(
        out.retries_exhausted,
        [RetryTarget::Tool {
            name: "echo".into(),
            call_id: "c1".into()
        }]
    );
    assert!(
        out.state
            .errors
            .iter()
            .any(|e| e
                .contains("retries exhausted for the tool call 'echo' (c1) after 4 attempt(s)"))
    );
    assert_eq!(
        tool_messages(&model.received(&out.state.run_id)[1])[0].1,
        "Error: temporarily unavailable"
    );
}

#[tokio::test]
async fn a_replaced_tool_result_is_what_the_model_sees() {
    let model = two_step(vec![call("c1", "echo", json!({"a": 1}))]);
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "summarise",
        after_tool: Some(Box::new(|e| {
            let n = e.result().len();
            e.set_result(format!("{n} bytes"));
            Ok(())
        })),
        ..Default::default()
    });
    let out = agent(model.clone(), vec![Arc::new(Echo::new())], vec![hook])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        tool_messages(&model.received(&out.state.run_id)[1])[0].1,
        "12 bytes"
    );
}

#[tokio::test]
async fn a_hook_error_ends_the_run_and_after_invocation_sees_failure() {
    let outcome = Arc::new(Mutex::new(None));
    let o = outcome.clone();
    let failing: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "strict",
        before_tool: Some(Box::new(|_| {
            Err(HookError::new("policy store unreachable"))
        })),
        after_inv: Some(Box::new(move |e| {
            *o.lock().unwrap() = Some((e.success(), e.error().map(|e| e.to_string())));
            Ok(())
        })),
        ..Default::default()
    });
    let echo = Arc::new(Echo::new());
    let model = two_step(vec![call("c1", "echo", json!({}))]);
    let err = agent(model, vec![echo.clone()], vec![failing])
        .run("go")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'strict' failed in on_before_tool_call: policy store unreachable"
    );
    assert!(echo.seen.lock().unwrap().is_empty());
    let (success, msg) = outcome.lock().unwrap().clone().unwrap();
    assert!(!success);
    assert_eq!(
        msg.as_deref(),
        Some("Hook provider 'strict' failed in on_before_tool_call: policy store unreachable")
    );
}

#[tokio::test]
async fn an_after_invocation_error_fails_an_otherwise_successful_run() {
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "audit",
        after_inv: Some(Box::new(|_| Err(HookError::new("audit log full")))),
        ..Default::default()
    });
    let model = Arc::new(ScriptedModel::new(vec![Ok(ModelResponse::text("ok"))]));
    let err = agent(model, vec![], vec![hook])
        .run("go")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'audit' failed in on_after_invocation: audit log full"
    );
    assert_eq!(err.state.final_answer(), Some("ok"));
}

#[tokio::test]
async fn before_invocation_may_replace_the_state() {
    let hook: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "redact-prompt",
        before_inv: Some(Box::new(|e| {
            let s = e.state_mut();
            s.messages[0].content = "[REDACTED]".into();
            s.metadata.insert("checked".into(), json!(true));
            Ok(())
        })),
        ..Default::default()
    });
    let model = Arc::new(ScriptedModel::new(vec![Ok(ModelResponse::text("ok"))]));
    let out = agent(model.clone(), vec![], vec![hook])
        .run("my card 4111")
        .await
        .unwrap();
    assert_eq!(
        model.received(&out.state.run_id)[0][0].content,
        "[REDACTED]"
    );
    assert_eq!(out.state.metadata["checked"], json!(true));
    assert_eq!(out.changes[0].change.field, Field::State);
}

/// A tool that waits until `n` calls are inside it at once.
struct Barrier {
    spec: ToolSpec,
    inside: AtomicUsize,
    n: usize,
}

#[async_trait]
impl Tool for Barrier {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        self.inside.fetch_add(1, Ordering::SeqCst);
        for _ in 0..10_000 {
            if self.inside.load(Ordering::SeqCst) >= self.n {
                return Ok(format!("done {}", input.call_id));
            }
            tokio::task::yield_now().await;
        }
        Err(ToolError::new("calls did not run concurrently"))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn parallel_tool_calls_are_each_hooked_with_their_own_id_and_answered_in_order() {
    let barrier = Arc::new(Barrier {
        spec: ToolSpec::new("wait", "waits", json!({"type": "object"})),
        inside: AtomicUsize::new(0),
        n: 3,
    });
    let rec = Arc::new(RecordingProvider::new("rec").with_hooks(HookSet::TOOL_CALL));
    let model = two_step(vec![
        call("c1", "wait", json!({})),
        call("c2", "wait", json!({})),
        call("c3", "wait", json!({})),
    ]);
    let out = agent(model.clone(), vec![barrier], vec![rec.clone()])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        tool_messages(&model.received(&out.state.run_id)[1]),
        [
            ("c1".into(), "done c1".into()),
            ("c2".into(), "done c2".into()),
            ("c3".into(), "done c3".into())
        ]
    );
    let mut ids: Vec<String> = rec
        .records()
        .iter()
        .filter(|r| r.event == HookEvent::BeforeToolCall)
        .map(|r| r.detail.clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["wait c1", "wait c2", "wait c3"]);
}

#[tokio::test]
async fn bad_model_output_becomes_an_error_result_never_a_panic() {
    let model = two_step(vec![
        call("c1", "no_such_tool", json!({})),
        call("c2", "echo", json!([1, 2])),
        call("c3", "echo", json!("text")),
        call("c4", &"x".repeat(1_000_000), json!({})),
    ]);
    let out = agent(model.clone(), vec![Arc::new(Echo::new())], vec![])
        .run("go")
        .await
        .unwrap();
    let results = tool_messages(&model.received(&out.state.run_id)[1]);
    assert_eq!(
        results[0].1,
        "Error: unknown tool 'no_such_tool'; available tools: echo"
    );
    assert_eq!(
        results[1].1,
        "Error: arguments for tool 'echo' must be a JSON object, got an array"
    );
    assert_eq!(
        results[2].1,
        "Error: arguments for tool 'echo' must be a JSON object, got a string"
    );
    assert!(results[3].1.starts_with("Error: unknown tool 'xxxx"));
    assert!(
        results[3].1.len() < 200,
        "a 1 MB tool name is not echoed back whole"
    );
    assert_eq!(out.state.errors.len(), 4);
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let boom = FnTool::new(ToolSpec::new("boom", "panics", json!({})), |_| {
        panic!("kaboom")
    });
    let model = two_step(vec![call("c1", "boom", json!({}))]);
    let out = agent(model.clone(), vec![Arc::new(boom)], vec![])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        tool_messages(&model.received(&out.state.run_id)[1])[0].1,
        "Error: tool 'boom' panicked: kaboom"
    );
}

#[tokio::test]
async fn the_iteration_limit_ends_a_run_that_keeps_calling_tools() {
    let model = Arc::new(ScriptedModel::new(
        (0..5)
            .map(|i| {
                Ok(ModelResponse::tool_calls(vec![call(
                    &format!("c{i}"),
                    "echo",
                    json!({}),
                )]))
            })
            .collect(),
    ));
    let a = Agent::builder("a", model)
        .tool(Echo::new())
        .max_iterations(2)
        .build()
        .unwrap();
    let err = a.run("go").await.unwrap_err();
    assert!(matches!(
        err.error,
        RunError::IterationLimit { max_iterations: 2 }
    ));
    assert_eq!(err.state.tool_executions.len(), 2);
}

#[tokio::test]
async fn the_lifecycle_runs_in_the_documented_order() {
    let rec = Arc::new(RecordingProvider::new("rec"));
    let model = two_step(vec![call("c1", "echo", json!({}))]);
    let out = agent(model, vec![Arc::new(Echo::new())], vec![rec.clone()])
        .run("go")
        .await
        .unwrap();
    use HookEvent::*;
    assert_eq!(
        rec.events_for(&out.state.run_id),
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
            AfterInvocation
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_share_one_agent_without_crosstalk() {
    let rec = Arc::new(RecordingProvider::new("rec").with_hooks(HookSet::BEFORE_TOOL_CALL));
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![call(
            "c1",
            "echo",
            json!({"n": "placeholder"}),
        )])),
        Ok(ModelResponse::text("done")),
    ]));
    let tag: Arc<dyn HookProvider> = Arc::new(Hook {
        name: "tag",
        before_tool: Some(Box::new(|e| {
            let run = e.run_id().to_string();
            e.arguments_mut()["n"] = json!(run);
            Ok(())
        })),
        ..Default::default()
    });
    let a = Arc::new(agent(
        model,
        vec![Arc::new(Echo::new())],
        vec![tag, rec.clone()],
    ));
    let handles: Vec<_> = (0..64)
        .map(|i| {
            let a = a.clone();
            tokio::spawn(async move { a.run(format!("run {i}")).await.unwrap() })
        })
        .collect();
    for h in handles {
        let out = h.await.unwrap();
        assert_eq!(
            out.state.tool_executions[0].arguments["n"],
            json!(out.state.run_id.to_string())
        );
        assert_eq!(out.state.prompt().unwrap(), out.state.messages[0].content);
    }
    for r in rec.records() {
        assert_eq!(r.payload.unwrap()["n"], json!(r.run_id.to_string()));
    }
}

#[test]
fn building_rejects_duplicate_tools_and_zero_iterations() {
    let m = ScriptedModel::new(vec![]);
    let err = Agent::builder("a", m)
        .tool(Echo::new())
        .tool(Echo::new())
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool 'echo' is registered twice; give each tool a unique name"
    );
    let err = Agent::builder("a", ScriptedModel::new(vec![]))
        .max_iterations(0)
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "max_iterations must be at least 1");
}

/// A tool that never finishes and says when its future is dropped.
struct Hang {
    spec: ToolSpec,
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Tool for Hang {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: ToolInput<'_>) -> Result<String, ToolError> {
        let _flag = DropFlag(self.dropped.clone());
        std::future::pending::<()>().await;
        Ok(String::new())
    }
}

#[tokio::test]
async fn dropping_the_run_future_stops_the_run_cleanly() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let hang = Hang {
        spec: ToolSpec::new("hang", "never returns", json!({})),
        dropped: dropped.clone(),
    };
    let model = two_step(vec![call("c1", "hang", json!({}))]);
    let a = agent(model.clone(), vec![Arc::new(hang)], vec![]);
    let r = tokio::time::timeout(std::time::Duration::from_millis(50), a.run("go")).await;
    assert!(r.is_err(), "the run cannot finish: its tool hangs");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the tool's future was dropped with the run"
    );
}

#[tokio::test]
async fn arguments_nested_100_000_levels_deep_are_refused_without_overflowing_the_stack() {
    // Built without recursion; handed to the loop by the model.
    let mut deep = json!("leaf");
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    // (`json!` would serialise `deep` recursively: build the object by hand.)
    let mut map = serde_json::Map::new();
    map.insert("payload".into(), deep);
    let deep_args = Value::Object(map);
    struct DeepModel(Mutex<Option<Value>>);
    #[async_trait]
    impl hooks_core::agent::Model for DeepModel {
        fn name(&self) -> &str {
            "deep"
        }
        async fn complete(
            &self,
            _: hooks_core::agent::ModelRequest<'_>,
        ) -> Result<ModelResponse, ModelError> {
            Ok(match self.0.lock().unwrap().take() {
                Some(args) => ModelResponse::tool_calls(vec![ToolCall::new("c1", "echo", args)]),
                None => ModelResponse::text("done"),
            })
        }
    }
    let echo = Arc::new(Echo::new());
    let rec = Arc::new(RecordingProvider::new("rec"));
    let a = Agent::builder("deep", DeepModel(Mutex::new(Some(deep_args))))
        .tool(echo.clone())
        .registry(Arc::new(
            HookRegistry::from_providers(vec![rec.clone() as Arc<dyn HookProvider>]).unwrap(),
        ))
        .build()
        .unwrap();
    let out = a.run("go").await.unwrap();
    assert!(echo.seen.lock().unwrap().is_empty());
    let exec = &out.state.tool_executions[0];
    assert_eq!(
        exec.result,
        "Error: arguments for tool 'echo' were nested deeper than 128 levels and were refused; send flatter arguments"
    );
    assert!(
        serde_json::to_string(&out.state).is_ok(),
        "the state serialises"
    );
    assert!(hooks_core::json::nests_deeper_than(&json!([[[1]]]), 2));
    assert!(!hooks_core::json::nests_deeper_than(&json!([[[1]]]), 3));
}

#[tokio::test]
async fn invalid_utf8_from_a_tool_becomes_a_clear_error_result() {
    let raw = FnTool::new(ToolSpec::new("raw", "returns bytes", json!({})), |_| {
        hooks_core::agent::tool_output_from_bytes(vec![b'o', b'k', 0xC3, 0x28])
    });
    let model = two_step(vec![call("c1", "raw", json!({}))]);
    let out = agent(model, vec![Arc::new(raw)], vec![])
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        out.state.tool_executions[0].result,
        "Error: tool output is not valid UTF-8 (first invalid byte at byte 2 of 4); return text or encode binary output (e.g. base64)"
    );
}
