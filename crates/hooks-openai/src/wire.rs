//! The chat-completions wire format: request bodies, responses, error mapping.

use std::time::Duration;

use hooks_core::agent::ModelRequest;
use hooks_core::text::preview;
use hooks_core::{
    FinishReason, Message, ModelError, ModelResponse, ResponseFormat, Role, TokenUsage, ToolCall,
    ToolChoice,
};
use serde_json::{Map, Value, json};

use crate::scrub::Scrub;

/// The most tool calls one reply may ask for.
pub(crate) const MAX_TOOL_CALLS: usize = 1024;

/// Put before the text of every message the loop wrote on a hook's behalf (retry feedback),
/// so the model can see it did not come from the user.
pub const AUTOMATED_PREFIX: &str = "[Automated feedback — not from the user] ";

/// How long a provider error message may be in a [`ModelError`].
const MAX_ERROR_CHARS: usize = 500;

pub(crate) fn request_body(model: &str, r: &ModelRequest<'_>, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert(
        "messages".into(),
        Value::Array(r.messages.iter().map(message).collect()),
    );
    if !r.tools.is_empty() {
        body.insert(
            "tools".into(),
            r.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect(),
        );
    }
    let o = r.options;
    if let Some(choice) = &o.tool_choice {
        let v = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            _ => json!("auto"),
        };
        body.insert("tool_choice".into(), v);
    }
    if let Some(p) = o.parallel_tool_calls
        && !r.tools.is_empty()
    {
        body.insert("parallel_tool_calls".into(), p.into());
    }
    if let Some(t) = o.temperature {
        body.insert("temperature".into(), f64::from(t).into());
    }
    if let Some(p) = o.top_p {
        body.insert("top_p".into(), f64::from(p).into());
    }
    if let Some(n) = o.max_tokens {
        body.insert("max_tokens".into(), n.into());
    }
    if !o.stop.is_empty() {
        body.insert("stop".into(), o.stop.clone().into());
    }
    if let Some(seed) = o.seed {
        body.insert("seed".into(), seed.into());
    }
    if let Some(f) = &o.response_format {
        let v = match f {
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema {
                name,
                schema,
                strict,
            } => json!({"type": "json_schema", "json_schema": {
                "name": name, "schema": schema, "strict": strict}}),
            _ => json!({"type": "text"}),
        };
        body.insert("response_format".into(), v);
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    // Provider fields pass through, but never override what the request itself says.
    for (k, v) in &o.extra {
        body.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(body)
}

fn message(m: &Message) -> Value {
    let content = if m.automated {
        format!("{AUTOMATED_PREFIX}{}", m.content)
    } else {
        m.content.clone()
    };
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    // Arguments that were not JSON reached us as a string: send back what the
                    // model wrote, so it sees its own mistake.
                    let arguments = match &c.arguments {
                        Value::String(raw) => raw.clone(),
                        v => v.to_string(),
                    };
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = if content.is_empty() {
                Value::Null
            } else {
                content.into()
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
            "content": content,
        }),
        role => json!({"role": role.as_str(), "content": content}),
    }
}

/// The JSON `arguments` string of a tool call: parsed when it is JSON (empty means `{}`),
/// else kept as a string, which the loop answers with an error result for that call.
pub(crate) fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

pub(crate) fn usage(v: &Value) -> Option<TokenUsage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(TokenUsage::new(n("prompt_tokens"), n("completion_tokens")))
}

/// A non-streaming response body.
pub(crate) fn response(body: &[u8], scrub: &Scrub) -> Result<ModelResponse, ModelError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ModelError::Other(format!(
            "the server's response is not JSON ({e}); is the base URL an OpenAI-compatible API?"
        ))
    })?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(error_object(&v, err, scrub));
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ModelError::Other("the response has no choices[0]".to_owned()))?;
    let msg = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| ModelError::Other("the response has no choices[0].message".to_owned()))?;
    let content = match msg.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // Content parts: keep the text ones.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => {
            return Err(ModelError::Other(format!(
                "choices[0].message.content is {}, not text",
                hooks_core::json::kind_name(other)
            )));
        }
    };
    let mut calls = Vec::new();
    if let Some(list) = msg.get("tool_calls").and_then(Value::as_array) {
        if list.len() > MAX_TOOL_CALLS {
            return Err(ModelError::Other(format!(
                "the reply asks for {} tool calls; at most {MAX_TOOL_CALLS} are accepted",
                list.len()
            )));
        }
        for (i, c) in list.iter().enumerate() {
            if !c.is_object() {
                return Err(ModelError::Other(format!(
                    "choices[0].message.tool_calls[{i}] is {}, not a tool call",
                    hooks_core::json::kind_name(c)
                )));
            }
            let f = c.get("function");
            let name = f
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let raw = match f.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => arguments(s),
                // Some servers send the object itself.
                Some(v @ Value::Object(_)) => v.clone(),
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(v) => Value::String(v.to_string()),
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_owned);
            calls.push(ToolCall::new(id, name, raw));
        }
    }
    let finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(FinishReason::from_provider)
        .unwrap_or(if calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
    let mut out = ModelResponse::text(content).with_finish_reason(finish);
    out.message = out.message.with_tool_calls(calls);
    if let Some(u) = usage(&v) {
        out = out.with_usage(u);
    }
    if let Some(m) = v.get("model").and_then(Value::as_str) {
        out = out.with_model(m);
    }
    Ok(out)
}

