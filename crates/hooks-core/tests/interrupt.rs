//! Human in the loop: interrupt, pause, serialise, resume in a fresh registry, and every way
//! a decision can be wrong.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hooks_core::agent::{Agent, FnTool, ToolError};
use hooks_core::interrupt::{
    Approver, ChannelApprover, Decision, DecisionKind, Interruption, MemoryLedger, PausedRun,
    ResumeError, RunOutcome,
};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    AfterInvocationEvent, BeforeInvocationEvent, BeforeToolCallEvent, BoxError, HookError,
    HookProvider, HookRegistry, HookSet, ModelResponse, Role, RunError, RunId, ToolCall, ToolSpec,
    async_trait,
};
use serde_json::{Value, json};

/// Interrupts every call of the tools it names (unless a person approved it); redacts the
/// word `SSN-123-45-6789` from every argument; gives the tool a secret; and keeps a per-run
/// counter it saves across pauses.
struct Gate {
    tools: Vec<&'static str>,
    asked: AtomicUsize,
    counts: Mutex<std::collections::HashMap<RunId, u64>>,
    paused_seen: Mutex<Vec<bool>>,
    resumed_seen: Mutex<Vec<bool>>,
}

impl Gate {
    fn new(tools: &[&'static str]) -> Arc<Self> {
        Arc::new(Self {
            tools: tools.to_vec(),
            asked: AtomicUsize::new(0),
            counts: Mutex::default(),
            paused_seen: Mutex::default(),
            resumed_seen: Mutex::default(),
        })
    }
}

const MARKER: &str = "SSN-123-45-6789";
const SECRET: &str = "s3cret-token-771";

#[async_trait]
impl HookProvider for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL | HookSet::BEFORE_INVOCATION | HookSet::AFTER_INVOCATION
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.resumed_seen.lock().unwrap().push(e.resumed());
        Ok(())
    }
    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.paused_seen.lock().unwrap().push(e.interrupted());
        assert!(e.error().is_none() || !e.interrupted());
        Ok(())
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        *self
            .counts
            .lock()
            .unwrap()
            .entry(e.run_id().clone())
            .or_default() += 1;
        e.edit_arguments(redact);
        e.secret_arguments_mut().insert("token", SECRET);
        if self.tools.contains(&e.tool_name()) && !e.approved() {
            self.asked.fetch_add(1, Ordering::SeqCst);
            e.interrupt(
                format!("{} needs a person", e.tool_name()),
                json!({"risk": "high"}),
            );
        }
        Ok(())
    }
    fn save_run_state(&self, run_id: &RunId) -> Option<Value> {
        self.counts
            .lock()
            .unwrap()
            .remove(run_id)
            .map(|n| json!({ "before_tool_calls": n }))
    }
    fn restore_run_state(&self, run_id: &RunId, state: Value) -> Result<(), HookError> {
        let n = state["before_tool_calls"]
            .as_u64()
            .ok_or_else(|| HookError::new("not a gate state"))?;
        self.counts.lock().unwrap().insert(run_id.clone(), n);
        Ok(())
    }
}

fn redact(v: &mut Value) -> bool {
    match v {
        Value::String(s) if s.contains(MARKER) => {
            *s = s.replace(MARKER, "[REDACTED]");
            true
        }
        Value::Object(m) => m.values_mut().fold(false, |acc, v| redact(v) | acc),
        Value::Array(a) => a.iter_mut().fold(false, |acc, v| redact(v) | acc),
        _ => false,
    }
}

/// A tool that counts its runs and records the arguments (secret included) it ran with.
struct Counted {
    runs: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Value>>>,
}

fn tool(name: &'static str, c: &Counted) -> FnTool {
    let runs = Arc::clone(&c.runs);
    let seen = Arc::clone(&c.seen);
    FnTool::new(
        ToolSpec::new(name, "a tool", json!({"type": "object"})),
        move |args| {
            runs.fetch_add(1, Ordering::SeqCst);
            seen.lock().unwrap().push(Value::Object(args.clone()));
            Ok::<_, ToolError>(format!("{name} done"))
        },
    )
}

fn counted() -> Counted {
    Counted {
        runs: Arc::new(AtomicUsize::new(0)),
        seen: Arc::default(),
    }
}

fn agent(model: Arc<ScriptedModel>, gate: Arc<Gate>, tools: &[(&'static str, &Counted)]) -> Agent {
    let registry = Arc::new(HookRegistry::new().with(gate).unwrap());
    let mut b = Agent::builder("ops", model).registry(registry);
    for (name, c) in tools {
        b = b.tool(tool(name, c));
    }
    b.build().unwrap()
}

fn wire_then_answer() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"amount": 900, "memo": format!("for {MARKER}")}),
        )])),
        Ok(ModelResponse::text("sent")),
    ]))
}

