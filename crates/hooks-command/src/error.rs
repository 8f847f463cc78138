//! Errors.

use std::path::PathBuf;

/// The hook settings could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The settings are not JSON.
    #[error("the hook settings are not JSON: {0}")]
    Json(String),
    /// Something in the settings is malformed.
    #[error("invalid hook settings at {path}: {message}")]
    Settings {
        /// The JSON path, e.g. `hooks.PreToolUse[0].hooks[1].timeout`.
        path: String,
        /// What is wrong, and what is expected.
        message: String,
    },
    /// The settings file cannot be read.
    #[error(
        "cannot read the hook settings file {path}: {source}; check the path and its permissions"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
