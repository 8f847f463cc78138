//! What the reference loop runs for the model: the [`Tool`] trait, its input and error, and
//! [`FnTool`] for closures.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::driver::NestedCall;
use crate::extensions::Extensions;
use crate::state::{RunId, ToolSpec};

/// The future a tool call returns (what `#[async_trait]` makes of it).
type ToolFuture<'f> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, ToolError>> + Send + 'f>>;

// Shared and boxed tools are tools, so one can be handed to several agents. Written out so
// the inner future is not boxed a second time.
macro_rules! forward_tool {
    ($ptr:ident) => {
        impl<T: Tool + ?Sized> Tool for $ptr<T> {
            fn spec(&self) -> &ToolSpec {
                (**self).spec()
            }
            fn call<'s, 'a, 'f>(&'s self, input: ToolInput<'a>) -> ToolFuture<'f>
            where
                's: 'f,
                'a: 'f,
            {
                (**self).call(input)
            }
        }
    };
}
forward_tool!(Arc);
forward_tool!(Box);

/// A tool failed; the model sees `Error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A tool error with a message the model can act on.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Turns a tool's raw output into text, refusing invalid UTF-8 with an error that says where it
/// is instead of silently replacing bytes.
///
/// ```
/// use hooks_core::agent::tool_output_from_bytes;
/// assert_eq!(tool_output_from_bytes(b"ok".to_vec()).unwrap(), "ok");
/// let err = tool_output_from_bytes(vec![b'a', 0xff]).unwrap_err();
/// assert!(err.to_string().contains("byte 1"));
/// ```
///
/// # Errors
/// A [`ToolError`] naming the first invalid byte.
pub fn tool_output_from_bytes(bytes: Vec<u8>) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let total = e.as_bytes().len();
        ToolError::new(format!(
            "tool output is not valid UTF-8 (first invalid byte at byte {at} of {total}); return text or encode binary output (e.g. base64)"
        ))
    })
}

/// One tool call's input.
///
/// ```
/// use hooks_core::{Extensions, RunId};
/// use hooks_core::agent::ToolInput;
/// let (run, ext) = (RunId::new("r1"), Extensions::new());
/// let args = serde_json::Map::new();
/// let input = ToolInput::new(&run, "c1", &args).with_extensions(&ext);
/// assert_eq!(input.call_id, "c1");
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ToolInput<'a> {
    /// The run's id.
    pub run_id: &'a RunId,
    /// The call's id.
    pub call_id: &'a str,
    /// The arguments, secret ones merged in.
    pub arguments: &'a Map<String, Value>,
    /// The run's extensions: what its hooks stored.
    pub extensions: &'a Extensions,
    secret_keys: &'a [String],
    nested: Option<NestedCall<'a>>,
}

impl fmt::Debug for ToolInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The arguments hold the secret ones: their values are never printed.
        f.debug_struct("ToolInput")
            .field("run_id", &self.run_id)
            .field("call_id", &self.call_id)
            .field("arguments", &self.arguments.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What [`ToolInput::new`] hands a tool under test: an empty map shared by every such input.
static NO_EXTENSIONS: Extensions = Extensions::new();

impl<'a> ToolInput<'a> {
    /// The input of call `call_id` with `arguments` (to test a [`Tool`]), with an empty,
    /// process-wide extensions map: give a tool under test a map of its own with
    /// [`with_extensions`](Self::with_extensions) if it stores anything there.
    pub fn new(run_id: &'a RunId, call_id: &'a str, arguments: &'a Map<String, Value>) -> Self {
        Self {
            run_id,
            call_id,
            arguments,
            extensions: &NO_EXTENSIONS,
            secret_keys: &[],
            nested: None,
        }
    }

    /// With the run's extensions.
    #[must_use]
    pub fn with_extensions(mut self, extensions: &'a Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// With other arguments (a wrapper tool that rewrites them before handing the call on),
    /// keeping everything else: the run, the secret keys, the run to nest under.
    #[must_use]
    pub fn with_arguments(mut self, arguments: &'a Map<String, Value>) -> Self {
        self.arguments = arguments;
        self
    }

    /// With the keys of the arguments that are secret (added by hooks).
    #[must_use]
    pub fn with_secret_keys(mut self, keys: &'a [String]) -> Self {
        self.secret_keys = keys;
        self
    }

    /// Inside a driven run (the driver sets it: see [`ToolInvocation::input`](crate::driver::ToolInvocation::input)).
    #[must_use]
    pub fn with_nested(mut self, nested: NestedCall<'a>) -> Self {
        self.nested = Some(nested);
        self
    }

    /// True when argument `key` is a secret one (a hook added it; the model never saw it).
    pub fn is_secret(&self, key: &str) -> bool {
        self.secret_keys.iter().any(|k| k == key)
    }

    /// The call of a driven run this input belongs to, for a tool that runs a nested run
    /// under it (an agent as a tool); `None` outside a driven run (a tool called directly).
    pub fn nested(&self) -> Option<NestedCall<'a>> {
        self.nested
    }
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool.
    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError>;
}

type ToolFn = dyn Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync;

/// A tool made from a synchronous closure.
///
/// ```
/// use hooks_core::ToolSpec;
/// use hooks_core::agent::{FnTool, ToolError};
/// use serde_json::json;
/// let echo = FnTool::new(
///     ToolSpec::new("echo", "Echoes its text", json!({"type": "object"})),
///     |args| args.get("text").and_then(|v| v.as_str()).map(str::to_owned)
///         .ok_or_else(|| ToolError::new("missing 'text'")),
/// );
/// # let _ = echo;
/// ```
pub struct FnTool {
    spec: ToolSpec,
    f: Box<ToolFn>,
}

impl FnTool {
    /// A tool that calls `f` with the arguments.
    pub fn new(
        spec: ToolSpec,
        f: impl Fn(&Map<String, Value>) -> Result<String, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec,
            f: Box::new(f),
        }
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").field("spec", &self.spec).finish()
    }
}

#[async_trait]
impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: ToolInput<'_>) -> Result<String, ToolError> {
        (self.f)(input.arguments)
    }
}
