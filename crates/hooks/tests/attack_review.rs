//! Paths a hostile review found open through the guard, whole stack: a PII marker sent
//! through each must reach no model request, state record, run error, observer, log line,
//! span or judge prompt.

#![allow(clippy::unwrap_used, missing_docs)] // tests fail loudly on the first unexpected error

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks::agent::{Agent, FnTool, ToolError};
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::logging::LoggingHook;
use hooks::otel::{OtlpSetup, TelemetryGuard, TelemetryHook};
use hooks::retry::{ModelRetryHook, ToolRetryHook};
use hooks::steering::{JudgeError, JudgeModel, JudgeReply, JudgeRequest, SteeringHook};
use hooks::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, AgentState,
    BeforeInvocationEvent, BeforeModelCallEvent, BeforeToolCallEvent, HookError, HookPriority,
    HookProvider, HookRegistry, HookSet, Message, ModelError, ModelResponse, RunId, ToolCall,
    ToolSpec, async_trait,
};
use hooks_core::test_util::ScriptedModel;
use hooks_otel::testing::OtlpReceiver;
use serde_json::{Value, json};

const EMAIL: &str = "leak.marker@example.com";
/// The first body line of a private key the `vault` tool returns.
const KEY_MARKER: &str = "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8w";
/// Six phone numbers glued together (`phones` tool): every one shares this run of digits.
const GLUED_MARKER: &str = "201567049";

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buf {
    type Writer = Buf;
    fn make_writer(&'a self) -> Buf {
        self.clone()
    }
}

/// Debug-prints every event it sees.
struct Spy {
    name: String,
    prio: HookPriority,
    sink: Arc<Mutex<Vec<String>>>,
}
impl Spy {
    fn new(name: &str, prio: HookPriority) -> (Self, Arc<Mutex<Vec<String>>>) {
        let sink = Arc::default();
        (
            Self {
                name: name.into(),
                prio,
                sink: Arc::clone(&sink),
            },
            sink,
        )
    }
    fn push(&self, s: String) {
        self.sink.lock().unwrap().push(s);
    }
}
#[async_trait]
impl HookProvider for Spy {
    fn name(&self) -> &str {
        &self.name
    }
    fn priority(&self) -> HookPriority {
        self.prio
    }
    fn hooks(&self) -> HookSet {
        HookSet::INVOCATION | HookSet::MODEL_CALL | HookSet::TOOL_CALL
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        self.push(format!("{e:?}"));
        Ok(())
    }
}

#[derive(Default)]
struct Judge(Mutex<Vec<String>>);
#[async_trait]
impl JudgeModel for Judge {
    fn name(&self) -> &str {
        "judge"
    }
    async fn judge(&self, r: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        self.0.lock().unwrap().push(r.prompt.clone());
        Ok(JudgeReply::new("PROCEED", None))
    }
}

struct Stack {
    registry: HookRegistry,
    spy_default: Arc<Mutex<Vec<String>>>,
    telemetry: Arc<TelemetryHook>,
    judge: Arc<Judge>,
    /// A real OTLP/HTTP collector on loopback: every span and metric the run exports.
    receiver: OtlpReceiver,
    otel: TelemetryGuard,
}

fn stack(config: GuardrailConfig, extra: Vec<Arc<dyn HookProvider>>) -> Stack {
    let receiver = OtlpReceiver::start().unwrap();
    let tg = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let telemetry = Arc::new(tg.hook().with_content_capture(true).build());
    let judge = Arc::new(Judge::default());
    let mut r = HookRegistry::new();
    r.add(GuardrailsHook::new(config).unwrap()).unwrap();
    let (spy_default, spy_d) = Spy::new("spy_default", HookPriority::DEFAULT);
    r.add(spy_default).unwrap();
    r.add(LoggingHook::new()).unwrap();
    r.add(Arc::clone(&telemetry)).unwrap();
    r.add(SteeringHook::builder(Arc::clone(&judge)).build())
        .unwrap();
    for p in extra {
        r.add(p).unwrap();
    }
    Stack {
        registry: r,
        spy_default: spy_d,
        telemetry,
        judge,
        receiver,
        otel: tg,
    }
}

