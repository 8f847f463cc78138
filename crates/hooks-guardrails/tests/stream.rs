//! A streamed reply under the output guard: text is released `HOLD_BACK` bytes behind the
//! model, redacted — no byte of a detected entity reaches the consumer, however the reply is
//! cut into pieces, and what the consumer gets equals the redacted reply of a non-streamed
//! run (over the dev sets, cut at random). BLOCK ends the reply with the block message.

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
    // The guard reads the pieces: the reply streams.
    assert!(registry.streams_live());
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
        let seen = streamed(&events);
        assert_eq!(seen, unstreamed, "step {step}");
        let everything = debug_without_run_noise(&events);
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

/// The events as `Debug` shows them, with the run's random parts (its id, its timestamps)
/// masked: a short marker such as `4111` turns up in a random hex id or a nanosecond count
/// about once in 500 runs.
fn debug_without_run_noise(events: &[RunEvent]) -> String {
    let noise = regex::Regex::new(r"run-[0-9a-f-]+|tv_n?sec: \d+").unwrap();
    noise
        .replace_all(&format!("{events:?}"), "<run noise>")
        .into_owned()
}

#[test]
fn run_noise_is_masked_and_nothing_else() {
    let masked = debug_without_run_noise(&[RunEvent::Text {
        iteration: 0,
        attempt: 0,
        text: "run-4111aa tv_nsec: 41110 card 4111".into(),
    }]);
    assert_eq!(masked.matches("4111").count(), 1, "{masked}");
}

/// Streams a given reply in pieces of the given sizes (cycled), on character boundaries.
struct Cut {
    reply: String,
    sizes: Vec<usize>,
}

#[async_trait]
impl Model for Cut {
    fn name(&self) -> &str {
        "cut"
    }
    async fn complete(&self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        Ok(ModelResponse::text(self.reply.clone()))
    }
    fn stream<'a>(&'a self, _: ModelRequest<'a>) -> ModelStream<'a> {
        let mut items = Vec::new();
        let (mut at, mut i) = (0, 0);
        while at < self.reply.len() {
            let mut end = (at + self.sizes[i % self.sizes.len()]).min(self.reply.len());
            while !self.reply.is_char_boundary(end) {
                end += 1;
            }
            items.push(Ok(StreamItem::Delta(ModelDelta::Text(
                self.reply[at..end].to_owned(),
            ))));
            at = end;
            i += 1;
        }
        items.push(Ok(StreamItem::Done(ModelResponse::text(
            self.reply.clone(),
        ))));
        Box::pin(futures_util::stream::iter(items))
    }
}

/// What the consumer ends up showing: the streamed text, or a correction of it.
fn shown(events: &[RunEvent]) -> (String, bool) {
    let mut text = String::new();
    let mut corrected = false;
    for e in events {
        match e {
            RunEvent::Text { text: t, .. } => text.push_str(t),
            RunEvent::Corrected { text: t, .. } => {
                text = t.clone();
                corrected = true;
            }
            _ => {}
        }
    }
    (text, corrected)
}

#[tokio::test]
async fn over_the_dev_sets_cut_at_random_the_stream_equals_the_guarded_reply() {
    let config = redact_all();
    let guard = Arc::new(GuardrailsHook::new(config).unwrap());
    let registry = Arc::new(HookRegistry::new().with(Arc::clone(&guard)).unwrap());
    let detector = hooks_guardrails::PiiDetector::new();
    let mut texts: Vec<String> = Vec::new();
    for data in [
        include_str!("data/pii-dev.jsonl"),
        include_str!("data/pii-field-dev.jsonl"),
    ] {
        for line in data.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            texts.push(v["text"].as_str().unwrap().to_owned());
        }
    }
    // Replies of many records each (several KiB: the hold-back window moves through them).
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut replies, mut corrected, mut released_early) = (0, 0, 0);
    for chunk in texts.chunks(25) {
        let reply = chunk.join("\n");
        let sizes: Vec<usize> = (0..8).map(|_| 1 + (next() % 40) as usize).collect();
        let events = stream_cut(&registry, reply.clone(), sizes).await;
        let Some(RunEvent::Finished(result)) = events.last() else {
            panic!()
        };
        let Ok(RunOutcome::Completed(out)) = result.as_ref() else {
            panic!("{result:?}")
        };
        // Nothing the detector finds in the reply streamed before the correction, if any.
        let streamed = streamed(&events);
        for d in detector.detect(&reply) {
            let value = &reply[d.start..d.end];
            assert!(
                value.len() < 6 || !streamed.contains(value),
                "{} {value:?} streamed",
                d.entity.label()
            );
        }
        let (seen, was_corrected) = shown(&events);
        assert_eq!(seen, out.answer);
        let pieces = events
            .iter()
            .filter(|e| matches!(e, RunEvent::Text { .. }))
            .count();
        released_early += usize::from(pieces > 1);
        replies += 1;
        corrected += usize::from(was_corrected);
    }
    assert!(replies >= 50);
    // The window moved: text was released while the model was still writing.
    assert!(
        released_early * 2 > replies,
        "{released_early} of {replies}"
    );
    assert_eq!(
        corrected, 0,
        "{corrected} of {replies} replies needed a correction"
    );
}

