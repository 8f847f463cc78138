//! SteeringHook semantics with in-process judges: structural interrupts, approvals, per-run
//! context under concurrency, judged final answers, and the verdict parser's properties.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hooks_core::agent::{Agent, FnTool, RunOutput};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    HookProvider, HookRegistry, ModelResponse, Role, ToolCall, ToolSpec, async_trait,
};
use hooks_steering::{
    ApprovalRequest, Approver, DecisionSource, JudgeError, JudgeModel, JudgeReply, JudgeRequest,
    SteeringAction, SteeringHook, parse_verdict,
};
use proptest::prelude::*;
use serde_json::json;

/// Answers a fixed text and keeps every prompt it got.
struct Recording {
    answer: String,
    prompts: Mutex<Vec<String>>,
    calls: AtomicUsize,
}

impl Recording {
    fn new(answer: &str) -> Arc<Self> {
        Arc::new(Self {
            answer: answer.into(),
            prompts: Mutex::default(),
            calls: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl JudgeModel for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    async fn judge(&self, r: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.prompts.lock().unwrap().push(r.prompt.clone());
        tokio::task::yield_now().await;
        Ok(JudgeReply::new(self.answer.clone(), Some("stop".into())))
    }
}

struct Yes(bool);

#[async_trait]
impl Approver for Yes {
    async fn approve(&self, _: &ApprovalRequest) -> bool {
        self.0
    }
}

fn agent(
    hook: Arc<SteeringHook>,
    calls: Vec<ToolCall>,
    answers: Vec<&str>,
) -> (Agent, Arc<ScriptedModel>) {
    let mut script = vec![Ok(ModelResponse::tool_calls(calls))];
    script.extend(answers.into_iter().map(|a| Ok(ModelResponse::text(a))));
    let model = Arc::new(ScriptedModel::new(script));
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    let mut b = Agent::builder("steered", model.clone()).registry(Arc::new(registry));
    for name in ["search", "wire_money", "delete_user"] {
        b = b.tool(FnTool::new(
            ToolSpec::new(name, "t", json!({})),
            move |_| Ok(format!("{name} ran")),
        ));
    }
    (b.build().unwrap(), model)
}

fn results(model: &ScriptedModel, out: &RunOutput) -> Vec<String> {
    model.received(&out.state.run_id)[1]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect()
}

#[tokio::test]
async fn interrupt_tools_never_reach_the_judge() {
    let judge = Recording::new("PROCEED");
    let hook = Arc::new(
        SteeringHook::builder(judge.clone())
            .with_interrupt_tools(["wire_money"])
            .build(),
    );
    let (a, model) = agent(
        hook.clone(),
        vec![
            ToolCall::new("c1", "wire_money", json!({"amount": 1000})),
            ToolCall::new("c2", "search", json!({"q": "x"})),
        ],
        vec!["done"],
    );
    let out = a.run("pay").await.unwrap();
    assert_eq!(
        results(&model, &out),
        [
            "REQUIRES APPROVAL: wire_money needs human approval",
            "search ran"
        ]
    );
    assert_eq!(
        judge.calls.load(Ordering::SeqCst),
        1,
        "only the search call was judged"
    );
    let d = hook.decisions_for(&out.state.run_id);
    assert_eq!(d[0].source, DecisionSource::InterruptTools);
    assert_eq!(d[0].action, SteeringAction::Interrupt);
}

#[tokio::test]
async fn an_approver_decides_interrupts() {
    for (approve, expected) in [
        (true, "delete_user ran"),
        (false, "REQUIRES APPROVAL: Deleting Needs HR"),
    ] {
        let judge = Recording::new("INTERRUPT: Deleting Needs HR");
        let hook = Arc::new(
            SteeringHook::builder(judge)
                .with_approver(Yes(approve))
                .build(),
        );
        let (a, model) = agent(
            hook.clone(),
            vec![ToolCall::new("c1", "delete_user", json!({"id": 7}))],
            vec!["done"],
        );
        let out = a.run("remove user 7").await.unwrap();
        assert_eq!(results(&model, &out), [expected]);
        assert_eq!(hook.decisions()[0].approved, Some(approve));
    }
    // Structural interrupts can be approved too.
    let hook = Arc::new(
        SteeringHook::builder(Recording::new("PROCEED"))
            .with_interrupt_tools(["wire_money"])
            .with_approver(Yes(true))
            .build(),
    );
    let (a, model) = agent(
        hook,
        vec![ToolCall::new("c1", "wire_money", json!({}))],
        vec!["done"],
    );
    let out = a.run("pay").await.unwrap();
    assert_eq!(results(&model, &out), ["wire_money ran"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judges_context_is_per_run() {
    let judge = Recording::new("PROCEED");
    let hook = Arc::new(SteeringHook::builder(judge.clone()).build());
    let mut handles = Vec::new();
    for i in 0..16 {
        let hook = hook.clone();
        handles.push(tokio::spawn(async move {
            let calls = (0..3)
                .map(|j| {
                    ToolCall::new(
                        format!("c{j}"),
                        "search",
                        json!({"q": format!("RUN{i}-Q{j}")}),
                    )
                })
                .collect();
            let model = Arc::new(ScriptedModel::new(vec![
                Ok(ModelResponse::tool_calls(calls)),
                Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                    "c9",
                    "search",
                    json!({"q": format!("RUN{i}-LAST")}),
                )])),
                Ok(ModelResponse::text("done")),
            ]));
            let mut registry = HookRegistry::new();
            registry.add(hook).unwrap();
            let a = Agent::builder("x", model)
                .tool(FnTool::new(ToolSpec::new("search", "s", json!({})), |_| {
                    Ok("ok".into())
                }))
                .registry(Arc::new(registry))
                .parallel_tool_calls(false)
                .build()
                .unwrap();
            a.run(format!("run {i}")).await.unwrap();
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let prompts = judge.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 16 * 4);
    for p in &prompts {
        let proposed = p.split("proposed tool: ").nth(1).unwrap();
        let run = proposed
            .split("RUN")
            .nth(1)
            .unwrap()
            .split('-')
            .next()
            .unwrap();
        let marker = format!("RUN{run}-");
        let others = p.matches("RUN").count();
        assert_eq!(
            p.matches(&marker).count(),
            others,
            "another run's arguments leaked into: {p}"
        );
        if proposed.contains("LAST") {
            // The fourth call of a run sees that run's three earlier calls and its model calls.
            assert_eq!(p.matches(&marker).count(), 4, "{p}");
            assert!(p.contains("Model calls: 2"), "{p}");
        }
    }
}

#[tokio::test]
async fn recent_calls_are_the_last_five_of_the_run() {
    let judge = Recording::new("PROCEED");
    let hook = Arc::new(SteeringHook::builder(judge.clone()).build());
    let calls = (0..7)
        .map(|j| ToolCall::new(format!("c{j}"), "search", json!({"n": j})))
        .collect();
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(calls)),
        Ok(ModelResponse::text("done")),
    ]));
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    // One after another: parallel calls of one response are judged side by side and cannot
    // see each other.
    let a = Agent::builder("y", model)
        .tool(FnTool::new(ToolSpec::new("search", "s", json!({})), |_| {
            Ok("ok".into())
        }))
        .registry(Arc::new(registry))
        .parallel_tool_calls(false)
        .build()
        .unwrap();
    a.run("go").await.unwrap();
    let last = judge.prompts.lock().unwrap().last().unwrap().clone();
    let recent = last
        .split("<<<DATA")
        .nth(1)
        .unwrap()
        .split("proposed tool: ")
        .next()
        .unwrap();
    assert_eq!(
        recent.matches("recent call: search(").count(),
        5,
        "{recent}"
    );
    assert!(recent.contains(r#"{"n":1}"#) && !recent.contains(r#"{"n":0}"#));
}

#[tokio::test]
async fn judged_answers_are_retried_with_guidance_and_bounded() {
    let judge = Recording::new("GUIDE: Cite A Source");
    let hook = Arc::new(
        SteeringHook::builder(judge)
            .with_evaluate_tools(false)
            .with_evaluate_responses(true)
            .build(),
    );
    let model = Arc::new(ScriptedModel::new(
        (0..10)
            .map(|i| Ok(ModelResponse::text(format!("answer {i}"))))
            .collect(),
    ));
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    let a = Agent::builder("z", model.clone())
        .registry(Arc::new(registry))
        .max_retries(2)
        .build()
        .unwrap();
    let err = a.run("question").await.unwrap_err();
    assert!(matches!(
        err.error,
        hooks_core::RunError::RetriesExhausted { attempts: 3, .. }
    ));
    let second = &model.received(&err.state.run_id)[1];
    let feedback = second.last().unwrap();
    assert!(feedback.automated);
    assert_eq!(feedback.content, "Steering guidance: Cite A Source");
}

/// Replies for the PROCEED property: random printable text, half of it led by a PROCEED in
/// some form (alone, on its own line, in JSON, in a fence), so the PROCEED branch is reached
/// often (`the_reply_strategy_reaches_the_proceed_branch` checks that it is).
fn replies() -> impl Strategy<Value = String> {
    let leads = prop::sample::select(vec![
        "",
        "PROCEED",
        "proceed",
        "PROCEED\n",
        "Proceed\n",
        " PROCEED",
        "PROCEED:",
        "{\"decision\": \"PROCEED\", \"reason\": \"",
        "```json\n{\"decision\":\"PROCEED\"}",
    ]);
    (leads, "[ -~\n]{0,120}", prop::bool::ANY).prop_map(|(lead, rest, clean)| {
        // Half the time the rest has no verdict word in it, so a PROCEED can stand.
        let rest = if clean {
            rest.replace(|c: char| c.is_ascii_alphabetic(), "x")
        } else {
            rest
        };
        let tail = if lead.starts_with('{') { "\"}" } else { "" };
        format!("{lead}{rest}{tail}")
    })
}

#[test]
fn the_reply_strategy_reaches_the_proceed_branch() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let proceeds = (0..512)
        .filter(|_| {
            let s = replies().new_tree(&mut runner).unwrap().current();
            parse_verdict(&s).is_ok_and(|v| v.action == SteeringAction::Proceed)
        })
        .count();
    assert!(
        proceeds >= 50,
        "only {proceeds} of 512 generated replies read as PROCEED"
    );
}

/// Words a hedged, negated or mixed reply is made of.
const HEDGES: [&str; 12] = [
    "?",
    "!",
    ".",
    ": no",
    "-NOT",
    " only if a human agrees",
    " with caution",
    ", but",
    " (not really)",
    "... no",
    " - GUIDE: use the replica",
    " unless INTERRUPT",
];
const PREFIXES: [&str; 8] = [
    "I think ",
    "Maybe ",
    "Not ",
    "Don't ",
    "Decision? ",
    "> ",
    "Answer: ",
    "- ",
];
const OTHERS: [&str; 4] = ["INTERRUPT", "GUIDE", "interrupt", "Guide"];

proptest! {
    #[test]
    fn hedged_negated_and_mixed_replies_never_yield_proceed(
        case in 0usize..4,
        hedge in 0..HEDGES.len(),
        prefix in 0..PREFIXES.len(),
        other in 0..OTHERS.len(),
        case_proceed in prop::sample::select(vec!["PROCEED", "proceed", "Proceed", "PrOcEeD"]),
        filler in "[a-z ,.]{0,30}",
    ) {
        let reply = match case {
            // Qualified on its own line.
            0 => format!("{case_proceed}{}{filler}", HEDGES[hedge]),
            // Not at the start.
            1 => format!("{}{case_proceed} {filler}", PREFIXES[prefix]),
            // Another verdict further down.
            2 => format!("{case_proceed}\n{filler} {} {filler}", OTHERS[other]),
            // Another verdict first, proceed later.
            _ => format!("{}: {filler} {case_proceed}", OTHERS[other]),
        };
        if let Ok(v) = parse_verdict(&reply) {
            prop_assert_ne!(v.action, SteeringAction::Proceed, "PROCEED from {:?}", reply);
        }
    }

    #[test]
    fn the_verdict_parser_never_panics_and_answers_in_one_of_two_shapes(s in "\\PC{0,200}") {
        match parse_verdict(&s) {
            Ok(v) => {
                prop_assert!(v.reason.chars().count() <= hooks_steering::MAX_REASON_CHARS);
                if v.action == SteeringAction::Proceed {
                    let t = s.trim_start().trim_start_matches("```").trim_start_matches(|c: char| c.is_ascii_alphabetic() && c != 'P' && c != 'p').trim_start();
                    prop_assert!(
                        t.to_ascii_uppercase().starts_with("PROCEED") || t.starts_with('{'),
                        "PROCEED from {s:?}"
                    );
                }
            }
            Err(e) => prop_assert!(
                e.to_string().starts_with("unparseable judge answer: "),
                "{e}"
            ),
        }
    }

    #[test]
    fn proceed_only_comes_from_text_that_starts_with_it(s in replies()) {
        if let Ok(v) = parse_verdict(&s)
            && v.action == SteeringAction::Proceed
        {
            let t = s.trim();
            let t = t.strip_prefix("```").map(|x| x.trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim()).unwrap_or(t);
            prop_assert!(
                t.to_ascii_uppercase().starts_with("PROCEED") || t.starts_with('{'),
                "PROCEED from {s:?}"
            );
            if t.starts_with('{') {
                let decision = serde_json::from_str::<serde_json::Value>(t.trim_end_matches("```").trim()).ok().and_then(|v| v["decision"].as_str().map(str::to_owned));
                prop_assert_eq!(decision.map(|d| d.trim().to_ascii_uppercase()), Some("PROCEED".to_owned()));
            }
        }
    }

    #[test]
    fn any_prefix_glued_to_proceed_is_not_proceed(prefix in "[A-Za-z0-9_]{1,10}", rest in "[ -~]{0,40}") {
        let text = format!("{prefix}PROCEED {rest}");
        if let Ok(v) = parse_verdict(&text) {
            prop_assert_ne!(v.action, SteeringAction::Proceed);
        }
        let glued = format!("PROCEED{prefix}");
        if let Ok(v) = parse_verdict(&glued) {
            prop_assert_ne!(v.action, SteeringAction::Proceed, "{}", glued);
        }
    }
}

#[tokio::test]
async fn a_run_without_room_for_its_context_fails_closed_and_runs_that_end_make_room() {
    let judge = Recording::new("PROCEED");
    let hook = Arc::new(
        SteeringHook::builder(judge.clone())
            .with_max_runs(1)
            .build(),
    );
    // One run holds its context (it is still going: we drive the hook by hand).
    let busy: hooks_core::RunId = "busy".into();
    let e_ext = hooks_core::Extensions::new();
    let e_call = hooks_core::ToolCall::new("c0", "search", json!({}));
    let mut e = hooks_core::BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&busy, &e_ext)
            .with_iteration(1)
            .with_attempt(0),
        &e_call,
    );
    hook.on_before_tool_call(&mut e).await.unwrap();
    assert_eq!(e.cancelled(), None);
    // A second run finds no room: its call is not judged half-blind, it is cancelled.
    let (a, _) = agent(
        hook.clone(),
        vec![ToolCall::new("c1", "search", json!({}))],
        vec!["done"],
    );
    let out = a.run("go").await.unwrap();
    let cancelled = out.state.tool_executions[0].cancelled.clone().unwrap();
    assert!(
        cancelled.starts_with("Steering judge unavailable: no room for this run's context"),
        "{cancelled}"
    );
    assert_eq!(judge.prompts.lock().unwrap().len(), 1);
    // The busy run ends; the next run is judged again.
    hook.on_run_abandoned(&busy);
    let (a, _) = agent(
        hook.clone(),
        vec![ToolCall::new("c2", "search", json!({}))],
        vec!["done"],
    );
    let out = a.run("go").await.unwrap();
    assert_eq!(out.state.tool_executions[0].cancelled, None);
    assert_eq!(judge.prompts.lock().unwrap().len(), 2);
}

