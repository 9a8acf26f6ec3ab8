//! Data buffers of `binary` columns, kept for reuse once the record batches holding them
//! are dropped: a scan whose consumer drops each batch before it asks for the next (a
//! DuckDB query, a Parquet writer), or a scan after another, writes into memory already
//! mapped in, instead of having the kernel map in and zero fresh pages for every batch (a
//! cost of the order of copying the data itself).
//!
//! At most [`SPARE_BUFFERS`] buffers of [`SPARE_BYTES`] bytes in all are kept; a buffer
//! handed back past that is freed.

use std::sync::Mutex;

use arrow_buffer::Buffer;

/// Most buffers kept.
const SPARE_BUFFERS: usize = 16;
/// Most bytes kept, in all (the buffers' capacities).
const SPARE_BYTES: usize = 64 << 20;

/// The buffers kept, and the sum of their capacities.
static SPARE: Mutex<(Vec<Vec<u8>>, usize)> = Mutex::new((Vec::new(), 0));

/// An empty buffer of at least `bytes` bytes of capacity: a kept one if one is large
/// enough (the smallest such), or a new one.
pub fn take(bytes: usize) -> Vec<u8> {
    let kept = SPARE.lock().ok().and_then(|mut spare| {
        let (buffers, total) = &mut *spare;
        let at = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= bytes)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(at, _)| at)?;
        let buffer = buffers.swap_remove(at);
        *total -= buffer.capacity();
        Some(buffer)
    });
    match kept {
        Some(mut buffer) => {
            buffer.clear();
            buffer
        }
        None => Vec::with_capacity(bytes),
    }
}

/// Keeps `buffer` for [`take`], unless that would pass the bounds.
fn give_back(buffer: Vec<u8>) {
    let size = buffer.capacity();
    if size == 0 {
        return;
    }
    if let Ok(mut spare) = SPARE.lock() {
        let (buffers, total) = &mut *spare;
        if buffers.len() < SPARE_BUFFERS && *total + size <= SPARE_BYTES {
            *total += size;
            buffers.push(buffer);
        }
    }
}

/// A buffer that goes back to the pool when the last Arrow buffer sharing it is dropped.
struct Returning(Vec<u8>);

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.0));
    }
}

/// `data` as an Arrow buffer, without copying, whose memory goes back to the pool when it
/// is dropped.
pub fn into_buffer(data: Vec<u8>) -> Buffer {
    if data.is_empty() {
        return Buffer::from_vec(data);
    }
    Buffer::from(::bytes::Bytes::from_owner(Returning(data)))
}
