//! The records of a write-ahead log: write batches (LevelDB's `db/write_batch`).
//!
//! ```text
//! 8 bytes: sequence number of the first operation (little-endian)
//! 4 bytes: count of operations (little-endian)
//! count times:
//!   1 byte: 1 (put) then length-prefixed key and value, or 0 (delete) then a key
//! ```
//!
//! The operations get consecutive sequence numbers from the header's.

use crate::Error;
use crate::coding::{get_length_prefixed, put_length_prefixed};
use crate::dbformat::ValueType;

/// The header: sequence (8) + count (4).
pub const HEADER_SIZE: usize = 8 + 4;

/// The most bytes a key or a value of a write batch holds, 4 GiB - 1: the format stores
/// their lengths in 32 bits (as tables do).
pub const MAX_KEY_OR_VALUE_LEN: u64 = u32::MAX as u64;

/// The most operations a write batch holds: its header counts them in 32 bits.
pub const MAX_OPERATIONS: u32 = u32::MAX;

/// One operation of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// Put or delete.
    pub value_type: ValueType,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for a delete).
    pub value: &'a [u8],
}

/// A write batch read from a log record: borrowed, decoded lazily.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBatch<'a> {
    rep: &'a [u8],
}

impl<'a> WriteBatch<'a> {
    /// Wraps a log record (LevelDB's `WriteBatchInternal::SetContents`).
    ///
    /// # Errors
    /// `"log record too small"` (LevelDB's message) for fewer than 12 bytes.
    pub fn new(rep: &'a [u8]) -> Result<Self, &'static str> {
        if rep.len() < HEADER_SIZE {
            return Err("log record too small");
        }
        Ok(WriteBatch { rep })
    }

    /// The sequence number of the first operation.
    pub fn sequence(&self) -> u64 {
        // `new` checked that the header is there.
        u64::from_le_bytes(self.rep[..8].try_into().expect("8 bytes"))
    }

    /// The number of operations the header claims.
    pub fn count(&self) -> u32 {
        u32::from_le_bytes(self.rep[8..12].try_into().expect("4 bytes"))
    }

    /// The encoded batch.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.rep
    }

    /// Calls `f` with each operation, as LevelDB's `WriteBatch::Iterate`: operations before
    /// a malformed one have been passed to `f` when the error comes.
    ///
    /// # Errors
    /// LevelDB's messages: `bad WriteBatch Put`, `bad WriteBatch Delete`,
    /// `unknown WriteBatch tag`, `WriteBatch has wrong count`.
    pub fn for_each(&self, mut f: impl FnMut(BatchOp<'a>)) -> Result<(), &'static str> {
        let mut input = &self.rep[HEADER_SIZE..];
        let mut found = 0u64;
        while let Some((&tag, rest)) = input.split_first() {
            found += 1;
            input = rest;
            match ValueType::from_byte(tag) {
                Some(ValueType::Value) => {
                    let key = get_length_prefixed(&mut input);
                    let value = key.and_then(|_| get_length_prefixed(&mut input));
                    match (key, value) {
                        (Some(key), Some(value)) => f(BatchOp {
                            value_type: ValueType::Value,
                            key,
                            value,
                        }),
                        _ => return Err("bad WriteBatch Put"),
                    }
                }
                Some(ValueType::Deletion) => match get_length_prefixed(&mut input) {
                    Some(key) => f(BatchOp {
                        value_type: ValueType::Deletion,
                        key,
                        value: &[],
                    }),
                    None => return Err("bad WriteBatch Delete"),
                },
                None => return Err("unknown WriteBatch tag"),
            }
        }
        if found != u64::from(self.count()) {
            return Err("WriteBatch has wrong count");
        }
        Ok(())
    }

    /// The last sequence number the batch uses, computed as LevelDB computes it in recovery
    /// (`sequence + count - 1`, wrapping as unsigned arithmetic does).
    pub fn last_sequence(&self) -> u64 {
        self.sequence()
            .wrapping_add(u64::from(self.count()))
            .wrapping_sub(1)
    }
}

/// A batch of puts and deletes, applied atomically by
/// [`WritableDb::write`](crate::WritableDb::write) (LevelDB's `WriteBatch`); also builds the
/// log records of tests and tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBatchBuilder {
    rep: Vec<u8>,
}

impl Default for WriteBatchBuilder {
    fn default() -> Self {
        WriteBatchBuilder::new(0)
    }
}

impl WriteBatchBuilder {
    /// An empty batch whose first operation gets `sequence`.
    pub fn new(sequence: u64) -> Self {
        Self::with_capacity(sequence, 64)
    }

