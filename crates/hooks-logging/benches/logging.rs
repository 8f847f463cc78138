//! `logging/tool_call_pair`: one before+after tool call through a `LoggingHook`, with the level
//! disabled (no subscriber) and enabled into a sink (a `fmt` subscriber writing to `io::sink`).

use hooks_core::test_util::ready;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hooks_core::{AfterToolCallEvent, BeforeToolCallEvent, HookRegistry, RunId};
use hooks_logging::LoggingHook;
use serde_json::json;

fn pair(c: &mut Criterion) {
    let registry = HookRegistry::new()
        .with(LoggingHook::new())
        .expect("one hook");
    let run_id = RunId::new("run-bench");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let result = "x".repeat(200);
    // Built once, like the run and the arguments: the loop measures dispatch, not setup.
    let ext = hooks_core::Extensions::new();
    let call = hooks_core::ToolCall::new("c1", "search", args.clone());
    let ran = hooks_core::ToolOutcome::Ran;
    let mut once = || {
        let mut before = BeforeToolCallEvent::new(
            hooks_core::EventContext::new(&run_id, &ext)
                .with_iteration(1)
                .with_attempt(0),
            &call,
        );
        ready(registry.before_tool_call(&mut before)).expect("no error");
        let mut after = AfterToolCallEvent::new(
            hooks_core::EventContext::new(&run_id, &ext)
                .with_iteration(1)
                .with_attempt(0),
            &call,
            &args,
            &ran,
            result.clone(),
        )
        .with_duration(Default::default());
        ready(registry.after_tool_call(&mut after)).expect("no error");
        black_box(after.result().len())
    };
    let mut g = c.benchmark_group("logging/tool_call_pair");
    g.bench_function("disabled", |b| b.iter(&mut once));
    let sink = tracing_subscriber::fmt()
        .with_writer(std::io::sink)
        .finish();
    tracing::subscriber::with_default(sink, || {
        g.bench_function("enabled_into_sink", |b| b.iter(&mut once));
    });
    g.finish();
}

criterion_group!(benches, pair);
criterion_main!(benches);
