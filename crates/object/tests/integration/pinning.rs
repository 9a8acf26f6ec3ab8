//! An object is pinned at open, and a read of another version fails instead of mixing the
//! two: here, on a server that sends neither an ETag nor a version, which leaves the
//! object's size and its Last-Modified time to tell versions apart.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use leveltable_object::{Location, RemoteObject};

use crate::common::canned::{Canned, Request, not_found, response};

const SIZE: usize = 10_000;

/// A 206 for the request's range of one version of the object, `bytes` (`bytes=a-b` or
/// `bytes=-n`), with `modified` as its Last-Modified and no ETag.
fn ranged(r: &Request, bytes: &[u8], modified: &str) -> Vec<u8> {
    let total = bytes.len();
    let spec = r.range.as_deref().and_then(|v| v.strip_prefix("bytes="));
    let (start, end) = match spec.and_then(|s| s.split_once('-')) {
        Some(("", n)) => (total - n.parse::<usize>().unwrap().min(total), total),
        Some((a, b)) => (a.parse().unwrap(), b.parse::<usize>().unwrap() + 1),
        None => (0, total),
    };
    response(
        "206 Partial Content",
        &[
            (
                "Content-Range",
                format!("bytes {start}-{}/{total}", end - 1),
            ),
            ("Last-Modified", modified.to_owned()),
        ],
        &bytes[start..end],
    )
}

#[test]
fn a_same_size_replacement_without_etag_fails_reads() {
    let replaced = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&replaced);
    let server = Canned::start(move |r| match r.target.as_str() {
        "/t.ldb" if !flag.load(Ordering::SeqCst) => {
            ranged(r, &[b'a'; SIZE], "Wed, 02 Dec 2026 12:00:00 GMT")
        }
        "/t.ldb" => ranged(r, &[b'b'; SIZE], "Wed, 02 Dec 2026 12:00:07 GMT"),
        _ => not_found(),
    });
    let location = Location::parse(&format!("{}/t.ldb", server.origin())).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (object, tail) = runtime
        .block_on(RemoteObject::open_tail(&location, 100))
        .unwrap();
    assert_eq!(object.size(), SIZE as u64);
    assert_eq!(object.e_tag(), None);
    assert_eq!(&tail[..], &[b'a'; 100][..]);
    // The same version reads.
    let first = runtime.block_on(object.read(0..1000)).unwrap();
    assert_eq!(&first[..], &[b'a'; 1000][..]);
    // Another version of the same size does not.
    replaced.store(true, Ordering::SeqCst);
    let e = runtime.block_on(object.read(1000..2000)).unwrap_err();
    assert!(e.is_replaced(), "{e}");
    assert!(e.to_string().contains("replaced"), "{e}");
}
