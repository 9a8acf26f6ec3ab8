//! A blocking [`ReadAt`] over an object: each read the table reader makes is one ranged GET
//! (reads inside the tail fetched at open excepted). Used where a byte source is needed
//! (database tables, the plain reader measured against [`AsyncTable`](crate::AsyncTable)).

use std::io;
use std::sync::Mutex;

use bytes::Bytes;
use leveltable_table::ReadAt;

use crate::remote::RemoteObject;
use crate::runtime::block_on;
use crate::{Location, Result};

/// The first and largest readahead of sequential reads.
const FIRST_READAHEAD: u64 = 256 << 10;
const MAX_READAHEAD: u64 = 8 << 20;

/// A pinned object read one request per read. With a tail (see
/// [`open_with_tail`](Self::open_with_tail)) reads of the last bytes cost nothing, so a
/// table over it opens in one request. With [`sequential_readahead`](Self::sequential_readahead),
/// a read that starts where the previous one ended fetches a growing window ahead (256 KiB
/// doubling to 8 MiB), so a scan costs one request per window, not per block.
#[derive(Debug)]
pub struct ObjectReadAt {
    object: RemoteObject,
    tail: Bytes,
    tail_start: u64,
    window: Option<Mutex<Window>>,
}

/// The readahead state: the bytes fetched ahead, and where the last read ended.
#[derive(Debug, Default)]
struct Window {
    start: u64,
    bytes: Bytes,
    last_end: u64,
    next_len: u64,
}

impl ObjectReadAt {
    /// Pins the object at `location` with a one-byte read: no tail is kept, so every read
    /// of the table reader is one request.
    ///
    /// # Errors
    /// As [`RemoteObject::open_tail`].
    pub fn open(location: &Location) -> Result<ObjectReadAt> {
        ObjectReadAt::open_with_tail(location, 0)
    }

    /// Pins the object, keeping its last `tail_len` bytes from the same request.
    ///
    /// # Errors
    /// As [`RemoteObject::open_tail`].
    pub fn open_with_tail(location: &Location, tail_len: u64) -> Result<ObjectReadAt> {
        let (object, tail) = block_on(RemoteObject::open_tail(location, tail_len.max(1)))??;
        let tail_start = object.size - tail.len() as u64;
        Ok(ObjectReadAt {
            object,
            tail,
            tail_start,
            window: None,
        })
    }

    /// The pinned `object` with `tail`, its last bytes, already fetched.
    pub(crate) fn from_parts(object: RemoteObject, tail: Bytes) -> ObjectReadAt {
        let tail_start = object.size.saturating_sub(tail.len() as u64);
        ObjectReadAt {
            object,
            tail,
            tail_start,
            window: None,
        }
    }

    /// Turns on readahead for sequential reads.
    #[must_use]
    pub fn sequential_readahead(mut self) -> ObjectReadAt {
        self.window = Some(Mutex::new(Window::default()));
        self
    }

    /// The pinned object.
    pub fn object(&self) -> &RemoteObject {
        &self.object
    }
}

impl ReadAt for ObjectReadAt {
    fn size(&self) -> io::Result<u64> {
        Ok(self.object.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(from) = offset.checked_sub(self.tail_start) {
            if let Some(src) = usize::try_from(from)
                .ok()
                .and_then(|f| self.tail.get(f..f.checked_add(buf.len())?))
            {
                buf.copy_from_slice(src);
                return Ok(());
            }
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        if end > self.object.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the object",
            ));
        }
        let Some(window) = &self.window else {
            let bytes = block_on(self.object.read(offset..end))
                .and_then(|r| r)
                .map_err(io::Error::other)?;
            buf.copy_from_slice(&bytes);
            return Ok(());
        };
        // Served from the window if it holds the range; else fetch, ahead if sequential.
        let fetch_end = {
            let mut w = window.lock().unwrap_or_else(|e| e.into_inner());
            let held = offset
                .checked_sub(w.start)
                .and_then(|f| usize::try_from(f).ok())
                .and_then(|f| w.bytes.get(f..f.checked_add(buf.len())?));
            if let Some(src) = held {
                buf.copy_from_slice(src);
                w.last_end = end;
                return Ok(());
            }
            if offset == w.last_end && w.next_len > 0 {
                let ahead = w.next_len;
                w.next_len = (ahead * 2).min(MAX_READAHEAD);
                // Not into the tail, which is held already.
                let cap = if end <= self.tail_start {
                    self.tail_start
                } else {
                    self.object.size
                };
                end.max(offset.saturating_add(ahead).min(cap))
            } else {
                w.next_len = FIRST_READAHEAD;
                end
            }
        };
        let bytes = block_on(self.object.read(offset..fetch_end))
            .and_then(|r| r)
            .map_err(io::Error::other)?;
        buf.copy_from_slice(&bytes[..buf.len()]);
        let mut w = window.lock().unwrap_or_else(|e| e.into_inner());
        if fetch_end > end {
            w.start = offset;
            w.bytes = bytes;
        }
        w.last_end = end;
        Ok(())
    }
}