#[tokio::test]
async fn invisible_padding_and_labels_far_to_the_left_leak_nothing() {
    // Found by a review: the window was counted in raw bytes and the left context was 64
    // bytes, so zero-width padding stretched a card past the window, and a label (or a CSV
    // header) the whole-reply scan reads was out of the windowed scan's sight.
    let config = redact_all();
    let registry = Arc::new(
        HookRegistry::new()
            .with(GuardrailsHook::new(config).unwrap())
            .unwrap(),
    );
    let z = |n: usize| "\u{200B}".repeat(n);
    let filler = |n: usize| "lorem ipsum dolor sit amet ".repeat(n / 27 + 1);
    let mut csv = String::from("id,name,ssn\n");
    for i in 0..60u32 {
        csv.push_str(&format!("{i},person{i},{}\n", 219_091_000 + i));
    }
    let cases: Vec<(String, Vec<&str>)> = vec![
        (format!("SSN:{} 219099999 ", z(100)), vec!["219099999"]),
        (
            format!("ＳＳＮ{}219099999 ", "\u{3000}".repeat(25)),
            vec!["219099999"],
        ),
        (
            format!("Teléfono:{} 739 89 48 95 ", z(100)),
            vec!["739 89", "48 95"],
        ),
        (
            format!("Ｔｅｌ：{}739 89 48 95 ", "\u{3000}".repeat(25)),
            vec!["739 89", "48 95"],
        ),
        (
            format!(
                "aws_secret_access_key ={} wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ",
                z(100)
            ),
            vec!["wJalrXUtnFEMI"],
        ),
        (
            csv,
            vec!["21909101", "21909102", "21909103", "21909104", "21909105"],
        ),
        (
            format!("card 4111{} 1111{} 1111{} 1111 ", z(200), z(200), z(200)),
            vec!["4111"],
        ),
        (format!("card 4111 1111 1111{} 1111 ", z(400)), vec!["4111"]),
        // Credentials whose context is a word, a URL or a long token run before the value.
        (
            format!("Authorization: Bearer{} tK9mQ2vX7pL4wZ8rB3nY6cH1 ", z(100)),
            vec!["tK9mQ2vX7pL4wZ8r"],
        ),
        (
            format!(
                "Authorization: Bearer 7Zq{} ",
                "tK9mQ2vX7pL4wZ8r".repeat(200)
            ),
            vec!["tK9mQ2vX7pL4wZ8r"],
        ),
        (
            format!(
                "DATABASE_URL=postgres://app:Qm7v{}X2pL9rT4wZ8k@db:5432/orders ",
                z(150)
            ),
            vec!["X2pL9rT4wZ8k"],
        ),
    ];
    for (body, markers) in &cases {
        for off in (0..320).step_by(32) {
            for size in [5, 64] {
                let reply = format!(
                    "{}{}{body}{}",
                    filler(100),
                    "a ".repeat(off / 2),
                    filler(2500)
                );
                let events = stream_cut(&registry, reply, vec![size]).await;
                let streamed = streamed(&events).replace(['\u{200B}', '\u{3000}'], "");
                for m in markers {
                    assert!(
                        !streamed.contains(m),
                        "{m:?} streamed (offset {off}, pieces of {size})"
                    );
                }
                let (seen, _) = shown(&events);
                let Some(RunEvent::Finished(result)) = events.last() else {
                    panic!()
                };
                let Ok(RunOutcome::Completed(out)) = result.as_ref() else {
                    panic!()
                };
                assert_eq!(seen, out.answer);
            }
        }
    }
}

