//! Block compression and decompression for every [`Compression`], with the size of a
//! decompressed block capped before it is allocated.
//!
//! Snappy is always built in; zlib and raw deflate (`flate2` on the `zlib-rs` backend) need
//! the `zlib` feature, zstd (`zstd`) the `zstd` feature. A block's stored bytes come from
//! the file and are untrusted: a decoder never allocates more than
//! [`max_decompressed_len`] allows, and a stream that would grow past it is an error.

#![deny(clippy::arithmetic_side_effects)]

use crate::Error;
use crate::format::Compression;
use crate::snappy_length;

/// Snappy's output is at most 64 bytes per 3-byte copy element, so a valid stream never
/// expands by more than 64/3 < 22.
const MAX_SNAPPY_EXPANSION: usize = 22;
/// A snappy block claiming more than this decompresses only once its elements' lengths,
/// read from the stream without decoding, add up to the claim: a hostile claim of up to 22
/// times a large block's bytes is refused before it is allocated.
const MAX_UNCHECKED_SNAPPY_CLAIM: usize = 1 << 20;
/// Deflate's densest encoding is a 258-byte match in about 2 bits, 1032:1; zlib's header
/// and checksum only add to the input.
const MAX_DEFLATE_EXPANSION: usize = 1032;
/// A zstd RLE block repeats one byte up to 128 KiB from a 3-byte header and that byte.
const MAX_ZSTD_EXPANSION: usize = (128 << 10) / 4 + 1;
/// No deflate or zstd block decompresses to more than this, whatever the codec allows:
/// Minecraft Bedrock's blocks are 160 KiB, and only a single huge value makes one bigger. A
/// larger claim is treated as a decompression bomb. A snappy or uncompressed block, as
/// LevelDB writes them, has no such cap: it is bounded by its stored bytes (22 times them
/// at most for snappy), which a single value over 256 MiB exceeds in LevelDB's tables too.
pub const MAX_BLOCK_LEN: usize = 256 << 20;

/// Why a block's stored bytes did not decompress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodecError {
    /// The bytes are not a valid stream of the codec.
    Malformed,
    /// The stream would decompress to more than the cap.
    TooLarge {
        /// The cap.
        limit: usize,
    },
    /// This build leaves the codec out.
    NotBuilt,
}

/// The most bytes `input.len()` stored bytes of `compression` may decompress to.
pub fn max_decompressed_len(compression: Compression, input_len: usize) -> usize {
    match compression {
        Compression::None => input_len,
        Compression::Snappy => input_len.saturating_mul(MAX_SNAPPY_EXPANSION),
        Compression::Zlib | Compression::RawDeflate => input_len
            .saturating_mul(MAX_DEFLATE_EXPANSION)
            .min(MAX_BLOCK_LEN),
        Compression::Zstd | Compression::ZstdMojang => input_len
            .saturating_mul(MAX_ZSTD_EXPANSION)
            .min(MAX_BLOCK_LEN),
    }
}

/// Decompresses a block's stored bytes `input` into `out` (whose previous bytes are
/// replaced), as a table reader does, under the same cap.
///
/// ```
/// use leveltable_table::{Compression, codec};
/// let stored = codec::compress(Compression::Snappy, &[7; 1000])?;
/// let mut out = Vec::new();
/// codec::decompress(Compression::Snappy, &stored, &mut out)?;
/// assert_eq!(out, [7; 1000]);
/// # Ok::<(), leveltable_table::Error>(())
/// ```
///
/// # Errors
/// [`Error::Corruption`] (at offset 0) for bytes that are not a stream of the codec or that
/// would decompress past [`max_decompressed_len`]; [`Error::CodecNotBuilt`] for a codec this
/// build leaves out.
pub fn decompress(compression: Compression, input: &[u8], out: &mut Vec<u8>) -> crate::Result<()> {
    decompress_into(compression, input, out).map_err(|e| e.into_error(compression, 0))
}

