//! A blocking [`ReadAt`] over an object: each read the table reader makes is one ranged GET
//! (reads inside the tail fetched at open excepted). Used where a byte source is needed
//! (database tables, the plain reader measured against [`AsyncTable`](crate::AsyncTable)).

use std::io;

use bytes::Bytes;
use leveltable_table::ReadAt;

use crate::remote::RemoteObject;
use crate::runtime::block_on;
use crate::{Location, Result};

/// A pinned object read one request per read. With a tail (see
/// [`open_with_tail`](Self::open_with_tail)) reads of the last bytes cost nothing, so a
/// table over it opens in one request.
#[derive(Debug)]
pub struct ObjectReadAt {
    object: RemoteObject,
    tail: Bytes,
    tail_start: u64,
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
        })
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
        let bytes = block_on(self.object.read(offset..end))
            .and_then(|r| r)
            .map_err(io::Error::other)?;
        buf.copy_from_slice(&bytes);
        Ok(())
    }
}
