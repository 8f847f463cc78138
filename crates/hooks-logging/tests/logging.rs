//! LoggingHook through the reference loop: exact messages and fields, truncation, opt-in
//! content, extra fields, levels and targets. Each test installs a thread-local subscriber for
//! its own (current-thread) runtime only.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::Capture;
use hooks_core::agent::{Agent, FnTool, ToolError};
use hooks_core::test_util::ScriptedModel;
use hooks_core::{HookProvider, HookRegistry, ModelResponse, TokenUsage, ToolCall, ToolSpec};
use hooks_logging::LoggingHook;
use serde_json::json;
use tracing::Level;

fn agent(hooks: Vec<Arc<dyn HookProvider>>, result: &'static str) -> Agent {
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "call-1",
            "search",
            json!({"query": "private query value", "limit": 5}),
        )])
        .with_usage(TokenUsage::new(12, 3))),
        Ok(ModelResponse::text("final answer").with_usage(TokenUsage::new(20, 4))),
    ])
    .with_name("test-model");
    let tool = FnTool::new(ToolSpec::new("search", "Searches", json!({})), move |_| {
        Ok(result.to_owned())
    });
    Agent::builder("support-bot", model)
        .tool(tool)
        .registry(Arc::new(HookRegistry::from_providers(hooks).unwrap()))
        .build()
        .unwrap()
}

/// Runs `prompt` through an agent with `hooks` under a capturing subscriber.
fn run(
    hooks: Vec<Arc<dyn HookProvider>>,
    prompt: &str,
    result: &'static str,
    max: Level,
) -> Capture {
    let capture = Capture::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(max));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(agent(hooks, result).run(prompt)).unwrap();
    capture
}

#[test]
fn every_lifecycle_event_is_logged_with_the_original_messages_and_fields() {
    let c = run(
        vec![Arc::new(LoggingHook::new())],
        "What is the weather?",
        "sunny",
        Level::TRACE,
    );
    let messages: Vec<String> = c
        .events()
        .iter()
        .filter(|e| e.target == "hooks::agent")
        .map(|e| e.message().to_owned())
        .collect();
    assert_eq!(
        messages,
        [
            "Agent invocation starting",
            "Iteration starting",
            "Model call starting",
            "Model call completed",
            "Tool call starting",
            "Tool call completed",
            "Iteration completed",
            "Iteration starting",
            "Model call starting",
            "Model call completed",
            "Iteration completed",
            "Agent invocation completed",
        ]
    );

    let start = &c.with_message("Agent invocation starting")[0];
    assert_eq!(start.level, Level::INFO);
    assert_eq!(start.get("agent_id"), Some("support-bot"));
    assert_eq!(start.get("prompt_preview"), Some("What is the weather?"));
    assert_eq!(start.get("prompt_length"), Some("20"));
    let run_id = start.get("run_id").unwrap().to_owned();
    assert!(run_id.starts_with("run-"));

    let end = &c.with_message("Agent invocation completed")[0];
    for (k, v) in [
        ("success", "true"),
        ("iterations", "2"),
        ("tool_calls", "1"),
        ("errors", "0"),
    ] {
        assert_eq!(end.get(k), Some(v), "{k}");
    }
    assert!(end.get("duration_ms").unwrap().parse::<f64>().unwrap() >= 0.0);
    assert_eq!(end.get("run_id"), Some(run_id.as_str()));

    let it = &c.with_message("Iteration starting")[1];
    assert_eq!(
        (it.get("iteration"), it.get("max_iterations")),
        (Some("2"), Some("10"))
    );
    // AgentState has no confidence (nothing ever set it): no field pretends otherwise.
    assert_eq!(end.get("confidence"), None);
    assert_eq!(it.get("confidence"), None);
    let it_end = &c.with_message("Iteration completed")[0];
    assert_eq!(
        (it_end.get("iteration"), it_end.get("messages")),
        (Some("1"), Some("3"))
    );

    let tool = &c.with_message("Tool call starting")[0];
    assert_eq!(
        (tool.get("tool_name"), tool.get("tool_call_id")),
        (Some("search"), Some("call-1"))
    );
    assert_eq!(tool.get("argument_keys"), Some("limit,query"));
    assert_eq!(tool.get("arguments"), None);

    let done = &c.with_message("Tool call completed")[0];
    assert_eq!(
        (done.get("tool_name"), done.get("success")),
        (Some("search"), Some("true"))
    );
    assert_eq!(done.get("error"), None);
    assert_eq!(done.get("result_preview"), None);

    let model = &c.with_message("Model call completed")[0];
    assert_eq!(
        model.level,
        Level::INFO,
        "model calls show at the default level"
    );
    for (k, v) in [
        ("model", "test-model"),
        ("finish_reason", "tool_calls"),
        ("input_tokens", "12"),
        ("output_tokens", "3"),
        ("tool_calls", "1"),
        ("success", "true"),
    ] {
        assert_eq!(model.get(k), Some(v), "{k}");
    }
    let model_start = &c.with_message("Model call starting")[1];
    assert_eq!(
        (
            model_start.get("message_count"),
            model_start.get("tool_count")
        ),
        (Some("3"), Some("1"))
    );
}

