//! The table cache's memory budget: open tables keep their index and filter blocks in
//! memory, and the cache closes tables to keep those bytes within the budget, as it closes
//! them to keep their number within `max_open_tables`.

use crate::common;

use std::path::Path;

use common::dbs::{bulk_build, table_numbers};
use leveltable_db::dbformat::ldb_read_options;
use leveltable_db::filename::table_file_name;
use leveltable_db::table_cache::TableCache;
use leveltable_db::{Db, DbOptions, Error};

/// A database of `n` keys in tables of about 16 KiB (each with a Bloom filter).
fn build(dir: &Path, n: u32) -> Db {
    let entries = (0..n).map(|i| (format!("key{i:08}").into_bytes(), vec![b'v'; 40]));
    bulk_build(dir, 16 << 10, entries);
    Db::open(dir, DbOptions::default()).unwrap()
}

/// The resident bytes of each table, opened alone.
fn resident(dir: &Path, numbers: &[u64]) -> Vec<u64> {
    numbers
        .iter()
        .map(|&n| {
            let cache = TableCache::new(dir, 1, ldb_read_options());
            cache.get(n).unwrap().table().resident_bytes()
        })
        .collect()
}

#[test]
fn open_tables_keep_their_bytes_within_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 20_000));
    assert!(numbers.len() >= 10, "{} tables", numbers.len());
    let sizes = resident(&dir, &numbers);
    let largest = *sizes.iter().max().unwrap();
    assert!(largest > 0);
    let total: u64 = sizes.iter().sum();
    // Room for about three tables of the largest size.
    let budget = largest * 3 + largest / 2;
    assert!(total > 2 * budget, "total {total}, budget {budget}");

    let cache = TableCache::new(&dir, 990, ldb_read_options()).with_memory_budget(budget);
    assert_eq!(cache.memory_budget(), budget);
    let mut peak = 0;
    for _ in 0..2 {
        for &n in &numbers {
            let table = cache.get(n).unwrap();
            assert!(table.table().resident_bytes() > 0);
            peak = peak.max(cache.resident_bytes());
            assert!(cache.resident_bytes() <= budget);
            assert!(cache.open_tables() <= 3, "{} open", cache.open_tables());
        }
    }
    assert!(
        peak >= 2 * largest - largest / 4,
        "peak {peak}, largest {largest}"
    );

    // Without a budget in the way, the count bound alone applies: every table stays open.
    let cache = TableCache::new(&dir, 990, ldb_read_options());
    for &n in &numbers {
        cache.get(n).unwrap();
    }
    assert_eq!(cache.open_tables(), numbers.len());
    assert_eq!(cache.resident_bytes(), total);
}

#[test]
fn the_count_bound_still_holds_under_a_large_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 10_000));
    assert!(numbers.len() > 4);
    let cache = TableCache::new(&dir, 4, ldb_read_options()).with_memory_budget(u64::MAX);
    for &n in numbers.iter().chain(&numbers) {
        cache.get(n).unwrap();
        assert!(cache.open_tables() <= 4);
    }
    assert_eq!(cache.open_tables(), 4);
}

#[test]
fn recently_used_tables_stay_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 10_000));
    let cache = TableCache::new(&dir, 3, ldb_read_options());
    let hot = numbers[0];
    let first = cache.get(hot).unwrap();
    for &n in &numbers[1..] {
        // The hot table is used between every two opens: the hand always finds it used.
        assert!(std::sync::Arc::ptr_eq(&first, &cache.get(hot).unwrap()));
        cache.get(n).unwrap();
    }
    assert!(std::sync::Arc::ptr_eq(&first, &cache.get(hot).unwrap()));
}

#[test]
fn a_table_larger_than_the_budget_is_refused_naming_it_and_both_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = build(&dir, 5_000);
    let numbers = table_numbers(&db);
    let size = resident(&dir, &numbers[..1])[0];
    let budget = size / 2;
    let db = Db::open(&dir, DbOptions::default().table_memory_budget(budget)).unwrap();
    let e = db.get(b"key00000000").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let text = e.to_string();
    let name = table_file_name(numbers[0]);
    assert!(text.contains(&name), "{text}");
    assert!(text.contains(&format!("{budget} bytes")), "{text}");
    // The table's own size as the database's options read it (a filter and all).
    assert!(text.contains(" bytes of index and filter blocks"), "{text}");
    assert!(text.contains("more than the table memory budget"), "{text}");
    // Scans and verify say the same.
    let e = db.iter().next().unwrap().unwrap_err();
    assert!(e.to_string().contains(&name), "{e}");
    let e = db.verify().unwrap_err();
    assert!(e.to_string().contains("table memory budget"), "{e}");
}

#[test]
fn a_database_reads_whole_with_room_for_one_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = build(&dir, 20_000);
    let numbers = table_numbers(&db);
    let largest = *resident(&dir, &numbers).iter().max().unwrap();
    let options = DbOptions::default().table_memory_budget(largest + largest / 2);
    let db = Db::open(&dir, options).unwrap();
    assert_eq!(db.iter().count(), 20_000);
    assert!(db.open_tables() <= 1, "{} open", db.open_tables());
    for i in (0..20_000).step_by(97) {
        let key = format!("key{i:08}");
        assert_eq!(db.get(key.as_bytes()).unwrap().unwrap(), [b'v'; 40]);
        assert!(db.open_tables() <= 1);
    }
    assert_eq!(db.verify().unwrap().table_entries, 20_000);
    // Backwards too.
    let mut it = db.iter();
    let mut n = 0;
    while let Some(entry) = it.next_back() {
        entry.unwrap();
        n += 1;
    }
    assert_eq!(n, 20_000);
}

