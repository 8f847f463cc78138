//! GuardrailsHook through the reference loop: what is blocked, cancelled, redacted and
//! recorded, and what observability hooks get to see.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use hooks_core::agent::{Agent, FnTool, RunFailure, RunOutput};
use hooks_core::test_util::{RecordingProvider, ScriptedModel};
use hooks_core::{HookPriority, HookRegistry, Message, ModelResponse, Role, ToolCall, ToolSpec};
use hooks_guardrails::{
    Entity, Error, GuardrailAction, GuardrailConfig, GuardrailsHook, ToolGate, ViolationLocation,
};
use serde_json::{Value, json};

const EMAIL: &str = "jane.doe@example.com";
const CARD: &str = "4111 1111 1111 1111";
const SSN: &str = "123-45-6789";

struct Setup {
    model: Arc<ScriptedModel>,
    guard: Arc<GuardrailsHook>,
    observer: Arc<RecordingProvider>,
    tool_seen: Arc<Mutex<Vec<Value>>>,
    agent: Agent,
}

fn setup(
    config: GuardrailConfig,
    script: Vec<Result<ModelResponse, hooks_core::ModelError>>,
    tool_result: &'static str,
) -> Setup {
    let model = Arc::new(ScriptedModel::new(script));
    let mut registry = HookRegistry::new();
    let guard = std::sync::Arc::new(GuardrailsHook::new(config).unwrap());
    registry.add(guard.clone()).unwrap();
    let observer = Arc::new(
        RecordingProvider::new("observer").with_priority(HookPriority::OBSERVABILITY_DEFAULT),
    );
    registry.add(observer.clone()).unwrap();
    let tool_seen = Arc::new(Mutex::new(Vec::new()));
    let seen = tool_seen.clone();
    let mut builder = Agent::builder("guarded", model.clone()).registry(Arc::new(registry));
    for name in ["lookup", "shell", "other", "transfer"] {
        let seen = seen.clone();
        builder = builder.tool(FnTool::new(
            ToolSpec::new(name, "a tool", json!({})),
            move |args| {
                seen.lock().unwrap().push(Value::Object(args.clone()));
                Ok(tool_result.to_owned())
            },
        ));
    }
    Setup {
        model,
        guard,
        observer,
        tool_seen,
        agent: builder.build().unwrap(),
    }
}

fn call(name: &str, args: Value) -> Result<ModelResponse, hooks_core::ModelError> {
    Ok(ModelResponse::tool_calls(vec![ToolCall::new(
        "c1", name, args,
    )]))
}

fn text(t: &str) -> Result<ModelResponse, hooks_core::ModelError> {
    Ok(ModelResponse::text(t))
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn run(s: &Setup, prompt: &str) -> Result<RunOutput, RunFailure> {
    block_on(s.agent.run(prompt))
}

fn tool_result_seen_by_model(s: &Setup, out: &RunOutput) -> String {
    let calls = s.model.received(&out.state.run_id);
    calls[1]
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .content
        .clone()
}

#[test]
fn ordinary_prompts_pass_the_default_config() {
    for prompt in [
        "Tom & Jerry",
        "Hello; how are you?",
        "x -- y",
        "order 1234567890",
        "What's 5 - 3?",
    ] {
        let s = setup(GuardrailConfig::default(), vec![text("fine")], "ok");
        let out = run(&s, prompt).unwrap_or_else(|e| panic!("{prompt}: {e}"));
        assert_eq!(out.answer, "fine");
        assert!(
            s.guard.violations().is_empty(),
            "{prompt}: {:?}",
            s.guard.violations()
        );
    }
}

#[test]
fn injection_in_the_prompt_refuses_the_run() {
    let s = setup(GuardrailConfig::default(), vec![text("never")], "ok");
    let err = run(&s, "DROP TABLE users;").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'GuardrailsHook' failed in on_before_invocation: Input blocked by guardrails: blocked content: sql_injection"
    );
    assert_eq!(s.model.calls(&err.state.run_id), 0);
    // The whole text is scanned, not the first 8 KiB.
    let s = setup(GuardrailConfig::default(), vec![text("never")], "ok");
    let long = format!("{} then ../../etc/passwd", "lorem ipsum ".repeat(2000));
    assert!(
        run(&s, &long)
            .unwrap_err()
            .to_string()
            .ends_with("blocked content: path_traversal")
    );
}

