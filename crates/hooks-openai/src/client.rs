//! The client: [`OpenAiModel`] and its builder.

use std::fmt;
use std::time::Duration;

use hooks_core::agent::{Model, ModelRequest};
use hooks_core::http::{HttpConfig, error_chain, redact_url, reqwest};
use hooks_core::text::preview;
use hooks_core::{ModelError, ModelResponse, async_trait};
use tokio::time::Instant;

use crate::scrub::Scrub;
use crate::stream::ModelStream;
use crate::wire;

/// A [`Model`] for any OpenAI-compatible chat-completions server:
/// `POST {base_url}/chat/completions`.
///
/// Defaults: base URL from `OPENAI_BASE_URL` (else `https://api.openai.com/v1`), key from
/// `OPENAI_API_KEY` (none is fine for local servers), a 60 s deadline per call (streamed
/// replies included), at most 8 MiB of response read, no streaming.
///
/// ```
/// use std::time::Duration;
/// use hooks_openai::OpenAiModel;
/// let model = OpenAiModel::builder("smollm2")
///     .with_base_url("http://127.0.0.1:8080/v1")
///     .without_api_key()
///     .with_timeout(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// assert_eq!(model.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
/// ```
#[derive(Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_body: usize,
    streaming: bool,
    scrub: Scrub,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("endpoint", &redact_url(&self.endpoint))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .field("streaming", &self.streaming)
            .finish()
    }
}

impl OpenAiModel {
    /// A builder for `model`, with the defaults and the environment.
    pub fn builder(model: impl Into<String>) -> OpenAiModelBuilder {
        OpenAiModelBuilder {
            base_url: env("OPENAI_BASE_URL"),
            model: model.into(),
            api_key: env("OPENAI_API_KEY"),
            timeout: Duration::from_secs(60),
            max_body: 8 << 20,
            streaming: false,
            http: HttpConfig::new(),
        }
    }

    /// The URL it posts to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The per-call deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn send(
        &self,
        request: &ModelRequest<'_>,
        stream: bool,
        deadline: Instant,
    ) -> Result<reqwest::Response, ModelError> {
        let body = wire::request_body(&self.model, request, stream);
        let mut req = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = match tokio::time::timeout_at(deadline, req.send()).await {
            Err(_) => return Err(ModelError::Timeout(self.timeout)),
            Ok(Err(e)) => return Err(transport_error(e, &self.endpoint, self.timeout)),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let hint = wire::retry_after(resp.headers());
        // The error body is read under a small cap of its own.
        let body = self
            .read_body(resp, deadline, self.max_body.min(64 << 10), true)
            .await
            .unwrap_or_default();
        Err(wire::status_error(
            status.as_u16(),
            hint,
            &body,
            &self.scrub,
        ))
    }

    /// Reads a body up to `cap` bytes (`truncate`: keep the first `cap` bytes instead of
    /// failing, for error bodies).
    async fn read_body(
        &self,
        mut resp: reqwest::Response,
        deadline: Instant,
        cap: usize,
        truncate: bool,
    ) -> Result<Vec<u8>, ModelError> {
        let mut body = Vec::new();
        loop {
            let chunk = match tokio::time::timeout_at(deadline, resp.chunk()).await {
                Err(_) => return Err(ModelError::Timeout(self.timeout)),
                Ok(Err(e)) => return Err(transport_error(e, &self.endpoint, self.timeout)),
                Ok(Ok(None)) => return Ok(body),
                Ok(Ok(Some(c))) => c,
            };
            if body.len() + chunk.len() > cap {
                if truncate {
                    body.extend_from_slice(&chunk[..cap - body.len()]);
                    return Ok(body);
                }
                return Err(ModelError::Other(format!(
                    "the response is larger than the {cap}-byte cap; raise it with with_max_body_bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
    }

    /// Streams the reply: deltas as they arrive, then the assembled response (see
    /// [`ModelStream`]). The deadline covers the whole stream.
    ///
    /// # Errors
    /// As [`Model::complete`], for the request itself.
    pub async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let deadline = Instant::now() + self.timeout;
        let resp = self.send(&request, true, deadline).await?;
        Ok(ModelStream::new(
            resp,
            deadline,
            self.timeout,
            self.max_body,
            self.scrub.clone(),
        ))
    }
}

#[async_trait]
impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.model
    }

    /// Streams the reply over SSE (see [`OpenAiModel::stream`]): each delta as it arrives,
    /// then the assembled reply.
    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> hooks_core::stream::ModelStream<'a> {
        use hooks_core::stream::StreamItem;
        enum Phase<'a> {
            Start(ModelRequest<'a>),
            // Boxed: the stream's state is large, and moves with every piece.
            Reading(Box<ModelStream>),
        }
        Box::pin(futures_util::stream::unfold(
            Some(Phase::Start(request)),
            move |phase| async move {
                let mut stream = match phase? {
                    Phase::Start(request) => match OpenAiModel::stream(self, request).await {
                        Ok(stream) => Box::new(stream),
                        Err(e) => return Some((Err(e), None)),
                    },
                    Phase::Reading(stream) => stream,
                };
                match stream.next().await {
                    Some(Ok(delta)) => {
                        Some((Ok(StreamItem::Delta(delta)), Some(Phase::Reading(stream))))
                    }
                    Some(Err(e)) => Some((Err(e), None)),
                    None => Some(((*stream).into_response().await.map(StreamItem::Done), None)),
                }
            },
        ))
    }

    async fn complete(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        if self.streaming {
            return self.stream(request).await?.into_response().await;
        }
        let deadline = Instant::now() + self.timeout;
        let resp = self.send(&request, false, deadline).await?;
        let body = self.read_body(resp, deadline, self.max_body, false).await?;
        wire::response(&body, &self.scrub)
    }
}

/// A transport failure: timeouts are [`ModelError::Timeout`]; anything else (refused or reset
/// connections, TLS failures) is [`ModelError::Server`] without a status, with the whole cause
/// chain, since retrying may help. The URL is named without credentials or query.
fn transport_error(e: reqwest::Error, endpoint: &str, timeout: Duration) -> ModelError {
    if e.is_timeout() {
        return ModelError::Timeout(timeout);
    }
    let e = e.without_url();
    ModelError::Server {
        status: None,
        message: preview(
            &format!("{} ({})", error_chain(&e), redact_url(endpoint)),
            500,
        )
        .into_owned(),
    }
}

/// `{base}/chat/completions`, the base's query (e.g. `?api-version=…`) kept after the path.
fn endpoint(base: &str) -> crate::Result<reqwest::Url> {
    let bad = || crate::Error::BadBaseUrl {
        url: redact_url(base),
    };
    let mut url = reqwest::Url::parse(base.trim()).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(crate::Error::CredentialsInUrl {
            url: redact_url(base),
        });
    }
    url.path_segments_mut()
        .map_err(|()| bad())?
        .pop_if_empty()
        .extend(["chat", "completions"]);
    Ok(url)
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|s| !s.trim().is_empty())
}

