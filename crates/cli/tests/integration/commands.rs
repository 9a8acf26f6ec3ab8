//! Every command doing its job: output formats, options, exit codes, round trips, and
//! compatibility with tables LevelDB 1.23 wrote.

use crate::common;

use std::io::Read;
use std::process::Stdio;

use common::*;
use predicates::prelude::*;
use serde_json::Value;

/// `leveltable dump TABLE ARGS...`, asserted to succeed; check its output on the result.
fn dump(table: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    leveltable()
        .arg("dump")
        .arg(table)
        .args(args)
        .assert()
        .success()
}

/// `leveltable stats TABLE --json`, asserting success: the parsed report.
fn stats_json(table: &std::path::Path) -> Value {
    let out = leveltable()
        .arg("stats")
        .arg(table)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn build_prints_a_summary_and_reads_files_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.tsv");
    std::fs::write(&input, sorted_tsv(500)).unwrap();

    let from_file = dir.path().join("file.ldb");
    leveltable()
        .arg("build")
        .arg(&from_file)
        .arg(&input)
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::is_match(
            r"^wrote .*file\.ldb: 500 entries, \d+ data blocks, file \d+ bytes, filter \d+ bytes, \d+\.\d\d s, [\d.-]+ MB/s\n$",
        ).unwrap());

    let from_dash = dir.path().join("dash.ldb");
    leveltable()
        .arg("build")
        .arg(&from_dash)
        .arg("-")
        .arg("--quiet")
        .pipe_stdin(&input)
        .unwrap()
        .assert()
        .success()
        .stderr("");
    let from_stdin = build(dir.path(), "stdin.ldb", &sorted_tsv(500), &[]);

    let bytes = std::fs::read(&from_file).unwrap();
    assert_eq!(bytes, std::fs::read(&from_dash).unwrap());
    assert_eq!(bytes, std::fs::read(&from_stdin).unwrap());
    // The last line may lack its newline.
    let trimmed = sorted_tsv(500).trim_end().to_owned();
    let unterminated = build(dir.path(), "unterminated.ldb", &trimmed, &[]);
    assert_eq!(bytes, std::fs::read(unterminated).unwrap());
}

#[test]
fn get_prints_found_keys_and_reports_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &sorted_tsv(300), &[]);

    leveltable()
        .arg("get")
        .arg(&table)
        .args(["key000007", "key000119"])
        .assert()
        .code(0)
        .stdout(format!(
            "key000007\t{}\nkey000119\t{}\n",
            value(7),
            value(119)
        ))
        .stderr("");

    leveltable()
        .arg("get")
        .arg(&table)
        .args(["key000001", "nope", "key000002", "zzz"])
        .assert()
        .code(1)
        .stdout(format!(
            "key000001\t{}\nkey000002\t{}\n",
            value(1),
            value(2)
        ))
        .stderr("not found: nope\nnot found: zzz\n");

    // Keys on standard input, one per line; an empty line is the empty key.
    leveltable()
        .arg("get")
        .arg(&table)
        .write_stdin("key000299\n\nkey000000\n")
        .assert()
        .code(1)
        .stdout(format!(
            "key000299\t{}\nkey000000\t{}\n",
            value(299),
            value(0)
        ))
        .stderr("not found: \n");
}

#[test]
fn get_stats_counts_the_filter_sparing_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (tsv, keys) = mixed_tsv(20_000);
    let table = build(dir.path(), "t.ldb", &tsv, &[]);
    // 1000 present keys, then 1000 absent ones that fall inside the table's key range.
    let mut stdin: String = keys.iter().step_by(20).map(|k| format!("{k}\n")).collect();
    stdin.extend(keys.iter().step_by(20).map(|k| format!("{k}0\n")));
    let out = leveltable()
        .arg("get")
        .arg(&table)
        .arg("--stats")
        .write_stdin(stdin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_of(&out).lines().count(), 1000);
    let stderr = stderr_of(&out);
    let last = stderr.lines().last().unwrap();
    let fields: std::collections::BTreeMap<&str, &str> = last
        .split(", ")
        .map(|f| f.split_once(": ").unwrap())
        .collect();
    let number = |name: &str| -> u64 { fields[name].parse().unwrap() };
    assert_eq!(
        fields.keys().copied().collect::<Vec<_>>(),
        [
            "data blocks read",
            "filter",
            "filter checks",
            "filter negatives",
            "found",
            "gets"
        ]
    );
    assert_eq!(number("gets"), 2000, "{last}");
    assert_eq!(number("found"), 1000, "{last}");
    assert_eq!(fields["filter"], "leveldb.BuiltinBloomFilter2");
    let (blocks, checks, negatives) = (
        number("data blocks read"),
        number("filter checks"),
        number("filter negatives"),
    );
    // Only an absent key past the last key skips the filter (the index rules it out).
    assert!((1999..=2000).contains(&checks), "{last}");
    // The 10-bit filter rules out ~99% of the absent keys.
    assert!(negatives >= 970, "{last}");
    // Keys from standard input are answered in batches, each data block read once for all
    // the keys of a batch it may hold: at most one read per key the filter let through.
    assert!((1..=checks - negatives).contains(&blocks), "{last}");
    assert_eq!(stderr.matches("not found: ").count(), 1000);
}

