//! Dispatching an event that no provider subscribes to allocates nothing.
//!
//! This file installs a counting global allocator (dhat in testing mode), which is process-wide
//! state, so it holds this one test alone.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use hooks_core::test_util::ready;
use hooks_core::{
    AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry, HookSet, RunId,
};
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

struct ModelOnly(String);

impl HookProvider for ModelOnly {
    fn name(&self) -> &str {
        &self.0
    }
    fn hooks(&self) -> HookSet {
        HookSet::MODEL_CALL
    }
}

#[test]
fn dispatch_to_32_unsubscribed_providers_makes_no_heap_allocation() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut registry = HookRegistry::new();
    for i in 0..32 {
        registry.add(ModelOnly(format!("p{i}"))).unwrap();
    }
    let run_id = RunId::new("run");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let before_ext = hooks_core::Extensions::new();
    let before_call = hooks_core::ToolCall::new("c1", "search", args.clone());
    let mut before = BeforeToolCallEvent::new(
        hooks_core::EventContext::new(&run_id, &before_ext)
            .with_iteration(1)
            .with_attempt(0),
        &before_call,
    );
    let after_ext = hooks_core::Extensions::new();
    let after_call = hooks_core::ToolCall::new("c1", "search", serde_json::Value::Null);
    let after_outcome = hooks_core::ToolOutcome::Ran;
    let mut after = AfterToolCallEvent::new(
        hooks_core::EventContext::new(&run_id, &after_ext)
            .with_iteration(1)
            .with_attempt(0),
        &after_call,
        &args,
        &after_outcome,
        String::from("sunny"),
    )
    .with_duration(Default::default());

    let start = dhat::HeapStats::get();
    for _ in 0..1000 {
        ready(registry.before_tool_call(&mut before)).unwrap();
        ready(registry.after_tool_call(&mut after)).unwrap();
    }
    let end = dhat::HeapStats::get();
    dhat::assert_eq!(end.total_blocks - start.total_blocks, 0);

    // The counter does count: one subscribed provider allocates its boxed future.
    registry.add(SubscribesToTools).unwrap();
    let start = dhat::HeapStats::get();
    ready(registry.before_tool_call(&mut before)).unwrap();
    let end = dhat::HeapStats::get();
    dhat::assert!(end.total_blocks > start.total_blocks);
}

struct SubscribesToTools;

impl HookProvider for SubscribesToTools {
    fn hooks(&self) -> HookSet {
        HookSet::TOOL_CALL
    }
}
