//! An HTTP(S) server on 127.0.0.1 for tests (feature `test-server`): it keeps every request
//! and answers each with what a handler returns — a scripted reply, an echo, a hang.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use super::lock;

/// A request as the [`TestServer`] received it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TestRequest {
    /// The request line and headers, as sent.
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
}

impl TestRequest {
    /// The request line's target (`/v1/chat/completions?x=y`).
    pub fn target(&self) -> &str {
        self.head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_default()
    }

    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What the [`TestServer`] answers a request with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TestReply {
    /// These bytes, as the whole response; the connection closes after them.
    Raw(Vec<u8>),
    /// Nothing, for 30 s (a server that never answers).
    Hang,
}

impl TestReply {
    /// A response with `status`, a content type, extra header lines (each ending in `\r\n`)
    /// and `body`.
    pub fn with(status: u16, content_type: &str, headers: &str, body: &[u8]) -> Self {
        let mut r = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        TestReply::Raw(r)
    }

    /// A JSON response.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::with(status, "application/json", "", body.to_string().as_bytes())
    }

    /// A JSON response with extra header lines (each ending in `\r\n`).
    pub fn json_with_headers(status: u16, headers: &str, body: &Value) -> Self {
        Self::with(
            status,
            "application/json",
            headers,
            body.to_string().as_bytes(),
        )
    }

    /// An event stream of `data:` events that ends when the connection closes.
    pub fn sse(events: &[String]) -> Self {
        let mut r =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                .to_vec();
        for e in events {
            r.extend_from_slice(format!("data: {e}\n\n").as_bytes());
        }
        TestReply::Raw(r)
    }

    /// A chat-completions reply with `content` and finish reason `stop`.
    pub fn chat(content: &str) -> Self {
        Self::json(
            200,
            &serde_json::json!({
                "model": "test-model",
                "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2}
            }),
        )
    }
}

type Handler = dyn Fn(&TestRequest) -> TestReply + Send + Sync;

/// An HTTP server on 127.0.0.1 (HTTPS with [`start_tls`](Self::start_tls)) that keeps every
/// request and answers with its handler; stops when dropped. Each connection serves one
/// request (the replies close it); requests are read with a 1 MiB head and a 64 MiB body cap.
///
/// ```
/// use hooks_core::test_util::{TestReply, TestServer};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let server = TestServer::scripted(vec![TestReply::chat("hi")]).await;
/// assert!(server.url().starts_with("http://127.0.0.1:"));
/// assert!(server.requests().is_empty());
/// # }
/// ```
pub struct TestServer {
    url: String,
    requests: Arc<Mutex<Vec<TestRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Answers every request with `handler`'s reply.
    ///
    /// # Panics
    /// When 127.0.0.1 cannot be bound (this is for tests).
    pub async fn start(
        handler: impl Fn(&TestRequest) -> TestReply + Send + Sync + 'static,
    ) -> Self {
        Self::serve(Arc::new(handler), None).await
    }

    /// Answers the requests with `replies` in order; past the end, with a 500.
    ///
    /// # Panics
    /// When 127.0.0.1 cannot be bound.
    pub async fn scripted(replies: Vec<TestReply>) -> Self {
        Self::start(scripted(replies)).await
    }

    /// Like [`start`](Self::start), over TLS with `config` (see
    /// [`TestCa::server_config`](super::TestCa::server_config)); a client that refuses the
    /// certificate ends the handshake and reaches no handler.
    ///
    /// # Panics
    /// When 127.0.0.1 cannot be bound.
    #[cfg(feature = "test-tls")]
    pub async fn start_tls(
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&TestRequest) -> TestReply + Send + Sync + 'static,
    ) -> Self {
        Self::serve(Arc::new(handler), Some(config)).await
    }

    #[allow(clippy::expect_used)]
    async fn serve(handler: Arc<Handler>, tls: Option<Tls>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("a bound address");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                // (`tls` is `Option<Infallible>`, a `Copy` type, without the `test-tls` feature.)
                #[allow(clippy::clone_on_copy)]
                let (handler, seen, tls) = (handler.clone(), seen.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => one(conn, &*handler, &seen).await,
                        #[cfg(feature = "test-tls")]
                        Some(config) => {
                            if let Ok(s) =
                                tokio_rustls::TlsAcceptor::from(config).accept(conn).await
                            {
                                one(s, &*handler, &seen).await;
                            }
                        }
                        #[cfg(not(feature = "test-tls"))]
                        Some(never) => match never {},
                    }
                });
            }
        });
        Self {
            url: format!("{scheme}://{addr}"),
            requests,
            task,
        }
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<TestRequest> {
        lock(&self.requests).clone()
    }
}

#[cfg(feature = "test-tls")]
type Tls = Arc<rustls::ServerConfig>;
#[cfg(not(feature = "test-tls"))]
type Tls = std::convert::Infallible;

/// A handler answering with `replies` in order, then 500s.
pub fn scripted(replies: Vec<TestReply>) -> impl Fn(&TestRequest) -> TestReply + Send + Sync {
    let next = Mutex::new(replies.into_iter());
    move |_| {
        lock(&next).next().unwrap_or_else(|| {
            TestReply::json(
                500,
                &serde_json::json!({"error": {"message": "script exhausted"}}),
            )
        })
    }
}

/// Reads one request, records it, and writes the handler's reply.
async fn one<S: AsyncRead + AsyncWrite + Unpin>(
    mut conn: S,
    handler: &Handler,
    seen: &Mutex<Vec<TestRequest>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let body_start = loop {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 1 << 20 {
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..body_start - 4]).into_owned();
    let mut request = TestRequest {
        head,
        body: Vec::new(),
    };
    let len: usize = request
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(64 << 20);
    while buf.len() < body_start + len {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    request.body = buf[body_start..body_start + len].to_vec();
    let reply = handler(&request);
    lock(seen).push(request);
    match reply {
        TestReply::Raw(bytes) => {
            let _ = conn.write_all(&bytes).await;
            let _ = conn.shutdown().await;
        }
        TestReply::Hang => tokio::time::sleep(Duration::from_secs(30)).await,
    }
}
