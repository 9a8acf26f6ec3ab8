//! A block cache bounded in bytes, shared by any number of tables.
//!
//! Keys are (table id, block offset); each [`Table`](crate::Table) opened with a cache takes a
//! fresh id from it, so tables never see each other's blocks. Values are decoded
//! (decompressed, checksum-verified, restart-array-checked) blocks. Eviction is
//! [`quick_cache`]'s CLOCK-Pro, weighted by block size.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::block::Layout;

/// Bytes charged per cached block on top of its contents, for the entry's bookkeeping.
const ENTRY_OVERHEAD: u64 = 64;

/// A decoded block held by the cache.
#[derive(Debug)]
pub(crate) struct CachedBlock {
    pub(crate) data: Vec<u8>,
    pub(crate) layout: Layout,
    /// Whether the block was stored compressed (positions inside it then have no file offset).
    pub(crate) compressed: bool,
}

#[derive(Clone, Copy)]
struct Weigher;

impl quick_cache::Weighter<(u64, u64), Arc<CachedBlock>> for Weigher {
    fn weight(&self, _key: &(u64, u64), block: &Arc<CachedBlock>) -> u64 {
        block.data.capacity() as u64 + ENTRY_OVERHEAD
    }
}

/// Blocks an insert pushed out of the cache, let go of after the shard's lock is released:
/// the usual one in a field of its own, so that such an insert allocates nothing.
#[derive(Default)]
struct Evicted {
    one: Option<Arc<CachedBlock>>,
    more: Vec<Arc<CachedBlock>>,
}

/// Hands evicted blocks to the inserting thread instead of dropping them under the lock.
#[derive(Clone, Copy, Default)]
struct Recycle;

impl quick_cache::Lifecycle<(u64, u64), Arc<CachedBlock>> for Recycle {
    type RequestState = Evicted;

    fn on_evict(&self, state: &mut Evicted, _key: (u64, u64), block: Arc<CachedBlock>) {
        if state.one.is_none() {
            state.one = Some(block);
        } else {
            state.more.push(block);
        }
    }
}

/// Buffers of evicted blocks a thread keeps for the next blocks it caches.
const SPARES: usize = 4;

