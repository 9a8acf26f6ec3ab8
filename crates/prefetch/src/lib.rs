#![doc = include_str!("../README.md")]
#![no_std]
#![deny(unsafe_code)]

/// Bytes per cache line on the CPUs this targets.
const LINE: usize = 64;

/// Hints that the cache line holding `bytes[at]` will be read soon. Does nothing if `at` is
/// out of range.
///
/// ```
/// let data = [1u8; 256];
/// leveltable_prefetch::line(&data, 200);
/// leveltable_prefetch::line(&data, 999); // out of range: ignored
/// ```
#[inline(always)]
pub fn line(bytes: &[u8], at: usize) {
    if let Some(b) = bytes.get(at) {
        hint(b);
    }
}

/// Hints that the cache line where `value` starts will be read soon: for a value of a type
/// aligned to its cache line, such as a line of a search tree, the whole value.
///
/// ```
/// #[repr(align(64))]
/// struct Line([u64; 8]);
/// let lines = [Line([0; 8]), Line([1; 8])];
/// leveltable_prefetch::start_of(&lines[1]);
/// ```
#[inline(always)]
pub fn start_of<T>(value: &T) {
    hint(value);
}

/// Hints that every cache line of `bytes` will be read soon, whatever the slice's alignment.
///
/// ```
/// let data = [1u8; 1000];
/// leveltable_prefetch::lines(&data[100..900]);
/// leveltable_prefetch::lines(&[]);
/// ```
#[inline]
pub fn lines(bytes: &[u8]) {
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
fn hint<T>(b: &T) {
    use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is part of the
    // architecture's baseline, enabled for every x86_64 target). The instruction only hints
    // the cache: it never faults, writes nothing, and the pointer comes from a live
    // reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(core::ptr::from_ref(b).cast()) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn hint<T>(b: &T) {
    let _ = b;
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    extern crate std;

    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::vec::Vec;

    /// For every alignment of the slice within a line and every length up to a few lines,
    /// the hinted offsets fall in exactly the lines the slice covers.
    #[test]
    fn hints_cover_every_line_of_a_slice() {
        for align in 0..LINE {
            for len in 0..300 {
                let line_of = |offset: usize| (align + offset) / LINE;
                let hinted: BTreeSet<usize> = line_offsets(len).map(line_of).collect();
                let covered: BTreeSet<usize> = (0..len).map(line_of).collect();
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