fn paused(outcome: RunOutcome) -> PausedRun {
    match outcome {
        RunOutcome::Interrupted(p) => p,
        RunOutcome::Completed(out) => panic!("expected a pause, got {:?}", out.answer),
    }
}

fn completed(outcome: RunOutcome) -> hooks_core::agent::RunOutput {
    match outcome {
        RunOutcome::Completed(out) => out,
        RunOutcome::Interrupted(p) => {
            panic!("expected an answer, paused for {:?}", p.interruptions())
        }
    }
}

#[tokio::test]
async fn approve_in_a_fresh_registry_runs_the_tool_exactly_once() {
    let wire = counted();
    let model = wire_then_answer();
    let gate = Gate::new(&["wire"]);
    let first = agent(Arc::clone(&model), Arc::clone(&gate), &[("wire", &wire)]);
    let p = paused(first.start("pay the bill").await.unwrap());
    assert_eq!(
        wire.runs.load(Ordering::SeqCst),
        0,
        "nothing runs before a decision"
    );
    let [i] = p.interruptions() else { panic!() };
    assert_eq!(i.tool_name, "wire");
    assert_eq!(i.provider, "gate");
    assert_eq!(i.reason, "wire needs a person");
    assert_eq!(i.payload, json!({"risk": "high"}));
    assert_eq!(
        i.arguments["memo"], "for [REDACTED]",
        "the person sees redacted arguments"
    );
    assert_eq!(
        *gate.paused_seen.lock().unwrap(),
        [true],
        "after-invocation saw a pause, not a failure"
    );
    let json = p.to_json().unwrap();
    assert!(
        !json.contains(SECRET),
        "secret arguments are never serialised"
    );
    assert!(
        json.contains("before_tool_calls"),
        "the provider's run state is kept: {json}"
    );
    let run_id = p.run_id().clone();
    drop((p, first, gate));

    // A new process: new registry, new provider, new agent.
    let gate = Gate::new(&["wire"]);
    let second = agent(Arc::clone(&model), Arc::clone(&gate), &[("wire", &wire)]);
    let p = PausedRun::from_json(&json).unwrap();
    let yes = Decision::approve(&p.interruptions()[0]).by("alice");
    let out = completed(second.resume(p, vec![yes]).await.unwrap());
    assert_eq!(out.answer, "sent");
    assert_eq!(out.state.run_id, run_id, "the same run");
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
    let ran_with = wire.seen.lock().unwrap()[0].clone();
    assert_eq!(
        ran_with["token"], SECRET,
        "the secret is recomputed on resume"
    );
    assert_eq!(ran_with["memo"], "for [REDACTED]");
    assert_eq!(
        gate.asked.load(Ordering::SeqCst),
        0,
        "an approved call is not interrupted again"
    );
    assert_eq!(*gate.resumed_seen.lock().unwrap(), [true]);
    // The restored counter went on from the saved one.
    assert_eq!(gate.counts.lock().unwrap().get(&run_id), Some(&2));
    let results: Vec<&str> = out
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results, ["wire done"]);
    assert!(
        out.state.tool_executions[0]
            .arguments
            .get("token")
            .is_none()
    );
}

#[tokio::test]
async fn reject_shows_the_model_the_message_and_never_runs_the_tool() {
    let wire = counted();
    let model = wire_then_answer();
    let a = agent(Arc::clone(&model), Gate::new(&["wire"]), &[("wire", &wire)]);
    let p = paused(a.start("pay").await.unwrap());
    let no = Decision::reject(&p.interruptions()[0], "Not this month.").by("bob");
    let run_id = p.run_id().clone();
    let out = completed(a.resume(p, vec![no]).await.unwrap());
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    let sent = model.received(&run_id);
    let last = sent.last().unwrap();
    let tool_msg = last.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_msg.content, "Not this month.");
    let exec = &out.state.tool_executions[0];
    assert_eq!(exec.cancelled.as_deref(), Some("Not this month."));
    assert_eq!(
        exec.arguments["memo"], "for [REDACTED]",
        "recorded redacted"
    );
}

#[tokio::test]
async fn edited_arguments_go_through_the_hooks_again() {
    let wire = counted();
    let model = wire_then_answer();
    let a = agent(Arc::clone(&model), Gate::new(&["wire"]), &[("wire", &wire)]);
    let p = paused(a.start("pay").await.unwrap());
    let edit = Decision::edit(
        &p.interruptions()[0],
        json!({"amount": 90, "memo": format!("edited {MARKER}")}),
    );
    completed(a.resume(p, vec![edit]).await.unwrap());
    let ran = wire.seen.lock().unwrap()[0].clone();
    assert_eq!(ran["amount"], 90);
    assert_eq!(
        ran["memo"], "edited [REDACTED]",
        "the hooks redacted the edit"
    );
    assert_eq!(ran["token"], SECRET);
}

