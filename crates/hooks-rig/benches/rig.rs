//! What the adapter adds to a rig agent.
//!
//! - `rig/tool_call_pair/bare`: one rig prompt with one tool call (rig's scripted mock model:
//!   a tool-call turn, then a text turn; a real rig tool) and no hook: rig's own cost.
//! - `rig/tool_call_pair/hooks`: the same prompt through [`RigHooks`] over the Python
//!   original's benchmark stack (LoggingHook at a disabled level, GuardrailsHook with its
//!   default config, ModelRetryHook, NoOpTelemetryHook), with
//!   `{"query": "weather in Paris", "limit": 5}` and a 200-character result without PII.
//!
//! - `rig/tool_call_pair/noop_rig_hook`: the same with a rig hook that does nothing: what rig
//!   itself spends on having a hook.
//! - `rig/tool_call_pair/empty_registry`: the same through [`RigHooks`] over an empty
//!   registry: the adapter alone (its driver task, the hand-overs, the conversions).
//!
//! The difference is what the adapter and the stack add per prompt with one tool call: one
//! run (before/after invocation, its driver task), two model calls and one tool call through
//! our driver; compare with `e2e/tool_call_pair` (the tool call's hooks alone).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use hooks_core::HookRegistry;
use hooks_guardrails::{GuardrailConfig, GuardrailsHook};
use hooks_logging::LoggingHook;
use hooks_otel::NoOpTelemetryHook;
use hooks_retry::ModelRetryHook;
use hooks_rig::RigHooks;
use rig_agent::AgentBuilder;
use rig_agent::tool::{Tool, ToolContext};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Map, Value, json};

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

struct Search(Arc<str>);

impl Tool for Search {
    const NAME: &'static str = "search";
    type Args = Map<String, Value>;
    type Output = String;
    type Error = Never;

    fn description(&self) -> String {
        "Searches".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }

    async fn call(&self, _cx: &mut ToolContext, _args: Self::Args) -> Result<String, Never> {
        Ok(self.0.to_string())
    }
}

/// A rig hook that does nothing (but observes every event, as ours does): rig's own cost of
/// having a hook.
struct Noop;

impl rig_agent::AgentHook for Noop {}

fn model() -> MockCompletionModel {
    MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "c1",
            "search",
            json!({"query": "weather in Paris", "limit": 5}),
        ),
        MockTurn::text("Sunny."),
    ])
}

fn tool_call_pair(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result: Arc<str> = "The forecast for Paris: mostly sunny, light wind from the west, highs around 21 degrees \
                            and lows near 12. Rain is unlikely before the weekend; humidity stays moderate all week. "
        .chars()
        .cycle()
        .take(200)
        .collect::<String>()
        .into();
    let mut registry = HookRegistry::new();
    registry.add(LoggingHook::new()).expect("fresh registry");
    registry
        .add(GuardrailsHook::new(GuardrailConfig::default()).expect("default config"))
        .expect("fresh names");
    registry.add(ModelRetryHook::new()).expect("fresh name");
    registry.add(NoOpTelemetryHook::new()).expect("fresh name");
    let hooks = RigHooks::new(Arc::new(registry));

    let mut g = c.benchmark_group("rig/tool_call_pair");
    g.bench_function("bare", |b| {
        b.iter(|| {
            let agent = AgentBuilder::new(model())
                .tool(Search(Arc::clone(&result)))
                .build();
            let out = rt.block_on(async { agent.prompt("weather?").max_turns(4).await });
            black_box(out.expect("the prompt runs").output().len())
        });
    });
    g.bench_function("noop_rig_hook", |b| {
        b.iter(|| {
            let agent = AgentBuilder::new(model())
                .tool(Search(Arc::clone(&result)))
                .add_hook(Noop)
                .build();
            let out = rt.block_on(async { agent.prompt("weather?").max_turns(4).await });
            black_box(out.expect("the prompt runs").output().len())
        });
    });
    let empty = RigHooks::new(Arc::new(HookRegistry::new()));
    g.bench_function("empty_registry", |b| {
        b.iter(|| {
            let agent = AgentBuilder::new(model())
                .tool(Search(Arc::clone(&result)))
                .add_hook(empty.clone())
                .build();
            let out = rt.block_on(async { agent.prompt("weather?").max_turns(4).await });
            black_box(out.expect("the prompt runs").output().len())
        });
    });
    g.bench_function("hooks", |b| {
        b.iter(|| {
            let agent = AgentBuilder::new(model())
                .tool(Search(Arc::clone(&result)))
                .add_hook(hooks.clone())
                .build();
            let out = rt.block_on(async { agent.prompt("weather?").max_turns(4).await });
            black_box(out.expect("the prompt runs").output().len())
        });
    });
    g.finish();
}

criterion_group!(benches, tool_call_pair);
criterion_main!(benches);
