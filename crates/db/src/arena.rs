//! The memory of a memtable (LevelDB's `util/arena`): 32-bit words in blocks of 256 KiB,
//! allocated as the memtable grows, never moved, and freed with it. One writer allocates
//! and fills words; readers read them once the writer has published where they are.
//!
//! The words are atomics so that readers and the writer share them without locks or
//! `unsafe`: a relaxed load or store of an `AtomicU32` is a plain move on the CPUs we run
//! on, and the skip list's release and acquire orderings on its links order the rest.
//!
//! A database's memtables share a [`BlockPool`]: the blocks of a memtable gone (flushed)
//! go to the next ones, zeroed again. Memory new to the process costs a page fault per
//! 4 KiB on its first write (some 3 µs on a virtual machine); a block reused costs none.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Words in a block (256 KiB).
pub(crate) const BLOCK_WORDS: usize = 1 << 16;
/// Blocks in a group, and groups in an arena: 2^32 words (16 GiB) at most.
const FANOUT: usize = 256;

type Block = Box<[AtomicU32]>;
type Group = Box<[OnceLock<Block>]>;

/// Words handed out one run at a time to one writer, readable by any thread.
pub(crate) struct Arena {
    /// The first group's blocks (64 MiB, every memtable of the usual sizes): a word there
    /// is found from its block's slot alone, one load where a later group's takes two, on
    /// the path of every step of a skip list's search.
    first: Group,
    /// The groups after the first (`groups[0]` stays empty).
    groups: Box<[OnceLock<Group>]>,
    /// Words handed out so far (the next free word).
    used: AtomicUsize,
    /// Blocks allocated.
    blocks: AtomicUsize,
    /// Where blocks come from first, and go when the arena is dropped.
    pool: Option<Arc<BlockPool>>,
}

/// The blocks of arenas dropped, kept for the arenas made after them, up to a limit.
#[derive(Debug)]
pub(crate) struct BlockPool {
    free: Mutex<Vec<Block>>,
    max_blocks: usize,
}

impl BlockPool {
    /// A pool keeping at most `max_bytes` of blocks (rounded up to a whole block).
    pub(crate) fn new(max_bytes: usize) -> Arc<BlockPool> {
        Arc::new(BlockPool {
            free: Mutex::new(Vec::new()),
            max_blocks: max_bytes.div_ceil(BLOCK_WORDS * 4),
        })
    }

    /// A block kept, zeroed again; `None` if none is kept.
    fn take(&self) -> Option<Block> {
        let block = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        for w in &block {
            w.store(0, Ordering::Relaxed);
        }
        Some(block)
    }