#[tokio::test]
async fn replayed_and_mismatched_decisions_are_refused() {
    let wire = counted();
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"amount": 5}),
        )])),
        Ok(ModelResponse::text("sent")),
    ]));
    let ledger = Arc::new(MemoryLedger::new(100));
    let registry = Arc::new(HookRegistry::new().with(Gate::new(&["wire"])).unwrap());
    let a = Agent::builder("ops", Arc::clone(&model))
        .registry(registry)
        .tool(tool("wire", &wire))
        .resume_ledger(ledger)
        .build()
        .unwrap();
    let p = paused(a.start("pay").await.unwrap());
    let json = p.to_json().unwrap();
    let i = p.interruptions()[0].clone();

    // A decision for other arguments (the person saw 5; someone sends an approval of 5000).
    let mut forged = i.clone();
    forged.arguments = json!({"amount": 5000});
    forged.arguments_hash = hooks_core::interrupt::arguments_hash(&forged.arguments);
    let f = a
        .resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&forged)],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(f.error, RunError::Resume(ResumeError::ArgumentsChanged(_))),
        "{}",
        f.error
    );

    // A decision for an interruption this run does not hold.
    let mut stranger = i.clone();
    stranger.id = "int-someone-else".into();
    let f = a
        .resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&stranger)],
        )
        .await
        .unwrap_err();
    assert!(matches!(
        f.error,
        RunError::Resume(ResumeError::UnknownInterruption(_))
    ));

    // A paused run whose arguments were edited by hand no longer matches its hash.
    let tampered = json.replace(r#""amount":5"#, r#""amount":5000"#);
    assert!(matches!(
        PausedRun::from_json(&tampered),
        Err(ResumeError::Inconsistent(_))
    ));
    assert_eq!(
        wire.runs.load(Ordering::SeqCst),
        0,
        "nothing ran on a refused resume"
    );

    // The right decision works once; replaying the same paused run is refused.
    completed(
        a.resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&i)],
        )
        .await
        .unwrap(),
    );
    let f = a
        .resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&i)],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(f.error, RunError::Resume(ResumeError::AlreadyResumed(_))),
        "{}",
        f.error
    );
    assert!(f.error.to_string().contains("already resumed"));
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn two_interruptions_one_decided_leaves_the_other_pending() {
    let (wire, mail, read) = (counted(), counted(), counted());
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "wire", json!({"amount": 1})),
            ToolCall::new("c2", "read", json!({})),
            ToolCall::new("c3", "mail", json!({"to": "x"})),
        ])),
        Ok(ModelResponse::text("all done")),
    ]));
    let a = agent(
        Arc::clone(&model),
        Gate::new(&["wire", "mail"]),
        &[("wire", &wire), ("mail", &mail), ("read", &read)],
    );
    let p = paused(a.start("do three things").await.unwrap());
    assert_eq!(
        read.runs.load(Ordering::SeqCst),
        1,
        "the call that was not interrupted ran"
    );
    assert_eq!(p.interruptions().len(), 2);
    let mail_i = p
        .interruptions()
        .iter()
        .find(|i| i.tool_name == "mail")
        .unwrap()
        .clone();
    let wire_i = p
        .interruptions()
        .iter()
        .find(|i| i.tool_name == "wire")
        .unwrap()
        .clone();

    let p = paused(a.resume(p, vec![Decision::approve(&wire_i)]).await.unwrap());
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
    assert_eq!(mail.runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        p.interruptions(),
        std::slice::from_ref(&mail_i),
        "the same interruption, still pending"
    );
    assert_eq!(
        model.calls(p.run_id()),
        1,
        "no model call while a call waits"
    );

    let run_id = p.run_id().clone();
    let out = completed(
        a.resume(p, vec![Decision::reject(&mail_i, "no mail")])
            .await
            .unwrap(),
    );
    assert_eq!(out.answer, "all done");
    // Every call answered before the next model call, each once.
    let sent = model.received(&run_id);
    let answered: Vec<&str> = sent[1]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    let mut sorted = answered.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn approve_always_lets_later_calls_of_that_tool_through() {
    let wire = counted();
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"n": 1}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c2",
            "wire",
            json!({"n": 2}),
        )])),
        Ok(ModelResponse::text("twice")),
    ]));
    let gate = Gate::new(&["wire"]);
    let a = agent(model, Arc::clone(&gate), &[("wire", &wire)]);
    let p = paused(a.start("pay twice").await.unwrap());
    // Through JSON: the approval for the rest of the run survives the store.
    let p = PausedRun::from_json(&p.to_json().unwrap()).unwrap();
    let out = completed(
        a.resume(
            p.clone(),
            vec![Decision::approve_always(&p.interruptions()[0])],
        )
        .await
        .unwrap(),
    );
    assert_eq!(out.answer, "twice");
    assert_eq!(wire.runs.load(Ordering::SeqCst), 2);
    assert_eq!(gate.asked.load(Ordering::SeqCst), 1);
}

