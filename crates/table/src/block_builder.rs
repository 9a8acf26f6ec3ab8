//! Builds one block: prefix-compressed entries with restart points.
//!
//! An entry is `shared: varint32, non_shared: varint32, value_len: varint32, key[shared..],
//! value`, where `shared` is the length of the prefix the key has in common with the previous
//! key. Every `restart_interval` entries the prefix compression restarts (`shared = 0`) and
//! the entry's offset is recorded; the block ends with those offsets (u32 LE each) and their
//! count (u32 LE), so a reader can binary-search the restart keys.
//!
//! Call order: `(add* finish reset)*`.

#![deny(clippy::arithmetic_side_effects)]

use crate::format::{put_fixed32, put_varint32};

/// Accumulates sorted entries into one block's bytes.
///
/// The builder owns its buffers and reuses them across [`reset`](Self::reset), so building
/// many blocks allocates only while a block grows past every earlier one.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
    finished: bool,
}

impl BlockBuilder {
    /// A builder that restarts prefix compression every `restart_interval` entries (LevelDB
    /// uses 16 for data blocks and 1 for index blocks).
    ///
    /// # Panics
    /// If `restart_interval` is 0.
    pub fn new(restart_interval: usize) -> BlockBuilder {
        assert!(restart_interval >= 1, "restart interval must be at least 1");
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval,
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
            finished: false,
        }
    }

    /// Forgets all entries, keeping the allocated buffers.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        self.finished = false;
    }

    /// Whether no entry was added since creation or the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Number of entries added since creation or the last reset.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// The size [`finish`](Self::finish) would return now: entries, restart array, count.
    pub fn current_size_estimate(&self) -> usize {
        // Saturates only for a block far past the 4 GiB the format can address, which the
        // caller then closes.
        self.buf.len().saturating_add(self.restart_array_len())
    }

    /// Bytes of the restart array and its count.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "4 * restarts.len() is the byte size of a Vec<u32>, at most isize::MAX"
    )]
    fn restart_array_len(&self) -> usize {
        self.restarts.len() * 4 + 4
    }

    /// Appends an entry. The caller guarantees that `key` sorts after the previous key.
    ///
    /// # Panics
    /// After [`finish`](Self::finish) without [`reset`](Self::reset), or if `key`, `value`
    /// or the block grow past `u32::MAX` bytes (the format stores them as 32-bit numbers).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        assert!(!self.finished, "BlockBuilder::add after finish");
        let (key_len, value_len) = match (u32::try_from(key.len()), u32::try_from(value.len())) {
            (Ok(k), Ok(v)) => (k, v),
            _ => panic!("block entry longer than u32::MAX"),
        };
        let shared = if self.counter < self.restart_interval {
            common_prefix_len(&self.last_key, key)
        } else {
            let offset = u32::try_from(self.buf.len()).expect("block larger than u32::MAX");
            self.restarts.push(offset);
            self.counter = 0;
            0
        };
        // Invariant: shared <= key.len() <= u32::MAX.
        #[expect(clippy::arithmetic_side_effects, reason = "the invariant above")]
        let non_shared = key_len - shared as u32;

        if (shared as u32 | non_shared | value_len) < 0x80 {
            self.buf
                .extend_from_slice(&[shared as u8, non_shared as u8, value_len as u8]);
        } else {
            put_varint32(&mut self.buf, shared as u32);
            put_varint32(&mut self.buf, non_shared);
            put_varint32(&mut self.buf, value_len);
        }
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);

        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "counter < restart_interval before the increment (or 0 after a restart), \
                      and every entry adds at least 3 bytes to buf"
        )]
        {
            self.counter += 1;
            self.entries += 1;
        }
    }

    /// Appends the restart array and its length and returns the finished block. The bytes
    /// stay valid until the next [`reset`](Self::reset).
    ///
    /// # Panics
    /// If called twice without [`reset`](Self::reset).
    pub fn finish(&mut self) -> &[u8] {
        assert!(!self.finished, "BlockBuilder::finish called twice");
        self.buf.reserve(self.restart_array_len());
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        // The number of restarts is at most one per entry, far below u32::MAX for any block
        // whose offsets fit in u32 (each entry takes at least 3 bytes).
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        self.finished = true;
        &self.buf
    }
}

/// Length of the longest common prefix of `a` and `b`, comparing 8 bytes at a time.
#[inline]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "i counts bytes of the shorter slice, so every sum is at most its length"
)]
pub(crate) fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    for (ca, cb) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        // Both chunks are exactly 8 bytes long: chunks_exact guarantees it.
        let x = u64::from_le_bytes(ca.try_into().unwrap_or_default())
            ^ u64::from_le_bytes(cb.try_into().unwrap_or_default());
        if x != 0 {
            // The first differing byte is the lowest non-zero byte of the little-endian xor.
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..]
        .iter()
        .zip(&b[i..])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_len() {
        assert_eq!(common_prefix_len(b"", b"abc"), 0);
        assert_eq!(common_prefix_len(b"abc", b"abd"), 2);
        assert_eq!(common_prefix_len(b"abc", b"abc"), 3);
        let a = b"0123456789abcdefXYZ";
        for i in 0..a.len() {
            let mut b = a.to_vec();
            b[i] ^= 0x40;
            assert_eq!(common_prefix_len(a, &b), i);
            assert_eq!(common_prefix_len(a, &a[..i]), i);
        }
    }

    #[test]
    fn empty_block_is_one_restart() {
        let mut b = BlockBuilder::new(16);
        assert!(b.is_empty());
        assert_eq!(b.current_size_estimate(), 8);
        assert_eq!(b.finish(), &[0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn exact_bytes_with_prefix_compression() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apricot", b"22");
        b.add(b"banana", b"");
        assert_eq!(b.len(), 3);
        assert_eq!(b.last_key(), b"banana");
        let estimate = b.current_size_estimate();
        let bytes = b.finish().to_vec();
        assert_eq!(bytes.len(), estimate);
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 5, 1, b'a', b'p', b'p', b'l', b'e', b'1',          // offset 0
            2, 5, 2, b'r', b'i', b'c', b'o', b't', b'2', b'2',    // offset 9: shares "ap"
            0, 6, 0, b'b', b'a', b'n', b'a', b'n', b'a',          // offset 19: restart
            0, 0, 0, 0, 19, 0, 0, 0,                              // restarts
            2, 0, 0, 0,                                           // count
        ];
        assert_eq!(bytes, want);
        b.reset();
        assert!(b.is_empty());
        assert_eq!(b.last_key(), b"");
        b.add(b"z", b"");
        assert_eq!(b.finish(), &[0, 1, 0, b'z', 0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn long_lengths_use_multibyte_varints() {
        let mut b = BlockBuilder::new(16);
        let value = vec![7u8; 200];
        b.add(b"k", &value);
        let bytes = b.finish();
        assert_eq!(&bytes[..5], &[0, 1, 0xc8, 0x01, b'k']);
    }

    #[test]
    #[should_panic(expected = "restart interval")]
    fn zero_interval_panics() {
        BlockBuilder::new(0);
    }
}
