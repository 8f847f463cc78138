//! Errors of the logging providers.

/// A logging provider could not be built or installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Too many extra fields: a `tracing` event carries at most 32 fields.
    #[error(
        "too many extra fields ({given}); at most {max} fit beside the event's own fields, so merge some into one"
    )]
    TooManyExtraFields {
        /// How many were given.
        given: usize,
        /// The most allowed.
        max: usize,
    },
    /// The target is empty.
    #[error("the log target must not be empty; use e.g. \"hooks::agent\"")]
    EmptyTarget,
    /// A global subscriber is already installed.
    #[error(
        "a global tracing subscriber is already installed; the hooks log through it as they are, so skip this call"
    )]
    SubscriberAlreadySet(#[source] tracing::subscriber::SetGlobalDefaultError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        assert_eq!(
            Error::TooManyExtraFields { given: 40, max: 20 }.to_string(),
            "too many extra fields (40); at most 20 fit beside the event's own fields, so merge some into one"
        );
        assert_eq!(
            Error::EmptyTarget.to_string(),
            "the log target must not be empty; use e.g. \"hooks::agent\""
        );
    }
}
