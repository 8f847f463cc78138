//! A streamed reply under the output guard: the guard does not read pieces yet, so the driver
//! holds the reply until the guard saw it whole — no byte of a detected entity reaches the
//! consumer, however the reply is cut into pieces, and what the consumer gets equals the
//! redacted reply of a non-streamed run. BLOCK ends the reply with the block message.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures_util::StreamExt as _;
use hooks_core::agent::{Agent, Model, ModelRequest};
use hooks_core::interrupt::RunOutcome;
use hooks_core::stream::{ModelDelta, ModelStream, RunEvent, StreamItem};
use hooks_core::{HookRegistry, ModelError, ModelResponse, async_trait};
use hooks_guardrails::{GuardrailAction, GuardrailConfig, GuardrailsHook};

const REPLY: &str =
    "Write to stream.marker.3391@example.com or call 415-555-2671, card 4111 1111 1111 1111.";

/// Streams `REPLY` cut every `step` bytes (on character boundaries).
struct Pieces(usize);

#[async_trait]
impl Model for Pieces {
    fn name(&self) -> &str {
        "pieces"
    }
    async fn complete(&self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        Ok(ModelResponse::text(REPLY))
    }
    fn stream<'a>(&'a self, _: ModelRequest<'a>) -> ModelStream<'a> {
        let mut items = Vec::new();
        let mut at = 0;
        while at < REPLY.len() {
            let mut end = (at + self.0).min(REPLY.len());
            while !REPLY.is_char_boundary(end) {
                end += 1;
            }
            items.push(Ok(StreamItem::Delta(ModelDelta::Text(
                REPLY[at..end].to_owned(),
            ))));
            at = end;
        }
        items.push(Ok(StreamItem::Done(ModelResponse::text(REPLY))));
        Box::pin(futures_util::stream::iter(items))
    }
}

fn registry(action: GuardrailAction) -> Arc<HookRegistry> {
    let mut config = GuardrailConfig::default();
    for rule in ["pii_email", "pii_phone", "pii_credit_card"] {
        config = config.with_action(rule, action);
    }
    let registry = HookRegistry::new()
        .with(GuardrailsHook::new(config).unwrap())
        .unwrap();
    assert!(!registry.streams_live());
    Arc::new(registry)
}

fn agent(step: usize, registry: &Arc<HookRegistry>) -> Agent {
    Agent::builder("a", Pieces(step))
        .registry(Arc::clone(registry))
        .build()
        .unwrap()
}

#[tokio::test]
async fn no_piece_of_an_entity_reaches_the_consumer_and_the_text_equals_the_unstreamed_one() {
    let redact = registry(GuardrailAction::Redact);
    let unstreamed = agent(7, &redact).run("hi").await.unwrap().answer;
    assert!(unstreamed.contains("[REDACTED_EMAIL]"), "{unstreamed}");
    for step in [1, 2, 3, 5, 8, 13, 40, 200] {
        let events: Vec<RunEvent> = agent(step, &redact).run_stream("hi", 4).collect().await;
        let seen: String = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(seen, unstreamed, "step {step}");
        let everything = format!("{events:?}");
        for marker in ["stream.marker", "3391", "555-2671", "4111"] {
            assert!(
                !everything.contains(marker),
                "{marker} streamed at step {step}"
            );
        }
    }
}

#[tokio::test]
async fn block_ends_the_reply_with_the_block_message() {
    let events: Vec<RunEvent> = agent(5, &registry(GuardrailAction::Block))
        .run_stream("hi", 4)
        .collect()
        .await;
    let everything = format!("{events:?}");
    assert!(!everything.contains("stream.marker"), "{everything}");
    let Some(RunEvent::Finished(result)) = events.last() else {
        panic!()
    };
    let blocked = match result.as_ref() {
        Ok(RunOutcome::Completed(out)) => out.answer.clone(),
        Err(f) => f.error.to_string(),
        Ok(other) => panic!("{other:?}"),
    };
    assert!(!blocked.contains("stream.marker"), "{blocked}");
}
