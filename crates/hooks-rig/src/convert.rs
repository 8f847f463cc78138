//! Conversions between rig's conversation types and ours, both ways.
//!
//! Our [`Message`] is text with tool calls; rig's is richer (images, documents, reasoning,
//! provider items). The conversions keep what our hooks can judge and rewrite — text, tool
//! calls and their arguments, tool results — and, going back, keep every rig part our side
//! has no word for (an image beside the text, a reasoning block) where the message was not
//! rebuilt. A message our hooks changed loses its provider items (`native`), so rig replays
//! it from the changed text, never from the original.
//!
//! ```
//! use hooks_core::Message;
//! use hooks_rig::convert;
//! use rig_core::completion::Message as RigMessage;
//!
//! let rig = vec![RigMessage::system("Be brief."), RigMessage::user("hello")];
//! let ours = convert::messages_to_hooks(&rig);
//! assert_eq!(ours, vec![Message::system("Be brief."), Message::user("hello")]);
//! assert_eq!(convert::messages_to_rig(&ours)?, rig);
//! # Ok::<(), hooks_rig::ConvertError>(())
//! ```

use std::collections::HashMap;

use hooks_core::{FinishReason, Message, ModelResponse, Role, TokenUsage, ToolCall, ToolSpec};
use rig_core::completion::{
    AssistantContent, CompletionRequest, CompletionResponse, FinishReason as RigFinish,
    Message as RigMessage, ToolDefinition, Usage,
};
use rig_core::message::{
    AssistantMessage, CallId, Text, ToolCall as RigToolCall, ToolFunction, ToolName,
    ToolResult as RigToolResult, ToolResultContent, UserContent,
};
use serde_json::{Map, Value};

/// A conversation our hooks left that rig cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A tool message answers a call no earlier assistant message made: rig's tool results
    /// carry the tool's name, which only the call has.
    #[error(
        "message {index} is a tool result for call {call_id:?}, which no earlier assistant \
         message made; keep each tool result after the assistant message that called it"
    )]
    UnknownCall {
        /// The message's index.
        index: usize,
        /// The call id it answers (shortened).
        call_id: String,
    },
    /// A tool message without the id of the call it answers.
    #[error(
        "message {index} is a tool result without a tool_call_id; set the id of the call it answers"
    )]
    MissingCallId {
        /// The message's index.
        index: usize,
    },
    /// A tool call (or the tool a result answers) with an empty name.
    #[error("message {index} names a tool with an empty name; every tool call needs a name")]
    EmptyToolName {
        /// The message's index.
        index: usize,
    },
}

/// Text of a tool result as the model sees it: text parts as they are, JSON as JSON text.
pub fn tool_result_text(result: &RigToolResult) -> String {
    let mut out = String::new();
    for part in &result.content {
        match part {
            ToolResultContent::Text(t) => out.push_str(&t.text),
            ToolResultContent::Json { value } => out.push_str(&value.to_string()),
            ToolResultContent::Image(_) => {}
        }
    }
    out
}

/// Our tool call for one of rig's.
pub fn tool_call_to_hooks(call: &RigToolCall) -> ToolCall {
    let arguments = match &call.function.invalid_arguments {
        // What the model sent, as it sent it: the driver answers it as not an object.
        Some(raw) => Value::String(raw.clone()),
        None => Value::Object(call.function.arguments.clone()),
    };
    ToolCall::new(
        call.id.wire().into_owned(),
        call.function.name.as_str(),
        arguments,
    )
}

/// Rig's tool call for one of ours.
///
/// # Errors
/// [`ConvertError::EmptyToolName`] (as message 0) when the call has no name.
pub fn tool_call_to_rig(call: &ToolCall) -> Result<RigToolCall, ConvertError> {
    let name =
        ToolName::new(call.name.clone()).map_err(|_| ConvertError::EmptyToolName { index: 0 })?;
    Ok(RigToolCall::new(
        CallId::from_wire(call.id.clone()),
        ToolFunction::new(name, call.arguments.clone()),
    ))
}

/// Our messages for one of rig's: a system message is one system message; a user message is
/// its tool results (one tool message each) then its text (one user message, the text parts
/// joined by newlines) when it has any; an assistant turn is one assistant message with its
/// text blocks joined and its tool calls.
pub fn message_to_hooks(message: &RigMessage) -> Vec<Message> {
    match message {
        RigMessage::System { content } => vec![Message::system(content.clone())],
        RigMessage::User { content } => {
            let mut out = Vec::new();
            let mut text: Option<String> = None;
            for part in content {
                match part {
                    UserContent::ToolResult(r) => {
                        out.push(Message::tool(
                            r.call.wire().into_owned(),
                            tool_result_text(r),
                        ));
                    }
                    UserContent::Text(t) => join(&mut text, &t.text),
                    _ => {}
                }
            }
            if let Some(text) = text {
                out.push(Message::user(text));
            } else if out.is_empty() {
                // Only parts our side cannot read (an image): still a user turn.
                out.push(Message::user(""));
            }
            out
        }
        RigMessage::Assistant(turn) => {
            let mut text: Option<String> = None;
            let mut calls = Vec::new();
            for block in &turn.content {
                match block {
                    AssistantContent::Text(t) => join(&mut text, &t.text),
                    AssistantContent::ToolCall(c) => calls.push(tool_call_to_hooks(c)),
                    _ => {}
                }
            }
            let mut m = Message::assistant(text.unwrap_or_default());
            m.tool_calls = calls;
            vec![m]
        }
    }
}

