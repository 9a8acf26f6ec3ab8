//! `leveltable db export`: JSON lines, CSV and Arrow IPC streams of the live entries.

use crate::common;

use std::path::Path;

use arrow_array::{Array, BinaryArray};
use arrow_ipc::reader::StreamReader;
use common::*;

/// `leveltable db export DIR ARGS...`: its output.
fn export(dir: &Path, args: &[&str]) -> std::process::Output {
    db_output("export", dir, args)
}

#[test]
fn jsonl_and_csv_hold_every_entry_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_build(&db, "a\tplain\nb\tcomma, \"quoted\"\nc\tüñí\n", &[]);
    let out = export(&db, &["--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "{\"key\":\"a\",\"value\":\"plain\"}\n\
         {\"key\":\"b\",\"value\":\"comma, \\\"quoted\\\"\"}\n\
         {\"key\":\"c\",\"value\":\"üñí\"}\n"
    );
    let out = export(&db, &["--format", "csv"]);
    assert_eq!(
        stdout_of(&out),
        "key,value\na,plain\nb,\"comma, \"\"quoted\"\"\"\nc,üñí\n"
    );
    let out = export(&db, &["--format", "csv", "--hex"]);
    assert_eq!(
        stdout_of(&out),
        "key,value\n61,706c61696e\n62,636f6d6d612c202271756f74656422\n63,c3bcc3b1c3ad\n"
    );
}

#[test]
fn bytes_that_are_not_utf8_ask_for_hex() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    db_build(&db, "6b\tff00\n", &["--hex"]);
    let out = export(&db, &["--format", "jsonl"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("the value is not UTF-8 text; --hex"),
        "{}",
        stderr_of(&out)
    );
    let out = export(&db, &["--format", "jsonl", "--hex"]);
    assert_eq!(stdout_of(&out), "{\"key\":\"6b\",\"value\":\"ff00\"}\n");
    let out = export(&db, &["--format", "arrow", "--hex"]);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("--hex is for --format jsonl and csv"));
}

#[test]
fn arrow_stream_holds_the_bytes_in_key_order() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let tsv = sorted_tsv(150_000);
    db_build(&db, &tsv, &[]);
    let out = export(&db, &["--format", "arrow"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let reader = StreamReader::try_new(out.stdout.as_slice(), None).unwrap();
    let mut got = Vec::new();
    let mut batches = 0;
    for batch in reader {
        let batch = batch.unwrap();
        batches += 1;
        let keys = batch
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        let values = batch
            .column(1)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        assert_eq!(keys.null_count(), 0);
        for i in 0..batch.num_rows() {
            got.push(format!(
                "{}\t{}\n",
                String::from_utf8(keys.value(i).to_vec()).unwrap(),
                String::from_utf8(values.value(i).to_vec()).unwrap()
            ));
        }
    }
    assert!(batches >= 3, "{batches} batches");
    assert_eq!(got.concat(), tsv);
}
