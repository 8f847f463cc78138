//! Agents as tools: every hook reaches the nested run, budgets and the depth limit hold down
//! the tree, interrupts surface and resume, and dropping the parent abandons the child.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks_core::agent::{Agent, AgentTool, FnTool, NestedRegistry, ToolError};
use hooks_core::event::Field;
use hooks_core::interrupt::{Decision, PausedRun, ResumeError, RunOutcome};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{
    AfterInvocationEvent, BeforeInvocationEvent, BeforeToolCallEvent, HookError, HookEvent,
    HookPriority, HookProvider, HookRegistry, HookSet, ModelResponse, ParentRun, RunError, RunId,
    ToolCall, ToolSpec, async_trait,
};
use serde_json::{Value, json};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// What one run looked like to a provider: its parent, its tool calls' parents, whether it
/// ended or was abandoned.
#[derive(Debug, Default, Clone)]
struct Seen {
    parent: Option<ParentRun>,
    tool_parents: Vec<Option<ParentRun>>,
    tools: Vec<String>,
    ended: bool,
    abandoned: bool,
}

/// Records every run; cancels the tools it is told to (a guard, security band).
struct Watch {
    name: &'static str,
    priority: HookPriority,
    cancel: Vec<&'static str>,
    interrupt: Vec<&'static str>,
    runs: Mutex<HashMap<RunId, Seen>>,
}

impl Watch {
    fn new(name: &'static str, priority: HookPriority) -> Arc<Self> {
        Arc::new(Self {
            name,
            priority,
            cancel: Vec::new(),
            interrupt: Vec::new(),
            runs: Mutex::default(),
        })
    }

    fn guard(cancel: &[&'static str], interrupt: &[&'static str]) -> Arc<Self> {
        Arc::new(Self {
            name: "guard",
            priority: HookPriority::SECURITY_DEFAULT,
            cancel: cancel.to_vec(),
            interrupt: interrupt.to_vec(),
            runs: Mutex::default(),
        })
    }

    fn runs(&self) -> HashMap<RunId, Seen> {
        self.runs.lock().unwrap().clone()
    }

    fn child_of(&self, parent: &RunId) -> Vec<(RunId, Seen)> {
        self.runs()
            .into_iter()
            .filter(|(_, s)| s.parent.as_ref().is_some_and(|p| &p.run_id == parent))
            .collect()
    }
}

#[async_trait]
impl HookProvider for Watch {
    fn name(&self) -> &str {
        self.name
    }
    fn priority(&self) -> HookPriority {
        self.priority
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_INVOCATION
            | HookSet::AFTER_INVOCATION
            | HookSet::BEFORE_TOOL_CALL
            | HookSet::RUN_ABANDONED
    }
    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        let parent = e.state().parent.as_deref().cloned();
        self.runs
            .lock()
            .unwrap()
            .entry(e.state().run_id.clone())
            .or_default()
            .parent = parent;
        Ok(())
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        let name = e.tool_name().to_owned();
        {
            let mut runs = self.runs.lock().unwrap();
            let seen = runs.entry(e.run_id().clone()).or_default();
            seen.tool_parents.push(e.parent().cloned());
            seen.tools.push(name.clone());
        }
        if self.cancel.contains(&name.as_str()) {
            e.cancel(format!("{name} is blocked by policy"));
        } else if self.interrupt.contains(&name.as_str()) {
            e.interrupt(format!("{name} needs a person"), json!({"tool": name}));
        }
        Ok(())
    }
    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.runs
            .lock()
            .unwrap()
            .entry(e.state().run_id.clone())
            .or_default()
            .ended = true;
        Ok(())
    }
    fn on_run_abandoned(&self, run_id: &RunId) {
        self.runs
            .lock()
            .unwrap()
            .entry(run_id.clone())
            .or_default()
            .abandoned = true;
    }
}

fn text_tool(name: &str, out: &'static str) -> FnTool {
    FnTool::new(
        ToolSpec::new(name, name, json!({"type": "object"})),
        move |_| Ok(out.to_owned()),
    )
}

fn call(id: &str, tool: &str, args: Value) -> ModelResponse {
    ModelResponse::tool_calls(vec![ToolCall::new(id, tool, args)])
}

/// A child agent that calls `tool` once, then answers with what it got.
fn child(tool: FnTool, registry: Option<Arc<HookRegistry>>) -> Agent {
    let name = tool.spec().name.clone();
    let model = ScriptedModel::new(vec![
        Ok(call("k1", &name, json!({"q": 1}))),
        Ok(ModelResponse::text("child done")),
    ]);
    let b = Agent::builder("child", model).tool(tool);
    match registry {
        Some(r) => b.registry(r).build().unwrap(),
        None => b.build().unwrap(),
    }
}

fn parent(tool: AgentTool, registry: Arc<HookRegistry>) -> Agent {
    let model = ScriptedModel::new(vec![
        Ok(call("p1", "helper", json!({"input": "do the thing"}))),
        Ok(ModelResponse::text("parent done")),
    ]);
    Agent::builder("parent", model)
        .tool(tool)
        .registry(registry)
        .build()
        .unwrap()
}

use hooks_core::agent::Tool as _;

