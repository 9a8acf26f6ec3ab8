//! A snappy block's claimed length is believed only once its stream backs it: a hostile
//! claim of up to 22 times a block's bytes fails before a buffer that large is made. The
//! process's peak resident memory is the measure, so this is a test binary of its own.

use leveltable_table::{Compression, codec};

/// The process's peak resident memory in bytes (`VmHWM`).
#[cfg(target_os = "linux")]
fn peak_resident() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line
        .trim_start_matches("VmHWM:")
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib << 10
}

/// A snappy stream of one literal byte and `copies` copies of 64 bytes (3 bytes each, the
/// densest element), whose preamble claims what they decode to plus `extra`.
fn stream(copies: usize, extra: usize) -> (Vec<u8>, usize) {
    let decoded = 1 + 64 * copies;
    let mut claim = decoded + extra;
    let mut out = Vec::with_capacity(8 + 3 * copies);
    while claim >= 0x80 {
        out.push(claim as u8 | 0x80);
        claim >>= 7;
    }
    out.push(claim as u8);
    out.extend_from_slice(&[0, b'z']);
    for _ in 0..copies {
        out.extend_from_slice(&[63 << 2 | 2, 1, 0]);
    }
    (out, decoded + extra)
}

#[cfg(target_os = "linux")]
#[test]
fn a_claim_the_stream_falls_short_of_is_refused_before_it_is_allocated() {
    // 4.2 MB of stream claiming 89.6 MB: within snappy's 22:1 bound, one byte past what
    // the elements decode to.
    let (bomb, claim) = stream(1_400_000, 1);
    assert!(claim <= codec::max_decompressed_len(Compression::Snappy, bomb.len()));
    let mut out = Vec::new();
    let before = peak_resident();
    let err = codec::decompress(Compression::Snappy, &bomb, &mut out).unwrap_err();
    let grown = peak_resident().saturating_sub(before);
    assert!(err.to_string().contains("snappy block contents"), "{err}");
    assert!(
        grown < 16 << 20,
        "a refused claim of {claim} bytes grew the peak by {grown} bytes"
    );

    // The same stream claiming what it holds decodes.
    let (valid, claim) = stream(1_400_000, 0);
    codec::decompress(Compression::Snappy, &valid, &mut out).unwrap();
    assert_eq!(out.len(), claim);
    assert!(out.iter().all(|&b| b == b'z'));
}