#[test]
fn the_default_budget_is_documented_and_at_most_512_mib() {
    let options = DbOptions::default();
    assert_eq!(
        options.table_memory_budget,
        leveltable_db::table_cache::DEFAULT_TABLE_MEMORY_BUDGET
    );
    assert!(options.table_memory_budget <= 512 << 20);
    assert!(format!("{options:?}").contains("table_memory_budget"));
}

#[test]
fn threads_share_the_cache_within_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 20_000));
    let largest = *resident(&dir, &numbers).iter().max().unwrap();
    let budget = 2 * largest + largest / 2;
    let cache = TableCache::new(&dir, 990, ldb_read_options()).with_memory_budget(budget);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (cache, numbers) = (&cache, &numbers);
            s.spawn(move || {
                for round in 0..20 {
                    let n = numbers[(t * 7 + round * 3) % numbers.len()];
                    let table = cache.get(n).unwrap();
                    assert!(table.table().resident_bytes() > 0);
                    assert!(cache.resident_bytes() <= budget);
                }
            });
        }
    });
    assert!(cache.open_tables() <= 2);
}

/// A directory whose table opens take 50 ms, counting how many run at once.
struct SlowDir {
    dir: leveltable_db::storage::LocalDir,
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    opens: std::sync::atomic::AtomicUsize,
}

impl SlowDir {
    fn new(dir: &Path) -> std::sync::Arc<SlowDir> {
        std::sync::Arc::new(SlowDir {
            dir: leveltable_db::storage::LocalDir::new(dir),
            running: Default::default(),
            most: Default::default(),
            opens: Default::default(),
        })
    }
}

impl leveltable_db::storage::Storage for SlowDir {
    fn path(&self) -> std::path::PathBuf {
        self.dir.path()
    }
    fn list(&self) -> std::io::Result<Vec<String>> {
        self.dir.list()
    }
    fn read(&self, name: &str) -> std::io::Result<Vec<u8>> {
        self.dir.read(name)
    }
    fn open_table(
        &self,
        name: &str,
        memory_map: bool,
    ) -> std::io::Result<leveltable_db::table_source::TableSource> {
        use std::sync::atomic::Ordering::SeqCst;
        self.opens.fetch_add(1, SeqCst);
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.running.fetch_sub(1, SeqCst);
        self.dir.open_table(name, memory_map)
    }
}

/// Gets `numbers` from `cache` on one thread each, all at once.
fn get_together(cache: &TableCache, numbers: &[u64]) {
    let start = std::sync::Barrier::new(numbers.len());
    std::thread::scope(|s| {
        for &n in numbers {
            let (cache, start) = (cache, &start);
            s.spawn(move || {
                start.wait();
                assert!(cache.get(n).unwrap().table().resident_bytes() > 0);
            });
        }
    });
}

#[test]
fn tables_open_in_parallel_while_their_room_fits_the_budget() {
    use std::sync::atomic::Ordering::SeqCst;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 20_000));
    let largest = *resident(&dir, &numbers).iter().max().unwrap();

    // Room for all: the opens overlap (an object store's would each wait on the network).
    let slow = SlowDir::new(&dir);
    let cache = TableCache::with_storage(slow.clone(), 990, ldb_read_options());
    cache.get(numbers[0]).unwrap();
    get_together(&cache, &numbers[1..5]);
    assert!(slow.most.load(SeqCst) >= 2, "{}", slow.most.load(SeqCst));

    // Room for one table: once the cache knows the tables' size, opens take turns.
    let slow = SlowDir::new(&dir);
    let budget = largest + largest / 2;
    let cache =
        TableCache::with_storage(slow.clone(), 990, ldb_read_options()).with_memory_budget(budget);
    cache.get(numbers[0]).unwrap();
    get_together(&cache, &numbers[1..5]);
    assert_eq!(slow.most.load(SeqCst), 1);
    assert!(cache.resident_bytes() <= budget);

    // One table asked for by many threads at once is opened once.
    let slow = SlowDir::new(&dir);
    let cache = TableCache::with_storage(slow.clone(), 990, ldb_read_options());
    get_together(&cache, &[numbers[3]; 6]);
    assert_eq!(slow.opens.load(SeqCst), 1);
    assert_eq!(cache.open_tables(), 1);
}

#[test]
fn opens_waiting_for_room_all_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let numbers = table_numbers(&build(&dir, 20_000));
    let largest = *resident(&dir, &numbers).iter().max().unwrap();
    for (capacity, budget) in [(990, largest + 1), (1, u64::MAX), (2, 2 * largest + 1)] {
        let cache = TableCache::new(&dir, capacity, ldb_read_options()).with_memory_budget(budget);
        std::thread::scope(|s| {
            for t in 0..6 {
                let (cache, numbers) = (&cache, &numbers);
                s.spawn(move || {
                    for round in 0..30 {
                        let n = numbers[(t * 5 + round * 7) % numbers.len()];
                        cache.get(n).unwrap();
                        if round % 10 == 0 {
                            cache.open(n).unwrap();
                        }
                    }
                });
            }
        });
        assert!(cache.open_tables() <= capacity);
        assert!(cache.resident_bytes() <= budget);
    }
}
