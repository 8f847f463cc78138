//! ModelRetryHook and ToolRetryHook on tokio's paused clock: exact delays, retry-after, budget,
//! exhaustion, concurrent runs, the loop's own bound, and cancellation.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool, Model, ModelRequest, ToolError};
use hooks_core::{
    HookProvider, HookRegistry, ModelError, ModelResponse, RetryTarget, RunError, RunId, ToolCall,
    ToolSpec, async_trait,
};
use hooks_retry::{Jitter, ModelRetryHook, OnExhausted, ToolRetryHook};
use serde_json::json;
use tokio::time::Instant;

type Step = Result<ModelResponse, ModelError>;

/// Plays a script per run and records when (on the paused clock) each call came.
struct TimedModel {
    script: HashMap<String, Vec<Step>>,
    default: Vec<Step>,
    calls: Mutex<HashMap<RunId, Vec<Instant>>>,
}

impl TimedModel {
    fn new(default: Vec<Step>) -> Self {
        Self {
            script: HashMap::new(),
            default,
            calls: Mutex::default(),
        }
    }
    fn with_run(mut self, prompt: &str, steps: Vec<Step>) -> Self {
        self.script.insert(prompt.to_owned(), steps);
        self
    }
    fn gaps(&self, run: &RunId) -> Vec<f64> {
        let calls = self.calls.lock().unwrap();
        let t = &calls[run];
        t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect()
    }
    fn count(&self, run: &RunId) -> usize {
        self.calls.lock().unwrap().get(run).map_or(0, Vec::len)
    }
}

#[async_trait]
impl Model for TimedModel {
    fn name(&self) -> &str {
        "timed"
    }
    async fn complete(&self, r: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let mut calls = self.calls.lock().unwrap();
        let list = calls.entry(r.run_id.clone()).or_default();
        list.push(Instant::now());
        let n = list.len() - 1;
        let prompt = r
            .messages
            .iter()
            .find(|m| !m.automated)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let script = self.script.get(&prompt).unwrap_or(&self.default);
        script
            .get(n)
            .cloned()
            .unwrap_or_else(|| Ok(ModelResponse::text("fallback")))
    }
}

fn empty() -> Step {
    Ok(ModelResponse::text(""))
}
fn ok(t: &str) -> Step {
    Ok(ModelResponse::text(t))
}
fn limited(after: Option<f64>) -> Step {
    Err(ModelError::RateLimited {
        retry_after: after.map(Duration::from_secs_f64),
    })
}

