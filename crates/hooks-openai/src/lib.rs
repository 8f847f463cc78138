//! [`OpenAiModel`]: a [`Model`](hooks_core::agent::Model) for any OpenAI-compatible
//! chat-completions server — OpenAI, vLLM, llama.cpp, Ollama, LM Studio — so the reference
//! agent loop (and the steering judge) run against a real model.
//!
//! - **Requests**: messages of every role with tool calls and tool results, tool specs,
//!   `tool_choice`, parallel tool calls, temperature / top-p / max tokens / stop / seed,
//!   `response_format` (JSON object or JSON schema), and provider fields passed through
//!   ([`ModelOptions::extra`](hooks_core::ModelOptions::extra)). Messages the loop wrote on a
//!   hook's behalf (retry feedback) are sent with a visible
//!   [`AUTOMATED_PREFIX`] so the model does not take them for the user's words.
//! - **Responses**: text, tool calls (arguments that are not valid JSON reach the loop as a
//!   string, which it answers with an error result for that call), usage, finish reason, model.
//! - **Errors** are [`ModelError`](hooks_core::ModelError) kinds the retry provider acts on:
//!   429 → `RateLimited` with the `Retry-After` / `x-ratelimit-reset-*` hint, 5xx and
//!   connection failures → `Server`, the deadline → `Timeout`, an over-long conversation →
//!   `ContextLength`; messages carry the whole cause chain.
//! - **Streaming** (server-sent events): [`OpenAiModel::stream`] yields the deltas and
//!   assembles the same [`ModelResponse`](hooks_core::ModelResponse);
//!   [`OpenAiModelBuilder::with_streaming`] makes `complete` stream under the hood. Events
//!   are framed as the SSE standard says (LF, CRLF or CR line ends, an event's data over
//!   several lines), and a data line that is whole JSON on its own is taken at once.
//! - **TLS** is rustls with the system roots plus any custom root, and the standard proxy
//!   variables, through [`hooks_core::http::HttpConfig`].
//!
//! Hand-written over `serde_json` rather than a client crate such as `async-openai`: the
//! wire format is a few hundred lines, we need lenient parsing of what local servers send
//! (missing ids, `null` content, arguments that are not JSON), pass-through fields, our own
//! TLS stack and body caps, and no second copy of reqwest or of the request types.
//!
//! ```no_run
//! use hooks_core::agent::Agent;
//! use hooks_openai::OpenAiModel;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let model = OpenAiModel::builder("gpt-4o-mini").build()?; // OPENAI_BASE_URL, OPENAI_API_KEY
//! let agent = Agent::builder("assistant", model).build()?;
//! let out = agent.run("What is 2 + 2?").await?;
//! println!("{}", out.answer);
//! # Ok(()) }
//! ```

mod client;
mod error;
mod scrub;
mod stream;
mod wire;

pub use client::{OpenAiModel, OpenAiModelBuilder};
pub use error::{Error, Result};
pub use stream::{ModelStream, StreamDelta};
pub use wire::AUTOMATED_PREFIX;