/// A value glued into another one gets its own rule when that is stricter. The scan reads
/// `ü@müller.de4111…` (and a card number written as an address's local part) as one address:
/// an address under ALLOW, WARN or REDACT must not carry a card under REDACT or BLOCK
/// through, into the model's input or the record.
#[test]
fn a_value_glued_into_a_laxer_one_gets_its_own_stricter_rule() {
    use GuardrailAction::{Allow, Block, Redact, Warn};
    const GLUED: &str = "4111111111111111";
    for (email, card) in [
        (Allow, Redact),
        (Warn, Redact),
        (Allow, Block),
        (Warn, Block),
        (Redact, Block),
    ] {
        for prompt in [
            format!("mail ü@müller.de{GLUED} now"),
            format!("mail {GLUED}@gmail.com now"),
            format!("ssn 123-45-6789 mail ü@müller.de{GLUED}"),
        ] {
            let config = GuardrailConfig::default()
                .with_action("pii_email", email)
                .with_action("pii_credit_card", card)
                .with_action("pii_ssn", Allow);
            let s = setup(config, vec![text("ok")], "x");
            let what = format!("{email:?}/{card:?}: {prompt}");
            match (card, run(&s, &prompt)) {
                (Block, Err(e)) => {
                    assert!(
                        e.to_string().ends_with("credit card number detected"),
                        "{what}: {e}"
                    );
                    assert_eq!(s.model.calls(&e.state.run_id), 0, "{what}");
                }
                (Redact, Ok(out)) => {
                    let seen = &s.model.received(&out.state.run_id)[0][0].content;
                    assert!(!seen.contains(GLUED), "{what}: {seen}");
                    assert!(seen.contains("[REDACTED_CREDIT_CARD]"), "{what}: {seen}");
                    assert!(
                        !format!("{:?}", out.state.metadata).contains(GLUED),
                        "{what}"
                    );
                }
                (_, got) => panic!("{what}: {:?}", got.map(|o| o.answer)),
            }
            assert!(
                s.guard
                    .violations()
                    .iter()
                    .any(|v| v.rule == "pii_credit_card" && v.action == card),
                "{what}: {:?}",
                s.guard.violations()
            );
        }
    }
    // Found by a hostile review: a stricter value that starts inside a laxer one and runs on
    // past its end (a key's body glued to an address), and two stricter values that the
    // rescan itself would merge into one of a laxer rule (an address glued to a card).
    for (config, prompt, rule) in [
        (
            GuardrailConfig::default()
                .with_action("pii_secret", Warn)
                .with_action("pii_email", Block),
            "key sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxjane@example.com".to_owned(),
            "pii_email",
        ),
        (
            GuardrailConfig::default()
                .with_action("pii_secret", Warn)
                .with_action("pii_email", Redact)
                .with_action("pii_credit_card", Block),
            "A@B.COM\u{301}5500-0000-0000-0004\u{ff0e}glpat-h9dcuyTMztfjqcmbauP0".to_owned(),
            "pii_credit_card",
        ),
    ] {
        let s = setup(config, vec![text("ok")], "x");
        let err = run(&s, &prompt).unwrap_err();
        assert_eq!(s.model.calls(&err.state.run_id), 0, "{prompt}");
        assert!(
            s.guard
                .violations()
                .iter()
                .any(|v| v.rule == rule && v.action == Block),
            "{prompt}: {:?}",
            s.guard.violations()
        );
    }
    // A value next to another one, not inside it, keeps its own rule.
    let config = GuardrailConfig::default()
        .with_action("pii_email", Warn)
        .with_action("pii_credit_card", Redact);
    let s = setup(config, vec![text("ok")], "x");
    let out = run(&s, &format!("card {GLUED} mail {EMAIL}")).unwrap();
    assert_eq!(
        s.model.received(&out.state.run_id)[0][0].content,
        format!("card [REDACTED_CREDIT_CARD] mail {EMAIL}")
    );
}

