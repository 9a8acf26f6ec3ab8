//! The bytes read from an object's end at open, served to the table reader as its file.

use std::io;
use std::sync::Mutex;

use bytes::Bytes;
use leveltable_table::ReadAt;

/// The message of a read the tail does not cover; [`AsyncTable`](crate::AsyncTable) fetches
/// more and opens again when it sees it.
pub(crate) const OUTSIDE_TAIL: &str = "read outside the bytes fetched from the object's end";

/// The last bytes of an object of `size` bytes, read as the object itself: reads inside them
/// succeed, others fail and are remembered.
pub struct TailSource {
    tail: Bytes,
    start: u64,
    size: u64,
    /// The lowest offset a read asked for that the tail does not hold.
    missed: Mutex<Option<u64>>,
}

impl TailSource {
    pub(crate) fn new(tail: Bytes, size: u64) -> TailSource {
        TailSource {
            start: size - tail.len() as u64,
            tail,
            size,
            missed: Mutex::new(None),
        }
    }

    /// Where the held bytes start in the object.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// The held bytes at `offset..offset + len`, if held.
    pub(crate) fn slice(&self, offset: u64, len: u64) -> Option<Bytes> {
        let from = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        (to <= self.tail.len()).then(|| self.tail.slice(from..to))
    }

    /// The lowest offset a read missed, if any did.
    pub(crate) fn missed(&self) -> Option<u64> {
        *self.missed.lock().unwrap_or_else(|e| e.into_inner())
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
            None => {
                let mut m = self.missed.lock().unwrap_or_else(|e| e.into_inner());
                *m = Some(m.map_or(offset, |o| o.min(offset)));
                Err(io::Error::other(OUTSIDE_TAIL))
            }
        }
    }
}
