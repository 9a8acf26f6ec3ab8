//! The commands read only regular files, bounded: a FIFO where a table or a database file
//! should be is an error naming it, at once (each command is killed and the test fails
//! after 10 s); a remote CURRENT whose server claims a terabyte is an error naming the
//! object, not an abort.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use common::*;

const PROMPTLY: Duration = Duration::from_secs(10);

/// A database of 100 entries in one table, 000002.ldb.
fn database(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("db");
    leveltable()
        .args(["db", "build"])
        .arg(&dir)
        .write_stdin(sorted_tsv(100))
        .assert()
        .success();
    assert!(dir.join("000002.ldb").is_file());
    dir
}

/// Runs `leveltable ARGS`, which must fail within 10 s with exit code 2 and a message
/// containing each of `wanted`.
fn fails_naming(args: &[&std::ffi::OsStr], wanted: &[&str]) {
    let out = leveltable().args(args).timeout(PROMPTLY).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for w in wanted {
        assert!(err.contains(w), "{w:?} not in {err}");
    }
}

#[test]
fn a_fifo_table_fails_table_and_db_commands_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    let table = db.join("000002.ldb");
    mkfifo(&table);
    fails_naming(
        &["stats".as_ref(), table.as_os_str()],
        &["000002.ldb is a FIFO, not a regular file"],
    );
    fails_naming(
        &["db".as_ref(), "stats".as_ref(), db.as_os_str()],
        &["000002.ldb", "FIFO, not a regular file"],
    );
    fails_naming(
        &[
            "db".as_ref(),
            "get".as_ref(),
            db.as_os_str(),
            "key000042".as_ref(),
        ],
        &["000002.ldb", "FIFO, not a regular file"],
    );
}

#[test]
fn a_fifo_current_or_log_fails_db_commands_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = database(tmp.path());
    mkfifo(&db.join("000009.log"));
    fails_naming(
        &["db".as_ref(), "stats".as_ref(), db.as_os_str()],
        &["000009.log", "FIFO, not a regular file"],
    );
    // A salvage skips the log and reads the table.
    let out = leveltable()
        .args(["db", "dump", "--salvage"])
        .arg(&db)
        .timeout(PROMPTLY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 100);
    mkfifo(&db.join("CURRENT"));
    fails_naming(
        &["db".as_ref(), "stats".as_ref(), db.as_os_str()],
        &["CURRENT", "FIFO, not a regular file"],
    );
}

/// A loopback server answering every request with a claimed length of a terabyte and a
/// megabyte of body.
fn terabyte_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).is_ok_and(|n| n == 1) {
                    head.push(b[0]);
                }
                let mut answer =
                    b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nMANIFEST-000001\n"
                        .to_vec();
                answer.resize(answer.len() + (1 << 20), b'x');
                let _ = s.write_all(&answer);
            });
        }
    });
    port
}

#[test]
fn a_remote_current_claiming_a_terabyte_is_an_error_naming_it() {
    let port = terabyte_server();
    let url = format!("http://127.0.0.1:{port}/db");
    fails_naming(
        &["db".as_ref(), "stats".as_ref(), url.as_ref()],
        &[
            &format!("{url}/CURRENT is 1000000000000 bytes"),
            "corrupt CURRENT file",
        ],
    );
}

/// An input that never ends a line (`/dev/zero`) ends at the line limit, read in place or
/// not: an error naming the input and the line, and nothing written.
#[test]
fn an_endless_input_line_ends_at_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    for (max, hex) in [("100", false), ("1000000", true)] {
        let db = tmp.path().join(format!("db-{max}"));
        let mut args: Vec<&std::ffi::OsStr> = vec!["db".as_ref(), "write".as_ref()];
        if hex {
            args.push("--hex".as_ref());
        }
        args.extend::<[&std::ffi::OsStr; 5]>([
            "--create-if-missing".as_ref(),
            "--max-line".as_ref(),
            max.as_ref(),
            db.as_os_str(),
            "/dev/zero".as_ref(),
        ]);
        let long = format!("line 1 of /dev/zero is longer than {max} bytes");
        fails_naming(&args, &[long.as_str(), "nothing was written"]);
    }
}
