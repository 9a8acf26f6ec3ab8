//! The length a raw snappy stream decodes to, read from its elements' tags without decoding
//! them: a block's claimed length is checked against its stream before a buffer that large
//! is made.
//!
//! A snappy stream begins with the length it decodes to, a varint, then its elements: a
//! literal (a tag, up to four length bytes, the literal's bytes) or a copy of earlier output
//! (a tag and one, two or four offset bytes). The tags alone give each element's length.

#![deny(clippy::arithmetic_side_effects)]

use crate::format::get_varint32;

/// Whether `input` is a raw snappy stream that decodes to exactly the length its preamble
/// claims: every element whole within the stream, every copy reaching back no further than
/// what is decoded before it, and no element running past the claim. It accepts what `snap`'s
/// decoder accepts, reading only the tags and length bytes.
pub(crate) fn decodes_to_claim(input: &[u8]) -> bool {
    // The preamble: a varint32, as snap reads it (at most five bytes, at most 2^32 - 1).
    let mut elements = input;
    let Some(claimed) = get_varint32(&mut elements) else {
        return false;
    };
    let claimed = claimed as usize;
    let mut s = input.len().saturating_sub(elements.len());
    let mut decoded = 0usize;
    while let Some(&tag) = input.get(s) {
        s = s.saturating_add(1);
        let (len, offset) = match tag & 0b11 {
            0 => {
                let short = usize::from(tag >> 2);
                let len = if short < 60 {
                    short.saturating_add(1)
                } else {
                    // 60 to 63: the length minus one in the next 1 to 4 bytes, little-endian.
                    let Some(bytes) = take(input, &mut s, short.saturating_sub(59)) else {
                        return false;
                    };
                    match little_endian(bytes).checked_add(1) {
                        Some(len) => len,
                        None => return false,
                    }
                };
                if input.len().saturating_sub(s) < len {
                    return false;
                }
                s = s.saturating_add(len);
                (len, None)
            }
            1 => {
                let Some(low) = take(input, &mut s, 1) else {
                    return false;
                };
                let len = usize::from((tag >> 2) & 0b111).saturating_add(4);
                (len, Some(usize::from(tag >> 5) << 8 | usize::from(low[0])))
            }
            kind => {
                let width = if kind == 2 { 2 } else { 4 };
                let Some(bytes) = take(input, &mut s, width) else {
                    return false;
                };
                (
                    usize::from(tag >> 2).saturating_add(1),
                    Some(little_endian(bytes)),
                )
            }
        };
        if let Some(offset) = offset
            && (offset == 0 || offset > decoded)
        {
            return false;
        }
        if claimed.saturating_sub(decoded) < len {
            return false;
        }
        decoded = decoded.saturating_add(len);
    }
    decoded == claimed
}

/// The next `n` bytes of `input` from `*s`, moving `*s` past them.
fn take<'a>(input: &'a [u8], s: &mut usize, n: usize) -> Option<&'a [u8]> {
    let bytes = input.get(*s..s.checked_add(n)?)?;
    *s = s.saturating_add(n);
    Some(bytes)
}

/// Up to four bytes as a little-endian number.
fn little_endian(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rev()
        .fold(0usize, |value, &byte| value << 8 | usize::from(byte))
}

#[cfg(test)]
mod tests {
    use super::decodes_to_claim;
    use crate::test_rng::Lcg;

    /// What `snap`'s decoder says of `input`: whether it decodes, whole, to its claim.
    fn snap_decodes(input: &[u8]) -> bool {
        let Ok(len) = snap::raw::decompress_len(input) else {
            return false;
        };
        if len > 1 << 24 {
            return false;
        }
        let mut out = vec![0; len];
        snap::raw::Decoder::new()
            .decompress(input, &mut out)
            .is_ok_and(|n| n == len)
    }

    fn compressible(rng: &mut Lcg, len: usize) -> Vec<u8> {
        let words: [&[u8]; 4] = [b"alpha", b"beta-gamma", b"\x00\x01\x02", b"zz"];
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let r = rng.next() >> 33;
            if r % 5 == 0 {
                out.push((r >> 8) as u8);
            } else {
                out.extend_from_slice(words[(r % 4) as usize]);
            }
        }
        out.truncate(len);
        out
    }

    #[test]
    fn valid_streams_are_accepted() {
        let mut rng = Lcg::new(7);
        for len in [0, 1, 60, 61, 256, 4096, 70_000, 300_000] {
            let raw = compressible(&mut rng, len);
            let stream = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
            assert!(decodes_to_claim(&stream), "{len} bytes");
            // Literals only: every literal length encoding.
            let incompressible: Vec<u8> = (0..len).map(|_| (rng.next() >> 56) as u8).collect();
            let stream = snap::raw::Encoder::new()
                .compress_vec(&incompressible)
                .unwrap();
            assert!(decodes_to_claim(&stream), "{len} random bytes");
        }
    }

    #[test]
    fn a_claim_the_elements_do_not_reach_is_refused() {
        // Claims 1,000 bytes; holds a 3-byte literal.
        assert!(!decodes_to_claim(&[0xe8, 0x07, 0b0000_1000, 1, 2, 3]));
        // The same literal under a claim of 3: accepted.
        assert!(decodes_to_claim(&[3, 0b0000_1000, 1, 2, 3]));
        // A copy reaching before the start, a copy of offset 0, a truncated offset.
        assert!(!decodes_to_claim(&[
            7,
            0b0000_1000,
            1,
            2,
            3,
            0b0000_0001,
            4
        ]));
        assert!(!decodes_to_claim(&[
            7,
            0b0000_1000,
            1,
            2,
            3,
            0b0000_0001,
            0
        ]));
        assert!(decodes_to_claim(&[7, 0b0000_1000, 1, 2, 3, 0b0000_0001, 3]));
        assert!(!decodes_to_claim(&[
            7,
            0b0000_1000,
            1,
            2,
            3,
            0b0000_0010,
            3
        ]));
        // A preamble of six bytes, and none at all.
        assert!(!decodes_to_claim(&[0x80, 0x80, 0x80, 0x80, 0x80, 0]));
        assert!(!decodes_to_claim(&[]));
    }

    /// Damaged streams: the check and `snap`'s decoder agree on every one.
    #[test]
    fn the_check_agrees_with_the_decoder() {
        let mut rng = Lcg::new(11);
        let mut refused = 0;
        for round in 0..4000 {
            let len = (rng.next() >> 52) as usize;
            let raw = compressible(&mut rng, len);
            let mut stream = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
            for _ in 0..1 + round % 3 {
                let r = rng.next() >> 20;
                let at = (r as usize) % stream.len();
                match r % 4 {
                    0 => stream[at] ^= 1 << ((r >> 8) % 8),
                    1 => stream[at] = (r >> 12) as u8,
                    2 => stream.truncate(at),
                    _ => stream.insert(at, (r >> 16) as u8),
                }
                if stream.is_empty() {
                    break;
                }
            }
            let agreed = decodes_to_claim(&stream);
            assert_eq!(agreed, snap_decodes(&stream), "stream {stream:02x?}");
            refused += usize::from(!agreed);
        }
        assert!(refused > 1000, "only {refused} damaged streams refused");
    }
}
