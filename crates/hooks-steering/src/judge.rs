//! Judges: the `JudgeModel` trait, a judge over any core `Model` and a deterministic rule
//! judge.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::{Model, ModelRequest};
use hooks_core::{
    Message, ModelError, ModelOptions, ResponseFormat, RunId, TokenUsage, async_trait,
};
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
    /// Tokens the judgement took, when the judge reports them (for the judge's span and the
    /// token-usage metric).
    pub usage: Option<TokenUsage>,
    /// The model that answered, when known.
    pub model: Option<String>,
}

impl JudgeReply {
    /// A reply.
    pub fn new(text: impl Into<String>, finish_reason: Option<String>) -> Self {
        Self {
            text: text.into(),
            finish_reason,
            usage: None,
            model: None,
        }
    }

    /// With the token usage.
    #[must_use]
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// With the answering model's name.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

/// A model that judges tool calls and answers.
#[async_trait]
pub trait JudgeModel: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &str;

    /// Answers the request.
    async fn judge(&self, request: &JudgeRequest) -> Result<JudgeReply, JudgeError>;

    /// True when judging calls a model, so each judgement gets a GenAI `chat` span in a
    /// traced run (default). A judge that calls no model (rules) says `false`.
    fn calls_a_model(&self) -> bool {
        true
    }
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
            fn calls_a_model(&self) -> bool {
                (**self).calls_a_model()
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

/// A judge over any [`Model`]: `OpenAiModel` from `hooks-openai` for an OpenAI-compatible
/// server (hosted or local), a local model, or anything else that implements the trait.
///
/// Each judgement is one model call with the system message and the prompt, temperature 0,
/// the hook's token limit and — unless turned off — JSON-schema structured output
/// ([`decision_schema`]); a plain-text answer is parsed when a server ignores the schema.
/// A call that errs, or does not finish within the deadline (default 10 s), is a judge
/// failure, which the hook's [`FailurePolicy`](crate::FailurePolicy) decides (closed by
/// default).
///
/// ```
/// use std::time::Duration;
/// use hooks_core::ModelResponse;
/// use hooks_core::test_util::ScriptedModel;
/// use hooks_steering::{ModelJudge, SteeringHook};
/// let model = ScriptedModel::new(vec![Ok(ModelResponse::text("PROCEED"))]);
/// let judge = ModelJudge::new(model).with_timeout(Duration::from_secs(30));
/// let hook = SteeringHook::builder(judge).with_policy("read-only").build();
/// # let _ = hook;
/// ```
pub struct ModelJudge<M> {
    model: M,
    timeout: Duration,
    structured: bool,
    run_id: RunId,
}

impl<M: Model> fmt::Debug for ModelJudge<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelJudge")
            .field("model", &self.model.name())
            .field("timeout", &self.timeout)
            .field("structured", &self.structured)
            .finish()
    }
}

impl<M: Model> ModelJudge<M> {
    /// A judge asking `model`, with a 10 s deadline and structured output.
    pub fn new(model: M) -> Self {
        Self {
            model,
            timeout: Duration::from_secs(10),
            structured: true,
            run_id: RunId::new("steering-judge"),
        }
    }

    /// The deadline of one judgement (default 10 s).
    #[must_use]
    pub fn with_timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Ask for JSON-schema structured output (default on).
    #[must_use]
    pub fn with_structured_output(mut self, on: bool) -> Self {
        self.structured = on;
        self
    }

    /// The deadline of one judgement.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }
}

#[async_trait]
impl<M: Model> JudgeModel for ModelJudge<M> {
    fn name(&self) -> &str {
        self.model.name()
    }

    async fn judge(&self, request: &JudgeRequest) -> Result<JudgeReply, JudgeError> {
        let messages = [
            Message::system(request.system.clone()),
            Message::user(request.prompt.clone()),
        ];
        let mut options = ModelOptions::default()
            .with_temperature(0.0)
            .with_max_tokens(request.max_tokens);
        if self.structured {
            options = options.with_response_format(ResponseFormat::json_schema(
                "steering_decision",
                decision_schema(),
            ));
        }
        let call = self
            .model
            .complete(ModelRequest::new(&self.run_id, &messages).with_options(&options));
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(JudgeError::Timeout(self.timeout)),
            Ok(Err(ModelError::Timeout(d))) => Err(JudgeError::Timeout(d)),
            Ok(Err(e)) => Err(JudgeError::Model(e)),
            Ok(Ok(r)) => {
                let mut reply =
                    JudgeReply::new(r.message.content, Some(r.finish_reason.as_str().to_owned()));
                reply.usage = r.usage;
                reply.model = r.model;
                Ok(reply)
            }
        }
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

    fn calls_a_model(&self) -> bool {
        false
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
