//! Errors of the steering provider.

use std::time::Duration;

/// A steering component could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The judge's base URL is not an http(s) URL.
    #[error(
        "the judge's base URL must start with http:// or https://, got {url:?}; give the server's URL, e.g. http://127.0.0.1:8080/v1"
    )]
    BadBaseUrl {
        /// The URL given (its start).
        url: String,
    },
    /// The HTTP client could not be built (its cause is the source).
    #[error("cannot build the judge's HTTP client; check the TLS and proxy settings")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A steering result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The judge failed to give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// No answer in time.
    #[error("timed out after {}", humane(*.0))]
    Timeout(Duration),
    /// The server could not be reached (refused, reset, DNS …).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// A non-2xx status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The body was larger than the cap.
    #[error("response body larger than {limit} bytes")]
    BodyTooLarge {
        /// The cap.
        limit: usize,
    },
    /// The body was not a chat-completion response.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The answer was cut off at the token limit.
    #[error(
        "the answer was cut off (finish_reason = length); raise max_tokens or shorten the prompt"
    )]
    CutOff,
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
    fn build_errors_say_what_to_do_and_do_not_repeat_their_source() {
        let e = Error::BadBaseUrl {
            url: "localhost:8080".into(),
        };
        assert_eq!(
            e.to_string(),
            "the judge's base URL must start with http:// or https://, got \"localhost:8080\"; give the server's URL, e.g. http://127.0.0.1:8080/v1"
        );
        let e = Error::HttpClient("no TLS backend".into());
        assert!(!e.to_string().contains("no TLS backend"));
        assert_eq!(
            std::error::Error::source(&e)
                .map(|s| s.to_string())
                .as_deref(),
            Some("no TLS backend")
        );
    }

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
            JudgeError::Status {
                status: 500,
                body: "boom".into()
            }
            .to_string(),
            "HTTP 500: boom"
        );
    }
}
