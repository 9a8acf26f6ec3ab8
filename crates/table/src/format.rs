//! The fixed encodings of a table: varints, fixed-width integers, block handles, the block
//! trailer and the footer.
//!
//! Everything here only encodes and decodes. Encoders append to a caller's `Vec<u8>` and never
//! touch the bytes already in it; decoders consume from the front of a `&mut &[u8]`, leaving
//! the slice just past what they read, and leave it unchanged on failure. Positions in
//! decoding errors are relative to the start of what the decoder was given; the table reader
//! moves them to file offsets.
//!
//! See `docs/format.md` in the repository for a byte-by-byte description.

#![deny(clippy::arithmetic_side_effects)]

pub use crate::compression::Compression;
use crate::{Error, Result};

/// Longest encoding of a `u32` as a varint: ⌈32 / 7⌉ = 5 bytes.
pub const MAX_VARINT32_LEN: usize = 5;
/// Longest encoding of a `u64` as a varint: ⌈64 / 7⌉ = 10 bytes.
pub const MAX_VARINT64_LEN: usize = 10;
/// Longest encoding of a [`BlockHandle`]: two varint64s, 10 + 10 bytes.
pub const MAX_BLOCK_HANDLE_LEN: usize = 2 * MAX_VARINT64_LEN;
/// Bytes of the footer holding the two handles and their zero padding: 2 × 20.
pub const FOOTER_HANDLES_LEN: usize = 2 * MAX_BLOCK_HANDLE_LEN;
/// Size of the footer: the padded handles then an 8-byte magic number, 40 + 8 = 48 bytes.
pub const FOOTER_LEN: usize = FOOTER_HANDLES_LEN + 8;
/// The magic number at the end of every table, stored little-endian.
pub const TABLE_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Size of the trailer after every block: 1 type byte then a 4-byte masked crc32c.
pub const BLOCK_TRAILER_LEN: usize = 1 + 4;
/// Added to a rotated crc by [`mask_crc`].
pub const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// Appends `v` as a little-endian 32-bit integer.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as a little-endian 64-bit integer.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian 32-bit integer from the front of `src`.
#[inline]
pub fn get_fixed32(src: &mut &[u8]) -> Option<u32> {
    let (head, rest) = src.split_first_chunk::<4>()?;
    *src = rest;
    Some(u32::from_le_bytes(*head))
}

/// Reads a little-endian 64-bit integer from the front of `src`.
#[inline]
pub fn get_fixed64(src: &mut &[u8]) -> Option<u64> {
    let (head, rest) = src.split_first_chunk::<8>()?;
    *src = rest;
    Some(u64::from_le_bytes(*head))
}

/// Decodes the little-endian 32-bit integer at `data[at..at + 4]`, or `None` past the end.
#[inline]
pub(crate) fn fixed32_at(data: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let bytes: [u8; 4] = data.get(at..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Appends `v` as a varint: 7 bits per byte, least significant first, high bit set on every
/// byte but the last.
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a varint (see [`put_varint32`]).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes [`put_varint64`] writes for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 significant bits, at least one byte.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "a nonzero u64 has at most 63 leading zeros"
    )]
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Reads a varint32 from the front of `src`.
///
/// Returns `None` (leaving `src` unchanged) if the input ends inside the varint, if it runs
/// longer than 5 bytes, or if its value does not fit in 32 bits.
#[inline]
pub fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    if let Some((&b, rest)) = src.split_first() {
        if b < 0x80 {
            *src = rest;
            return Some(u32::from(b));
        }
    }
    let mut input = *src;
    let v = get_varint64_slow(&mut input, MAX_VARINT32_LEN)?;
    let v = u32::try_from(v).ok()?;
    *src = input;
    Some(v)
}

/// Reads a varint64 from the front of `src`.
///
/// Returns `None` (leaving `src` unchanged) if the input ends inside the varint, if it runs
/// longer than 10 bytes, or if its value does not fit in 64 bits.
#[inline]
pub fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    if let Some((&b, rest)) = src.split_first() {
        if b < 0x80 {
            *src = rest;
            return Some(u64::from(b));
        }
    }
    get_varint64_slow(src, MAX_VARINT64_LEN)
}

