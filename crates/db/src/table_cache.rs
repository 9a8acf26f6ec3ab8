//! Open table files, within a number of files and a number of bytes (LevelDB's
//! `db/table_cache`, which bounds the number only).
//!
//! Each open table holds its file descriptor (or map), and in memory its index block, its
//! filter block and the search tree over its index
//! ([`Table::resident_bytes`](leveltable_table::Table::resident_bytes)). An index block is
//! usually a few hundred bytes per megabyte of table, but a crafted (or merely odd) table
//! can hold one that decompresses to hundreds of megabytes from a few kilobytes of file: so
//! the cache bounds both how many tables are open and the bytes they keep, closing the least
//! recently used (CLOCK: a table used since the hand last passed it gets another round).
//!
//! A table is opened before its size is known, so each open first reserves room for the
//! largest table the cache has opened so far, closing tables to make it; while the tables
//! are of like sizes, the memory held never exceeds the budget even while tables open. Opens
//! of different tables run in parallel as long as their reservations fit the budget
//! together (an object store's reads take a while); past that, and for a table another
//! thread is opening, an open waits. A table that alone needs more than the budget is
//! refused, naming it and both sizes. Tables that a reader still holds (a lookup, or a batch
//! of a scan, in progress) stay in memory until it lets go.
//!
//! Lookups of open tables take a read lock on one of 16 maps and proceed in
//! parallel. Data blocks go to the shared block cache of the read options.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};

use leveltable_table::ReadOptions;

use crate::filename::{sst_table_file_name, table_file_name};
use crate::internal_table::InternalTable;
use crate::storage::{LocalDir, Storage, table_path_problem};
use crate::table_source::TableSource;
use crate::{Error, Result};

/// LevelDB's default `max_open_files` (1000) less the 10 descriptors it keeps for other
/// files (`kNumNonTableCacheFiles`): the default table cache capacity.
pub(crate) const DEFAULT_MAX_OPEN_TABLES: usize = 1000 - 10;

/// The default bytes open tables may keep in memory (index blocks, filter blocks and their
/// search trees): 512 MiB. LevelDB's 2 MiB tables keep about 30 KiB each (990 of them:
/// 30 MiB); a 1 GiB table of 4 KiB blocks about 12 MiB.
pub const DEFAULT_TABLE_MEMORY_BUDGET: u64 = 512 << 20;

/// Maps of open tables, each behind its own lock, so that lookups of different tables from
/// different threads do not contend.
const SHARDS: usize = 16;

/// An open table file of the database.
pub type OpenTable = InternalTable<TableSource>;

/// A cache of open tables, by file number.
pub struct TableCache {
    storage: Arc<dyn Storage>,
    options: ReadOptions,
    memory_map: bool,
    capacity: usize,
    budget: u64,
    shards: Box<[RwLock<Shard>]>,
    clock: Mutex<Clock>,
    /// Signalled when an open ends (its reservation released).
    opened: Condvar,
}

/// One shard's open tables by number.
type Shard = HashMap<u64, Slot, BuildHasherDefault<NumberHasher>>;

/// An open table in the cache.
struct Slot {
    table: Arc<OpenTable>,
    /// Its [`Table::resident_bytes`] when it was opened.
    bytes: u64,
    /// Used since the clock's hand last passed it.
    referenced: AtomicBool,
}

/// What the (serialised) opens and evictions share.
#[derive(Debug, Default)]
struct Clock {
    /// The open tables in the order the hand meets them (the front next).
    order: VecDeque<u64>,
    /// The bytes they keep.
    bytes: u64,
    /// The most bytes any table opened so far keeps: the room an open reserves.
    largest: u64,
    /// Bytes reserved by the opens in progress.
    reserved: u64,
    /// Opens in progress (each holds a descriptor, counted against the capacity).
    opens: usize,
    /// The tables being opened into the cache.
    opening: HashSet<u64>,
}

/// Hashes a file number (a `u64`) with one multiplication (Fibonacci hashing). The numbers
/// come from the MANIFEST; a crafted set that collides costs probing over at most the
/// cache's capacity of entries.
#[derive(Default)]
struct NumberHasher(u64);