/// Compresses `raw` with `compression`, whether or not that saves space (a table builder
/// keeps the result only when it saves at least 1/8).
///
/// # Errors
/// [`Error::CodecNotBuilt`] for a codec this build leaves out.
pub fn compress(compression: Compression, raw: &[u8]) -> crate::Result<Vec<u8>> {
    let mut out = Vec::new();
    match Compressor::default().compress(compression, raw, &mut out) {
        Ok(true) => Ok(out),
        Ok(false) => Ok(raw.to_vec()),
        Err(e) => Err(e.into_error(compression, 0)),
    }
}

impl CodecError {
    /// The crate error for a block of `compression` at `offset`.
    pub(crate) fn into_error(self, compression: Compression, offset: u64) -> Error {
        let name = compression.codec_name();
        let block_type = compression.type_byte();
        match self {
            CodecError::NotBuilt => Error::CodecNotBuilt {
                compression,
                offset,
            },
            CodecError::Malformed => {
                Error::corrupt(format!("{name} block contents (type {block_type})"), offset)
            }
            CodecError::TooLarge { limit } => Error::corrupt(
                format!(
                    "{name} block that decompresses to more than {limit} bytes (type {block_type})"
                ),
                offset,
            ),
        }
    }
}

/// [`decompress`] with the codec's own error. `Compression::None` copies.
pub(crate) fn decompress_into(
    compression: Compression,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let limit = max_decompressed_len(compression, input.len());
    match compression {
        Compression::None => {
            out.clear();
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::Snappy => {
            let len = snap::raw::decompress_len(input).map_err(|_| CodecError::Malformed)?;
            if len > limit {
                return Err(CodecError::TooLarge { limit });
            }
            // A large claim is believed only once the stream's elements add up to it.
            if len > MAX_UNCHECKED_SNAPPY_CLAIM && !snappy_length::decodes_to_claim(input) {
                return Err(CodecError::Malformed);
            }
            // `out` keeps its length from an earlier block, so sizing it zero-fills only
            // what it grows by. Its bytes are all overwritten, so a buffer too small is
            // replaced by one of exactly the size rather than grown (which would copy them
            // and round the capacity up).
            if len > out.capacity() {
                *out = Vec::with_capacity(len);
            }
            out.resize(len, 0);
            let written = snap::raw::Decoder::new()
                .decompress(input, out)
                .map_err(|_| CodecError::Malformed)?;
            if written != len {
                return Err(CodecError::Malformed);
            }
            Ok(())
        }
        Compression::Zlib => inflate(input, true, limit, out),
        Compression::RawDeflate => inflate(input, false, limit, out),
        Compression::Zstd | Compression::ZstdMojang => unzstd(input, limit, out),
    }
}

#[cfg(feature = "zlib")]
fn inflate(input: &[u8], zlib: bool, limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    use flate2::{Decompress, FlushDecompress, Status};
    out.clear();
    let mut inflater = Decompress::new(zlib);
    // Start at four times the input (deflate's usual ratio on block data is 2-5) and double:
    // memory grows with the output actually produced, never with a claim.
    let mut want = input.len().saturating_mul(4).clamp(64, limit.max(64));
    loop {
        out.reserve(want.saturating_sub(out.len()));
        let consumed = usize::try_from(inflater.total_in()).map_err(|_| CodecError::Malformed)?;
        let rest = input.get(consumed..).ok_or(CodecError::Malformed)?;
        let status = inflater
            .decompress_vec(rest, out, FlushDecompress::Finish)
            .map_err(|_| CodecError::Malformed)?;
        if out.len() > limit {
            return Err(CodecError::TooLarge { limit });
        }
        match status {
            Status::StreamEnd => {
                // Bytes after the end of the stream are not part of any block we write or
                // read; refusing them catches damage in the length.
                return if inflater.total_in() == input.len() as u64 {
                    Ok(())
                } else {
                    Err(CodecError::Malformed)
                };
            }
            Status::Ok | Status::BufError => {
                if out.len() < out.capacity() {
                    // Room was left, so the decoder wants input it does not have.
                    return Err(CodecError::Malformed);
                }
                if out.len() >= limit {
                    return Err(CodecError::TooLarge { limit });
                }
                want = out.len().saturating_mul(2).min(limit.saturating_add(1));
            }
        }
    }
}

#[cfg(not(feature = "zlib"))]
fn inflate(_: &[u8], _: bool, _: usize, _: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::NotBuilt)
}

