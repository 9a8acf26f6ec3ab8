//! The error type of this crate.

use std::fmt;

/// Everything that can go wrong decoding Chromium's data.
///
/// Every variant names what was being decoded and the byte offset, inside the input given to
/// the decoder (a key, a value, an envelope), where the problem starts. Messages are
/// lowercase and start with `chromium: `, for example
/// `chromium: truncated IndexedDB key at offset 9`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The input ended before `what` was complete.
    Truncated {
        /// The structure that was cut short.
        what: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// The bytes at `offset` are not a valid `what`.
    Invalid {
        /// The structure that failed to decode.
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// A type tag this crate does not know. Nothing is guessed: decoding stops here.
    UnknownTag {
        /// What kind of tag (`V8 value tag`, `IndexedDB key type`, ...).
        what: &'static str,
        /// The tag byte.
        tag: u8,
        /// Where the tag is.
        offset: usize,
    },
    /// Values nest deeper than the decoder allows.
    TooDeep {
        /// The structure that nests.
        what: &'static str,
        /// Where the level beyond the limit starts.
        offset: usize,
        /// The deepest nesting allowed.
        limit: usize,
    },
}

impl Error {
    /// The offset the error is about.
    pub fn offset(&self) -> usize {
        match self {
            Error::Truncated { offset, .. }
            | Error::Invalid { offset, .. }
            | Error::UnknownTag { offset, .. }
            | Error::TooDeep { offset, .. } => *offset,
        }
    }

    pub(crate) fn invalid(what: &'static str, offset: usize, detail: impl Into<String>) -> Error {
        Error::Invalid {
            what,
            offset,
            detail: detail.into(),
        }
    }

    /// The same error with its offset moved by `base` (the error was found in a part of a
    /// larger input that starts at `base`).
    pub(crate) fn shifted(self, base: usize) -> Error {
        match self {
            Error::Truncated { what, offset } => Error::Truncated {
                what,
                offset: offset.saturating_add(base),
            },
            Error::Invalid {
                what,
                offset,
                detail,
            } => Error::Invalid {
                what,
                offset: offset.saturating_add(base),
                detail,
            },
            Error::UnknownTag { what, tag, offset } => Error::UnknownTag {
                what,
                tag,
                offset: offset.saturating_add(base),
            },
            Error::TooDeep {
                what,
                offset,
                limit,
            } => Error::TooDeep {
                what,
                offset: offset.saturating_add(base),
                limit,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { what, offset } => {
                write!(f, "chromium: truncated {what} at offset {offset}")
            }
            Error::Invalid {
                what,
                offset,
                detail,
            } => write!(f, "chromium: invalid {what} at offset {offset}: {detail}"),
            Error::UnknownTag { what, tag, offset } => {
                write!(f, "chromium: unknown {what} 0x{tag:02x} at offset {offset}")
            }
            Error::TooDeep {
                what,
                offset,
                limit,
            } => write!(
                f,
                "chromium: {what} nested deeper than {limit} levels at offset {offset}"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