#[test]
fn with_the_defaults_no_argument_value_result_or_long_prompt_tail_is_logged() {
    let prompt = format!("{}TAIL-MARKER", "p".repeat(100));
    let c = run(
        vec![Arc::new(LoggingHook::new())],
        &prompt,
        "RESULT-MARKER sunny",
        Level::TRACE,
    );
    for e in c.events() {
        let all = format!("{:?}", e.fields);
        for secret in [
            "private query value",
            "RESULT-MARKER",
            "TAIL-MARKER",
            "final answer",
        ] {
            assert!(!all.contains(secret), "{secret} leaked in {e:?}");
        }
    }
    let start = &c.with_message("Agent invocation starting")[0];
    assert_eq!(
        start.get("prompt_preview").unwrap(),
        format!("{}...", "p".repeat(100))
    );
    assert_eq!(start.get("prompt_length"), Some("111"));
}

#[test]
fn arguments_and_results_are_logged_only_when_asked_and_truncated_by_characters() {
    let result: &'static str = Box::leak("日本語テキスト😀é".repeat(30).into_boxed_str()); // 270 characters, 3 to 4 bytes most of them
    let hook = LoggingHook::builder()
        .with_log_arguments(true)
        .with_log_results(true)
        .build()
        .unwrap();
    let c = run(vec![Arc::new(hook)], "hi", result, Level::TRACE);
    let start = &c.with_message("Tool call starting")[0];
    // Compared as JSON: the key order is serde_json's (a dependency may turn on
    // `preserve_order`).
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(start.get("arguments").unwrap()).unwrap(),
        serde_json::json!({"limit": 5, "query": "private query value"})
    );
    assert_eq!(start.get("argument_keys"), None);
    let done = &c.with_message("Tool call completed")[0];
    let preview = done.get("result_preview").unwrap();
    let expected: String = result.chars().take(200).collect();
    assert_eq!(preview, format!("{expected}..."));
    assert_eq!(done.get("result_length"), Some("270"));
}

#[test]
fn prompt_preview_counts_characters_of_multibyte_text() {
    for unit in ["é", "日", "👋"] {
        let prompt = unit.repeat(150);
        let c = run(
            vec![Arc::new(LoggingHook::new())],
            &prompt,
            "ok",
            Level::INFO,
        );
        let start = &c.with_message("Agent invocation starting")[0];
        assert_eq!(
            start.get("prompt_preview").unwrap(),
            format!("{}...", unit.repeat(100))
        );
        assert_eq!(start.get("prompt_length"), Some("150"));
    }
}

