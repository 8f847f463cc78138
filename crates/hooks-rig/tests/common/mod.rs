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

/// Log lines written by a test's subscriber.
#[derive(Clone, Default)]
pub struct Buffer(pub Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

impl Buffer {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Our log lines (targets `hooks…`) on this thread, into a buffer; rig logs the provider's
/// raw replies itself (targets `rig::…`, before any hook runs), which the crate docs say to
/// keep off where redaction matters.
pub fn our_logs() -> (Buffer, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let logs = Buffer::default();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(logs.clone())
            .with_ansi(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                m.target().starts_with("hooks")
            })),
    );
    (
        logs,
        hooks_core::test_util::set_thread_subscriber(subscriber),
    )
}

/// A tool call block of a scripted rig turn.
pub fn call(id: &str, name: &str, args: Value) -> rig_core::message::AssistantContent {
    rig_core::message::AssistantContent::ToolCall(rig_core::message::ToolCall::from_wire(
        id,
        rig_core::message::ToolFunction::new(rig_core::message::ToolName::new(name).unwrap(), args),
    ))
}

/// A registry with guardrails redacting every PII entity and blocking `blocked`.
pub fn guard_registry(blocked: &[&str]) -> hooks_core::HookRegistry {
    use hooks_guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook};
    let mut config = GuardrailConfig::default().with_blocked_tools(blocked.iter().copied());
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    let mut registry = hooks_core::HookRegistry::new();
    registry.add(GuardrailsHook::new(config).unwrap()).unwrap();
    registry
}
