//! An approver that asks a web service: POST the interruption, read the decision.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Approver, Decision, DecisionKind, Interruption};
use crate::error::BoxError;
use crate::http::{HttpConfig, HttpError, redact_url, redact_urls_in};

/// The most bytes read of a webhook's reply.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// POSTs each interruption as JSON to a URL and reads the decision from the reply; no
/// reply within the deadline, a non-2xx status or a reply that is not a decision is a
/// rejection (fail closed).
///
/// The request body is `{"interruption": {…}}` (the [`Interruption`] as serialised: its
/// arguments are the redacted ones). The reply is a JSON object with `decision`
/// (`approve`, `approve_always`, `reject` with `message`, or `edit` with `arguments`) and
/// optionally `by`, who decided.
///
/// ```
/// use std::time::Duration;
/// use hooks_core::interrupt::WebhookApprover;
/// let approver = WebhookApprover::new("https://approvals.internal/decide")
///     .unwrap()
///     .with_deadline(Duration::from_secs(30))
///     .with_header("authorization", "Bearer s3cret");
/// assert!(format!("{approver:?}").contains("approvals.internal"));
/// assert!(!format!("{approver:?}").contains("s3cret"));
/// ```
pub struct WebhookApprover {
    url: String,
    client: reqwest::Client,
    deadline: Duration,
    headers: Vec<(String, String)>,
}

impl std::fmt::Debug for WebhookApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookApprover")
            .field("url", &redact_url(&self.url))
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Reply {
    #[serde(flatten)]
    kind: DecisionKind,
    #[serde(default)]
    by: Option<String>,
}

impl WebhookApprover {
    /// The default deadline for a decision: 60 s.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

    /// An approver POSTing to `url` (http or https), with the default HTTP settings.
    ///
    /// # Errors
    /// [`HttpError`] when the URL is not http(s) or the client cannot be built.
    pub fn new(url: impl Into<String>) -> Result<Self, HttpError> {
        Self::with_http_config(url, &HttpConfig::new())
    }

    /// An approver POSTing to `url` with a client built from `http` (custom roots, proxy).
    ///
    /// # Errors
    /// [`HttpError`] when the URL is not http(s) or the client cannot be built.
    pub fn with_http_config(url: impl Into<String>, http: &HttpConfig) -> Result<Self, HttpError> {
        let url = url.into();
        let parsed = reqwest::Url::parse(&url).map_err(|e| HttpError::Url {
            url: redact_url(&url),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(HttpError::Url {
                url: redact_url(&url),
                reason: "the scheme must be http or https".into(),
            });
        }
        Ok(Self {
            url,
            // A decision endpoint answers itself: a redirect is a failure, not a hop.
            client: http
                .client_builder()?
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| HttpError::Build(Box::new(e)))?,
            deadline: Self::DEFAULT_DEADLINE,
            headers: Vec::new(),
        })
    }

    /// Waits at most `deadline` for each decision (default 60 s).
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Adds a header to every request (an authorization token, say; never logged).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    async fn ask(&self, interruption: &Interruption) -> Result<Reply, BoxError> {
        let mut request = self
            .client
            .post(&self.url)
            .timeout(self.deadline)
            .header("content-type", "application/json")
            .body(json!({ "interruption": interruption }).to_string());
        for (k, v) in &self.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let mut response = request.send().await.map_err(|e| {
            format!(
                "the approval webhook failed: {}",
                redact_urls_in(&crate::http::error_chain(&e.without_url()))
            )
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "the approval webhook answered with status {}",
                status.as_u16()
            )
            .into());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            format!(
                "the approval webhook's reply broke off: {}",
                redact_urls_in(&crate::http::error_chain(&e.without_url()))
            )
        })? {
            if body.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(format!(
                    "the approval webhook's reply is over {MAX_REPLY_BYTES} bytes"
                )
                .into());
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| {
            format!("the approval webhook's reply is not a decision ({e}); expected {{\"decision\": \"approve\" | \"approve_always\" | \"reject\" | \"edit\", …}}").into()
        })
    }
}

#[async_trait::async_trait]
impl Approver for WebhookApprover {
    async fn decide(&self, interruption: &Interruption) -> Result<Option<Decision>, BoxError> {
        let reply = tokio::time::timeout(self.deadline, self.ask(interruption))
            .await
            .map_err(|_| {
                BoxError::from(format!(
                    "the approval webhook gave no decision within {:?}",
                    self.deadline
                ))
            })??;
        let decision = Decision::of_kind(interruption, reply.kind);
        Ok(Some(match reply.by {
            Some(by) => decision.by(by),
            None => decision,
        }))
    }
}