#[tokio::test]
async fn a_block_value_freed_by_redaction_never_streams_and_the_reply_is_blocked() {
    // Found by a review: a card glued to an SSN is found only once the SSN's placeholder
    // frees it; under BLOCK the later pass released it verbatim (streamed), and the whole
    // reply's guard redacted it instead of blocking the reply.
    let mut config = redact_all();
    config = config.with_action("pii_credit_card", GuardrailAction::Block);
    let registry = Arc::new(
        HookRegistry::new()
            .with(GuardrailsHook::new(config).unwrap())
            .unwrap(),
    );
    let filler = |n: usize| "lorem ipsum dolor sit amet ".repeat(n / 27 + 1);
    for glued in [
        "id 123-45-67894111111111111111 end",
        "ssn 123.45.67895500000000000004 end",
    ] {
        let reply = format!("{}{glued} {}", filler(1500), filler(2000));
        let whole = Agent::builder(
            "a",
            Cut {
                reply: reply.clone(),
                sizes: vec![8],
            },
        )
        .registry(Arc::clone(&registry))
        .build()
        .unwrap()
        .run("hi")
        .await
        .unwrap()
        .answer;
        assert!(
            whole.starts_with("Response blocked by guardrails"),
            "{whole}"
        );
        let events = stream_cut(&registry, reply, vec![8]).await;
        let everything = format!("{events:?}");
        for digits in ["4111111111111111", "5500000000000004"] {
            assert!(!everything.contains(digits), "{digits} streamed");
        }
        let (seen, _) = shown(&events);
        assert_eq!(seen, whole);
    }
}

/// Puts U+034F (a combining grapheme joiner) after every character of every piece.
struct Joiner;

#[async_trait]
impl hooks_core::HookProvider for Joiner {
    fn priority(&self) -> hooks_core::HookPriority {
        hooks_core::HookPriority::SECURITY_MIN
    }
    fn hooks(&self) -> hooks_core::HookSet {
        hooks_core::HookSet::MODEL_DELTA
    }
    async fn on_model_delta(
        &self,
        e: &mut hooks_core::ModelDeltaEvent<'_>,
    ) -> Result<(), hooks_core::HookError> {
        let joined: String = e
            .delta()
            .text()
            .chars()
            .flat_map(|c| [c, '\u{034F}'])
            .collect();
        e.set_text(joined);
        Ok(())
    }
}

#[tokio::test]
async fn the_guard_reads_the_pieces_before_any_other_provider() {
    // Found by a review: a delta provider at a lower priority number than the guard's read
    // the raw pieces and, by inserting joiners, kept the guard from recognising them.
    let config = redact_all();
    let registry = Arc::new(
        HookRegistry::new()
            .with(Joiner)
            .unwrap()
            .with(GuardrailsHook::new(config).unwrap())
            .unwrap(),
    );
    let filler = |n: usize| "lorem ipsum dolor sit amet ".repeat(n / 27 + 1);
    let reply = format!(
        "{}mail erin.pre@example.com card 4111 1111 1111 1111 ssn 123-45-6789 {}",
        filler(1500),
        filler(2500)
    );
    for size in [1, 3, 8] {
        let events = stream_cut(&registry, reply.clone(), vec![size]).await;
        let streamed = streamed(&events).replace('\u{034F}', "");
        for value in ["erin.pre@example.com", "4111 1111", "123-45-6789"] {
            assert!(
                !streamed.contains(value),
                "{value} streamed in pieces of {size}"
            );
        }
    }
}

#[tokio::test]
async fn a_glued_run_of_tokens_streams_as_a_placeholder_never_in_part() {
    // Found while testing the streamed fail-closed pass: a GitLab token glued to more of the
    // same was cut at the pattern's 64-character cap, and the rest — starting mid-token, so
    // no later pass found it — streamed as written. The whole run is the secret now.
    let registry = Arc::new(
        HookRegistry::new()
            .with(GuardrailsHook::new(redact_all()).unwrap())
            .unwrap(),
    );
    let chain = "glpat-h9dcuyTMzt".repeat(12 * hooks_guardrails::MAX_REDACTION_PASSES);
    for sizes in [vec![7], vec![64], vec![4096]] {
        let reply = format!("Here you go: {chain} and that is all.");
        let events = stream_cut(&registry, reply, sizes.clone()).await;
        let text = streamed(&events);
        assert!(!text.contains("glpat-"), "{sizes:?}: {text}");
        assert!(text.contains("[REDACTED"), "{sizes:?}: {text}");
    }
}

/// Every PII entity on REDACT.
fn redact_all() -> GuardrailConfig {
    let mut config = GuardrailConfig::default();
    for e in hooks_guardrails::Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    config
}

/// Streams `reply` through `registry`, cut into pieces of `sizes` (cycled); every event.
async fn stream_cut(
    registry: &Arc<HookRegistry>,
    reply: String,
    sizes: Vec<usize>,
) -> Vec<RunEvent> {
    Agent::builder("a", Cut { reply, sizes })
        .registry(Arc::clone(registry))
        .build()
        .unwrap()
        .run_stream("hi", 8)
        .collect()
        .await
}

/// The text that streamed, before any correction.
fn streamed(events: &[RunEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
