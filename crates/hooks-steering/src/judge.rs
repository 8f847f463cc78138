//! Judges: the `JudgeModel` trait, an OpenAI-compatible HTTP judge and a deterministic rule
//! judge.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hooks_core::async_trait;
use serde_json::{Value, json};

use crate::error::JudgeError;
use crate::verdict::SteeringAction;

/// What a judge is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JudgeRequest {
    /// The system message.
    pub system: String,
    /// The user prompt (policy, context, the proposal, the options).
    pub prompt: String,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// The tool under judgement, when judging a tool call (rule judges look at it).
    pub tool_name: Option<String>,
}

impl JudgeRequest {
    /// A request.
    pub fn new(
        system: impl Into<String>,
        prompt: impl Into<String>,
        max_tokens: u32,
        tool_name: Option<String>,
    ) -> Self {
        Self {
            system: system.into(),
            prompt: prompt.into(),
            max_tokens,
            tool_name,
        }
    }
}

/// A judge's raw answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JudgeReply {
    /// The text.
    pub text: String,
    /// Why it stopped (`stop`, `length`, …), when the judge says.
    pub finish_reason: Option<String>,
}

impl JudgeReply {
    /// A reply.
    pub fn new(text: impl Into<String>, finish_reason: Option<String>) -> Self {
        Self {
            text: text.into(),
            finish_reason,
        }
    }
}

/// A model that judges tool calls and answers.
#[async_trait]
pub trait JudgeModel: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &str;

    /// Answers the request.
    async fn judge(&self, request: &JudgeRequest) -> Result<JudgeReply, JudgeError>;
}

/// The future a judge call returns (what `#[async_trait]` makes of it).
type JudgeFuture<'f> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<JudgeReply, JudgeError>> + Send + 'f>,
>;

// A shared or boxed judge is a judge, so one can serve several hooks. Written out so the
// inner future is not boxed a second time.
macro_rules! forward_judge {
    ($ptr:ident) => {
        impl<T: JudgeModel + ?Sized> JudgeModel for $ptr<T> {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn judge<'s, 'r, 'f>(&'s self, request: &'r JudgeRequest) -> JudgeFuture<'f>
            where
                's: 'f,
                'r: 'f,
            {
                (**self).judge(request)
            }
        }
    };
}
forward_judge!(Arc);
forward_judge!(Box);

/// The JSON schema of a structured decision.
pub fn decision_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["PROCEED", "GUIDE", "INTERRUPT"]},
            "reason": {"type": "string", "maxLength": 200}
        },
        "required": ["decision", "reason"],
        "additionalProperties": false
    })
}

/// A judge that speaks the OpenAI-compatible chat-completions API:
/// `POST {base_url}/chat/completions`.
///
/// Defaults: base URL from `OPENAI_BASE_URL` (else `https://api.openai.com/v1`), key from
/// `OPENAI_API_KEY` (none is fine for local servers), model `gpt-4o-mini`, a 10 s timeout
/// per call, 1 MiB read at most, temperature 0, and JSON-schema structured output (the plain
/// text answer is parsed when a server ignores it).
///
/// ```
/// use std::time::Duration;
/// use hooks_steering::OpenAiJudge;
/// let judge = OpenAiJudge::builder()
///     .with_base_url("http://127.0.0.1:8080/v1")
///     .with_model("smollm2")
///     .with_timeout(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// assert_eq!(judge.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
/// ```
#[derive(Clone)]
pub struct OpenAiJudge {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_body: usize,
    structured: bool,
}

impl fmt::Debug for OpenAiJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiJudge")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .field("structured", &self.structured)
            .finish()
    }
}

impl OpenAiJudge {
    /// A builder with the defaults and the environment.
    pub fn builder() -> OpenAiJudgeBuilder {
        OpenAiJudgeBuilder {
            base_url: std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            model: "gpt-4o-mini".to_owned(),
            api_key: std::env::var("OPENAI_API_KEY")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            timeout: Duration::from_secs(10),
            max_body: 1 << 20,
            structured: true,
        }
    }