#[test]
fn extra_fields_are_added_to_every_event_whatever_their_names() {
    let hook = LoggingHook::builder()
        .with_field("service", "checkout")
        .with_field("replicas", 3)
        .with_field("message", "not the message")
        .with_field("run_id", "not the run id")
        .with_field("level", "custom")
        .with_field("target", "t")
        .build()
        .unwrap();
    let c = run(vec![Arc::new(hook)], "hi", "ok", Level::TRACE);
    let events = c.events();
    assert!(!events.is_empty());
    for e in events {
        assert_eq!(e.get("service"), Some("checkout"));
        assert_eq!(e.get("replicas"), Some("3"));
        assert_eq!(e.get("extra.message"), Some("not the message"));
        assert_eq!(e.get("extra.run_id"), Some("not the run id"));
        assert_eq!(e.get("extra.level"), Some("custom"));
        assert_eq!(e.get("extra.target"), Some("t"));
        assert_ne!(e.message(), "not the message");
        assert!(e.get("run_id").unwrap().starts_with("run-"));
    }
}

#[test]
fn level_and_target_are_configurable_and_disabled_levels_emit_nothing() {
    let hook = LoggingHook::builder()
        .with_level(Level::WARN)
        .with_model_level(Level::TRACE)
        .with_target("my_app::agent")
        .build()
        .unwrap();
    let c = run(vec![Arc::new(hook)], "hi", "ok", Level::INFO);
    let events = c.events();
    assert_eq!(
        events.len(),
        8,
        "model events at TRACE are filtered out: {events:?}"
    );
    for e in events {
        assert_eq!(e.target, "my_app::agent");
        assert_eq!(e.level, Level::WARN);
    }
    let c = run(vec![Arc::new(LoggingHook::new())], "hi", "ok", Level::WARN);
    assert!(c.events().is_empty());
}

#[test]
fn a_failed_tool_logs_its_error_and_a_cancel_is_marked() {
    let capture = Capture::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(Level::INFO));
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "c1",
            "missing",
            json!({}),
        )])),
        Ok(ModelResponse::text("ok")),
    ]);
    let agent = Agent::builder("a", model)
        .registry(Arc::new(
            HookRegistry::new().with(LoggingHook::new()).unwrap(),
        ))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(agent.run("go")).unwrap();
    let done = &capture.with_message("Tool call completed")[0];
    assert_eq!(done.get("success"), Some("false"));
    assert_eq!(
        done.get("error"),
        Some("unknown tool 'missing'; available tools: none")
    );
}

#[test]
fn builder_errors_say_what_is_wrong() {
    let err = LoggingHook::builder().with_target("").build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the log target must not be empty; use e.g. \"hooks::agent\""
    );
    let mut b = LoggingHook::builder();
    for i in 0..21 {
        b = b.with_field(format!("k{i}"), i);
    }
    assert!(matches!(
        b.build(),
        Err(hooks_logging::Error::TooManyExtraFields { given: 21, max: 20 })
    ));
    assert_eq!(LoggingHook::new().name(), "LoggingHook");
}

#[test]
fn a_run_dropped_midway_is_logged_as_abandoned() {
    let capture = Capture::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(Level::INFO));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let hang = FnTool::new(ToolSpec::new("search", "s", json!({})), |_| Ok("x".into()));
    struct Stall;
    #[hooks_core::async_trait]
    impl hooks_core::agent::Model for Stall {
        fn name(&self) -> &str {
            "stall"
        }
        async fn complete(
            &self,
            _: hooks_core::agent::ModelRequest<'_>,
        ) -> Result<ModelResponse, hooks_core::ModelError> {
            std::future::pending::<()>().await;
            unreachable!()
        }
    }
    let a = Agent::builder("a", Stall)
        .tool(hang)
        .registry(Arc::new(
            HookRegistry::new().with(LoggingHook::new()).unwrap(),
        ))
        .build()
        .unwrap();
    let r = rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_millis(20), a.run("go")).await
    });
    assert!(r.is_err());
    let abandoned = capture.with_message("Agent invocation abandoned");
    assert_eq!(abandoned.len(), 1);
    assert!(abandoned[0].get("run_id").unwrap().starts_with("run-"));
}