/// Rewrites the arguments differently each time it is asked: what an approval was given for
/// is never what would run.
struct Drifting(AtomicUsize);

#[async_trait]
impl HookProvider for Drifting {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        e.arguments_mut()["nonce"] = json!(n);
        Ok(())
    }
}

#[tokio::test]
async fn an_approval_never_covers_other_arguments() {
    let wire = counted();
    let model = wire_then_answer();
    let registry = Arc::new(
        HookRegistry::new()
            .with(Gate::new(&["wire"]))
            .unwrap()
            .with(Drifting(AtomicUsize::new(0)))
            .unwrap(),
    );
    let a = Agent::builder("ops", model)
        .registry(registry)
        .tool(tool("wire", &wire))
        .build()
        .unwrap();
    let p = paused(a.start("pay").await.unwrap());
    let p = paused(
        a.resume(p.clone(), vec![Decision::approve(&p.interruptions()[0])])
            .await
            .unwrap(),
    );
    assert_eq!(
        wire.runs.load(Ordering::SeqCst),
        0,
        "other arguments than approved never run"
    );
    let [i] = p.interruptions() else { panic!() };
    assert!(
        i.reason
            .starts_with("the arguments differ from those a person approved"),
        "{}",
        i.reason
    );
    assert_eq!(i.provider, "hooks");
}

#[tokio::test]
async fn a_run_that_cannot_pause_cancels_with_requires_approval() {
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let out = a.run("pay").await.unwrap();
    assert_eq!(out.answer, "sent");
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("REQUIRES APPROVAL: wire needs a person")
    );
}

#[tokio::test]
async fn a_custom_loop_must_run_the_decided_calls_before_the_model() {
    let model = wire_then_answer();
    let registry = HookRegistry::new().with(Gate::new(&["wire"])).unwrap();
    let options = || {
        hooks_core::driver::RunOptions::new("m").with_tools(vec![ToolSpec::new(
            "wire",
            "w",
            json!({}),
        )])
    };
    let state = hooks_core::AgentState::new("a").with_message(hooks_core::Message::user("pay"));
    let m = Arc::clone(&model);
    let outcome = registry
        .start(state, options(), |run| async move {
            run.start_iteration().await?;
            let r = run
                .model_call(|c| {
                    let m = Arc::clone(&m);
                    async move { hooks_core::agent::Model::complete(&*m, c.request()).await }
                })
                .await?;
            run.tool_calls(&r.message.tool_calls, |_| async { Ok("ran".to_owned()) })
                .await?;
            // Ignoring the pause does not get a model call past a waiting tool call.
            let again = run
                .model_call(|_| async { Ok(ModelResponse::text("sneaky")) })
                .await;
            assert!(matches!(
                again,
                Err(RunError::Interrupted { interruptions: 1 })
            ));
            Err(again.unwrap_err())
        })
        .await
        .unwrap();
    let p = paused(outcome);
    let d = Decision::approve(&p.interruptions()[0]);
    let f = registry
        .resume(p, vec![d], options(), |run| async move {
            // Forgot `resume_pending`.
            run.model_call(|_| async { Ok(ModelResponse::text("x")) })
                .await?;
            Ok(String::new())
        })
        .await
        .unwrap_err();
    assert!(
        matches!(f.error, RunError::Resume(ResumeError::Inconsistent(_))),
        "{}",
        f.error
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_runs_pause_and_resume_without_crosstalk() {
    let wire = counted();
    let gate = Gate::new(&["wire"]);
    // One model per run, each with its own amount.
    let runs: Vec<(Arc<ScriptedModel>, u64)> = (0..1000u64)
        .map(|n| {
            let m = Arc::new(ScriptedModel::new(vec![
                Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                    "c1",
                    "wire",
                    json!({"amount": n}),
                )])),
                Ok(ModelResponse::text(format!("paid {n}"))),
            ]));
            (m, n)
        })
        .collect();
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&gate)).unwrap());
    let tasks = runs.into_iter().map(|(model, n)| {
        let registry = Arc::clone(&registry);
        let wire = Counted {
            runs: Arc::clone(&wire.runs),
            seen: Arc::clone(&wire.seen),
        };
        tokio::spawn(async move {
            let a = Agent::builder("ops", model)
                .registry(registry)
                .tool(tool("wire", &wire))
                .build()
                .unwrap();
            let p = paused(a.start(format!("pay {n}")).await.unwrap());
            let p = PausedRun::from_json(&p.to_json().unwrap()).unwrap();
            assert_eq!(p.interruptions()[0].arguments["amount"], n);
            let d = if n % 2 == 0 {
                Decision::approve(&p.interruptions()[0])
            } else {
                Decision::reject(&p.interruptions()[0], format!("no {n}"))
            };
            let out = completed(a.resume(p, vec![d]).await.unwrap());
            assert_eq!(out.answer, format!("paid {n}"));
            let result = &out.state.tool_executions[0].result;
            if n % 2 == 0 {
                assert_eq!(result, "wire done");
            } else {
                assert_eq!(result, &format!("no {n}"));
            }
        })
    });
    for t in futures_util::future::join_all(tasks).await {
        t.unwrap();
    }
    assert_eq!(wire.runs.load(Ordering::SeqCst), 500);
    let mut amounts: Vec<u64> = wire
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|v| v["amount"].as_u64().unwrap())
        .collect();
    amounts.sort_unstable();
    assert_eq!(amounts, (0..1000).step_by(2).collect::<Vec<u64>>());
    assert!(gate.counts.lock().unwrap().len() <= 1000);
}

