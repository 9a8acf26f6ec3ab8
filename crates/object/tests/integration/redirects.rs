//! Redirects: followed within the origin (scheme, host, port) a request was sent to, at
//! most `MAX_REDIRECTS` times; one to another origin is refused with an error naming both,
//! and the other origin sees no request. For `http://` and `s3://` locations alike, served
//! by loopback servers in the test.

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::canned::{Canned, not_found, redirect, response};
use leveltable_db::storage::Storage;
use leveltable_object::{Location, MAX_REDIRECTS, PrefixStorage};

/// Runs `f` on a thread and fails unless it returns within 10 s.
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("returned within 10 s")
}

/// Reads `CURRENT` under `location` (built on the reading thread, as the CLI does).
fn read_current(location: impl FnOnce() -> Location + Send + 'static) -> std::io::Result<Vec<u8>> {
    promptly(move || PrefixStorage::new(&location()).read_bounded("CURRENT", 4096))
}

/// A server holding `/db/CURRENT`.
fn target() -> Canned {
    Canned::start(|r| match r.target.as_str() {
        "/db/CURRENT" => response("200 OK", &[], b"MANIFEST-000001\n"),
        _ => not_found(),
    })
}

#[test]
fn a_redirect_to_another_origin_is_refused() {
    let other = target();
    let to = format!("{}/db/CURRENT", other.origin());
    let first = Canned::start(move |_| redirect(&to));
    let url = format!("{}/db", first.origin());
    let e = read_current(move || Location::parse(&url).unwrap()).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(&format!(
            "refused a redirect from {} to another origin, {}",
            first.origin(),
            other.origin()
        )),
        "{m}"
    );
    assert!(m.contains("/db/CURRENT"), "{m}");
    assert!(other.requests().is_empty(), "{:?}", other.requests());
    // Final: not retried.
    assert_eq!(first.requests().len(), 1);
}

#[test]
fn a_redirect_within_the_origin_is_followed() {
    let server = Canned::start(|r| match r.target.as_str() {
        "/moved/CURRENT" => redirect("/db/CURRENT"),
        "/db/CURRENT" => response("200 OK", &[], b"MANIFEST-000001\n"),
        _ => not_found(),
    });
    let url = format!("{}/moved", server.origin());
    let read = read_current(move || Location::parse(&url).unwrap()).unwrap();
    assert_eq!(read, b"MANIFEST-000001\n");
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets, ["/moved/CURRENT", "/db/CURRENT"]);
}

#[test]
fn redirects_are_followed_a_few_times_only() {
    // /r/N redirects to /r/N+1 forever.
    let server = Canned::start(|r| {
        let n: u32 = r
            .target
            .rsplit('/')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        redirect(&format!("/r/{}", n + 1))
    });
    let url = format!("{}/r", server.origin());
    let e = read_current(move || Location::parse(&url).unwrap()).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(&format!("more than {MAX_REDIRECTS} redirects")),
        "{m}"
    );
    assert_eq!(server.requests().len(), MAX_REDIRECTS + 1);
}

#[test]
fn an_s3_redirect_to_another_origin_is_refused() {
    let other = target();
    let to = format!("{}/db/CURRENT", other.origin());
    let endpoint = Canned::start(move |_| redirect(&to));
    let origin = endpoint.origin();
    let e = read_current(move || {
        Location::parse_with(
            "s3://bucket/db",
            [
                ("aws_endpoint", origin.as_str()),
                ("aws_allow_http", "true"),
                ("aws_access_key_id", "test"),
                ("aws_secret_access_key", "test"),
                ("aws_region", "us-east-1"),
                ("aws_skip_signature", "false"),
            ],
        )
        .unwrap()
    })
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(&format!(
            "refused a redirect from {} to another origin, {}",
            endpoint.origin(),
            other.origin()
        )),
        "{m}"
    );
    assert!(other.requests().is_empty(), "{:?}", other.requests());
    assert_eq!(endpoint.requests()[0].target, "/bucket/db/CURRENT");
}

/// Listing a prefix (a WebDAV PROPFIND on an HTTP server) refuses the redirect as reads do,
/// without retrying it.
#[test]
fn a_listing_redirected_to_another_origin_is_refused() {
    let other = target();
    let to = format!("{}/db/", other.origin());
    let first = Canned::start(move |_| redirect(&to));
    let url = format!("{}/db", first.origin());
    let e =
        promptly(move || PrefixStorage::new(&Location::parse(&url).unwrap()).list()).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(&format!(
            "refused a redirect from {} to another origin, {}",
            first.origin(),
            other.origin()
        )),
        "{m}"
    );
    assert!(other.requests().is_empty(), "{:?}", other.requests());
    assert_eq!(first.requests().len(), 1);
}
