//! `leveltable audit`: the verdict on LevelDB's filter over sequential integer keys, the
//! clean bill for the cache-local filter, JSON output, supplied probes, and errors.

use crate::common;

use common::{build, leveltable, stderr_of};

/// Even big-endian u64 keys in hex with 100-byte values: about 35 entries per block.
fn integer_tsv(n: u64) -> String {
    let value = "76".repeat(100);
    (0..n)
        .map(|i| format!("{:016x}\t{value}\n", 2 * i))
        .collect()
}

#[test]
fn leveldb_filter_is_pathological_on_integer_keys() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &integer_tsv(20_000), &["--hex"]);
    let out = leveltable().arg("audit").arg(&table).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("filter leveldb.BuiltinBloomFilter2"),
        "{text}"
    );
    assert!(text.contains("verdict: pathological"), "{text}");
    assert!(
        text.contains("warning: LevelDB's Bloom filter is pathological"),
        "{text}"
    );
    assert!(text.contains("--extra-filter local-bloom"), "{text}");
}

#[test]
fn dual_filter_table_gets_a_clean_bill() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--hex", "--extra-filter", "local-bloom"];
    let table = build(dir.path(), "t.ldb", &integer_tsv(20_000), &args);
    let out = leveltable()
        .args(["audit", "--json"])
        .arg(&table)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["entries"], 20_000);
    assert_eq!(json["needs_better_filter"], false);
    let filters = json["filters"].as_array().unwrap();
    assert_eq!(filters.len(), 2);
    let ours = filters
        .iter()
        .find(|f| f["policy"] == "leveltable.LocalBloom64")
        .unwrap();
    assert_eq!(ours["verdict"], "good");
    assert!(ours["blocks_read_per_absent_get"].as_f64().unwrap() < 0.02);
    let leveldb = filters
        .iter()
        .find(|f| f["policy"] == "leveldb.BuiltinBloomFilter2")
        .unwrap();
    assert_eq!(leveldb["verdict"], "pathological");
}

#[test]
fn supplied_probes_are_read_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &integer_tsv(2_000), &["--hex"]);
    let probes = dir.path().join("probes.hex");
    // One present key and two absent ones inside the table's range.
    std::fs::write(
        &probes,
        "0000000000000002\n0000000000000003\n0000000000000005\n",
    )
    .unwrap();
    let out = leveltable()
        .args(["audit", "--json", "--hex", "--probes"])
        .arg(&probes)
        .arg(&table)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["filters"][0]["supplied"]["probes"], 2);
}

#[test]
fn errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_table = dir.path().join("junk");
    std::fs::write(&not_a_table, vec![7u8; 100]).unwrap();
    leveltable()
        .arg("audit")
        .arg(&not_a_table)
        .assert()
        .code(2)
        .stderr("error: not an sstable (bad magic number)\n");

    let table = build(dir.path(), "t.ldb", "a\t1\n", &[]);
    let bad_probes = dir.path().join("probes");
    std::fs::write(&bad_probes, "zz\n").unwrap();
    let out = leveltable()
        .args(["audit", "--hex", "--probes"])
        .arg(&bad_probes)
        .arg(&table)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).starts_with("error: line 1 of"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn table_without_filters() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", "a\t1\nb\t2\n", &["--bloom-bits", "0"]);
    leveltable()
        .arg("audit")
        .arg(&table)
        .assert()
        .success()
        .stdout(predicates::str::contains("filters: none"));
}