fn tools() -> Vec<FnTool> {
    vec![
        FnTool::new(ToolSpec::new("echo", "echo", json!({})), |a| {
            Ok(Value::Object(a.clone()).to_string())
        }),
        FnTool::new(ToolSpec::new("crm", "crm", json!({})), |_| {
            Ok(format!("customer mail: {EMAIL}"))
        }),
        FnTool::new(ToolSpec::new("vault", "vault", json!({})), |_| {
            Ok(format!(
                "key: -----BEGIN PRIVATE KEY-----\n{KEY_MARKER}ggE7AgEAAkEAq7BFUpkGp3+LQmlQ\nYxPb3a7L2xL9Vd3PGqvY2gAqK0tDwKbR+qnm1Oq5oA8H0a2n\n-----END PRIVATE KEY-----"
            ))
        }),
        FnTool::new(ToolSpec::new("phones", "phones", json!({})), |_| {
            Ok((1..=6)
                .map(|i| format!("+1{GLUED_MARKER}{i}"))
                .collect::<String>())
        }),
        FnTool::new(ToolSpec::new("lookup", "lookup", json!({})), |a| {
            Err(ToolError::new(format!(
                "no account for {}",
                a.get("who").and_then(Value::as_str).unwrap_or(EMAIL)
            )))
        }),
    ]
}

/// Runs one scenario and asserts `marker` reached no place.
fn scenario(
    title: &str,
    marker: &str,
    config: GuardrailConfig,
    extra: Vec<Arc<dyn HookProvider>>,
    script: Vec<Result<ModelResponse, ModelError>>,
    state: Option<AgentState>,
) -> Vec<&'static str> {
    let leaks = places_reached(marker, config, extra, script, state);
    assert!(leaks.is_empty(), "{title}: {marker} reached {leaks:?}");
    leaks
}

/// Runs one scenario and reports every place `marker` reached.
fn places_reached(
    marker: &str,
    config: GuardrailConfig,
    extra: Vec<Arc<dyn HookProvider>>,
    script: Vec<Result<ModelResponse, ModelError>>,
    state: Option<AgentState>,
) -> Vec<&'static str> {
    let buf = Buf::default();
    let sub = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let _sg = hooks_core::test_util::set_thread_subscriber(sub);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = stack(config, extra);
    let model = Arc::new(ScriptedModel::new(script));
    let mut b = Agent::builder("a", Arc::clone(&model)).registry(Arc::new(s.registry));
    for t in tools() {
        b = b.tool(t);
    }
    let agent = b.build().unwrap();
    let state = state.unwrap_or_else(|| agent.new_state("please help"));
    let run_id = state.run_id.clone();
    let res = rt.block_on(agent.run_state(state));
    let (st, failure) = match &res {
        Ok(o) => (o.state.clone(), String::new()),
        Err(f) => ((*f.state).clone(), f.to_string()),
    };
    let has = |s: &str| s.contains(marker);
    let mut leaks = Vec::new();
    let recv = model.received(&run_id);
    if has(&format!("{recv:?}")) {
        leaks.push("model");
    }
    if has(&format!("{:?}", st.messages)) {
        leaks.push("state.messages");
    }
    if has(&format!("{:?}", st.tool_executions)) {
        leaks.push("state.tool_executions");
    }
    if has(&format!("{:?}", st.errors)) {
        leaks.push("state.errors");
    }
    if has(&failure) {
        leaks.push("RunFailure");
    }
    if has(&format!("{:?}", s.spy_default.lock().unwrap())) {
        leaks.push("spy@300");
    }
    if has(&String::from_utf8_lossy(&buf.0.lock().unwrap())) {
        leaks.push("log lines");
    }
    assert_eq!(s.telemetry.open_runs(), 0, "telemetry left a run open");
    s.otel.shutdown().unwrap();
    assert!(
        !s.receiver
            .wait_for_spans(1, Duration::from_secs(10))
            .is_empty(),
        "the run exported no span: this check could not fail"
    );
    let exported = String::from_utf8_lossy(&s.receiver.raw_bodies().concat()).into_owned();
    if has(&exported) {
        leaks.push("OTLP export (spans, metrics)");
    }
    if has(&format!("{:?}", s.judge.0.lock().unwrap())) {
        leaks.push("steering judge (an LLM)");
    }
    leaks
}