thread_local! {
    /// The thread's spare block buffers: a block read for the cache takes one, and the
    /// blocks its insert evicts (when nothing else holds them) become the next ones. A
    /// cache that is full and missing thus reads into the memory it frees, instead of
    /// allocating a block and freeing another, often one another thread allocated, on
    /// every miss.
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer for a block bound for the cache, to decode into: a spare if the thread has one.
/// A spare keeps its evicted block's bytes and length: decoding overwrites them, and sizing
/// it for the next block zero-fills only what it grows by, where clearing it would
/// zero-fill the whole block first.
pub(crate) fn take_spare() -> Vec<u8> {
    SPARE
        .try_with(|s| s.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

impl CachedBlock {
    /// A decoded block ready for the cache. One decoded into a spare much larger than
    /// itself is trimmed first, which the cache would otherwise charge (and hold) in full.
    pub(crate) fn new(mut data: Vec<u8>, layout: Layout, compressed: bool) -> Arc<CachedBlock> {
        if data.capacity() > data.len().saturating_add(data.len() / 4) {
            data.shrink_to_fit();
        }
        Arc::new(CachedBlock {
            data,
            layout,
            compressed,
        })
    }
}

/// Keeps the buffer of an evicted block nobody else holds as one of the thread's spares.
fn recycle(block: Arc<CachedBlock>) {
    let Ok(block) = Arc::try_unwrap(block) else {
        return;
    };
    // A thread exiting drops the buffer instead.
    let _ = SPARE.try_with(|s| {
        let mut spares = s.borrow_mut();
        if spares.len() < SPARES {
            spares.push(block.data);
        }
    });
}

/// A concurrent cache of decoded blocks holding at most about `capacity` bytes.
///
/// Share one between tables by putting the same `Arc<Cache>` in their
/// [`ReadOptions`](crate::ReadOptions).
pub struct Cache {
    inner: quick_cache::sync::Cache<
        (u64, u64),
        Arc<CachedBlock>,
        Weigher,
        quick_cache::DefaultHashBuilder,
        Recycle,
    >,
    next_id: AtomicU64,
    capacity: u64,
}

impl Cache {
    /// A cache for about `capacity` bytes of blocks. A block larger than the cache's
    /// per-shard share is never cached.
    pub fn new(capacity: u64) -> Cache {
        // The estimate only sizes the hash tables; assume blocks of about 4 KiB.
        let estimated_items = usize::try_from(capacity / 4096)
            .unwrap_or(usize::MAX)
            .max(16);
        let options = quick_cache::OptionsBuilder::new()
            .estimated_items_capacity(estimated_items)
            .weight_capacity(capacity)
            .build()
            .expect("both capacities are set");
        Cache {
            inner: quick_cache::sync::Cache::with_options(
                options,
                Weigher,
                quick_cache::DefaultHashBuilder::default(),
                Recycle,
            ),
            next_id: AtomicU64::new(1),
            capacity,
        }
    }

    /// A new [`Cache::new`] in an `Arc`, ready for [`ReadOptions::block_cache`](crate::ReadOptions::block_cache).
    pub fn shared(capacity: u64) -> Arc<Cache> {
        Arc::new(Cache::new(capacity))
    }

    /// The capacity in bytes given at creation.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes currently charged (block contents plus a fixed overhead per block).
    pub fn weight(&self) -> u64 {
        self.inner.weight()
    }

    /// Number of blocks held.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the cache holds no block.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Drops every block.
    pub fn clear(&self) {
        self.inner.clear();
    }

    /// A fresh id for one table's keys.
    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn get(&self, id: u64, offset: u64) -> Option<Arc<CachedBlock>> {
        self.inner.get(&(id, offset))
    }

    /// Caches `block`; the buffers of the blocks it evicts become the thread's spares.
    pub(crate) fn insert(&self, id: u64, offset: u64, block: Arc<CachedBlock>) {
        let mut evicted = Evicted::default();
        self.inner
            .insert_with_lifecycle((id, offset), block, &mut evicted);
        for block in evicted.one.into_iter().chain(evicted.more) {
            recycle(block);
        }
    }
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("weight", &self.weight())
            .field("blocks", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize) -> Arc<CachedBlock> {
        let mut data = vec![0u8; len];
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        let layout = Layout::parse(&data[len..]).unwrap();
        Arc::new(CachedBlock {
            data,
            layout,
            compressed: false,
        })
    }

    #[test]
    fn ids_are_distinct_and_keys_separate() {
        let cache = Cache::new(1 << 20);
        let (a, b) = (cache.new_id(), cache.new_id());
        assert_ne!(a, b);
        cache.insert(a, 0, block(100));
        assert!(cache.get(a, 0).is_some());
        assert!(cache.get(b, 0).is_none());
        assert!(cache.get(a, 1).is_none());
        assert_eq!(cache.len(), 1);
        cache.clear();
        assert!(cache.is_empty());
    }

    /// Blocks evicted by this thread's inserts become its spare buffers, their bytes kept for
    /// the next decode to overwrite; a block still held elsewhere is left to its holder.
    #[test]
    fn evicted_blocks_become_spares() {
        SPARE.with(|s| s.borrow_mut().clear());
        let cache = Cache::new(64 * 1024);
        for i in 0..100 {
            cache.insert(1, i, block(4000));
        }
        assert_eq!(SPARE.with(|s| s.borrow().len()), SPARES);
        let spare = take_spare();
        assert_eq!(spare.len(), 4008);
        assert_eq!(SPARE.with(|s| s.borrow().len()), SPARES - 1);
        assert!(cache.weight() <= 64 * 1024);

        let held = block(4000);
        recycle(Arc::clone(&held));
        assert_eq!(SPARE.with(|s| s.borrow().len()), SPARES - 1);
        assert_eq!(Arc::strong_count(&held), 1);
        recycle(held);
        assert_eq!(SPARE.with(|s| s.borrow().len()), SPARES);
    }

    #[test]
    fn bounded_by_bytes() {
        let cache = Cache::new(64 * 1024);
        for i in 0..1000 {
            cache.insert(1, i, block(4000));
        }
        assert!(cache.weight() <= 64 * 1024, "{}", cache.weight());
        assert!(cache.len() < 20);
    }
}
