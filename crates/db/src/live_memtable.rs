//! The memtable of a database open for writing (LevelDB's `db/memtable` over its
//! `db/skiplist`): one writer at a time inserts while any number of readers look up and
//! scan, none of them taking a lock. Entries are never removed; the memtable is dropped
//! whole once flushed.
//!
//! Nodes live in an [`Arena`] of 32-bit words, as LevelDB's live in its arena: a node is
//! its height and lengths, its tag, its links, then the bytes of its user key and value
//! (see [`node`]), so that a small entry costs about 17 bytes beyond its key and value and
//! a search step touches one node. A large entry, and every entry of a large write batch,
//! keeps its bytes outside the arena (in the batch itself, kept whole), the node holding
//! where they are.
//!
//! The memtable of a database open for writing is one; so is each log a read-only open, a
//! refresh or a salvage replays. A version added again with the same internal key (a
//! salvage may read one from two logs) replaces the one held: the one added last wins.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use leveltable_table::format::varint_len;
use leveltable_table::{BytewiseComparator, Comparator};

use crate::arena::{Arena, BLOCK_WORDS, BlockPool, compare_bytes, load_bytes, store_bytes};
use crate::dbformat::{LookupKey, LookupResult, ParsedInternalKey, TAG_LEN, ValueType, pack_tag};
use crate::write_batch::WriteBatch;
use crate::{Error, Result};
use key_filter::KeyFilter;
use node::{HEAD, Node, OUTSIDE, WIDE, header_words, is_wide};

mod batch_insert;
mod key_filter;
mod node;
mod walk;

use batch_insert::{Cursor, Splice};

/// Bytes LevelDB 1.23's memtable spends on an entry beside the entry itself: the skiplist
/// node (8 bytes, and 8 per level: 4/3 levels on average), the node's alignment to 8 bytes
/// and the arena's unused block ends (a few bytes each).
const LEVELDB_NODE_BYTES: usize = 24;

/// The bytes LevelDB 1.23's memtable counts for an entry (`MemTable::Add` into its arena):
/// the internal key's and the value's length prefixes, the internal key, the value and
/// the skiplist node. A memtable counts these, not its own smaller arena's, against
/// `write_buffer_size`: it fills and flushes at the entries LevelDB's does, and its tables,
/// and the compactions after them, are LevelDB's sizes.
fn leveldb_entry_bytes(key_len: usize, value_len: usize) -> usize {
    let internal = key_len + TAG_LEN;
    varint_len(internal as u64)
        + internal
        + varint_len(value_len as u64)
        + value_len
        + LEVELDB_NODE_BYTES
}

/// A write batch of at least this many bytes is kept whole by the memtable, its entries'
/// keys and values pointing into it, instead of being copied entry by entry: a large batch
/// then costs its bytes once (in the memtable), not twice (the batch and its copy).
pub(crate) const SHARED_BATCH_BYTES: usize = 1 << 20;

/// An entry whose key and value together are longer is kept outside the arena.
const INLINE_BYTES: usize = 32 << 10;

/// The most keys of a write whose filter words [`LiveMemTable::prefetch_filter`] fetches:
/// a larger batch's reads of them overlap one another in its inserts.
const PREFETCH_FILTER_MAX_KEYS: u32 = 8;

/// The bytes of an entry a writable memtable's key filter is sized for: 16 bits a key for
/// entries of this size and up (a 4 MiB memtable's filter is 128 KiB); smaller entries
/// share the bits, and the filter admits more keys it does not hold.
const FILTER_SIZING_ENTRY_BYTES: usize = 64;

/// LevelDB's skiplist: at most 12 levels, each node on the next level up with chance 1/4.
const MAX_HEIGHT: usize = 12;
const BRANCHING: u64 = 4;

/// The order of internal keys: bytewise user keys compared in the arena, any other
/// comparator on a copy of each user key.
enum Order {
    Bytewise,
    User(Arc<dyn Comparator>),
}

/// An internal key to search for, split.
#[derive(Clone, Copy)]
struct Probe<'a> {
    user: &'a [u8],
    tag: u64,
}