#[tokio::test]
async fn channel_approver_decides_and_fails_closed() {
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let (approver, mut requests) = ChannelApprover::new(4);
    let ui = tokio::spawn(async move {
        let r = requests.recv().await.unwrap();
        assert_eq!(r.interruption().tool_name, "wire");
        let d = Decision::approve(r.interruption()).by("ui");
        r.decide(d).unwrap();
    });
    let out = a.run_with_approver("pay", &approver).await.unwrap();
    ui.await.unwrap();
    assert_eq!(out.answer, "sent");
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);

    // Nobody answers: the request is dropped, the call is rejected.
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let (approver, mut requests) = ChannelApprover::new(4);
    let ui = tokio::spawn(async move { drop(requests.recv().await) });
    let out = a.run_with_approver("pay", &approver).await.unwrap();
    ui.await.unwrap();
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    let r = &out.state.tool_executions[0];
    assert!(
        r.result
            .starts_with("REQUIRES APPROVAL: wire needs a person (no approval"),
        "{}",
        r.result
    );

    // A deadline that passes: rejected too.
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let (approver, _requests) = ChannelApprover::new(4);
    let approver = approver.with_deadline(std::time::Duration::from_millis(50));
    a.run_with_approver("pay", &approver).await.unwrap();
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
}

/// Decides another interruption than it was asked about.
struct Confused;

#[async_trait]
impl Approver for Confused {
    async fn decide(&self, i: &Interruption) -> Result<Option<Decision>, BoxError> {
        let mut other = i.clone();
        other.id = "int-other".into();
        Ok(Some(Decision::of_kind(&other, DecisionKind::Approve)))
    }
}

#[tokio::test]
async fn an_approver_that_decides_something_else_rejects() {
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let out = a.run_with_approver("pay", &Confused).await.unwrap();
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    assert!(
        out.state.tool_executions[0]
            .result
            .contains("decided another interruption")
    );
}

// ---------------------------------------------------------------------------------------------
// What a hostile review tried (each held, or was fixed and is pinned here).

fn read_and_delete() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "read", json!({"path": "/data"})),
            ToolCall::new("c2", "delete", json!({"path": "/data"})),
        ])),
        Ok(ModelResponse::text("done")),
    ]))
}

#[tokio::test]
async fn decisions_follow_call_ids_not_positions_and_forged_pairs_are_refused() {
    let (read, delete) = (counted(), counted());
    let a = agent(
        read_and_delete(),
        Gate::new(&["read", "delete"]),
        &[("read", &read), ("delete", &delete)],
    );
    let p = paused(a.start("tidy").await.unwrap());
    let mut v: Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
    // Swap the pending calls: the approval of `read` must still land on `read`.
    v["pending"].as_array_mut().unwrap().swap(0, 1);
    let swapped = PausedRun::from_json(&v.to_string()).unwrap();
    let read_i = swapped
        .interruptions()
        .iter()
        .find(|i| i.tool_name == "read")
        .unwrap()
        .clone();
    let delete_i = swapped
        .interruptions()
        .iter()
        .find(|i| i.tool_name == "delete")
        .unwrap()
        .clone();
    completed(
        a.resume(
            swapped,
            vec![
                Decision::approve(&read_i),
                Decision::reject(&delete_i, "no"),
            ],
        )
        .await
        .unwrap(),
    );
    assert_eq!(read.runs.load(Ordering::SeqCst), 1);
    assert_eq!(delete.runs.load(Ordering::SeqCst), 0);

    // A copied interruption paired with a smuggled pending call is refused.
    let mut v: Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
    let mut copy = v["interruptions"][0].clone();
    copy["id"] = json!("int-copy");
    v["interruptions"].as_array_mut().unwrap().push(copy);
    v["pending"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "c9", "name": "delete", "arguments": {}}));
    assert!(matches!(
        PausedRun::from_json(&v.to_string()),
        Err(ResumeError::Inconsistent(_))
    ));
    // So is a repeated pending call id.
    let mut v: Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
    v["pending"][1]["id"] = json!("c1");
    assert!(matches!(
        PausedRun::from_json(&v.to_string()),
        Err(ResumeError::Inconsistent(_))
    ));
}

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef-test-key";

