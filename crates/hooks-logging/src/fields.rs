//! What each lifecycle event logs: its message, its event name and its fields — shared by
//! both hooks, so the plain and the JSON output never drift apart.

use std::borrow::Cow;
use std::fmt::Write as _;

use hooks_core::text::{char_len, json_preview, preview};
use hooks_core::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, IterationEvent,
};
use serde_json::Value as Json;
use tracing::field::Value;

/// Characters of the prompt shown in `prompt_preview`.
pub const PROMPT_PREVIEW_CHARS: usize = 100;
/// Characters of a tool result shown in `result_preview` (and of arguments in `arguments`).
pub const RESULT_PREVIEW_CHARS: usize = 200;

/// The lifecycle events that are logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    InvocationStart,
    InvocationEnd,
    IterationStart,
    IterationEnd,
    ModelStart,
    ModelEnd,
    ToolStart,
    ToolEnd,
    InvocationAbandoned,
    ModelDelta,
}

impl Kind {
    pub(crate) const ALL: [Kind; 10] = [
        Kind::InvocationStart,
        Kind::InvocationEnd,
        Kind::IterationStart,
        Kind::IterationEnd,
        Kind::ModelStart,
        Kind::ModelEnd,
        Kind::ToolStart,
        Kind::ToolEnd,
        Kind::InvocationAbandoned,
        Kind::ModelDelta,
    ];

    pub(crate) fn message(self) -> &'static str {
        match self {
            Kind::InvocationStart => "Agent invocation starting",
            Kind::InvocationEnd => "Agent invocation completed",
            Kind::IterationStart => "Iteration starting",
            Kind::IterationEnd => "Iteration completed",
            Kind::ModelStart => "Model call starting",
            Kind::ModelEnd => "Model call completed",
            Kind::ToolStart => "Tool call starting",
            Kind::ToolEnd => "Tool call completed",
            Kind::InvocationAbandoned => "Agent invocation abandoned",
            Kind::ModelDelta => "Model reply piece",
        }
    }

    /// The snake_case of the message.
    pub(crate) fn event(self) -> &'static str {
        match self {
            Kind::InvocationStart => "agent_invocation_starting",
            Kind::InvocationEnd => "agent_invocation_completed",
            Kind::IterationStart => "iteration_starting",
            Kind::IterationEnd => "iteration_completed",
            Kind::ModelStart => "model_call_starting",
            Kind::ModelEnd => "model_call_completed",
            Kind::ToolStart => "tool_call_starting",
            Kind::ToolEnd => "tool_call_completed",
            Kind::InvocationAbandoned => "agent_invocation_abandoned",
            Kind::ModelDelta => "model_reply_piece",
        }
    }

    pub(crate) fn is_model(self) -> bool {
        matches!(self, Kind::ModelStart | Kind::ModelEnd | Kind::ModelDelta)
    }

    /// Every field the event may carry, in order.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::InvocationAbandoned => &["run_id"],
            Kind::ModelDelta => &["run_id", "iteration", "attempt", "length", "last"],
            Kind::InvocationStart => &[
                "run_id",
                "agent_id",
                "prompt_preview",
                "prompt_length",
                "parent_run_id",
                "parent_tool_call_id",
                "depth",
            ],
            Kind::InvocationEnd => &[
                "run_id",
                "agent_id",
                "success",
                "iterations",
                "tool_calls",
                "errors",
                "duration_ms",
                "error",
                "interrupted",
            ],
            Kind::IterationStart => &["run_id", "iteration", "max_iterations"],
            Kind::IterationEnd => &["run_id", "iteration", "messages"],
            Kind::ModelStart => &[
                "run_id",
                "iteration",
                "attempt",
                "model",
                "message_count",
                "tool_count",
            ],
            Kind::ModelEnd => &[
                "run_id",
                "iteration",
                "attempt",
                "model",
                "success",
                "finish_reason",
                "tool_calls",
                "input_tokens",
                "output_tokens",
                "error_kind",
                "duration_ms",
            ],
            Kind::ToolStart => &[
                "run_id",
                "tool_name",
                "tool_call_id",
                "argument_keys",
                "arguments",
            ],
            Kind::ToolEnd => &[
                "run_id",
                "tool_name",
                "tool_call_id",
                "success",
                "duration_ms",
                "error",
                "cancelled",
                "result_preview",
                "result_length",
                "interrupted",
            ],
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A field value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Str(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
}