fn join(acc: &mut Option<String>, piece: &str) {
    match acc {
        Some(s) => {
            s.push('\n');
            s.push_str(piece);
        }
        None => *acc = Some(piece.to_owned()),
    }
}

/// Our conversation for rig's (see [`message_to_hooks`]).
pub fn messages_to_hooks(messages: &[RigMessage]) -> Vec<Message> {
    messages.iter().flat_map(message_to_hooks).collect()
}

/// Rig's conversation for ours: consecutive tool messages become one rig user message with
/// their results (the name of each result's tool comes from the call it answers).
///
/// # Errors
/// A [`ConvertError`] naming the message rig cannot hold.
pub fn messages_to_rig(messages: &[Message]) -> Result<Vec<RigMessage>, ConvertError> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<RigMessage> = Vec::with_capacity(messages.len());
    let mut results: Vec<RigToolResult> = Vec::new();
    for (index, m) in messages.iter().enumerate() {
        if m.role != Role::Tool && !results.is_empty() {
            out.push(RigMessage::tool_results(std::mem::take(&mut results)));
        }
        match m.role {
            Role::System => out.push(RigMessage::system(m.content.clone())),
            Role::User => out.push(RigMessage::user(m.content.clone())),
            Role::Assistant => {
                for c in &m.tool_calls {
                    names.insert(c.id.as_str(), c.name.as_str());
                }
                out.push(RigMessage::Assistant(assistant_to_rig(m, index)?));
            }
            Role::Tool => {
                let id = m
                    .tool_call_id
                    .as_deref()
                    .ok_or(ConvertError::MissingCallId { index })?;
                let name = names.get(id).ok_or_else(|| ConvertError::UnknownCall {
                    index,
                    call_id: hooks_core::text::preview(id, 64).into_owned(),
                })?;
                let name =
                    ToolName::new(*name).map_err(|_| ConvertError::EmptyToolName { index })?;
                results.push(tool_result(CallId::from_wire(id), name, &m.content));
            }
        }
    }
    if !results.is_empty() {
        out.push(RigMessage::tool_results(results));
    }
    Ok(out)
}

fn tool_result(call: CallId, name: ToolName, text: &str) -> RigToolResult {
    match RigMessage::tool_result(call, name, text) {
        RigMessage::User { mut content } => match content.pop() {
            Some(UserContent::ToolResult(r)) => r,
            _ => unreachable!("Message::tool_result holds one tool result"),
        },
        _ => unreachable!("Message::tool_result is a user message"),
    }
}

fn assistant_to_rig(m: &Message, index: usize) -> Result<AssistantMessage, ConvertError> {
    let mut content = Vec::with_capacity(1 + m.tool_calls.len());
    if !m.content.is_empty() || m.tool_calls.is_empty() {
        content.push(AssistantContent::Text(Text::new(m.content.clone())));
    }
    for c in &m.tool_calls {
        content.push(AssistantContent::ToolCall(
            tool_call_to_rig(c).map_err(|_| ConvertError::EmptyToolName { index })?,
        ));
    }
    Ok(AssistantMessage::new(content))
}

/// Rig's conversation after our hooks: `original` where our hooks left a message as it was
/// (every rig part kept), a message rebuilt from ours where they changed it (its non-text
/// parts kept: images, reasoning). `None` when nothing changed.
///
/// # Errors
/// A [`ConvertError`] when a changed message cannot be held by rig.
pub fn merge_messages(
    original: &[RigMessage],
    ours: &[Message],
) -> Result<Option<Vec<RigMessage>>, ConvertError> {
    let expanded: Vec<Vec<Message>> = original.iter().map(message_to_hooks).collect();
    let total: usize = expanded.iter().map(Vec::len).sum();
    if total < ours.len() {
        let flat: Vec<&Message> = expanded.iter().flatten().collect();
        if flat.iter().zip(ours).all(|(a, b)| *a == b) {
            // Messages were appended (a retry's feedback): rig's as they are, then ours.
            let mut out = original.to_vec();
            out.extend(messages_to_rig_at(&ours[total..], total, ours)?);
            return Ok(Some(out));
        }
    }
    if total != ours.len() {
        // Messages were added or removed: ours is the conversation.
        return messages_to_rig(ours).map(Some);
    }
    let mut changed = false;
    let mut out = Vec::with_capacity(original.len());
    let mut at = 0;
    for (rig, mine) in original.iter().zip(&expanded) {
        let now = &ours[at..at + mine.len()];
        if now == mine.as_slice() {
            out.push(rig.clone());
        } else {
            changed = true;
            out.push(merge_one(rig, now, at, ours)?);
        }
        at += mine.len();
    }
    Ok(changed.then_some(out))
}