/// The provider's own words from an `error` object (or string), scrubbed of secrets.
fn error_text(err: &Value, scrub: &Scrub) -> String {
    let text = match err {
        Value::String(s) => s.clone(),
        _ => err
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| err.to_string(), str::to_owned),
    };
    preview(&scrub.clean(text.trim()), MAX_ERROR_CHARS).into_owned()
}

/// An `error` object in a 200 body or a stream event: a context overflow is its own kind,
/// anything else a server error.
pub(crate) fn error_object(body: &Value, err: &Value, scrub: &Scrub) -> ModelError {
    let message = error_text(err, scrub);
    if is_context_length(body, &message) {
        ModelError::ContextLength { message }
    } else {
        ModelError::Server {
            status: None,
            message,
        }
    }
}

/// True when a provider's error says the conversation does not fit the context window.
fn is_context_length(body: &Value, text: &str) -> bool {
    let code = body
        .get("error")
        .and_then(|e| e.get("code").or_else(|| e.get("type")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if code == "context_length_exceeded" || code == "exceed_context_size_error" {
        return true;
    }
    let t = text.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "exceeds the available context",
        "exceed_context_size",
        "too many tokens",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// Maps an HTTP error status and body to a [`ModelError`].
pub(crate) fn status_error(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    scrub: &Scrub,
) -> ModelError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = match parsed.get("error") {
        Some(e) if !e.is_null() => error_text(e, scrub),
        _ => preview(
            &scrub.clean(String::from_utf8_lossy(body).trim()),
            MAX_ERROR_CHARS,
        )
        .into_owned(),
    };
    match status {
        429 => ModelError::RateLimited { retry_after },
        500..=599 => ModelError::Server {
            status: Some(status),
            message: text,
        },
        400 | 413 if is_context_length(&parsed, &text) => {
            ModelError::ContextLength { message: text }
        }
        401 | 403 => ModelError::Other(format!(
            "status {status}: {text}; check the API key (OPENAI_API_KEY) and its permissions"
        )),
        404 => ModelError::Other(format!(
            "status 404: {text}; check the base URL (it usually ends in /v1) and the model name"
        )),
        _ => ModelError::Other(format!("status {status}: {text}")),
    }
}

/// The retry hint of a throttled response: `retry-after-ms`, `Retry-After` (seconds), or the
/// later of `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens` (`1s`, `6m0s`, `20ms`).
pub(crate) fn retry_after(
    headers: &hooks_core::http::reqwest::header::HeaderMap,
) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    if let Some(s) = get("retry-after").and_then(|v| v.parse::<f64>().ok())
        && s.is_finite()
        && s >= 0.0
    {
        return Some(Duration::from_secs_f64(s.min(86_400.0)));
    }
    ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|k| get(k).and_then(go_duration))
        .max()
}