#[tokio::test]
async fn a_sealed_paused_run_refuses_every_edit() {
    let wire = counted();
    let build = |key: Option<&[u8]>| {
        let registry = Arc::new(HookRegistry::new().with(Gate::new(&["wire"])).unwrap());
        let b = Agent::builder("ops", wire_then_answer())
            .registry(registry)
            .tool(tool("wire", &wire));
        match key {
            Some(k) => b.resume_key(k.to_vec()),
            None => b,
        }
        .build()
        .unwrap()
    };
    let a = build(Some(KEY));
    let p = paused(a.start("pay").await.unwrap());
    assert!(p.is_sealed());
    let json = p.to_json().unwrap();
    let i = p.interruptions()[0].clone();
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<Edit> = vec![
        Box::new(|v| v["always_approved"] = json!(["wire", "delete"])),
        Box::new(|v| v["pending"][0]["arguments"]["amount"] = json!(1_000_000)),
        Box::new(|v| v["pause_id"] = json!("pause-fresh")),
        Box::new(|v| v["provider_states"]["gate"] = json!({"before_tool_calls": 0})),
        Box::new(|v| {
            v.as_object_mut().unwrap().remove("seal");
        }),
        Box::new(|v| v["seal"] = json!("00".repeat(32))),
    ];
    for edit in edits {
        let mut v: Value = serde_json::from_str(&json).unwrap();
        edit(&mut v);
        let p = PausedRun::from_json(&v.to_string()).unwrap();
        let f = a.resume(p, vec![Decision::approve(&i)]).await.unwrap_err();
        assert!(
            matches!(f.error, RunError::Resume(ResumeError::Tampered(_))),
            "{}",
            f.error
        );
    }
    // Another key, or none, cannot check it either.
    let other = Agent::builder("ops", wire_then_answer())
        .resume_key(b"another-key-another-key-another-key".to_vec())
        .build()
        .unwrap();
    let f = other
        .resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&i)],
        )
        .await
        .unwrap_err();
    assert!(matches!(
        f.error,
        RunError::Resume(ResumeError::Tampered(_))
    ));
    let f = build(None)
        .resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&i)],
        )
        .await
        .unwrap_err();
    assert!(matches!(
        f.error,
        RunError::Resume(ResumeError::Tampered(_))
    ));
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    // Untouched, it resumes.
    completed(
        a.resume(
            PausedRun::from_json(&json).unwrap(),
            vec![Decision::approve(&i)],
        )
        .await
        .unwrap(),
    );
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
    // A short key is refused when the agent is built.
    let short = Agent::builder("ops", wire_then_answer())
        .resume_key(b"short".to_vec())
        .build();
    assert!(matches!(
        short,
        Err(hooks_core::agent::AgentError::ShortResumeKey(5))
    ));
}

#[tokio::test]
async fn a_decision_is_spent_once_whatever_the_pause_id_says() {
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let p = paused(a.start("pay").await.unwrap());
    let json = p.to_json().unwrap();
    let yes = Decision::approve(&p.interruptions()[0]);
    completed(a.resume(p, vec![yes.clone()]).await.unwrap());
    let mut v: Value = serde_json::from_str(&json).unwrap();
    v["pause_id"] = json!("pause-looks-new");
    let f = a
        .resume(PausedRun::from_json(&v.to_string()).unwrap(), vec![yes])
        .await
        .unwrap_err();
    assert!(
        matches!(f.error, RunError::Resume(ResumeError::AlreadyResumed(_))),
        "{}",
        f.error
    );
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
}

/// Fails before-invocation once, when it sees a resumed run.
struct Flaky(AtomicUsize);

