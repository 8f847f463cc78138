//! `OpenAiModel` against an in-test chat-completions server on 127.0.0.1 (plain HTTP and
//! HTTPS with a throwaway CA): tool calls, parallel calls, 429 with Retry-After through
//! `ModelRetryHook`, 500, malformed JSON, cut-off streams, a 10 MB body, timeouts and TLS.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hooks_core::agent::{Agent, FnTool, Model, ModelRequest};
use hooks_core::http::HttpConfig;
use hooks_core::test_util::{TestCa, TestReply, TestRequest, TestServer};
use hooks_core::{HookRegistry, Message, ModelError, ModelErrorKind, RunId, ToolSpec};
use hooks_openai::{AUTOMATED_PREFIX, OpenAiModel, StreamDelta};
use serde_json::{Value, json};

/// One step of a scripted server: a reply, or an error that echoes the request's head (as
/// some servers and proxies do) — `sse` sends it as a stream error event instead.
enum Reply {
    Send(TestReply),
    Echo { status: u16, sse: bool },
}

impl From<TestReply> for Reply {
    fn from(r: TestReply) -> Self {
        Reply::Send(r)
    }
}

fn json_reply(status: u16, extra_headers: &str, body: &Value) -> Reply {
    TestReply::json_with_headers(status, extra_headers, body).into()
}

fn raw_reply(status: u16, content_type: &str, body: &[u8]) -> Reply {
    TestReply::with(status, content_type, "", body).into()
}

fn sse_reply(events: &[String]) -> Reply {
    TestReply::sse(events).into()
}

fn text(content: &str) -> Value {
    json!({"model": "test-model", "choices": [{"message": {"role": "assistant", "content": content},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
}

/// A handler answering with `steps` in order.
fn script(steps: Vec<Reply>) -> impl Fn(&TestRequest) -> TestReply + Send + Sync + 'static {
    let steps = Mutex::new(steps.into_iter());
    move |req| match steps.lock().unwrap().next() {
        Some(Reply::Send(r)) => r,
        Some(Reply::Echo { status, sse }) => {
            let error = json!({"error": {"message": format!("bad request: {}", req.head)}});
            if sse {
                TestReply::sse(&[error.to_string()])
            } else {
                TestReply::json(status, &error)
            }
        }
        None => TestReply::json(500, &json!({"error": {"message": "script exhausted"}})),
    }
}

/// A plain-HTTP server answering with `steps`, and its API base URL (`…/v1`).
async fn http(steps: Vec<Reply>) -> (TestServer, String) {
    let s = TestServer::start(script(steps)).await;
    let url = format!("{}/v1", s.url());
    (s, url)
}

fn model(url: &str) -> OpenAiModel {
    OpenAiModel::builder("test-model")
        .with_base_url(url)
        .with_api_key("sk-test-KEYMARKER")
        .with_timeout(Duration::from_secs(10))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap()
}

/// A client without a key that streams every reply (`complete` included).
fn streaming_model(url: &str) -> OpenAiModel {
    OpenAiModel::builder("test-model")
        .with_base_url(url)
        .with_streaming(true)
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap()
}

async fn ask(m: &OpenAiModel) -> Result<hooks_core::ModelResponse, ModelError> {
    let run = RunId::new("r");
    let msgs = [Message::user("hi")];
    m.complete(ModelRequest::new(&run, &msgs)).await
}

fn tools_agent(model: OpenAiModel, registry: HookRegistry) -> Agent {
    let tool = |name: &'static str| {
        FnTool::new(
            ToolSpec::new(name, "look up", json!({"type": "object"})),
            move |args| Ok(format!("{name}:{}", args["city"].as_str().unwrap_or("?"))),
        )
    };
    Agent::builder("assistant", model)
        .tool(tool("weather"))
        .tool(tool("time"))
        .registry(Arc::new(registry))
        .build()
        .unwrap()
}

#[tokio::test]
async fn parallel_tool_calls_round_trip_through_the_agent_loop() {
    let calls = json!({"model": "test-model", "choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "time", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "c3", "type": "function", "function": {"name": "weather", "arguments": "{not json"}}
        ]}, "finish_reason": "tool_calls"}]});
    let (server, url) = http(vec![
        json_reply(200, "", &calls),
        json_reply(200, "", &text("Paris is sunny; it is noon in Oslo.")),
    ])
    .await;
    let agent = tools_agent(model(&url), HookRegistry::new());
    let out = agent
        .run("weather in Paris and time in Oslo?")
        .await
        .unwrap();
    assert_eq!(out.answer, "Paris is sunny; it is noon in Oslo.");
    let reqs: Vec<Value> = server.requests().iter().map(TestRequest::json).collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(reqs[0]["model"], "test-model");
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let tool_msgs: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs.len(), 3);
    assert_eq!(tool_msgs[0]["tool_call_id"], "c1");
    assert_eq!(tool_msgs[0]["content"], "weather:Paris");
    assert_eq!(tool_msgs[1]["content"], "time:Oslo");
    // Arguments that were not JSON: an error result for that call, the model sees why.
    let bad = tool_msgs[2]["content"].as_str().unwrap();
    assert!(bad.contains("JSON object"), "{bad}");
    // The assistant turn is sent back with its calls, the bad arguments as the model wrote them.
    let asked = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(asked["tool_calls"][2]["function"]["arguments"], "{not json");
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_by_the_retry_hook() {
    let (server, url) = http(vec![
        json_reply(
            429,
            "retry-after: 0.05\r\n",
            &json!({"error": {"message": "slow down"}}),
        ),
        json_reply(200, "", &text("done")),
    ])
    .await;
    // The client maps it…
    let (_s2, url2) = http(vec![json_reply(
        429,
        "retry-after: 2\r\n",
        &json!({"error": {"message": "slow down"}}),
    )])
    .await;
    let e = ask(&model(&url2)).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::RateLimited);
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    // …and ModelRetryHook acts on it, end to end.
    let retry = Arc::new(
        hooks_retry::ModelRetryHook::builder()
            .with_initial_delay(Duration::from_millis(1))
            .build()
            .unwrap(),
    );
    let mut registry = HookRegistry::new();
    registry.add(retry.clone()).unwrap();
    let out = tools_agent(model(&url), registry).run("hi").await.unwrap();
    assert_eq!(out.answer, "done");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(retry.stats().rate_limited, 1);
}

