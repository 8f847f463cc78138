//! The guard before each model call: text that enters the conversation without an event of
//! its own — a retry's feedback written by a hook, a message a hook adds to the request — is
//! judged as the prompt is, before the model or any observer sees it; what the guard judged
//! once in a run is not judged (or reported) again.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use hooks_core::agent::{Agent, FnTool, RunFailure, RunOutput};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    AfterModelCallEvent, BeforeModelCallEvent, HookError, HookEvent, HookPriority, HookProvider,
    HookRegistry, HookSet, Message, ModelError, ModelResponse, RunError, ToolCall, ToolSpec,
    async_trait,
};
use hooks_guardrails::{
    Entity, GuardrailAction, GuardrailConfig, GuardrailsHook, ViolationLocation,
};
use serde_json::json;

const EMAIL: &str = "feedback.marker@example.com";
const CARD: &str = "4111 1111 1111 1111";
const SSN: &str = "219-09-9999";

/// Adds a system message quoting `added` to the first request (at a priority before the
/// guard's), and turns down the first reply with feedback quoting `feedback`.
struct Writer {
    added: Option<String>,
    feedback: Option<String>,
}

#[async_trait]
impl HookProvider for Writer {
    fn name(&self) -> &str {
        "writer"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL | HookSet::AFTER_MODEL_CALL
    }
    fn priority_for(&self, event: HookEvent) -> HookPriority {
        if event.is_after() {
            HookPriority::DEFAULT
        } else {
            HookPriority::SECURITY_MIN
        }
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        if let Some(added) = &self.added
            && e.attempt() == 0
            && e.iteration() == 1
        {
            e.messages_mut()
                .push(Message::system(format!("Context: {added}")));
        }
        Ok(())
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if let Some(feedback) = &self.feedback
            && e.attempt() == 0
            && e.iteration() == 1
        {
            e.request_retry();
            e.set_retry_feedback(format!("Try again; the customer wrote {feedback}"));
        }
        Ok(())
    }
}

/// What an observer sees of each request.
#[derive(Default)]
struct Observer {
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl HookProvider for Observer {
    fn name(&self) -> &str {
        "observer"
    }
    fn priority(&self) -> HookPriority {
        HookPriority::OBSERVABILITY_DEFAULT
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL | HookSet::AFTER_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{:?}", e.messages()));
        Ok(())
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{:?}", e.messages()));
        Ok(())
    }
}

struct Setup {
    model: Arc<ScriptedModel>,
    guard: Arc<GuardrailsHook>,
    observer: Arc<Observer>,
    agent: Agent,
}

/// An agent over `providers` (in this order) with a `lookup` tool that answers `tool_result`.
fn agent(
    providers: Vec<Arc<dyn HookProvider>>,
    script: Vec<Result<ModelResponse, ModelError>>,
    tool_result: &'static str,
) -> (Arc<ScriptedModel>, Agent) {
    let model = Arc::new(ScriptedModel::new(script));
    let mut registry = HookRegistry::new();
    for p in providers {
        registry.add(p).unwrap();
    }
    let agent = Agent::builder("guarded", model.clone())
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("lookup", "a tool", json!({})),
            move |_| Ok(tool_result.to_owned()),
        ))
        .build()
        .unwrap();
    (model, agent)
}

fn setup(
    config: GuardrailConfig,
    writer: Writer,
    script: Vec<Result<ModelResponse, ModelError>>,
    tool_result: &'static str,
) -> Setup {
    let guard = Arc::new(GuardrailsHook::new(config).unwrap());
    let observer = Arc::new(Observer::default());
    let (model, agent) = agent(
        vec![guard.clone(), Arc::new(writer), observer.clone()],
        script,
        tool_result,
    );
    Setup {
        model,
        guard,
        observer,
        agent,
    }
}

fn redact_all() -> GuardrailConfig {
    let mut c = GuardrailConfig::default();
    for e in Entity::ALL {
        c = c.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    c
}

fn run(s: &Setup, prompt: &str) -> Result<RunOutput, RunFailure> {
    go(&s.agent, prompt)
}

fn go(agent: &Agent, prompt: &str) -> Result<RunOutput, RunFailure> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(agent.run(prompt))
}

fn text(t: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse::text(t))
}

