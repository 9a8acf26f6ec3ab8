//! One object, pinned at open: its size and ETag (or version, or modification time), and
//! the ranged reads of it, each retried, length-checked and conditional on the pinned
//! version.

use std::ops::Range;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::{GetOptions, GetRange};

use crate::{Error, Location, Result};

/// An object pinned at open. Every read carries `If-Match` with the ETag seen then (or
/// names the version seen then), so a replaced object fails the read with
/// [`Error::Replaced`] instead of returning bytes of another version. From a store that
/// gives neither, a read whose object has another size or modification time than at open
/// fails so too (a replacement of the same size within the same second, the resolution of
/// HTTP's `Last-Modified`, cannot be told apart).
#[derive(Debug, Clone)]
pub struct RemoteObject {
    pub(crate) location: Location,
    pub(crate) size: u64,
    pub(crate) e_tag: Option<String>,
    pub(crate) version: Option<String>,
    /// When the object was last modified, as the store said at open: seconds and
    /// nanoseconds since the Unix epoch (zero from a server that does not say).
    pub(crate) modified: (i64, u32),
}

/// What a failed attempt means.
enum Failure {
    /// Try again (5xx, timeout, reset, short body).
    Transient(String),
    /// Give up with this error.
    Final(Error),
}

impl RemoteObject {
    /// Reads the last `len` bytes of the object at `location` in one request and pins the
    /// object: returns it and the bytes (all of them if the object is shorter).
    ///
    /// # Errors
    /// [`Error::NotFound`], or [`Error::Request`] after retries.
    pub async fn open_tail(location: &Location, len: u64) -> Result<(RemoteObject, Bytes)> {
        let opts = || GetOptions {
            range: Some(GetRange::Suffix(len.max(1))),
            ..GetOptions::default()
        };
        let (bytes, range, meta) = fetch(location, None, opts, len.max(1)).await?;
        let object = RemoteObject {
            location: location.clone(),
            size: meta.size,
            modified: modified(&meta),
            e_tag: meta.e_tag,
            version: meta.version,
        };
        if range.end != object.size {
            return Err(Error::Request {
                object: location.name.clone(),
                range: Some(range),
                attempts: 1,
                message: format!(
                    "the tail read did not end at the object's end, {}",
                    object.size
                ),
            });
        }
        Ok((object, bytes))
    }

    /// The object's size when it was pinned.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The ETag it was pinned at, if the store gave one.
    pub fn e_tag(&self) -> Option<&str> {
        self.e_tag.as_deref()
    }

    /// The location.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Reads `range` of the pinned version: exactly `range.end - range.start` bytes.
    ///
    /// # Errors
    /// [`Error::Replaced`] if the object changed since it was pinned; [`Error::Request`]
    /// after retries; a range past the end is an [`Error::Request`] too.
    pub async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        if range.start >= range.end || range.end > self.size {
            return Err(Error::Request {
                object: self.location.name.clone(),
                range: Some(range),
                attempts: 0,
                message: format!("range outside the object of {} bytes", self.size),
            });
        }
        let opts = || GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.e_tag.clone(),
            version: if self.e_tag.is_none() {
                self.version.clone()
            } else {
                None
            },
            ..GetOptions::default()
        };
        let (bytes, _, meta) =
            fetch(&self.location, Some(self), opts, range.end - range.start).await?;
        if meta.size != self.size {
            return Err(Error::Replaced {
                object: self.location.name.clone(),
            });
        }
        Ok(bytes)
    }
}

/// The whole object at `location`, of at most `limit` bytes, in one GET (retried); for
/// small files read whole.
///
/// # Errors
/// [`Error::NotFound`]; [`Error::TooLarge`] if the store says the object holds more than
/// `limit` bytes (nothing of it is read); [`Error::Request`] after retries.
pub(crate) async fn read_whole(location: &Location, limit: u64) -> Result<Bytes> {
    let (bytes, _, _) = fetch(location, None, GetOptions::default, limit).await?;
    Ok(bytes)
}

/// Whether `meta`, of a read's response, is of another version than `pinned`: another
/// ETag, or, from a store that gives neither an ETag nor a version, another modification
/// time (the size is checked by the read).
fn replaced(pinned: &RemoteObject, meta: &object_store::ObjectMeta) -> bool {
    match (&pinned.e_tag, &meta.e_tag) {
        (Some(pinned), Some(now)) => pinned != now,
        (None, _) if pinned.version.is_none() => pinned.modified != modified(meta),
        _ => false,
    }
}

/// When the object of `meta` was last modified: seconds and nanoseconds since the epoch.
fn modified(meta: &object_store::ObjectMeta) -> (i64, u32) {
    let at = meta.last_modified;
    (at.timestamp(), at.timestamp_subsec_nanos())
}

/// The most bytes a response's buffer is given before its body arrives; beyond this it
/// grows as the body does.
const FIRST_BUFFER: usize = 8 << 20;

