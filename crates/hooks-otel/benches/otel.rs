//! `otel/tool_call_pair`: what the hook adds per tool call (before + after, span and metrics)
//! with the batch exporter sending OTLP to a receiver on loopback.

use hooks_core::test_util::ready;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hooks_core::{
    AfterToolCallEvent, AgentState, BeforeInvocationEvent, BeforeToolCallEvent, HookRegistry,
};
use hooks_otel::OtlpSetup;
use hooks_otel::testing::OtlpReceiver;
use serde_json::json;

fn pair(c: &mut Criterion) {
    let receiver = OtlpReceiver::start().expect("loopback receiver");
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .expect("OTLP setup");
    let registry = HookRegistry::new()
        .with(guard.hook().build())
        .expect("one hook");
    let state = AgentState::new("bench");
    let run_id = state.run_id.clone();
    ready(registry.before_invocation(&mut BeforeInvocationEvent::new(state))).expect("no error");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let result = "x".repeat(200);
    let mut n = 0u64;
    let ext = hooks_core::Extensions::new();
    let ran = hooks_core::ToolOutcome::Ran;
    c.bench_function("otel/tool_call_pair", |b| {
        b.iter(|| {
            n += 1;
            // A fresh call id each time, as spans are keyed by it.
            let call = hooks_core::ToolCall::new(format!("call-{n}"), "search", args.clone());
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
        })
    });
    let _ = guard.shutdown();
}

criterion_group!(benches, pair);
criterion_main!(benches);
