//! A database written by LevelDB's main branch with zstd blocks (type 2), tables and log,
//! read entry for entry against what LevelDB's iterator returned (see
//! crates/table/testdata/zstd/README.md).

use leveltable_db::{Db, DbOptions};
use leveltable_table::Profile;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../table/testdata/zstd");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn leveldb_zstd_database_reads_entry_for_entry() {
    let want: Vec<(Vec<u8>, Vec<u8>)> = std::fs::read_to_string(format!("{DIR}/db.tsv"))
        .unwrap()
        .lines()
        .map(|line| {
            let (k, v) = line.split_once('\t').unwrap();
            (unhex(k), unhex(v))
        })
        .collect();
    // 1600 written, 150 deleted, one more deleted from the log.
    assert_eq!(want.len(), 1600 - 150 - 1 + 1);
    for profile in [Profile::Auto, Profile::LevelDb] {
        let db = Db::open(format!("{DIR}/db"), DbOptions::default().profile(profile)).unwrap();
        let got: Vec<_> = db.iter().map(Result::unwrap).collect();
        assert_eq!(got, want, "{profile}");
        for (k, v) in want.iter().step_by(7) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert_eq!(db.get(b"key000001").unwrap(), None);
        assert_eq!(
            db.get(b"key000010").unwrap().as_deref(),
            Some(&b"back again"[..])
        );
        db.verify().unwrap();
    }
    let db = Db::open(
        format!("{DIR}/db"),
        DbOptions::default().profile(Profile::Mojang),
    )
    .unwrap();
    let err = db.iter().find_map(Result::err).unwrap().to_string();
    assert!(
        err.contains("corrupt zlib block contents (type 2, profile mojang)"),
        "{err}"
    );
}
