//! Every error the commands report, and hostile input: exit code 2, a message starting
//! `error:`, never a panic, and never a file (or a temporary file) left at a build's output.

use crate::common;

use std::path::Path;

use common::*;
use predicates::prelude::*;

/// Runs `build OUT` in a fresh directory with `input` on stdin and `args`, asserts it fails
/// with exactly `message` and leaves the directory empty.
fn build_fails(input: &[u8], args: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&out)
        .args(args)
        .write_stdin(input)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!("error: {message}\n"));
    assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{message}");
}

#[test]
fn malformed_lines_name_their_line_number() {
    build_fails(
        b"a\t1\nb 2\n",
        &[],
        "line 2: expected KEY<TAB>VALUE, found no tab",
    );
    build_fails(
        b"a\t1\n\nb\t2\n",
        &[],
        "line 2: expected KEY<TAB>VALUE, found no tab",
    );
    build_fails(
        b"a\t1\tx\n",
        &[],
        "line 1: more than one tab; in text mode neither the key nor the value may hold a tab \
         (use --hex)",
    );
}

#[test]
fn bad_hex_names_the_field_and_line() {
    build_fails(
        b"00\t00\n0g\t00\n",
        &["--hex"],
        "line 2: the key is not hex: \"g\" at position 2",
    );
    build_fails(
        b"00\t00\n01\t0\n",
        &["--hex"],
        "line 2: the value has an odd number of hex digits (1)",
    );
    build_fails(
        b"00\t00\n01\tabc\n",
        &["--hex"],
        "line 2: the value has an odd number of hex digits (3)",
    );
    build_fails(
        b"6b 6b\t00\n",
        &["--hex"],
        "line 1: the key is not hex: \" \" at position 3",
    );
}

#[test]
fn keys_out_of_order_or_repeated_name_both_lines_and_keys() {
    build_fails(
        b"a\t1\nc\t2\nb\t3\n",
        &[],
        "line 3: key \"b\" is out of order: it sorts before the key \"c\" on line 2 (keys must \
         be strictly increasing; --sort sorts them)",
    );
    build_fails(
        b"a\t1\nb\t2\nb\t3\n",
        &[],
        "line 3: duplicate key \"b\" (also on line 2)",
    );
    build_fails(
        b"01\t\n00\t\n",
        &["--hex"],
        "line 2: key 00 is out of order: it sorts before the key 01 on line 1 (keys must be \
         strictly increasing; --sort sorts them)",
    );
    build_fails(
        b"c\t1\na\t2\nb\t3\na\t4\n",
        &["--sort"],
        "duplicate key \"a\" on lines 2 and 4",
    );
}

#[test]
fn existing_output_is_kept_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    std::fs::write(&out, b"precious").unwrap();
    leveltable()
        .arg("build")
        .arg(&out)
        .write_stdin("a\t1\n")
        .assert()
        .code(2)
        .stderr(format!(
            "error: {} already exists (use --force to replace it)\n",
            out.display()
        ));
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    // A failed forced build keeps the old file too.
    leveltable()
        .arg("build")
        .arg(&out)
        .arg("--force")
        .write_stdin("b\t1\na\t2\n")
        .assert()
        .code(2);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    assert_eq!(files_in(dir.path()), ["t.ldb"]);
}

#[test]
fn unusable_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    leveltable()
        .arg("build")
        .arg(d)
        .write_stdin("a\t1\n")
        .assert()
        .code(2)
        .stderr(format!(
            "error: {} is a directory; give the path of the table file to write\n",
            d.display()
        ));
    let nowhere = d.join("missing").join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&nowhere)
        .write_stdin("a\t1\n")
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(format!(
            "error: cannot write {}: ",
            nowhere.display()
        )));
    let out = d.join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&out)
        .arg(d.join("absent.tsv"))
        .assert()
        .code(2)
        .stderr(format!(
            "error: cannot open {}: no such file or directory\n",
            d.join("absent.tsv").display()
        ));
    leveltable()
        .arg("build")
        .arg(&out)
        .arg(d)
        .assert()
        .code(2)
        .stderr(format!(
            "error: {} is a directory, not an input file\n",
            d.display()
        ));
    assert_eq!(files_in(d), Vec::<String>::new());
}

#[test]
fn bad_options_are_usage_errors() {
    for args in [
        &["--restart-interval", "0"][..],
        &["--compression", "lz4"],
        &["--bloom-bits", "65"],
        &["--bloom-bits", "-1"],
        &["--block-size", "big"],
        &["--extra-bits", "10"],
        &["--extra-filter", "cuckoo"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        leveltable()
            .arg("build")
            .arg(dir.path().join("t.ldb"))
            .args(args)
            .write_stdin("a\t1\n")
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("error:"));
        assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{args:?}");
    }
}

