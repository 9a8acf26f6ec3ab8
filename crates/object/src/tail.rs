//! The bytes read from an object's end at open, served to the table reader as its file.

use std::io;

use bytes::Bytes;
use leveltable_table::ReadAt;

/// The last bytes of an object of `size` bytes, read as the object itself: reads inside them
/// succeed; a read outside them is an error (the async reader fetches every data block it
/// needs itself, and reads through this source only what the tail holds).
pub struct TailSource {
    tail: Bytes,
    start: u64,
    size: u64,
}

impl TailSource {
    pub(crate) fn new(tail: Bytes, size: u64) -> TailSource {
        TailSource {
            start: size.saturating_sub(tail.len() as u64),
            tail,
            size,
        }
    }

    /// The held bytes at `offset..offset + len`, if held.
    pub(crate) fn slice(&self, offset: u64, len: u64) -> Option<Bytes> {
        let from = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        (to <= self.tail.len()).then(|| self.tail.slice(from..to))
    }
}

impl ReadAt for TailSource {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.slice(offset, buf.len() as u64) {
            Some(b) => {
                buf.copy_from_slice(&b);
                Ok(())
            }
            None => Err(io::Error::other(
                "read outside the bytes fetched from the object's end",
            )),
        }
    }
}
