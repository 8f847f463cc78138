//! Errors of the retry providers.

use std::time::Duration;

/// A retry hook's configuration is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backoff factor is below 1 or not a number.
    #[error("backoff_factor must be a finite number of at least 1, got {0}")]
    BadFactor(f64),
    /// The first delay is longer than the cap.
    #[error("initial_delay ({initial:?}) must not exceed max_delay ({max:?})")]
    InitialAboveMax {
        /// The first delay.
        initial: Duration,
        /// The cap.
        max: Duration,
    },
    /// The proportional jitter is outside 0..=1.
    #[error("proportional jitter must be between 0 and 1, got {0}")]
    BadJitter(f64),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_bad_value() {
        assert_eq!(
            Error::BadFactor(0.5).to_string(),
            "backoff_factor must be a finite number of at least 1, got 0.5"
        );
        assert_eq!(
            Error::InitialAboveMax {
                initial: Duration::from_secs(5),
                max: Duration::from_secs(1)
            }
            .to_string(),
            "initial_delay (5s) must not exceed max_delay (1s)"
        );
        assert_eq!(
            Error::BadJitter(2.0).to_string(),
            "proportional jitter must be between 0 and 1, got 2"
        );
    }
}
