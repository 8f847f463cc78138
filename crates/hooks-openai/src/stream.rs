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
    buf: Vec<u8>,
    queue: VecDeque<StreamDelta>,
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    model: Option<String>,
    done: bool,
    failed: bool,
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

/// The longest single event line accepted (an event past it is a malformed stream).
const MAX_LINE: usize = 4 << 20;

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
            buf: Vec::new(),
            queue: VecDeque::new(),
            text: String::new(),
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
            model: None,
            done: false,
            failed: false,
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
            if let Some(d) = self.queue.pop_front() {
                return Some(Ok(d));
            }
            if self.done || self.failed {
                return None;
            }
            if let Err(e) = self.fill().await {
                self.failed = true;
                return Some(Err(e));
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

    /// Reads one chunk from the connection and parses every complete event line in it.
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
        let Some(chunk) = chunk else {
            // The connection closed. A last line without a newline still counts.
            if !self.buf.is_empty() {
                let line = std::mem::take(&mut self.buf);
                self.line(&line)?;
            }
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
        // What was buffered holds no newline: search only the new bytes (linear in the body).
        let mut search = self.buf.len();
        self.buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(nl) = memchr_newline(&self.buf[search..]) {
            let end = search + nl;
            let line = self.buf[start..end].to_vec();
            start = end + 1;
            search = start;
            self.line(&line)?;
            if self.done {
                break;
            }
        }
        self.buf.drain(..start);
        if self.buf.len() > MAX_LINE {
            return Err(ModelError::Other(format!(
                "a stream event is longer than {MAX_LINE} bytes"
            )));
        }
        Ok(())
    }

    fn line(&mut self, line: &[u8]) -> Result<(), ModelError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(data) = line.strip_prefix(b"data:") else {
            // Comments (`: keep-alive`), `event:`, `id:`, blank separators.
            return Ok(());
        };
        let data = data.strip_prefix(b" ").unwrap_or(data);
        if data.trim_ascii() == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v: Value = serde_json::from_slice(data)
            .map_err(|e| ModelError::Other(format!("a stream event is not JSON ({e})")))?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(wire::error_object(&v, err, &self.scrub));
        }
        if let Some(m) = v.get("model").and_then(Value::as_str)
            && self.model.is_none()
        {
            self.model = Some(m.to_owned());
        }
        if let Some(u) = wire::usage(&v) {
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
                            ModelError::Other(format!(
                                "a stream event names tool call {}; expected an index below {}",
                                hooks_core::text::preview(&v.to_string(), 40),
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

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}
