//! The error type of this crate, and the scrubbing that keeps credentials out of it.

use std::fmt;
use std::ops::Range;

/// Everything that can go wrong reading or writing a table or database on object storage.
///
/// Messages are lowercase, start with `object: ` and name the object (as a URL with any
/// user, password and query removed) and, for reads, the byte range. No message or `Debug`
/// output carries a credential: texts from the store are scrubbed of URL passwords and
/// signed-query parameters before they are kept.
#[non_exhaustive]
pub enum Error {
    /// A URL could not be understood or names no supported store.
    Url {
        /// The URL, scrubbed.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The object does not exist.
    NotFound {
        /// The object.
        object: String,
    },
    /// The object was replaced (its ETag or version changed, or, from a store that gives
    /// neither, its size or modification time) after it was opened; nothing of the new
    /// version was used.
    Replaced {
        /// The object.
        object: String,
    },
    /// A request failed, after retries where the failure was transient.
    Request {
        /// The object.
        object: String,
        /// The byte range asked for, if the request was a ranged read.
        range: Option<Range<u64>>,
        /// How many attempts were made.
        attempts: u32,
        /// The last failure, scrubbed.
        message: String,
    },
    /// The table's bytes are bad, or the table crate refused an operation.
    Table {
        /// The object.
        object: String,
        /// The table crate's error, whose offsets are positions in the object.
        source: leveltable_table::Error,
    },
    /// The database layer failed.
    Db {
        /// The object or prefix.
        object: String,
        /// The database crate's error.
        source: leveltable_db::Error,
    },
    /// A runtime could not be started for the blocking API.
    Runtime(String),
    /// An object read whole is larger than the most that read allows (as the store's
    /// answer says: nothing of its body was read).
    TooLarge {
        /// The object.
        object: String,
        /// Its size, as the store claims it.
        size: u64,
        /// The most bytes the read takes.
        limit: u64,
    },
}

impl Error {
    /// Whether the error says the object's bytes are malformed (as a disk reader would).
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Table { source, .. } => source.is_corruption(),
            _ => false,
        }
    }

    /// Whether the error says the object changed while open.
    pub fn is_replaced(&self) -> bool {
        matches!(self, Error::Replaced { .. })
    }

    pub(crate) fn table(object: &str, source: leveltable_table::Error) -> Error {
        Error::Table {
            object: object.to_owned(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url { url, message } => write!(f, "object: bad url {url}: {message}"),
            Error::NotFound { object } => write!(f, "object: {object} not found"),
            Error::Replaced { object } => write!(
                f,
                "object: {object} was replaced while open (its etag, version, size or modification \
                 time changed)"
            ),
            Error::Request {
                object,
                range,
                attempts,
                message,
            } => {
                write!(f, "object: request for {object}")?;
                if let Some(r) = range {
                    write!(f, " bytes {}..{}", r.start, r.end)?;
                }
                write!(f, " failed after {attempts} attempt(s): {message}")
            }
            Error::Table { object, source } => write!(f, "object: {object}: {source}"),
            Error::Db { object, source } => write!(f, "object: {object}: {source}"),
            Error::Runtime(m) => write!(f, "object: cannot start a runtime: {m}"),
            Error::TooLarge {
                object,
                size,
                limit,
            } => write!(
                f,
                "object: {object} is {size} bytes as the store answers, more than the \
                 {limit} bytes read whole; nothing of it was read"
            ),
        }
    }
}

// Debug is Display: the fields are already scrubbed, and nothing else is shown.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Table { source, .. } => Some(source),
            Error::Db { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Query parameters whose values are secrets in signed or SAS URLs.
const SECRET_PARAMS: &[&str] = &[
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "sig",
    "signature",
    "token",
    "access_token",
    "key",
];

/// Removes credentials from a text that may contain URLs: `user:password@` parts and the
/// values of signing query parameters.
pub(crate) fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(p) => {
                out.push_str("***@");
                out.push_str(&authority[p + 1..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    scrub_params(&out)
}

/// Replaces the values of [`SECRET_PARAMS`] in `text` with `***`.
fn scrub_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let lower = text.to_ascii_lowercase();
    let mut i = 0;
    while i < text.len() {
        let hit = SECRET_PARAMS.iter().find_map(|p| {
            let here = lower.get(i..)?;
            let prev_ok = i == 0 || matches!(text.as_bytes()[i - 1], b'?' | b'&' | b' ');
            (prev_ok && here.starts_with(p) && here[p.len()..].starts_with('='))
                .then_some(p.len() + 1)
        });
        match hit {
            Some(n) => {
                out.push_str(&text[i..i + n]);
                out.push_str("***");
                i += n;
                while i < text.len() && !matches!(text.as_bytes()[i], b'&' | b' ' | b'"' | b'#') {
                    i += 1;
                }
            }
            None => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// Scrubs every text a store error shows, then the known secrets too.
pub(crate) fn store_message(e: &object_store::Error, secrets: &[String]) -> String {
    let mut m = scrub(&e.to_string());
    for s in secrets {
        if s.len() >= 4 {
            m = m.replace(s.as_str(), "***");
        }
    }
    m
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_secrets() {
        let t = "GET https://AKID:s3cr3t@host:9000/b/k?X-Amz-Signature=abcd&x=1 failed";
        let s = scrub(t);
        assert!(
            !s.contains("s3cr3t") && !s.contains("AKID") && !s.contains("abcd"),
            "{s}"
        );
        assert!(s.contains("host:9000/b/k") && s.contains("x=1"), "{s}");
        assert_eq!(scrub("plain text, no url"), "plain text, no url");
        assert_eq!(scrub("az://c/p?sig=zz"), "az://c/p?sig=***");
    }
}