impl<'a> Probe<'a> {
    /// As LevelDB slices an internal key: the user key and the tag after it; a key shorter
    /// than a tag is an empty user key with tag 0.
    fn of(key: &'a [u8]) -> Probe<'a> {
        match key.len().checked_sub(TAG_LEN) {
            Some(n) => Probe {
                user: &key[..n],
                tag: key[n..].try_into().map_or(0, u64::from_le_bytes),
            },
            None => Probe { user: &[], tag: 0 },
        }
    }
}

/// Versions sorted by internal key, written by one writer at a time and read by many.
pub(crate) struct LiveMemTable {
    arena: Arena,
    /// Buffers holding the bytes of entries kept outside the arena.
    outside: RwLock<Vec<Arc<Vec<u8>>>>,
    order: Order,
    max_height: AtomicUsize,
    /// The last node of each level (`HEAD`: none), kept by the writer: a version that sorts
    /// after every other (keys written in order) is linked there without a search.
    last: [AtomicU32; MAX_HEIGHT],
    /// The state of the writer's height generator.
    rng: AtomicU64,
    bytes: AtomicUsize,
    /// Versions held (a version added again replaces the one held).
    entries: AtomicUsize,
    /// Versions added.
    added: AtomicUsize,
    /// A filter over the user keys held, once built ([`build_key_filter`](Self::build_key_filter)).
    filter: OnceLock<KeyFilter>,
}

impl std::fmt::Debug for LiveMemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveMemTable")
            .field("entries", &self.entries.load(AtomicOrdering::Relaxed))
            .field("bytes", &self.approximate_bytes())
            .finish()
    }
}

/// Where an entry's key and value are.
enum Bytes<'a> {
    /// In the arena, from this byte of the node's words on: the user key, then the value.
    Inline(&'a [AtomicU32], usize),
    /// In an outside buffer, from these offsets.
    Outside(Arc<Vec<u8>>, usize, usize),
}

impl Bytes<'_> {
    /// Appends the user key of `klen` bytes to `out`.
    fn append_key(&self, klen: usize, out: &mut Vec<u8>) {
        match self {
            Bytes::Inline(words, at) => load_bytes(words, *at, klen, out),
            Bytes::Outside(buffer, k, _) => {
                out.extend_from_slice(buffer.get(*k..*k + klen).unwrap_or_default());
            }
        }
    }

    /// Appends the value of `vlen` bytes, after a user key of `klen`, to `out`.
    fn append_value(&self, klen: usize, vlen: usize, out: &mut Vec<u8>) {
        match self {
            Bytes::Inline(words, at) => load_bytes(words, at + klen, vlen, out),
            Bytes::Outside(buffer, _, v) => {
                out.extend_from_slice(buffer.get(*v..*v + vlen).unwrap_or_default());
            }
        }
    }
}

impl LiveMemTable {
    /// An empty memtable ordering user keys by `user`.
    pub(crate) fn new(user: &Arc<dyn Comparator>) -> LiveMemTable {
        LiveMemTable::in_arena(user, Arena::new())
    }

    /// An empty memtable in `arena`.
    fn in_arena(user: &Arc<dyn Comparator>, arena: Arena) -> LiveMemTable {
        let order = if user.name() == BytewiseComparator.name() {
            Order::Bytewise
        } else {
            Order::User(Arc::clone(user))
        };
        // The head: the first words of the arena, with every level's link.
        let head = arena.allocate(header_words(false) + MAX_HEIGHT);
        debug_assert_eq!(head, Some(HEAD));
        let table = LiveMemTable {
            arena,
            outside: RwLock::new(Vec::new()),
            order,
            max_height: AtomicUsize::new(1),
            last: std::array::from_fn(|_| AtomicU32::new(HEAD)),
            rng: AtomicU64::new(0xdead_beef),
            bytes: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            added: AtomicUsize::new(0),
            filter: OnceLock::new(),
        };
        table.node(HEAD).init(MAX_HEIGHT, 0, (0, 0), 0);
        table
    }

