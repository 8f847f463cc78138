//! A provider that declares an event in `hooks()` but leaves its method at the default body
//! is caught in debug builds: the registry warns once per provider and event.
//!
//! Alone in its file because it installs a tracing subscriber to read the warnings.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::io::Write;
use std::sync::{Arc, Mutex};

use hooks_core::{
    AfterToolCallEvent, BeforeToolCallEvent, HookError, HookProvider, HookRegistry, HookSet, RunId,
    async_trait,
};
use serde_json::json;

/// Declares before-tool-call, implements after-tool-call: the mistake a user made.
struct Mixup;

#[async_trait]
impl HookProvider for Mixup {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL | HookSet::RUN_ABANDONED
    }
    async fn on_after_tool_call(&self, _: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        Ok(())
    }
}

/// Declares and implements: never warned about.
struct Right;

#[async_trait]
impl HookProvider for Right {
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_TOOL_CALL
    }
    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        // A nested default body (another provider's) must not be blamed on this one.
        let inner_ext = hooks_core::Extensions::new();
        let inner_call = hooks_core::ToolCall::new("n", "t", json!({}));
        let mut inner = BeforeToolCallEvent::new(
            hooks_core::EventContext::new(e.run_id(), &inner_ext)
                .with_iteration(1)
                .with_attempt(0),
            &inner_call,
        );
        NESTED.before_tool_call(&mut inner).await.unwrap();
        Ok(())
    }
}

static NESTED: std::sync::LazyLock<HookRegistry> = std::sync::LazyLock::new(HookRegistry::new);

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_declared_but_unimplemented_handler_is_warned_about_once() {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    hooks_core::test_util::with_thread_subscriber(subscriber, || {
        let mut registry = HookRegistry::new();
        registry.add(Mixup).unwrap();
        registry.add(Right).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let run = RunId::new("r");
        for i in 0..3 {
            let id = format!("c{i}");
            let e_ext = hooks_core::Extensions::new();
            let e_call = hooks_core::ToolCall::new(&id, "t", json!({}));
            let mut e = BeforeToolCallEvent::new(
                hooks_core::EventContext::new(&run, &e_ext)
                    .with_iteration(1)
                    .with_attempt(0),
                &e_call,
            );
            rt.block_on(registry.before_tool_call(&mut e)).unwrap();
        }
        registry.run_abandoned(&run);
    });
    let out = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains("WARN")).collect();
    if cfg!(debug_assertions) {
        assert_eq!(warnings.len(), 2, "{out}");
        assert!(warnings[0].contains(
            "hook provider 'Mixup' declares on_before_tool_call in hooks() but does not implement it"
        ));
        assert!(warnings[1].contains("'Mixup' declares on_run_abandoned"));
        assert!(!out.contains("'Right'"), "{out}");
    } else {
        assert!(warnings.is_empty(), "{out}");
    }
}