fn redact_email() -> GuardrailConfig {
    GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact)
}

fn calls(c: Vec<ToolCall>) -> Vec<Result<ModelResponse, ModelError>> {
    vec![
        Ok(ModelResponse::tool_calls(c)),
        Ok(ModelResponse::text("done")),
    ]
}

#[test]
fn pii_in_a_json_object_key_is_judged_and_renamed() {
    for (label, cfg) in [
        ("REDACT", redact_email()),
        ("BLOCK", GuardrailConfig::default()),
    ] {
        let leaks = scenario(
            &format!("email as argument key, {label}"),
            EMAIL,
            cfg,
            vec![],
            calls(vec![ToolCall::new("c1", "echo", json!({ EMAIL: "hi" }))]),
            None,
        );
        assert!(leaks.is_empty());
    }
}

#[test]
fn pii_as_a_json_number_is_judged_and_replaced() {
    let leaks = scenario(
        "credit card as a JSON number, BLOCK",
        "4111111111111111",
        GuardrailConfig::default(),
        vec![],
        calls(vec![ToolCall::new(
            "c1",
            "echo",
            json!({"card_number": 4111111111111111u64}),
        )]),
        None,
    );
    assert!(leaks.is_empty());
    // the same as a string is caught too
    let control = scenario(
        "credit card as a JSON string, BLOCK (control)",
        "4111111111111111",
        GuardrailConfig::default(),
        vec![],
        calls(vec![ToolCall::new(
            "c1",
            "echo",
            json!({"card_number": "4111111111111111"}),
        )]),
        None,
    );
    assert!(control.is_empty());
}

#[test]
fn pii_in_a_tool_error_is_redacted_everywhere() {
    for (label, cfg) in [
        ("REDACT", redact_email()),
        ("BLOCK", GuardrailConfig::default()),
    ] {
        let leaks = scenario(
            &format!("email in tool error text, {label}"),
            EMAIL,
            cfg,
            vec![],
            calls(vec![ToolCall::new("c1", "lookup", json!({}))]),
            None,
        );
        assert!(leaks.is_empty());
    }
}

#[test]
fn pii_in_a_model_error_is_redacted() {
    let leaks = scenario(
        "email in a model error, REDACT",
        EMAIL,
        redact_email(),
        vec![],
        vec![Err(ModelError::Other(format!(
            "content filter: refused to process {EMAIL}"
        )))],
        None,
    );
    assert!(leaks.is_empty());
}

#[test]
fn pii_in_prior_assistant_or_tool_history_is_judged() {
    let state = AgentState::new("a")
        .with_message(Message::assistant(format!(
            "I have noted your mail {EMAIL}"
        )))
        .with_message(Message::tool("old", format!("crm: {EMAIL}")))
        .with_message(Message::user("and now?"));
    let leaks = scenario(
        "email in prior assistant/tool history, BLOCK",
        EMAIL,
        GuardrailConfig::default(),
        vec![],
        vec![Ok(ModelResponse::text("ok"))],
        Some(state),
    );
    assert!(leaks.is_empty());
}

