//! Load: 10 000 concurrent runs on a multi-thread runtime share one registry with every
//! provider. Zero crosstalk: each run's spans form its own tree, each retry budget and
//! steering context is its own, and each final state matches a sequential replay.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{LoadModel, agent, prompt, stack};
use hooks::otel::opentelemetry::trace::SpanId;
use hooks::{AgentState, Role};
use serde_json::Value;

const RUNS: u64 = 10_000;

/// What must be identical between a concurrent run and its sequential replay.
fn normalized(state: &AgentState) -> Value {
    let messages: Vec<Value> = state
        .messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "role": m.role.as_str(),
                "content": m.content,
                "tool_calls": m.tool_calls.iter().map(|c| serde_json::json!([c.id, c.name, c.arguments])).collect::<Vec<_>>(),
                "tool_call_id": m.tool_call_id,
                "automated": m.automated,
            })
        })
        .collect();
    let tools: Vec<Value> = state
        .tool_executions
        .iter()
        .map(|t| {
            serde_json::json!([
                t.tool_call_id,
                t.tool_name,
                t.arguments,
                t.result,
                t.error,
                t.cancelled,
                t.attempts
            ])
        })
        .collect();
    serde_json::json!({"iteration": state.iteration, "messages": messages, "tools": tools, "errors": state.errors})
}

#[test]
fn ten_thousand_concurrent_runs_share_one_registry_without_crosstalk() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s = stack();
    let model = Arc::new(LoadModel::new(2_000));
    let agent = Arc::new(agent(&s, model.clone()));
    let outs: Vec<(u64, hooks::agent::RunOutput)> = rt.block_on(async {
        let handles: Vec<_> = (0..RUNS)
            .map(|i| {
                let a = agent.clone();
                tokio::spawn(async move { (i, a.run(prompt(i)).await.unwrap()) })
            })
            .collect();
        let mut outs = Vec::with_capacity(handles.len());
        for h in handles {
            outs.push(h.await.unwrap());
        }
        outs
    });
    assert_eq!(outs.len() as u64, RUNS);

    // Retry budgets: one empty reply per run, one retry per run, never shared.
    assert_eq!(s.retry.stats().retries_total, RUNS);
    assert_eq!(s.retry.stats().exhausted, 0);
    for (i, out) in &outs {
        assert_eq!(
            model.calls(&out.state.run_id),
            3,
            "run {i}: empty, (retried:) tools, answer"
        );
        assert_eq!(out.answer, format!("run {i}: sum {}", 1000 + 2 * i));
        // Guardrails redacted this run's own address, nobody else's.
        let first = &out
            .state
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .unwrap()
            .content;
        assert_eq!(
            first,
            &format!("Please add numbers for [REDACTED_EMAIL], request #{i}")
        );
        // Steering: three decisions, all about this run's calls.
        let d = s.steering.decisions_for(&out.state.run_id);
        assert_eq!(d.len(), 3, "run {i}");
        let ids: Vec<String> = d.iter().map(|d| d.tool_call_id.clone().unwrap()).collect();
        for id in [
            format!("add-{i}"),
            format!("lookup-{i}"),
            format!("note-{i}"),
        ] {
            assert!(ids.contains(&id), "run {i}: {ids:?}");
        }
        assert_eq!(
            out.state.tool_executions[2].cancelled.as_deref(),
            Some("Steering blocked: do not send notes [rule judge]")
        );
    }

    // Spans: each run one trace of 9 spans (invoke, 2 iterations, 3 chats, 3 tools), every
    // parent inside the same trace, the root naming the run.
    let spans = s.spans.spans();
    assert_eq!(spans.len() as u64, RUNS * 9);
    let mut traces: HashMap<_, Vec<_>> = HashMap::new();
    for sp in &spans {
        traces
            .entry(sp.span_context.trace_id())
            .or_default()
            .push(sp);
    }
    assert_eq!(traces.len() as u64, RUNS);
    let runs: HashMap<&str, u64> = outs
        .iter()
        .map(|(i, o)| (o.state.run_id.as_str(), *i))
        .collect();
    for tree in traces.values() {
        assert_eq!(tree.len(), 9);
        let ids: HashMap<SpanId, _> = tree
            .iter()
            .map(|s| (s.span_context.span_id(), *s))
            .collect();
        let roots: Vec<_> = tree
            .iter()
            .filter(|s| s.parent_span_id == SpanId::INVALID)
            .collect();
        assert_eq!(roots.len(), 1);
        let conv = roots[0]
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == "gen_ai.conversation.id")
            .map(|kv| kv.value.to_string())
            .unwrap();
        assert!(runs.contains_key(conv.as_str()));
        for sp in tree {
            if sp.parent_span_id != SpanId::INVALID {
                assert!(
                    ids.contains_key(&sp.parent_span_id),
                    "a span's parent is in another trace"
                );
            }
        }
    }

    // A sequential replay on a fresh stack ends every run in the same state.
    let replay = stack();
    let replay_model = Arc::new(LoadModel::new(0));
    let replay_agent = common::agent(&replay, replay_model);
    rt.block_on(async {
        for (i, out) in &outs {
            let again = replay_agent.run(prompt(*i)).await.unwrap();
            assert_eq!(normalized(&again.state), normalized(&out.state), "run {i}");
        }
    });
}
