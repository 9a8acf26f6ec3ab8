//! What a URL carries to the store: a presigned URL's query goes with every request of an
//! `http(s)://` location; a user name or password is refused, pointing at the environment
//! variables the stores read credentials from, and appears in no message.

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::canned::{Canned, not_found, response};
use leveltable_db::storage::Storage;
use leveltable_object::{Location, PrefixStorage};

/// Runs `f` on a thread and fails unless it returns within 10 s.
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("returned within 10 s")
}

#[test]
fn a_presigned_query_goes_with_every_request() {
    let server = Canned::start(|r| {
        if r.target == "/db/CURRENT?X-Amz-Signature=abc&x=1" {
            response("200 OK", &[], b"MANIFEST-000001\n")
        } else {
            not_found()
        }
    });
    let url = format!("{}/db?X-Amz-Signature=abc&x=1", server.origin());
    let (read, name) = promptly(move || {
        let location = Location::parse(&url).unwrap();
        let name = location.child("CURRENT").name().to_owned();
        (PrefixStorage::new(&location).read("CURRENT"), name)
    });
    assert_eq!(read.unwrap(), b"MANIFEST-000001\n");
    // Messages still show the URL without its query.
    assert_eq!(name, format!("{}/db/CURRENT", server.origin()));
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets, ["/db/CURRENT?X-Amz-Signature=abc&x=1"]);
}

#[test]
fn credentials_in_urls_are_refused() {
    for (url, points_at) in [
        (
            "s3://AKIDEXAMPLE:s3cr3tvalue@bucket/db",
            "AWS_ACCESS_KEY_ID",
        ),
        ("s3://AKIDEXAMPLE@bucket/db", "AWS_SECRET_ACCESS_KEY"),
        ("gs://user:s3cr3tvalue@bucket/db", "GOOGLE_SERVICE_ACCOUNT"),
        (
            "az://user:s3cr3tvalue@container/db",
            "AZURE_STORAGE_ACCOUNT_KEY",
        ),
        ("http://user:s3cr3tvalue@127.0.0.1:1/db", "presigned URL"),
        (
            "https://user:s3cr3tvalue@example.com/t.ldb",
            "presigned URL",
        ),
    ] {
        let m = Location::parse(url).unwrap_err().to_string();
        assert!(
            m.contains("credentials in a URL are not used"),
            "{url}: {m}"
        );
        assert!(m.contains(points_at), "{url}: {m}");
        assert!(!m.contains("s3cr3tvalue"), "{url}: {m}");
    }
}
