//! Cache-line hints for reads whose addresses are known before their data is needed.
//!
//! A reader often learns where it will read well before it reads: the restart array names
//! every restart key before a block's binary search visits them, a seek knows the restart
//! interval its linear search will walk, and a forward scan knows the next data block while
//! it is still in the current one. Hinting those lines early lets their cache misses overlap
//! instead of stalling one after another. A hint has no effect a program can observe other
//! than time.

/// Bytes per cache line on the CPUs this targets.
const LINE: usize = 64;

/// Hints that the cache line holding `bytes[at]` will be read soon. Does nothing if `at` is
/// out of range.
#[inline(always)]
pub(crate) fn line(bytes: &[u8], at: usize) {
    if let Some(b) = bytes.get(at) {
        hint(b);
    }
}

/// Hints that every cache line of `bytes` will be read soon.
#[inline]
pub(crate) fn lines(bytes: &[u8]) {
    for at in line_offsets(bytes.len()) {
        line(bytes, at);
    }
}

/// Offsets into a slice of `len` bytes, one in each cache line the slice touches whatever
/// its alignment: one every 64 bytes from the start, and the last byte.
fn line_offsets(len: usize) -> impl Iterator<Item = usize> {
    (0..len).step_by(LINE).chain(len.checked_sub(1))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[expect(
    unsafe_code,
    reason = "the prefetch instruction has no safe wrapper in std"
)]
fn hint(b: &u8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is part of the
    // architecture's baseline, enabled for every x86_64 target). The instruction only hints
    // the cache: it never faults, writes nothing, and the pointer comes from a live
    // reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast()) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn hint(b: &u8) {
    let _ = b;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every alignment of the slice within a line and every length up to a few lines,
    /// the hinted offsets fall in exactly the lines the slice covers.
    #[test]
    fn hints_cover_every_line_of_a_slice() {
        for align in 0..LINE {
            for len in 0..300 {
                let line_of = |offset: usize| (align + offset) / LINE;
                let hinted: std::collections::BTreeSet<usize> =
                    line_offsets(len).map(line_of).collect();
                let covered: std::collections::BTreeSet<usize> = (0..len).map(line_of).collect();
                assert_eq!(hinted, covered, "alignment {align}, length {len}");
                assert!(line_offsets(len).all(|o| o < len));
            }
        }
    }

    /// Hinting reads nothing and changes nothing, at any offset, in range or not.
    #[test]
    fn hints_are_harmless() {
        let data: Vec<u8> = (0..=255).cycle().take(5000).collect();
        let copy = data.clone();
        for at in [0, 1, 63, 64, 4999, 5000, usize::MAX] {
            line(&data, at);
        }
        lines(&data);
        lines(&data[17..4000]);
        lines(&[]);
        line(&[], 0);
        assert_eq!(data, copy);
    }
}
