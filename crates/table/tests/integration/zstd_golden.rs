//! A table written by LevelDB's main branch with zstd blocks (type 2), read entry for entry
//! against what LevelDB's iterator returned (see testdata/zstd/README.md).

use leveltable_table::{BloomFilterPolicy, Compression, Profile, ReadOptions, Table};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/zstd");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn expected(name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    std::fs::read_to_string(format!("{DIR}/{name}"))
        .unwrap()
        .lines()
        .map(|line| {
            let (k, v) = line.split_once('\t').unwrap();
            (unhex(k), unhex(v))
        })
        .collect()
}

#[test]
fn leveldb_zstd_table_reads_entry_for_entry() {
    if !Compression::Zstd.is_available() {
        eprintln!("skipped: leveltable-table built without the zstd feature");
        return;
    }
    let bytes = std::fs::read(format!("{DIR}/table_zstd.ldb")).unwrap();
    // The first block is a zstd frame under type 2.
    assert_eq!(&bytes[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    let want = expected("table_zstd.tsv");
    assert_eq!(want.len(), 1000);
    for profile in [Profile::Auto, Profile::LevelDb] {
        let options = ReadOptions::default()
            .profile(profile)
            .filter_policy(BloomFilterPolicy::new(10));
        let table = Table::open(bytes.clone(), options).unwrap();
        let got: Vec<_> = table.entries().map(Result::unwrap).collect();
        assert_eq!(got, want, "{profile}");
        for (k, v) in &want {
            assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
        }
        assert_eq!(table.get(b"key000999x").unwrap(), None);
        let summary = table.verify().unwrap();
        assert_eq!(summary.entries, 1000);
    }
    // Mojang's meaning of type 2 is zlib: the zstd frame is no zlib stream.
    let table = Table::open(bytes, ReadOptions::default().profile(Profile::Mojang));
    let err = match table {
        Err(e) => e,
        Ok(t) => t.entries().find_map(Result::err).unwrap(),
    };
    let want = if Compression::Zlib.is_available() {
        "table: corrupt zlib block contents (type 2, profile mojang)"
    } else {
        "table: zlib compression (block type 2, at offset"
    };
    assert!(err.to_string().starts_with(want), "{err}");
}
