//! Conversions between rig's conversation types and ours, both ways.

#![allow(clippy::unwrap_used)]

use hooks_core::{FinishReason, Message, ModelResponse, ToolCall};
use hooks_rig::ConvertError;
use hooks_rig::convert::{
    arguments_from_text, merge_messages, merge_response, messages_to_hooks, messages_to_rig,
    response_to_hooks,
};
use rig_core::completion::{AssistantContent, CompletionResponse, Message as RigMessage, Usage};
use rig_core::message::{
    AssistantMessage, CallId, Image, Origin, Reasoning, Text, ToolCall as RigToolCall,
    ToolFunction, ToolName, UserContent,
};
use serde_json::{Value, json};

fn rig_call(id: &str, name: &str, args: Value) -> RigToolCall {
    RigToolCall::new(
        CallId::from_wire(id),
        ToolFunction::new(ToolName::new(name).unwrap(), args),
    )
}

fn conversation() -> Vec<Message> {
    let mut assistant = Message::assistant("let me look");
    assistant.tool_calls = vec![
        ToolCall::new("c1", "lookup", json!({"id": 7})),
        ToolCall::new("c2", "search", json!({"q": "x"})),
    ];
    vec![
        Message::system("Be brief."),
        Message::user("find 7"),
        assistant,
        Message::tool("c1", "seven"),
        Message::tool("c2", "nothing"),
        Message::assistant("It is seven."),
    ]
}

#[test]
fn ours_to_rig_and_back_is_the_same_conversation() {
    let ours = conversation();
    let rig = messages_to_rig(&ours).unwrap();
    // Consecutive tool results are one rig user message.
    assert_eq!(rig.len(), 5);
    match &rig[3] {
        RigMessage::User { content } => {
            assert_eq!(content.len(), 2);
            let UserContent::ToolResult(r) = &content[0] else {
                panic!("a tool result")
            };
            assert_eq!(r.name.as_str(), "lookup", "the name comes from the call");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(messages_to_hooks(&rig), ours);
}

#[test]
fn rig_to_ours_and_back_keeps_rigs_messages() {
    let rig = vec![
        RigMessage::system("sys"),
        RigMessage::user("hello"),
        RigMessage::Assistant(AssistantMessage::new(vec![
            AssistantContent::Text(Text::new("calling")),
            AssistantContent::ToolCall(rig_call("c1", "add", json!({"x": 1}))),
        ])),
        RigMessage::tool_result(CallId::from_wire("c1"), ToolName::new("add").unwrap(), "2"),
    ];
    let ours = messages_to_hooks(&rig);
    assert_eq!(ours.len(), 4);
    assert_eq!(
        ours[2].tool_calls[0],
        ToolCall::new("c1", "add", json!({"x": 1}))
    );
    assert_eq!(ours[3], Message::tool("c1", "2"));
    assert_eq!(messages_to_rig(&ours).unwrap(), rig);
    // Nothing changed: nothing to patch.
    assert_eq!(merge_messages(&rig, &ours).unwrap(), None);
}

#[test]
fn a_changed_message_is_rebuilt_and_keeps_what_we_cannot_read() {
    let image = UserContent::Image(Image::default());
    let reasoning = AssistantContent::Reasoning(Reasoning::new("thinking"));
    let rig = vec![
        RigMessage::User {
            content: vec![
                UserContent::Text(Text::new("mail bob@example.com")),
                image.clone(),
            ],
        },
        RigMessage::Assistant(AssistantMessage::new(vec![
            reasoning.clone(),
            AssistantContent::Text(Text::new("sure, bob@example.com")),
            AssistantContent::ToolCall(rig_call("c1", "send", json!({"to": "bob@example.com"}))),
        ])),
    ];
    let mut ours = messages_to_hooks(&rig);
    ours[0].content = "mail [EMAIL]".into();
    ours[1].content = "sure, [EMAIL]".into();
    ours[1].tool_calls[0].arguments = json!({"to": "[EMAIL]"});
    let merged = merge_messages(&rig, &ours).unwrap().expect("changed");
    let text = format!("{merged:?}");
    assert!(!text.contains("bob@example.com"), "{text}");
    match &merged[0] {
        RigMessage::User { content } => assert!(content.contains(&image), "the image stays"),
        other => panic!("{other:?}"),
    }
    match &merged[1] {
        RigMessage::Assistant(turn) => {
            assert_eq!(turn.content[0], reasoning, "reasoning stays in place");
            assert_eq!(turn.content.len(), 3);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(messages_to_hooks(&merged), ours);
}

#[test]
fn added_or_removed_messages_make_ours_the_conversation() {
    let rig = vec![RigMessage::user("a"), RigMessage::assistant("b")];
    let mut ours = messages_to_hooks(&rig);
    ours.push(Message::user("c"));
    let merged = merge_messages(&rig, &ours).unwrap().unwrap();
    assert_eq!(messages_to_hooks(&merged), ours);
}

#[test]
fn a_tool_result_without_its_call_is_a_typed_error() {
    let err = messages_to_rig(&[Message::tool("ghost", "boo")]).unwrap_err();
    assert!(
        matches!(err, ConvertError::UnknownCall { index: 0, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("keep each tool result after"),
        "{err}"
    );
    let mut m = Message::tool("x", "y");
    m.tool_call_id = None;
    assert!(matches!(
        messages_to_rig(&[m]).unwrap_err(),
        ConvertError::MissingCallId { index: 0 }
    ));
    let mut a = Message::assistant("");
    a.tool_calls = vec![ToolCall::new("c", "", json!({}))];
    assert!(matches!(
        messages_to_rig(&[a]).unwrap_err(),
        ConvertError::EmptyToolName { index: 0 }
    ));
}

#[test]
fn responses_both_ways() {
    let rig = CompletionResponse::new(
        vec![
            AssistantContent::Text(Text::new("card 4111")),
            AssistantContent::ToolCall(rig_call("c9", "pay", json!({"card": "4111"}))),
        ],
        {
            let mut u = Usage::default();
            u.input_tokens = Some(10);
            u.output_tokens = Some(3);
            u
        },
        Origin::new("mock.script", "mock", "m"),
        Value::Null,
    );
    let ours = response_to_hooks(&rig);
    assert_eq!(ours.message.content, "card 4111");
    assert_eq!(ours.finish_reason, FinishReason::ToolCalls);
    assert_eq!(ours.usage.unwrap().input_tokens, 10);
    assert_eq!(merge_response(&rig, &ours).unwrap(), None);

    let mut redacted: ModelResponse = ours.clone();
    redacted.message.content = "card [CARD]".into();
    redacted.message.tool_calls[0].arguments = json!({"card": "[CARD]"});
    let back = merge_response(&rig, &redacted).unwrap().unwrap();
    assert!(!format!("{:?}", back.choice).contains("4111"));
    assert_eq!(response_to_hooks(&back).message, redacted.message);
}

#[test]
fn arguments_that_are_not_an_object_stay_what_the_model_sent() {
    assert_eq!(arguments_from_text(r#"{"a":1}"#), json!({"a": 1}));
    assert_eq!(arguments_from_text("null"), json!({}));
    assert_eq!(arguments_from_text("[1,2]"), json!("[1,2]"));
    assert_eq!(arguments_from_text("not json"), json!("not json"));
}