#[test]
fn the_child_dispatches_through_the_parents_registry_with_its_parent_on_every_event() {
    let watch = Watch::new("watch", HookPriority::DEFAULT);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&watch)).unwrap());
    let helper = child(text_tool("lookup", "42"), None).as_tool("helper", "Helps");
    let out = rt()
        .block_on(parent(helper, Arc::clone(&registry)).run("go"))
        .unwrap();
    assert_eq!(out.answer, "parent done");
    assert_eq!(out.state.tool_executions[0].result, "child done");
    assert!(out.state.parent.is_none());
    let children = watch.child_of(&out.state.run_id);
    assert_eq!(children.len(), 1, "{:?}", watch.runs());
    let (child_id, seen) = &children[0];
    assert_ne!(child_id, &out.state.run_id);
    let expected = ParentRun::new(out.state.run_id.clone(), "p1", 1);
    assert_eq!(seen.parent.as_ref(), Some(&expected));
    assert_eq!(seen.tools, ["lookup"]);
    assert_eq!(seen.tool_parents, [Some(expected)]);
    assert!(seen.ended && !seen.abandoned);
}

#[test]
fn a_child_with_its_own_registry_keeps_the_callers_guards_and_nothing_else() {
    let guard = Watch::guard(&["wipe"], &[]);
    let audit = Watch::new("audit", HookPriority::DEFAULT);
    let own = Watch::new("own", HookPriority::DEFAULT);
    let caller = Arc::new(
        HookRegistry::new()
            .with(Arc::clone(&guard))
            .unwrap()
            .with(Arc::clone(&audit))
            .unwrap(),
    );
    let own_registry = Arc::new(HookRegistry::new().with(Arc::clone(&own)).unwrap());
    let helper =
        child(text_tool("wipe", "wiped everything"), Some(own_registry)).as_tool("helper", "Helps");
    let out = rt().block_on(parent(helper, caller).run("go")).unwrap();
    // The caller's guard cancelled the child's tool: the child saw the reason, not the result.
    let children = guard.child_of(&out.state.run_id);
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].1.tools, ["wipe"]);
    assert!(own.child_of(&out.state.run_id).len() == 1);
    assert!(
        audit.child_of(&out.state.run_id).is_empty(),
        "a non-guard of the caller stays out of a child with its own registry"
    );
    assert_eq!(out.state.tool_executions[0].result, "child done");
}