#[expect(
    clippy::arithmetic_side_effects,
    reason = "i < max_len <= 10 and i < src.len() (the invariant below)"
)]
fn get_varint64_slow(src: &mut &[u8], max_len: usize) -> Option<u64> {
    let mut result: u64 = 0;
    for (i, &b) in src.iter().enumerate().take(max_len) {
        // Invariant: i < max_len <= 10, so shift <= 63; and i < src.len(), so i + 1 is a
        // position in `src`.
        let shift = 7 * i as u32;
        let bits = u64::from(b & 0x7f);
        // The tenth byte holds only the 64th bit; more would overflow.
        if shift == 63 && bits > 1 {
            return None;
        }
        result |= bits << shift;
        if b < 0x80 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// Rotates and offsets a crc so that a crc computed over data that embeds crcs is not
/// weakened (LevelDB stores only masked crcs).
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(CRC_MASK_DELTA).rotate_left(15)
}

/// The crc32c a block trailer protects: over the block's stored bytes, then its type byte.
#[inline]
pub fn block_checksum(contents: &[u8], block_type: u8) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(contents), &[block_type])
}

/// Where a block lives in the file: its offset and the size of its stored bytes, not counting
/// the 5-byte trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockHandle {
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Length of the stored (possibly compressed) block, without trailer.
    pub size: u64,
}

impl BlockHandle {
    /// A handle for `size` bytes at `offset`.
    pub fn new(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    /// Appends `offset` then `size`, each a varint64 (at most [`MAX_BLOCK_HANDLE_LEN`] bytes).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle from the front of `src`. Trailing bytes are left in `src` (LevelDB
    /// allows index values to carry more after the handle).
    ///
    /// # Errors
    /// [`Error::Corruption`] (`block handle`, offset 0) if either varint is truncated or
    /// overlong; `src` is then unchanged.
    pub fn decode_from(src: &mut &[u8]) -> Result<BlockHandle> {
        let mut input = *src;
        let offset = get_varint64(&mut input);
        let size = get_varint64(&mut input);
        match (offset, size) {
            (Some(offset), Some(size)) => {
                *src = input;
                Ok(BlockHandle { offset, size })
            }
            _ => Err(Error::corrupt("block handle", 0)),
        }
    }

    /// Offset just past the block's trailer, or `None` if that overflows a `u64`.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The fixed-size end of every table: where the metaindex and index blocks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Footer {
    /// The metaindex block (names of meta blocks → their handles).
    pub metaindex: BlockHandle,
    /// The index block (one entry per data block).
    pub index: BlockHandle,
}

impl Footer {
    /// Appends exactly [`FOOTER_LEN`] bytes: both handles, zeros up to 40 bytes, the magic.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        let start = dst.len();
        self.metaindex.encode_to(dst);
        self.index.encode_to(dst);
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "a Vec's length is at most isize::MAX, 40 below usize::MAX"
        )]
        let handles_end = start + FOOTER_HANDLES_LEN;
        dst.resize(handles_end, 0);
        put_fixed64(dst, TABLE_MAGIC);
    }

    /// Decodes a footer from the first [`FOOTER_LEN`] bytes of `src` and consumes them.
    ///
    /// The magic number is checked first, as LevelDB does. The padding after the handles is
    /// not checked (LevelDB ignores it too).
    ///
    /// # Errors
    /// - [`Error::TooShort`] if `src` is shorter than a footer;
    /// - [`Error::NotATable`] if the magic number is wrong;
    /// - [`Error::Corruption`] (`block handle`, at the handle's position) if a handle does not
    ///   decode within the 40 handle bytes.
    pub fn decode_from(src: &mut &[u8]) -> Result<Footer> {
        let Some((footer, rest)) = src.split_first_chunk::<FOOTER_LEN>() else {
            return Err(Error::TooShort {
                size: src.len() as u64,
            });
        };
        let (handles, magic) = footer.split_at(FOOTER_HANDLES_LEN);
        let mut magic = magic;
        if get_fixed64(&mut magic) != Some(TABLE_MAGIC) {
            return Err(Error::NotATable);
        }
        let mut input = handles;
        let metaindex = BlockHandle::decode_from(&mut input)?;
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "`input` is what is left of the 40 handle bytes"
        )]
        let second_at = (FOOTER_HANDLES_LEN - input.len()) as u64;
        let index = BlockHandle::decode_from(&mut input).map_err(|e| e.rebase(second_at))?;
        *src = rest;
        Ok(Footer { metaindex, index })
    }
}

