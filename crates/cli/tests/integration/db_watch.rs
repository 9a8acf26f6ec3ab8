//! `leveltable db watch`: JSON lines of every operation a writer commits, in order, from a
//! snapshot or a sequence; exit 0 on SIGINT; exit 2 naming the sequences no log holds.

#![cfg(unix)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leveltable_db::{WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions};

fn watch(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_leveltable"))
        .args(["db", "watch"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `db watch DIR --from-seq 1`, asserting that it fails with status 2: its standard error.
fn failed_watch_from_seq_1(dir: &Path) -> String {
    let out = common::leveltable()
        .args(["db", "watch"])
        .arg(dir)
        .args(["--from-seq", "1"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = common::stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// Sends SIGINT to `child`.
fn interrupt(child: &Child) {
    common::send_signal(child.id(), "INT");
}

/// Reads lines from `child` until `n` have come or a minute has passed.
fn lines(reader: &mut impl BufRead, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    while lines.len() < n && Instant::now() < deadline {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        lines.push(line.trim_end().to_owned());
    }
    lines
}

fn writable(dir: &Path) -> WritableDb {
    WritableDb::open(
        dir,
        WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(128 << 10),
    )
    .unwrap()
}

#[test]
fn watch_prints_the_snapshot_then_every_write_and_ends_on_sigint() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"apple", b"red", WriteOptions::default()).unwrap();
    db.put(b"kiwi", b"green", WriteOptions::default()).unwrap();

    let mut child = watch(&dir, &["--snapshot", "--poll-ms", "2"]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert_eq!(
        lines(&mut out, 2),
        [
            r#"{"seq":2,"op":"put","key":"apple","value":"red"}"#,
            r#"{"seq":2,"op":"put","key":"kiwi","value":"green"}"#,
        ]
    );
    let mut batch = WriteBatchBuilder::default();
    batch.put(b"banana", b"yellow \"ripe\"").delete(b"apple");
    db.write(&batch, WriteOptions::default()).unwrap();
    // Enough writes to switch logs a few times, 200 at a time, each taken by the watch
    // before the next: a log lives for about 1,000 of them, so the watch finds each before
    // the writer deletes it, however slowly it is scheduled.
    let n = 2000u32;
    let mut got = lines(&mut out, 2);
    for chunk in 0..n / 200 {
        for i in chunk * 200..(chunk + 1) * 200 {
            db.put(
                format!("k{i:05}").as_bytes(),
                &[b'v'; 100],
                WriteOptions::default(),
            )
            .unwrap();
        }
        let taken = lines(&mut out, 200);
        let short = taken.len() < 200;
        got.extend(taken);
        if short {
            break;
        }
    }
    assert_eq!(
        got[0],
        r#"{"seq":3,"op":"put","key":"banana","value":"yellow \"ripe\""}"#
    );
    assert_eq!(got[1], r#"{"seq":4,"op":"del","key":"apple"}"#);
    if got.len() != 2 + n as usize {
        interrupt(&child);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        panic!("{} lines of {}; standard error: {err}", got.len(), 2 + n);
    }
    for (i, line) in got[2..].iter().enumerate() {
        assert!(
            line.starts_with(&format!(r#"{{"seq":{},"op":"put","key":"k{i:05}""#, 5 + i)),
            "{line}"
        );
    }
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "ended by SIGINT: {status:?}");
}

#[test]
fn watch_from_a_sequence_in_hex_and_a_gap_is_named() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"\x00\xff", b"\x01", WriteOptions::default())
        .unwrap();
    db.put(b"b", b"2", WriteOptions::default()).unwrap();

    let mut child = watch(&dir, &["--from-seq", "2", "--hex"]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert_eq!(
        lines(&mut out, 1),
        [r#"{"seq":2,"op":"put","key":"62","value":"32"}"#]
    );
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(0));

    // Text mode refuses what is not UTF-8, naming the key.
    assert!(failed_watch_from_seq_1(&dir).contains("is not UTF-8; use --hex"));

    // Flushed into a table: sequence 1 is in no log.
    db.compact_range(None, None).unwrap();
    drop(db);
    let message = failed_watch_from_seq_1(&dir);
    assert!(
        message.contains("sequences 1..2 are no longer in any log"),
        "{message}"
    );
    assert!(message.contains("--snapshot"), "{message}");
}

/// With a poll interval of a minute, the watch prints each write as it is committed (it
/// wakes on its inotify watch of the directory) and a SIGINT ends its wait; with
/// --poll-only it looks every --poll-ms.
#[test]
fn watch_wakes_on_the_directory_or_polls_with_poll_only() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("db");
    let db = writable(&dir);
    db.put(b"a", b"1", WriteOptions::default()).unwrap();
    let mut sequence = 1;
    for args in [
        &["--poll-ms", "60000"][..],
        &["--poll-ms", "2", "--poll-only"],
    ] {
        let mut child = watch(&dir, &[&["--snapshot"][..], args].concat());
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let keys = sequence as usize;
        assert_eq!(lines(&mut out, keys).len(), keys, "{args:?}: the snapshot");
        for i in 0..5 {
            sequence += 1;
            db.put(format!("k{i}").as_bytes(), b"v", WriteOptions::default())
                .unwrap();
            assert_eq!(
                lines(&mut out, 1),
                [format!(
                    r#"{{"seq":{sequence},"op":"put","key":"k{i}","value":"v"}}"#
                )],
                "{args:?}"
            );
        }
        interrupt(&child);
        assert_eq!(child.wait().unwrap().code(), Some(0), "{args:?}");
    }
}