    /// An empty memtable for a database open for writing, whose writer flushes it once it
    /// holds about `write_buffer_size` bytes: with a filter over its user keys from the
    /// start (as [`build_key_filter`](Self::build_key_filter)), sized for entries of
    /// [`FILTER_SIZING_ENTRY_BYTES`] each. Its memory comes from `blocks` first, and goes
    /// back there when it is dropped.
    pub(crate) fn for_writes(
        user: &Arc<dyn Comparator>,
        write_buffer_size: usize,
        blocks: &Arc<BlockPool>,
    ) -> LiveMemTable {
        let table = LiveMemTable::in_arena(user, Arena::with_pool(blocks));
        if matches!(table.order, Order::Bytewise) {
            let keys = write_buffer_size / FILTER_SIZING_ENTRY_BYTES;
            let _ = table.filter.set(KeyFilter::with_capacity(keys));
        }
        table
    }

    #[inline]
    fn node(&self, at: u32) -> Node<'_> {
        Node {
            words: self.arena.words(at),
        }
    }

    fn bytes_of<'a>(&self, node: Node<'a>) -> Bytes<'a> {
        let body = node.body();
        if !node.is_outside() {
            return Bytes::Inline(node.words, body * 4);
        }
        let buffer = self
            .outside
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(node.word(body) as usize)
            .cloned()
            .unwrap_or_default();
        Bytes::Outside(
            buffer,
            node.word(body + 1) as usize,
            node.word(body + 2) as usize,
        )
    }

    /// Appends the node's internal key to `key` and its value to `value`.
    fn read_entry(&self, node: Node<'_>, key: &mut Vec<u8>, value: &mut Vec<u8>) {
        let (klen, vlen) = node.lens();
        let bytes = self.bytes_of(node);
        bytes.append_key(klen, key);
        bytes.append_value(klen, vlen, value);
        key.extend_from_slice(&node.tag().to_le_bytes());
    }

    /// The order of the node at `at` against `probe`.
    #[inline]
    fn compare(&self, at: u32, probe: &Probe<'_>, scratch: &mut Vec<u8>) -> Ordering {
        self.compare_node(self.node(at), probe, scratch)
    }

    /// [`compare`](Self::compare) of a node already found in the arena.
    #[inline(always)]
    fn compare_node(&self, node: Node<'_>, probe: &Probe<'_>, scratch: &mut Vec<u8>) -> Ordering {
        if let (Order::Bytewise, Some((offset, klen, tag))) = (&self.order, node.key_in_arena()) {
            // The usual node, compared where it lies.
            return compare_bytes(node.words, offset, klen, probe.user)
                .then_with(|| probe.tag.cmp(&tag));
        }
        self.compare_elsewhere(node, probe, scratch)
    }

    /// [`compare`](Self::compare) of a node whose bytes are outside the arena, or under a
    /// user's comparator.
    fn compare_elsewhere(
        &self,
        node: Node<'_>,
        probe: &Probe<'_>,
        scratch: &mut Vec<u8>,
    ) -> Ordering {
        let klen = node.key_len();
        let users = match (&self.order, self.bytes_of(node)) {
            (Order::Bytewise, Bytes::Inline(words, offset)) => {
                compare_bytes(words, offset, klen, probe.user)
            }
            (Order::Bytewise, Bytes::Outside(buffer, k, _)) => {
                buffer.get(k..k + klen).unwrap_or_default().cmp(probe.user)
            }
            (Order::User(user), bytes) => {
                scratch.clear();
                bytes.append_key(klen, scratch);
                user.compare(scratch, probe.user)
            }
        };
        // Larger tags (newer versions) first.
        users.then_with(|| probe.tag.cmp(&node.tag()))
    }

    /// The highest level holding a node (a reader may see it raised before the node is
    /// linked there: it finds the head's link empty and goes down).
    #[inline]
    fn top_level(&self) -> usize {
        self.max_height
            .load(AtomicOrdering::Relaxed)
            .clamp(1, MAX_HEIGHT)
            - 1
    }

    fn random_height(&self) -> usize {
        let mut x = self.rng.load(AtomicOrdering::Relaxed);
        let mut height = 1;
        loop {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if height >= MAX_HEIGHT || x % BRANCHING != 0 {
                break;
            }
            height += 1;
        }
        self.rng.store(x, AtomicOrdering::Relaxed);
        height
    }

    /// Links a new node for the version `user_key@tag` whose bytes are `place`d, in place of
    /// the node of the same internal key if there is one: as in a memtable built by sorting
    /// the versions of logs replayed, the one added last wins. Only one thread inserts at a
    /// time.
    ///
    /// The version goes after the nodes its `cursor`'s guide gives, if it has one; else the
    /// search starts from the cursor's splice if the version sorts after the one inserted
    /// last. The cursor's splice is then set for the next insert ([`Cursor`]).
    fn insert(
        &self,
        user_key: &[u8],
        tag: u64,
        value_len: usize,
        place: Place<'_>,
        cursor: &mut Cursor,
    ) -> Result<()> {
        let too_long = || Error::InvalidArgument("a key or value of 4 GiB or more".into());
        let klen = u32::try_from(user_key.len()).map_err(|_| too_long())?;
        let vlen = u32::try_from(value_len).map_err(|_| too_long())?;
        let probe = Probe {
            user: user_key,
            tag,
        };
        if let Some(filter) = self.filter.get() {
            // Before the node is published: a reader that finds it finds its key's bits.
            filter.add(user_key);
        }
        let mut prev = [HEAD; MAX_HEIGHT];
        let last = self.last[0].load(AtomicOrdering::Relaxed);
        let mut replaced = HEAD;
        if last != HEAD && self.compare(last, &probe, &mut Vec::new()) == Ordering::Less {
            for (p, l) in prev.iter_mut().zip(&self.last) {
                *p = l.load(AtomicOrdering::Relaxed);
            }
        } else {
            let next = if let Some(guided) = cursor.guided_prev() {
                prev = guided;
                self.node(prev[0]).next(0)
            } else {
                match cursor
                    .splice
                    .as_ref()
                    .and_then(|splice| self.find_from_splice(&probe, splice, &mut prev))
                {
                    Some(next) => next,
                    None => self.find_before(&probe, false, Some(&mut prev)).1,
                }
            };
            if next != HEAD && self.compare(next, &probe, &mut Vec::new()) == Ordering::Equal {
                replaced = next;
            }
        }
        let height = self.random_height();
        let max = self.max_height.load(AtomicOrdering::Relaxed);
        if height > max {
            // `prev` above the old height is the head already. Readers seeing the new
            // height before the node find the head's null links there, and go down.
            self.max_height.store(height, AtomicOrdering::Relaxed);
        }
        let flags = match &place {
            Place::Inline(_) => 0,
            Place::Outside { .. } => OUTSIDE,
        } | if is_wide(user_key.len(), value_len) {
            WIDE
        } else {
            0
        };
        let body = header_words(flags & WIDE != 0) + height;
        let words = match &place {
            Place::Inline(value) => body + (user_key.len() + value.len()).div_ceil(4),
            Place::Outside { .. } => body + 3,
        };
        let at = self
            .arena
            .allocate(words)
            .ok_or_else(|| Error::InvalidArgument("the memtable's 16 GiB arena is full".into()))?;
        let node = self.node(at);
        node.init(height, flags, (klen, vlen), tag);
        match place {
            Place::Inline(value) => {
                store_bytes(node.words, body * 4, user_key);
                store_bytes(node.words, body * 4 + user_key.len(), value);
            }
            Place::Outside { buffer, key, value } => {
                node.set_body(0, buffer);
                node.set_body(1, key);
                node.set_body(2, value);
            }
        }
        let old = self.node(replaced);
        let old_height = if replaced == HEAD { 0 } else { old.height() };
        // The node after the new one on `level`: the replaced node's, where it is linked.
        let after = |level: usize| {
            if level < old_height {
                old.next(level)
            } else {
                self.node(prev[level]).next(level)
            }
        };
        for level in 0..height {
            // The new node's links are stored before the node is published by the release
            // store into its predecessor.
            node.init_next(level, after(level));
        }
        let to_last = |level: usize, at: u32, p: u32| if level < height { at } else { p };
        for (level, &p) in prev.iter().enumerate().take(height.max(old_height)) {
            let before = self.node(p);
            // Readers on the replaced node still find their way on from its links, which
            // stay as they are.
            let to = if level < height { at } else { after(level) };
            before.set_next(level, to);
            let last = self.last[level].load(AtomicOrdering::Relaxed);
            if last == p || (last == replaced && replaced != HEAD) {
                // The new node, or where the replaced one was unlinked, ends the level.
                self.last[level].store(to_last(level, at, p), AtomicOrdering::Relaxed);
            }
        }
        if replaced == HEAD {
            bump(&self.entries, 1);
        }
        bump(&self.added, 1);
        // The new node is the last before any later version on its levels; `prev` on the
        // levels above. A node replaced leaves no splice: the next search starts afresh.
        cursor.splice = (replaced == HEAD).then(|| {
            prev[..height].fill(at);
            Splice {
                prev,
                origin: cursor.guide.take(),
            }
        });
        Ok(())
    }

    /// Keeps `buffer` for entries outside the arena; returns its number.
    fn keep_outside(&self, buffer: Arc<Vec<u8>>) -> Result<u32> {
        let mut outside = self.outside.write().unwrap_or_else(PoisonError::into_inner);
        let n = u32::try_from(outside.len())
            .map_err(|_| Error::InvalidArgument("too many large entries in one memtable".into()))?;
        outside.push(buffer);
        Ok(n)
    }

    /// Adds one version. Callers serialise their inserts (the database's write queue does).
    ///
    /// # Errors
    /// An invalid-argument error for a sequence number beyond 2^56 - 1, a key or value of
    /// 4 GiB or more, or a memtable past its arena's 16 GiB.
    pub(crate) fn add(
        &self,
        sequence: u64,
        value_type: ValueType,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let tag = pack_tag(sequence, value_type)?;
        self.add_tagged(tag, key, value, &mut Cursor::default())
    }

    /// [`add`](Self::add) of the version of tag `tag`, placed by `cursor`.
    fn add_tagged(&self, tag: u64, key: &[u8], value: &[u8], cursor: &mut Cursor) -> Result<()> {
        if key.len() + value.len() <= INLINE_BYTES {
            self.insert(key, tag, value.len(), Place::Inline(value), cursor)?;
        } else {
            let mut both = Vec::with_capacity(key.len() + value.len());
            both.extend_from_slice(key);
            both.extend_from_slice(value);
            let (k, v) = (0, key.len());
            let too_long = || Error::InvalidArgument("a key or value of 4 GiB or more".into());
            let (key_at, value_at) = (
                u32::try_from(k).map_err(|_| too_long())?,
                u32::try_from(v).map_err(|_| too_long())?,
            );
            let buffer = self.keep_outside(Arc::new(both))?;
            self.insert(
                key,
                tag,
                value.len(),
                Place::Outside {
                    buffer,
                    key: key_at,
                    value: value_at,
                },
                cursor,
            )?;
        }
        bump(&self.bytes, leveldb_entry_bytes(key.len(), value.len()));
        Ok(())
    }

    /// Bytes of the entries added, as LevelDB's memtable counts them
    /// ([`leveldb_entry_bytes`]): compared with `write_buffer_size`.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    /// Bytes of memory the memtable holds: its arena's blocks and its outside buffers.
    pub(crate) fn memory_usage(&self) -> usize {
        let outside: usize = self
            .outside
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|b| b.capacity())
            .sum();
        self.arena.memory_usage() + outside + self.filter.get().map_or(0, KeyFilter::memory_usage)
    }

    /// Hints that the filter words the keys of `batch` will set are to be read, so that a
    /// small write's inserts after its log write find them in cache: a filter word is read
    /// once in thousands of writes, and the log's `write` runs long enough to bring it in
    /// from memory. (No bits are set: a write whose log write fails adds nothing.)
    pub(crate) fn prefetch_filter(&self, batch: &WriteBatch<'_>) {
        let Some(filter) = self.filter.get() else {
            return;
        };
        if batch.count() <= PREFETCH_FILTER_MAX_KEYS {
            // A malformed batch is refused by the insert that follows.
            let _ = batch.for_each(|op| filter.prefetch(op.key));
        }
    }

    /// Builds a filter over the user keys held, so that a lookup of a key not held reads one
    /// word of it instead of searching the skip list; versions added later are added to it.
    /// For a memtable that is complete or nearly (a log an open replayed), ordering keys
    /// bytewise (under another comparator, keys of different bytes may be equal). Only the
    /// thread that adds versions may build it, and once.
    pub(crate) fn build_key_filter(&self) {
        if !matches!(self.order, Order::Bytewise) || self.filter.get().is_some() {
            return;
        }
        let filter = KeyFilter::with_capacity(self.len());
        let mut key = Vec::new();
        let mut at = self.node(HEAD).next(0);
        while at != HEAD {
            let node = self.node(at);
            key.clear();
            self.bytes_of(node).append_key(node.key_len(), &mut key);
            filter.add(&key);
            at = node.next(0);
        }
        let _ = self.filter.set(filter);
    }

    /// The number of versions.
    pub(crate) fn len(&self) -> usize {
        self.entries.load(AtomicOrdering::Relaxed)
    }

    /// Whether it holds no version.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of versions added, counting those that replaced one of the same
    /// internal key.
    pub(crate) fn added(&self) -> usize {
        self.added.load(AtomicOrdering::Relaxed)
    }

    /// What a lookup of `key` finds (LevelDB's `MemTable::Get`).
    ///
    /// # Errors
    /// None in practice: entries are built by [`add`](Self::add), so their keys parse.
    pub(crate) fn lookup(&self, key: &LookupKey) -> Result<LookupResult> {
        if let Some(filter) = self.filter.get()
            && !filter.may_contain(key.user_key())
        {
            return Ok(LookupResult::NotFound);
        }
        let found = self.find_at_or_after(&Probe::of(key.target()));
        if found == HEAD {
            return Ok(LookupResult::NotFound);
        }
        let (mut k, mut v) = (Vec::new(), Vec::new());
        self.read_entry(self.node(found), &mut k, &mut v);
        let parsed = ParsedInternalKey::parse(&k)
            .map_err(|e| Error::InvalidArgument(e.to_string().into()))?;
        let same = match &self.order {
            Order::Bytewise => parsed.user_key == key.user_key(),
            Order::User(user) => user.compare(parsed.user_key, key.user_key()) == Ordering::Equal,
        };
        if !same {
            return Ok(LookupResult::NotFound);
        }
        Ok(LookupResult::decided_by(&parsed, &v))
    }
}

/// Adds `n` to a counter only the writer changes: a load and a store, not a locked add.
#[inline]
fn bump(counter: &AtomicUsize, n: usize) {
    counter.store(
        counter.load(AtomicOrdering::Relaxed).wrapping_add(n),
        AtomicOrdering::Relaxed,
    );
}

/// Where a new entry's bytes go.
enum Place<'a> {
    /// Into the arena, after the user key: this value.
    Inline(&'a [u8]),
    /// Nowhere: they are in outside buffer `buffer`, the user key from byte `key` on, the
    /// value from byte `value` on.
    Outside { buffer: u32, key: u32, value: u32 },
}

/// The most words one node takes in the arena (a key and value kept inline of the longest
/// length, at the greatest height), which must fit in a block.
const _: () = assert!(header_words(true) + MAX_HEIGHT + INLINE_BYTES.div_ceil(4) <= BLOCK_WORDS);

#[cfg(test)]
#[path = "live_memtable_tests.rs"]
mod tests;