#[test]
fn binary_garbage_input_is_refused() {
    // Noise split at its newlines: lines without a tab, or with several, come early.
    let garbage = noise(7, 100_000);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ldb");
    leveltable()
        .arg("build")
        .arg(&out)
        .write_stdin(garbage.clone())
        .assert()
        .code(2)
        .stderr(predicate::str::is_match(r"^error: line \d+: ").unwrap());
    leveltable()
        .arg("build")
        .arg(&out)
        .arg("--hex")
        .write_stdin(garbage)
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with("error: line 1: "));
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

#[test]
fn huge_lines_are_refused_or_held_to_the_limit() {
    // An 8 MiB line without a tab.
    let mut huge = vec![b'k'; 8 << 20];
    huge.push(b'\n');
    build_fails(&huge, &[], "line 1: expected KEY<TAB>VALUE, found no tab");
    // Over the limit: refused without reading the line whole.
    let mut long = b"a\t1\n".to_vec();
    long.extend(std::iter::repeat_n(b'v', 5000));
    build_fails(
        &long,
        &["--max-line", "4096"],
        "line 2 is longer than 4096 bytes (raise the limit with --max-line)",
    );
    // A big value within the limit is fine.
    let dir = tempfile::tempdir().unwrap();
    let mut big = b"k\t".to_vec();
    big.extend(std::iter::repeat_n(b'v', 3 << 20));
    let table = build(dir.path(), "t.ldb", std::str::from_utf8(&big).unwrap(), &[]);
    let out = leveltable()
        .arg("get")
        .arg(&table)
        .arg("k")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), big.len() + 1);
}

/// Files that are not tables, each with the message every reading command must give.
fn not_tables(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut cases = Vec::new();
    let missing = dir.join("missing.ldb");
    cases.push((
        missing.clone(),
        format!(
            "cannot open {}: no such file or directory",
            missing.display()
        ),
    ));
    cases.push((
        dir.to_owned(),
        format!("{} is a directory, not a table file", dir.display()),
    ));
    let empty = dir.join("empty.ldb");
    std::fs::write(&empty, b"").unwrap();
    cases.push((
        empty.clone(),
        format!("{} is empty, not an sstable", empty.display()),
    ));
    let short = dir.join("short.ldb");
    std::fs::write(&short, b"tiny").unwrap();
    cases.push((
        short.clone(),
        format!(
            "not an sstable: {} is 4 bytes, shorter than a table footer (48 bytes)",
            short.display()
        ),
    ));
    let garbage = dir.join("garbage.ldb");
    std::fs::write(&garbage, noise(1, 10_000)).unwrap();
    cases.push((garbage, "not an sstable (bad magic number)".to_owned()));
    let text = dir.join("text.tsv");
    std::fs::write(&text, sorted_tsv(100)).unwrap();
    cases.push((text.clone(), "not an sstable (bad magic number)".to_owned()));
    // A path through a regular file cannot be opened (ENOTDIR), even by root.
    let through = text.join("t.ldb");
    cases.push((
        through.clone(),
        format!("cannot open {}: not a directory", through.display()),
    ));
    cases
}

#[test]
fn reading_commands_refuse_files_that_are_not_tables() {
    let dir = tempfile::tempdir().unwrap();
    for (path, message) in not_tables(dir.path()) {
        for command in [
            &["get", "k"][..],
            &["dump"],
            &["dump", "--hex"],
            &["verify"],
            &["stats"],
            &["stats", "--json"],
        ] {
            let mut cmd = leveltable();
            cmd.arg(command[0]).arg(&path).args(&command[1..]);
            cmd.assert()
                .code(2)
                .stdout("")
                .stderr(format!("error: {message}\n"));
        }
    }
}

#[test]
fn a_garbage_table_with_the_magic_number_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.ldb");
    let mut bytes = noise(3, 5000);
    let magic = 0xdb47_7524_8b80_fb57u64.to_le_bytes();
    bytes.extend_from_slice(&magic);
    std::fs::write(&path, &bytes).unwrap();
    for command in ["get", "dump", "verify", "stats"] {
        leveltable()
            .arg(command)
            .arg(&path)
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("error: corruption: "));
    }
}