fn agent(model: Arc<TimedModel>, hooks: Vec<Arc<dyn HookProvider>>, loop_retries: u32) -> Agent {
    Agent::builder("retry-test", model)
        .registry(Arc::new(HookRegistry::from_providers(hooks).unwrap()))
        .max_retries(loop_retries)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn default_delays_are_1_2_4_seconds() {
    let model = Arc::new(TimedModel::new(vec![
        empty(),
        empty(),
        empty(),
        ok("finally"),
    ]));
    let hook = Arc::new(ModelRetryHook::new());
    let out = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(out.answer, "finally");
    assert_eq!(model.gaps(&out.state.run_id), [1.0, 2.0, 4.0]);
    let s = hook.stats();
    assert_eq!((s.retries_total, s.empty, s.exhausted), (3, 3, 0));
    assert_eq!(
        hook.calls_in_flight(),
        0,
        "nothing is left behind after the run"
    );
}

#[tokio::test(start_paused = true)]
async fn half_second_times_three_capped_at_four() {
    let mut steps: Vec<Step> = (0..6)
        .map(|_| {
            Err(ModelError::Server {
                status: Some(503),
                message: "busy".into(),
            })
        })
        .collect();
    steps.push(ok("up"));
    let model = Arc::new(TimedModel::new(steps));
    let hook = Arc::new(
        ModelRetryHook::builder()
            .with_max_retries(6)
            .with_initial_delay(Duration::from_millis(500))
            .with_backoff_factor(3.0)
            .with_max_delay(Duration::from_secs(4))
            .build()
            .unwrap(),
    );
    let out = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(
        model.gaps(&out.state.run_id),
        [0.5, 1.5, 4.0, 4.0, 4.0, 4.0]
    );
    assert_eq!(hook.stats().server, 6);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_and_timeouts_are_retried() {
    let model = Arc::new(TimedModel::new(vec![
        limited(Some(7.5)),
        Err(ModelError::Timeout(Duration::from_secs(30))),
        ok("ok"),
    ]));
    let hook = Arc::new(ModelRetryHook::new());
    let out = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(model.gaps(&out.state.run_id), [7.5, 2.0]);
    let s = hook.stats();
    assert_eq!((s.rate_limited, s.timeout), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn non_retryable_errors_and_whitespace_replies_are_not_retried() {
    let model = Arc::new(TimedModel::new(vec![Err(ModelError::Other(
        "bad request".into(),
    ))]));
    let hook = Arc::new(ModelRetryHook::new());
    let err = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap_err();
    assert!(matches!(
        err.error,
        RunError::Model {
            error: ModelError::Other(_),
            attempts: 1
        }
    ));
    let model = Arc::new(TimedModel::new(vec![ok("  ")]));
    let out = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(out.answer, "  ");
    assert_eq!(hook.stats().retries_total, 0);
}

#[tokio::test(start_paused = true)]
async fn jitter_keeps_delays_within_bounds() {
    let model = Arc::new(TimedModel::new(vec![empty(), empty(), empty(), ok("x")]));
    let hook = Arc::new(
        ModelRetryHook::builder()
            .with_jitter(Jitter::Full)
            .build()
            .unwrap(),
    );
    let out = agent(model.clone(), vec![hook], 10).run("q").await.unwrap();
    for (gap, max) in model
        .gaps(&out.state.run_id)
        .into_iter()
        .zip([1.0, 2.0, 4.0])
    {
        assert!((0.0..=max).contains(&gap), "{gap} > {max}");
    }
}

#[tokio::test(start_paused = true)]
async fn exhaustion_on_empty_replies_fails_the_run_naming_the_hook() {
    let model = Arc::new(TimedModel::new((0..10).map(|_| empty()).collect()));
    let hook = Arc::new(ModelRetryHook::new());
    let err = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'ModelRetryHook' failed in on_after_model_call: the model returned an empty response after 4 attempt(s) (3 retries allowed); check the prompt or the model, or set OnExhausted::Accept"
    );
    assert_eq!(model.count(&err.state.run_id), 4);
    assert_eq!(hook.stats().exhausted, 1);

    let accept = Arc::new(
        ModelRetryHook::builder()
            .with_on_exhausted(OnExhausted::Accept)
            .build()
            .unwrap(),
    );
    let out = agent(model, vec![accept.clone()], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(out.answer, "");
    assert_eq!(accept.stats().exhausted, 1);
}

#[tokio::test(start_paused = true)]
async fn exhaustion_on_errors_ends_the_run_with_the_model_error() {
    let model = Arc::new(TimedModel::new((0..10).map(|_| limited(None)).collect()));
    let hook = Arc::new(ModelRetryHook::new());
    let err = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.error,
            RunError::Model {
                error: ModelError::RateLimited { .. },
                attempts: 4
            }
        ),
        "{:?}",
        err.error
    );
    assert_eq!(hook.stats().exhausted, 1);
}

#[tokio::test(start_paused = true)]
async fn the_total_budget_stops_retries_early() {
    let model = Arc::new(TimedModel::new(vec![
        limited(Some(3.0)),
        limited(Some(3.0)),
        limited(Some(3.0)),
        ok("late"),
    ]));
    let hook = Arc::new(
        ModelRetryHook::builder()
            .with_total_budget(Duration::from_secs(5))
            .build()
            .unwrap(),
    );
    let err = agent(model.clone(), vec![hook.clone()], 10)
        .run("q")
        .await
        .unwrap_err();
    assert_eq!(
        model.count(&err.state.run_id),
        2,
        "3 s + 3 s would pass the 5 s budget"
    );
    assert_eq!(hook.stats().exhausted, 1);
}

#[tokio::test(start_paused = true)]
async fn the_loops_own_bound_caps_the_hook() {
    let model = Arc::new(TimedModel::new((0..10).map(|_| empty()).collect()));
    let hook = Arc::new(
        ModelRetryHook::builder()
            .with_max_retries(5)
            .build()
            .unwrap(),
    );
    let err = agent(model.clone(), vec![hook], 2)
        .run("q")
        .await
        .unwrap_err();
    assert!(matches!(
        err.error,
        RunError::RetriesExhausted {
            target: RetryTarget::Model { iteration: 1 },
            attempts: 3
        }
    ));
    assert_eq!(model.count(&err.state.run_id), 3);
}

#[tokio::test(start_paused = true)]
async fn two_concurrent_runs_never_share_a_budget() {
    // Run A fails three times before it works; run B answers at once while A waits.
    let model = Arc::new(
        TimedModel::new(vec![])
            .with_run(
                "A",
                vec![limited(None), limited(None), limited(None), ok("A done")],
            )
            .with_run("B", vec![ok("B done")]),
    );
    let hook = Arc::new(ModelRetryHook::new());
    let a = Arc::new(agent(model.clone(), vec![hook.clone()], 10));
    let (ra, rb) = tokio::join!(a.run("A"), async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        a.run("B").await
    });
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.answer, "A done");
    assert_eq!(rb.answer, "B done");
    assert_eq!(
        model.gaps(&ra.state.run_id),
        [1.0, 2.0, 4.0],
        "B's success did not reset A's count"
    );
    assert_eq!(hook.stats().rate_limited, 3);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_during_a_backoff_sleep_stops_it_at_once() {
    let model = Arc::new(TimedModel::new(vec![limited(Some(60.0)), ok("never")]));
    let hook = Arc::new(ModelRetryHook::new());
    let a = agent(model.clone(), vec![hook.clone()], 10);
    let start = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(1), a.run("q")).await;
    assert!(r.is_err());
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    tokio::time::sleep(Duration::from_secs(120)).await;
    let calls: usize = model.calls.lock().unwrap().values().map(Vec::len).sum();
    assert_eq!(calls, 1, "the model is never called again");
    assert_eq!(
        hook.calls_in_flight(),
        0,
        "the cancelled call left no state behind"
    );
}