/// Keys from standard input, looked up in batches, get the answers they get one at a time
/// as arguments, in input order: unsorted, repeated, absent, before and after every key,
/// and in hex.
#[test]
fn get_from_stdin_answers_as_arguments_do() {
    let dir = tempfile::tempdir().unwrap();
    let (tsv, keys) = mixed_tsv(5000);
    let table = build(dir.path(), "t.ldb", &tsv, &["--block-size", "256"]);
    let mut asked: Vec<String> = Vec::new();
    for i in 0..3000u64 {
        let k = &keys[(splitmix(i + 77) % 5000) as usize];
        asked.push(match i % 4 {
            0 | 1 => k.clone(),
            2 => format!("{k}0"),
            _ => k[..(i % 16) as usize].to_string(),
        });
    }
    asked.extend(["".into(), "~".into(), keys[0].clone(), keys[0].clone()]);
    let hexed: Vec<String> = asked.iter().map(hex).collect();
    for (keys, flags) in [(&asked, &[][..]), (&hexed, &["--hex"][..])] {
        let stdin: String = keys.iter().map(|k| format!("{k}\n")).collect();
        let batched = leveltable()
            .arg("get")
            .arg(&table)
            .args(flags)
            .write_stdin(stdin)
            .output()
            .unwrap();
        let single = leveltable()
            .arg("get")
            .arg(&table)
            .args(flags)
            .arg("--")
            .args(keys)
            .output()
            .unwrap();
        assert_eq!(batched.status.code(), Some(1));
        assert_eq!(single.status.code(), Some(1));
        assert_eq!(stdout_of(&batched), stdout_of(&single), "{flags:?}");
        assert_eq!(stderr_of(&batched), stderr_of(&single), "{flags:?}");
        assert!(stdout_of(&batched).lines().count() >= 1500);
    }
}

#[test]
fn dump_prints_every_entry_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = sorted_tsv(1000);
    let table = build(dir.path(), "t.ldb", &tsv, &["--block-size", "512"]);
    dump(&table, &[]).stdout(tsv.clone()).stderr("");
    let hexed: String = tsv
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            format!("{}\t{}\n", hex(k), hex(v))
        })
        .collect();
    dump(&table, &["--hex"]).stdout(hexed);
}

/// Builds from `input` with `options`, dumps, builds the dump again with the same options,
/// and checks the two files are identical.
fn round_trip(input: &[u8], options: &[&str], dump_options: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.ldb");
    let second = dir.path().join("second.ldb");
    leveltable()
        .arg("build")
        .arg(&first)
        .args(options)
        .write_stdin(input)
        .assert()
        .success();
    let dump = leveltable()
        .arg("dump")
        .arg(&first)
        .args(dump_options)
        .output()
        .unwrap();
    assert!(dump.status.success(), "{}", stderr_of(&dump));
    leveltable()
        .arg("build")
        .arg(&second)
        .args(options)
        .write_stdin(dump.stdout)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
}

#[test]
fn build_dump_build_gives_identical_files() {
    round_trip(sorted_tsv(3000).as_bytes(), &[], &[]);
    round_trip(
        sorted_tsv(3000).as_bytes(),
        &[
            "--block-size",
            "256",
            "--restart-interval",
            "3",
            "--compression",
            "none",
            "--bloom-bits",
            "0",
        ],
        &[],
    );
    round_trip(
        mixed_tsv(2000).0.as_bytes(),
        &["--extra-filter", "local-bloom", "--bloom-bits", "7"],
        &[],
    );
    // Binary keys and values, every byte value included (tabs and newlines too), in hex.
    let mut keys: Vec<Vec<u8>> = (0..2000u64)
        .map(|i| noise(i, 1 + (i % 13) as usize))
        .collect();
    keys.sort();
    keys.dedup();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
    let input: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{}\t{}\n", hex(k), hex(&noise(!(i as u64), i % 40))))
        .collect();
    round_trip(input.as_bytes(), &["--hex"], &["--hex"]);
}

