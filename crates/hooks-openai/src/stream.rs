//! Streaming replies: server-sent events in, deltas out, assembled into one response.

use std::collections::{BTreeMap, VecDeque};

use hooks_core::http::reqwest;
use hooks_core::{FinishReason, ModelError, ModelResponse, TokenUsage, ToolCall};
use serde_json::Value;
use tokio::time::Instant;

use crate::scrub::Scrub;
use crate::wire;

/// One piece of a streamed reply: the core's [`ModelDelta`](hooks_core::stream::ModelDelta)
/// (what [`Model::stream`](hooks_core::agent::Model::stream) yields too).
pub use hooks_core::stream::ModelDelta as StreamDelta;

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// A reply being streamed: read the deltas with [`next`](Self::next), then take the assembled
/// response with [`into_response`](Self::into_response) (which reads whatever is left). The
/// client's deadline and body cap hold for the whole stream; a stream that ends before the
/// server said it was done is an error, never a silently short reply.
pub struct ModelStream {
    response: reqwest::Response,
    deadline: Instant,
    timeout: std::time::Duration,
    max_body: usize,
    read: usize,
    events: SseFramer,
    queue: VecDeque<StreamDelta>,
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    model: Option<String>,
    done: bool,
    failed: bool,
    /// Why the stream failed, returned once the deltas read before it are out.
    error: Option<ModelError>,
    scrub: Scrub,
}

impl std::fmt::Debug for ModelStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the response: its URL may carry a key in the query.
        f.debug_struct("ModelStream")
            .field("read", &self.read)
            .field("done", &self.done)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

/// The longest line, and the longest data of one event (over several lines), accepted: past
/// it the stream is malformed.
const MAX_LINE: usize = 4 << 20;

/// What one server-sent event carries: a JSON document, or the end (`[DONE]`).
#[derive(Debug, PartialEq)]
enum Payload {
    Json(Value),
    Done,
}

/// Splits a server-sent-events body into its events' data, as the SSE standard frames them:
/// lines end with LF, CRLF or a lone CR (a CRLF split between two reads is one line end); a
/// blank line ends an event; `:` starts a comment; a field's value follows its first `:` (one
/// space after it dropped; a line without `:` is a field with an empty value); an event's
/// `data` lines are joined with LF. Other fields (`event`, `id`, `retry`) are ignored.
///
/// Lenient where servers are not: a `data` line that is a whole JSON document (or `[DONE]`)
/// on its own, with no data of its event before it, is handled at once — as every
/// OpenAI-compatible server sends them, and so also from servers that end events with a
/// single newline. Data left when the body ends is handled as a last event. An empty `data`
/// line starts no event (it would hold back every whole-JSON line after it).
#[derive(Debug, Default)]
struct SseFramer {
    /// A line was read: a byte order mark is dropped only before the first.
    past_first_line: bool,
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The last line ended with CR: an LF right after it belongs to that line end.
    after_cr: bool,
    /// The data lines of the event being read, each followed by LF.
    data: Vec<u8>,
}

impl SseFramer {
    /// Reads `chunk`, adding each complete event's payload (or why it is not one) to `out`.
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<Result<Payload, ModelError>>) {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&c| c == b'\n' || c == b'\r') {
            let line = &rest[..end];
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() {
                self.take_line(line, out);
            } else {
                let mut whole = std::mem::take(&mut self.line);
                whole.extend_from_slice(line);
                self.take_line(&whole, out);
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > MAX_LINE {
            self.line.clear();
            out.push(Err(too_long()));
        }
    }

    /// The body ended: a last line without its line end, and an event without its blank line,
    /// still count.
    fn finish(&mut self, out: &mut Vec<Result<Payload, ModelError>>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out);
        }
        self.dispatch(out);
    }

    fn take_line(&mut self, line: &[u8], out: &mut Vec<Result<Payload, ModelError>>) {
        if line.len() > MAX_LINE {
            return out.push(Err(too_long()));
        }
        let line = if self.past_first_line {
            line
        } else {
            self.past_first_line = true;
            line.strip_prefix("\u{FEFF}".as_bytes()).unwrap_or(line)
        };
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field != b"data" {
            return;
        }
        if self.data.is_empty() {
            if value.trim_ascii().is_empty() {
                return;
            }
            if value.trim_ascii() == b"[DONE]" {
                return out.push(Ok(Payload::Done));
            }
            if let Ok(v) = serde_json::from_slice::<Value>(value) {
                return out.push(Ok(Payload::Json(v)));
            }
        }
        // The event's data so far (each line followed by LF) and this line.
        if self.data.len() + value.len() > MAX_LINE {
            self.data.clear();
            return out.push(Err(too_long()));
        }
        self.data.extend_from_slice(value);
        self.data.push(b'\n');
    }

    /// A blank line (or the body's end): the event read so far, if it has data.
    fn dispatch(&mut self, out: &mut Vec<Result<Payload, ModelError>>) {
        let data = std::mem::take(&mut self.data);
        let data = data.trim_ascii();
        if data.is_empty() {
            return;
        }
        out.push(if data == b"[DONE]" {
            Ok(Payload::Done)
        } else {
            serde_json::from_slice(data)
                .map(Payload::Json)
                .map_err(|e| ModelError::Other(format!("a stream event is not JSON ({e})")))
        });
    }
}

