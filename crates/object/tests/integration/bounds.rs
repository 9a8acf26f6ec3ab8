//! Reads of a database under an HTTP prefix are bounded by what the database reads whole
//! (4 KiB for CURRENT, 2 GiB for a MANIFEST or log), checked against the size the server
//! claims before any body is read: a server claiming a terabyte is an error naming the
//! object, not an allocation of a terabyte. Served by a loopback server in the test.

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::canned::{Canned, not_found, response};
use leveltable_db::DbOptions;
use leveltable_db::storage::Storage;
use leveltable_object::{Location, PrefixStorage, RetryPolicy, open_db};

/// Runs `f` on a thread and fails unless it returns within 10 s.
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("returned within 10 s")
}

/// A claimed length of a terabyte, with `body` and then a megabyte of it (so that the
/// body arrives in several pieces, the second of which a reader sizing its buffer by the
/// claim would allocate a terabyte for).
fn terabyte(body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    body.resize(body.len() + (1 << 20), b'x');
    response(
        "200 OK",
        &[("Content-Length", "1000000000000".to_owned())],
        &body,
    )
}

fn open_error(server: &Canned) -> String {
    let url = format!("{}/db", server.origin());
    promptly(move || {
        let location = Location::parse(&url).unwrap();
        open_db(&location, DbOptions::default()).map(|_| ())
    })
    .unwrap_err()
    .to_string()
}

#[test]
fn a_current_claiming_a_terabyte_is_refused_unread() {
    let server = Canned::start(|r| match r.target.as_str() {
        "/db/CURRENT" => terabyte(b"MANIFEST-000001\n"),
        _ => not_found(),
    });
    let m = open_error(&server);
    let object = format!("{}/db/CURRENT", server.origin());
    assert!(m.contains(&object), "{m}");
    assert!(m.contains("corrupt CURRENT file"), "{m}");
    assert!(m.contains("1000000000000 bytes"), "{m}");
    assert!(m.contains("4096"), "{m}");
    // Refused at once, not retried.
    assert_eq!(server.requests().len(), 1, "{:?}", server.requests());
}

#[test]
fn a_manifest_claiming_a_terabyte_is_refused_unread() {
    let server = Canned::start(|r| match r.target.as_str() {
        "/db/CURRENT" => response("200 OK", &[], b"MANIFEST-000001\n"),
        "/db/MANIFEST-000001" => terabyte(b"abc"),
        _ => not_found(),
    });
    let m = open_error(&server);
    let object = format!("{}/db/MANIFEST-000001", server.origin());
    assert!(m.contains(&object), "{m}");
    assert!(m.contains("1000000000000 bytes"), "{m}");
    assert!(m.contains(&(2u64 << 30).to_string()), "{m}");
}

/// A body shorter than its claim is retried, then an error naming the object; the buffer
/// only ever held what arrived.
#[test]
fn a_short_body_is_an_error() {
    let server = Canned::start(|r| match r.target.as_str() {
        "/db/CURRENT" => response(
            "200 OK",
            &[("Content-Length", "3000".to_owned())],
            b"MANIFEST-000001\n",
        ),
        _ => not_found(),
    });
    let url = format!("{}/db", server.origin());
    let e = promptly(move || {
        let retry = RetryPolicy {
            max_attempts: 2,
            ..RetryPolicy::default()
        };
        let location = Location::parse(&url).unwrap().with_retry(retry);
        PrefixStorage::new(&location).read_bounded("CURRENT", 4096)
    })
    .unwrap_err();
    let m = e.to_string();
    assert!(m.contains("/db/CURRENT"), "{m}");
    assert!(m.contains("after 2 attempt(s)"), "{m}");
    assert_eq!(server.requests().len(), 2);
}

/// Within its bound, an object is read whole; a bound below its size refuses it.
#[test]
fn bounded_reads_take_what_fits() {
    let server = Canned::start(|r| match r.target.as_str() {
        "/db/CURRENT" => response("200 OK", &[], b"MANIFEST-000001\n"),
        _ => not_found(),
    });
    let url = format!("{}/db", server.origin());
    let (fits, refused, missing) = promptly(move || {
        let storage = PrefixStorage::new(&Location::parse(&url).unwrap());
        (
            storage.read_bounded("CURRENT", 16),
            storage.read_bounded("CURRENT", 15),
            storage.read_bounded("nope", 15),
        )
    });
    assert_eq!(fits.unwrap(), b"MANIFEST-000001\n");
    let refused = refused.unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::FileTooLarge,
        "{refused}"
    );
    assert_eq!(missing.unwrap_err().kind(), std::io::ErrorKind::NotFound);
}

/// Under a `file://` prefix too, only regular files are read: a FIFO is refused at once
/// (the local store's own open would wait for a writer forever).
#[test]
fn a_fifo_under_a_file_prefix_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["CURRENT", "t.ldb"] {
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join(name))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let url = format!("file://{}", dir.path().display());
    let (db, table) = promptly(move || {
        let location = Location::parse(&url).unwrap();
        let db = open_db(&location, DbOptions::default()).map(|_| ());
        let table = leveltable_object::ObjectReadAt::open(&location.child("t.ldb")).map(|_| ());
        (db, table)
    });
    let m = db.unwrap_err().to_string();
    assert!(
        m.contains("/CURRENT") && m.contains("a FIFO, not a regular file"),
        "{m}"
    );
    let m = table.unwrap_err().to_string();
    assert!(
        m.contains("/t.ldb") && m.contains("a FIFO, not a regular file"),
        "{m}"
    );
}
