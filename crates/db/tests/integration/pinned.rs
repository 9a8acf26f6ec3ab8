//! Opening a database at a version an earlier open reported (`Db::pinned_version`,
//! `Db::open_version`): the same state while a writer appends to the log, only the tables
//! given, and an error naming the file once a compaction has removed one of them.

use leveltable_db::{Db, DbOptions, Error, WritableDb, WritableOptions, WriteOptions};

fn items(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

#[test]
fn a_pinned_version_ignores_later_writes_and_fails_once_its_tables_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let w = WritableDb::open(&path, WritableOptions::default().create_if_missing(true)).unwrap();
    let sync = WriteOptions::default();
    for i in 0..100u32 {
        w.put(format!("k{i:03}").as_bytes(), b"table", sync)
            .unwrap();
    }
    w.flush().unwrap();
    w.put(b"k001", b"log", sync).unwrap();

    let planned = Db::open(&path, DbOptions::default()).unwrap();
    let version = planned.pinned_version();
    let expected = items(&planned);
    assert_eq!(version.logs.len(), 1);
    assert!(version.levels.iter().flatten().count() >= 1);

    // The writer goes on: the log grows past what was replayed.
    w.put(b"k001", b"newer", sync).unwrap();
    w.put(b"k500", b"newer", sync).unwrap();
    let pinned = Db::open_version(&path, &version, DbOptions::default()).unwrap();
    assert_eq!(items(&pinned), expected);
    assert_eq!(pinned.get(b"k001").unwrap().as_deref(), Some(&b"log"[..]));
    assert_eq!(pinned.snapshot(), version.last_sequence);
    // A fresh open sees the newer state.
    let now = Db::open(&path, DbOptions::default()).unwrap();
    assert_eq!(now.get(b"k001").unwrap().as_deref(), Some(&b"newer"[..]));

    // Only the tables given are read: with none, only the log's entries remain.
    let mut logs_only = version.clone();
    logs_only.levels.iter_mut().for_each(Vec::clear);
    let db = Db::open_version(&path, &logs_only, DbOptions::default()).unwrap();
    assert_eq!(items(&db), vec![(b"k001".to_vec(), b"log".to_vec())]);

    // A compaction replaces the version's tables: opening it fails naming one.
    w.flush().unwrap();
    w.compact_range(None, None).unwrap();
    match Db::open_version(&path, &version, DbOptions::default()) {
        Err(Error::MissingFile { file, what }) => {
            let file = file.display().to_string();
            assert!(file.ends_with(".ldb") || file.ends_with(".log"), "{file}");
            assert!(what.contains(&path.display().to_string()), "{what}");
        }
        other => panic!("expected a missing file, got {other:?}"),
    }
    w.close().unwrap();
}