#[test]
fn leaving_a_provider_out_is_recorded_and_an_unknown_name_is_an_error_result() {
    let guard = Watch::guard(&[], &[]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let helper = child(text_tool("lookup", "42"), None)
        .as_tool("helper", "Helps")
        .without_provider("guard");
    let out = rt()
        .block_on(parent(helper, Arc::clone(&registry)).run("go"))
        .unwrap();
    assert!(guard.child_of(&out.state.run_id).is_empty());
    let opt_out = out
        .changes
        .iter()
        .find(|c| c.change.field == Field::NestedOptOut)
        .expect("the opt-out is in the caller's change record");
    assert_eq!(&*opt_out.change.provider, "guard");
    assert_eq!(opt_out.tool_call_id.as_deref(), Some("p1"));
    assert_eq!(opt_out.event, HookEvent::BeforeToolCall);

    let typo = child(text_tool("lookup", "42"), None)
        .as_tool("helper", "Helps")
        .without_provider("gaurd");
    let out = rt().block_on(parent(typo, registry).run("go")).unwrap();
    let result = &out.state.tool_executions[0].result;
    assert!(
        result.contains("'gaurd'") && result.contains("guard"),
        "{result}"
    );
}

/// An agent whose tool is `inner` as a tool named `name`; its model calls it once.
fn level(name: &str, inner: AgentTool, max_depth: u32) -> Agent {
    let tool_name = inner.spec().name.clone();
    let model = ScriptedModel::new(vec![
        Ok(call(
            &format!("c-{name}"),
            &tool_name,
            json!({"input": "deeper"}),
        )),
        Ok(ModelResponse::text(format!("{name} done"))),
    ]);
    Agent::builder(name, model)
        .tool(inner)
        .max_depth(max_depth)
        .build()
        .unwrap()
}

#[test]
fn the_depth_limit_is_an_error_result_not_a_stack_overflow() {
    // leaf (depth 4) <- l3 (3) <- l2 (2) <- l1 (1) <- top (0), default limit 3.
    let leaf = Agent::builder(
        "leaf",
        ScriptedModel::new(vec![Ok(ModelResponse::text("leaf"))]),
    )
    .build()
    .unwrap();
    let l3 = level("l3", leaf.as_tool("leaf", "x"), 3);
    let l2 = level("l2", l3.as_tool("l3", "x"), 3);
    let l1 = level("l1", l2.as_tool("l2", "x"), 3);
    let top = level("top", l1.as_tool("l1", "x"), 3);
    let registry = Arc::new(HookRegistry::new());
    let watch = Watch::new("watch", HookPriority::DEFAULT);
    let top = Agent::builder(
        "top",
        ScriptedModel::new(vec![
            Ok(call("c-top", "l1", json!({"input": "deeper"}))),
            Ok(ModelResponse::text("top done")),
        ]),
    )
    .tool(AgentTool::new(Arc::new(top), "l1", "x"))
    .registry(Arc::new(
        HookRegistry::new().with(Arc::clone(&watch)).unwrap(),
    ))
    .build()
    .unwrap();
    drop(registry);
    let out = rt().block_on(top.run("go")).unwrap();
    assert_eq!(out.answer, "top done");
    let depths: Vec<u32> = watch
        .runs()
        .values()
        .map(|s| s.parent.as_ref().map_or(0, |p| p.depth))
        .collect();
    assert_eq!(depths.iter().max(), Some(&3), "{depths:?}");
    // The run at depth 3 got the refusal as its tool's result.
    let deepest = watch
        .runs()
        .into_iter()
        .find(|(_, s)| s.parent.as_ref().is_some_and(|p| p.depth == 3))
        .unwrap();
    assert_eq!(deepest.1.tools.len(), 1);

    // A limit of 1: a grandchild is refused with the limit named.
    let grandchild = Agent::builder(
        "gc",
        ScriptedModel::new(vec![Ok(ModelResponse::text("gc"))]),
    )
    .build()
    .unwrap();
    let middle_model = Arc::new(ScriptedModel::new(vec![
        Ok(call("c-middle", "gc", json!({"input": "deeper"}))),
        Ok(ModelResponse::text("middle done")),
    ]));
    let middle = Agent::builder("middle", Arc::clone(&middle_model))
        .tool(grandchild.as_tool("gc", "x"))
        .build()
        .unwrap();
    let top = level("top", middle.as_tool("middle", "x"), 1);
    let out = rt().block_on(top.run("go")).unwrap();
    assert_eq!(out.state.tool_executions[0].result, "middle done");
    // The middle run's model saw the refusal as its tool's result.
    let saw: Vec<String> = middle_model
        .received(&middle_model_run(&middle_model))
        .concat()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert!(
        saw.iter()
            .any(|c| c.contains("2 level(s) deep, past the limit of 1")),
        "{saw:?}"
    );
}

/// The one run a scripted model served.
fn middle_model_run(model: &ScriptedModel) -> RunId {
    let debug = format!("{model:?}");
    let at = debug.find("run-").unwrap();
    RunId::new(&debug[at..at + 40])
}

#[test]
fn an_agent_that_is_its_own_tool_stops_at_the_limit() {
    // A tool that runs the agent it belongs to: recursion without end, but for the limit.
    struct Recur(Mutex<Option<Arc<AgentTool>>>);
    #[async_trait]
    impl hooks_core::agent::Tool for Recur {
        fn spec(&self) -> &ToolSpec {
            static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
            SPEC.get_or_init(|| ToolSpec::new("self", "itself", json!({"type": "object"})))
        }
        async fn call(&self, input: hooks_core::agent::ToolInput<'_>) -> Result<String, ToolError> {
            let tool = self.0.lock().unwrap().clone().unwrap();
            tool.call(input).await
        }
    }
    let recur = Arc::new(Recur(Mutex::new(None)));
    let model = ScriptedModel::new(vec![
        Ok(call("again", "self", json!({"input": "again"}))),
        Ok(ModelResponse::text("unwound")),
    ]);
    let agent = Arc::new(
        Agent::builder("loop", model)
            .tool(Arc::clone(&recur))
            .build()
            .unwrap(),
    );
    *recur.0.lock().unwrap() = Some(Arc::new(AgentTool::new(Arc::clone(&agent), "self", "x")));
    let out = rt().block_on(agent.run("go")).unwrap();
    assert_eq!(out.answer, "unwound");
    // Break the cycle so the test frees what it made.
    *recur.0.lock().unwrap() = None;
}

#[test]
fn the_tree_shares_the_top_level_runs_iteration_budget() {
    // The child would loop forever on its tool; the parent allows 3 iterations in all.
    let looping = Agent::builder(
        "looper",
        ScriptedModel::new(
            (0..50)
                .map(|i| Ok(call(&format!("k{i}"), "lookup", json!({}))))
                .collect(),
        ),
    )
    .tool(text_tool("lookup", "more"))
    .max_iterations(50)
    .build()
    .unwrap();
    let model = ScriptedModel::new(vec![
        Ok(call("p1", "helper", json!({"input": "loop"}))),
        Ok(ModelResponse::text("parent done")),
    ]);
    let top = Agent::builder("parent", model)
        .tool(looping.as_tool("helper", "Helps"))
        .max_iterations(3)
        .build()
        .unwrap();
    let failure = rt().block_on(top.run("go")).unwrap_err();
    assert!(
        matches!(
            failure.error,
            RunError::TreeIterationLimit { max_iterations: 3 }
        ),
        "{:?}",
        failure.error
    );
    let result = &failure.state.tool_executions[0].result;
    assert!(result.contains("shared budget of 3"), "{result}");
}

#[test]
fn a_secret_argument_never_reaches_the_child() {
    struct AddSecret;
    #[async_trait]
    impl HookProvider for AddSecret {
        fn hooks(&self) -> HookSet {
            HookSet::BEFORE_TOOL_CALL
        }
        async fn on_before_tool_call(
            &self,
            e: &mut BeforeToolCallEvent<'_>,
        ) -> Result<(), HookError> {
            if e.tool_name() == "helper" {
                e.secret_arguments_mut()
                    .insert("api_key", "SECRET-MARKER-9f3");
            }
            if e.tool_name() == "sneaky" {
                e.secret_arguments_mut()
                    .insert("input", "SECRET-MARKER-9f3");
            }
            Ok(())
        }
    }
    let registry = Arc::new(HookRegistry::new().with(AddSecret).unwrap());
    let child_model = Arc::new(ScriptedModel::new(vec![Ok(ModelResponse::text("ok"))]));
    let child = Arc::new(
        Agent::builder("child", Arc::clone(&child_model))
            .build()
            .unwrap(),
    );
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("p1", "helper", json!({"input": "hello"})),
            ToolCall::new("p2", "sneaky", json!({"input": "hello"})),
        ])),
        Ok(ModelResponse::text("parent done")),
    ]);
    let top = Agent::builder("parent", model)
        .tool(AgentTool::new(Arc::clone(&child), "helper", "x"))
        .tool(AgentTool::new(child, "sneaky", "x"))
        .registry(registry)
        .build()
        .unwrap();
    let out = rt().block_on(top.run("go")).unwrap();
    let results: Vec<&str> = out
        .state
        .tool_executions
        .iter()
        .map(|t| t.result.as_str())
        .collect();
    assert_eq!(results[0], "ok");
    assert!(results[1].contains("secret"), "{results:?}");
    let everything = format!("{:?}", out.state);
    assert!(!everything.contains("SECRET-MARKER-9f3"));
    // The one child run's model saw only the prompt the parent's model wrote.
    let child_id = out
        .state
        .tool_executions
        .iter()
        .position(|t| t.result == "ok")
        .unwrap();
    assert_eq!(child_id, 0);
    let seen = format!("{child_model:?}");
    assert!(!seen.contains("SECRET-MARKER-9f3"), "{seen}");
    assert!(seen.contains("hello"));
}

