//! What the reference loop calls for answers: the [`Model`] trait and its request.

use std::sync::Arc;

use async_trait::async_trait;

use crate::state::{Message, ModelError, ModelOptions, ModelResponse, RunId, ToolSpec};

/// One model call's input.
///
/// ```
/// use hooks_core::{Message, ModelOptions, RunId};
/// use hooks_core::agent::ModelRequest;
/// let run = RunId::new("r1");
/// let messages = [Message::user("2 + 2?")];
/// let options = ModelOptions::default().with_temperature(0.0);
/// let request = ModelRequest::new(&run, &messages).with_options(&options);
/// assert_eq!(request.options.temperature, Some(0.0));
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The run's id.
    pub run_id: &'a RunId,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
    /// Tool choice and sampling.
    pub options: &'a ModelOptions,
}

static DEFAULT_OPTIONS: std::sync::LazyLock<ModelOptions> =
    std::sync::LazyLock::new(ModelOptions::default);

impl<'a> ModelRequest<'a> {
    /// A request for `messages`, with no tools and default options (to test a [`Model`]).
    pub fn new(run_id: &'a RunId, messages: &'a [Message]) -> Self {
        Self {
            run_id,
            messages,
            tools: &[],
            options: &DEFAULT_OPTIONS,
        }
    }

    /// With the tools the model may call.
    #[must_use]
    pub fn with_tools(mut self, tools: &'a [ToolSpec]) -> Self {
        self.tools = tools;
        self
    }

    /// With tool choice and sampling.
    #[must_use]
    pub fn with_options(mut self, options: &'a ModelOptions) -> Self {
        self.options = options;
        self
    }
}

/// A chat model the loop can call.
#[async_trait]
pub trait Model: Send + Sync {
    /// The model's name, for spans and logs.
    fn name(&self) -> &str;

    /// Answers the conversation.
    async fn complete(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError>;
}

/// The future a model call returns (what `#[async_trait]` makes of it).
type ModelFuture<'f> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ModelResponse, ModelError>> + Send + 'f>,
>;

// Shared and boxed models are models, so one can be handed to several agents. Written out so the inner future is not boxed a second time.
macro_rules! forward_model {
    ($ptr:ident) => {
        impl<T: Model + ?Sized> Model for $ptr<T> {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn complete<'s, 'a, 'f>(&'s self, request: ModelRequest<'a>) -> ModelFuture<'f>
            where
                's: 'f,
                'a: 'f,
            {
                (**self).complete(request)
            }
        }
    };
}
forward_model!(Arc);
forward_model!(Box);