    /// [`new`](Self::new), with room for `bytes` bytes of encoded batch (the header's 12
    /// included) before it grows.
    pub fn with_capacity(sequence: u64, bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(bytes.max(HEADER_SIZE));
        rep.extend_from_slice(&sequence.to_le_bytes());
        rep.extend_from_slice(&0u32.to_le_bytes());
        WriteBatchBuilder { rep }
    }

    fn bump(&mut self) {
        let count = u32::from_le_bytes(self.rep[8..12].try_into().expect("4 bytes"));
        let count = count
            .checked_add(1)
            .expect("a write batch holds fewer than 2^32 operations");
        self.rep[8..12].copy_from_slice(&count.to_le_bytes());
    }

    /// Checks that a write batch can hold a key of `key_len` bytes and a value of
    /// `value_len` bytes (0 for a delete): each at most [`MAX_KEY_OR_VALUE_LEN`].
    ///
    /// # Errors
    /// [`Error::TooLong`] for the key, else for the value, with its length and the limit.
    pub fn check_lengths(key_len: usize, value_len: usize) -> crate::Result<()> {
        for (what, len) in [("key", key_len), ("value", value_len)] {
            // Lossless: usize is at most 64 bits.
            let len = len as u64;
            if len > MAX_KEY_OR_VALUE_LEN {
                return Err(Error::TooLong {
                    what,
                    len,
                    limit: MAX_KEY_OR_VALUE_LEN,
                });
            }
        }
        Ok(())
    }

    /// Checks that a batch holding `count` operations has room for one more.
    fn check_room(count: u32) -> crate::Result<()> {
        if count == MAX_OPERATIONS {
            return Err(Error::InvalidArgument(
                format!("a write batch holds at most {MAX_OPERATIONS} operations").into(),
            ));
        }
        Ok(())
    }

    /// Adds a put, or says why the batch cannot hold it (and leaves the batch as it was).
    ///
    /// # Errors
    /// [`Error::TooLong`] for a key or value of more than [`MAX_KEY_OR_VALUE_LEN`] bytes
    /// (see [`check_lengths`](Self::check_lengths)); [`Error::InvalidArgument`] if the
    /// batch already holds [`MAX_OPERATIONS`].
    pub fn try_put(&mut self, key: &[u8], value: &[u8]) -> crate::Result<&mut Self> {
        Self::check_lengths(key.len(), value.len())?;
        Self::check_room(self.count())?;
        Ok(self.put(key, value))
    }

    /// Adds a delete, or says why the batch cannot hold it (and leaves the batch as it
    /// was).
    ///
    /// # Errors
    /// As [`try_put`](Self::try_put).
    pub fn try_delete(&mut self, key: &[u8]) -> crate::Result<&mut Self> {
        Self::check_lengths(key.len(), 0)?;
        Self::check_room(self.count())?;
        Ok(self.delete(key))
    }

    /// Adds a put.
    ///
    /// # Panics
    /// If the key or the value is 4 GiB or longer (the format stores 32-bit lengths), or
    /// the batch already holds 2^32 - 1 operations; [`try_put`](Self::try_put) returns an
    /// error instead.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.bump();
        self.rep.push(ValueType::Value.to_byte());
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self
    }