impl Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clock = self.clock();
        f.debug_struct("TableCache")
            .field("dir", &self.storage.path())
            .field("open", &clock.order.len())
            .field("capacity", &self.capacity)
            .field("resident_bytes", &clock.bytes)
            .field("memory_budget", &self.budget)
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `capacity` (at least 1) open tables of the directory `dir`,
    /// opened with `options` (an internal key comparator and filter policy), keeping at
    /// most [`DEFAULT_TABLE_MEMORY_BUDGET`] bytes.
    pub fn new(dir: &Path, capacity: usize, options: ReadOptions) -> Self {
        TableCache::with_storage(Arc::new(LocalDir::new(dir)), capacity, options)
    }

    /// A cache of at most `capacity` (at least 1) open tables of `storage`.
    pub fn with_storage(storage: Arc<dyn Storage>, capacity: usize, options: ReadOptions) -> Self {
        TableCache {
            storage,
            options,
            memory_map: true,
            capacity: capacity.max(1),
            budget: DEFAULT_TABLE_MEMORY_BUDGET,
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            clock: Mutex::default(),
            opened: Condvar::new(),
        }
    }

    /// Whether tables are read through memory maps (the default) or `pread`.
    pub(crate) fn with_memory_map(mut self, memory_map: bool) -> Self {
        self.memory_map = memory_map;
        self
    }

    /// The most bytes the open tables may keep in memory (at least 1 is used); see
    /// [`DbOptions::table_memory_budget`](crate::DbOptions::table_memory_budget).
    pub fn with_memory_budget(mut self, bytes: u64) -> Self {
        self.budget = bytes.max(1);
        self
    }

    /// The table numbered `number`, opened if it is not open (closing others if the cache
    /// is full, by count or by bytes).
    ///
    /// # Errors
    /// [`Error::MissingFile`] naming `NNNNNN.ldb` if neither it nor `NNNNNN.sst` exists
    /// (deleted since the database was opened: reopen it); [`Error::TableFile`] if the
    /// table does not open; [`Error::InvalidArgument`] naming the table and both sizes if
    /// it alone keeps more than the memory budget; [`Error::Io`] for other I/O errors
    /// (a directory or a dangling symbolic link where the table should be says so).
    pub fn get(&self, number: u64) -> Result<Arc<OpenTable>> {
        if let Some(table) = self.lookup(number) {
            return Ok(table);
        }
        let mut clock = self.clock();
        loop {
            // Another thread may have opened it while this one waited.
            if let Some(table) = self.lookup(number) {
                return Ok(table);
            }
            if !clock.opening.contains(&number) {
                break;
            }
            clock = self.wait(clock);
        }
        clock.opening.insert(number);
        // Takes it out of `opening` and wakes the waiters however this ends.
        let opening = Opening {
            cache: self,
            number,
        };
        let (table, bytes, mut clock) = self.open_within(clock, number)?;
        let table = Arc::new(table);
        let slot = Slot {
            table: Arc::clone(&table),
            bytes,
            referenced: AtomicBool::new(false),
        };
        self.shard(number)
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(number, slot);
        clock.order.push_back(number);
        clock.bytes = clock.bytes.saturating_add(bytes);
        drop(clock);
        drop(opening);
        Ok(table)
    }

    /// Closes table `number` if it is open (LevelDB's `TableCache::Evict`): its file was
    /// deleted. Readers holding it keep reading it until they let go.
    pub fn forget(&self, number: u64) {
        let mut clock = self.clock();
        let slot = self
            .shard(number)
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
        if let Some(slot) = slot {
            clock.bytes = clock.bytes.saturating_sub(slot.bytes);
            clock.order.retain(|&n| n != number);
        }
    }

    /// How many tables are open.
    pub fn open_tables(&self) -> usize {
        self.clock().order.len()
    }

    /// The bytes the open tables keep in memory, as [`Table::resident_bytes`](leveltable_table::Table::resident_bytes) counts them
    /// (tables a reader still holds after the cache closed them not included).
    pub fn resident_bytes(&self) -> u64 {
        self.clock().bytes
    }

    /// The most tables open at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The most bytes the open tables may keep in memory.
    pub fn memory_budget(&self) -> u64 {
        self.budget
    }

    /// The capacity in bytes of the block cache the tables share (0 without one).
    pub(crate) fn block_cache_capacity(&self) -> u64 {
        self.options
            .block_cache
            .as_ref()
            .map_or(0, |c| c.capacity())
    }

    /// Opens a table without caching it, for a caller that reads it whole: the cache first
    /// closes tables to make room for it within the budget.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn open(&self, number: u64) -> Result<OpenTable> {
        let clock = self.clock();
        self.open_within(clock, number).map(|(table, ..)| table)
    }

    fn clock(&self) -> MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for an open to end.
    fn wait<'a>(&self, clock: MutexGuard<'a, Clock>) -> MutexGuard<'a, Clock> {
        self.opened
            .wait(clock)
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn shard(&self, number: u64) -> &RwLock<Shard> {
        // The top bits of the Fibonacci hash are the well-mixed ones.
        let at = (number.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize;
        &self.shards[at % SHARDS]
    }

    /// The open table `number`, marked used, if the cache holds it.
    fn lookup(&self, number: u64) -> Option<Arc<OpenTable>> {
        let shard = self
            .shard(number)
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let slot = shard.get(&number)?;
        // Read first: a table in use stays marked, and its line is then only read.
        if !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
        Some(Arc::clone(&slot.table))
    }

    /// Opens table `number` within the budget: reserves room for the largest table seen,
    /// closing tables to make it (or waiting for other opens to end when theirs leave
    /// none), opens it without the clock held, refuses it if it alone exceeds the budget,
    /// and closes more if it is larger than the room reserved. Returns it with its bytes,
    /// and the clock.
    fn open_within<'a>(
        &'a self,
        mut clock: MutexGuard<'a, Clock>,
        number: u64,
    ) -> Result<(OpenTable, u64, MutexGuard<'a, Clock>)> {
        let reserve = loop {
            let reserve = clock.largest;
            self.make_room(&mut clock, reserve);
            let fits = clock.opens.saturating_add(clock.order.len()) < self.capacity
                && clock
                    .bytes
                    .saturating_add(clock.reserved)
                    .saturating_add(reserve)
                    <= self.budget;
            // With no other open in progress, go ahead: the cache is as empty as it gets.
            if fits || clock.opens == 0 {
                break reserve;
            }
            clock = self.wait(clock);
        };
        clock.reserved = clock.reserved.saturating_add(reserve);
        clock.opens = clock.opens.saturating_add(1);
        drop(clock);
        // Releases the reservation however the open ends (an error, or a panic).
        let release = Release {
            cache: self,
            bytes: reserve,
        };
        let opened = self.open_file(number);
        drop(release);
        let (name, table) = opened?;
        let bytes = table.table().resident_bytes();
        if bytes > self.budget {
            return Err(Error::InvalidArgument(
                format!(
                    "{name}: the table keeps {bytes} bytes{} of index and filter blocks in \
                     memory, more than the table memory budget of {} bytes{}; raise the \
                     budget to read it",
                    mib(bytes),
                    self.budget,
                    mib(self.budget),
                )
                .into(),
            ));
        }
        let mut clock = self.clock();
        clock.largest = clock.largest.max(bytes);
        self.make_room(&mut clock, bytes);
        Ok((table, bytes, clock))
    }

    /// Closes tables until one more of `incoming` bytes fits beside the open tables and the
    /// reservations of the opens in progress, by count and by bytes.
    fn make_room(&self, clock: &mut Clock, incoming: u64) {
        while !clock.order.is_empty()
            && (clock.order.len().saturating_add(clock.opens) >= self.capacity
                || clock
                    .bytes
                    .saturating_add(clock.reserved)
                    .saturating_add(incoming)
                    > self.budget)
        {
            self.evict_one(clock);
        }
    }

    /// Closes the table the hand stops at: the first it meets not used since it last
    /// passed, clearing the marks of those it passes (so it stops within two rounds).
    fn evict_one(&self, clock: &mut Clock) {
        while let Some(number) = clock.order.pop_front() {
            let mut shard = self
                .shard(number)
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let Some(slot) = shard.get(&number) else {
                continue;
            };
            if slot.referenced.swap(false, Ordering::Relaxed) {
                drop(shard);
                clock.order.push_back(number);
                continue;
            }
            let slot = shard.remove(&number);
            drop(shard);
            if let Some(slot) = slot {
                clock.bytes = clock.bytes.saturating_sub(slot.bytes);
            }
            return;
        }
    }

    /// Opens table `number` from its file: `NNNNNN.ldb`, or `NNNNNN.sst` when only that
    /// exists. Returns the name it was opened under.
    fn open_file(&self, number: u64) -> Result<(String, OpenTable)> {
        let ldb = table_file_name(number);
        let open = |name: &str| {
            self.storage
                .open_table_with(name, self.memory_map, &self.options)
        };
        let (name, opened) = match open(&ldb) {
            Ok(opened) => (ldb, opened),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let sst = sst_table_file_name(number);
                match open(&sst) {
                    Ok(opened) => (sst, opened),
                    Err(e2) if e2.kind() == io::ErrorKind::NotFound => {
                        return Err(self.not_found(&ldb, &sst, e));
                    }
                    Err(e2) => return Err(self.io_error(&sst, e2)),
                }
            }
            Err(e) => return Err(self.io_error(&ldb, e)),
        };
        let table = opened.map_err(|e| {
            // Reading a directory through `pread` fails only here.
            self.directory_error(&name)
                .unwrap_or_else(|| Error::TableFile {
                    file: name.clone().into(),
                    source: e,
                })
        })?;
        let table = InternalTable::from_table(table).map_err(|e| e.in_table(&name))?;
        Ok((name, table))
    }

    /// The error for a table whose file is not found: a dangling symbolic link under
    /// either name says so; otherwise the file was deleted since the open.
    fn not_found(&self, ldb: &str, sst: &str, e: io::Error) -> Error {
        let dir = self.storage.path();
        for name in [ldb, sst] {
            let path = dir.join(name);
            if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                let problem = table_path_problem(&path);
                return Error::io(path, problem.unwrap_or(e));
            }
        }
        Error::MissingFile {
            file: ldb.into(),
            what: "deleted since the database was opened (compacted by another process?); \
                   reopen the database"
                .into(),
        }
    }

    /// An I/O error on the table file `name`; for a directory standing where the table
    /// should be, one that says so (mapping one fails with `ENODEV`, reading it `EISDIR`).
    fn io_error(&self, name: &str, e: io::Error) -> Error {
        self.directory_error(name)
            .unwrap_or_else(|| Error::io(self.storage.path().join(name), e))
    }

    /// The error for a directory standing where the table file `name` should be, if one
    /// does.
    fn directory_error(&self, name: &str) -> Option<Error> {
        let path = self.storage.path().join(name);
        table_path_problem(&path)
            .filter(|e| e.kind() == io::ErrorKind::IsADirectory)
            .map(|e| Error::io(path, e))
    }
}

/// An open's reservation, released when the open ends.
struct Release<'a> {
    cache: &'a TableCache,
    bytes: u64,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let mut clock = self.cache.clock();
        clock.reserved = clock.reserved.saturating_sub(self.bytes);
        clock.opens = clock.opens.saturating_sub(1);
        drop(clock);
        self.cache.opened.notify_all();
    }
}

/// A table being opened into the cache, taken out of [`Clock::opening`] when the open ends.
struct Opening<'a> {
    cache: &'a TableCache,
    number: u64,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut clock = self.cache.clock();
        clock.opening.remove(&self.number);
        drop(clock);
        self.cache.opened.notify_all();
    }
}

/// ` (N.N MiB)` for a size of at least 1 MiB, for messages; nothing for a smaller one.
fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 {
        return String::new();
    }
    format!(" ({:.1} MiB)", bytes as f64 / f64::from(1 << 20))
}