#[test]
fn sort_builds_the_same_table_as_sorted_input() {
    let dir = tempfile::tempdir().unwrap();
    let sorted = sorted_tsv(700);
    let mut lines: Vec<&str> = sorted.lines().collect();
    lines.sort_by_key(|l| splitmix(l.len() as u64 ^ u64::from(l.as_bytes()[8])));
    let shuffled: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_ne!(shuffled, sorted);
    let a = build(dir.path(), "a.ldb", &sorted, &[]);
    let b = build(dir.path(), "b.ldb", &shuffled, &["--sort"]);
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn build_options_shape_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = sorted_tsv(2000);
    let default = stats_json(&build(dir.path(), "d.ldb", &tsv, &[]));
    let small = stats_json(&build(dir.path(), "s.ldb", &tsv, &["--block-size", "256"]));
    let plain = stats_json(&build(
        dir.path(),
        "p.ldb",
        &tsv,
        &["--compression", "none", "--bloom-bits", "0"],
    ));
    let sparse = stats_json(&build(
        dir.path(),
        "r.ldb",
        &tsv,
        &["--restart-interval", "1", "--compression", "none"],
    ));
    let data_blocks = |v: &Value| v["data_blocks"].as_u64().unwrap();
    assert!(data_blocks(&small) > 3 * data_blocks(&default));
    assert_eq!(plain["filter_policy"], Value::Null);
    assert_eq!(plain["filters"], serde_json::json!([]));
    assert_eq!(plain["filter_size"], 0);
    // Snappy shrinks these repetitive values; no compression does not.
    assert!(default["data_size"].as_u64() < plain["data_size"].as_u64());
    // A restart point per entry stores every key whole: more bytes than every 16 entries.
    assert!(sparse["data_size"].as_u64() > plain["data_size"].as_u64());
    assert_eq!(default["entries"], 2000);
}

#[test]
fn stats_reports_sizes_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let (tsv, _) = mixed_tsv(10_000);
    let table = build(dir.path(), "t.ldb", &tsv, &["--bloom-bits", "12"]);
    let v = stats_json(&table);
    assert_eq!(v["entries"], 10_000);
    assert_eq!(v["avg_key_size"], 16.0);
    assert_eq!(v["avg_value_size"], 17.0);
    assert_eq!(v["raw_key_bytes"], 160_000);
    assert_eq!(v["file_size"], std::fs::metadata(&table).unwrap().len());
    let parts: u64 = ["data_size", "index_size", "filter_size", "metaindex_size"]
        .iter()
        .map(|f| v[f].as_u64().unwrap())
        .sum();
    // Index, filter and metaindex sizes leave out their 5-byte trailers; the footer is 48.
    assert_eq!(parts + 3 * 5 + 48, v["file_size"].as_u64().unwrap());
    let ratio = v["compression_ratio"].as_f64().unwrap();
    let expected = 330_000.0 / v["data_size"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-9);
    assert_eq!(v["filter_policy"], "leveldb.BuiltinBloomFilter2");
    let bits = v["bits_per_key"].as_f64().unwrap();
    assert!((bits - 12.0).abs() < 0.1, "{bits}");
    let filters = v["filters"].as_array().unwrap();
    assert_eq!(filters.len(), 1);
    assert_eq!(filters[0]["probes"], 8);
    assert_eq!(filters[0]["used_by_get"], true);

    leveltable()
        .arg("stats")
        .arg(&table)
        .assert()
        .success()
        .stdout(predicate::str::contains("entries:           10000\n"))
        .stdout(predicate::str::contains(
            "filter policy:     leveldb.BuiltinBloomFilter2\n",
        ))
        .stdout(predicate::str::contains("avg key size:      16.0 bytes\n"))
        .stdout(predicate::str::is_match(r"bits per key: +12\.\d \(estimated").unwrap());
}