/// A parent agent on `model` (shared across pause and resume, so its script goes on where it
/// stopped) with the helper tool.
fn parent_with(model: &Arc<ScriptedModel>, tool: AgentTool, registry: Arc<HookRegistry>) -> Agent {
    Agent::builder("parent", Arc::clone(model))
        .tool(tool)
        .registry(registry)
        .build()
        .unwrap()
}

fn parent_model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(vec![
        Ok(call("p1", "helper", json!({"input": "do the thing"}))),
        Ok(ModelResponse::text("parent done")),
    ]))
}

#[test]
fn a_child_interrupt_pauses_the_parent_and_the_decision_resumes_the_child() {
    let guard = Watch::guard(&[], &["delete"]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let ran = Arc::new(Mutex::new(0));
    let ran2 = Arc::clone(&ran);
    let delete = Arc::new(FnTool::new(
        ToolSpec::new("delete", "Deletes", json!({"type": "object"})),
        move |_| {
            *ran2.lock().unwrap() += 1;
            Ok("deleted".to_owned())
        },
    ));
    let child_model = Arc::new(ScriptedModel::new(vec![
        Ok(call("k1", "delete", json!({"path": "/tmp/x"}))),
        Ok(ModelResponse::text("child done")),
    ]));
    let top_model = parent_model();
    // A fresh agent for every step, as another process would build it.
    let make = |registry: Arc<HookRegistry>| {
        let helper = Agent::builder("child", Arc::clone(&child_model))
            .tool(Arc::clone(&delete))
            .build()
            .unwrap()
            .as_tool("helper", "Helps");
        parent_with(&top_model, helper, registry)
    };
    let agent = make(Arc::clone(&registry));
    let RunOutcome::Interrupted(paused) = rt().block_on(agent.start("go")).unwrap() else {
        panic!("the parent pauses");
    };
    assert_eq!(*ran.lock().unwrap(), 0);
    let i = &paused.interruptions()[0];
    assert_eq!(i.tool_name, "helper");
    assert_eq!(i.tool_call_id, "p1");
    assert!(i.reason.contains("delete needs a person"), "{}", i.reason);
    assert_eq!(i.payload["nested"][0]["tool_name"], "delete");
    assert_eq!(paused.nested().len(), 1);
    // Through JSON, as a store would keep it.
    let stored = paused.to_json().unwrap();
    let paused = PausedRun::from_json(&stored).unwrap();

    // An edit cannot reach the nested call: refused, nothing ran.
    let edit = Decision::edit(&paused.interruptions()[0], json!({"input": "other"}));
    let err = rt()
        .block_on(make(Arc::clone(&registry)).resume(paused.clone(), vec![edit]))
        .unwrap_err();
    assert!(matches!(
        err.error,
        RunError::Resume(ResumeError::EditNested(_))
    ));

    let yes = Decision::approve(&paused.interruptions()[0]).by("alice");
    let agent = make(Arc::clone(&registry));
    let outcome = rt()
        .block_on(agent.resume(paused.clone(), vec![yes.clone()]))
        .unwrap();
    let RunOutcome::Completed(out) = outcome else {
        panic!("the resumed parent completes: {outcome:?}");
    };
    assert_eq!(
        *ran.lock().unwrap(),
        1,
        "the child's approved call ran once"
    );
    assert_eq!(out.answer, "parent done");
    assert_eq!(out.state.tool_executions[0].result, "child done");
    // A replay is refused.
    let again = rt().block_on(make(registry).resume(paused, vec![yes]));
    assert!(matches!(
        again.unwrap_err().error,
        RunError::Resume(ResumeError::AlreadyResumed(_))
    ));
    assert_eq!(*ran.lock().unwrap(), 1);
}

#[test]
fn a_tampered_nested_run_is_refused() {
    let guard = Watch::guard(&[], &["delete"]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let child_model = Arc::new(ScriptedModel::new(vec![
        Ok(call("k1", "delete", json!({"path": "/tmp/x"}))),
        Ok(ModelResponse::text("child done")),
    ]));
    let helper = Agent::builder("child", child_model)
        .tool(text_tool("delete", "deleted"))
        .build()
        .unwrap()
        .as_tool("helper", "Helps");
    let agent = parent_with(&parent_model(), helper, registry);
    let RunOutcome::Interrupted(paused) = rt().block_on(agent.start("go")).unwrap() else {
        panic!()
    };
    // The nested run moved under a call that is not pending: inconsistent.
    let mut v: Value = serde_json::from_str(&paused.to_json().unwrap()).unwrap();
    let child = v["nested"]["p1"].take();
    v["nested"] = json!({"p9": child});
    let err = PausedRun::from_json(&v.to_string()).unwrap_err();
    assert!(matches!(err, ResumeError::Inconsistent(_)), "{err}");
}

#[test]
fn a_rejection_reaches_the_childs_model_and_run_cancels_a_child_interrupt() {
    let guard = Watch::guard(&[], &["delete"]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let child_model = Arc::new(ScriptedModel::new(vec![
        Ok(call("k1", "delete", json!({"path": "/tmp/x"}))),
        Ok(ModelResponse::text("child gave up")),
    ]));
    let top_model = parent_model();
    let make = || {
        let helper = Agent::builder("child", Arc::clone(&child_model))
            .tool(text_tool("delete", "deleted"))
            .build()
            .unwrap()
            .as_tool("helper", "Helps");
        parent_with(&top_model, helper, Arc::clone(&registry))
    };
    let RunOutcome::Interrupted(paused) = rt().block_on(make().start("go")).unwrap() else {
        panic!()
    };
    let no = Decision::reject(&paused.interruptions()[0], "NOT-TODAY-MARKER");
    let RunOutcome::Completed(out) = rt().block_on(make().resume(paused, vec![no])).unwrap() else {
        panic!()
    };
    assert_eq!(out.state.tool_executions[0].result, "child gave up");
    let child_runs = guard.child_of(&out.state.run_id);
    let child_id = &child_runs[0].0;
    let last = child_model.received(child_id).pop().unwrap();
    assert!(
        last.iter().any(|m| m.content.contains("NOT-TODAY-MARKER")),
        "{last:?}"
    );

    // Under run(), nothing can pause: the child's interrupt cancels its call.
    let out = rt().block_on(make().run("go")).unwrap();
    assert_eq!(out.state.tool_executions[0].result, "child gave up");
}

#[test]
fn dropping_the_parent_abandons_the_child() {
    let watch = Watch::new("watch", HookPriority::DEFAULT);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&watch)).unwrap());
    struct Hang;
    #[async_trait]
    impl hooks_core::agent::Tool for Hang {
        fn spec(&self) -> &ToolSpec {
            static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
            SPEC.get_or_init(|| ToolSpec::new("hang", "never returns", json!({"type": "object"})))
        }
        async fn call(&self, _: hooks_core::agent::ToolInput<'_>) -> Result<String, ToolError> {
            std::future::pending().await
        }
    }
    let helper = Agent::builder(
        "child",
        ScriptedModel::new(vec![Ok(call("k1", "hang", json!({})))]),
    )
    .tool(Hang)
    .build()
    .unwrap()
    .as_tool("helper", "Helps");
    let agent = parent(helper, registry);
    let timed_out = rt().block_on(async {
        tokio::time::timeout(Duration::from_millis(200), agent.run("go"))
            .await
            .is_err()
    });
    assert!(timed_out);
    let runs = watch.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.values().all(|s| s.abandoned && !s.ended), "{runs:?}");
}

