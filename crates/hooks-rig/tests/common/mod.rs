//! Rig tools that record what they were called with.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use rig_agent::tool::ToolContext;
use serde_json::{Map, Value, json};

/// What the tools of a test were called with: (tool, arguments).
pub type Calls = Arc<Mutex<Vec<(String, Value)>>>;

/// A tool's failure (its text is what the tool said).
#[derive(Debug)]
pub struct Failed(pub String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failed {}

macro_rules! recording_tool {
    ($ty:ident, $name:literal) => {
        /// A recording tool: it records its arguments and answers `reply` (or fails with
        /// it, when `fail` is set).
        #[derive(Clone)]
        pub struct $ty {
            pub calls: Calls,
            pub reply: String,
            pub fail: bool,
        }

        impl $ty {
            pub fn new(calls: &Calls, reply: impl Into<String>) -> Self {
                Self {
                    calls: Arc::clone(calls),
                    reply: reply.into(),
                    fail: false,
                }
            }

            pub fn failing(calls: &Calls, reply: impl Into<String>) -> Self {
                Self {
                    fail: true,
                    ..Self::new(calls, reply)
                }
            }
        }

        impl rig_agent::tool::Tool for $ty {
            const NAME: &'static str = $name;
            type Args = Map<String, Value>;
            type Output = String;
            type Error = Failed;

            fn description(&self) -> String {
                format!("The {} tool", $name)
            }

            fn parameters(&self) -> Value {
                json!({"type": "object"})
            }

            async fn call(
                &self,
                _context: &mut ToolContext,
                args: Self::Args,
            ) -> Result<String, Failed> {
                self.calls
                    .lock()
                    .unwrap()
                    .push(($name.to_owned(), Value::Object(args)));
                if self.fail {
                    Err(Failed(self.reply.clone()))
                } else {
                    Ok(self.reply.clone())
                }
            }
        }
    };
}

recording_tool!(Lookup, "lookup");
recording_tool!(Wipe, "wipe");
recording_tool!(Pay, "pay");
recording_tool!(LookupAll, "lookup_all");

/// The tools' calls, by name.
pub fn names(calls: &Calls) -> Vec<String> {
    calls
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect()
}