#[test]
fn two_steering_hooks_with_different_names_share_a_registry() {
    let mut registry = HookRegistry::new();
    registry
        .add(SteeringHook::builder(hooks_steering::RuleJudge::new(SteeringAction::Proceed)).build())
        .unwrap();
    registry
        .add(
            SteeringHook::builder(hooks_steering::RuleJudge::new(SteeringAction::Guide))
                .with_name("strict-steering")
                .build(),
        )
        .unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["SteeringHook", "strict-steering"]
    );
}

#[test]
fn escaped_backslashes_stay_what_will_run() {
    // JSON text of {"cmd": "\\rm -rf /srv; C:\\new\\tools\\nc.exe"}: the judge must see
    // `\\rm` and `\\nc.exe`, not a space where the backslash and the letter were.
    let args = serde_json::json!({"cmd": "\\rm -rf /srv; C:\\new\\tools\\nc.exe -e cmd\nnext"});
    let shown = hooks_steering::escape_data(&args.to_string());
    assert!(shown.contains(r"\\rm -rf"), "{shown}");
    assert!(shown.contains(r"C:\\new\\tools\\nc.exe"), "{shown}");
    // A real newline (escaped as \n in JSON) still collapses to a space.
    assert!(shown.contains("cmd next"), "{shown}");
    assert!(!shown.contains('\n'));
}

