//! Minecraft Bedrock worlds written by Mojang's LevelDB (amulet-leveldb, raw deflate
//! blocks), read with this crate and compared with Mojang's own iteration: the database view
//! of the world as Mojang left it (tables and an unflushed log), and the table view of a
//! copy that Mojang's LevelDB reopened (its log recovered into a table).
//!
//! Needs a Python with amulet-leveldb: `LEVELTABLE_MOJANG_PYTHON` (or `python3`). Without
//! one the test prints one `skipped:` line, unless `LEVELTABLE_MOJANG_PYTHON` or
//! `LEVELTABLE_REQUIRE_SERVERS=1` is set.

use std::collections::BTreeMap;
use std::fs::File;

use leveltable_db::dbformat::{ParsedInternalKey, ValueType, ldb_read_options};
use leveltable_db::{Db, DbOptions};
use leveltable_interop::mojang::{mojang_view, python};
use leveltable_table::{Profile, Table};

use crate::common::dbs::{assert_raw_deflate, files, mojang_world};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

#[test]
fn mojang_worlds_read_as_mojang_reads_them() {
    let Some(python) = python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("db");
    let copy = tmp.path().join("copy");
    // Mojang's view, from the copy (opening it recovers the log into a table).
    let want: Entries = mojang_world(&python, &world, 10, 3, &copy);
    assert!(want.len() > 1000);
    assert!(files(&world, "ldb").len() >= 2);

    // The database view: the world as Mojang left it, and the reopened copy.
    for dir in [&world, &copy] {
        for profile in [Profile::Auto, Profile::Mojang] {
            let db = Db::open(dir, DbOptions::default().profile(profile)).unwrap();
            let got: Entries = db.iter().map(Result::unwrap).collect();
            assert_eq!(got.len(), want.len(), "{} {profile}", dir.display());
            assert!(got == want, "{} {profile}", dir.display());
            for (k, v) in want.iter().step_by(101) {
                assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
            }
            db.verify().unwrap();
        }
        let err = Db::open(dir, DbOptions::default().profile(Profile::LevelDb))
            .and_then(|db| db.verify().map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unsupported block compression type 4"),
            "{err}"
        );
    }

    // The table view: in the reopened copy every version is in a table; the newest of each
    // user key, deletions dropped, is Mojang's view.
    let mut newest: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> = BTreeMap::new();
    for path in files(&copy, "ldb") {
        let options = ldb_read_options().profile(Profile::Auto);
        let table = Table::open(File::open(&path).unwrap(), options).unwrap();
        table.verify().unwrap();
        for entry in table.entries() {
            let (key, value) = entry.unwrap();
            let parsed = ParsedInternalKey::parse(&key).unwrap();
            let value = (parsed.value_type == ValueType::Value).then_some(value);
            let slot = newest.entry(parsed.user_key.to_vec()).or_insert((0, None));
            if parsed.sequence >= slot.0 {
                *slot = (parsed.sequence, value);
            }
        }
    }
    let from_tables: Entries = newest
        .into_iter()
        .filter_map(|(k, (_, v))| Some((k, v?)))
        .collect();
    assert!(
        from_tables == want,
        "the tables' newest versions differ from Mojang's view"
    );
}

/// A world edited by `WritableDb` with Mojang's raw deflate blocks opens in Mojang's
/// LevelDB with the edits, and its new tables are raw deflate (type 4), as Minecraft's are.
#[test]
fn a_world_we_edit_opens_in_mojangs_leveldb() {
    use leveltable_db::{
        TableOptions, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
    };
    use leveltable_table::Compression;

    let Some(python) = python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("db");
    let before: BTreeMap<Vec<u8>, Vec<u8>> =
        mojang_world(&python, &world, 4, 5, &tmp.path().join("before"));
    let old_tables: Vec<_> = files(&world, "ldb");
    let options = WritableOptions::default()
        .table(TableOptions::default().compression(Compression::RawDeflate))
        .write_buffer_size(256 << 10);
    let db = WritableDb::open(&world, options).unwrap();
    let mut expected = before.clone();
    // Edit as a world editor does: new chunks, rewritten chunks, deleted chunks.
    for (i, (k, _)) in before.iter().enumerate().step_by(7) {
        if i % 2 == 0 {
            db.delete(k, WriteOptions::default()).unwrap();
            expected.remove(k);
        } else {
            let v = vec![i as u8; 3000];
            db.put(k, &v, WriteOptions::default()).unwrap();
            expected.insert(k.clone(), v);
        }
    }
    let mut batch = WriteBatchBuilder::default();
    for x in 0..500i32 {
        let mut key = x.to_le_bytes().to_vec();
        key.extend_from_slice(&1000i32.to_le_bytes());
        key.push(0x2F);
        key.push(0);
        let value: Vec<u8> = (0..4096u32).map(|j| (j / 64 + x as u32) as u8).collect();
        batch.put(&key, &value);
        expected.insert(key, value);
    }
    db.write(&batch, WriteOptions { sync: true }).unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();

    let ours: Vec<_> = files(&world, "ldb")
        .into_iter()
        .filter(|t| !old_tables.contains(t))
        .collect();
    assert!(!ours.is_empty());
    for path in &ours {
        assert_raw_deflate(path);
    }
    let got: Entries = mojang_view(&python, &world);
    let want: Entries = expected.into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "Mojang's view of the edited world differs");
}
