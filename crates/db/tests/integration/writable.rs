//! A database open for writing: puts, deletes and batches read back at once, across
//! flushes, compactions and reopens, at snapshots, and from several threads.

use std::collections::BTreeMap;
use std::sync::Arc;

use leveltable_db::{
    Db, DbOptions, Error, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
};

fn options() -> WritableOptions {
    WritableOptions::default().create_if_missing(true)
}

fn all(db: &WritableDb) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

fn model_pairs(m: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn puts_deletes_and_batches_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = WritableDb::open(dir.path(), options()).unwrap();
    let w = WriteOptions::default();
    db.put(b"a", b"1", w).unwrap();
    db.put(b"b", b"2", w).unwrap();
    db.delete(b"a", w).unwrap();
    let mut batch = WriteBatchBuilder::default();
    batch.put(b"c", b"3").delete(b"b").put(b"d", b"");
    db.write(&batch, WriteOptions::SYNC).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get(b"d").unwrap(), Some(Vec::new()));
    assert_eq!(
        all(&db),
        vec![(b"c".to_vec(), b"3".to_vec()), (b"d".to_vec(), Vec::new())]
    );
    assert_eq!(db.last_sequence(), 6);
}

#[test]
fn a_missing_database_is_created_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let err = WritableDb::open(dir.path(), WritableOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("create_if_missing is false"),
        "{err}"
    );
    assert!(!dir.path().join("LOCK").exists());
    drop(WritableDb::open(dir.path(), options()).unwrap());
    let err = WritableDb::open(dir.path(), options().error_if_exists(true)).unwrap_err();
    assert!(err.to_string().contains("error_if_exists"), "{err}");
}

#[test]
fn the_lock_excludes_a_second_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = WritableDb::open(dir.path(), options()).unwrap();
    let err = WritableDb::open(dir.path(), options()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    // A read-only open takes no lock.
    assert!(Db::open(dir.path(), DbOptions::default()).is_ok());
    drop(db);
    WritableDb::open(dir.path(), options()).unwrap();
}

#[test]
fn writes_survive_reopens_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let opts = options().write_buffer_size(64 << 10);
    let mut seed = 7u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..4 {
        let db = WritableDb::open(dir.path(), opts.clone()).unwrap();
        assert_eq!(all(&db), model_pairs(&model), "after reopen {round}");
        for _ in 0..20_000 {
            let k = format!("key{:06}", next() % 30_000).into_bytes();
            if next() % 5 == 0 {
                db.delete(&k, WriteOptions::default()).unwrap();
                model.remove(&k);
            } else {
                let v = vec![b'a' + (next() % 26) as u8; (next() % 200) as usize];
                db.put(&k, &v, WriteOptions::default()).unwrap();
                model.insert(k, v);
            }
        }
        assert_eq!(all(&db), model_pairs(&model), "round {round}");
        for (k, v) in model.iter().take(500) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        if round == 2 {
            db.compact_range(None, None).unwrap();
            assert_eq!(all(&db), model_pairs(&model), "after compact_range");
            let levels: Vec<usize> = (0..7).map(|l| db.files_at_level(l)).collect();
            assert_eq!(levels[0], 0, "{levels:?}");
        }
        db.close().unwrap();
        // The read-only open sees the same.
        let ro = Db::open(dir.path(), DbOptions::default()).unwrap();
        let got: Vec<_> = ro.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, model_pairs(&model));
    }
}

#[test]
fn snapshots_keep_what_they_see_through_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = WritableDb::open(dir.path(), options().write_buffer_size(64 << 10)).unwrap();
    let w = WriteOptions::default();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}").as_bytes(), b"old", w).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..2000u32 {
        if i % 2 == 0 {
            db.delete(format!("k{i:05}").as_bytes(), w).unwrap();
        } else {
            db.put(format!("k{i:05}").as_bytes(), b"new", w).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get_at(b"k00000", &snap).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(b"k00000").unwrap(), None);
    assert_eq!(db.get(b"k00001").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.iter_at(&snap).count(), 2000);
    assert_eq!(db.iter().count(), 1000);
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.iter().count(), 1000);
}

#[test]
fn threads_write_and_read_together() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(WritableDb::open(dir.path(), options().write_buffer_size(64 << 10)).unwrap());
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..3000u32 {
                    let k = format!("t{t}-{i:05}");
                    db.put(k.as_bytes(), k.as_bytes(), WriteOptions::default())
                        .unwrap();
                    if i % 7 == 0 {
                        assert_eq!(db.get(k.as_bytes()).unwrap(), Some(k.into_bytes()));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.iter().count(), 8 * 3000);
    assert_eq!(db.last_sequence(), 8 * 3000);
}

#[test]
fn a_table_read_past_too_often_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let db = WritableDb::open(dir.path(), options()).unwrap();
    let w = WriteOptions::default();
    db.put(b"a", b"1", w).unwrap();
    db.put(b"z", b"1", w).unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2", w).unwrap();
    db.put(b"y", b"2", w).unwrap();
    db.flush().unwrap();
    // A flushed memtable goes as deep as it overlaps nothing: [a, z] to level 2, [b, y]
    // above it to level 1.
    assert_eq!((db.files_at_level(1), db.files_at_level(2)), (1, 1));
    let before = db.compactions();
    // Each get of an absent key in [b, y] looks in both tables: the first is charged.
    for _ in 0..99 {
        assert_eq!(db.get(b"c").unwrap(), None);
    }
    assert_eq!(db.compactions(), before, "compacted before 100 seeks");
    assert_eq!(db.get(b"c").unwrap(), None);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.files_at_level(1) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!((db.files_at_level(1), db.files_at_level(2)), (0, 1));
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.iter().count(), 4);
}
