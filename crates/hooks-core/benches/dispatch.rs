//! Dispatch cost: `dispatch/before_tool_call/{0,1,8,32}` (N subscribed no-op providers),
//! `dispatch/after_tool_call/8`, and `dispatch/unsubscribed/32` (32 providers that declare no
//! tool hooks).

use hooks_core::test_util::ready;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hooks_core::{
    AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry, HookSet, RunId,
};
use serde_json::json;

struct Noop {
    name: String,
    hooks: HookSet,
}

impl HookProvider for Noop {
    fn name(&self) -> &str {
        &self.name
    }
    fn hooks(&self) -> HookSet {
        self.hooks
    }
}

fn registry(n: usize, hooks: HookSet) -> HookRegistry {
    let mut r = HookRegistry::new();
    for i in 0..n {
        r.add(Noop {
            name: format!("p{i}"),
            hooks,
        })
        .expect("unique names");
    }
    r
}

fn dispatch(c: &mut Criterion) {
    let run_id = RunId::new("run-bench");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let mut g = c.benchmark_group("dispatch");
    for n in [0usize, 1, 8, 32] {
        let r = registry(n, HookSet::TOOL_CALL);
        let ev_ext = hooks_core::Extensions::new();
        let ev_call = hooks_core::ToolCall::new("c1", "search", args.clone());
        let mut ev = BeforeToolCallEvent::new(
            hooks_core::EventContext::new(&run_id, &ev_ext)
                .with_iteration(1)
                .with_attempt(0),
            &ev_call,
        );
        g.bench_with_input(BenchmarkId::new("before_tool_call", n), &n, |b, _| {
            b.iter(|| ready(r.before_tool_call(black_box(&mut ev))))
        });
    }
    let r = registry(8, HookSet::TOOL_CALL);
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "search", serde_json::Value::Null);
    let ev_outcome = hooks_core::ToolOutcome::Ran;
    let mut ev = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&run_id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
        &args,
        &ev_outcome,
        "sunny".to_owned(),
    )
    .with_duration(Default::default());
    g.bench_with_input(BenchmarkId::new("after_tool_call", 8), &8, |b, _| {
        b.iter(|| ready(r.after_tool_call(black_box(&mut ev))))
    });
    let r = registry(32, HookSet::MODEL_CALL);
    let ev_ext = hooks_core::Extensions::new();
    let ev_call = hooks_core::ToolCall::new("c1", "search", args.clone());
    let mut ev = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&run_id, &ev_ext)
            .with_iteration(1)
            .with_attempt(0),
        &ev_call,
    );
    g.bench_with_input(BenchmarkId::new("unsubscribed", 32), &32, |b, _| {
        b.iter(|| ready(r.before_tool_call(black_box(&mut ev))))
    });
    g.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