#[tokio::test]
async fn server_errors_bad_bodies_and_context_length_are_typed() {
    let (_s, url) = http(vec![
        json_reply(500, "", &json!({"error": {"message": "boom"}})),
        raw_reply(200, "application/json", b"{\"choices\": [tru"),
        raw_reply(200, "text/html", b"<html>gateway</html>"),
        json_reply(
            400,
            "",
            &json!({"error": {"code": "context_length_exceeded", "message": "too long"}}),
        ),
        json_reply(401, "", &json!({"error": {"message": "bad key"}})),
    ])
    .await;
    let m = model(&url);
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Server { status: Some(500), message } if message == "boom"),
        "{e:?}"
    );
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Other(m) if m.contains("not JSON")),
        "{e:?}"
    );
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Other(m) if m.contains("not JSON")),
        "{e:?}"
    );
    let e = ask(&m).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::ContextLength, "{e:?}");
    let e = ask(&m).await.unwrap_err();
    assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
    // The key itself is never in an error or the client's Debug.
    assert!(!e.to_string().contains("KEYMARKER"));
    assert!(!format!("{m:?}").contains("KEYMARKER"));
}

#[tokio::test]
async fn a_refused_connection_is_a_server_error_with_its_cause() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    drop(l);
    let e = ask(&model(&url)).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Server { status: None, message } if message.to_lowercase().contains("connect")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (_s, url) = http(vec![TestReply::Hang.into()]).await;
    let m = OpenAiModel::builder("test-model")
        .with_base_url(&url)
        .with_timeout(Duration::from_millis(300))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let e = ask(&m).await.unwrap_err();
    assert_eq!(e, ModelError::Timeout(Duration::from_millis(300)));
}

