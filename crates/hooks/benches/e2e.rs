//! The whole stack.
//!
//! - `e2e/runs/{1,100,10000}`: runs per second at each concurrency (every provider on one
//!   registry, a scripted model without delays, real tools, three parallel tool calls a run),
//!   on a 2-worker tokio runtime; criterion's throughput is in runs.
//! - `e2e/tool_call_pair`: one before+after tool call through the Python original's benchmark
//!   stack — LoggingHook at a disabled level, GuardrailsHook with its default config,
//!   ModelRetryHook, NoOpTelemetryHook — with `{"query": "weather in Paris", "limit": 5}` and a
//!   200-character result without PII.
//! - `stream/delta/{full_stack,live}`: a streamed reply of 1 000 pieces through
//!   `Agent::run_stream`, per piece (criterion's throughput is in pieces): with the whole stack
//!   (its output guard holds the reply until it is complete, so the pieces go through the
//!   delta hooks — telemetry counts them — and the consumer gets the guarded text at once),
//!   and live (logging, telemetry and a delta-rewriting provider; every piece reaches the
//!   consumer).
//! - Before them: the peak memory per in-flight run, with 10 000 runs in flight at once
//!   (printed, from the process's peak RSS; Linux only).

#[path = "../tests/common/mod.rs"]
mod common;

use hooks_core::test_util::ready;
use std::hint::black_box;
use std::sync::Arc;

use common::{LoadModel, agent, prompt, stack_discarding};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use hooks::guardrails::{GuardrailConfig, GuardrailsHook};
use hooks::logging::LoggingHook;
use hooks::otel::NoOpTelemetryHook;
use hooks::retry::ModelRetryHook;
use hooks::{AfterToolCallEvent, BeforeToolCallEvent, HookRegistry, RunId};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn run_many(a: &Arc<hooks::agent::Agent>, n: u64) {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let a = a.clone();
            tokio::spawn(async move { a.run(prompt(i)).await.map(|o| o.answer.len()) })
        })
        .collect();
    for h in handles {
        let _ = black_box(h.await);
    }
}

fn runs(c: &mut Criterion) {
    let rt = runtime();
    let s = stack_discarding();
    let mut model = LoadModel::new(0);
    model.empty_first = false;
    let a = Arc::new(agent(&s, Arc::new(model)));
    let mut g = c.benchmark_group("e2e/runs");
    for n in [1u64, 100, 10_000] {
        g.throughput(Throughput::Elements(n));
        if n == 10_000 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| rt.block_on(run_many(&a, n)))
        });
    }
    g.finish();
}

fn tool_call_pair(c: &mut Criterion) {
    let mut registry = HookRegistry::new();
    registry.add(LoggingHook::new()).expect("fresh registry");
    registry
        .add(GuardrailsHook::new(GuardrailConfig::default()).expect("default config"))
        .expect("fresh names");
    registry.add(ModelRetryHook::new()).expect("fresh name");
    registry.add(NoOpTelemetryHook::new()).expect("fresh name");
    let run_id = RunId::new("run-bench");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let result: String = "The forecast for Paris: mostly sunny, light wind from the west, highs around 21 degrees \
                          and lows near 12. Rain is unlikely before the weekend; humidity stays moderate all week. "
        .chars()
        .cycle()
        .take(200)
        .collect();
    let result = result.as_str();
    // Built once, like the run and the arguments: the loop measures dispatch, not setup.
    let ext = hooks_core::Extensions::new();
    let call = hooks_core::ToolCall::new("c1", "search", args.clone());
    let ran = hooks_core::ToolOutcome::Ran;
    c.bench_function("e2e/tool_call_pair", |b| {
        b.iter(|| {
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
                result.to_owned(),
            )
            .with_duration(Default::default());
            ready(registry.after_tool_call(&mut after)).expect("no error");
            black_box(after.result().len())
        })
    });
}

/// Peak memory per in-flight run: 10 000 runs in flight at once (each waits on the model),
/// measured from the process's peak resident set.
fn memory_report() {
    let status = |key: &str| -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = s.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let rt = runtime();
    let s = stack_discarding();
    let a = Arc::new(agent(&s, Arc::new(LoadModel::new(20_000))));
    // Warm up (allocator pools, lazy DFA caches), then reset the peak.
    rt.block_on(run_many(&a, 1_000));
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (Some(base), true) = (
        status("VmRSS:"),
        std::path::Path::new("/proc/self/status").exists(),
    ) else {
        eprintln!("e2e/memory: /proc is not available; skipped");
        return;
    };
    let n = 10_000u64;
    let t0 = std::time::Instant::now();
    rt.block_on(run_many(&a, n));
    let took = t0.elapsed();
    let peak = status("VmHWM:").unwrap_or(base);
    println!(
        "e2e/memory: {n} runs in flight at once: peak RSS +{} KiB over {} KiB baseline = {:.1} KiB per in-flight run ({:.0} runs/s with 0-20 ms model delays)",
        peak.saturating_sub(base),
        base,
        peak.saturating_sub(base) as f64 / n as f64,
        n as f64 / took.as_secs_f64()
    );
}

/// Streams 1 000 pieces of "token ".
struct Pieces;

#[hooks::async_trait]
impl hooks::agent::Model for Pieces {
    fn name(&self) -> &str {
        "pieces"
    }
    async fn complete(
        &self,
        _: hooks::agent::ModelRequest<'_>,
    ) -> Result<hooks::ModelResponse, hooks::ModelError> {
        Ok(hooks::ModelResponse::text("token ".repeat(1000)))
    }
    fn stream<'a>(&'a self, _: hooks::agent::ModelRequest<'a>) -> hooks::stream::ModelStream<'a> {
        use hooks::stream::{ModelDelta, StreamItem};
        let items = (0..1000)
            .map(|_| Ok(StreamItem::Delta(ModelDelta::Text("token ".to_owned()))))
            .chain([Ok(StreamItem::Done(hooks::ModelResponse::text(
                "token ".repeat(1000),
            )))]);
        Box::pin(futures_util::stream::iter(items))
    }
}

/// Rewrites nothing, but reads every piece (a provider that subscribes to deltas).
struct ReadsPieces;

#[hooks::async_trait]
impl hooks::HookProvider for ReadsPieces {
    fn hooks(&self) -> hooks::HookSet {
        hooks::HookSet::MODEL_DELTA
    }
    async fn on_model_delta(
        &self,
        e: &mut hooks::ModelDeltaEvent<'_>,
    ) -> Result<(), hooks::HookError> {
        black_box(e.delta().text().len());
        Ok(())
    }
}

fn stream_delta(c: &mut Criterion) {
    use futures_util::StreamExt as _;
    let rt = runtime();
    let s = stack_discarding();
    let full = hooks::agent::Agent::builder("stream", Pieces)
        .registry(s.registry.clone())
        .build()
        .expect("an agent");
    let mut live = HookRegistry::new();
    live.add(LoggingHook::new()).expect("fresh registry");
    live.add(s.telemetry.hook().build()).expect("fresh name");
    live.add(ReadsPieces).expect("fresh name");
    assert!(live.streams_live());
    let live = hooks::agent::Agent::builder("stream", Pieces)
        .registry(Arc::new(live))
        .build()
        .expect("an agent");
    let mut g = c.benchmark_group("stream/delta");
    g.throughput(Throughput::Elements(1000));
    for (name, agent) in [("full_stack", &full), ("live", &live)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let n = agent.run_stream("go", 64).count().await;
                    black_box(n)
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, tool_call_pair, runs, stream_delta);

fn main() {
    memory_report();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