/// One rig message rebuilt from what our hooks left of it (`now`, at `index` in `all`).
fn merge_one(
    rig: &RigMessage,
    now: &[Message],
    index: usize,
    all: &[Message],
) -> Result<RigMessage, ConvertError> {
    match rig {
        RigMessage::System { .. } | RigMessage::Assistant(_)
            if now.len() == 1 && now[0].role == role_of(rig) =>
        {
            match rig {
                RigMessage::System { .. } => Ok(RigMessage::system(now[0].content.clone())),
                RigMessage::Assistant(turn) => Ok(RigMessage::Assistant(merge_assistant(
                    turn, &now[0], index,
                )?)),
                RigMessage::User { .. } => unreachable!("matched above"),
            }
        }
        RigMessage::User { content }
            if now
                .iter()
                .all(|m| matches!(m.role, Role::User | Role::Tool)) =>
        {
            let mut parts = Vec::with_capacity(content.len());
            let names: HashMap<String, ToolName> = content
                .iter()
                .filter_map(|p| match p {
                    UserContent::ToolResult(r) => {
                        Some((r.call.wire().into_owned(), r.name.clone()))
                    }
                    _ => None,
                })
                .collect();
            for (k, m) in now.iter().enumerate() {
                match m.role {
                    Role::Tool => {
                        let id = m
                            .tool_call_id
                            .as_deref()
                            .ok_or(ConvertError::MissingCallId { index: index + k })?;
                        let name = match names.get(id) {
                            Some(n) => n.clone(),
                            None => name_from_calls(all, index + k, id)?,
                        };
                        parts.push(UserContent::ToolResult(tool_result(
                            CallId::from_wire(id),
                            name,
                            &m.content,
                        )));
                    }
                    _ => parts.push(UserContent::Text(Text::new(m.content.clone()))),
                }
            }
            // What our side cannot read (images, audio, documents) stays, after the text.
            parts.extend(
                content
                    .iter()
                    .filter(|p| !matches!(p, UserContent::Text(_) | UserContent::ToolResult(_)))
                    .cloned(),
            );
            Ok(RigMessage::User { content: parts })
        }
        // Our hooks turned the message into another kind: ours as it is.
        _ => {
            let mut rebuilt = messages_to_rig_at(now, index, all)?;
            Ok(if rebuilt.len() == 1 {
                rebuilt.remove(0)
            } else {
                // Several kinds where rig had one message: their text, as one user message.
                RigMessage::user(
                    now.iter()
                        .map(|m| m.content.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            })
        }
    }
}

fn messages_to_rig_at(
    now: &[Message],
    index: usize,
    all: &[Message],
) -> Result<Vec<RigMessage>, ConvertError> {
    // The names of earlier calls come from the whole conversation.
    let mut with_history: Vec<Message> = all[..index]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .cloned()
        .collect();
    let skip = with_history.len();
    with_history.extend(now.iter().cloned());
    let mut out = messages_to_rig(&with_history)?;
    Ok(out.split_off(skip.min(out.len())))
}

fn name_from_calls(all: &[Message], before: usize, id: &str) -> Result<ToolName, ConvertError> {
    let name = all[..before]
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == id)
        .map(|c| c.name.clone())
        .ok_or_else(|| ConvertError::UnknownCall {
            index: before,
            call_id: hooks_core::text::preview(id, 64).into_owned(),
        })?;
    ToolName::new(name).map_err(|_| ConvertError::EmptyToolName { index: before })
}

fn role_of(m: &RigMessage) -> Role {
    match m {
        RigMessage::System { .. } => Role::System,
        RigMessage::User { .. } => Role::User,
        RigMessage::Assistant(_) => Role::Assistant,
    }
}

/// An assistant turn with our text and tool calls, its other blocks (reasoning, images,
/// provider items) kept in place; changed blocks lose their provider item.
fn merge_assistant(
    turn: &AssistantMessage,
    now: &Message,
    index: usize,
) -> Result<AssistantMessage, ConvertError> {
    let content =
        merge_blocks(&turn.content, now).map_err(|_| ConvertError::EmptyToolName { index })?;
    // The turn was changed: rig replays it from these blocks.
    Ok(AssistantMessage::new(content).with_stop(turn.stop.clone()))
}

/// Assistant blocks with `now`'s text (in the first text block's place) and tool calls (by
/// id in their places; new ones appended).
fn merge_blocks(
    blocks: &[AssistantContent],
    now: &Message,
) -> Result<Vec<AssistantContent>, ConvertError> {
    let mut calls: HashMap<&str, &ToolCall> =
        now.tool_calls.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut out = Vec::with_capacity(blocks.len() + 1);
    let mut text_placed = false;
    let old_text: Option<String> = {
        let mut t = None;
        for b in blocks {
            if let AssistantContent::Text(x) = b {
                join(&mut t, &x.text);
            }
        }
        t
    };
    let text_same = old_text.as_deref().unwrap_or("") == now.content;
    for b in blocks {
        match b {
            AssistantContent::Text(_) if text_same => out.push(b.clone()),
            AssistantContent::Text(_) => {
                if !text_placed {
                    text_placed = true;
                    out.push(AssistantContent::Text(Text::new(now.content.clone())));
                }
            }
            AssistantContent::ToolCall(c) => {
                let id = c.id.wire();
                if let Some(mine) = calls.remove(id.as_ref()) {
                    let same = tool_call_to_hooks(c) == *mine;
                    out.push(if same {
                        b.clone()
                    } else {
                        AssistantContent::ToolCall(tool_call_to_rig(mine)?)
                    });
                }
                // A call our hooks removed is gone.
            }
            other => out.push(other.clone()),
        }
    }
    if !text_same && !text_placed && !now.content.is_empty() {
        out.insert(0, AssistantContent::Text(Text::new(now.content.clone())));
    }
    // Calls our hooks added, in their order.
    for c in &now.tool_calls {
        if calls.contains_key(c.id.as_str()) {
            out.push(AssistantContent::ToolCall(tool_call_to_rig(c)?));
        }
    }
    Ok(out)
}

/// Our finish reason for rig's.
pub fn finish_to_hooks(reason: Option<&RigFinish>, has_calls: bool) -> FinishReason {
    match reason {
        Some(RigFinish::Length) => FinishReason::Length,
        Some(RigFinish::ContentFilter) => FinishReason::ContentFilter,
        Some(RigFinish::ToolCalls) => FinishReason::ToolCalls,
        Some(RigFinish::Stop) | None if has_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

/// Our model response for rig's completion.
pub fn response_to_hooks(response: &CompletionResponse) -> ModelResponse {
    let mut message = message_to_hooks(&RigMessage::Assistant(AssistantMessage::new(
        response.choice.clone(),
    )))
    .remove(0);
    message.role = Role::Assistant;
    let finish = finish_to_hooks(
        response.finish_reason().as_ref(),
        !message.tool_calls.is_empty(),
    );
    let usage = usage_to_hooks(&response.usage);
    let mut out = ModelResponse::text("");
    out.message = message;
    out.finish_reason = finish;
    out.usage = usage;
    out.model = response.model().map(str::to_owned);
    out
}

fn usage_to_hooks(u: &Usage) -> Option<TokenUsage> {
    if u.input_tokens.is_none() && u.output_tokens.is_none() {
        return None;
    }
    Some(TokenUsage::new(
        u.input_tokens.unwrap_or(0),
        u.output_tokens.unwrap_or(0),
    ))
}

/// Rig's completion after our hooks: `original` with our text and tool calls (other blocks
/// kept); `None` when our hooks left the reply as it was.
///
/// # Errors
/// [`ConvertError::EmptyToolName`] when a hook left a tool call without a name.
pub fn merge_response(
    original: &CompletionResponse,
    ours: &ModelResponse,
) -> Result<Option<CompletionResponse>, ConvertError> {
    let before = response_to_hooks(original);
    if before.message.content == ours.message.content
        && before.message.tool_calls == ours.message.tool_calls
    {
        return Ok(None);
    }
    let mut out = original.clone();
    out.choice = merge_blocks(&original.choice, &ours.message)?;
    Ok(Some(out))
}

/// Our tool specs for rig's tool definitions.
pub fn tools_to_hooks(tools: &[ToolDefinition]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| ToolSpec::new(t.name.clone(), t.description.clone(), t.parameters.clone()))
        .collect()
}

/// The conversation of a completion request, as our hooks see it.
pub fn request_to_hooks(request: &CompletionRequest) -> Vec<Message> {
    messages_to_hooks(&request.chat_history)
}

/// Arguments of a tool-call dispatch (rig hands them over as JSON text): an object as it is;
/// anything else as our driver expects what is not an object (the text as a string).
pub fn arguments_from_text(args: &str) -> Value {
    match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(m)) => Value::Object(m),
        Ok(Value::Null) => Value::Object(Map::new()),
        _ => Value::String(args.to_owned()),
    }
}