#[tokio::test]
async fn a_ten_megabyte_body_is_refused_past_the_cap_and_read_below_it() {
    let big = "x".repeat(10_000_000);
    let body = text(&big);
    let (_s, url) = http(vec![json_reply(200, "", &body), json_reply(200, "", &body)]).await;
    let e = ask(&model(&url)).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Other(m) if m.contains("cap")),
        "{e:?}"
    );
    let roomy = OpenAiModel::builder("test-model")
        .with_base_url(&url)
        .with_max_body_bytes(16 << 20)
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    assert_eq!(ask(&roomy).await.unwrap().message.content.len(), 10_000_000);
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    json!({"model": "test-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
}

#[tokio::test]
async fn streamed_replies_assemble_into_the_same_response() {
    let events = vec![
        chunk(&json!({"role": "assistant", "content": "Hel"}), None),
        ": keep-alive".to_owned(),
        chunk(&json!({"content": "lo"}), None),
        chunk(
            &json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                "function": {"name": "weather", "arguments": "{\"ci"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\":\"Rome\"}"}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}).to_string(),
        "[DONE]".to_owned(),
    ];
    let mut reply = TestReply::sse(&events);
    // The keep-alive comment is its own line, not a data event.
    if let TestReply::Raw(r) = &mut reply {
        let s = String::from_utf8(r.clone())
            .unwrap()
            .replace("data: : keep-alive", ": keep-alive");
        *r = s.into_bytes();
    }
    let (_s, url) = http(vec![reply.clone().into(), reply.into()]).await;
    let m = model(&url);
    let run = RunId::new("r");
    let msgs = [Message::user("hi")];
    let mut stream = m.stream(ModelRequest::new(&run, &msgs)).await.unwrap();
    let mut deltas = Vec::new();
    while let Some(d) = stream.next().await {
        deltas.push(d.unwrap());
    }
    assert_eq!(deltas[0], StreamDelta::Text("Hel".into()));
    assert_eq!(deltas.len(), 4, "{deltas:?}");
    let r = stream.into_response().await.unwrap();
    assert_eq!(r.message.content, "Hello");
    assert_eq!(r.message.tool_calls[0].arguments, json!({"city": "Rome"}));
    assert_eq!(r.usage.unwrap().output_tokens, 4);
    // `complete` with streaming on gives the same response.
    let streaming = streaming_model(&url);
    assert_eq!(ask(&streaming).await.unwrap(), r);
}

#[tokio::test]
async fn any_standard_sse_framing_assembles_the_same_reply() {
    // The same reply as servers frame it: one event per line with LF (as OpenAI does), with
    // CRLF or lone-CR line ends, and with an event's JSON over several `data` lines.
    let events = [
        chunk(&json!({"role": "assistant", "content": "Hel"}), None),
        chunk(&json!({"content": "lo"}), None),
        chunk(&json!({}), Some("stop")),
        "[DONE]".to_owned(),
    ];
    let framed = |nl: &str, split: bool| {
        let mut body = format!(": keep-alive{nl}{nl}");
        for e in &events {
            body.push_str("event: message");
            body.push_str(nl);
            // `{"model":…,"choices":…}` split after its first comma: two `data` lines.
            match e.split_once(',') {
                Some((a, b)) if split => {
                    body.push_str(&format!("data: {a},{nl}data: {b}{nl}{nl}"));
                }
                _ => body.push_str(&format!("data: {e}{nl}{nl}")),
            }
        }
        raw_reply(200, "text/event-stream", body.as_bytes())
    };
    let bodies = vec![
        framed("\n", false),
        framed("\r\n", false),
        framed("\r", false),
        framed("\n", true),
        framed("\r\n", true),
        framed("\r", true),
    ];
    let n = bodies.len();
    let (_s, url) = http(bodies).await;
    let m = streaming_model(&url);
    let first = ask(&m).await.unwrap();
    assert_eq!(first.message.content, "Hello");
    for i in 1..n {
        assert_eq!(ask(&m).await.unwrap(), first, "body {i}");
    }
}