/// A judge INTERRUPT pauses a pausable run; the person's approval in a new process (new hook,
/// new registry) runs the call without asking the judge again, and the judge's per-run
/// context survives the pause.
#[tokio::test]
async fn a_judge_interrupt_pauses_and_a_person_resumes_it_in_a_fresh_registry() {
    use hooks_core::interrupt::{Decision, PausedRun, RunOutcome};
    let model = Arc::new(ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c0",
            "lookup",
            json!({"q": "acct"}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"amount": 900}),
        )])),
        Ok(ModelResponse::text("sent")),
    ]));
    let ran = Arc::new(AtomicUsize::new(0));
    let build = |hook: Arc<SteeringHook>| {
        let ran = Arc::clone(&ran);
        let registry = Arc::new(HookRegistry::new().with(hook).unwrap());
        Agent::builder("bank", Arc::clone(&model))
            .registry(registry)
            .tool(FnTool::new(ToolSpec::new("lookup", "l", json!({})), |_| {
                Ok("acct 1".into())
            }))
            .tool(FnTool::new(
                ToolSpec::new("wire", "w", json!({})),
                move |_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok("wired".into())
                },
            ))
            .build()
            .unwrap()
    };
    // The first judge lets the lookup through and interrupts the wire.
    struct ByTool(Arc<Recording>);
    #[async_trait]
    impl JudgeModel for ByTool {
        fn name(&self) -> &str {
            "by-tool"
        }
        async fn judge(&self, r: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
            self.0.calls.fetch_add(1, Ordering::SeqCst);
            self.0.prompts.lock().unwrap().push(r.prompt.clone());
            let answer = if r.prompt.contains("proposed tool: wire") {
                "INTERRUPT: large transfer"
            } else {
                "PROCEED"
            };
            Ok(JudgeReply::new(answer.to_owned(), Some("stop".into())))
        }
    }
    let first = Recording::new("unused");
    let hook = Arc::new(SteeringHook::builder(ByTool(Arc::clone(&first))).build());
    let a = build(Arc::clone(&hook));
    let RunOutcome::Interrupted(paused) = a.start("pay the invoice").await.unwrap() else {
        panic!("the wire should pause the run")
    };
    let [i] = paused.interruptions() else {
        panic!()
    };
    assert_eq!(i.provider, "SteeringHook");
    assert_eq!(i.reason, "large transfer");
    assert_eq!(i.payload, json!({"source": "judge"}));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let stored = paused.to_json().unwrap();
    assert!(
        stored.contains("lookup"),
        "the judge's recent calls are kept: {stored}"
    );

    // Later: a new hook and registry; the judge would interrupt again if asked.
    let second = Recording::new("INTERRUPT: would ask again");
    let hook = Arc::new(SteeringHook::builder(Arc::clone(&second)).build());
    let a = build(Arc::clone(&hook));
    let paused = PausedRun::from_json(&stored).unwrap();
    let run_id = paused.run_id().clone();
    let yes = Decision::approve(&paused.interruptions()[0]).by("alice");
    let RunOutcome::Completed(out) = a.resume(paused, vec![yes]).await.unwrap() else {
        panic!("approved: the run should finish")
    };
    assert_eq!(out.answer, "sent");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(
        second.calls.load(Ordering::SeqCst),
        0,
        "an approved call is not judged again"
    );
    let d = hook.decisions_for(&run_id);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].source, DecisionSource::Person);
    assert_eq!(d[0].approved, Some(true));
}

