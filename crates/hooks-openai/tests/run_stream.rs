//! `Agent::run_stream` over `OpenAiModel` against an in-test SSE server on 127.0.0.1 that
//! writes its replies one byte at a time: text and tool-call pieces split anywhere, a stream
//! cut off midway, and a retry after a partial stream.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use hooks_core::agent::{Agent, FnTool};
use hooks_core::http::HttpConfig;
use hooks_core::interrupt::RunOutcome;
use hooks_core::stream::RunEvent;
use hooks_core::{
    AfterModelCallEvent, HookError, HookProvider, HookRegistry, HookSet, ToolSpec, async_trait,
};
use hooks_openai::OpenAiModel;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    json!({"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
}

fn sse(events: &[String], done: bool) -> Vec<u8> {
    let mut body = String::new();
    for e in events {
        body.push_str("data: ");
        body.push_str(e);
        body.push_str("\n\n");
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body.into_bytes()
}

/// A server on loopback answering each connection with the next body, written one byte at a
/// time (no content length: the body ends when the connection closes); counts connections.
async fn byte_server(bodies: Vec<Vec<u8>>) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let served = Arc::new(Mutex::new(0));
    let count = Arc::clone(&served);
    tokio::spawn(async move {
        for body in bodies {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            sock.set_nodelay(true).unwrap();
            *count.lock().unwrap() += 1;
            // Read the request: headers, then the body its length names.
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = sock.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
                if let Some(end) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&req[..end]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                    if req.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            sock.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            )
            .await
            .unwrap();
            for b in body {
                if sock.write_all(&[b]).await.is_err() {
                    break;
                }
                sock.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
            let _ = sock.shutdown().await;
        }
    });
    (url, served)
}

fn agent(url: &str, registry: HookRegistry, calls: &Arc<Mutex<Vec<Value>>>) -> Agent {
    let model = OpenAiModel::builder("m")
        .with_base_url(url)
        .with_timeout(Duration::from_secs(20))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let calls = Arc::clone(calls);
    Agent::builder("streamer", model)
        .registry(Arc::new(registry))
        .tool(FnTool::new(
            ToolSpec::new("weather", "Weather", json!({"type": "object"})),
            move |args| {
                calls.lock().unwrap().push(Value::Object(args.clone()));
                Ok("sunny".to_owned())
            },
        ))
        .build()
        .unwrap()
}

fn texts(events: &[RunEvent]) -> Vec<(u32, u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Text {
                iteration,
                attempt,
                text,
            } => Some((*iteration, *attempt, text.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn tool_call_pieces_split_at_every_byte_assemble_and_the_run_streams_to_its_answer() {
    let first = sse(
        &[
            chunk(
                &json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "weather", "arguments": "{\"city\": \"Ro"}}]}),
                None,
            ),
            chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"arguments": "me\"}"}}]}),
                None,
            ),
            chunk(&json!({}), Some("tool_calls")),
        ],
        true,
    );
    let second = sse(
        &[
            chunk(&json!({"content": "It is "}), None),
            chunk(&json!({"content": "sunny in Rome."}), None),
            chunk(&json!({}), Some("stop")),
        ],
        true,
    );
    let (url, _) = byte_server(vec![first, second]).await;
    let calls = Arc::default();
    let agent = agent(&url, HookRegistry::new(), &calls);
    let events: Vec<RunEvent> = agent.run_stream("Weather in Rome?", 8).collect().await;
    assert_eq!(calls.lock().unwrap().as_slice(), [json!({"city": "Rome"})]);
    let pieces: String = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolCallDelta { delta, .. } => Some(delta.text().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces, "{\"city\": \"Rome\"}");
    let text: String = texts(&events).into_iter().map(|t| t.2).collect();
    assert_eq!(text, "It is sunny in Rome.");
    let Some(RunEvent::Finished(result)) = events.last() else {
        panic!()
    };
    let Ok(RunOutcome::Completed(out)) = result.as_ref() else {
        panic!("{result:?}")
    };
    assert_eq!(out.answer, "It is sunny in Rome.");
}

/// Retries a model call that failed (once).
struct RetryFailures;

#[async_trait]
impl HookProvider for RetryFailures {
    fn hooks(&self) -> HookSet {
        HookSet::AFTER_MODEL_CALL
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        if e.error().is_some() && e.attempt() == 0 {
            e.request_retry();
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_retracted_and_retried() {
    // The first reply stops after some text without [DONE]; the retry answers in full.
    let cut = sse(&[chunk(&json!({"content": "The answer is"}), None)], false);
    let whole = sse(
        &[
            chunk(&json!({"content": "42"}), None),
            chunk(&json!({}), Some("stop")),
        ],
        true,
    );
    let (url, served) = byte_server(vec![cut, whole]).await;
    let calls = Arc::default();
    let registry = HookRegistry::new().with(RetryFailures).unwrap();
    let agent = agent(&url, registry, &calls);
    let events: Vec<RunEvent> = agent.run_stream("?", 8).collect().await;
    let t = texts(&events);
    assert_eq!(t.first().map(|x| x.1), Some(0), "{events:?}");
    let retracted = events
        .iter()
        .position(|e| matches!(e, RunEvent::Retracted { attempt: 0, .. }))
        .expect("the cut-off attempt is retracted");
    let after: String = t
        .iter()
        .filter(|x| x.1 == 1)
        .map(|x| x.2.as_str())
        .collect();
    assert_eq!(after, "42");
    let first_retry_text = events
        .iter()
        .position(|e| matches!(e, RunEvent::Text { attempt: 1, .. }))
        .unwrap();
    assert!(retracted < first_retry_text);
    let Some(RunEvent::Finished(result)) = events.last() else {
        panic!()
    };
    assert!(matches!(result.as_ref(), Ok(RunOutcome::Completed(o)) if o.answer == "42"));
    assert_eq!(*served.lock().unwrap(), 2);
}