#[tokio::test]
async fn a_leading_byte_order_mark_loses_no_event_and_deltas_come_before_the_error() {
    let events = [
        chunk(&json!({"role": "assistant", "content": "Hel"}), None),
        chunk(&json!({"content": "lo"}), Some("stop")),
        "[DONE]".to_owned(),
    ];
    let mut body = "\u{FEFF}".to_owned();
    for e in &events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    // Two deltas, then an event that is not JSON, in one read.
    let broken = format!(
        "data: {}\n\ndata: {}\n\ndata: {{not json\n\n",
        chunk(&json!({"content": "Hel"}), None),
        chunk(&json!({"content": "lo"}), None)
    );
    let (_s, url) = http(vec![
        raw_reply(200, "text/event-stream", body.as_bytes()),
        raw_reply(200, "text/event-stream", broken.as_bytes()),
    ])
    .await;
    let m = streaming_model(&url);
    let r = ask(&m).await.unwrap();
    assert_eq!(r.message.content, "Hello");
    let run = RunId::new("r");
    let msgs = [Message::user("hi")];
    let mut stream = m.stream(ModelRequest::new(&run, &msgs)).await.unwrap();
    let mut seen = Vec::new();
    while let Some(d) = stream.next().await {
        seen.push(d.map_err(|e| e.to_string()));
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0], Ok(StreamDelta::Text("Hel".into())));
    assert_eq!(seen[1], Ok(StreamDelta::Text("lo".into())));
    assert!(
        matches!(&seen[2], Err(e) if e.contains("not JSON")),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_cut_off_or_broken_stream_is_an_error_not_a_short_reply() {
    let cut = sse_reply(&[chunk(&json!({"content": "The answer is"}), None)]);
    let err_event = sse_reply(&[
        chunk(&json!({"content": "par"}), None),
        json!({"error": {"message": "upstream died"}}).to_string(),
    ]);
    let garbage = sse_reply(&["{not json".to_owned()]);
    let (_s, url) = http(vec![cut, err_event, garbage]).await;
    let m = streaming_model(&url);
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Server { message, .. } if message.contains("ended before")),
        "{e:?}"
    );
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Server { message, .. } if message.contains("upstream died")),
        "{e:?}"
    );
    let e = ask(&m).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Other(m) if m.contains("not JSON")),
        "{e:?}"
    );
}

#[tokio::test]
async fn retry_feedback_is_marked_as_automated_on_the_wire() {
    let (server, url) = http(vec![json_reply(200, "", &text("ok"))]).await;
    let run = RunId::new("r");
    let msgs = [
        Message::user("hi"),
        Message::assistant(""),
        Message::user("Your reply was empty; answer the question.").automated(),
    ];
    model(&url)
        .complete(ModelRequest::new(&run, &msgs))
        .await
        .unwrap();
    let req = server.requests()[0].json();
    assert_eq!(
        req["messages"][2]["content"],
        format!("{AUTOMATED_PREFIX}Your reply was empty; answer the question.")
    );
    assert_eq!(req["messages"][0]["content"], "hi");
}

#[tokio::test]
async fn https_works_with_a_trusted_custom_root_and_refuses_an_untrusted_one() {
    let ca = TestCa::new().unwrap();
    let server = TestServer::start_tls(
        ca.server_config(),
        script(vec![
            json_reply(200, "", &text("secure")),
            json_reply(200, "", &text("never")),
        ]),
    )
    .await;
    let url = format!("{}/v1", server.url());
    let trusted = OpenAiModel::builder("test-model")
        .with_base_url(&url)
        .with_http_config(
            HttpConfig::new()
                .with_root_certificate_pem(ca.ca_pem().as_bytes())
                .unwrap()
                .without_proxy(),
        )
        .build()
        .unwrap();
    assert_eq!(ask(&trusted).await.unwrap().message.content, "secure");
    let untrusted = model(&url);
    let e = ask(&untrusted).await.unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("certificate") || msg.contains("UnknownIssuer"),
        "the error should say the certificate is not trusted: {msg}"
    );
    assert_eq!(server.requests().len(), 1, "nothing was sent untrusted");
}