#[test]
fn cached_answers_and_tool_call_names_are_judged() {
    struct Cache;
    #[async_trait]
    impl HookProvider for Cache {
        fn priority(&self) -> HookPriority {
            HookPriority::BUSINESS_DEFAULT
        }
        fn hooks(&self) -> HookSet {
            HookSet::BEFORE_MODEL_CALL
        }
        async fn on_before_model_call(
            &self,
            e: &mut BeforeModelCallEvent<'_>,
        ) -> Result<(), HookError> {
            if e.iteration() == 1 {
                e.respond_with(ModelResponse::tool_calls(vec![ToolCall::new(
                    "c1",
                    "echo",
                    json!({"to": [[EMAIL]]}),
                )]));
            } else {
                e.respond_with(ModelResponse::text(format!("cached: {EMAIL}")));
            }
            Ok(())
        }
    }
    let leaks = scenario(
        "respond_with cache answers carrying an email, REDACT",
        EMAIL,
        redact_email(),
        vec![Arc::new(Cache)],
        vec![],
        None,
    );
    assert!(leaks.is_empty());
    let leaks = scenario(
        "email as a tool NAME in a model reply, BLOCK",
        EMAIL,
        GuardrailConfig::default(),
        vec![],
        calls(vec![ToolCall::new("c1", EMAIL, json!({}))]),
        None,
    );
    assert!(leaks.is_empty());
}

#[test]
fn run_local_state_is_gone_after_refused_abandoned_and_renamed_runs() {
    struct Renamer;
    #[async_trait]
    impl HookProvider for Renamer {
        fn hooks(&self) -> HookSet {
            HookSet::BEFORE_INVOCATION
        }
        async fn on_before_invocation(
            &self,
            e: &mut BeforeInvocationEvent,
        ) -> Result<(), HookError> {
            if e.state().metadata.contains_key("rename") {
                e.state_mut().run_id = RunId::new("renamed");
            }
            Ok(())
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let retry = Arc::new(
        ModelRetryHook::builder()
            .with_initial_delay(Duration::from_millis(1))
            .with_max_delay(Duration::from_millis(1))
            .build()
            .unwrap(),
    );
    let tretry = Arc::new(
        ToolRetryHook::builder(|_: &str, _: &str| false)
            .build()
            .unwrap(),
    );
    let s = stack(
        GuardrailConfig::default(),
        vec![Arc::new(Renamer), retry.clone(), tretry.clone()],
    );
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::text("")),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "echo",
            json!({}),
        )])),
        Ok(ModelResponse::text("done")),
    ]));
    let mut b = Agent::builder("a", Arc::clone(&model)).registry(Arc::new(s.registry));
    for t in tools() {
        b = b.tool(t);
    }
    let agent = b.build().unwrap();
    rt.block_on(async {
        agent.run("normal").await.unwrap();
        // refused by the guard (BLOCK on e-mail in the prompt)
        assert!(agent.run(format!("mail {EMAIL}")).await.is_err());
        // abandoned mid-run
        struct Slow;
        let _ = Slow;
        let st = agent.new_state("x");
        let _ = tokio::time::timeout(Duration::from_micros(1), agent.run_state(st)).await;
        // renamed by a later before-invocation hook
        let st = agent.new_state("y");
        let mut st = st;
        st.metadata.insert("rename".into(), json!(true));
        let _ = agent.run_state(st).await;
    });
    assert_eq!(s.telemetry.open_runs(), 0, "a run left its span tree open");
    assert_eq!(retry.calls_in_flight(), 0);
}

#[test]
fn pii_in_tool_call_ids_of_replies_and_history_is_judged() {
    for cfg in [redact_email(), GuardrailConfig::default()] {
        let leaks = scenario(
            "email in a tool-call id of a reply",
            EMAIL,
            cfg,
            vec![],
            calls(vec![ToolCall::new(
                format!("call-{EMAIL}"),
                "echo",
                json!({"q": "x"}),
            )]),
            None,
        );
        assert!(leaks.is_empty());
    }
    let state = AgentState::new("a")
        .with_message(Message::user("earlier"))
        .with_message(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            EMAIL,
            "echo",
            json!({}),
        )]))
        .with_message(Message::tool(EMAIL, "ok"))
        .with_message(Message::user("and now?"));
    let leaks = scenario(
        "email as a tool-call id in the history",
        EMAIL,
        redact_email(),
        vec![],
        vec![Ok(ModelResponse::text("ok"))],
        Some(state),
    );
    assert!(leaks.is_empty());
}