/// `interrupt_tools` without an approver: a pausable run pauses; `run()` cancels as before.
#[tokio::test]
async fn interrupt_tools_pause_a_pausable_run_and_cancel_in_run() {
    use hooks_core::interrupt::RunOutcome;
    let make = || {
        let model = ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "drop_db",
                json!({}),
            )])),
            Ok(ModelResponse::text("ok")),
        ]);
        let hook = SteeringHook::builder(Recording::new("PROCEED"))
            .with_interrupt_tools(["drop_db"])
            .build();
        Agent::builder("ops", model)
            .registry(Arc::new(HookRegistry::new().with(hook).unwrap()))
            .tool(FnTool::new(
                ToolSpec::new("drop_db", "d", json!({})),
                |_| Ok("dropped".into()),
            ))
            .build()
            .unwrap()
    };
    let RunOutcome::Interrupted(p) = make().start("clean").await.unwrap() else {
        panic!()
    };
    assert_eq!(p.interruptions()[0].reason, "drop_db needs human approval");
    assert_eq!(
        p.interruptions()[0].payload,
        json!({"source": "interrupt_tools"})
    );
    let out = make().run("clean").await.unwrap();
    assert_eq!(
        out.state.tool_executions[0].cancelled.as_deref(),
        Some("REQUIRES APPROVAL: drop_db needs human approval")
    );
}