#[test]
fn many_concurrent_parents_each_with_a_child_do_not_cross() {
    /// Answers with the first user message it was given (the child echoes its input).
    struct Echo;
    #[async_trait]
    impl hooks_core::agent::Model for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        async fn complete(
            &self,
            request: hooks_core::agent::ModelRequest<'_>,
        ) -> Result<ModelResponse, hooks_core::ModelError> {
            let prompt = request
                .messages
                .iter()
                .find(|m| m.role == hooks_core::Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if request
                .messages
                .iter()
                .any(|m| m.role == hooks_core::Role::Tool)
            {
                let tool = request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == hooks_core::Role::Tool)
                    .unwrap();
                return Ok(ModelResponse::text(format!("parent got {}", tool.content)));
            }
            if prompt.starts_with("parent ") {
                let id = prompt.trim_start_matches("parent ");
                return Ok(call(
                    "p1",
                    "helper",
                    json!({"input": format!("child {id}")}),
                ));
            }
            Ok(ModelResponse::text(format!("echo {prompt}")))
        }
    }
    let watch = Watch::new("watch", HookPriority::DEFAULT);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&watch)).unwrap());
    let helper = Agent::builder("child", Echo)
        .build()
        .unwrap()
        .as_tool("helper", "Helps");
    let agent = Arc::new(
        Agent::builder("parent", Echo)
            .tool(helper)
            .registry(registry)
            .build()
            .unwrap(),
    );
    let outs = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
        .block_on(async {
            let tasks: Vec<_> = (0..1000)
                .map(|i| {
                    let agent = Arc::clone(&agent);
                    tokio::spawn(async move { (i, agent.run(format!("parent {i}")).await) })
                })
                .collect();
            let mut outs = Vec::new();
            for t in tasks {
                outs.push(t.await.unwrap());
            }
            outs
        });
    for (i, out) in outs {
        let out = out.unwrap();
        assert_eq!(out.answer, format!("parent got echo child {i}"));
        let children = watch.child_of(&out.state.run_id);
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].1.parent.as_ref().unwrap().tool_call_id, "p1");
    }
    assert_eq!(watch.runs().len(), 2000);
}