fn too_long() -> ModelError {
    ModelError::Other(format!("a stream event is longer than {MAX_LINE} bytes"))
}

impl ModelStream {
    pub(crate) fn new(
        response: reqwest::Response,
        deadline: Instant,
        timeout: std::time::Duration,
        max_body: usize,
        scrub: Scrub,
    ) -> Self {
        Self {
            scrub,
            response,
            deadline,
            timeout,
            max_body,
            read: 0,
            events: SseFramer::default(),
            queue: VecDeque::new(),
            text: String::new(),
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
            model: None,
            done: false,
            failed: false,
            error: None,
        }
    }

    /// The next delta; `None` once the server said the reply is complete.
    ///
    /// # Errors
    /// [`ModelError::Timeout`] past the client's deadline; [`ModelError::Server`] when the
    /// connection drops or the stream ends early, or the server sends an error event;
    /// [`ModelError::Other`] for a body past the cap or an event that is not JSON.
    pub async fn next(&mut self) -> Option<Result<StreamDelta, ModelError>> {
        loop {
            // In the order the server sent them: the deltas read before an error, then the
            // error, then nothing.
            if let Some(d) = self.queue.pop_front() {
                return Some(Ok(d));
            }
            if let Some(e) = self.error.take() {
                return Some(Err(e));
            }
            if self.done || self.failed {
                return None;
            }
            if let Err(e) = self.fill().await {
                self.failed = true;
                self.error = Some(e);
            }
        }
    }