#[tokio::test(start_paused = true)]
async fn tool_retry_retries_transient_errors_with_backoff() {
    let fails = Arc::new(AtomicUsize::new(2));
    let times = Arc::new(Mutex::new(Vec::new()));
    let (f, t) = (fails.clone(), times.clone());
    let flaky = FnTool::new(ToolSpec::new("fetch", "fetches", json!({})), move |_| {
        t.lock().unwrap().push(Instant::now());
        if f.load(Ordering::SeqCst) > 0 {
            f.fetch_sub(1, Ordering::SeqCst);
            return Err(ToolError::new("temporarily unavailable"));
        }
        Ok("data".into())
    });
    let model = Arc::new(TimedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "fetch",
            json!({}),
        )])),
        ok("done"),
    ]));
    let hook = Arc::new(
        ToolRetryHook::builder(|_, e| e.contains("temporarily"))
            .build()
            .unwrap(),
    );
    let a = Agent::builder("t", model)
        .tool(flaky)
        .registry(Arc::new(
            HookRegistry::from_providers(vec![hook.clone() as Arc<dyn HookProvider>]).unwrap(),
        ))
        .build()
        .unwrap();
    let out = a.run("go").await.unwrap();
    assert_eq!(out.state.tool_executions[0].attempts, 3);
    assert_eq!(out.state.tool_executions[0].result, "data");
    let t = times.lock().unwrap();
    let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
    assert_eq!(gaps, [1.0, 2.0]);
    assert_eq!(hook.retries_total(), 2);
}