#[async_trait]
impl HookProvider for Flaky {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        if e.resumed() && self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(HookError::new("transient outage"));
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_resume_refused_by_a_hook_can_be_tried_again() {
    let wire = counted();
    let registry = Arc::new(
        HookRegistry::new()
            .with(Gate::new(&["wire"]))
            .unwrap()
            .with(Flaky(AtomicUsize::new(0)))
            .unwrap(),
    );
    let a = Agent::builder("ops", wire_then_answer())
        .registry(registry)
        .tool(tool("wire", &wire))
        .build()
        .unwrap();
    let p = paused(a.start("pay").await.unwrap());
    let json = p.to_json().unwrap();
    let yes = Decision::approve(&p.interruptions()[0]);
    let f = a.resume(p, vec![yes.clone()]).await.unwrap_err();
    assert!(f.error.to_string().contains("transient outage"));
    completed(
        a.resume(PausedRun::from_json(&json).unwrap(), vec![yes])
            .await
            .unwrap(),
    );
    assert_eq!(wire.runs.load(Ordering::SeqCst), 1);
}

/// Interrupts every call, with its own reason.
struct Fraud;

#[async_trait]
impl HookProvider for Fraud {
    fn name(&self) -> &str {
        "fraud"
    }
    fn priority(&self) -> hooks_core::HookPriority {
        hooks_core::HookPriority::SECURITY_DEFAULT
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        e.interrupt(
            "FRAUD: destination on a sanctions list",
            json!({"list": "sanctions"}),
        );
        Ok(())
    }
}

#[tokio::test]
async fn every_interrupting_hook_is_shown_to_the_person() {
    let wire = counted();
    let registry = Arc::new(
        HookRegistry::new()
            .with(Gate::new(&["wire"]))
            .unwrap()
            .with(Fraud)
            .unwrap(),
    );
    let a = Agent::builder("ops", wire_then_answer())
        .registry(registry)
        .tool(tool("wire", &wire))
        .build()
        .unwrap();
    let p = paused(a.start("pay").await.unwrap());
    let [i] = p.interruptions() else { panic!() };
    assert!(
        i.reason.contains("FRAUD: destination on a sanctions list"),
        "{}",
        i.reason
    );
    assert!(i.reason.contains("wire needs a person"), "{}", i.reason);
    assert_eq!(i.payload, json!([{"list": "sanctions"}, {"risk": "high"}]));
    assert_eq!(i.provider, "fraud, gate");
}

#[tokio::test]
async fn a_loop_that_ignores_the_pause_runs_nothing_more() {
    let ran = Arc::new(AtomicUsize::new(0));
    let registry = HookRegistry::new().with(Gate::new(&["wire"])).unwrap();
    let state = hooks_core::AgentState::new("a").with_message(hooks_core::Message::user("pay"));
    let call = ToolCall::new("c1", "wire", json!({"amount": 1}));
    let r = Arc::clone(&ran);
    let outcome = registry
        .start(
            state,
            hooks_core::driver::RunOptions::new("m"),
            |run| async move {
                let exec = |_| {
                    let r = Arc::clone(&r);
                    async move {
                        r.fetch_add(1, Ordering::SeqCst);
                        Ok("ran".to_owned())
                    }
                };
                let first = run.tool_calls(std::slice::from_ref(&call), exec).await;
                assert!(matches!(
                    first,
                    Err(RunError::Interrupted { interruptions: 1 })
                ));
                // Driving the same call again, or another, does nothing while paused.
                let again = run.tool_calls(std::slice::from_ref(&call), exec).await;
                assert!(matches!(
                    again,
                    Err(RunError::Interrupted { interruptions: 1 })
                ));
                let single = run
                    .tool_call(&ToolCall::new("c2", "read", json!({})), exec)
                    .await;
                assert!(matches!(
                    single,
                    Err(RunError::Interrupted { interruptions: 1 })
                ));
                Err(again.unwrap_err())
            },
        )
        .await
        .unwrap();
    assert_eq!(paused(outcome).interruptions().len(), 1);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn deep_arguments_never_reach_the_pause() {
    let registry = HookRegistry::new().with(Gate::new(&["wire"])).unwrap();
    let mut deep = json!(1);
    for _ in 0..200_000 {
        deep = Value::Array(vec![deep]);
    }
    let call = ToolCall::new("c1", "wire", json!({}));
    let mut call = call;
    call.arguments = Value::Object([("x".to_owned(), deep)].into_iter().collect());
    let state = hooks_core::AgentState::new("a").with_message(hooks_core::Message::user("pay"));
    let c = &call;
    let out = registry
        .run(
            state,
            hooks_core::driver::RunOptions::new("m"),
            |run| async move {
                let r = run
                    .tool_calls(std::slice::from_ref(c), |_| async { Ok("ran".to_owned()) })
                    .await?;
                Ok(r[0].result().to_owned())
            },
        )
        .await
        .unwrap();
    assert!(out.answer.contains("nested deeper than"), "{}", out.answer);
    hooks_core::json::drop_deep(call.arguments);
    // An edit that deep is refused as a decision.
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let p = paused(a.start("pay").await.unwrap());
    let mut deep = json!(1);
    for _ in 0..1_000 {
        deep = Value::Array(vec![deep]);
    }
    let edit = Decision::edit(&p.interruptions()[0], json!({ "x": deep }));
    let f = a.resume(p, vec![edit]).await.unwrap_err();
    assert!(
        matches!(f.error, RunError::Resume(ResumeError::EditTooDeep(_))),
        "{}",
        f.error
    );
}

/// Answers every interruption with an edit that is not an object.
struct BadEdit;

#[async_trait]
impl Approver for BadEdit {
    async fn decide(&self, i: &Interruption) -> Result<Option<Decision>, BoxError> {
        Ok(Some(Decision::edit(i, json!([1]))))
    }
}

#[tokio::test]
async fn an_approvers_unfit_decision_rejects_the_call_and_the_run_goes_on() {
    let wire = counted();
    let a = agent(wire_then_answer(), Gate::new(&["wire"]), &[("wire", &wire)]);
    let out = a.run_with_approver("pay", &BadEdit).await.unwrap();
    assert_eq!(out.answer, "sent");
    assert_eq!(wire.runs.load(Ordering::SeqCst), 0);
    assert!(out.state.tool_executions[0].result.contains("does not fit"));
}

#[tokio::test]
async fn floats_survive_the_round_trip_of_a_paused_run() {
    let wire = counted();
    let amounts = [
        18097.795199554086_f64,
        0.1 + 0.2,
        1e-300,
        123456789.98765433,
        5e-324,
    ];
    for amount in amounts {
        let model = Arc::new(ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "wire",
                json!({"amount": amount}),
            )])),
            Ok(ModelResponse::text("sent")),
        ]));
        let registry = Arc::new(HookRegistry::new().with(Gate::new(&["wire"])).unwrap());
        let a = Agent::builder("ops", model)
            .registry(registry)
            .tool(tool("wire", &wire))
            .resume_key(KEY.to_vec())
            .build()
            .unwrap();
        let p = paused(a.start("pay").await.unwrap());
        let p = PausedRun::from_json(&p.to_json().unwrap()).unwrap();
        let yes = Decision::approve(&p.interruptions()[0]);
        completed(a.resume(p, vec![yes]).await.unwrap());
    }
    assert_eq!(wire.runs.load(Ordering::SeqCst), amounts.len());
}

