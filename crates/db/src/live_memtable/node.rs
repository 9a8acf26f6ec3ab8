//! The layout of a memtable's skiplist node in the arena's 32-bit words.
//!
//! A node is its first word (its height, its flags, and the lengths of its user key and
//! value), its tag (two words), its links (one per level), then the bytes of its user key
//! and value. The lengths take 13 bits each of the first word when both are below 8 KiB
//! (the usual entry); otherwise a word each after it, with [`WIDE`] set. A small entry
//! thus costs 12 bytes and 4 per level (5⅓ on average) beyond its key and value.

use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};

/// The head node, first in the arena; a link to it means "none".
pub(super) const HEAD: u32 = 0;

/// The first word: the node's height in its low 4 bits, two flags, then (unless
/// [`WIDE`]) the key's length in 13 bits and the value's in the 13 above.
const HEIGHT: usize = 0;
const HEIGHT_MASK: u32 = 0xf;
/// The flag in the height word of a node whose bytes are outside the arena: the three words
/// after its links say which outside buffer, and where its key and its value start.
pub(super) const OUTSIDE: u32 = 1 << 4;
/// The flag in the first word of a node whose key and value lengths take a word each.
pub(super) const WIDE: u32 = 1 << 5;
/// Where the key's length starts in the first word, and the value's.
const KEY_SHIFT: u32 = 6;
const VALUE_SHIFT: u32 = 19;
/// Lengths below this fit in the first word.
const SHORT_LIMIT: usize = 1 << 13;
const SHORT_MASK: u32 = (1 << 13) - 1;

/// Whether lengths `key` and `value` need a word each.
#[inline]
pub(super) fn is_wide(key: usize, value: usize) -> bool {
    key >= SHORT_LIMIT || value >= SHORT_LIMIT
}

/// The words of a node before its links.
#[inline]
pub(super) const fn header_words(wide: bool) -> usize {
    // The first word, the lengths if wide, the tag.
    1 + if wide { 2 } else { 0 } + 2
}

/// One node, read.
#[derive(Clone, Copy)]
pub(super) struct Node<'a> {
    pub(super) words: &'a [AtomicU32],
}

impl Node<'_> {
    #[inline]
    pub(super) fn word(&self, i: usize) -> u32 {
        self.words
            .get(i)
            .map_or(0, |w| w.load(AtomicOrdering::Relaxed))
    }

    #[inline]
    fn set(&self, i: usize, v: u32) {
        if let Some(w) = self.words.get(i) {
            w.store(v, AtomicOrdering::Relaxed);
        }
    }

    #[inline]
    fn flags(&self) -> u32 {
        self.word(HEIGHT)
    }

    #[inline]
    pub(super) fn height(&self) -> usize {
        (self.flags() & HEIGHT_MASK) as usize
    }

    #[inline]
    pub(super) fn is_outside(&self) -> bool {
        self.flags() & OUTSIDE != 0
    }

    /// Where the links start.
    #[inline]
    fn links(&self) -> usize {
        header_words(self.flags() & WIDE != 0)
    }

    /// The lengths of the user key and the value.
    #[inline]
    pub(super) fn lens(&self) -> (usize, usize) {
        if self.flags() & WIDE != 0 {
            (self.word(1) as usize, self.word(2) as usize)
        } else {
            let w = self.flags();
            (
                (w >> KEY_SHIFT & SHORT_MASK) as usize,
                (w >> VALUE_SHIFT & SHORT_MASK) as usize,
            )
        }
    }

    #[inline]
    pub(super) fn key_len(&self) -> usize {
        self.lens().0
    }

    #[inline]
    pub(super) fn tag(&self) -> u64 {
        let at = self.links() - 2;
        u64::from(self.word(at)) | u64::from(self.word(at + 1)) << 32
    }

    /// Where the user key of a node whose bytes are in the arena starts (its byte in
    /// `words`), its length and the node's tag, from one read of the first word; `None`
    /// for a node whose bytes are outside.
    #[inline]
    pub(super) fn key_in_arena(&self) -> Option<(usize, usize, u64)> {
        let w = self.word(HEIGHT);
        if w & OUTSIDE != 0 {
            return None;
        }
        let wide = w & WIDE != 0;
        let klen = if wide {
            self.word(1) as usize
        } else {
            (w >> KEY_SHIFT & SHORT_MASK) as usize
        };
        let links = header_words(wide);
        let tag = u64::from(self.word(links - 2)) | u64::from(self.word(links - 1)) << 32;
        Some(((links + (w & HEIGHT_MASK) as usize) * 4, klen, tag))
    }

    /// The next node on `level` (acquiring what its writer stored before linking it).
    #[inline]
    pub(super) fn next(&self, level: usize) -> u32 {
        self.words
            .get(self.links() + level)
            .map_or(HEAD, |w| w.load(AtomicOrdering::Acquire))
    }

    /// Links the node to `to` on `level`, publishing what was stored before.
    #[inline]
    pub(super) fn set_next(&self, level: usize, to: u32) {
        if let Some(w) = self.words.get(self.links() + level) {
            w.store(to, AtomicOrdering::Release);
        }
    }

    /// Sets the node's link on `level` before the node is published.
    #[inline]
    pub(super) fn init_next(&self, level: usize, to: u32) {
        self.set(self.links() + level, to);
    }

    /// Where the words after the links start.
    #[inline]
    pub(super) fn body(&self) -> usize {
        self.links() + self.height()
    }

    /// Writes the header of a new node (zeroed words, not yet published).
    pub(super) fn init(&self, height: usize, flags: u32, lens: (u32, u32), tag: u64) {
        let wide = flags & WIDE != 0;
        debug_assert!(height as u32 <= HEIGHT_MASK);
        if wide {
            self.set(HEIGHT, height as u32 | flags);
            self.set(1, lens.0);
            self.set(2, lens.1);
        } else {
            self.set(
                HEIGHT,
                height as u32 | flags | lens.0 << KEY_SHIFT | lens.1 << VALUE_SHIFT,
            );
        }
        let at = header_words(wide) - 2;
        self.set(at, tag as u32);
        self.set(at + 1, (tag >> 32) as u32);
    }

    /// Sets word `i` of the body (after the links) of a new node.
    #[inline]
    pub(super) fn set_body(&self, i: usize, v: u32) {
        self.set(self.body() + i, v);
    }
}