/// Everything the model received in the run, as text.
fn requests(s: &Setup, run: &hooks_core::RunId) -> String {
    format!("{:?}", s.model.received(run))
}

#[test]
fn retry_feedback_and_a_message_a_hook_adds_are_redacted_before_the_model_sees_them() {
    let s = setup(
        redact_all(),
        Writer {
            added: Some(format!("card {CARD}")),
            feedback: Some(EMAIL.to_owned()),
        },
        vec![text("first"), text("second")],
        "x",
    );
    let out = run(&s, "hello").unwrap();
    assert_eq!(out.answer, "second");
    let received = s.model.received(&out.state.run_id);
    assert_eq!(received.len(), 2);
    let all = requests(&s, &out.state.run_id);
    let observed = s.observer.seen.lock().unwrap().join("\n");
    let state = format!("{:?}", out.state);
    for (place, text) in [("model", &all), ("observer", &observed), ("state", &state)] {
        assert!(!text.contains(EMAIL), "{place} saw the feedback's e-mail");
        assert!(!text.contains(CARD), "{place} saw the added card");
    }
    // Both reached the model, redacted: the added message on the first call, the feedback on
    // the retry.
    assert!(
        received[0]
            .iter()
            .any(|m| m.content == "Context: card [REDACTED_CREDIT_CARD]")
    );
    assert!(
        received[1]
            .iter()
            .any(|m| m.content == "Try again; the customer wrote [REDACTED_EMAIL]")
    );
    let rules: Vec<_> = s
        .guard
        .violations_for(&out.state.run_id)
        .into_iter()
        .map(|v| (v.rule, v.location))
        .collect();
    assert_eq!(
        rules,
        [
            ("pii_credit_card".to_owned(), ViolationLocation::Input),
            ("pii_email".to_owned(), ViolationLocation::Input),
        ]
    );
}

#[test]
fn a_block_in_retry_feedback_refuses_the_call_and_the_value_stays_out_of_the_failure() {
    // The default config blocks PII.
    let s = setup(
        GuardrailConfig::default(),
        Writer {
            added: None,
            feedback: Some(format!("ssn {SSN}")),
        },
        vec![text("first"), text("never sent")],
        "x",
    );
    let failure = run(&s, "hello").unwrap_err();
    assert!(
        matches!(failure.error, RunError::Hook(_)),
        "{:?}",
        failure.error
    );
    let message = failure.error.to_string();
    assert!(message.contains("Input blocked by guardrails"), "{message}");
    let everything = format!(
        "{message} {:?} {}",
        failure.state,
        s.observer.seen.lock().unwrap().join("\n")
    );
    assert!(!everything.contains(SSN), "{everything}");
    // The model was called once: the retry never went out.
    assert_eq!(s.model.received(&failure.state.run_id).len(), 1);
    assert!(!requests(&s, &failure.state.run_id).contains(SSN));
}

#[test]
fn a_large_conversation_is_judged_off_the_executor_and_still_redacted() {
    // Over OFFLOAD_BYTES: the model call's check runs on a blocking thread.
    let filler = "lorem ipsum ".repeat(8_000);
    let s = setup(
        redact_all(),
        Writer {
            added: None,
            feedback: Some(EMAIL.to_owned()),
        },
        vec![text("first"), text("second")],
        "x",
    );
    let out = run(&s, &filler).unwrap();
    let all = requests(&s, &out.state.run_id);
    assert!(!all.contains(EMAIL));
    assert!(all.contains("[REDACTED_EMAIL]"));
    assert!(!format!("{:?}", out.state).contains(EMAIL));
}

#[test]
fn what_the_guard_judged_once_in_a_run_is_not_judged_or_reported_again() {
    // WARN everywhere: the values stay, and each is reported where it entered, once — not
    // again at each model call that carries it.
    let mut config = GuardrailConfig::default();
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Warn);
    }
    let s = setup(
        config,
        Writer {
            added: None,
            feedback: None,
        },
        vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "lookup",
                json!({"q": "a"}),
            )])),
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c2",
                "lookup",
                json!({"q": "b"}),
            )])),
            text(&format!("reply with {SSN}")),
        ],
        "owner jane.doe@example.com",
    );
    let out = run(&s, &format!("card {CARD}")).unwrap();
    assert_eq!(s.model.received(&out.state.run_id).len(), 3);
    let mut rules: Vec<_> = s
        .guard
        .violations_for(&out.state.run_id)
        .into_iter()
        .map(|v| (v.rule, v.location))
        .collect();
    rules.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(
        rules,
        [
            ("pii_credit_card".to_owned(), ViolationLocation::Input),
            ("pii_email".to_owned(), ViolationLocation::ToolResult),
            ("pii_email".to_owned(), ViolationLocation::ToolResult),
            ("pii_ssn".to_owned(), ViolationLocation::ModelOutput),
        ]
    );
}

