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

/// Reads a judge's answer, one way only, and refuses anything else.
///
/// - JSON `{"decision": "...", "reason": "..."}` (structured output; also inside a markdown code
///   fence): the decision is the `decision` field, one of the three values, and nothing else
///   is read from it.
/// - Text: the first line is exactly `PROCEED`, or `GUIDE: <reason>` / `INTERRUPT: <reason>`
///   (the keyword in any case, then `:` or the end of the line; a reason may continue on the
///   next lines), and no *other* verdict keyword appears anywhere in the reply.
///
/// So `PROCEED? No. This deletes the database, so INTERRUPT.`, `Proceed only after a human
/// approves: INTERRUPT`, `PROCEED-NOT: …`, `Proceed with caution - GUIDE: …` and `proceed: no`
/// are all errors, which the hook's failure policy turns into a cancel (closed by default).
///
/// ```
/// use hooks_steering::{parse_verdict, SteeringAction};
/// let v = parse_verdict("GUIDE: Use the read-only replica").unwrap();
/// assert_eq!(v.action, SteeringAction::Guide);
/// assert_eq!(v.reason, "Use the read-only replica");
/// assert!(parse_verdict("GUIDELINES OK").is_err());
/// assert!(parse_verdict("PROCEED? No. This deletes the database, so INTERRUPT.").is_err());
/// assert!(parse_verdict(r#"{"decision": "PROCEED", "reason": "fine"}"#).is_ok());
/// ```
///
/// # Errors
/// [`ParseError`] when the answer is not exactly one clear verdict.
pub fn parse_verdict(text: &str) -> Result<Verdict, ParseError> {
    let t = strip_fence(text.trim());
    if t.starts_with('{') {
        return parse_json(t);
    }
    let err = || ParseError(describe(text));
    let (first, more) = match t.split_once('\n') {
        Some((first, more)) => (first.trim(), more.trim()),
        None => (t.trim(), ""),
    };
    let word_end = first
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(first.len());
    let action = action_of(&first[..word_end]).ok_or_else(err)?;
    let after = first[word_end..].trim_end();
    let reason = match action {
        // Exactly the word: anything after it could qualify or negate it.
        SteeringAction::Proceed if after.is_empty() => more,
        SteeringAction::Guide | SteeringAction::Interrupt if after.is_empty() => more,
        SteeringAction::Guide | SteeringAction::Interrupt => {
            let r = after.strip_prefix(':').ok_or_else(err)?.trim();
            if r.is_empty() { more } else { r }
        }
        _ => return Err(err()),
    };
    // One reading only: the whole reply (fence and all, with look-alike letters and invisible
    // characters folded away) names no other verdict, and a PROCEED is not named twice (the
    // second would qualify or negate it).
    let folded = fold_confusables(text);
    let mut named = folded
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter_map(action_of);
    let mut seen_self = 0;
    let ambiguous = named.any(|a| {
        if a == action {
            seen_self += 1;
            action == SteeringAction::Proceed && seen_self > 1
        } else {
            true
        }
    });
    // A PROCEED with letters outside ASCII left after folding could hide a look-alike we do
    // not know: it is not one clear verdict.
    let unknown_letters = folded.chars().any(|c| c.is_alphabetic() && !c.is_ascii());
    if ambiguous || unknown_letters && action == SteeringAction::Proceed {
        return Err(err());
    }
    Ok(Verdict {
        action,
        reason: reason_or_default(action, clip(reason)),
    })
}

