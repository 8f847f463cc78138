//! What the reference loop calls for answers: the [`Model`] trait and its request.

use std::sync::Arc;

use async_trait::async_trait;

use crate::state::{Message, ModelError, ModelOptions, ModelResponse, RunId, ToolSpec};
use crate::stream::{ModelDelta, ModelStream, StreamItem};

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

    /// Answers the conversation in pieces: deltas as they come, then the whole reply
    /// ([`StreamItem::Done`], last). The default calls [`complete`](Self::complete) and hands
    /// its text over as one piece.
    ///
    /// ```
    /// use futures_util::StreamExt as _;
    /// use hooks_core::agent::{Model, ModelRequest};
    /// use hooks_core::stream::{ModelDelta, StreamItem};
    /// use hooks_core::test_util::ScriptedModel;
    /// use hooks_core::{Message, ModelResponse, RunId};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new(vec![Ok(ModelResponse::text("hi"))]);
    /// let (run, messages) = (RunId::new("r1"), vec![Message::user("hello")]);
    /// let items: Vec<_> = model.stream(ModelRequest::new(&run, &messages)).collect().await;
    /// assert_eq!(items[0].as_ref().unwrap(), &StreamItem::Delta(ModelDelta::Text("hi".into())));
    /// assert!(matches!(items[1], Ok(StreamItem::Done(_))));
    /// # });
    /// ```
    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> ModelStream<'a> {
        use futures_util::StreamExt as _;
        Box::pin(
            futures_util::stream::once(self.complete(request)).flat_map(|r| {
                let items: Vec<Result<StreamItem, ModelError>> = match r {
                    Ok(response) => {
                        let text = response.message.content.clone();
                        let mut items = Vec::with_capacity(2);
                        if !text.is_empty() {
                            items.push(Ok(StreamItem::Delta(ModelDelta::Text(text))));
                        }
                        items.push(Ok(StreamItem::Done(response)));
                        items
                    }
                    Err(e) => vec![Err(e)],
                };
                futures_util::stream::iter(items)
            }),
        )
    }
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
            fn stream<'a>(&'a self, request: ModelRequest<'a>) -> ModelStream<'a> {
                (**self).stream(request)
            }
        }
    };
}
forward_model!(Arc);
forward_model!(Box);
