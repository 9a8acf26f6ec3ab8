//! A real LevelDB database through the C API, and its `.ldb` files read as tables.

use std::collections::BTreeMap;

use leveltable_interop::db::{Db, DbOptions, version};
use leveltable_interop::table::{Compression, KeyComparator, Table, TableOptions};
use leveltable_interop::{Error, require_leveldb};

#[test]
fn linked_library_is_1_23() {
    if !require_leveldb() {
        return;
    }
    assert_eq!(version(), Some((1, 23)));
}

#[test]
fn put_get_delete_compact_reopen() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = DbOptions {
        write_buffer_size: 64 << 10,
        max_file_size: 64 << 10,
        block_size: 1024,
        compression: Compression::None,
        bloom_bits_per_key: 10,
        verify_checksums: true,
        ..DbOptions::default()
    };
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&path, &options).unwrap();
        for i in 0..5000u32 {
            let k = format!("key{i:06}").into_bytes();
            // About 3 MiB in all: LevelDB raises max_file_size to at least 1 MiB, so a full
            // compaction leaves several table files.
            let v = format!("value-{i}-")
                .repeat(40 + (i % 20) as usize)
                .into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        for i in (0..5000u32).step_by(7) {
            let k = format!("key{i:06}").into_bytes();
            db.delete(&k).unwrap();
            model.remove(&k);
        }
        db.compact_range(None, None);
        assert_eq!(db.get(b"key000007").unwrap(), None);
        assert_eq!(
            db.get(b"key000008").unwrap(),
            model.get(&b"key000008"[..]).cloned()
        );
        // A second open of the same directory fails on LevelDB's lock file.
        assert!(matches!(
            Db::open(&path, &options),
            Err(Error::Status { .. })
        ));
        db.close();
    }

    let db = Db::open(
        &path,
        &DbOptions {
            create_if_missing: false,
            ..options.clone()
        },
    )
    .unwrap();
    for i in 0..5000u32 {
        let k = format!("key{i:06}").into_bytes();
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "key {i}");
    }
    drop(db);

    // Every compacted table is a LevelDB table of internal keys with a user-key filter;
    // together they hold exactly the live entries.
    let table_options = TableOptions {
        comparator: KeyComparator::InternalKey,
        bloom_bits_per_key: 10,
        paranoid_checks: true,
        ..TableOptions::default()
    };
    let mut files: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .collect();
    files.sort();
    assert!(files.len() > 1, "expected several tables, got {files:?}");
    let mut seen = BTreeMap::new();
    for file in &files {
        let table = Table::open_file(file, &table_options).unwrap();
        for (k, v) in table.entries(true).unwrap() {
            let (user, tag) = k.split_at(k.len() - 8);
            let kind = tag[0];
            assert_eq!(kind, 1, "only values survive a full compaction");
            seen.insert(user.to_vec(), v);
        }
    }
    assert_eq!(seen, model);
}

#[test]
fn open_missing_without_create_fails() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions {
        create_if_missing: false,
        ..DbOptions::default()
    };
    let err = Db::open(&dir.path().join("absent"), &options).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}