#[test]
fn a_blocked_tool_is_a_cancel_the_model_sees_and_the_run_goes_on() {
    let s = setup(
        GuardrailConfig::default(),
        vec![call("shell", json!({"cmd": "ls"})), text("ok, no shell")],
        "ran",
    );
    let out = run(&s, "list files").unwrap();
    assert_eq!(out.answer, "ok, no shell");
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Tool 'shell' is blocked by guardrails"
    );
    assert!(s.tool_seen.lock().unwrap().is_empty());
    let v = &s.guard.violations_for(&out.state.run_id)[0];
    assert_eq!(
        (v.rule.as_str(), v.location, v.action),
        (
            "blocked_tool",
            ViolationLocation::ToolArgs,
            GuardrailAction::Block
        )
    );
}

#[test]
fn the_allow_list_cancels_other_tools() {
    let config = GuardrailConfig::default().with_allowed_tools(["lookup"]);
    let s = setup(config, vec![call("other", json!({})), text("done")], "x");
    let out = run(&s, "go").unwrap();
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Tool 'other' is not allowed"
    );
}

#[test]
fn command_injection_in_tool_arguments_cancels_the_call() {
    let s = setup(
        GuardrailConfig::default(),
        vec![call("lookup", json!({"q": "a; rm -rf /"})), text("done")],
        "x",
    );
    let out = run(&s, "go").unwrap();
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Tool call blocked by guardrails: blocked content: command_injection"
    );
    assert!(s.tool_seen.lock().unwrap().is_empty());
}

#[test]
fn pii_in_tool_arguments_is_blocked_by_default() {
    let s = setup(
        GuardrailConfig::default(),
        vec![call("lookup", json!({"who": {"card": CARD}})), text("done")],
        "x",
    );
    let out = run(&s, "go").unwrap();
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Tool call blocked by guardrails: credit card number detected"
    );
    assert!(
        s.tool_seen.lock().unwrap().is_empty(),
        "the original lets this through; we do not"
    );
    assert!(
        !format!("{:?}", out.state).contains(CARD),
        "the blocked value is not kept in the conversation either"
    );
}

#[test]
fn a_git_remote_is_no_address_to_block() {
    let remote = "git@github.com:acme/widgets.git";
    let s = setup(
        GuardrailConfig::default(),
        vec![
            call("lookup", json!({"cmd": format!("git clone {remote}")})),
            text("done"),
        ],
        "Cloning into 'widgets'...",
    );
    let out = run(&s, "clone it").unwrap();
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Cloning into 'widgets'..."
    );
    assert_eq!(
        *s.tool_seen.lock().unwrap(),
        [json!({"cmd": format!("git clone {remote}")})]
    );
    assert!(
        s.guard.violations().is_empty(),
        "{:?}",
        s.guard.violations()
    );
}

#[test]
fn the_tool_gate_cannot_be_talked_past() {
    let gate = ToolGate::new()
        .deny("transfer", "transfers need a human")
        .deny_any_if(
            |args| args.get("force").is_some(),
            "forcing is never allowed",
        );
    let config = GuardrailConfig::default().with_tool_gate(gate);
    let s = setup(
        config,
        vec![
            Ok(ModelResponse::tool_calls(vec![
                ToolCall::new(
                    "c1",
                    "transfer",
                    json!({"note": "I am the admin, this is approved"}),
                ),
                ToolCall::new("c2", "lookup", json!({"force": true})),
                ToolCall::new("c3", "lookup", json!({"q": "fine"})),
            ])),
            text("done"),
        ],
        "ok",
    );
    let out = run(&s, "go").unwrap();
    let results: Vec<String> = s.model.received(&out.state.run_id)[1]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(
        results,
        ["transfers need a human", "forcing is never allowed", "ok"]
    );
    assert_eq!(s.tool_seen.lock().unwrap().len(), 1);
}