    /// The URL it posts to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn body(&self, r: &JudgeRequest) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": r.system},
                {"role": "user", "content": r.prompt},
            ],
            "max_tokens": r.max_tokens,
            "temperature": 0,
        });
        if self.structured {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "steering_decision", "strict": true, "schema": decision_schema()}
            });
        }
        body
    }

    async fn call(&self, r: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        let mut req = self.client.post(&self.endpoint).json(&self.body(r));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| JudgeError::Unreachable(error_chain(&e)))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| JudgeError::Unreachable(error_chain(&e)))?
        {
            if body.len() + chunk.len() > self.max_body {
                return Err(JudgeError::BodyTooLarge {
                    limit: self.max_body,
                });
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(JudgeError::Status {
                status: status.as_u16(),
                body: hooks_core::text::preview(text.trim(), 200).into_owned(),
            });
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| JudgeError::Malformed(format!("the body is not JSON ({e})")))?;
        let choice = v
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| JudgeError::Malformed("no choices[0] in the response".into()))?;
        let text = choice
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                JudgeError::Malformed("no choices[0].message.content string in the response".into())
            })?;
        let finish = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(JudgeReply::new(text, finish))
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[async_trait]
impl JudgeModel for OpenAiJudge {
    fn name(&self) -> &str {
        &self.model
    }

    async fn judge(&self, request: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        match tokio::time::timeout(self.timeout, self.call(request)).await {
            Ok(r) => r,
            Err(_) => Err(JudgeError::Timeout(self.timeout)),
        }
    }
}

/// Builds an [`OpenAiJudge`].
#[derive(Debug, Clone)]
pub struct OpenAiJudgeBuilder {
    base_url: Option<String>,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_body: usize,
    structured: bool,
}

impl OpenAiJudgeBuilder {
    /// The API's base URL, e.g. `http://127.0.0.1:8080/v1`.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The model name.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The API key (sent as a bearer token).
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

    /// The per-call timeout (default 10 s).
    #[must_use]
    pub fn with_timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// The most response bytes read (default 1 MiB).
    #[must_use]
    pub fn with_max_body_bytes(mut self, n: usize) -> Self {
        self.max_body = n;
        self
    }

    /// Ask for JSON-schema structured output (default on).
    #[must_use]
    pub fn with_structured_output(mut self, on: bool) -> Self {
        self.structured = on;
        self
    }

    /// Builds the judge.
    ///
    /// # Errors
    /// [`Error::BadBaseUrl`](crate::Error::BadBaseUrl) for a base URL that is not http(s);
    /// [`Error::HttpClient`](crate::Error::HttpClient) for a client that cannot be built.
    pub fn build(self) -> crate::Result<OpenAiJudge> {
        let base = self
            .base_url
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(crate::Error::BadBaseUrl {
                url: hooks_core::text::preview(&base, 80).into_owned(),
            });
        }
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| crate::Error::HttpClient(Box::new(e)))?;
        Ok(OpenAiJudge {
            client,
            endpoint: format!("{}/chat/completions", base.trim_end_matches('/')),
            model: self.model,
            api_key: self.api_key,
            timeout: self.timeout,
            max_body: self.max_body,
            structured: self.structured,
        })
    }
}

/// A deterministic judge from rules over tool names — no model involved. Useful offline, in
/// demos and as a baseline; it is labelled as such in its name and answers.
///
/// ```
/// use hooks_steering::{RuleJudge, SteeringAction};
/// let judge = RuleJudge::new(SteeringAction::Proceed)
///     .rule("delete_", SteeringAction::Interrupt, "deleting needs a human")
///     .rule("send_email", SteeringAction::Guide, "draft the e-mail for review instead");
/// # let _ = judge;
/// ```
#[derive(Debug, Clone)]
pub struct RuleJudge {
    default: crate::verdict::SteeringAction,
    rules: Vec<(String, crate::verdict::SteeringAction, String)>,
}

impl RuleJudge {
    /// A rule judge answering `default` when no rule matches.
    pub fn new(default: crate::verdict::SteeringAction) -> Self {
        Self {
            default,
            rules: Vec::new(),
        }
    }

    /// Tools whose name starts with `prefix` get `action` with `reason`.
    #[must_use]
    pub fn rule(
        mut self,
        prefix: impl Into<String>,
        action: crate::verdict::SteeringAction,
        reason: impl Into<String>,
    ) -> Self {
        self.rules.push((prefix.into(), action, reason.into()));
        self
    }
}

#[async_trait]
impl JudgeModel for RuleJudge {
    fn name(&self) -> &str {
        "rule-judge (deterministic, no model)"
    }

    async fn judge(&self, request: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        let tool = request.tool_name.as_deref().unwrap_or("");
        let (action, reason) = self
            .rules
            .iter()
            .find(|(p, ..)| tool.starts_with(p.as_str()))
            .map(|(_, a, r)| (*a, r.as_str()))
            .unwrap_or((self.default, "no rule matched"));
        // The strict verdict format: PROCEED alone on its line, the others with a colon.
        let text = match action {
            SteeringAction::Proceed => format!("{action}\n{reason} [rule judge]"),
            _ => format!("{action}: {reason} [rule judge]"),
        };
        Ok(JudgeReply::new(text, Some("stop".to_owned())))
    }
}