/// Builds an [`OpenAiModel`].
#[derive(Clone)]
pub struct OpenAiModelBuilder {
    base_url: Option<String>,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_body: usize,
    streaming: bool,
    http: HttpConfig,
}

impl fmt::Debug for OpenAiModelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModelBuilder")
            .field("base_url", &self.base_url.as_deref().map(redact_url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .field("streaming", &self.streaming)
            .field("http", &self.http)
            .finish()
    }
}

impl OpenAiModelBuilder {
    /// The API's base URL, e.g. `http://127.0.0.1:8080/v1` (overrides `OPENAI_BASE_URL`).
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The API key, sent as a bearer token (overrides `OPENAI_API_KEY`).
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// No API key, whatever the environment says.
    #[must_use]
    pub fn without_api_key(mut self) -> Self {
        self.api_key = None;
        self
    }

    /// The deadline of one call, streamed replies included (default 60 s).
    #[must_use]
    pub fn with_timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// The most response bytes read (default 8 MiB); a larger reply is an error.
    #[must_use]
    pub fn with_max_body_bytes(mut self, n: usize) -> Self {
        self.max_body = n;
        self
    }

    /// Makes [`Model::complete`] stream the reply and assemble it (default off).
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// TLS roots and proxy (default: system roots, the proxy variables).
    #[must_use]
    pub fn with_http_config(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }

    /// Builds the client.
    ///
    /// # Errors
    /// [`Error::BadBaseUrl`](crate::Error::BadBaseUrl) for a base URL that is not http(s),
    /// [`Error::NoModel`](crate::Error::NoModel) for an empty model name,
    /// [`Error::BadSetting`](crate::Error::BadSetting) for a zero timeout or body cap,
    /// [`Error::Http`](crate::Error::Http) when the TLS or proxy settings are unusable.
    pub fn build(self) -> crate::Result<OpenAiModel> {
        let base = self
            .base_url
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        let endpoint = endpoint(&base)?;
        // Keep out of error text: the key, the base URL's query (whole, and each value as
        // written and decoded: some services take a key there), the proxy's credentials.
        let mut secrets: Vec<String> = self.api_key.iter().cloned().collect();
        if let Some(q) = endpoint.query() {
            secrets.push(q.to_owned());
            secrets.extend(
                q.split('&')
                    .filter_map(|p| p.split_once('='))
                    .map(|(_, v)| v.to_owned()),
            );
            secrets.extend(endpoint.query_pairs().map(|(_, v)| v.into_owned()));
        }
        secrets.extend(self.http.secrets_to_scrub());
        if self.model.trim().is_empty() {
            return Err(crate::Error::NoModel);
        }
        // A year is as good as forever, and `Instant + Duration::MAX` would overflow.
        let timeout = self.timeout.min(Duration::from_secs(365 * 24 * 3600));
        if timeout.is_zero() || self.max_body == 0 {
            return Err(crate::Error::BadSetting(
                "the timeout and the body cap must be above zero".to_owned(),
            ));
        }
        let client = self
            .http
            .client_builder()?
            .build()
            .map_err(|e| hooks_core::http::HttpError::Build(Box::new(e)))?;
        Ok(OpenAiModel {
            client,
            endpoint: endpoint.into(),
            scrub: Scrub::new(secrets.iter().map(String::as_str)),
            model: self.model,
            api_key: self.api_key,
            timeout,
            max_body: self.max_body,
            streaming: self.streaming,
        })
    }
}
