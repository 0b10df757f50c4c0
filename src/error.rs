//! Errors a user can fix, and the one map from outcomes to exit codes.
//!
//! Exit codes: 0 success; 1 a failed check or target; 2 bad input or usage (a scenario, a
//! trace, a flag or the output folder); 3 the run could not complete (an I/O failure).

use std::path::Path;

/// Bad input: always names the file, and the field or line, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A scenario field is missing, malformed or out of range.
    #[error("{file}: {field}: {message}")]
    Scenario {
        /// The scenario file.
        file: String,
        /// The field's path, such as `hold.mean_ms` or `shards[2]`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A trace line is malformed or out of order.
    #[error("{file}: line {line}: {message}")]
    Trace {
        /// The trace file.
        file: String,
        /// The 1-based line number (the header is line 1).
        line: u64,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A file cannot be read, or the output folder cannot be used.
    #[error("{file}: {message}")]
    File {
        /// The file or folder.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A command-line value is out of range.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag, such as `--shards`.
        flag: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl InputError {
    /// A scenario field error.
    pub fn scenario(file: &Path, field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Scenario {
            file: file.display().to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// A trace line error.
    pub fn trace(file: &Path, line: u64, message: impl Into<String>) -> Self {
        InputError::Trace {
            file: file.display().to_string(),
            line,
            message: message.into(),
        }
    }

    /// A file or folder error.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        InputError::File {
            file: file.display().to_string(),
            message: message.into(),
        }
    }
}

/// A check or target that failed: the run worked and the answer is no (exit code 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

/// Exit code for a failed check or target.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a run that could not complete.
pub const EXIT_FAILURE: u8 = 3;

/// The exit code for an error: 2 when any cause is bad input, 1 for a failed check or
/// target, 3 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<InputError>()) {
        EXIT_BAD_INPUT
    } else if err.chain().any(|cause| cause.is::<Failed>()) {
        EXIT_FAILED
    } else {
        EXIT_FAILURE
    }
}