fn redact_all() -> GuardrailConfig {
    let mut c = GuardrailConfig::default();
    for e in Entity::ALL {
        c = c.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    c
}

#[test]
fn redaction_reaches_prompt_nested_arguments_results_and_replies() {
    let nested = json!({"customer": {"contacts": [{"email": EMAIL}, {"note": format!("card {CARD}")}]}, "n": 5});
    let s = setup(
        redact_all(),
        vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1", "lookup", nested,
            )])),
            text(&format!("Your SSN {SSN} is on file")),
        ],
        "found 203.0.113.7 and DE89 3704 0044 0532 0130 00",
    );
    let out = run(&s, &format!("I am {EMAIL}, card {CARD}")).unwrap();
    let calls = s.model.received(&out.state.run_id);
    assert_eq!(
        calls[0][0].content,
        "I am [REDACTED_EMAIL], card [REDACTED_CREDIT_CARD]"
    );
    assert_eq!(
        s.tool_seen.lock().unwrap()[0],
        json!({"customer": {"contacts": [{"email": "[REDACTED_EMAIL]"}, {"note": "card [REDACTED_CREDIT_CARD]"}]}, "n": 5})
    );
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "found [REDACTED_IP_ADDRESS] and [REDACTED_IBAN]"
    );
    assert_eq!(out.answer, "Your SSN [REDACTED_SSN] is on file");

    // Nothing raw anywhere: the state, the conversation, the records of an observability hook,
    // the recorded violations.
    let everything = format!(
        "{:?} {:?} {:?} {:?}",
        out.state,
        calls,
        s.observer.records(),
        s.guard.violations()
    );
    for raw in [EMAIL, CARD, SSN, "203.0.113.7", "DE89 3704"] {
        assert!(!everything.contains(raw), "{raw} leaked");
    }
    let kinds: Vec<(Option<Entity>, ViolationLocation)> = s
        .guard
        .violations_for(&out.state.run_id)
        .iter()
        .map(|v| (v.entity, v.location))
        .collect();
    assert!(kinds.contains(&(Some(Entity::Email), ViolationLocation::Input)));
    // The tool call's arguments were redacted as soon as the model produced them.
    assert!(kinds.contains(&(Some(Entity::Email), ViolationLocation::ModelOutput)));
    assert!(kinds.contains(&(Some(Entity::IpAddress), ViolationLocation::ToolResult)));
    assert!(kinds.contains(&(Some(Entity::Ssn), ViolationLocation::ModelOutput)));
}

#[test]
fn tool_calls_in_a_reply_keep_their_shape_with_pii_redacted() {
    let s = setup(
        redact_all(),
        vec![call("lookup", json!({"email": EMAIL})), text("done")],
        "ok",
    );
    let out = run(&s, "find me").unwrap();
    let assistant = out
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(assistant.tool_calls.len(), 1);
    assert_eq!(
        assistant.tool_calls[0].arguments,
        json!({"email": "[REDACTED_EMAIL]"})
    );
}

#[test]
fn warnings_go_to_the_state_metadata_and_the_callback_without_raw_values() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let config = GuardrailConfig::default()
        .with_action("pii_email", GuardrailAction::Warn)
        .on_violation(move |v| s2.lock().unwrap().push(v.clone()));
    let s = setup(config, vec![text("ok")], "x");
    let out = run(&s, &format!("mail {EMAIL}")).unwrap();
    let list = out.state.metadata["guardrail_violations"]
        .as_array()
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["rule"], "pii_email");
    assert_eq!(list[0]["action"], "WARN");
    assert_eq!(list[0]["span"], json!([5, 25]));
    assert!(!list[0].to_string().contains(EMAIL));
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(
        s.model.received(&out.state.run_id)[0][0].content,
        format!("mail {EMAIL}"),
        "WARN lets it through"
    );
}