    /// Keeps `blocks`, as many as the limit allows; the rest are freed.
    fn give(&self, blocks: impl Iterator<Item = Block>) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.max_blocks.saturating_sub(free.len());
        free.extend(blocks.take(room));
    }

    /// Bytes of the blocks kept.
    pub(crate) fn memory_usage(&self) -> usize {
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            * BLOCK_WORDS
            * 4
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let Some(pool) = &self.pool else {
            return;
        };
        let first = std::mem::take(&mut self.first);
        let blocks = std::iter::once(first)
            .chain(self.groups.iter_mut().filter_map(OnceLock::take))
            .flat_map(|group| {
                group
                    .into_vec()
                    .into_iter()
                    .filter_map(OnceLock::into_inner)
            });
        pool.give(blocks);
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("used_words", &self.used.load(Ordering::Relaxed))
            .field("blocks", &self.blocks.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

impl Arena {
    pub(crate) fn new() -> Arena {
        Arena {
            first: new_group(),
            groups: (0..FANOUT).map(|_| OnceLock::new()).collect(),
            used: AtomicUsize::new(0),
            blocks: AtomicUsize::new(0),
            pool: None,
        }
    }

    /// An arena taking its blocks from `pool` while it has some, and giving them back to
    /// it when dropped.
    pub(crate) fn with_pool(pool: &Arc<BlockPool>) -> Arena {
        let mut arena = Arena::new();
        arena.pool = Some(Arc::clone(pool));
        arena
    }

    /// `n` consecutive words (`0 < n <= BLOCK_WORDS`) within one block, zeroed; returns the
    /// index of the first. `None` once the arena's 2^32 words are spent. Only one thread
    /// may allocate at a time (the memtable's writer).
    pub(crate) fn allocate(&self, n: usize) -> Option<u32> {
        debug_assert!(n > 0 && n <= BLOCK_WORDS);
        let mut at = self.used.load(Ordering::Relaxed);
        if at % BLOCK_WORDS + n > BLOCK_WORDS {
            // Not enough left in this block: the rest of it stays unused.
            at = at.next_multiple_of(BLOCK_WORDS);
        }
        let end = at.checked_add(n)?;
        if end > FANOUT * FANOUT * BLOCK_WORDS || u32::try_from(at).is_err() {
            return None;
        }
        let group = match at / (FANOUT * BLOCK_WORDS) {
            0 => &self.first,
            g => self.groups[g].get_or_init(new_group),
        };
        group[(at / BLOCK_WORDS) % FANOUT].get_or_init(|| {
            self.blocks.fetch_add(1, Ordering::Relaxed);
            self.pool
                .as_ref()
                .and_then(|pool| pool.take())
                .unwrap_or_else(|| (0..BLOCK_WORDS).map(|_| AtomicU32::new(0)).collect())
        });
        self.used.store(end, Ordering::Relaxed);
        Some(at as u32)
    }

    /// The words from `at` to the end of its block; empty if `at` was never allocated.
    #[inline]
    pub(crate) fn words(&self, at: u32) -> &[AtomicU32] {
        let at = at as usize;
        let group = match at / (FANOUT * BLOCK_WORDS) {
            0 => Some(&self.first),
            g => self.groups.get(g).and_then(OnceLock::get),
        };
        group
            .and_then(|group| group[(at / BLOCK_WORDS) % FANOUT].get())
            .and_then(|block| block.get(at % BLOCK_WORDS..))
            .unwrap_or_default()
    }

    /// Bytes of the blocks allocated.
    pub(crate) fn memory_usage(&self) -> usize {
        self.blocks.load(Ordering::Relaxed) * BLOCK_WORDS * 4
    }
}

/// A group of empty block slots.
fn new_group() -> Group {
    (0..FANOUT).map(|_| OnceLock::new()).collect()
}

/// Stores `bytes` into `words`, four to a word, little-endian, from byte `offset` of the
/// run on (which must be zero there: freshly allocated).
pub(crate) fn store_bytes(words: &[AtomicU32], offset: usize, bytes: &[u8]) {
    let mut i = offset;
    let mut rest = bytes;
    // Up to a word boundary, a byte at a time.
    while i % 4 != 0 && !rest.is_empty() {
        or_byte(words, i, rest[0]);
        i += 1;
        rest = &rest[1..];
    }
    let mut chunks = rest.chunks_exact(4);
    // The whole words, checked against the run once.
    let whole = words.get(i / 4..).unwrap_or_default();
    for (w, c) in whole.iter().zip(&mut chunks) {
        w.store(
            u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            Ordering::Relaxed,
        );
    }
    i += rest.len() - chunks.remainder().len();
    for &b in chunks.remainder() {
        or_byte(words, i, b);
        i += 1;
    }
}

#[inline]
fn or_byte(words: &[AtomicU32], i: usize, b: u8) {
    if let Some(w) = words.get(i / 4) {
        let old = w.load(Ordering::Relaxed);
        w.store(old | (u32::from(b) << (8 * (i % 4))), Ordering::Relaxed);
    }
}

/// Appends `len` bytes of `words` from byte `offset` on to `out` (zeros for any past the
/// end of `words`).
pub(crate) fn load_bytes(words: &[AtomicU32], offset: usize, len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + len, 0);
    let out = &mut out[start..];
    // Up to a word boundary, a byte at a time.
    let head = ((4 - offset % 4) % 4).min(len);
    for (j, b) in out[..head].iter_mut().enumerate() {
        *b = byte_at(words, offset + j);
    }
    // The whole words, into the room made above: a load and a 4-byte store each.
    let i = offset + head;
    let mut chunks = out[head..].chunks_exact_mut(4);
    for (c, w) in (&mut chunks).zip(words.get(i / 4..).unwrap_or_default()) {
        c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
    }
    let tail = chunks.into_remainder();
    let i = offset + len - tail.len();
    for (j, b) in tail.iter_mut().enumerate() {
        *b = byte_at(words, i + j);
    }
}

/// Word `k` of `words`; zero past their end.
#[inline]
fn word_at(words: &[AtomicU32], k: usize) -> u32 {
    words.get(k).map_or(0, |w| w.load(Ordering::Relaxed))
}

fn byte_at(words: &[AtomicU32], i: usize) -> u8 {
    (word_at(words, i / 4) >> (8 * (i % 4))) as u8
}

/// Compares `len` bytes of `words` from byte `offset` (a multiple of 4) with `other`,
/// bytewise.
#[inline(always)]
pub(crate) fn compare_bytes(
    words: &[AtomicU32],
    offset: usize,
    len: usize,
    other: &[u8],
) -> std::cmp::Ordering {
    debug_assert!(offset % 4 == 0);
    let n = len.min(other.len());
    let first = offset / 4;
    // Eight bytes at a time, two words read as one big-endian number, then a word, then
    // bytes: a key's common prefix with its neighbour takes a step per eight bytes.
    let mut k = first;
    for chunk in other[..n].chunks_exact(8) {
        let a = match words.get(k..k + 2) {
            Some([lo, hi]) => {
                u64::from(lo.load(Ordering::Relaxed)) | u64::from(hi.load(Ordering::Relaxed)) << 32
            }
            _ => u64::from(word_at(words, k)) | u64::from(word_at(words, k + 1)) << 32,
        };
        let a = u64::from_be_bytes(a.to_le_bytes());
        let b = u64::from_be_bytes(chunk.try_into().unwrap_or_default());
        if a != b {
            return a.cmp(&b);
        }
        k += 2;
    }
    let mut j = (k - first) * 4;
    if j + 4 <= n {
        let a = u32::from_be_bytes(word_at(words, k).to_le_bytes());
        let b = u32::from_be_bytes([other[j], other[j + 1], other[j + 2], other[j + 3]]);
        if a != b {
            return a.cmp(&b);
        }
        j += 4;
    }
    while j < n {
        let a = byte_at(words, offset + j);
        if a != other[j] {
            return a.cmp(&other[j]);
        }
        j += 1;
    }
    len.cmp(&other.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stay_within_a_block_and_read_back() {
        let a = Arena::new();
        assert_eq!(a.allocate(3), Some(0));
        let at = a.allocate(BLOCK_WORDS - 1).unwrap();
        assert_eq!(at as usize, BLOCK_WORDS, "a run does not cross blocks");
        assert_eq!(a.memory_usage(), 2 * BLOCK_WORDS * 4);
        let words = a.words(1);
        assert_eq!(words.len(), BLOCK_WORDS - 1);
        for offset in 0..4 {
            let w = a.words(a.allocate(8).unwrap());
            let bytes: Vec<u8> = (0..19u8).map(|b| b.wrapping_mul(37)).collect();
            store_bytes(w, offset, &bytes);
            let mut out = Vec::new();
            load_bytes(w, offset, bytes.len(), &mut out);
            assert_eq!(out, bytes);
        }
        assert!(a.words(u32::MAX).is_empty());
    }

    /// Every offset and length reads back what was stored, appended after what `out`
    /// held; bytes past the end of the words read as zeros.
    #[test]
    fn loads_of_any_offset_and_length_append_the_bytes() {
        let a = Arena::new();
        let words = a.words(a.allocate(16).unwrap());
        let bytes: Vec<u8> = (1..=64u8).map(|b| b.wrapping_mul(151)).collect();
        store_bytes(words, 0, &bytes);
        for offset in 0..12 {
            for len in 0..=(64 - offset) {
                let mut out = b"kept".to_vec();
                load_bytes(words, offset, len, &mut out);
                assert_eq!(&out[..4], b"kept");
                assert_eq!(&out[4..], &bytes[offset..offset + len], "{offset} {len}");
            }
        }
        let short = &words[..3];
        for offset in 0..6 {
            let mut out = Vec::new();
            load_bytes(short, offset, 16, &mut out);
            let mut expected = bytes[offset.min(12)..12].to_vec();
            expected.resize(16, 0);
            assert_eq!(out, expected, "{offset}");
        }
    }

    /// A dropped arena's blocks go to the pool, up to its limit, and come out zeroed to the
    /// next arena; an arena without a pool frees its blocks.
    #[test]
    fn blocks_of_a_dropped_arena_go_to_the_next_zeroed() {
        let block_bytes = BLOCK_WORDS * 4;
        let pool = BlockPool::new(2 * block_bytes - 1);
        let ones = vec![0xff; block_bytes];
        let a = Arena::with_pool(&pool);
        let mut blocks = Vec::new();
        for _ in 0..3 {
            let words = a.words(a.allocate(BLOCK_WORDS).unwrap());
            store_bytes(words, 0, &ones);
            blocks.push(words.as_ptr());
        }
        drop(a);
        assert_eq!(pool.memory_usage(), 2 * block_bytes, "two blocks are kept");
        let b = Arena::with_pool(&pool);
        for _ in 0..3 {
            let words = b.words(b.allocate(BLOCK_WORDS).unwrap());
            assert!(words.iter().all(|w| w.load(Ordering::Relaxed) == 0));
            store_bytes(words, 0, &ones);
        }
        let block = |i: usize| b.words((i * BLOCK_WORDS) as u32).as_ptr();
        assert_eq!(
            [block(0), block(1)],
            [blocks[1], blocks[0]],
            "the kept blocks are used first"
        );
        assert_eq!(pool.memory_usage(), 0);
        assert_eq!(b.memory_usage(), 3 * block_bytes);
        drop(b);
        assert_eq!(pool.memory_usage(), 2 * block_bytes);
        drop(Arena::new());
        assert_eq!(pool.memory_usage(), 2 * block_bytes);
    }

    #[test]
    fn runs_past_the_first_group_read_back_and_return_to_the_pool() {
        let blocks = FANOUT + 1;
        let pool = BlockPool::new(blocks * BLOCK_WORDS * 4);
        let a = Arena::with_pool(&pool);
        for b in 0..blocks {
            let at = a.allocate(BLOCK_WORDS).unwrap();
            assert_eq!(at as usize, b * BLOCK_WORDS);
            let words = a.words(at);
            assert_eq!(words.len(), BLOCK_WORDS);
            words[0].store(b as u32 + 1, Ordering::Relaxed);
            words[BLOCK_WORDS - 1].store(!(b as u32), Ordering::Relaxed);
        }
        for b in [0, FANOUT - 1, FANOUT] {
            let words = a.words((b * BLOCK_WORDS) as u32);
            assert_eq!(words[0].load(Ordering::Relaxed), b as u32 + 1);
            assert_eq!(words[BLOCK_WORDS - 1].load(Ordering::Relaxed), !(b as u32));
        }
        assert!(a.words(((FANOUT + 1) * BLOCK_WORDS) as u32).is_empty());
        assert_eq!(a.memory_usage(), blocks * BLOCK_WORDS * 4);
        drop(a);
        assert_eq!(pool.memory_usage(), blocks * BLOCK_WORDS * 4);
    }

    #[test]
    fn comparisons_are_bytewise() {
        let a = Arena::new();
        let keys: [&[u8]; 8] = [b"", b"a", b"ab", b"abcd", b"abcde", b"abce", b"\xff", b"b"];
        for x in keys {
            let w = a.words(a.allocate(4).unwrap());
            store_bytes(w, 0, x);
            for y in keys {
                assert_eq!(compare_bytes(w, 0, x.len(), y), x.cmp(y), "{x:?} {y:?}");
            }
        }
        // Lengths around the word steps, differing at every byte, and a run whose words
        // end before its length (read as zeros).
        let base: Vec<u8> = (0..20u8)
            .map(|b| b.wrapping_mul(71).wrapping_add(3))
            .collect();
        for len in 0..=base.len() {
            let x = &base[..len];
            let w = a.words(a.allocate(8).unwrap());
            store_bytes(w, 0, x);
            let mut ys = vec![base.clone(), base[..len.saturating_sub(1)].to_vec()];
            for at in 0..len {
                for delta in [1u8, 0x80] {
                    let mut y = x.to_vec();
                    y[at] = y[at].wrapping_add(delta);
                    ys.push(y);
                }
            }
            for y in &ys {
                assert_eq!(compare_bytes(w, 0, len, y), x.cmp(y), "{x:?} {y:?}");
            }
        }
        let end = a.words(a.allocate(BLOCK_WORDS).unwrap());
        let tail = &end[BLOCK_WORDS - 1..];
        store_bytes(tail, 0, b"abcd");
        assert_eq!(
            compare_bytes(tail, 0, 6, b"abcd\0\0"),
            std::cmp::Ordering::Equal
        );
        assert_eq!(
            compare_bytes(tail, 0, 6, b"abcd\0\x01"),
            std::cmp::Ordering::Less
        );
        assert_eq!(
            compare_bytes(tail, 0, 6, b"abcd\0"),
            std::cmp::Ordering::Greater
        );
        // Past the end in the middle of an eight-byte step.
        assert_eq!(
            compare_bytes(tail, 0, 10, b"abcd\0\0\0\0\0\0"),
            std::cmp::Ordering::Equal
        );
        assert_eq!(
            compare_bytes(tail, 0, 10, b"abcd\0\0\0\x01\0\0"),
            std::cmp::Ordering::Less
        );
    }
}