#[test]
fn an_entity_uncovered_by_a_redaction_is_blocked_too() {
    // The card has no word boundary before the long local part; once the address is
    // redacted it stands alone, and its BLOCK must hold.
    let prompt = format!("note 4111111111111111{}@example.com end", "a".repeat(64));
    let leaks = scenario(
        "a card uncovered by redacting its neighbour",
        "4111111111111111",
        redact_email(),
        vec![],
        vec![Ok(ModelResponse::text("ok"))],
        Some(AgentState::new("a").with_message(Message::user(prompt))),
    );
    assert!(leaks.is_empty());
}

#[test]
fn an_over_long_message_is_refused_without_keeping_its_tool_calls() {
    let m = Message::user("x".repeat(100_001)).with_tool_calls(vec![ToolCall::new(
        "c1",
        "echo",
        json!({"to": EMAIL}),
    )]);
    let leaks = scenario(
        "an over-long message carrying tool calls",
        EMAIL,
        GuardrailConfig::default(),
        vec![],
        vec![Ok(ModelResponse::text("ok"))],
        Some(AgentState::new("a").with_message(m)),
    );
    assert!(leaks.is_empty());
}

#[test]
fn a_replys_model_name_and_finish_reason_and_the_states_metadata_are_judged() {
    let reply = ModelResponse::text("ok")
        .with_finish_reason(hooks::FinishReason::Other(EMAIL.into()))
        .with_model(EMAIL);
    let leaks = scenario(
        "email in a reply's model name and finish reason",
        EMAIL,
        redact_email(),
        vec![],
        vec![Ok(reply)],
        None,
    );
    assert!(leaks.is_empty());
    let state = AgentState::new("a")
        .with_message(Message::user("hi"))
        .with_metadata("customer", EMAIL);
    let leaks = scenario(
        "email in the starting state's metadata",
        EMAIL,
        redact_email(),
        vec![],
        vec![Ok(ModelResponse::text("ok"))],
        Some(state),
    );
    assert!(leaks.is_empty());
}

#[test]
fn the_check_sees_a_marker_that_nothing_redacts_in_every_place() {
    // The control: a value no rule matches travels everywhere, the OTLP export included, so
    // the absence checks of the other scenarios can fail.
    let leaks = places_reached(
        "plain-control-marker-7f3e",
        GuardrailConfig::default(),
        vec![],
        calls(vec![ToolCall::new(
            "c1",
            "echo",
            json!({"note": "plain-control-marker-7f3e"}),
        )]),
        None,
    );
    // (`LoggingHook::new()` logs no arguments or results; no_leaks.rs turns them on.)
    for place in [
        "model",
        "state.messages",
        "OTLP export (spans, metrics)",
        "steering judge (an LLM)",
    ] {
        assert!(leaks.contains(&place), "{place} missing from {leaks:?}");
    }
}

#[test]
fn a_private_key_cut_by_the_result_limit_is_redacted_before_the_cut() {
    let cfg = GuardrailConfig::default()
        .with_action("pii_secret", GuardrailAction::Redact)
        .with_max_tool_result_length(60);
    scenario(
        "private key longer than the result limit, REDACT",
        KEY_MARKER,
        cfg,
        vec![],
        calls(vec![ToolCall::new("c1", "vault", json!({}))]),
        None,
    );
}

#[test]
fn glued_phone_numbers_leave_no_number_behind() {
    let cfg = GuardrailConfig::default().with_action("pii_phone", GuardrailAction::Redact);
    scenario(
        "six phone numbers glued together, REDACT",
        GLUED_MARKER,
        cfg,
        vec![],
        calls(vec![ToolCall::new("c1", "phones", json!({}))]),
        None,
    );
}

#[test]
fn a_blocked_call_sharing_its_id_with_a_clean_one_leaks_through_neither() {
    scenario(
        "duplicate tool-call ids, one carrying PII, BLOCK",
        EMAIL,
        GuardrailConfig::default(),
        vec![],
        calls(vec![
            ToolCall::new("dup", "echo", json!({ "who": EMAIL })),
            ToolCall::new("dup", "echo", json!({ "who": "nobody" })),
        ]),
        None,
    );
}