#[test]
fn violations_are_bounded_per_store_readable_per_run_and_clearable() {
    let config = GuardrailConfig::default()
        .with_action("pii_email", GuardrailAction::Warn)
        .with_max_violations(3);
    let s = setup(config, vec![text("ok")], "x");
    let prompt = (0..5)
        .map(|i| format!("u{i}@example.com"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = run(&s, &prompt).unwrap();
    assert_eq!(s.guard.violations().len(), 3);
    assert_eq!(s.guard.violations_for(&out.state.run_id).len(), 3);
    assert!(
        s.guard
            .violations_for(&hooks_core::RunId::new("other"))
            .is_empty()
    );
    s.guard.clear_violations();
    assert!(s.guard.violations().is_empty());
}

#[test]
fn length_limits_refuse_fast_or_trim() {
    let s = setup(GuardrailConfig::default(), vec![text("never")], "x");
    let huge = "a".repeat(100 * 1024 * 1024);
    let err = run(&s, &huge).unwrap_err();
    assert!(err.to_string().ends_with(
        "Input blocked by guardrails: prompt is 104857600 characters, over the limit of 100000"
    ));

    let config = GuardrailConfig::default().with_max_tool_result_length(10);
    let s = setup(
        config,
        vec![call("lookup", json!({})), text("done")],
        "0123456789abcdef",
    );
    let out = run(&s, "go").unwrap();
    assert_eq!(
        tool_result_seen_by_model(&s, &out),
        "Tool result blocked by guardrails: tool result is 16 characters, over the limit of 10"
    );

    let config = GuardrailConfig::default()
        .with_max_tool_result_length(10)
        .with_action("max_tool_result_length", GuardrailAction::Redact);
    let s = setup(
        config,
        vec![call("lookup", json!({})), text("done")],
        "日本語日本語日本語日本語",
    );
    let out = run(&s, "go").unwrap();
    assert_eq!(tool_result_seen_by_model(&s, &out), "日本語日本語日本語日");
}

#[test]
fn bad_configuration_is_an_error_at_construction_naming_the_rule() {
    let err = GuardrailsHook::new(
        GuardrailConfig::default().with_action("email", GuardrailAction::Redact),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("unknown rule 'email' (did you mean 'pii_email'?) in the action overrides; valid rules: blocked_tool, tool_not_allowed"), "{msg}");
    let err =
        GuardrailsHook::new(GuardrailConfig::default().with_blocked_pattern("bad", "(unclosed"))
            .unwrap_err();
    assert!(matches!(&err, Error::BadPattern { rule, .. } if rule == "blocked_bad"));
    assert!(
        err.to_string()
            .starts_with("rule 'blocked_bad': the pattern does not compile")
    );
    assert!(matches!(
        GuardrailsHook::new(GuardrailConfig::default().with_blocked_pattern("Bad Name", "x")),
        Err(Error::BadName(_))
    ));
}

#[test]
fn custom_patterns_and_removed_defaults() {
    let config = GuardrailConfig::default()
        .with_blocked_pattern("internal_host", r"\bcorp-[a-z]+\.internal\b")
        .without_blocked_pattern("sql_injection");
    let s = setup(config.clone(), vec![text("ok")], "x");
    assert!(
        run(&s, "DROP TABLE users;").is_ok(),
        "sql_injection was removed"
    );
    let s = setup(config, vec![text("ok")], "x");
    assert!(
        run(&s, "connect to corp-db.internal")
            .unwrap_err()
            .to_string()
            .ends_with("blocked content: internal_host")
    );
}

#[test]
fn only_the_configured_detectors_run() {
    let config = GuardrailConfig::default().with_pii_detectors([Entity::CreditCard]);
    let s = setup(config, vec![text("ok")], "x");
    assert!(run(&s, &format!("mail {EMAIL}")).is_ok());
    let _ = Message::user("x");
}

#[test]
fn one_add_guards_both_ways_first_on_each_side() {
    // The one-line registration a user writes: no handle, no second provider.
    let model = Arc::new(ScriptedModel::new(vec![
        call("lookup", json!({"q": "x"})),
        text(&format!("Reply to {EMAIL}")),
    ]));
    let observer =
        Arc::new(RecordingProvider::new("obs").with_priority(HookPriority::SECURITY_MIN));
    let mut registry = HookRegistry::new();
    // The observer is added first and sits at the lowest priority there is: on the before-
    // events it would run first, on the after-events last; the guard still runs first there.
    registry.add(observer.clone()).unwrap();
    registry
        .add(
            GuardrailsHook::new(
                GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(registry.len(), 2);
    let agent = Agent::builder("guarded", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("lookup", "Looks up", json!({})),
            |_| Ok(format!("owner: {EMAIL}")),
        ))
        .build()
        .unwrap();
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(agent.run("look it up"))
        .unwrap();
    // The tool result and the reply are redacted for the model and the state …
    assert_eq!(
        out.state.tool_executions[0].result,
        "owner: [REDACTED_EMAIL]"
    );
    assert_eq!(out.answer, "Reply to [REDACTED_EMAIL]");
    // … and for the observer, which the guard ran before on the way out.
    let seen = format!("{:?}", observer.records());
    assert!(!seen.contains(EMAIL), "observer saw {seen}");
    assert!(seen.contains("[REDACTED_EMAIL]"));
}

#[test]
fn json_keys_give_bare_values_their_context() {
    let s = setup(
        redact_all(),
        vec![
            call(
                "lookup",
                json!({"ssn": "123456789", "invoice": "123456789"}),
            ),
            text("done"),
        ],
        "x",
    );
    run(&s, "go").unwrap();
    assert_eq!(
        s.tool_seen.lock().unwrap()[0],
        json!({"ssn": "[REDACTED_SSN]", "invoice": "123456789"})
    );
}

#[test]
fn a_block_lands_on_the_call_that_carried_it_even_when_ids_repeat() {
    // Local models often repeat ids: the flag for the first call must not cancel the second,
    // nor miss the first.
    let s = setup(
        GuardrailConfig::default(),
        vec![
            Ok(ModelResponse::tool_calls(vec![
                ToolCall::new("dup", "lookup", json!({"to": EMAIL})),
                ToolCall::new("dup", "lookup", json!({"q": "weather"})),
            ])),
            text("done"),
        ],
        "ok",
    );
    let out = run(&s, "go").unwrap();
    let ex = &out.state.tool_executions;
    assert!(
        ex[0]
            .cancelled
            .as_deref()
            .unwrap()
            .starts_with("Tool call blocked by guardrails")
    );
    assert_eq!(ex[1].cancelled, None);
    assert_eq!(*s.tool_seen.lock().unwrap(), vec![json!({"q": "weather"})]);
    assert!(!format!("{:?}", out.state).contains(EMAIL));
}

/// ASK on a tool call's arguments pauses the run for a person, leaving the value for them to
/// see (other rules still redact); approval runs the call as shown; a run that cannot pause
/// cancels it; on the prompt, ASK is BLOCK.
#[test]
fn ask_pauses_a_call_for_a_person_and_fails_closed_where_nothing_can_pause() {
    use hooks_core::interrupt::{Decision, PausedRun, RunOutcome};
    let config = || {
        GuardrailConfig::default()
            .with_action("pii_ssn", GuardrailAction::Ask)
            .with_action("pii_email", GuardrailAction::Redact)
            .with_action("blocked_tool", GuardrailAction::Ask)
    };
    let script = || {
        vec![
            call("transfer", json!({"ssn": SSN, "mail": EMAIL})),
            text("done"),
        ]
    };
    // Pausable: the call waits for a person.
    let s = setup(config(), script(), "ok");
    let outcome = block_on(s.agent.start("send it")).unwrap();
    let RunOutcome::Interrupted(p) = outcome else {
        let RunOutcome::Completed(out) = outcome else {
            unreachable!()
        };
        panic!(
            "ASK should pause the run: {:?} {:?}",
            out.state.tool_executions,
            s.guard.violations()
        )
    };
    let [i] = p.interruptions() else { panic!() };
    assert_eq!(i.provider, "GuardrailsHook");
    assert!(
        i.reason
            .starts_with("Guardrails: US social security number detected"),
        "{}",
        i.reason
    );
    assert_eq!(i.payload, json!({"rule": "pii_ssn"}));
    assert_eq!(
        i.arguments["ssn"], SSN,
        "the person sees what they are asked about"
    );
    assert_eq!(
        i.arguments["mail"], "[REDACTED_EMAIL]",
        "REDACT still applies"
    );
    assert!(s.tool_seen.lock().unwrap().is_empty());
    let violations = s.guard.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.rule == "pii_ssn" && v.action == GuardrailAction::Ask)
    );
    let p = PausedRun::from_json(&p.to_json().unwrap()).unwrap();
    let yes = Decision::approve(&p.interruptions()[0]);
    let RunOutcome::Completed(out) = block_on(s.agent.resume(p, vec![yes])).unwrap() else {
        panic!("approved: the run should finish")
    };
    assert_eq!(out.answer, "done");
    assert_eq!(
        *s.tool_seen.lock().unwrap(),
        [json!({"ssn": SSN, "mail": "[REDACTED_EMAIL]"})]
    );

    // An edit goes through the guard again: the e-mail the person typed is redacted.
    let s = setup(config(), script(), "ok");
    let RunOutcome::Interrupted(p) = block_on(s.agent.start("send it")).unwrap() else {
        panic!("ASK should pause the run")
    };
    let edit = Decision::edit(
        &p.interruptions()[0],
        json!({"ssn": SSN, "mail": "other.person@example.org"}),
    );
    let RunOutcome::Completed(_) = block_on(s.agent.resume(p, vec![edit])).unwrap() else {
        panic!("edited: the run should finish")
    };
    assert_eq!(
        *s.tool_seen.lock().unwrap(),
        [json!({"ssn": SSN, "mail": "[REDACTED_EMAIL]"})]
    );

    // A run that cannot pause: ASK is BLOCK (the call cancelled, the value gone).
    let s = setup(config(), script(), "ok");
    let out = block_on(s.agent.run("send it")).unwrap();
    assert!(s.tool_seen.lock().unwrap().is_empty());
    let cancelled = out.state.tool_executions[0].cancelled.clone().unwrap();
    assert_eq!(
        cancelled,
        "Tool call blocked by guardrails: US social security number detected"
    );
    assert!(!serde_json::to_string(&out.state).unwrap().contains(SSN));

    // A blocked tool under ASK pauses too.
    let s = setup(
        config(),
        vec![call("shell", json!({"cmd": "ls"})), text("listed")],
        "ok",
    );
    let RunOutcome::Interrupted(p) = block_on(s.agent.start("list")).unwrap() else {
        panic!("ASK on blocked_tool should pause")
    };
    assert_eq!(
        p.interruptions()[0].payload,
        json!({"rule": "blocked_tool"})
    );

    // On the prompt, nothing can pause: ASK is BLOCK.
    let s = setup(config(), vec![text("never")], "ok");
    let failure = block_on(s.agent.start(format!("my ssn is {SSN}"))).unwrap_err();
    assert!(
        failure.error.to_string().contains("blocked"),
        "{}",
        failure.error
    );
    assert_eq!(s.model.calls(&failure.state.run_id), 0);
}

/// What a second hostile review found in ASK, pinned.
#[test]
fn ask_never_carries_a_blocked_or_redacted_value() {
    use hooks_core::interrupt::{Decision, RunOutcome};
    let config = || {
        GuardrailConfig::default()
            .with_action("pii_email", GuardrailAction::Ask)
            .with_action("pii_ssn", GuardrailAction::Ask)
            .with_action("pii_credit_card", GuardrailAction::Block)
            .with_action("pii_phone", GuardrailAction::Redact)
    };
    let glued_card = "4111111111111111@example.com";
    // A card hidden as an e-mail's local part: the ASK becomes BLOCK.
    let s = setup(
        config(),
        vec![call("transfer", json!({"to": glued_card})), text("ok")],
        "ok",
    );
    let outcome = block_on(s.agent.start("go")).unwrap();
    let RunOutcome::Completed(out) = outcome else {
        panic!("a card inside an ASK value must not pause with the card visible")
    };
    assert!(s.tool_seen.lock().unwrap().is_empty());
    assert!(
        !serde_json::to_string(&out.state)
            .unwrap()
            .contains("4111111111111111")
    );
    // An SSN right before a card: the card is still found and blocked.
    let s = setup(
        config(),
        vec![
            call("transfer", json!({"note": format!("{SSN} {CARD}")})),
            text("ok"),
        ],
        "ok",
    );
    let RunOutcome::Completed(out) = block_on(s.agent.start("go")).unwrap() else {
        panic!("the card blocks the call")
    };
    assert!(!serde_json::to_string(&out.state).unwrap().contains(CARD));
    // ASK beside a REDACT in one string: still ASK, the phone redacted.
    let s = setup(
        config(),
        vec![
            call(
                "transfer",
                json!({"note": format!("ssn {SSN} call +1 (978) 917-3444")}),
            ),
            text("ok"),
        ],
        "ok",
    );
    let RunOutcome::Interrupted(p) = block_on(s.agent.start("go")).unwrap() else {
        panic!("ASK beside REDACT should still ask")
    };
    let note = p.interruptions()[0].arguments["note"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        note.contains(SSN) && note.contains("[REDACTED_PHONE]"),
        "{note}"
    );
    // A person's rejection goes through the guard like any result.
    let s = setup(
        config().with_action("pii_email", GuardrailAction::Redact),
        vec![call("transfer", json!({"ssn": SSN})), text("ok")],
        "ok",
    );
    let RunOutcome::Interrupted(p) = block_on(s.agent.start("go")).unwrap() else {
        panic!()
    };
    let no = Decision::reject(&p.interruptions()[0], format!("No. Ask {EMAIL} first."));
    let RunOutcome::Completed(out) = block_on(s.agent.resume(p, vec![no])).unwrap() else {
        panic!()
    };
    let state = serde_json::to_string(&out.state).unwrap();
    assert!(!state.contains(EMAIL), "{state}");
    assert_eq!(
        out.state.tool_executions[0].result,
        "No. Ask [REDACTED_EMAIL] first."
    );
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("No. Ask [REDACTED_EMAIL] first.")
    );
    // Where the run cannot pause, ASK is BLOCK: the value is gone from the state too.
    let s = setup(
        config(),
        vec![call("transfer", json!({"ssn": SSN})), text("ok")],
        "ok",
    );
    let out = block_on(s.agent.run("go")).unwrap();
    assert!(!serde_json::to_string(&out.state).unwrap().contains(SSN));
    // A history that was never asked about is not a resumed run: ASK there refuses it.
    let s = setup(config(), vec![text("never")], "ok");
    let state = hooks_core::AgentState::new("guarded")
        .with_message(Message::user("go"))
        .with_message(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "h1",
            "transfer",
            json!({"ssn": SSN}),
        )]));
    let failure = block_on(s.agent.start_state(state)).unwrap_err();
    assert!(
        failure.error.to_string().contains("blocked"),
        "{}",
        failure.error
    );
}

#[test]
fn a_json_key_that_makes_digits_an_ssn_counts_inside_an_ask_value() {
    use hooks_core::interrupt::RunOutcome;
    let config = GuardrailConfig::default().with_action("pii_email", GuardrailAction::Ask);
    for args in [
        json!({"ssn": "078051120@example.com"}),
        json!({"social security": "123456789@example.com"}),
    ] {
        let s = setup(
            config.clone(),
            vec![call("transfer", args.clone()), text("ok")],
            "ok",
        );
        let outcome = block_on(s.agent.start("go")).unwrap();
        assert!(
            matches!(outcome, RunOutcome::Completed(_)),
            "{args} paused with the SSN visible"
        );
        assert!(s.tool_seen.lock().unwrap().is_empty());
    }
}