#[test]
fn the_nested_registry_takes_guards_by_priority_on_any_event_and_the_shorter_deadline() {
    struct OutputGuard;
    impl HookProvider for OutputGuard {
        fn hooks(&self) -> HookSet {
            HookSet::AFTER_TOOL_CALL
        }
        fn priority_for(&self, event: HookEvent) -> HookPriority {
            if event.is_after() {
                HookPriority::OUTPUT_GUARD
            } else {
                HookPriority::DEFAULT
            }
        }
    }
    struct NotSubscribed;
    impl HookProvider for NotSubscribed {
        fn hooks(&self) -> HookSet {
            HookSet::AFTER_TOOL_CALL
        }
        fn priority_for(&self, event: HookEvent) -> HookPriority {
            // A guard's priority on an event it does not handle does not make it a guard.
            if event == HookEvent::BeforeToolCall {
                HookPriority::SECURITY_DEFAULT
            } else {
                HookPriority::DEFAULT
            }
        }
    }
    let mut parent = HookRegistry::new()
        .with(OutputGuard)
        .unwrap()
        .with(NotSubscribed)
        .unwrap();
    struct NoTimer;
    impl hooks_core::Timer for NoTimer {
        fn sleep(
            &self,
            _: Duration,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
            Box::pin(std::future::pending())
        }
    }
    parent.set_deadline(Duration::from_secs(2), Arc::new(NoTimer));
    let mut own = HookRegistry::new();
    own.set_deadline(Duration::from_secs(5), Arc::new(NoTimer));
    let nested = HookRegistry::nested(&parent, Some(&own), &[]).unwrap();
    assert!(nested.contains("OutputGuard"));
    assert!(!nested.contains("NotSubscribed"));
    assert_eq!(nested.deadline(), Some(Duration::from_secs(2)));
    // A different provider under a guard's name joins under a prefixed name.
    let own = HookRegistry::new().with(NamedLike).unwrap();
    let nested = HookRegistry::nested(&parent, Some(&own), &[]).unwrap();
    assert!(nested.contains("OutputGuard") && nested.contains("parent:OutputGuard"));
    // Explicit: the caller's registry is used whole.
    let tool = Agent::builder("c", ScriptedModel::new(vec![]))
        .registry(Arc::new(HookRegistry::new()))
        .build()
        .unwrap()
        .as_tool("t", "x")
        .with_registry(NestedRegistry::Caller);
    assert!(format!("{tool:?}").contains("Caller"));
}

struct NamedLike;
impl HookProvider for NamedLike {
    fn name(&self) -> &str {
        "OutputGuard"
    }
}

#[test]
fn a_custom_loop_nests_an_agent_tool_through_the_driver() {
    use hooks_core::agent::Tool;
    use hooks_core::driver::RunOptions;
    let watch = Watch::new("watch", HookPriority::DEFAULT);
    let registry = HookRegistry::new().with(Arc::clone(&watch)).unwrap();
    let helper = child(text_tool("lookup", "42"), None).as_tool("helper", "Helps");
    let state = hooks_core::AgentState::new("custom").with_message(hooks_core::Message::user("go"));
    let options = RunOptions::new("none").with_tools(vec![helper.spec().clone()]);
    let helper = &helper;
    let out = rt()
        .block_on(registry.run(state, options, |run| async move {
            run.start_iteration().await?;
            let calls = vec![ToolCall::new("c9", "helper", json!({"input": "hi"}))];
            let done = run
                .tool_calls(
                    &calls,
                    |tool| async move { helper.call(tool.input()).await },
                )
                .await;
            run.end_iteration().await;
            Ok(done?[0].result().to_owned())
        }))
        .unwrap();
    assert_eq!(out.answer, "child done");
    let children = watch.child_of(&out.state.run_id);
    assert_eq!(children.len(), 1);
    assert_eq!(
        children[0].1.parent,
        Some(ParentRun::new(out.state.run_id.clone(), "c9", 1))
    );
}

