//! Headless Chromium writes Local Storage while a follower and a refreshed read-only handle
//! follow its LevelDB directory: the feed has every change the page made, each round's
//! after the round before (the browser commits a round's changes ordered by key), and after
//! each refresh the handle's view is the database as the feed says it was at the view's
//! sequence (a prefix of the browser's history).
//!
//! The page writes in rounds, each started by a request to the test's HTTP server, which
//! answers once the feed holds the round before: the browser is paced by the follower.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use leveltable_db::{ChangeOp, Db, DbOptions, FollowEvent, Follower};

const ROUNDS: usize = 3;
const ITEMS: usize = 10;

/// Whether headless Chromium can run here; without it, the test is skipped with one line
/// (or fails, with `LEVELTABLE_REQUIRE_SERVERS=1`, as CI runs it).
fn chromium_runs() -> bool {
    let runs = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if runs {
        return true;
    }
    if std::env::var("LEVELTABLE_REQUIRE_SERVERS").as_deref() == Ok("1") {
        panic!("chromium cannot run, and LEVELTABLE_REQUIRE_SERVERS=1");
    }
    println!("skipped: chromium is not installed");
    false
}

/// The page of round `round`, served from its own origin (a port of its own): Chromium
/// commits an origin's changes 5 s after the first and then spaces its commits out to a
/// minute, so each round writes to a new origin and commits once. It waits for the server's
/// go, sets its items, then goes on to the next round's page.
fn page(round: usize, next_port: Option<u16>) -> String {
    let next = next_port.map_or(String::new(), |p| {
        format!("location.href = \"http://127.0.0.1:{p}/\";")
    });
    format!(
        r#"<!doctype html><script>
(async () => {{
  localStorage.setItem("ready", "1");
  if ((await (await fetch("/round?{round}")).text()) !== "go") return;
  for (let i = 0; i < {ITEMS}; i++) localStorage.setItem("r{round}i" + i, "value {round} " + i);
  {next}
}})();
</script>"#
    )
}

/// The changes the page makes in `round`, as (item key, value).
fn round_changes(round: usize) -> Vec<(String, Option<String>)> {
    (0..ITEMS)
        .map(|i| (format!("r{round}i{i}"), Some(format!("value {round} {i}"))))
        .collect()
}

/// An item's key in one of the pages' origins: `_` origin NUL 0x01 then the Latin-1 key.
fn item(ports: &[u16], key: &[u8]) -> Option<String> {
    ports.iter().find_map(|port| {
        let prefix = format!("_http://127.0.0.1:{port}\0\x01");
        let rest = key.strip_prefix(prefix.as_bytes())?;
        Some(String::from_utf8(rest.to_vec()).unwrap())
    })
}

/// A Latin-1 value (0x01 then its bytes).
fn text(value: &[u8]) -> String {
    assert_eq!(value.first(), Some(&1), "a UTF-16 value");
    String::from_utf8(value[1..].to_vec()).unwrap()
}

/// Serves round `round`'s page and answers `/round?N` once `rounds` allows it (`go`), or
/// `stop`.
fn serve(listener: TcpListener, round: usize, next_port: Option<u16>, rounds: Rounds) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let mut request = String::new();
        if BufReader::new(&stream).read_line(&mut request).is_err() {
            continue;
        }
        let (body, kind) = if request.starts_with("GET /round") {
            let go = rounds.lock().unwrap().recv().unwrap_or(false);
            (if go { "go" } else { "stop" }.to_string(), "text/plain")
        } else if request.starts_with("GET / ") {
            (page(round, next_port), "text/html")
        } else {
            (String::new(), "text/plain")
        };
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

type Rounds = Arc<Mutex<mpsc::Receiver<bool>>>;

/// A database's entries.
type Entries = BTreeMap<Vec<u8>, Vec<u8>>;

fn wait_for(path: &Path, browser: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while !path.exists() {
        assert!(browser.try_wait().unwrap().is_none(), "chromium exited");
        assert!(Instant::now() < deadline, "chromium made no {path:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_follower_of_chromium_local_storage_sees_every_change_in_order() {
    if !chromium_runs() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let listeners: Vec<TcpListener> = (0..ROUNDS)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let (go, rounds) = mpsc::channel();
    let rounds: Rounds = Arc::new(Mutex::new(rounds));
    for (round, listener) in listeners.into_iter().enumerate() {
        let (next, rounds) = (ports.get(round + 1).copied(), Arc::clone(&rounds));
        std::thread::spawn(move || serve(listener, round, next, rounds));
    }
    let user = work.path().join("user");
    let mut browser = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", user.display()))
        .arg(format!("http://127.0.0.1:{}/", ports[0]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = user.join("Default/Local Storage/leveldb");
    wait_for(&dir.join("CURRENT"), &mut browser);

    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        follow(&dir, &ports, &go);
    }));
    let _ = go.send(false);
    let _ = browser.kill();
    let _ = browser.wait();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn follow(dir: &Path, ports: &[u16], go: &mpsc::Sender<bool>) {
    let mut reader = Db::open(dir, DbOptions::default()).unwrap();
    // The database as the feed has it: the open's view, then each batch applied.
    let mut state: Entries = reader.iter().map(|e| e.unwrap()).collect();
    let mut states = vec![(reader.snapshot(), state.clone())];
    let mut follower: Follower = reader.follow(None);
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    let mut expected: Vec<(String, Option<String>)> = Vec::new();
    let mut views: Vec<(u64, Entries)> = Vec::new();
    let mut checked = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    for round in 0..ROUNDS {
        expected.extend(round_changes(round));
        go.send(true).unwrap();
        while seen.len() < expected.len() {
            assert!(Instant::now() < deadline, "the feed holds {seen:?}");
            let Some(event) = follower
                .next_event_timeout(Duration::from_millis(200))
                .unwrap()
            else {
                continue;
            };
            let FollowEvent::Batch(change) = event else {
                panic!("a gap: {event:?}");
            };
            for op in &change.ops {
                match op {
                    ChangeOp::Put { key, value } => {
                        if let Some(name) = item(ports, key)
                            && name != "ready"
                        {
                            seen.push((name, Some(text(value))));
                        }
                        state.insert(key.clone(), value.clone());
                    }
                    ChangeOp::Delete { key } => {
                        if let Some(name) = item(ports, key) {
                            seen.push((name, None));
                        }
                        state.remove(key);
                    }
                }
            }
            let last = change.sequence + change.ops.len() as u64 - 1;
            states.push((last, state.clone()));
            // A refreshed view is the feed's state at the view's sequence (checked once the
            // feed has reached it).
            reader.refresh().unwrap();
            let view: Entries = reader.iter().map(|e| e.unwrap()).collect();
            views.push((reader.snapshot(), view));
            views.retain(|(at, view)| {
                if *at > last {
                    return true;
                }
                let Some((_, then)) = states.iter().rev().find(|(s, _)| s <= at) else {
                    panic!("a view at {at}, before the open's");
                };
                assert!(
                    then == view,
                    "the view at sequence {at} is not the feed's state there"
                );
                checked += 1;
                false
            });
        }
        // A commit batch holds a round's changes by key, not in the page's order.
        let mut got = seen.clone();
        got.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(got, want, "round {round}");
        expected = seen.clone();
    }
    assert!(checked > 0, "no refreshed view was checked");
}