/// The 5 bytes after each block: its type (compression) and a masked crc32c of the block's
/// stored bytes and the type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockTrailer {
    /// The raw type byte; see [`Compression::from_type_byte`].
    pub block_type: u8,
    /// [`mask_crc`] of [`block_checksum`].
    pub masked_crc: u32,
}

impl BlockTrailer {
    /// The trailer for a block stored as `contents` with `compression`.
    pub fn for_block(contents: &[u8], compression: Compression) -> BlockTrailer {
        let block_type = compression.type_byte();
        BlockTrailer {
            block_type,
            masked_crc: mask_crc(block_checksum(contents, block_type)),
        }
    }

    /// Appends the [`BLOCK_TRAILER_LEN`] bytes.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.push(self.block_type);
        put_fixed32(dst, self.masked_crc);
    }

    /// The encoded bytes.
    pub fn to_bytes(&self) -> [u8; BLOCK_TRAILER_LEN] {
        let c = self.masked_crc.to_le_bytes();
        [self.block_type, c[0], c[1], c[2], c[3]]
    }

    /// Decodes a trailer from the front of `src`.
    ///
    /// # Errors
    /// [`Error::Corruption`] (`block trailer`, offset 0) if fewer than 5 bytes remain.
    pub fn decode_from(src: &mut &[u8]) -> Result<BlockTrailer> {
        let Some((bytes, rest)) = src.split_first_chunk::<BLOCK_TRAILER_LEN>() else {
            return Err(Error::corrupt("block trailer", 0));
        };
        let [block_type, c0, c1, c2, c3] = *bytes;
        *src = rest;
        Ok(BlockTrailer {
            block_type,
            masked_crc: u32::from_le_bytes([c0, c1, c2, c3]),
        })
    }

    /// Checks the crc against the block's stored bytes.
    ///
    /// # Errors
    /// [`Error::ChecksumMismatch`] at offset 0 with the stored and computed crcs.
    pub fn verify(&self, contents: &[u8]) -> Result<()> {
        let expected = unmask_crc(self.masked_crc);
        let got = block_checksum(contents, self.block_type);
        if expected == got {
            Ok(())
        } else {
            Err(Error::ChecksumMismatch {
                offset: 0,
                expected,
                got,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_is_little_endian() {
        let mut v = Vec::new();
        put_fixed32(&mut v, 0x0403_0201);
        put_fixed64(&mut v, 0x0c0b_0a09_0807_0605);
        assert_eq!(v, (1..=12).collect::<Vec<u8>>());
        let mut s = &v[..];
        assert_eq!(get_fixed32(&mut s), Some(0x0403_0201));
        assert_eq!(get_fixed64(&mut s), Some(0x0c0b_0a09_0807_0605));
        assert_eq!(get_fixed32(&mut s), None);
        assert_eq!(fixed32_at(&v, 8), Some(0x0c0b_0a09));
        assert_eq!(fixed32_at(&v, 9), None);
        assert_eq!(fixed32_at(&v, usize::MAX), None);
    }

    #[test]
    fn varint_round_trip_and_lengths() {
        let mut values: Vec<u64> = vec![0, 1, 127, 128, 255, 256, 16383, 16384];
        for shift in 0..64 {
            let p = 1u64 << shift;
            values.extend([p - 1, p, p + 1, p.wrapping_mul(3)]);
        }
        values.push(u64::MAX);
        for &v in &values {
            let mut buf = vec![0xee];
            put_varint64(&mut buf, v);
            assert_eq!(buf.len() - 1, varint_len(v), "{v}");
            assert_eq!(buf[0], 0xee, "encoder touched earlier bytes");
            buf.push(0x42);
            let mut s = &buf[1..];
            assert_eq!(get_varint64(&mut s), Some(v));
            assert_eq!(s, &[0x42]);
            if let Ok(v32) = u32::try_from(v) {
                let mut b32 = Vec::new();
                put_varint32(&mut b32, v32);
                assert_eq!(b32, buf[1..buf.len() - 1]);
                let mut s = &b32[..];
                assert_eq!(get_varint32(&mut s), Some(v32));
                assert!(s.is_empty());
            } else {
                let mut s = &buf[1..];
                assert_eq!(get_varint32(&mut s), None, "{v} must not fit a varint32");
                assert_eq!(s.len(), buf.len() - 1, "failed decode consumed input");
            }
        }
        assert_eq!(varint_len(u64::MAX), MAX_VARINT64_LEN);
        assert_eq!(varint_len(u64::from(u32::MAX)), MAX_VARINT32_LEN);
    }

    #[test]
    fn malformed_varints() {
        // (input, varint32, varint64)
        let cases: &[(&[u8], Option<u32>, Option<u64>)] = &[
            (&[], None, None),
            (&[0x80], None, None),
            (&[0xff, 0xff], None, None),
            // 5 bytes, the last carrying bits beyond 32: too big for a varint32.
            (&[0xff, 0xff, 0xff, 0xff, 0x1f], None, Some(0x1_ffff_ffff)),
            (
                &[0xff, 0xff, 0xff, 0xff, 0x0f],
                Some(u32::MAX),
                Some(0xffff_ffff),
            ),
            // Six bytes are too long for a varint32 even if the value is small.
            (&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], None, Some(0)),
            // Non-canonical but in range: accepted, as LevelDB does.
            (&[0x81, 0x00], Some(1), Some(1)),
            // 11 bytes: too long for a varint64.
            (&[0x80; 10], None, None),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                None,
                Some(u64::MAX),
            ),
            // Tenth byte with more than the 64th bit: overflow.
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                None,
                None,
            ),
        ];
        for &(input, want32, want64) in cases {
            let mut s = input;
            assert_eq!(get_varint32(&mut s), want32, "varint32 {input:02x?}");
            if want32.is_none() {
                assert_eq!(s, input);
            }
            let mut s = input;
            assert_eq!(get_varint64(&mut s), want64, "varint64 {input:02x?}");
            if want64.is_none() {
                assert_eq!(s, input);
            }
        }
        let mut eleven = [0x80u8; 11];
        eleven[10] = 0;
        assert_eq!(get_varint64(&mut &eleven[..]), None);
    }

    #[test]
    fn crc_mask_matches_leveldb() {
        // LevelDB's crc32c_test: Unmask(Mask(crc)) == crc, and Mask changes the value.
        for crc in [0u32, 1, 0xffff_ffff, 0x1234_5678, crc32c::crc32c(b"foo")] {
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
            assert_ne!(mask_crc(crc), crc);
            assert_ne!(mask_crc(mask_crc(crc)), mask_crc(crc));
        }
        // The arithmetic as specified: ((c >> 15) | (c << 17)) + 0xa282ead8, wrapping.
        let c = 0xdead_beefu32;
        #[expect(clippy::manual_rotate, reason = "the formula as LevelDB writes it")]
        let spelled_out = ((c >> 15) | (c << 17)).wrapping_add(0xa282_ead8);
        assert_eq!(mask_crc(c), spelled_out);
        // crc32c check value ("123456789").
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn handle_round_trip() {
        for h in [
            BlockHandle::new(0, 0),
            BlockHandle::new(4096, 1234),
            BlockHandle::new(u64::MAX, u64::MAX),
        ] {
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            assert!(buf.len() <= MAX_BLOCK_HANDLE_LEN);
            buf.extend_from_slice(b"extra");
            let mut s = &buf[..];
            assert_eq!(BlockHandle::decode_from(&mut s).unwrap(), h);
            assert_eq!(s, b"extra");
        }
        let mut buf = Vec::new();
        BlockHandle::new(u64::MAX, u64::MAX).encode_to(&mut buf);
        assert_eq!(buf.len(), MAX_BLOCK_HANDLE_LEN);
    }

    #[test]
    fn malformed_handles() {
        let cases: &[&[u8]] = &[&[], &[0x05], &[0x80], &[0x05, 0x80], &[0xff; 12]];
        for &input in cases {
            let mut s = input;
            let err = BlockHandle::decode_from(&mut s).unwrap_err();
            assert_eq!(err.to_string(), "table: corrupt block handle at offset 0");
            assert_eq!(s, input);
        }
        assert_eq!(BlockHandle::new(u64::MAX, 0).end_with_trailer(), None);
        assert_eq!(BlockHandle::new(10, 20).end_with_trailer(), Some(35));
    }

    #[test]
    fn footer_layout() {
        let footer = Footer {
            metaindex: BlockHandle::new(0x1234, 0x10),
            index: BlockHandle::new(0x1249, 0x80),
        };
        let mut buf = vec![0xaa];
        footer.encode_to(&mut buf);
        assert_eq!(buf.len(), 1 + FOOTER_LEN);
        let mut want = vec![0xb4, 0x24, 0x10, 0xc9, 0x24, 0x80, 0x01]; // the two handles
        want.resize(40, 0); // zero padding
        want.extend_from_slice(&[0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb]); // magic
        assert_eq!(&buf[1..], &want[..]);
        let mut s = &buf[1..];
        assert_eq!(Footer::decode_from(&mut s).unwrap(), footer);
        assert!(s.is_empty());
    }

    #[test]
    fn malformed_footers() {
        let mut good = Vec::new();
        Footer::default().encode_to(&mut good);

        let err = Footer::decode_from(&mut &good[..47]).unwrap_err();
        assert!(matches!(err, Error::TooShort { size: 47 }), "{err}");

        let mut bad_magic = good.clone();
        bad_magic[47] ^= 1;
        let err = Footer::decode_from(&mut &bad_magic[..]).unwrap_err();
        assert_eq!(err.to_string(), "table: not an sstable (bad magic number)");

        // First handle runs through all 40 bytes of handle space.
        let mut bad_first = good.clone();
        bad_first[..40].fill(0x80);
        let err = Footer::decode_from(&mut &bad_first[..]).unwrap_err();
        assert_eq!(err.to_string(), "table: corrupt block handle at offset 0");

        // First handle fine (2 bytes), second truncated by the end of the handle space.
        let mut bad_second = good.clone();
        bad_second[2..40].fill(0xff);
        let err = Footer::decode_from(&mut &bad_second[..]).unwrap_err();
        assert_eq!(err.to_string(), "table: corrupt block handle at offset 2");
    }

    #[test]
    fn trailer_round_trip_and_verify() {
        let contents = b"hello block";
        let t = BlockTrailer::for_block(contents, Compression::Snappy);
        assert_eq!(t.block_type, 1);
        let mut buf = Vec::new();
        t.encode_to(&mut buf);
        assert_eq!(buf, t.to_bytes());
        let mut s = &buf[..];
        assert_eq!(BlockTrailer::decode_from(&mut s).unwrap(), t);
        t.verify(contents).unwrap();
        let err = t.verify(b"hello blocK").unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { offset: 0, .. }),
            "{err}"
        );
        let err = BlockTrailer::decode_from(&mut &buf[..4]).unwrap_err();
        assert_eq!(err.to_string(), "table: corrupt block trailer at offset 0");
        // The checksum covers the type byte.
        let other = BlockTrailer { block_type: 0, ..t };
        assert!(other.verify(contents).is_err());
    }

    #[test]
    fn compression_type_bytes() {
        assert_eq!(Compression::from_type_byte(0), Some(Compression::None));
        assert_eq!(Compression::from_type_byte(1), Some(Compression::Snappy));
        assert_eq!(Compression::from_type_byte(2), None);
        assert_eq!(Compression::Snappy.type_byte(), 1);
    }
}
