//! ModelRetryHook: an empty reply and a rate limit, retried with backoff (honouring
//! retry-after). Run with `cargo run --example retry`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hooks::agent::Agent;
use hooks::retry::{Jitter, ModelRetryHook};
use hooks::test_util::ScriptedModel;
use hooks::{HookRegistry, ModelError, ModelResponse};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let retry = Arc::new(
        ModelRetryHook::builder()
            .with_initial_delay(Duration::from_millis(100))
            .with_jitter(Jitter::Proportional(0.1))
            .build()?,
    );
    let mut registry = HookRegistry::new();
    registry.add(retry.clone())?;
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::text("")),
        Err(ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(250)),
        }),
        Err(ModelError::Server {
            status: Some(503),
            message: "overloaded".into(),
        }),
        Ok(ModelResponse::text("Third time lucky.")),
    ]);
    let agent = Agent::builder("retry-demo", model)
        .registry(Arc::new(registry))
        .build()?;
    let t0 = Instant::now();
    let out = agent.run("Hello?").await?;
    let s = retry.stats();
    println!(
        "answer {:?} after {:?}: {} retries (empty {}, rate limited {}, server {})",
        out.answer,
        t0.elapsed(),
        s.retries_total,
        s.empty,
        s.rate_limited,
        s.server
    );
    Ok(())
}
