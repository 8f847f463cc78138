//! Decisions and the strict parser of a judge's answer.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the judge decided about a tool call (or a final answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum SteeringAction {
    /// Go ahead.
    Proceed,
    /// Do not run it; tell the agent what to do instead.
    Guide,
    /// Do not run it without a human's approval.
    Interrupt,
}

impl SteeringAction {
    /// `PROCEED`, `GUIDE` or `INTERRUPT`.
    pub fn as_str(self) -> &'static str {
        match self {
            SteeringAction::Proceed => "PROCEED",
            SteeringAction::Guide => "GUIDE",
            SteeringAction::Interrupt => "INTERRUPT",
        }
    }
}

impl fmt::Display for SteeringAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed decision with its reason (case kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Verdict {
    /// The decision.
    pub action: SteeringAction,
    /// Why, as the judge wrote it (may be empty for PROCEED).
    pub reason: String,
}

/// The judge's answer could not be read as a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable judge answer: {0}")]
pub struct ParseError(String);

/// The longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// Reads a judge's answer: JSON `{"decision": "...", "reason": "..."}` (also inside a
/// markdown code fence), or plain text whose first word is the decision, e.g.
/// `GUIDE: search the docs first`.
///
/// Strict: the decision must be a whole word at the very start (`GUIDELINES OK` is not
/// GUIDE); anything else is an error, never a guess. The reason keeps its case.
///
/// ```
/// use hooks_steering::{parse_verdict, SteeringAction};
/// let v = parse_verdict("GUIDE: Use the read-only replica").unwrap();
/// assert_eq!(v.action, SteeringAction::Guide);
/// assert_eq!(v.reason, "Use the read-only replica");
/// assert!(parse_verdict("GUIDELINES OK").is_err());
/// assert!(parse_verdict(r#"{"decision": "PROCEED", "reason": "fine"}"#).is_ok());
/// ```
///
/// # Errors
/// [`ParseError`] when the answer does not start with a decision.
pub fn parse_verdict(text: &str) -> Result<Verdict, ParseError> {
    let t = strip_fence(text.trim());
    if t.starts_with('{') {
        return parse_json(t);
    }
    let word_end = t
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(t.len());
    let word = &t[..word_end];
    let action = action_of(word).ok_or_else(|| ParseError(describe(text)))?;
    // A letter or digit glued on (e.g. `GUIDE2`) is not a whole word either.
    let rest = &t[word_end..];
    if rest
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return Err(ParseError(describe(text)));
    }
    let reason = rest.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, ':' | '-' | '–' | '—' | ',' | '.' | '*')
    });
    Ok(Verdict {
        action,
        reason: clip(reason.trim()),
    })
}

fn action_of(word: &str) -> Option<SteeringAction> {
    match word.to_ascii_uppercase().as_str() {
        "PROCEED" => Some(SteeringAction::Proceed),
        "GUIDE" => Some(SteeringAction::Guide),
        "INTERRUPT" => Some(SteeringAction::Interrupt),
        _ => None,
    }
}

fn parse_json(t: &str) -> Result<Verdict, ParseError> {
    let v: serde_json::Value = serde_json::from_str(t).map_err(|_| ParseError(describe(t)))?;
    let decision = v
        .get("decision")
        .and_then(|d| d.as_str())
        .ok_or_else(|| ParseError(describe(t)))?;
    let action = action_of(decision.trim()).ok_or_else(|| ParseError(describe(t)))?;
    let reason = v.get("reason").and_then(|r| r.as_str()).unwrap_or("");
    Ok(Verdict {
        action,
        reason: clip(reason.trim()),
    })
}

fn strip_fence(t: &str) -> &str {
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    inner.trim().strip_suffix("```").unwrap_or(inner).trim()
}

fn clip(s: &str) -> String {
    hooks_core::text::truncate_chars(s, MAX_REASON_CHARS)
        .0
        .to_owned()
}

fn describe(text: &str) -> String {
    format!("{:?}", hooks_core::text::preview(text.trim(), 80))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_whole_words_at_the_start() {
        for (text, action, reason) in [
            ("PROCEED", SteeringAction::Proceed, ""),
            (
                "proceed - looks fine",
                SteeringAction::Proceed,
                "looks fine",
            ),
            (
                "GUIDE: Ask the user first",
                SteeringAction::Guide,
                "Ask the user first",
            ),
            (
                "**INTERRUPT** — Needs Sign-Off",
                SteeringAction::Interrupt,
                "Needs Sign-Off",
            ),
            (
                "```json\n{\"decision\":\"GUIDE\",\"reason\":\"Use staging\"}\n```",
                SteeringAction::Guide,
                "Use staging",
            ),
        ] {
            let t = text.trim_start_matches('*');
            let v = parse_verdict(t).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((v.action, v.reason.as_str()), (action, reason), "{text}");
        }
        for bad in [
            "GUIDELINES OK",
            "PROCEEDING",
            "I think PROCEED",
            "",
            "{\"decision\":\"MAYBE\"}",
            "{broken",
            "GUIDE2 x",
        ] {
            assert!(parse_verdict(bad).is_err(), "{bad}");
        }
    }
}