impl Val {
    pub(crate) fn as_value(&self) -> &dyn Value {
        match self {
            Val::Str(s) => s,
            Val::U64(v) => v,
            Val::I64(v) => v,
            Val::F64(v) => v,
            Val::Bool(v) => v,
        }
    }

    pub(crate) fn write_json(&self, out: &mut String) {
        match self {
            Val::Str(s) => out.push_str(&Json::String(s.clone()).to_string()),
            Val::U64(v) => {
                let _ = write!(out, "{v}");
            }
            Val::I64(v) => {
                let _ = write!(out, "{v}");
            }
            Val::F64(v) if v.is_finite() => {
                let _ = write!(out, "{v}");
            }
            Val::F64(_) => out.push_str("null"),
            Val::Bool(v) => out.push_str(if *v { "true" } else { "false" }),
        }
    }

    /// A JSON value as a field: scalars as themselves, anything else as compact JSON text.
    pub(crate) fn from_json(v: &Json) -> Val {
        match v {
            Json::String(s) => Val::Str(s.clone()),
            Json::Bool(b) => Val::Bool(*b),
            Json::Number(n) => n
                .as_u64()
                .map(Val::U64)
                .or_else(|| n.as_i64().map(Val::I64))
                .or_else(|| n.as_f64().map(Val::F64))
                .unwrap_or_else(|| Val::Str(n.to_string())),
            other => Val::Str(json_preview(other, 1000)),
        }
    }
}

fn s(v: impl Into<String>) -> Option<Val> {
    Some(Val::Str(v.into()))
}

fn u(v: impl TryInto<u64>) -> Option<Val> {
    Some(Val::U64(v.try_into().unwrap_or(u64::MAX)))
}

fn ms(d: std::time::Duration) -> Option<Val> {
    Some(Val::F64((d.as_secs_f64() * 1e6).round() / 1e3))
}

/// What to include beyond the defaults.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Content {
    pub(crate) arguments: bool,
    pub(crate) results: bool,
}

pub(crate) fn invocation_start(e: &BeforeInvocationEvent) -> Vec<Option<Val>> {
    let state = e.state();
    let prompt = state.prompt().unwrap_or("");
    vec![
        s(state.run_id.as_str()),
        s(state.agent_id.as_str()),
        s(preview(prompt, PROMPT_PREVIEW_CHARS)),
        u(char_len(prompt)),
        // A nested run (an agent run as a tool): the run and call that started it.
        state.parent.as_ref().and_then(|p| s(p.run_id.as_str())),
        state
            .parent
            .as_ref()
            .and_then(|p| s(preview(&p.tool_call_id, 256))),
        state.parent.as_ref().and_then(|p| u(p.depth)),
    ]
}

pub(crate) fn invocation_abandoned(run_id: &hooks_core::RunId) -> Vec<Option<Val>> {
    vec![s(run_id.as_str())]
}

pub(crate) fn invocation_end(e: &AfterInvocationEvent<'_>) -> Vec<Option<Val>> {
    let state = e.state();
    vec![
        s(state.run_id.as_str()),
        s(state.agent_id.as_str()),
        Some(Val::Bool(e.success())),
        u(state.iteration),
        u(state.tool_executions.len()),
        u(state.errors.len()),
        ms(e.duration()),
        e.error()
            .map(|err| Val::Str(preview(&err.to_string(), RESULT_PREVIEW_CHARS).into_owned())),
        // Paused for a person (not failed): how many calls wait.
        e.interrupted()
            .then(|| u(e.interruptions().len()))
            .flatten(),
    ]
}

pub(crate) fn iteration_start(e: &IterationEvent<'_>) -> Vec<Option<Val>> {
    let state = e.state();
    vec![
        s(state.run_id.as_str()),
        u(state.iteration),
        u(state.max_iterations),
    ]
}

pub(crate) fn iteration_end(e: &IterationEvent<'_>) -> Vec<Option<Val>> {
    let state = e.state();
    vec![
        s(state.run_id.as_str()),
        u(state.iteration),
        u(state.messages.len()),
    ]
}

/// A streamed reply's piece: its length only (never its text).
pub(crate) fn model_delta(e: &hooks_core::ModelDeltaEvent<'_>) -> Vec<Option<Val>> {
    vec![
        s(e.run_id().as_str()),
        u(e.iteration()),
        u(e.attempt()),
        u(e.delta().text().chars().count()),
        Some(Val::Bool(e.is_last())),
    ]
}