    /// Reads the rest of the stream and returns the whole reply.
    ///
    /// # Errors
    /// As [`next`](Self::next).
    pub async fn into_response(mut self) -> Result<ModelResponse, ModelError> {
        while let Some(d) = self.next().await {
            d?;
        }
        if self.failed {
            return Err(ModelError::Server {
                status: None,
                message: "the stream had already failed".to_owned(),
            });
        }
        let calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                };
                ToolCall::new(id, c.name, wire::arguments(&c.arguments))
            })
            .collect();
        let finish = self.finish.take().unwrap_or(if calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        let mut out =
            ModelResponse::text(std::mem::take(&mut self.text)).with_finish_reason(finish);
        out.message = out.message.with_tool_calls(calls);
        if let Some(u) = self.usage {
            out = out.with_usage(u);
        }
        if let Some(m) = self.model.take() {
            out = out.with_model(m);
        }
        Ok(out)
    }

    /// Reads one chunk from the connection and handles every event it completes.
    async fn fill(&mut self) -> Result<(), ModelError> {
        let chunk = match tokio::time::timeout_at(self.deadline, self.response.chunk()).await {
            Err(_) => return Err(ModelError::Timeout(self.timeout)),
            Ok(Err(e)) => {
                return Err(ModelError::Server {
                    status: None,
                    message: format!(
                        "the stream broke off: {}",
                        hooks_core::http::error_chain(&e.without_url())
                    ),
                });
            }
            Ok(Ok(c)) => c,
        };
        let mut payloads = Vec::new();
        let Some(chunk) = chunk else {
            // The connection closed. A last line without its line end, and an event without
            // its blank line, still count.
            self.events.finish(&mut payloads);
            self.take(payloads)?;
            if !self.done {
                if self.finish.is_some() {
                    // Some servers close after the finish reason without `[DONE]`.
                    self.done = true;
                    return Ok(());
                }
                return Err(ModelError::Server {
                    status: None,
                    message: "the stream ended before the reply was complete (no finish reason, no [DONE])".to_owned(),
                });
            }
            return Ok(());
        };
        self.read += chunk.len();
        if self.read > self.max_body {
            return Err(ModelError::Other(format!(
                "the streamed reply exceeds the {}-byte cap; raise it with with_max_body_bytes",
                self.max_body
            )));
        }
        self.events.feed(&chunk, &mut payloads);
        self.take(payloads)
    }

    /// Handles events in order until the end (`[DONE]`) or the first error.
    fn take(&mut self, payloads: Vec<Result<Payload, ModelError>>) -> Result<(), ModelError> {
        for p in payloads {
            if self.done {
                break;
            }
            match p? {
                Payload::Done => self.done = true,
                Payload::Json(v) => self.event(&v)?,
            }
        }
        Ok(())
    }

    /// One event's JSON: an error, or a chunk of the reply.
    fn event(&mut self, v: &Value) -> Result<(), ModelError> {
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(wire::error_object(v, err, &self.scrub));
        }
        if let Some(m) = v.get("model").and_then(Value::as_str)
            && self.model.is_none()
        {
            self.model = Some(m.to_owned());
        }
        if let Some(u) = wire::usage(v) {
            self.usage = Some(u);
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(FinishReason::from_provider(f));
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(t) = delta.get("content").and_then(Value::as_str)
            && !t.is_empty()
        {
            self.text.push_str(t);
            self.queue.push_back(StreamDelta::Text(t.to_owned()));
        }
        if let Some(list) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, c) in list.iter().enumerate() {
                // A missing index means the position; one that is there must be a small
                // whole number, or calls would silently merge.
                let index = match c.get("index") {
                    None | Some(Value::Null) => pos,
                    Some(v) => v
                        .as_u64()
                        .and_then(|i| usize::try_from(i).ok())
                        .filter(|&i| i < wire::MAX_TOOL_CALLS)
                        .ok_or_else(|| {
                            // Not the value: the server's bytes stay out of errors.
                            ModelError::Other(format!(
                                "a stream event names a tool call by an index that is not a \
                                 whole number below {}",
                                wire::MAX_TOOL_CALLS
                            ))
                        })?,
                };
                let f = c.get("function");
                let id = c.get("id").and_then(Value::as_str).map(str::to_owned);
                let name = f
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let args = f
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let p = self.calls.entry(index).or_default();
                if let Some(id) = &id {
                    p.id.clone_from(id);
                }
                // Some servers repeat the name in every piece: keep it once.
                if let Some(n) = &name
                    && *n != p.name
                {
                    p.name.push_str(n);
                }
                p.arguments.push_str(&args);
                self.queue.push_back(StreamDelta::ToolCall {
                    index,
                    id,
                    name,
                    arguments: args,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The payloads of `body` fed in pieces of `piece` bytes (then the body's end).
    fn frame(body: &[u8], piece: usize) -> Vec<Result<Payload, String>> {
        let mut framer = SseFramer::default();
        let mut out = Vec::new();
        for chunk in body.chunks(piece.max(1)) {
            framer.feed(chunk, &mut out);
        }
        framer.finish(&mut out);
        out.into_iter()
            .map(|p| p.map_err(|e| e.to_string()))
            .collect()
    }

    /// `body` framed whole and in every piece size up to 7 bytes gives `want`.
    fn check(body: &str, want: &[Result<Payload, String>]) {
        for piece in [body.len(), 1, 2, 3, 5, 7] {
            assert_eq!(
                frame(body.as_bytes(), piece),
                want,
                "{body:?} in {piece}-byte pieces"
            );
        }
    }

    fn json(v: Value) -> Result<Payload, String> {
        Ok(Payload::Json(v))
    }

    #[test]
    fn lines_end_with_lf_crlf_or_a_lone_cr() {
        let want = [
            json(json!({"a": 1})),
            json(json!({"b": 2})),
            Ok(Payload::Done),
        ];
        for nl in ["\n", "\r\n", "\r"] {
            let body =
                format!("data: {{\"a\":1}}{nl}{nl}data: {{\"b\":2}}{nl}{nl}data: [DONE]{nl}{nl}");
            check(&body, &want);
        }
        // Mixed in one body, a CRLF split between two reads included (the 1-byte pieces).
        check(
            "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\rdata: [DONE]\n\n",
            &want,
        );
    }

    #[test]
    fn an_events_data_lines_are_joined() {
        // One JSON document over three `data` lines (with CRLF), then one over two (with CR).
        let body = "data: {\"choices\":\r\ndata: [{\"delta\":\r\ndata: {\"content\":\"hi\"}}]}\r\n\r\n\
                    data:{\"x\":\rdata:2}\r\r";
        check(
            body,
            &[
                json(json!({"choices": [{"delta": {"content": "hi"}}]})),
                json(json!({"x": 2})),
            ],
        );
    }

    #[test]
    fn comments_other_fields_and_empty_events_are_not_data() {
        let body = ": keep-alive\n\nevent: message\nid: 7\nretry: 1000\ndata: {\"a\":1}\n\n\
                    data\n\nevent: ping\n\n:\n\n";
        check(body, &[json(json!({"a": 1}))]);
    }

    #[test]
    fn events_ended_by_one_newline_and_a_last_event_without_its_blank_line_count() {
        check(
            "data: {\"a\":1}\ndata: {\"b\":2}\ndata: {\"c\":3}",
            &[
                json(json!({"a": 1})),
                json(json!({"b": 2})),
                json(json!({"c": 3})),
            ],
        );
    }

    #[test]
    fn a_byte_order_mark_is_dropped_before_the_first_line_only() {
        check(
            "\u{FEFF}data: {\"a\":1}\n\n\u{FEFF}data: {\"b\":2}\n\ndata: {\"c\":3}\n\n",
            &[json(json!({"a": 1})), json(json!({"c": 3}))],
        );
    }

    #[test]
    fn an_empty_data_line_holds_back_no_event() {
        check(
            "data:\ndata: {\"a\":1}\ndata:  \ndata: {\"b\":2}\n",
            &[json(json!({"a": 1})), json(json!({"b": 2}))],
        );
    }

    #[test]
    fn data_that_is_not_json_is_an_error_in_its_place() {
        let out = frame(
            b"data: {\"a\":1}\n\ndata: {not json\n\ndata: {\"b\":2}\n\n",
            4,
        );
        assert_eq!(out[0], json(json!({"a": 1})));
        assert!(
            matches!(&out[1], Err(e) if e.contains("not JSON")),
            "{out:?}"
        );
        assert_eq!(out[2], json(json!({"b": 2})));
    }

    #[test]
    fn the_cap_holds_to_the_byte_for_a_line_and_for_an_events_data() {
        let too_long = |out: &[Result<Payload, String>]| {
            out.iter()
                .any(|p| matches!(p, Err(e) if e.contains("longer than")))
        };
        // One line of exactly the cap (with its `data: `), and one byte more.
        let value = |n: usize| format!("\"{}\"", "x".repeat(n - 2));
        let line = |n: usize| format!("data: {}\n\n", value(n - 6));
        assert_eq!(frame(line(MAX_LINE).as_bytes(), 1 << 16).len(), 1);
        assert!(!too_long(&frame(line(MAX_LINE).as_bytes(), 1 << 16)));
        assert!(too_long(&frame(line(MAX_LINE + 1).as_bytes(), 1 << 16)));
        // Data over two lines, joined with LF: exactly the cap, and one byte more.
        let two = |n: usize| {
            let first = "[\"a\",";
            let second = format!("{}]", value(n - first.len() - 2));
            format!("data: {first}\ndata: {second}\n\n")
        };
        let at_cap = frame(two(MAX_LINE).as_bytes(), 1 << 16);
        assert!(
            matches!(&at_cap[..], [Ok(Payload::Json(_))]),
            "{:?}",
            at_cap.len()
        );
        assert!(too_long(&frame(two(MAX_LINE + 1).as_bytes(), 1 << 16)));
    }

    #[test]
    fn an_event_past_the_cap_is_an_error_whether_one_line_or_many() {
        let long = "x".repeat(MAX_LINE / 2 + 1);
        for body in [
            format!("data: \"{long}{long}\"\n\n"),
            format!("data: \"{long}\ndata: {long}\"\n\n"),
        ] {
            let out = frame(body.as_bytes(), 64 * 1024);
            assert!(
                out.iter()
                    .any(|p| matches!(p, Err(e) if e.contains("longer than"))),
                "{:?}",
                out.iter().map(|p| p.as_ref().err()).collect::<Vec<_>>()
            );
        }
    }
}