/// A Go-style duration as the rate-limit headers write it: `1s`, `6m0s`, `1h2m3.5s`, `20ms`.
fn go_duration(s: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut rest = s;
    if rest.is_empty() || rest.len() > 32 {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" | "" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += n * factor;
        rest = &rest[unit_end..];
    }
    (total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooks_core::{ModelOptions, RunId, ToolSpec};

    #[test]
    fn every_request_field_is_sent() {
        let run = RunId::new("r");
        let msgs = vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::assistant("").with_tool_calls(vec![
                ToolCall::new("c1", "search", json!({"q": "x"})),
                ToolCall::new("c2", "bad", Value::String("{oops".into())),
            ]),
            Message::tool("c1", "found"),
            Message::user("shorter please").automated(),
        ];
        let tools = vec![ToolSpec::new("search", "web", json!({"type": "object"}))];
        let opts = ModelOptions::default()
            .with_tool_choice(ToolChoice::Tool("search".into()))
            .with_temperature(0.5)
            .with_top_p(0.9)
            .with_max_tokens(64)
            .with_stop("END")
            .with_seed(7)
            .with_parallel_tool_calls(false)
            .with_response_format(ResponseFormat::json_schema("v", json!({"type": "object"})))
            .with_extra("top_k", 40)
            .with_extra("model", "must-not-override");
        let r = ModelRequest::new(&run, &msgs)
            .with_tools(&tools)
            .with_options(&opts);
        let b = request_body("m1", &r, true);
        assert_eq!(b["model"], "m1");
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"q\":\"x\"}"
        );
        assert_eq!(
            b["messages"][2]["tool_calls"][1]["function"]["arguments"],
            "{oops"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "found"})
        );
        assert_eq!(
            b["messages"][4]["content"],
            format!("{AUTOMATED_PREFIX}shorter please")
        );
        assert_eq!(b["tools"][0]["function"]["name"], "search");
        assert_eq!(b["tool_choice"]["function"]["name"], "search");
        assert_eq!(b["parallel_tool_calls"], false);
        assert_eq!(b["temperature"], 0.5);
        assert_eq!(b["max_tokens"], 64);
        assert_eq!(b["stop"], json!(["END"]));
        assert_eq!(b["seed"], 7);
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["strict"], true);
        assert_eq!(b["stream"], true);
        assert_eq!(b["top_k"], 40);
    }

    #[test]
    fn responses_parse_leniently() {
        let r = response(
            &br#"{"model":"m","choices":[{"message":{"content":null,"tool_calls":[
            {"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}},
            {"function":{"name":"g","arguments":"not json"}},
            {"id":"","function":{"name":"h","arguments":""}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":3,"completion_tokens":4}}"#[..],
            &Scrub::default(),
        )
        .unwrap();
        let c = &r.message.tool_calls;
        assert_eq!(c[0].arguments, json!({"x": 1}));
        assert_eq!(c[1].arguments, Value::String("not json".into()));
        assert_eq!(c[1].id, "call_1");
        assert_eq!(c[2].arguments, json!({}));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.usage, Some(TokenUsage::new(3, 4)));
        assert_eq!(r.model.as_deref(), Some("m"));
        for bad in [
            &b"[]"[..],
            b"{}",
            b"{\"choices\":[{}]}",
            b"<html>",
            b"",
            b"{\"choices\":[{\"message\":{\"content\":5}}]}",
        ] {
            assert!(
                response(bad, &Scrub::default()).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(
            status_error(429, Some(Duration::from_secs(2)), b"", &Scrub::default()),
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        assert!(matches!(
            status_error(503, None, br#"{"error":{"message":"overloaded"}}"#, &Scrub::default()),
            ModelError::Server { status: Some(503), ref message } if message == "overloaded"
        ));
        assert!(matches!(
            status_error(
                400,
                None,
                br#"{"error":{"code":"context_length_exceeded","message":"too long"}}"#,
                &Scrub::default()
            ),
            ModelError::ContextLength { .. }
        ));
        assert!(matches!(
            status_error(
                400,
                None,
                br#"{"error":{"message":"the request exceeds the available context size"}}"#,
                &Scrub::default()
            ),
            ModelError::ContextLength { .. }
        ));
        assert!(
            status_error(401, None, b"no", &Scrub::default())
                .to_string()
                .contains("OPENAI_API_KEY")
        );
        let long = "x".repeat(10_000);
        assert!(
            status_error(400, None, long.as_bytes(), &Scrub::default())
                .to_string()
                .len()
                < 700
        );
    }

    #[test]
    fn context_overflow_in_a_200_body_is_its_own_kind_and_truncation_reasons_are_length() {
        let e = response(
            br#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192"}}"#,
            &Scrub::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), hooks_core::ModelErrorKind::ContextLength);
        for r in ["length", "LENGTH", "max_tokens", "model_length"] {
            assert_eq!(FinishReason::from_provider(r), FinishReason::Length, "{r}");
        }
        let many = format!(
            r#"{{"choices":[{{"message":{{"tool_calls":[{}]}}}}]}}"#,
            vec!["{}"; MAX_TOOL_CALLS + 1].join(",")
        );
        assert!(response(many.as_bytes(), &Scrub::default()).is_err());
        assert!(
            response(
                br#"{"choices":[{"message":{"tool_calls":[1]}}]}"#,
                &Scrub::default()
            )
            .is_err()
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(go_duration("soon"), None);
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("1e400s"), None);
    }
}