#[test]
fn extra_filter_is_listed_and_preferred_by_get() {
    let dir = tempfile::tempdir().unwrap();
    let (tsv, keys) = mixed_tsv(5000);
    let table = build(
        dir.path(),
        "t.ldb",
        &tsv,
        &["--extra-filter", "local-bloom", "--extra-bits", "14"],
    );
    let v = stats_json(&table);
    let filters = v["filters"].as_array().unwrap();
    let names: Vec<&str> = filters
        .iter()
        .map(|f| f["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["leveldb.BuiltinBloomFilter2", "leveltable.LocalBloom64"]
    );
    assert_eq!(filters[0]["used_by_get"], false);
    assert_eq!(filters[1]["used_by_get"], true);
    // Whole 512-bit blocks per filter of ~100 keys: the bits spent are 14 per key and up to
    // about 5 more.
    let extra_bits = filters[1]["bits_per_key"].as_f64().unwrap();
    assert!((14.0..19.0).contains(&extra_bits), "{extra_bits}");
    assert_eq!(v["filter_policy"], "leveltable.LocalBloom64");
    assert_eq!(
        v["filter_size"].as_u64().unwrap(),
        filters[0]["size"].as_u64().unwrap() + filters[1]["size"].as_u64().unwrap()
    );

    leveltable()
        .arg("get")
        .arg(&table)
        .arg(&keys[42])
        .arg("--stats")
        .assert()
        .success()
        .stdout(format!("{}\tv{}\n", keys[42], keys[42]))
        .stderr(predicate::str::ends_with(
            "filter: leveltable.LocalBloom64\n",
        ));
    leveltable().arg("verify").arg(&table).assert().success();
}

#[test]
fn verify_reports_what_it_checked() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(
        dir.path(),
        "t.ldb",
        &sorted_tsv(2000),
        &["--extra-filter", "local-bloom"],
    );
    leveltable()
        .arg("verify")
        .arg(&table)
        .assert()
        .code(0)
        .stdout(predicate::str::is_match(
            r"^ok: .*t\.ldb: 2000 entries, \d+ data blocks, 2 filter blocks, \d+ bytes checked\n$",
        ).unwrap())
        .stderr("");
}

#[test]
fn empty_input_makes_an_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", "", &[]);
    dump(&table, &[]).stdout("");
    leveltable().arg("verify").arg(&table).assert().success();
    let v = stats_json(&table);
    assert_eq!(v["entries"], 0);
    assert_eq!(v["avg_key_size"], Value::Null);
    assert_eq!(v["compression_ratio"], Value::Null);
    assert_eq!(v["bits_per_key"], Value::Null);
    leveltable()
        .arg("get")
        .arg(&table)
        .arg("k")
        .assert()
        .code(1)
        .stderr("not found: k\n");
}

#[test]
fn force_replaces_an_existing_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", "a\t1\n", &[]);
    leveltable()
        .arg("build")
        .arg(&table)
        .arg("--force")
        .write_stdin("b\t2\n")
        .assert()
        .success();
    dump(&table, &[]).stdout("b\t2\n");
    assert_eq!(files_in(dir.path()), ["t.ldb"]);
}

#[test]
fn hex_mode_takes_either_case_and_prints_lowercase() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(
        dir.path(),
        "t.ldb",
        "00\t\n0A09\tFF00\nab\t0d0A\n",
        &["--hex"],
    );
    leveltable()
        .arg("get")
        .arg(&table)
        .args(["--hex", "0a09", "AB", "00", "01"])
        .assert()
        .code(1)
        .stdout("0a09\tff00\nab\t0d0a\n00\t\n")
        .stderr("not found: 01\n");
    dump(&table, &["--hex"]).stdout("00\t\n0a09\tff00\nab\t0d0a\n");
}

#[test]
fn tables_written_by_leveldb_dump_and_rebuild_byte_for_byte() {
    let entries = std::fs::read_to_string(testdata("entries.tsv")).unwrap();
    for name in ["table_none.ldb", "table_snappy.ldb"] {
        dump(&testdata(name), &["--hex"]).stdout(entries.clone());
        leveltable()
            .arg("verify")
            .arg(testdata(name))
            .assert()
            .success();
    }
    // The options LevelDB used (testdata/golden.txt): 1 KiB blocks, 10-bit Bloom filter.
    // Without compression the bytes are LevelDB's; Snappy encoders may differ in their output.
    let dir = tempfile::tempdir().unwrap();
    let out = build(
        dir.path(),
        "none.ldb",
        &entries,
        &["--hex", "--block-size", "1024", "--compression", "none"],
    );
    let ours = std::fs::read(out).unwrap();
    let leveldb = std::fs::read(testdata("table_none.ldb")).unwrap();
    assert!(ours == leveldb, "the table differs from LevelDB's");
}

#[test]
fn dump_stops_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(dir.path(), "t.ldb", &sorted_tsv(200_000), &["--quiet"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .arg("dump")
        .arg(&table)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 4096];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr_of(&out), "");
    assert!(first.starts_with(b"key000000\tvalue-0-\n"));
}

#[test]
fn help_and_version() {
    leveltable()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("build"))
        .stdout(predicate::str::contains("stats"));
    leveltable()
        .arg("--version")
        .assert()
        .success()
        .stdout(format!("leveltable {}\n", env!("CARGO_PKG_VERSION")));
    leveltable()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Usage"));
}