#[test]
fn a_childs_retries_are_bounded_by_the_callers() {
    struct AlwaysRetry;
    #[async_trait]
    impl HookProvider for AlwaysRetry {
        fn hooks(&self) -> HookSet {
            HookSet::AFTER_TOOL_CALL
        }
        async fn on_after_tool_call(
            &self,
            e: &mut hooks_core::AfterToolCallEvent<'_>,
        ) -> Result<(), HookError> {
            if e.tool_name() == "flaky" {
                e.request_retry();
            }
            Ok(())
        }
    }
    let runs = Arc::new(Mutex::new(0));
    let r = Arc::clone(&runs);
    let flaky = FnTool::new(
        ToolSpec::new("flaky", "flaky", json!({"type": "object"})),
        move |_| {
            *r.lock().unwrap() += 1;
            Ok("again".to_owned())
        },
    );
    let registry = Arc::new(HookRegistry::new().with(AlwaysRetry).unwrap());
    let helper = Agent::builder(
        "child",
        ScriptedModel::new(vec![
            Ok(call("k1", "flaky", json!({}))),
            Ok(ModelResponse::text("child done")),
        ]),
    )
    .tool(flaky)
    .max_retries(10)
    .build()
    .unwrap()
    .as_tool("helper", "Helps");
    let agent = Agent::builder("parent", parent_model())
        .tool(helper)
        .registry(registry)
        .max_retries(1)
        .build()
        .unwrap();
    let out = rt().block_on(agent.run("go")).unwrap();
    assert_eq!(out.answer, "parent done");
    assert_eq!(
        *runs.lock().unwrap(),
        2,
        "one try and the caller's one retry"
    );
}

// ---- what a hostile review got through, closed ----------------------------------------

/// A custom tool that runs `agent` under the call with a registry of its choosing.
struct CustomNest {
    agent: Arc<Agent>,
    registry: Arc<HookRegistry>,
    runs: usize,
}

#[async_trait]
impl hooks_core::agent::Tool for CustomNest {
    fn spec(&self) -> &ToolSpec {
        static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| ToolSpec::new("helper", "x", json!({"type": "object"})))
    }
    async fn call(&self, input: hooks_core::agent::ToolInput<'_>) -> Result<String, ToolError> {
        let nested = input.nested().unwrap();
        let mut answers = Vec::new();
        for _ in 0..self.runs {
            let agent = Arc::clone(&self.agent);
            let state = agent.new_state("go");
            let r = nested
                .start(
                    &self.registry,
                    state,
                    hooks_core::driver::RunOptions::new("m").with_max_iterations(5),
                    &[],
                    |_run| async move { Ok::<_, RunError>("ran".to_owned()) },
                )
                .await;
            match r {
                Ok(_) => answers.push("ran".to_owned()),
                Err(f) => return Err(ToolError::new(f.error.to_string())),
            }
        }
        Ok(answers.join(","))
    }
}

#[test]
fn a_custom_nested_run_without_the_callers_guards_is_refused() {
    let guard = Watch::guard(&["wipe"], &[]);
    let caller = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let inner = Arc::new(child(text_tool("wipe", "wiped"), None));
    for (registry, ok) in [
        (Arc::new(HookRegistry::new()), false),
        (
            Arc::new(HookRegistry::nested(&caller, Some(&HookRegistry::new()), &[]).unwrap()),
            true,
        ),
    ] {
        let tool = CustomNest {
            agent: Arc::clone(&inner),
            registry,
            runs: 1,
        };
        let agent = Agent::builder("parent", parent_model())
            .tool(tool)
            .registry(Arc::clone(&caller))
            .build()
            .unwrap();
        let out = rt().block_on(agent.run("go")).unwrap();
        let result = &out.state.tool_executions[0].result;
        if ok {
            assert_eq!(result, "ran");
        } else {
            assert!(
                result.contains("lacks the calling run's guard(s) guard"),
                "{result}"
            );
        }
    }
    // One nested run per tool call.
    let tool = CustomNest {
        agent: inner,
        registry: Arc::clone(&caller),
        runs: 2,
    };
    let agent = Agent::builder("parent", parent_model())
        .tool(tool)
        .registry(caller)
        .build()
        .unwrap();
    let out = rt().block_on(agent.run("go")).unwrap();
    let result = &out.state.tool_executions[0].result;
    assert!(result.contains("already started a nested run"), "{result}");
}

/// Rewrites the arguments and hands the call on to the agent tool: with a fresh input (the
/// run is lost), or keeping it.
struct Wrapper {
    inner: AgentTool,
    keep_run: bool,
}

#[async_trait]
impl hooks_core::agent::Tool for Wrapper {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }
    async fn call(&self, input: hooks_core::agent::ToolInput<'_>) -> Result<String, ToolError> {
        let mut args = input.arguments.clone();
        args.insert("input".into(), json!("rewritten"));
        if self.keep_run {
            self.inner.call(input.with_arguments(&args)).await
        } else {
            let fresh = hooks_core::agent::ToolInput::new(input.run_id, input.call_id, &args);
            self.inner.call(fresh).await
        }
    }
}

#[test]
fn an_agent_tool_outside_its_run_fails_closed() {
    let guard = Watch::guard(&["wipe"], &[]);
    let caller = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    for keep_run in [false, true] {
        let wrapped = Wrapper {
            inner: child(text_tool("wipe", "wiped"), None).as_tool("helper", "x"),
            keep_run,
        };
        let agent = Agent::builder("parent", parent_model())
            .tool(wrapped)
            .registry(Arc::clone(&caller))
            .build()
            .unwrap();
        let out = rt().block_on(agent.run("go")).unwrap();
        let result = &out.state.tool_executions[0].result;
        if keep_run {
            assert_eq!(result, "child done");
            let children = guard.child_of(&out.state.run_id);
            assert_eq!(
                children[0].1.tools,
                ["wipe"],
                "the guard saw the child's call"
            );
        } else {
            assert!(result.contains("without the run it belongs to"), "{result}");
        }
    }
}

