//! The whole-stack workload shared by the load test and the e2e bench: one registry with every
//! provider, a scripted model with optional random small delays, and real tools.

#![allow(dead_code, unreachable_pub, missing_docs, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks::agent::{Agent, FnTool, Model, ModelRequest, ToolError};
use hooks::guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};
use hooks::logging::LoggingHook;
use hooks::otel::{SpanCollector, TelemetryGuard};
use hooks::retry::ModelRetryHook;
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};
use hooks::{HookRegistry, ModelError, ModelResponse, RunId, ToolCall, ToolSpec, async_trait};
use serde_json::{Value, json};

/// Per run: an empty reply (the retry hook retries), three parallel tool calls, an answer.
pub struct LoadModel {
    pub max_delay_us: u64,
    pub empty_first: bool,
    calls: Mutex<HashMap<RunId, u32>>,
    pub total_calls: AtomicU64,
}

impl LoadModel {
    pub fn new(max_delay_us: u64) -> Self {
        Self {
            max_delay_us,
            empty_first: true,
            calls: Mutex::default(),
            total_calls: AtomicU64::new(0),
        }
    }

    pub fn calls(&self, run: &RunId) -> u32 {
        self.calls.lock().unwrap().get(run).copied().unwrap_or(0)
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

#[async_trait]
impl Model for LoadModel {
    fn name(&self) -> &str {
        "load-model"
    }

    async fn complete(&self, r: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let c = calls.entry(r.run_id.clone()).or_insert(0);
            *c += 1;
            *c
        };
        self.total_calls.fetch_add(1, Ordering::Relaxed);
        let prompt = r
            .messages
            .iter()
            .find(|m| !m.automated)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let i: u64 = prompt
            .rsplit('#')
            .next()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if self.max_delay_us > 0 {
            let d = mix(i * 31 + u64::from(n)) % self.max_delay_us;
            tokio::time::sleep(Duration::from_micros(d)).await;
        }
        let n = if self.empty_first { n } else { n + 1 };
        Ok(match n {
            1 => ModelResponse::text(""),
            2 => ModelResponse::tool_calls(vec![
                ToolCall::new(format!("add-{i}"), "add", json!({"a": i, "b": 1000 + i})),
                ToolCall::new(
                    format!("lookup-{i}"),
                    "lookup",
                    json!({"key": format!("k{}", i % 7)}),
                ),
                ToolCall::new(
                    format!("note-{i}"),
                    "send_note",
                    json!({"to": "ops", "text": format!("run {i}")}),
                ),
            ]),
            _ => {
                let sum = r
                    .messages
                    .iter()
                    .find(|m| m.tool_call_id.as_deref() == Some(&format!("add-{i}")))
                    .map(|m| m.content.clone())
                    .unwrap_or_default();
                ModelResponse::text(format!("run {i}: sum {sum}"))
            }
        })
    }
}

pub struct Stack {
    pub registry: Arc<HookRegistry>,
    pub retry: Arc<ModelRetryHook>,
    pub steering: Arc<SteeringHook>,
    pub guard: Arc<GuardrailsHook>,
    pub spans: SpanCollector,
    pub telemetry: TelemetryGuard,
}

pub fn stack() -> Stack {
    let spans = SpanCollector::new();
    stack_with(spans.clone(), TelemetryGuard::with_simple_exporter(spans))
}

/// The stack with spans dropped after export (for benches that run forever).
pub fn stack_discarding() -> Stack {
    stack_with(
        SpanCollector::new(),
        TelemetryGuard::with_batch_exporter(Discard),
    )
}

/// Drops what it is given.
#[derive(Debug)]
pub struct Discard;

impl hooks::otel::opentelemetry_sdk::trace::SpanExporter for Discard {
    async fn export(
        &self,
        _: Vec<hooks::otel::opentelemetry_sdk::trace::SpanData>,
    ) -> hooks::otel::opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

fn stack_with(spans: SpanCollector, telemetry: TelemetryGuard) -> Stack {
    let mut registry = HookRegistry::new();
    let guard = std::sync::Arc::new(
        GuardrailsHook::new(
            GuardrailConfig::default().with_action("pii_email", GuardrailAction::Redact),
        )
        .unwrap(),
    );
    registry.add(guard.clone()).unwrap();
    registry.add(LoggingHook::new()).unwrap();
    registry.add(telemetry.hook().build()).unwrap();
    let retry = Arc::new(
        ModelRetryHook::builder()
            .with_initial_delay(Duration::from_micros(100))
            .build()
            .unwrap(),
    );
    registry.add(retry.clone()).unwrap();
    let steering = Arc::new(
        SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed).rule(
            "send_",
            SteeringAction::Guide,
            "do not send notes",
        ))
        // Decisions are kept bounded (10 000 by default); keep all of the load test's.
        .with_max_decisions(100_000)
        .build(),
    );
    registry.add(steering.clone()).unwrap();
    Stack {
        registry: Arc::new(registry),
        retry,
        steering,
        guard,
        spans,
        telemetry,
    }
}

pub fn agent(stack: &Stack, model: Arc<LoadModel>) -> Agent {
    let add = FnTool::new(ToolSpec::new("add", "adds a and b", json!({})), |a| {
        let n = |k: &str| {
            a.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| ToolError::new(format!("'{k}' must be a number")))
        };
        Ok((n("a")? + n("b")?).to_string())
    });
    let lookup = FnTool::new(ToolSpec::new("lookup", "looks a key up", json!({})), |a| {
        Ok(format!(
            "value of {}",
            a.get("key").and_then(Value::as_str).unwrap_or("?")
        ))
    });
    let note = FnTool::new(
        ToolSpec::new("send_note", "sends a note", json!({})),
        |_| Ok("sent".into()),
    );
    Agent::builder("load", model)
        .tool(add)
        .tool(lookup)
        .tool(note)
        .registry(stack.registry.clone())
        .build()
        .unwrap()
}

pub fn prompt(i: u64) -> String {
    format!("Please add numbers for user{i}@example.com, request #{i}")
}