/// Refuses every retry's request (a budget hook in the security band, before the guard).
struct RefuseRetries;

#[async_trait]
impl HookProvider for RefuseRetries {
    fn name(&self) -> &str {
        "budget"
    }
    fn priority(&self) -> HookPriority {
        HookPriority::SECURITY_MIN
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        if e.attempt() > 0 {
            return Err(HookError::new("budget exhausted"));
        }
        Ok(())
    }
}

#[test]
fn feedback_for_a_request_refused_before_the_guard_judged_it_never_joins_the_conversation() {
    let (model, agent) = agent(
        vec![
            Arc::new(RefuseRetries),
            Arc::new(GuardrailsHook::new(redact_all()).unwrap()),
            Arc::new(Writer {
                added: None,
                feedback: Some(EMAIL.to_owned()),
            }),
        ],
        vec![text("first"), text("second")],
        "x",
    );
    let failure = go(&agent, "hello").unwrap_err();
    assert!(failure.error.to_string().contains("budget exhausted"));
    let state = format!("{:?}", failure.state);
    assert!(!state.contains(EMAIL), "{state}");
    assert_eq!(model.received(&failure.state.run_id).len(), 1);
}

/// Renames every tool call of a reply after the guard checked it.
struct RenameIds;

#[async_trait]
impl HookProvider for RenameIds {
    fn name(&self) -> &str {
        "renamer"
    }
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        e.edit_response(|r| {
            for c in &mut r.message.tool_calls {
                c.id = format!("call-for-{EMAIL}");
            }
            !r.message.tool_calls.is_empty()
        });
        Ok(())
    }
}

#[test]
fn a_tool_message_is_remembered_only_when_its_id_holds_nothing_to_judge() {
    let (model, agent) = agent(
        vec![
            Arc::new(GuardrailsHook::new(redact_all()).unwrap()),
            Arc::new(RenameIds),
        ],
        vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "lookup",
                json!({}),
            )])),
            text("done"),
        ],
        "ok",
    );
    let out = go(&agent, "hello").unwrap();
    let received = model.received(&out.state.run_id);
    let second = format!("{:?}", received[1]);
    assert!(!second.contains(EMAIL), "{second}");
    assert!(second.contains("[REDACTED_EMAIL]"), "{second}");
}

/// Puts an earlier exchange into the first request, ahead of the guard: a call whose
/// arguments hold an e-mail, and its result.
struct InjectHistory;

#[async_trait]
impl HookProvider for InjectHistory {
    fn name(&self) -> &str {
        "injector"
    }
    fn priority(&self) -> HookPriority {
        HookPriority::SECURITY_MIN
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        e.messages_mut()
            .push(Message::assistant("").with_tool_calls(vec![ToolCall::new(
                "h1",
                "lookup",
                json!({ "to": EMAIL }),
            )]));
        e.messages_mut().push(Message::tool("h1", "ok"));
        Ok(())
    }
}

#[test]
fn an_ask_in_history_a_hook_adds_is_a_block_as_it_would_be_at_the_start() {
    let ask = redact_all().with_action("pii_email", GuardrailAction::Ask);
    let (model, agent) = agent(
        vec![
            Arc::new(GuardrailsHook::new(ask).unwrap()),
            Arc::new(InjectHistory),
        ],
        vec![text("done")],
        "x",
    );
    let failure = go(&agent, "hello").unwrap_err();
    assert!(
        failure
            .error
            .to_string()
            .contains("Input blocked by guardrails"),
        "{}",
        failure.error
    );
    assert!(model.received(&failure.state.run_id).is_empty());
    assert!(!format!("{:?} {}", failure.state, failure.error).contains(EMAIL));
}