pub(crate) fn model_start(e: &BeforeModelCallEvent<'_>) -> Vec<Option<Val>> {
    vec![
        s(e.run_id().as_str()),
        u(e.iteration()),
        u(e.attempt()),
        s(e.model()),
        u(e.messages().len()),
        u(e.tools().len()),
    ]
}

pub(crate) fn model_end(e: &AfterModelCallEvent<'_>) -> Vec<Option<Val>> {
    let r = e.response();
    let usage = r.and_then(|r| r.usage);
    vec![
        s(e.run_id().as_str()),
        u(e.iteration()),
        u(e.attempt()),
        s(e.model()),
        Some(Val::Bool(r.is_some())),
        r.map(|r| Val::Str(r.finish_reason.as_str().to_owned())),
        r.and_then(|r| u(r.message.tool_calls.len())),
        usage.and_then(|u_| u(u_.input_tokens)),
        usage.and_then(|u_| u(u_.output_tokens)),
        e.error()
            .map(|err| Val::Str(err.kind().as_str().to_owned())),
        ms(e.duration()),
    ]
}

fn argument_keys(args: &Json) -> String {
    match args {
        Json::Object(map) => {
            // Sorted: the same call logs the same line whatever serde_json's map order (a
            // dependency may turn on `preserve_order`).
            let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
            keys.sort_unstable();
            preview(&keys.join(","), RESULT_PREVIEW_CHARS).into_owned()
        }
        _ => String::new(),
    }
}

pub(crate) fn tool_start(e: &BeforeToolCallEvent<'_>, c: Content) -> Vec<Option<Val>> {
    let (keys, args) = if c.arguments {
        (None, s(json_preview(e.arguments(), RESULT_PREVIEW_CHARS)))
    } else {
        (s(argument_keys(e.arguments())), None)
    };
    vec![
        s(e.run_id().as_str()),
        s(preview(e.tool_name(), RESULT_PREVIEW_CHARS)),
        s(preview(e.tool_call_id(), RESULT_PREVIEW_CHARS)),
        keys,
        args,
    ]
}

pub(crate) fn tool_end(e: &AfterToolCallEvent<'_>, c: Content) -> Vec<Option<Val>> {
    // A failed or cancelled call has no result to show: its error says what happened.
    let (result_preview, result_length) = if c.results && e.success() {
        (
            s(preview(e.result(), RESULT_PREVIEW_CHARS)),
            u(char_len(e.result())),
        )
    } else {
        (None, None)
    };
    vec![
        s(e.run_id().as_str()),
        s(preview(e.tool_name(), RESULT_PREVIEW_CHARS)),
        s(preview(e.tool_call_id(), RESULT_PREVIEW_CHARS)),
        Some(Val::Bool(e.success())),
        ms(e.duration()),
        e.error()
            .map(|err| Val::Str(preview(err, RESULT_PREVIEW_CHARS).into_owned())),
        e.cancelled().map(|_| Val::Bool(true)),
        result_preview,
        result_length,
        e.outcome().interrupted().map(|_| Val::Bool(true)),
    ]
}

/// Names an extra field may not take as they are: tracing's and the JSON line's own keys.
const RESERVED: [&str; 6] = ["message", "event", "timestamp", "level", "target", "fields"];

/// The key an extra field is logged under: its own, or `extra.<key>` when it would collide with
/// a reserved name or any event's own field.
pub(crate) fn extra_key(key: &str) -> Cow<'_, str> {
    let collides = RESERVED.contains(&key) || Kind::ALL.iter().any(|k| k.fields().contains(&key));
    if collides {
        Cow::Owned(format!("extra.{key}"))
    } else {
        Cow::Borrowed(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_fits_in_one_tracing_event_with_room_for_extras() {
        for k in Kind::ALL {
            let message = 1;
            assert!(
                message + k.fields().len() + crate::MAX_EXTRA_FIELDS <= crate::callsite::MAX_FIELDS
            );
            assert_eq!(k.event(), k.message().to_lowercase().replace(' ', "_"));
        }
    }

    #[test]
    fn colliding_extra_keys_are_prefixed() {
        assert_eq!(extra_key("service"), "service");
        assert_eq!(extra_key("message"), "extra.message");
        assert_eq!(extra_key("run_id"), "extra.run_id");
        assert_eq!(extra_key("level"), "extra.level");
    }
}