    /// Adds a delete.
    ///
    /// # Panics
    /// As [`put`](Self::put); [`try_delete`](Self::try_delete) returns an error instead.
    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.bump();
        self.rep.push(ValueType::Deletion.to_byte());
        put_length_prefixed(&mut self.rep, key);
        self
    }

    /// The encoded batch.
    pub fn as_bytes(&self) -> &[u8] {
        &self.rep
    }

    /// The encoded batch, taken (not copied).
    pub fn into_bytes(self) -> Vec<u8> {
        self.rep
    }

    /// The number of operations.
    pub fn count(&self) -> u32 {
        u32::from_le_bytes(self.rep[8..12].try_into().expect("4 bytes"))
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_SIZE);
        self.rep[8..12].copy_from_slice(&0u32.to_le_bytes());
    }

    /// The bytes of the encoded batch (LevelDB's `ApproximateSize`).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Sets the sequence number of the first operation.
    pub fn set_sequence(&mut self, sequence: u64) {
        self.rep[..8].copy_from_slice(&sequence.to_le_bytes());
    }

    /// Appends the operations of `other` (LevelDB's `WriteBatchInternal::Append`).
    ///
    /// # Panics
    /// If the two hold 2^32 operations or more.
    pub fn append(&mut self, other: &WriteBatchBuilder) {
        let count = self
            .count()
            .checked_add(other.count())
            .expect("a write batch holds fewer than 2^32 operations");
        self.rep[8..12].copy_from_slice(&count.to_le_bytes());
        self.rep.extend_from_slice(&other.rep[HEADER_SIZE..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Ops = Vec<(ValueType, Vec<u8>, Vec<u8>)>;

    fn ops(batch: &WriteBatch<'_>) -> (Ops, Result<(), &'static str>) {
        let mut v = Vec::new();
        let r = batch.for_each(|op| v.push((op.value_type, op.key.to_vec(), op.value.to_vec())));
        (v, r)
    }

    #[test]
    fn round_trip() {
        let mut b = WriteBatchBuilder::new(100);
        b.put(b"foo", b"bar").delete(b"box").put(b"baz", b"boo");
        let batch = WriteBatch::new(b.as_bytes()).unwrap();
        assert_eq!(batch.sequence(), 100);
        assert_eq!(batch.count(), 3);
        assert_eq!(batch.last_sequence(), 102);
        let (v, r) = ops(&batch);
        assert_eq!(r, Ok(()));
        assert_eq!(v[1], (ValueType::Deletion, b"box".to_vec(), vec![]));
        // LevelDB's bytes for Put("foo", "bar") at sequence 100.
        let mut one = WriteBatchBuilder::new(100);
        one.put(b"foo", b"bar");
        assert_eq!(
            one.as_bytes(),
            b"d\0\0\0\0\0\0\0\x01\0\0\0\x01\x03foo\x03bar"
        );
    }

    /// The fallible adds write what `put` and `delete` write.
    #[test]
    fn try_put_and_try_delete_add_as_put_and_delete() {
        let mut tried = WriteBatchBuilder::new(7);
        tried
            .try_put(b"foo", b"bar")
            .unwrap()
            .try_delete(b"box")
            .unwrap()
            .try_put(b"", b"")
            .unwrap();
        let mut b = WriteBatchBuilder::new(7);
        b.put(b"foo", b"bar").delete(b"box").put(b"", b"");
        assert_eq!(tried, b);
    }

    /// Lengths up to 4 GiB - 1 are held; one byte more is an error saying which, its
    /// length and the limit.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn lengths_past_4_gib_minus_1_are_refused() {
        let max = usize::try_from(MAX_KEY_OR_VALUE_LEN).unwrap();
        WriteBatchBuilder::check_lengths(max, max).unwrap();
        WriteBatchBuilder::check_lengths(0, 0).unwrap();
        for (key, value, what) in [
            (max + 1, 0, "key"),
            (max + 1, max + 1, "key"),
            (0, max + 1, "value"),
            (usize::MAX, 5, "key"),
        ] {
            let e = WriteBatchBuilder::check_lengths(key, value).unwrap_err();
            let len = key.max(value) as u64;
            assert!(
                matches!(e, Error::TooLong { what: w, len: l, limit } if w == what && l == len && limit == u64::from(u32::MAX)),
                "{e:?}"
            );
            let m = e.to_string();
            assert_eq!(
                m,
                format!(
                    "db: invalid argument: a {what} of {len} bytes: at most 4294967295 (4 GiB - 1)"
                )
            );
            assert!(!e.is_corruption());
        }
    }

    /// A batch of 2^32 - 1 operations has no room for another.
    #[test]
    fn a_full_batch_is_refused() {
        WriteBatchBuilder::check_room(0).unwrap();
        WriteBatchBuilder::check_room(u32::MAX - 1).unwrap();
        let e = WriteBatchBuilder::check_room(u32::MAX).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(
            e.to_string().contains("at most 4294967295 operations"),
            "{e}"
        );
    }

    #[test]
    fn malformed_batches_apply_their_good_prefix() {
        assert_eq!(WriteBatch::new(&[0; 11]), Err("log record too small"));
        let mut b = WriteBatchBuilder::new(1);
        b.put(b"a", b"1");
        let good = b.as_bytes().to_vec();
        for (tail, error) in [
            (&[1, 1, b'k'][..], "bad WriteBatch Put"),
            (&[1, 5, b'k'][..], "bad WriteBatch Put"),
            (&[0, 2, b'k'][..], "bad WriteBatch Delete"),
            (&[2][..], "unknown WriteBatch tag"),
        ] {
            let mut bytes = good.clone();
            bytes.extend_from_slice(tail);
            let (v, r) = ops(&WriteBatch::new(&bytes).unwrap());
            assert_eq!(r, Err(error));
            assert_eq!(v.len(), 1, "the put before the error was applied");
        }
        let mut bytes = good.clone();
        bytes[8] = 2;
        assert_eq!(
            ops(&WriteBatch::new(&bytes).unwrap()).1,
            Err("WriteBatch has wrong count")
        );
        let empty = WriteBatchBuilder::new(0);
        let batch = WriteBatch::new(empty.as_bytes()).unwrap();
        assert_eq!(
            batch.last_sequence(),
            u64::MAX,
            "LevelDB's unsigned arithmetic"
        );
    }
}
