//! Errors a user can fix, and the one map from outcomes to exit codes.
//!
//! Exit codes: 0 success; 1 a failed check or target; 2 bad input or usage (a scenario, a
//! trace, a flag or the output folder); 3 the run could not complete (an I/O failure).

use std::borrow::Cow;
use std::path::Path;

/// The most characters of a user's value that an error message repeats.
pub const CLIP_CHARS: usize = 60;
/// The most characters of a field path in an error (an unknown field's name can be anything).
const FIELD_CHARS: usize = 120;
/// The most characters of one error message's own text.
const MESSAGE_CHARS: usize = 400;

/// A value as an error message may repeat it: at most [`CLIP_CHARS`] characters, the rest
/// replaced by `…` and the full length.
pub fn clip(text: &str) -> Cow<'_, str> {
    clip_to(text, CLIP_CHARS)
}

fn clip_to(text: &str, limit: usize) -> Cow<'_, str> {
    match text.char_indices().nth(limit) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… ({} characters)",
            &text[..cut],
            text.chars().count()
        )),
    }
}

/// The most characters of a file's path in an error.
const PATH_CHARS: usize = 160;

/// A path as an error names it: whole when short, else its start and its end (the file's own
/// name) around `…`, with the full length.
pub fn clip_path(path: &Path) -> String {
    let text = path.display().to_string();
    let count = text.chars().count();
    if count <= PATH_CHARS {
        return text;
    }
    let head: String = text.chars().take(60).collect();
    let tail: String = text.chars().skip(count - 80).collect();
    format!("{head}…{tail} ({count} characters)")
}

/// A message on one line of readable length: line breaks become spaces, and a message that
/// echoed a huge value is cut.
fn one_line(message: String) -> String {
    let message = if message.contains(['\n', '\r']) {
        message.replace(['\n', '\r'], " ")
    } else {
        message
    };
    clip_to(&message, MESSAGE_CHARS).into_owned()
}

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
            file: clip_path(file),
            field: clip_to(&one_line(field.into()), FIELD_CHARS).into_owned(),
            message: one_line(message.into()),
        }
    }

    /// A trace line error.
    pub fn trace(file: &Path, line: u64, message: impl Into<String>) -> Self {
        InputError::Trace {
            file: clip_path(file),
            line,
            message: one_line(message.into()),
        }
    }

    /// A file or folder error.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        InputError::File {
            file: clip_path(file),
            message: one_line(message.into()),
        }
    }

    /// A command-line flag error.
    pub fn flag(flag: impl Into<String>, message: impl Into<String>) -> Self {
        InputError::Flag {
            flag: flag.into(),
            message: one_line(message.into()),
        }
    }
}

/// A check or target that failed: the run worked and the answer is no (exit code 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

/// The run could not complete: a file or folder of the user's that cannot be written, named
/// (exit code 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct IoFailure {
    /// The user's file or folder.
    pub(crate) path: String,
    /// What failed.
    pub(crate) message: String,
}

impl IoFailure {
    /// A failure to write or move `path`.
    pub fn new(path: &Path, message: impl std::fmt::Display) -> Self {
        IoFailure {
            path: clip_path(path),
            message: one_line(message.to_string()),
        }
    }
}

/// Exit code for a failed check or target.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a run that could not complete.
pub const EXIT_FAILURE: u8 = 3;

/// The exit code for an error: 3 when a user's file could not be written, 2 when any cause is
/// bad input, 1 for a failed check or target, 3 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<IoFailure>()) {
        EXIT_FAILURE
    } else if err.chain().any(|cause| cause.is::<InputError>()) {
        EXIT_BAD_INPUT
    } else if err.chain().any(|cause| cause.is::<Failed>()) {
        EXIT_FAILED
    } else {
        EXIT_FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_clipped() {
        assert_eq!(clip("short"), "short");
        let long = "x".repeat(10_000);
        let clipped = clip(&long);
        assert!(clipped.len() < 100 && clipped.ends_with("(10000 characters)"));
        let message = InputError::trace(Path::new("t.csv"), 2, format!("bad {long}\nmore"));
        assert!(message.to_string().len() < 500);
        assert!(!message.to_string().contains('\n'));
        let deep = Path::new(&"d/".repeat(2000)).join("summary.csv");
        let err = IoFailure::new(&deep, "cannot write").to_string();
        assert!(
            err.len() < 300 && err.contains("summary.csv") && err.contains("4011 characters"),
            "{err}"
        );
    }
}