#[test]
fn a_nested_paused_run_does_not_resume_on_its_own() {
    let guard = Watch::guard(&[], &["delete"]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let child_model = Arc::new(ScriptedModel::new(vec![
        Ok(call("k1", "delete", json!({"path": "/tmp/x"}))),
        Ok(ModelResponse::text("child done")),
    ]));
    let child_agent = || {
        Agent::builder("child", Arc::clone(&child_model))
            .tool(text_tool("delete", "deleted"))
            .build()
            .unwrap()
    };
    let agent = parent_with(
        &parent_model(),
        child_agent().as_tool("helper", "Helps"),
        registry,
    );
    let RunOutcome::Interrupted(paused) = rt().block_on(agent.start("go")).unwrap() else {
        panic!()
    };
    let inner = paused.nested()["p1"].clone();
    let yes = Decision::approve(&inner.interruptions()[0]);
    let err = rt()
        .block_on(child_agent().resume(inner, vec![yes]))
        .unwrap_err();
    assert!(
        matches!(err.error, RunError::Resume(ResumeError::Nested(_))),
        "{}",
        err.error
    );
}

#[test]
fn a_resume_does_not_reset_the_trees_budget() {
    let guard = Watch::guard(&[], &["ask"]);
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let lookups = Arc::new(Mutex::new(0));
    let l = Arc::clone(&lookups);
    let lookup = FnTool::new(
        ToolSpec::new("lookup", "lookup", json!({"type": "object"})),
        move |_| {
            *l.lock().unwrap() += 1;
            Ok("more".to_owned())
        },
    );
    // The child alternates a lookup and an ask, forever.
    let script: Vec<_> = (0..40)
        .map(|i| {
            let tool = if i % 2 == 0 { "lookup" } else { "ask" };
            Ok(call(&format!("k{i}"), tool, json!({})))
        })
        .collect();
    let child = Agent::builder("child", ScriptedModel::new(script))
        .tool(lookup)
        .tool(text_tool("ask", "asked"))
        .max_iterations(40)
        .build()
        .unwrap();
    let agent = Agent::builder("parent", parent_model())
        .tool(child.as_tool("helper", "x"))
        .registry(registry)
        .max_iterations(4)
        .build()
        .unwrap();
    struct Yes;
    #[async_trait]
    impl hooks_core::interrupt::Approver for Yes {
        async fn decide(
            &self,
            i: &hooks_core::interrupt::Interruption,
        ) -> Result<Option<Decision>, hooks_core::BoxError> {
            Ok(Some(Decision::approve(i)))
        }
    }
    let r = rt().block_on(agent.run_with_approver("go", &Yes));
    let lookups = *lookups.lock().unwrap();
    assert!(lookups <= 4, "{lookups} lookups against a tree budget of 4");
    assert!(r.is_err());
}

#[test]
fn max_depth_is_bounded() {
    let err = Agent::builder("a", ScriptedModel::new(vec![]))
        .max_depth(hooks_core::driver::MAX_NESTING_DEPTH + 1)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("more than runs may nest"), "{err}");
}

#[test]
fn a_repeated_call_id_in_a_custom_loop_does_not_take_another_calls_paused_run() {
    use hooks_core::agent::Tool;
    use hooks_core::driver::RunOptions;
    let guard = Watch::guard(&[], &["delete"]);
    let registry = HookRegistry::new().with(Arc::clone(&guard)).unwrap();
    let helper = Agent::builder(
        "child",
        ScriptedModel::new(vec![
            Ok(call("k1", "delete", json!({}))),
            Ok(ModelResponse::text("child done")),
        ]),
    )
    .tool(text_tool("delete", "deleted"))
    .build()
    .unwrap()
    .as_tool("helper", "Helps");
    let paid = Arc::new(Mutex::new(0));
    let state = hooks_core::AgentState::new("custom").with_message(hooks_core::Message::user("go"));
    let options = RunOptions::new("none").with_parallel_tool_calls(false);
    let (helper, paid2) = (&helper, Arc::clone(&paid));
    let outcome = rt()
        .block_on(registry.start(state, options, |run| async move {
            run.start_iteration().await?;
            let calls = vec![
                ToolCall::new("c1", "helper", json!({"input": "hi"})),
                ToolCall::new("c1", "pay", json!({})),
            ];
            let done = run
                .tool_calls(&calls, |tool| {
                    let paid = Arc::clone(&paid2);
                    async move {
                        if tool.name == "pay" {
                            *paid.lock().unwrap() += 1;
                            return Ok("paid".to_owned());
                        }
                        helper.call(tool.input()).await
                    }
                })
                .await;
            run.end_iteration().await;
            done?;
            Ok("unreachable".to_owned())
        }))
        .unwrap();
    let RunOutcome::Interrupted(paused) = outcome else {
        panic!("the helper's child paused the run")
    };
    assert_eq!(*paid.lock().unwrap(), 1);
    let i = paused.interruptions();
    assert_eq!(i.len(), 1);
    assert_eq!(
        i[0].tool_name, "helper",
        "the pause is the helper's, not pay's"
    );
    let pay = &paused.state().tool_executions;
    assert_eq!(pay.len(), 1);
    assert_eq!(pay[0].result, "paid");
}