/// One GET with retries: the bytes, the range they are, and the object's metadata. Every
/// attempt is counted. A response claiming more than `limit` bytes is refused before its
/// body is read ([`Error::TooLarge`]); the body is gathered as it arrives, into a buffer
/// sized by the bytes received (at most [`FIRST_BUFFER`] ahead), never by the claim. A
/// body shorter than its range is a transient failure, never data.
async fn fetch(
    location: &Location,
    pinned: Option<&RemoteObject>,
    options: impl Fn() -> GetOptions,
    limit: u64,
) -> Result<(Bytes, Range<u64>, object_store::ObjectMeta)> {
    if let Some(path) = &location.local {
        // The local store opens files with a plain open, which waits for a writer on a
        // FIFO: refuse anything but a regular file first (a missing one is the store's
        // to report).
        match leveltable_db::storage::open_regular(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Request {
                    object: location.name.clone(),
                    range: None,
                    attempts: 0,
                    message: e.to_string(),
                });
            }
            _ => {}
        }
    }
    let started = Instant::now();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        location.stats.get();
        let opts = options();
        let asked = opts.range.clone();
        let failure = match location.store.get_opts(&location.path, opts).await {
            Ok(result) => {
                let range = result.range.clone();
                let meta = result.meta.clone();
                let claimed = range.end.saturating_sub(range.start);
                if claimed > limit {
                    return Err(Error::TooLarge {
                        object: location.name.clone(),
                        size: claimed,
                        limit,
                    });
                }
                match gather(result, claimed).await {
                    Ok(Some(bytes)) if bytes.len() as u64 == claimed => {
                        location.stats.read(bytes.len() as u64);
                        let changed = pinned.is_some_and(|p| replaced(p, &meta));
                        if changed {
                            return Err(Error::Replaced {
                                object: location.name.clone(),
                            });
                        }
                        return Ok((bytes, range, meta));
                    }
                    Ok(Some(bytes)) => Failure::Transient(format!(
                        "short body: {} of {claimed} bytes",
                        bytes.len()
                    )),
                    Ok(None) => Failure::Transient(format!("long body: more than {claimed} bytes")),
                    Err(e) => classify(location, pinned, &e),
                }
            }
            Err(e) => classify(location, pinned, &e),
        };
        let message = match failure {
            Failure::Final(e) => return Err(e),
            Failure::Transient(m) => m,
        };
        match location.retry.backoff(attempt, started) {
            Some(wait) => {
                location.stats.retry();
                tokio::time::sleep(wait).await;
            }
            None => {
                let range = asked.and_then(|r| match r {
                    GetRange::Bounded(r) => Some(r),
                    GetRange::Offset(o) => Some(o..pinned.map_or(u64::MAX, |p| p.size)),
                    GetRange::Suffix(n) => pinned.map(|p| p.size.saturating_sub(n)..p.size),
                });
                return Err(Error::Request {
                    object: location.name.clone(),
                    range,
                    attempts: attempt,
                    message,
                });
            }
        }
    }
}

/// The body of `result`, gathered as it arrives into a buffer that grows with it; `None`
/// if it goes on past `claimed` bytes (read no further than that).
async fn gather(
    result: object_store::GetResult,
    claimed: u64,
) -> std::result::Result<Option<Bytes>, object_store::Error> {
    let claimed = usize::try_from(claimed).unwrap_or(usize::MAX);
    let mut stream = result.into_stream();
    let Some(first) = stream.next().await.transpose()? else {
        return Ok(Some(Bytes::new()));
    };
    if first.len() > claimed {
        return Ok(None);
    }
    let mut buf: Option<BytesMut> = None;
    let mut whole = first;
    while let Some(chunk) = stream.next().await.transpose()? {
        let held = buf.get_or_insert_with(|| {
            let mut b = BytesMut::with_capacity(claimed.min(FIRST_BUFFER).max(whole.len()));
            b.extend_from_slice(&whole);
            b
        });
        if chunk.len() > claimed - held.len() {
            return Ok(None);
        }
        held.extend_from_slice(&chunk);
    }
    if let Some(b) = buf {
        whole = b.freeze();
    }
    Ok(Some(whole))
}

/// Sorts a store error into retry or give up.
fn classify(
    location: &Location,
    pinned: Option<&RemoteObject>,
    e: &object_store::Error,
) -> Failure {
    use object_store::Error as E;
    let object = location.name.clone();
    if crate::connector::refused_redirect(e).is_some() {
        return Failure::Final(Error::Request {
            object,
            range: None,
            attempts: 1,
            message: location.message(e),
        });
    }
    match e {
        E::NotFound { .. } if pinned.is_some() => Failure::Final(Error::Replaced { object }),
        E::NotFound { .. } => Failure::Final(Error::NotFound { object }),
        E::Precondition { .. } | E::NotModified { .. } => {
            Failure::Final(Error::Replaced { object })
        }
        E::Generic { .. } | E::JoinError { .. } => Failure::Transient(location.message(e)),
        _ => Failure::Final(Error::Request {
            object,
            range: None,
            attempts: 1,
            message: location.message(e),
        }),
    }
}