#[tokio::test]
async fn requests_go_through_an_explicit_proxy() {
    // The in-test server plays the proxy: a plain-HTTP request to it names the full URL.
    let (proxy, proxy_url) = http(vec![json_reply(200, "", &text("via proxy"))]).await;
    let proxy_base = proxy_url.trim_end_matches("/v1").to_owned();
    let m = OpenAiModel::builder("test-model")
        .with_base_url("http://model.invalid/v1")
        .with_http_config(HttpConfig::new().with_proxy(proxy_base).unwrap())
        .build()
        .unwrap();
    assert_eq!(ask(&m).await.unwrap().message.content, "via proxy");
    assert_eq!(proxy.requests().len(), 1);
}

#[tokio::test]
async fn credentials_in_the_base_url_are_refused_and_a_query_key_never_reaches_an_error() {
    let bad = OpenAiModel::builder("m")
        .with_base_url("http://user:pa/SS?MARKER@127.0.0.1:1/v1")
        .build()
        .unwrap_err();
    assert!(!bad.to_string().contains("MARKER"), "{bad}");
    let creds = OpenAiModel::builder("m")
        .with_base_url("http://user:PASSMARKER@127.0.0.1:1/v1")
        .with_api_key("sk-KEYMARKER-0001");
    assert!(!format!("{creds:?}").contains("MARKER"), "{creds:?}");
    let e = creds.build().unwrap_err();
    assert!(
        matches!(e, hooks_openai::Error::CredentialsInUrl { .. }),
        "{e}"
    );
    assert!(!e.to_string().contains("PASSMARKER"), "{e}");
    let bad = OpenAiModel::builder("m")
        .with_base_url("ftp://host/v1")
        .build()
        .unwrap_err();
    assert!(bad.to_string().contains("http"), "{bad}");
    assert!(matches!(
        OpenAiModel::builder("  ")
            .with_base_url("http://h/v1")
            .build(),
        Err(hooks_openai::Error::NoModel)
    ));

    // A key in the query (Azure style): the request path keeps it after /chat/completions,
    // and no error shows it.
    let (server, url) = http(vec![
        json_reply(200, "", &text("ok")),
        Reply::Echo {
            status: 500,
            sse: false,
        },
    ])
    .await;
    let m = OpenAiModel::builder("test-model")
        .with_base_url(format!("{url}?api-version=2024&key=QUERYMARKER"))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    assert!(!format!("{m:?}").contains("QUERYMARKER"));
    ask(&m).await.unwrap();
    let line = server.requests()[0].head.lines().next().unwrap().to_owned();
    assert!(
        line.starts_with("POST /v1/chat/completions?api-version=2024&key=QUERYMARKER "),
        "{line}"
    );
    let e = ask(&m).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains("QUERYMARKER"), "{e}");
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("http://{}/v1?key=QUERYMARKER", l.local_addr().unwrap());
    drop(l);
    let m = model(&refused);
    let e = ask(&m).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains("QUERYMARKER"), "{e}");
}

#[tokio::test]
async fn error_bodies_that_echo_the_request_never_carry_the_key() {
    let replies = vec![
        Reply::Echo {
            status: 400,
            sse: false,
        },
        Reply::Echo {
            status: 401,
            sse: false,
        },
        Reply::Echo {
            status: 500,
            sse: false,
        },
        Reply::Echo {
            status: 200,
            sse: false,
        },
        Reply::Echo {
            status: 200,
            sse: true,
        },
    ];
    let n = replies.len();
    let (server, url) = http(replies).await;
    let m = model(&url);
    let streaming = OpenAiModel::builder("test-model")
        .with_base_url(&url)
        .with_api_key("sk-test-KEYMARKER")
        .with_streaming(true)
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    for i in 0..n {
        let client = if i == n - 1 { &streaming } else { &m };
        let e = ask(client).await.unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("KEYMARKER"), "{shown}");
        assert!(
            shown.contains("bad request"),
            "the server's words are kept: {shown}"
        );
    }
    // The server did get the key (so the scrub had something to hide).
    assert!(server.requests()[0].head.contains("sk-test-KEYMARKER"));
}

