//! Errors of the steering provider.

use std::time::Duration;

/// The judge failed to give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// No answer in time.
    #[error("timed out after {}", humane(*.0))]
    Timeout(Duration),
    /// The judge's model call failed (unreachable, an error status, a malformed or
    /// oversized reply …: the model client's error says which).
    #[error("{0}")]
    Model(hooks_core::ModelError),
    /// A custom judge failed for a reason of its own.
    #[error("{0}")]
    Other(String),
    /// The answer was cut off at the token limit.
    #[error(
        "the answer was cut off (finish_reason = length); raise max_tokens or shorten the prompt"
    )]
    CutOff,
    /// The answer ended some other way than normally (filtered, an error, tool calls …).
    #[error(
        "the answer did not finish normally (finish_reason = {finish_reason}); it is not read as a verdict"
    )]
    Unfinished {
        /// The finish reason the judge gave.
        finish_reason: String,
    },
    /// The answer did not start with a decision.
    #[error("unparseable answer: {0}")]
    Unparseable(String),
    /// The call's arguments are over the judge's budget: it is not judged on a prefix.
    #[error(
        "the arguments are too large to judge ({chars} characters, over the {limit}-character budget); raise it with with_max_argument_chars or send smaller arguments"
    )]
    TooLarge {
        /// Their size, after whitespace runs were collapsed.
        chars: usize,
        /// The budget.
        limit: usize,
    },
    /// The run's context (recent calls, model-call count) could not be held, so the judge
    /// could not see the whole picture.
    #[error("no room for this run's context: {0}")]
    ContextFull(#[from] hooks_core::RunLocalFull),
}

impl JudgeError {
    /// A short, stable name of the kind, for spans and metrics (no free text).
    pub fn kind(&self) -> &'static str {
        match self {
            JudgeError::Timeout(_) => "timeout",
            JudgeError::Model(_) => "model_error",
            JudgeError::Other(_) => "other",
            JudgeError::CutOff => "cut_off",
            JudgeError::Unfinished { .. } => "unfinished",
            JudgeError::Unparseable(_) => "unparseable",
            JudgeError::TooLarge { .. } => "too_large",
            JudgeError::ContextFull(_) => "context_full",
        }
    }
}

fn humane(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_failure() {
        assert_eq!(
            JudgeError::Timeout(Duration::from_secs(10)).to_string(),
            "timed out after 10s"
        );
        assert_eq!(
            JudgeError::Timeout(Duration::from_millis(250)).to_string(),
            "timed out after 0.250s"
        );
        assert_eq!(
            JudgeError::Model(hooks_core::ModelError::Server {
                status: Some(500),
                message: "boom".into()
            })
            .to_string(),
            "model server error (status 500): boom"
        );
    }
}
