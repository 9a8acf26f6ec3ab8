//! Databases under an object-store prefix: built locally, uploaded (CURRENT last), then
//! opened and read through moto (S3) and file:// URLs with the local reader's answers.

use crate::common;

use common::servers::Moto;
use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions};
use leveltable_object::{Location, open_db, upload_db};

/// Entries: enough for several tables larger than the tail read at open.
const N: u32 = 100_000;

fn key(i: u32) -> Vec<u8> {
    format!("user{:07}", i * 3).into_bytes()
}

/// A database of several tables in a temporary directory.
fn build_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = BulkOptions::default().max_file_size(1 << 20);
    let mut b = DbBuilder::create(&path, options).unwrap();
    for i in 0..N {
        b.add(
            &key(i),
            format!("value-{i}-{}", "x".repeat((i % 50) as usize)).as_bytes(),
        )
        .unwrap();
    }
    let summary = b.finish().unwrap();
    assert!(summary.tables > 3, "{summary:?}");
    (dir, path)
}

fn check(what: &str, loc: &Location, local: &Db) {
    let start = loc.stats().snapshot();
    let before = start;
    let db = open_db(loc, DbOptions::default()).unwrap();
    let opened = loc.stats().snapshot() - before;
    // LIST, CURRENT, MANIFEST.
    println!("{what}: open {opened}");
    assert_eq!(opened.lists, 1, "{what}");
    assert_eq!(opened.gets, 2, "{what}");
    // The first get opens one table as an AsyncTable opens (its tail, then at most one
    // more request for the metadata before it) and reads one data block.
    let before = loc.stats().snapshot();
    assert!(db.get(&key(N / 2)).unwrap().is_some());
    let first = loc.stats().snapshot() - before;
    assert!(first.gets <= 3, "{what}: first get {first}");
    for i in (0..N).step_by(331) {
        assert_eq!(
            db.get(&key(i)).unwrap(),
            local.get(&key(i)).unwrap(),
            "{what}"
        );
        let mut absent = key(i);
        absent.push(b'!');
        assert_eq!(db.get(&absent).unwrap(), None, "{what}");
    }
    // Once every table is open, a get costs at most one request.
    for i in (5..N).step_by(1001) {
        let before = loc.stats().snapshot();
        assert!(db.get(&key(i)).unwrap().is_some());
        assert!((loc.stats().snapshot() - before).gets <= 1, "{what}");
    }
    let all: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    let want: Vec<_> = local.iter().collect::<Result<_, _>>().unwrap();
    assert!(all == want, "{what}: scans differ");
    let r: Vec<_> = db
        .range(&key(1000)[..]..&key(2000)[..])
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(r.len(), 1000, "{what}");
    println!("{what}: all reads {}", loc.stats().snapshot() - start);
}

#[test]
fn databases_under_a_file_prefix() {
    let (_dir, path) = build_db();
    let local = Db::open(&path, DbOptions::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let loc = Location::parse(&format!("file://{}/copy", out.path().display())).unwrap();
    std::fs::create_dir(out.path().join("copy")).unwrap();
    upload_db(&path, &loc).unwrap();
    check("file", &loc, &local);
    // No CURRENT: not a database, and the error says so.
    let empty = Location::parse(&format!("file://{}", out.path().display())).unwrap();
    let e = open_db(&empty, DbOptions::default()).unwrap_err();
    assert!(e.to_string().contains("CURRENT"), "{e}");
}

#[test]
fn databases_under_an_s3_prefix() {
    let Some(moto) = Moto::start() else { return };
    let (_dir, path) = build_db();
    let local = Db::open(&path, DbOptions::default()).unwrap();
    let loc = moto.location("dbs/one");
    upload_db(&path, &loc).unwrap();
    check("s3", &loc, &local);
}