#[cfg(feature = "zstd")]
fn unzstd(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    use std::io::Read;
    out.clear();
    // A single frame's declared size (LevelDB and Mojang write it) lets us allocate once;
    // otherwise the output streams into a buffer that grows with it, up to the cap.
    let single = zstd::zstd_safe::find_frame_compressed_size(input) == Ok(input.len());
    let declared =
        zstd::zstd_safe::get_frame_content_size(input).map_err(|_| CodecError::Malformed)?;
    match declared.filter(|_| single) {
        Some(len) => {
            let len = usize::try_from(len).map_err(|_| CodecError::TooLarge { limit })?;
            if len > limit {
                return Err(CodecError::TooLarge { limit });
            }
            out.reserve_exact(len);
            let written = zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(input, out))
                .map_err(|_| CodecError::Malformed)?;
            if written != len {
                return Err(CodecError::Malformed);
            }
            Ok(())
        }
        None => {
            let decoder = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|_| CodecError::Malformed)?;
            let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
            decoder
                .take(cap)
                .read_to_end(out)
                .map_err(|_| CodecError::Malformed)?;
            if out.len() > limit {
                return Err(CodecError::TooLarge { limit });
            }
            Ok(())
        }
    }
}

#[cfg(not(feature = "zstd"))]
fn unzstd(_: &[u8], _: usize, _: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::NotBuilt)
}

/// Reusable compressor state for a table builder.
#[derive(Default)]
pub(crate) struct Compressor {
    snappy: Option<snap::raw::Encoder>,
    #[cfg(feature = "zstd")]
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

/// zstd's level for blocks: LevelDB's default (`zstd_compression_level = 1`).
#[cfg(feature = "zstd")]
const ZSTD_LEVEL: i32 = 1;

impl Compressor {
    /// Compresses `raw` into `out` (cleared first). Returns `Ok(false)` when the codec cannot
    /// take the input (snappy beyond its size limit, or no compression): the block is then
    /// stored raw. Fails with `CodecError::NotBuilt` for a codec this build leaves out.
    pub(crate) fn compress(
        &mut self,
        compression: Compression,
        raw: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, CodecError> {
        out.clear();
        match compression {
            Compression::None => Ok(false),
            Compression::Snappy => {
                let max = snap::raw::max_compress_len(raw.len());
                // max_compress_len is 0 for inputs too large for Snappy: store those raw.
                if max == 0 {
                    return Ok(false);
                }
                out.resize(max, 0);
                let encoder = self.snappy.get_or_insert_with(snap::raw::Encoder::new);
                match encoder.compress(raw, out) {
                    Ok(n) => {
                        out.truncate(n);
                        Ok(true)
                    }
                    Err(_) => Ok(false),
                }
            }
            Compression::Zlib => deflate(raw, true, out),
            Compression::RawDeflate => deflate(raw, false, out),
            Compression::Zstd | Compression::ZstdMojang => self.zstd(raw, out),
        }
    }

    #[cfg(feature = "zstd")]
    fn zstd(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, CodecError> {
        let compressor = match &mut self.zstd {
            Some(c) => c,
            None => self
                .zstd
                .insert(zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|_| CodecError::NotBuilt)?),
        };
        out.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        compressor
            .compress_to_buffer(raw, out)
            .map(|_| true)
            .map_err(|_| CodecError::Malformed)
    }

    #[cfg(not(feature = "zstd"))]
    fn zstd(&mut self, _: &[u8], _: &mut Vec<u8>) -> Result<bool, CodecError> {
        Err(CodecError::NotBuilt)
    }
}

/// zlib's default level (6), which Mojang's LevelDB uses (`-1`).
#[cfg(feature = "zlib")]
fn deflate(raw: &[u8], zlib: bool, out: &mut Vec<u8>) -> Result<bool, CodecError> {
    use flate2::{Compress, FlushCompress, Status};
    let mut deflater = Compress::new(flate2::Compression::default(), zlib);
    // Deflate's stored blocks add 5 bytes per 64 KiB; zlib adds 6 more.
    let mut want = raw
        .len()
        .saturating_add(raw.len() / 1000)
        .saturating_add(64);
    loop {
        out.reserve(want.saturating_sub(out.len()));
        let consumed = usize::try_from(deflater.total_in()).map_err(|_| CodecError::Malformed)?;
        let rest = raw.get(consumed..).ok_or(CodecError::Malformed)?;
        match deflater.compress_vec(rest, out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => return Ok(true),
            Ok(Status::Ok | Status::BufError) => want = out.capacity().saturating_mul(2),
            Err(_) => return Err(CodecError::Malformed),
        }
    }
}

#[cfg(not(feature = "zlib"))]
fn deflate(_: &[u8], _: bool, _: &mut Vec<u8>) -> Result<bool, CodecError> {
    Err(CodecError::NotBuilt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| format!("key{:06}value{}", i, i % 97).into_bytes())
            .collect()
    }

