//! A tiny HTTP/1.1 server on a loopback port, on a thread of its own: each connection
//! carries one request, answered with the raw bytes a handler returns for it (any status,
//! any headers, a body that need not match them), then closed. It keeps every request
//! line it saw, with its `Range` header.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request: its method and target (path and query, as sent), and its `Range` header.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub range: Option<String>,
}

type Handler = dyn Fn(&Request) -> Vec<u8> + Send + Sync;

/// A running server (its thread ends with the test process).
pub struct Canned {
    pub port: u16,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Canned {
    /// Starts a server answering each request with `handler`'s bytes.
    pub fn start(handler: impl Fn(&Request) -> Vec<u8> + Send + Sync + 'static) -> Canned {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, handler): (_, Arc<Handler>) = (Arc::clone(&seen), Arc::new(handler));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, handler) = (Arc::clone(&log), Arc::clone(&handler));
                std::thread::spawn(move || serve(stream, &log, &*handler));
            }
        });
        Canned { port, seen }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests seen so far.
    pub fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut s: TcpStream, log: &Mutex<Vec<Request>>, handler: &Handler) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) if head.len() < 64 << 10 => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split(' ');
    let range = text.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("range")
            .then(|| value.trim().to_owned())
    });
    let request = Request {
        method: words.next().unwrap_or("").to_owned(),
        target: words.next().unwrap_or("").to_owned(),
        range,
    };
    log.lock().unwrap().push(request.clone());
    let _ = s.write_all(&handler(&request));
    let _ = s.flush();
}

/// A response of `status` with `headers` and `body`, the body's true length sent unless
/// `headers` name one, and the connection closed after it.
pub fn response(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A 404.
pub fn not_found() -> Vec<u8> {
    response("404 Not Found", &[], b"")
}

/// A 302 to `location`.
pub fn redirect(location: &str) -> Vec<u8> {
    response("302 Found", &[("Location", location.to_owned())], b"")
}
