//! A fixed set of bits any thread can set, for what an in-memory table remembers of its
//! source: which data blocks had their checksums checked, and which stretches scans have
//! asked the source to map in.

use std::sync::atomic::{AtomicU64, Ordering};

/// `len` bits, all clear at first; bits past `len` (up to a multiple of 64) read as clear
/// until set, and bits past those are never set.
#[derive(Debug)]
pub(crate) struct Bits {
    words: Box<[AtomicU64]>,
}

impl Bits {
    /// `len` clear bits.
    pub(crate) fn new(len: usize) -> Bits {
        Bits {
            words: (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The bytes the bits take on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<AtomicU64>().saturating_mul(self.words.len())
    }

    /// Whether bit `i` is set (`false` past the last).
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        // Relaxed: a bit publishes no data, only a fact about bytes that never change.
        self.words
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    /// Sets bit `i` (nothing past the last); whether this call set it (it was clear).
    #[inline]
    pub(crate) fn insert(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| {
            let bit = 1 << (i % 64);
            w.fetch_or(bit, Ordering::Relaxed) & bit == 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_each_bit_apart() {
        let v = Bits::new(130);
        for i in [0, 63, 64, 129] {
            assert!(!v.contains(i));
            assert!(v.insert(i));
            assert!(v.contains(i));
            assert!(!v.insert(i), "set twice");
        }
        assert!(!v.contains(1) && !v.contains(65) && !v.contains(128));
        assert!(!v.contains(1000), "past the last bit");
        assert!(!v.insert(1000));
    }
}