#[test]
fn a_failed_tool_call_logs_its_error_and_no_result() {
    let model = ScriptedModel::new(vec![
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            "call-1",
            "search",
            json!({}),
        )])),
        Ok(ModelResponse::text("done")),
    ]);
    let tool = FnTool::new(ToolSpec::new("search", "Searches", json!({})), |_| {
        Err(ToolError::new("boom"))
    });
    let hook: Arc<dyn HookProvider> = Arc::new(
        LoggingHook::builder()
            .with_log_results(true)
            .build()
            .unwrap(),
    );
    let agent = Agent::builder("support-bot", model)
        .tool(tool)
        .registry(Arc::new(HookRegistry::from_providers(vec![hook]).unwrap()))
        .build()
        .unwrap();
    let capture = Capture::default();
    let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(Level::TRACE));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(agent.run("hi")).unwrap();
    let done = &capture.with_message("Tool call completed")[0];
    assert_eq!(done.get("success"), Some("false"));
    assert!(done.get("error").unwrap().contains("boom"));
    // The original logs no result for a failed call: neither do we.
    assert_eq!(done.get("result_preview"), None);
    assert_eq!(done.get("result_length"), None);
}

/// Streams "x", "yy", "zzz": letters no run id (hex) holds, so finding them means text was logged.
struct Pieces;

#[hooks_core::async_trait]
impl hooks_core::agent::Model for Pieces {
    fn name(&self) -> &str {
        "pieces"
    }
    async fn complete(
        &self,
        _: hooks_core::agent::ModelRequest<'_>,
    ) -> Result<ModelResponse, hooks_core::ModelError> {
        Ok(ModelResponse::text("xyyzzz"))
    }
    fn stream<'a>(
        &'a self,
        _: hooks_core::agent::ModelRequest<'a>,
    ) -> hooks_core::stream::ModelStream<'a> {
        use hooks_core::stream::{ModelDelta, StreamItem};
        let items = ["x", "yy", "zzz"]
            .into_iter()
            .map(|t| Ok(StreamItem::Delta(ModelDelta::Text(t.to_owned()))))
            .chain([Ok(StreamItem::Done(ModelResponse::text("xyyzzz")))]);
        Box::pin(futures_util::stream::iter(items))
    }
}

#[test]
fn a_streamed_reply_is_one_line_unless_pieces_are_asked_for() {
    use futures_util::StreamExt as _;
    for deltas in [false, true] {
        let capture = Capture::default();
        let _guard = hooks_core::test_util::set_thread_subscriber(capture.subscriber(Level::TRACE));
        let hook = LoggingHook::builder()
            .with_log_deltas(deltas)
            .build()
            .unwrap();
        let agent = Agent::builder("streamer", Pieces)
            .registry(Arc::new(HookRegistry::new().with(hook).unwrap()))
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let n = rt.block_on(agent.run_stream("hi", 4).count());
        assert!(n >= 2);
        let events = capture.events();
        let pieces: Vec<_> = events
            .iter()
            .filter(|e| e.message() == "Model reply piece")
            .collect();
        let replies = events
            .iter()
            .filter(|e| e.message() == "Model call completed")
            .count();
        assert_eq!(replies, 1);
        if deltas {
            // Three pieces and the closing one; lengths, never the text.
            let lengths: Vec<&str> = pieces.iter().map(|e| e.get("length").unwrap()).collect();
            assert_eq!(lengths, ["1", "2", "3", "0"]);
            assert!(!format!("{pieces:?}").contains("zzz"));
        } else {
            assert!(pieces.is_empty());
        }
    }
}