/// Counts the hooks a run id gets, to see that a refused replay touches nothing.
struct Witness(Mutex<Vec<String>>);

#[async_trait]
impl HookProvider for Witness {
    fn name(&self) -> &str {
        "witness"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION | HookSet::AFTER_INVOCATION
    }
    async fn on_before_invocation(&self, _: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.0.lock().unwrap().push("before".into());
        Ok(())
    }
    async fn on_after_invocation(&self, _: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.0.lock().unwrap().push("after".into());
        Ok(())
    }
    fn restore_run_state(&self, _: &RunId, _: Value) -> Result<(), HookError> {
        self.0.lock().unwrap().push("restore".into());
        Ok(())
    }
    fn save_run_state(&self, _: &RunId) -> Option<Value> {
        Some(json!(1))
    }
}

#[tokio::test]
async fn a_refused_replay_calls_no_hook() {
    let wire = counted();
    let witness = Arc::new(Witness(Mutex::default()));
    let registry = Arc::new(
        HookRegistry::new()
            .with(Gate::new(&["wire"]))
            .unwrap()
            .with(Arc::clone(&witness))
            .unwrap(),
    );
    let a = Agent::builder("ops", wire_then_answer())
        .registry(registry)
        .tool(tool("wire", &wire))
        .build()
        .unwrap();
    let p = paused(a.start("pay").await.unwrap());
    let json = p.to_json().unwrap();
    let yes = Decision::approve(&p.interruptions()[0]);
    completed(a.resume(p, vec![yes.clone()]).await.unwrap());
    let before = witness.0.lock().unwrap().len();
    let f = a
        .resume(PausedRun::from_json(&json).unwrap(), vec![yes])
        .await
        .unwrap_err();
    assert!(matches!(
        f.error,
        RunError::Resume(ResumeError::AlreadyResumed(_))
    ));
    assert_eq!(
        witness.0.lock().unwrap().len(),
        before,
        "{:?}",
        witness.0.lock().unwrap()
    );
}

/// Asks for one retry of every call, and interrupts only retries.
struct InterruptRetries;

#[async_trait]
impl HookProvider for InterruptRetries {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL | HookSet::AFTER_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        if e.attempt() > 0 {
            assert!(!e.can_pause(), "a retry of a call that ran is not paused");
            e.interrupt("second thoughts", Value::Null);
        }
        Ok(())
    }
    async fn on_after_tool_call(
        &self,
        e: &mut hooks_core::AfterToolCallEvent<'_>,
    ) -> Result<(), HookError> {
        if e.attempt() == 0 {
            e.request_retry();
        }
        Ok(())
    }
}

#[tokio::test]
async fn an_interrupt_on_a_retry_cancels_the_retry_instead_of_pausing() {
    let wire = counted();
    let registry = Arc::new(HookRegistry::new().with(InterruptRetries).unwrap());
    let a = Agent::builder("ops", wire_then_answer())
        .registry(registry)
        .tool(tool("wire", &wire))
        .build()
        .unwrap();
    let out = completed(a.start("pay").await.unwrap());
    assert_eq!(
        wire.runs.load(Ordering::SeqCst),
        1,
        "it ran once, unasked, and is not run again"
    );
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("REQUIRES APPROVAL: second thoughts")
    );
}