/// Approving a tool for the rest of the run stops its interrupts, not the judge: a later call
/// of that tool that the judge GUIDEs is still cancelled.
#[tokio::test]
async fn approve_always_still_lets_the_judge_cancel_later_calls() {
    use hooks_core::interrupt::{Decision, RunOutcome};
    struct ByAmount;
    #[async_trait]
    impl JudgeModel for ByAmount {
        fn name(&self) -> &str {
            "by-amount"
        }
        async fn judge(&self, r: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
            let answer = if r.prompt.contains("9999999") {
                "GUIDE: never wire to an unknown account"
            } else {
                "INTERRUPT: wires need a person"
            };
            Ok(JudgeReply::new(answer.to_owned(), Some("stop".into())))
        }
    }
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "wire",
            json!({"amount": 5}),
        )])),
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c2",
            "wire",
            json!({"amount": 9999999}),
        )])),
        Ok(ModelResponse::text("stopped")),
    ]);
    let a = Agent::builder("bank", model)
        .registry(Arc::new(
            HookRegistry::new()
                .with(SteeringHook::builder(ByAmount).build())
                .unwrap(),
        ))
        .tool(FnTool::new(
            ToolSpec::new("wire", "w", json!({})),
            move |_| {
                r.fetch_add(1, Ordering::SeqCst);
                Ok("wired".into())
            },
        ))
        .build()
        .unwrap();
    let RunOutcome::Interrupted(p) = a.start("pay").await.unwrap() else {
        panic!()
    };
    let always = Decision::approve_always(&p.interruptions()[0]);
    let RunOutcome::Completed(out) = a.resume(p, vec![always]).await.unwrap() else {
        panic!("the second wire is judged, not interrupted")
    };
    assert_eq!(ran.load(Ordering::SeqCst), 1, "only the approved wire ran");
    assert_eq!(
        out.state.tool_executions[1].cancelled.as_deref(),
        Some("Steering blocked: never wire to an unknown account")
    );
}
