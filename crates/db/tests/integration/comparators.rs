//! Comparators chosen by the name a MANIFEST records ([`DbOptions::comparators`]).

use std::sync::Arc;

use leveltable_db::{ComparatorRegistry, Db, DbOptions, Error, WriteBatchBuilder};
use leveltable_table::BytewiseComparator;

use crate::common::comparators::{FirstByte, Reverse, write_db, write_db_with};

fn keys(db: &Db) -> Vec<Vec<u8>> {
    db.iter().map(|e| e.unwrap().0).collect()
}

fn registry() -> ComparatorRegistry {
    ComparatorRegistry::default().with(Arc::new(Reverse))
}

#[test]
fn a_registered_comparator_opens_the_database_whose_manifest_names_it() {
    let dir = tempfile::tempdir().unwrap();
    write_db(dir.path(), Some("test.Reverse"));
    let options = DbOptions::default().comparators(registry());
    let db = Db::open(dir.path(), options.clone()).unwrap();
    assert_eq!(db.properties().comparator, "test.Reverse");
    assert_eq!(keys(&db), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    let salvaged = Db::salvage(dir.path(), options).unwrap();
    assert_eq!(salvaged.properties().comparator, "test.Reverse");
    assert_eq!(keys(&salvaged), keys(&db));
}

#[test]
fn the_same_registry_opens_a_bytewise_database_bytewise() {
    for named in [Some("leveldb.BytewiseComparator"), None] {
        let dir = tempfile::tempdir().unwrap();
        write_db(dir.path(), named);
        let db = Db::open(dir.path(), DbOptions::default().comparators(registry())).unwrap();
        assert_eq!(db.properties().comparator, "leveldb.BytewiseComparator");
        assert_eq!(keys(&db), [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }
}

#[test]
fn an_unregistered_name_is_refused_by_open_and_salvage_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write_db(dir.path(), Some("test.Reverse"));
    let options = DbOptions::default().comparators(ComparatorRegistry::default());
    for err in [
        Db::open(dir.path(), options.clone()).unwrap_err(),
        Db::salvage(dir.path(), options.clone()).unwrap_err(),
    ] {
        match &err {
            Error::UnknownComparator { name, ours, .. } => {
                assert_eq!(name, "test.Reverse");
                assert_eq!(ours, "leveldb.BytewiseComparator");
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("test.Reverse"), "{err}");
    }
}

#[test]
fn an_explicit_comparator_still_refuses_another_name() {
    let dir = tempfile::tempdir().unwrap();
    write_db(dir.path(), Some("test.Reverse"));
    // Setting a comparator after a registry asks for that comparator only.
    let options = DbOptions::default()
        .comparators(registry())
        .comparator(Arc::new(BytewiseComparator));
    let err = Db::open(dir.path(), options).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownComparator { name, .. } if name == "test.Reverse"),
        "{err}"
    );
}

#[test]
fn salvage_finds_the_name_in_a_manifest_current_does_not_name() {
    let dir = tempfile::tempdir().unwrap();
    write_db(dir.path(), Some("test.Reverse"));
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    let db = Db::salvage(dir.path(), DbOptions::default().comparators(registry())).unwrap();
    assert_eq!(db.properties().comparator, "test.Reverse");
    assert_eq!(keys(&db), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    let refused = Db::salvage(
        dir.path(),
        DbOptions::default().comparators(ComparatorRegistry::default()),
    )
    .unwrap_err();
    assert!(refused.to_string().contains("test.Reverse"), "{refused}");
}

/// Versions of one user key written under different bytes: an iterator, either way and at
/// any snapshot, shows the deciding version's own key with its value, as LevelDB's does.
#[test]
fn the_key_shown_is_the_deciding_versions_own() {
    let dir = tempfile::tempdir().unwrap();
    let batches: Vec<WriteBatchBuilder> = [
        (1, &b"aX"[..], &b"1"[..]),
        (2, b"aY", b"2"),
        (3, b"b", b"3"),
    ]
    .into_iter()
    .map(|(sequence, k, v)| {
        let mut batch = WriteBatchBuilder::new(sequence);
        batch.put(k, v);
        batch
    })
    .collect();
    write_db_with(dir.path(), Some("test.FirstByte"), &batches);
    let registry = ComparatorRegistry::default().with(Arc::new(FirstByte));
    let db = Db::open(dir.path(), DbOptions::default().comparators(registry)).unwrap();
    let both = |sequence: u64| {
        let forward: Vec<_> = db.iter_at(sequence).map(Result::unwrap).collect();
        let mut backward: Vec<_> = db.iter_at(sequence).rev().map(Result::unwrap).collect();
        backward.reverse();
        assert_eq!(forward, backward, "at {sequence}");
        forward
    };
    let kv = |k: &[u8], v: &[u8]| (k.to_vec(), v.to_vec());
    assert_eq!(both(3), [kv(b"aY", b"2"), kv(b"b", b"3")]);
    assert_eq!(both(1), [kv(b"aX", b"1")]);
}