    #[test]
    fn every_built_codec_round_trips() {
        let raw = sample();
        let mut c = Compressor::default();
        for compression in Compression::ALL {
            let mut stored = Vec::new();
            match c.compress(compression, &raw, &mut stored) {
                Ok(true) => {}
                Ok(false) => {
                    assert_eq!(compression, Compression::None);
                    continue;
                }
                Err(e) => {
                    assert!(!compression.is_available(), "{compression:?}: {e:?}");
                    continue;
                }
            }
            assert!(stored.len() < raw.len() / 2, "{compression:?}");
            let mut out = vec![1, 2, 3];
            let r = decompress_into(compression, &stored, &mut out);
            assert_eq!(r, Ok(()), "{compression:?}");
            assert_eq!(out, raw, "{compression:?}");
        }
    }

    #[test]
    fn garbage_and_truncations_are_malformed_never_a_panic() {
        let raw = sample();
        let mut c = Compressor::default();
        for compression in Compression::ALL {
            if compression == Compression::None || !compression.is_available() {
                continue;
            }
            let mut stored = Vec::new();
            c.compress(compression, &raw, &mut stored).unwrap();
            for cut in [0, 1, 2, 5, stored.len() / 2, stored.len() - 1] {
                let mut out = Vec::new();
                assert!(
                    decompress_into(compression, &stored[..cut], &mut out).is_err(),
                    "{compression:?} cut at {cut}"
                );
            }
            let mut trailing = stored.clone();
            trailing.push(0);
            if compression != Compression::Snappy {
                let mut out = Vec::new();
                assert!(decompress_into(compression, &trailing, &mut out).is_err());
            }
        }
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        let zeros = vec![0u8; 4 << 20];
        let limit = 100_000;
        #[cfg(feature = "zlib")]
        for zlib in [true, false] {
            let mut stored = Vec::new();
            deflate(&zeros, zlib, &mut stored).unwrap();
            let mut out = Vec::new();
            assert_eq!(
                inflate(&stored, zlib, limit, &mut out),
                Err(CodecError::TooLarge { limit })
            );
            assert!(out.capacity() <= 2 * limit + 2, "{}", out.capacity());
        }
        #[cfg(feature = "zstd")]
        {
            // A declared size is refused before anything is allocated.
            let declared = zstd::bulk::compress(&zeros, 1).unwrap();
            let mut out = Vec::new();
            assert_eq!(
                unzstd(&declared, limit, &mut out),
                Err(CodecError::TooLarge { limit })
            );
            assert_eq!(out.capacity(), 0);
            // A streamed frame declares nothing and is cut off as it grows.
            let streamed = zstd::stream::encode_all(&zeros[..], 1).unwrap();
            assert!(matches!(
                zstd::zstd_safe::get_frame_content_size(&streamed[..]),
                Ok(None)
            ));
            assert_eq!(
                unzstd(&streamed, limit, &mut out),
                Err(CodecError::TooLarge { limit })
            );
            assert!(out.len() <= limit + 1);
            assert_eq!(unzstd(&streamed, zeros.len(), &mut out), Ok(()));
            assert_eq!(out, zeros);
        }
        let _ = (zeros, limit);
    }

    #[test]
    fn missing_codecs_say_so() {
        for compression in Compression::ALL {
            if compression.is_available() {
                continue;
            }
            let mut out = Vec::new();
            assert_eq!(
                decompress_into(compression, b"xyz", &mut out),
                Err(CodecError::NotBuilt)
            );
        }
    }
}