#[test]
fn verify_names_the_damaged_block() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(
        dir.path(),
        "t.ldb",
        &sorted_tsv(2000),
        &["--compression", "none"],
    );
    let stats: serde_json::Value = serde_json::from_slice(
        &leveltable()
            .arg("stats")
            .arg(&table)
            .arg("--json")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let good = std::fs::read(&table).unwrap();
    let filter_at = stats["filters"][0]["offset"].as_u64().unwrap() as usize;
    let footer_at = good.len() - 48;
    let damaged = dir.path().join("damaged.ldb");
    let cases = [
        (
            100,
            "checksum mismatch in the data block at offset 0 (".to_owned(),
        ),
        (
            filter_at + 1,
            format!(
                "checksum mismatch in the filter block filter.leveldb.BuiltinBloomFilter2 at \
                 offset {filter_at} ("
            ),
        ),
        (
            footer_at - 10,
            "checksum mismatch in the index block at offset ".to_owned(),
        ),
    ];
    for (at, expected) in cases {
        let mut bytes = good.clone();
        bytes[at] ^= 0x40;
        std::fs::write(&damaged, &bytes).unwrap();
        leveltable()
            .arg("verify")
            .arg(&damaged)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::starts_with(format!(
                "error: corruption: {expected}"
            )));
    }
}

#[test]
fn every_flipped_byte_of_a_plain_table_is_caught_without_a_panic() {
    every_flipped_byte_is_caught("none");
}

#[test]
fn every_flipped_byte_of_a_snappy_table_is_caught_without_a_panic() {
    every_flipped_byte_is_caught("snappy");
}

/// Flips each byte of a table compressed with `compression` in turn: `verify` reports
/// corruption for every block and trailer byte, and no command panics.
fn every_flipped_byte_is_caught(compression: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tsv: String = (0..40).map(|i| format!("k{i:03}\tv{i}\n")).collect();
    let table = build(
        dir.path(),
        &format!("{compression}.ldb"),
        &tsv,
        &["--block-size", "128", "--compression", compression],
    );
    let good = std::fs::read(&table).unwrap();
    let damaged = dir.path().join("damaged.ldb");
    let footer_at = good.len() - 48;
    for at in 0..good.len() {
        let mut bytes = good.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&damaged, &bytes).unwrap();
        let out = leveltable().arg("verify").arg(&damaged).output().unwrap();
        let stderr = stderr_of(&out);
        assert!(!stderr.contains("panicked"), "byte {at}: {stderr}");
        if at < footer_at {
            // Every block and trailer byte is under a checksum.
            assert_eq!(out.status.code(), Some(2), "byte {at}");
            assert!(
                stderr.starts_with("error: corruption: "),
                "byte {at}: {stderr}"
            );
        } else {
            // The footer's handles may still decode to something; its padding is not
            // checked (as in LevelDB).
            assert!(matches!(out.status.code(), Some(0 | 2)), "byte {at}");
        }
        if at % 7 == 0 {
            for command in [&["dump"][..], &["stats"], &["get", "k010", "k999"]] {
                let out = leveltable()
                    .arg(command[0])
                    .arg(&damaged)
                    .args(&command[1..])
                    .output()
                    .unwrap();
                let stderr = stderr_of(&out);
                assert!(!stderr.contains("panicked"), "byte {at}: {stderr}");
                assert!(matches!(out.status.code(), Some(0..=2)), "byte {at}");
                if out.status.code() == Some(2) {
                    assert!(stderr.starts_with("error: "), "{stderr}");
                }
            }
        }
    }
}

#[test]
fn text_mode_refuses_what_it_cannot_print() {
    let dir = tempfile::tempdir().unwrap();
    let table = build(
        dir.path(),
        "t.ldb",
        "61\t31\n6109\t32\n62\t0a\n",
        &["--hex"],
    );
    leveltable()
        .arg("dump")
        .arg(&table)
        .assert()
        .code(2)
        .stdout("a\t1\n")
        .stderr(
            "error: entry 2 (key \"a\\t\"): the key contains a tab or a newline; use --hex for \
             keys and values with tabs or newlines\n",
        );
    leveltable()
        .arg("get")
        .arg(&table)
        .arg("b")
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            "error: the value of key \"b\" contains a tab or a newline; use --hex for keys and \
             values with tabs or newlines\n",
        );
    leveltable()
        .arg("get")
        .arg(&table)
        .write_stdin("a\nb\tc\n")
        .assert()
        .code(2)
        .stdout("a\t1\n")
        .stderr(
            "error: line 2 of standard input: the key contains a tab or a newline; use --hex \
             for keys and values with tabs or newlines\n",
        );
    leveltable()
        .arg("get")
        .arg(&table)
        .arg("a\tb")
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "error: key argument 1: the key contains a tab",
        ));
    leveltable()
        .arg("get")
        .arg(&table)
        .args(["--hex", "61", "6"])
        .assert()
        .code(2)
        .stderr("error: key argument 2: the key has an odd number of hex digits (1)\n");
}
