//! Comparators chosen by the name a MANIFEST records ([`DbOptions::comparators`]).

use std::sync::Arc;

use leveltable_db::{ComparatorRegistry, Db, DbOptions, Error};
use leveltable_table::BytewiseComparator;

use crate::common::comparators::{Reverse, write_db};

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