/// Adds secret arguments (nested, and a numeric PIN) to every tool call.
struct AddSecrets;
#[async_trait]
impl HookProvider for AddSecrets {
    fn name(&self) -> &str {
        "add_secrets"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.secret_arguments_mut()
            .insert("auth", json!({"token": "tok-secret-marker-51c9"}));
        e.secret_arguments_mut().insert("pin", json!(90817263));
        Ok(())
    }
}

#[test]
fn secret_arguments_nested_or_numeric_reach_only_the_tool() {
    for marker in ["tok-secret-marker-51c9", "90817263"] {
        scenario(
            "secret arguments echoed back by the tool",
            marker,
            GuardrailConfig::default(),
            vec![Arc::new(AddSecrets)],
            calls(vec![ToolCall::new("c1", "echo", json!({"q": "x"}))]),
            None,
        );
    }
}

#[test]
fn field_formats_in_errors_and_history_are_redacted() {
    let cfg = GuardrailConfig::default()
        .with_action("pii_email", GuardrailAction::Redact)
        .with_action("pii_credit_card", GuardrailAction::Redact);
    // A fullwidth at sign in a model error.
    scenario(
        "fullwidth e-mail in a model error, REDACT",
        "fw.marker＠example.com",
        cfg.clone(),
        vec![],
        vec![Err(ModelError::Other(
            "refused: fw.marker＠example.com".into(),
        ))],
        None,
    );
    // A card with zero-width separators, and a %40 e-mail, in earlier history.
    let state = AgentState::new("a")
        .with_message(Message::assistant(
            "card 4111\u{200B}1111\u{200B}1111\u{200B}1111 noted",
        ))
        .with_message(Message::tool("old", "mailto:pct.marker%40example.com"))
        .with_message(Message::user("and now?"));
    for marker in ["1111\u{200B}1111", "pct.marker%40example.com"] {
        scenario(
            "zero-width card and %40 e-mail in history, REDACT",
            marker,
            cfg.clone(),
            vec![],
            vec![Ok(ModelResponse::text("ok"))],
            Some(state.clone()),
        );
    }
}

#[test]
fn ties_with_the_guard_see_nothing_raw_when_registered_as_documented_and_are_warned_of() {
    let buf = Buf::default();
    let sub = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _sg = hooks_core::test_util::set_thread_subscriber(sub);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = |registry: HookRegistry, prompt: &str| {
        let model = Arc::new(ScriptedModel::new(calls(vec![ToolCall::new(
            "c1",
            "crm",
            json!({}),
        )])));
        let mut b = Agent::builder("a", model).registry(Arc::new(registry));
        for t in tools() {
            b = b.tool(t);
        }
        rt.block_on(b.build().unwrap().run(prompt.to_owned()))
            .unwrap();
    };
    // An output spy registered before the guard, and a spy at the guard's own before-priority
    // registered after it: the guard runs first on both sides.
    let (early_out, early_out_seen) = Spy::new("early_out", HookPriority::OUTPUT_GUARD);
    let (same_in, same_in_seen) = Spy::new("same_in", HookPriority::SECURITY_DEFAULT);
    let mut r = HookRegistry::new();
    r.add(early_out).unwrap();
    r.add(GuardrailsHook::new(redact_email()).unwrap()).unwrap();
    r.add(same_in).unwrap();
    run(r, &format!("my mail is {EMAIL}"));
    for (who, seen) in [("early_out", early_out_seen), ("same_in", same_in_seen)] {
        let seen = format!("{:?}", seen.lock().unwrap());
        assert!(seen.contains("REDACTED_EMAIL"), "{who} saw no event");
        assert!(!seen.contains(EMAIL), "{who} saw the raw value");
    }
    assert!(
        String::from_utf8_lossy(&buf.0.lock().unwrap()).contains("OUTPUT_GUARD"),
        "the registry warns of a tie at OUTPUT_GUARD"
    );
}