#[tokio::test]
async fn hostile_stream_indexes_fail_and_repeated_names_are_kept_once() {
    let merged = sse_reply(&[
        chunk(
            &json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": "{}"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": -1, "function": {"name": "delete_all", "arguments": "{}"}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        "[DONE]".to_owned(),
    ]);
    let huge = sse_reply(&[
        chunk(
            &json!({"tool_calls": [{"index": 1e20, "function": {"name": "x", "arguments": "{}"}}]}),
            None,
        ),
        "[DONE]".to_owned(),
    ]);
    let repeated = sse_reply(&[
        chunk(
            &json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "get_weather", "arguments": "{\"ci"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"name": "get_weather", "arguments": "ty\":1}"}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        "[DONE]".to_owned(),
    ]);
    // An index that is a string the server wrote: its bytes stay out of the error.
    let marked = sse_reply(&[
        chunk(
            &json!({"tool_calls": [{"index": "MARKER-7f3a", "function": {"name": "x", "arguments": "{}"}}]}),
            None,
        ),
        "[DONE]".to_owned(),
    ]);
    let (_s, url) = http(vec![merged, huge, marked, repeated]).await;
    let m = streaming_model(&url);
    for _ in 0..3 {
        let e = ask(&m).await.unwrap_err();
        assert!(
            matches!(&e, ModelError::Other(m) if m.contains("index") && !m.contains("MARKER")),
            "{e:?}"
        );
    }
    let r = ask(&m).await.unwrap();
    assert_eq!(r.message.tool_calls.len(), 1);
    assert_eq!(r.message.tool_calls[0].name, "get_weather");
    assert_eq!(r.message.tool_calls[0].arguments, json!({"city": 1}));
}

#[tokio::test]
async fn an_endless_timeout_does_not_overflow() {
    let (_s, url) = http(vec![json_reply(200, "", &text("fine"))]).await;
    let m = OpenAiModel::builder("test-model")
        .with_base_url(&url)
        .with_timeout(Duration::MAX)
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    assert_eq!(ask(&m).await.unwrap().message.content, "fine");
}

#[tokio::test]
async fn echoed_query_keys_and_proxy_credentials_never_reach_an_error() {
    let (_s, url) = http(vec![
        Reply::Echo {
            status: 500,
            sse: false,
        },
        Reply::Echo {
            status: 400,
            sse: false,
        },
    ])
    .await;
    let m = OpenAiModel::builder("test-model")
        .with_base_url(format!("{url}?key=ab+PLUSSECRET&sig=QK%2FPCTSECRET"))
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let e = ask(&m).await.unwrap_err();
    let shown = format!("{e} {e:?}");
    assert!(
        !shown.contains("PLUSSECRET") && !shown.contains("PCTSECRET"),
        "{shown}"
    );
    // Through a proxy (the in-test server) that echoes what it got, Proxy-Authorization
    // included.
    let (_p, proxy_url) = http(vec![Reply::Echo {
        status: 502,
        sse: false,
    }])
    .await;
    let proxy = proxy_url
        .trim_end_matches("/v1")
        .replace("http://", "http://puser:PROXYMARKER@");
    let m = OpenAiModel::builder("test-model")
        .with_base_url("http://model.invalid/v1")
        .with_http_config(HttpConfig::new().with_proxy(proxy).unwrap())
        .build()
        .unwrap();
    let e = ask(&m).await.unwrap_err();
    let shown = format!("{e} {e:?}");
    assert!(shown.contains("bad request"), "{shown}");
    assert!(
        !shown.contains("PROXYMARKER") && !shown.contains("cHVzZXI6UFJPWFlNQVJLRVI"),
        "{shown}"
    );
}