#[tokio::test(start_paused = true)]
async fn tool_retry_ignores_permanent_errors_and_reports_exhaustion() {
    let always = FnTool::new(ToolSpec::new("fetch", "fetches", json!({})), |_| {
        Err(ToolError::new("temporarily unavailable"))
    });
    let permanent = FnTool::new(ToolSpec::new("parse", "parses", json!({})), |_| {
        Err(ToolError::new("invalid input"))
    });
    let model = Arc::new(TimedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("c1", "fetch", json!({})),
            ToolCall::new("c2", "parse", json!({})),
        ])),
        ok("done"),
    ]));
    let hook = Arc::new(
        ToolRetryHook::builder(|_, e| e.contains("temporarily"))
            .with_max_retries(2)
            .build()
            .unwrap(),
    );
    let a = Agent::builder("t", model)
        .tool(always)
        .tool(permanent)
        .registry(Arc::new(
            HookRegistry::from_providers(vec![hook.clone() as Arc<dyn HookProvider>]).unwrap(),
        ))
        .build()
        .unwrap();
    let out = a.run("go").await.unwrap();
    assert_eq!(out.state.tool_executions[0].attempts, 3);
    assert_eq!(out.state.tool_executions[1].attempts, 1);
    assert_eq!(hook.exhausted_total(), 1);
    assert_eq!(
        out.retries_exhausted.len(),
        0,
        "the hook stopped asking: the loop's bound was not hit"
    );
}

#[test]
fn bad_configs_are_errors_at_construction() {
    let err = ModelRetryHook::builder()
        .with_backoff_factor(0.0)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "backoff_factor must be a finite number of at least 1, got 0"
    );
    assert!(
        ToolRetryHook::builder(|_, _| true)
            .with_initial_delay(Duration::from_secs(99))
            .build()
            .is_err()
    );
}

#[tokio::test(start_paused = true)]
async fn hostile_retry_after_hints_are_clamped_never_overflow_and_never_outwait_the_budget() {
    // Duration::MAX and a hint longer than the budget: exhaustion at once, no sleep, no panic.
    for hint in [Duration::MAX, Duration::from_secs(301)] {
        let model = Arc::new(TimedModel::new(vec![
            Err(ModelError::RateLimited {
                retry_after: Some(hint),
            }),
            ok("never"),
        ]));
        let hook = Arc::new(ModelRetryHook::new());
        let started = Instant::now();
        let err = agent(model.clone(), vec![hook.clone()], 10)
            .run("q")
            .await
            .unwrap_err();
        assert_eq!(model.count(&err.state.run_id), 1, "{hint:?}");
        assert_eq!(hook.stats().exhausted, 1, "{hint:?}");
        assert!(started.elapsed() < Duration::from_secs(1), "{hint:?}");
        assert!(err.to_string().contains("rate limited"), "{err}");
    }
    // Zero: retried at once.
    let model = Arc::new(TimedModel::new(vec![
        Err(ModelError::RateLimited {
            retry_after: Some(Duration::ZERO),
        }),
        ok("ok"),
    ]));
    let out = agent(model.clone(), vec![Arc::new(ModelRetryHook::new())], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(model.gaps(&out.state.run_id), [0.0]);
    // Without a budget, a huge hint is cut to MAX_SERVER_HINT rather than slept for ever.
    let model = Arc::new(TimedModel::new(vec![
        Err(ModelError::RateLimited {
            retry_after: Some(Duration::MAX),
        }),
        ok("ok"),
    ]));
    let hook = ModelRetryHook::builder()
        .with_total_budget(None)
        .build()
        .unwrap();
    let out = agent(model.clone(), vec![Arc::new(hook)], 10)
        .run("q")
        .await
        .unwrap();
    assert_eq!(
        model.gaps(&out.state.run_id),
        [hooks_retry::MAX_SERVER_HINT.as_secs_f64()]
    );
}