/// The reply with invisible format characters removed and the Cyrillic and Greek letters
/// that look like Latin ones replaced by them, so `ІNTERRUPT` (Cyrillic І) or `INTER\u{200B}RUPT`
/// still name a verdict.
fn fold_confusables(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
        })
        .map(|c| match c {
            'А' | 'а' | 'Α' | 'α' => 'A',
            'В' | 'в' | 'Β' => 'B',
            'С' | 'с' | 'Ϲ' => 'C',
            'Е' | 'е' | 'Ε' | 'ε' => 'E',
            'Н' | 'н' | 'Η' => 'H',
            'І' | 'і' | 'Ι' | 'ι' | 'Ӏ' => 'I',
            'Ј' | 'ј' => 'J',
            'К' | 'к' | 'Κ' | 'κ' => 'K',
            'М' | 'м' | 'Μ' => 'M',
            'Ν' => 'N',
            'О' | 'о' | 'Ο' | 'ο' => 'O',
            'Р' | 'р' | 'Ρ' | 'ρ' => 'P',
            'Ѕ' | 'ѕ' => 'S',
            'Т' | 'т' | 'Τ' | 'τ' => 'T',
            'Х' | 'х' | 'Χ' | 'χ' => 'X',
            'У' | 'у' | 'Υ' => 'Y',
            'Ζ' => 'Z',
            'Ԁ' | 'ԁ' => 'D',
            'Ɡ' | 'ɡ' => 'G',
            'ԛ' => 'Q',
            'ᴜ' | 'Ս' | 'ս' => 'U',
            'ԝ' | 'Ԝ' => 'W',
            'ӏ' => 'L',
            'ɾ' => 'R',
            c => c,
        })
        .collect()
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
        reason: reason_or_default(action, clip(reason.trim())),
    })
}

/// What a GUIDE or INTERRUPT says when the judge gave no reason of its own.
pub const NO_REASON: &str = "the judge gave no reason";

/// A GUIDE or INTERRUPT reason that is empty or only repeats the verdict
/// (`{"decision":"GUIDE","reason":"GUIDE"}`) is replaced by [`NO_REASON`], so nobody reads
/// `Steering blocked: GUIDE` as guidance.
fn reason_or_default(action: SteeringAction, reason: String) -> String {
    if action == SteeringAction::Proceed {
        return reason;
    }
    let bare = reason.trim_matches(|c: char| !c.is_alphanumeric());
    if bare.is_empty() || action_of(bare) == Some(action) {
        NO_REASON.to_owned()
    } else {
        reason
    }
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
    fn a_reason_that_only_repeats_the_verdict_or_is_empty_gets_the_default() {
        for text in [
            r#"{"decision":"GUIDE","reason":"GUIDE"}"#,
            r#"{"decision":"INTERRUPT","reason":" interrupt. "}"#,
            r#"{"decision":"GUIDE","reason":""}"#,
            r#"{"decision":"GUIDE"}"#,
            "GUIDE:",
            "INTERRUPT",
            "GUIDE: guide",
        ] {
            assert_eq!(parse_verdict(text).unwrap().reason, NO_REASON, "{text}");
        }
        assert_eq!(
            parse_verdict(r#"{"decision":"GUIDE","reason":"Use the cache"}"#)
                .unwrap()
                .reason,
            "Use the cache"
        );
        assert_eq!(parse_verdict("PROCEED").unwrap().reason, "");
    }

    #[test]
    fn decisions_are_whole_words_at_the_start() {
        for (text, action, reason) in [
            ("PROCEED", SteeringAction::Proceed, ""),
            ("proceed\nlooks fine", SteeringAction::Proceed, "looks fine"),
            (
                "GUIDE: Ask the user first",
                SteeringAction::Guide,
                "Ask the user first",
            ),
            (
                "interrupt:\nNeeds Sign-Off",
                SteeringAction::Interrupt,
                "Needs Sign-Off",
            ),
            (
                "```json\n{\"decision\":\"GUIDE\",\"reason\":\"Use staging\"}\n```",
                SteeringAction::Guide,
                "Use staging",
            ),
        ] {
            let v = parse_verdict(text).unwrap_or_else(|e| panic!("{text}: {e}"));
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
            "proceed - looks fine",
            "**INTERRUPT** — Needs Sign-Off",
            "PROCEED? No. This deletes the database, so INTERRUPT.",
            "Proceed only after a human approves: INTERRUPT",
            "PROCEED-NOT: it deletes data",
            "Proceed with caution - GUIDE: use the replica",
            "proceed: no",
            "GUIDE: do not proceed",
            "PROCEED\nbut a human should INTERRUPT this",
            "PROCEED.",
            "```interrupt\nPROCEED\n```",
            "```INTERRUPT PROCEED```",
            "```guide\nPROCEED",
            "PROCEED\nNo - do not proceed, a human must approve this first.",
            "PROCEED\n\u{406}NTERRUPT: needs approval",
            "PROCEED\nINTER\u{200B}RUPT: needs approval",
        ] {
            assert!(parse_verdict(bad).is_err(), "{bad}");
        }
    }
}
