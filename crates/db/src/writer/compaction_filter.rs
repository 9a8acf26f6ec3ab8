//! User code that a compaction asks about each live entry it writes: keep it, remove it or
//! change its value (RocksDB's `CompactionFilter`, fjall's `CompactionFilter`).

/// What a [`CompactionFilter`] decides about one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterDecision {
    /// Write the entry as it is.
    Keep,
    /// Remove the entry: it becomes a deletion of its key with the same sequence number, so
    /// that older versions of the key in deeper levels stay hidden. The deletion itself is
    /// dropped where no deeper level may hold the key and no snapshot needs it.
    Remove,
    /// Write the entry with this value instead.
    ChangeValue(Vec<u8>),
}

/// Called by compactions of a database open for writing with each entry they keep, for
/// the application to expire or rewrite entries in the background; set with
/// [`WritableOptions::compaction_filter`](crate::WritableOptions::compaction_filter).
///
/// The rules (RocksDB's, adapted to LevelDB's compactions):
/// - the filter sees the newest version of each key among a compaction's inputs, when that
///   version is a put: never a deletion, never an older version;
/// - it does not see a version a live [`Snapshot`](crate::Snapshot) can read (one written
///   at or before the newest live snapshot): what a snapshot reads never changes. A
///   compaction during which a snapshot is taken, and in which the filter removed or
///   changed something, is given up and run again;
/// - memtable flushes do not call it, only compactions (a compaction of level `n` into
///   `n + 1`, `level` being `n + 1`); an entry may be seen again by each later compaction
///   that rewrites it, so the decision should depend only on the key and value (and on
///   time, for expiry: a later compaction may then remove what an earlier one kept);
/// - a version written after the newest version the filter saw, in a memtable or a higher
///   level, still hides it: the filter decides about what reads see only for keys not
///   written since.
///
/// Calls come from the database's one background thread, one at a time. The filter must
/// not call back into the database (a write may wait for the compaction that called it).
pub trait CompactionFilter: Send + Sync {
    /// The decision about the entry `key` → `value`, written into `level`.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> FilterDecision;

    /// A name for messages and `Debug` output.
    fn name(&self) -> &str;
}

impl std::fmt::Debug for dyn CompactionFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CompactionFilter")
            .field(&self.name())
            .finish()
    }
}
