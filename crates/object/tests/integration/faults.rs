//! Fault runs: thousands of operations through a proxy that injects delays past the client
//! timeout, 503s, resets before the answer and mid-body, and bodies cut short, between the
//! reader and moto or nginx. Every operation returns the right answer or an error, never a
//! wrong value, within a bounded time. Objects replaced while open fail reads with
//! "replaced"; a table written through the faulty proxy either appears whole or not at all.
//!
//! `LEVELTABLE_FAULT_OPS` sets the operations per server (default 500; CI runs 1500).

use crate::common;

use std::net::SocketAddr;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::proxy::{FaultConfig, Proxy};
use common::servers::{Moto, Nginx};
use common::tables::{self, SHAPES};
use leveltable_object::{
    BlockingTable, Location, ObjectReadOptions, ObjectTableBuilder, ObjectWriter, RetryPolicy,
};
use leveltable_table::Table;

fn ops_per_server() -> u64 {
    std::env::var("LEVELTABLE_FAULT_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

/// A retry policy for the runs: quick backoff, enough attempts to ride out a 20% fault rate.
fn retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 6,
        first_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(100),
        budget: Duration::from_secs(10),
    }
}

/// The longest one operation may take: the retry budget plus one timed-out attempt and a
/// margin, times the requests a scan or batch makes in turn.
const OP_LIMIT: Duration = Duration::from_secs(40);

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Default)]
struct Totals {
    ops: AtomicU64,
    ok: AtomicU64,
    errors: AtomicU64,
}

/// Runs `n` random operations on the table at `loc` from four threads, checking every
/// answer against `local`.
fn fault_run(
    what: &str,
    loc: &Location,
    local: &Table<Vec<u8>>,
    entries: u32,
    n: u64,
) -> Arc<Totals> {
    let options = ObjectReadOptions::default()
        .read(tables::read_options(true))
        .tail_len(4096)
        .max_request(256 << 10);
    let totals = Arc::new(Totals::default());
    let table = loop {
        // Opening may itself fail under faults; it is an operation like the others.
        totals.ops.fetch_add(1, Ordering::Relaxed);
        match BlockingTable::open(loc, options.clone()) {
            Ok(t) => {
                totals.ok.fetch_add(1, Ordering::Relaxed);
                break t;
            }
            Err(e) => {
                assert!(!e.is_corruption(), "{what}: open: {e}");
                totals.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let value_len = SHAPES[1].value_len;
    std::thread::scope(|s| {
        for worker in 0..4u64 {
            let (table, totals) = (&table, &totals);
            s.spawn(move || {
                for i in 0..n / 4 {
                    let r = splitmix(worker << 32 | i);
                    let k = (r >> 8) as u32 % entries;
                    let started = Instant::now();
                    let ok = match r % 10 {
                        0..=4 => match table.get(&tables::key(k)) {
                            Ok(v) => {
                                assert_eq!(v, Some(tables::value(k, value_len)), "{what}: get {k}");
                                true
                            }
                            Err(e) => {
                                assert!(!e.is_corruption(), "{what}: {e}");
                                false
                            }
                        },
                        5 | 6 => match table.get(&tables::absent_key(k)) {
                            Ok(v) => {
                                assert_eq!(v, None, "{what}: absent {k}");
                                true
                            }
                            Err(e) => {
                                assert!(!e.is_corruption(), "{what}: {e}");
                                false
                            }
                        },
                        7 | 8 => {
                            let keys: Vec<Vec<u8>> = (0..25)
                                .map(|j| tables::key((k + j * 37) % entries))
                                .collect();
                            match table.get_many(&keys) {
                                Ok(vs) => {
                                    let want: Vec<_> =
                                        keys.iter().map(|k| local.get(k).unwrap()).collect();
                                    assert_eq!(vs, want, "{what}: batch at {k}");
                                    true
                                }
                                Err(e) => {
                                    assert!(!e.is_corruption(), "{what}: {e}");
                                    false
                                }
                            }
                        }
                        _ => {
                            let lo = tables::key(k);
                            let hi = tables::key((k + 3000).min(entries));
                            let got: Result<Vec<_>, _> = table
                                .range(Bound::Included(lo.clone()), Bound::Excluded(hi.clone()))
                                .collect();
                            match got {
                                Ok(got) => {
                                    let want: Vec<_> = (k..(k + 3000).min(entries))
                                        .map(|i| (tables::key(i), tables::value(i, value_len)))
                                        .collect();
                                    assert!(got == want, "{what}: scan from {k}");
                                    true
                                }
                                Err(e) => {
                                    assert!(!e.is_corruption(), "{what}: {e}");
                                    false
                                }
                            }
                        }
                    };
                    assert!(
                        started.elapsed() < OP_LIMIT,
                        "{what}: an operation took {:?}",
                        started.elapsed()
                    );
                    totals.ops.fetch_add(1, Ordering::Relaxed);
                    if ok {
                        totals.ok.fetch_add(1, Ordering::Relaxed);
                    } else {
                        totals.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    totals
}

fn faulty(upstream: u16, seed: u64) -> Proxy {
    let addr: SocketAddr = format!("127.0.0.1:{upstream}").parse().unwrap();
    Proxy::start(
        addr,
        FaultConfig {
            fault_ppm: 200_000,
            fault_delay: Duration::from_millis(1500),
            seed,
            ..FaultConfig::default()
        },
    )
}

fn report(what: &str, t: &Totals, proxy: &Proxy, loc: &Location, elapsed: Duration) {
    let f = proxy.counts.faults();
    let s = loc.stats().snapshot();
    println!(
        "{what}: {} operations, {} right answers, {} errors, 0 wrong; proxy saw {} requests, \
         faults injected: delay {} / 503 {} / reset before answer {} / reset mid-body {} / \
         short body {}; client retries {}; {:.1} s",
        t.ops.load(Ordering::Relaxed),
        t.ok.load(Ordering::Relaxed),
        t.errors.load(Ordering::Relaxed),
        proxy.counts.requests(),
        f[0],
        f[1],
        f[2],
        f[3],
        f[4],
        s.retries,
        elapsed.as_secs_f64()
    );
    assert!(
        f.iter().all(|&n| n > 0),
        "{what}: every kind of fault was injected"
    );
    // At a 20% fault rate and six attempts, failures are rare.
    assert!(
        t.ok.load(Ordering::Relaxed) * 100 >= t.ops.load(Ordering::Relaxed) * 97,
        "{what}: too many operations failed"
    );
}

#[test]
fn reads_through_faults_are_right_or_errors() {
    let shape = &SHAPES[1];
    let bytes = tables::build(shape);
    let local = Table::open(bytes.clone(), tables::read_options(true)).unwrap();
    let n = ops_per_server();
    if let Some(nginx) = Nginx::start() {
        nginx.put("t.ldb", &bytes);
        let proxy = faulty(nginx.port, 7);
        let loc = Location::parse_with(
            &format!("{}/t.ldb", proxy.endpoint()),
            [("timeout", "700ms"), ("connect_timeout", "700ms")],
        )
        .unwrap()
        .with_retry(retry());
        let started = Instant::now();
        let t = fault_run("nginx", &loc, &local, shape.entries, n);
        report("nginx through faults", &t, &proxy, &loc, started.elapsed());
    }
    if let Some(moto) = Moto::start() {
        let direct = moto.location("t.ldb");
        let mut w = ObjectWriter::new(&direct);
        std::io::Write::write_all(&mut w, &bytes).unwrap();
        w.finish().unwrap();
        let proxy = faulty(moto.port, 11);
        let mut options = Moto::options(&proxy.endpoint());
        options.retain(|(k, _)| k != "timeout");
        options.push(("timeout".into(), "700ms".into()));
        let loc = Location::parse_with(&format!("s3://{}/t.ldb", moto.bucket), options)
            .unwrap()
            .with_retry(retry());
        let started = Instant::now();
        let t = fault_run("moto", &loc, &local, shape.entries, n);
        report("moto through faults", &t, &proxy, &loc, started.elapsed());
    }
}

#[test]
fn objects_replaced_mid_read_fail_with_replaced() {
    let Some(nginx) = Nginx::start() else { return };
    let shape = &SHAPES[1];
    let old = tables::build(shape);
    let new = tables::build(&SHAPES[2]);
    nginx.put("t.ldb", &old);
    let proxy = Proxy::start(
        format!("127.0.0.1:{}", nginx.port).parse().unwrap(),
        FaultConfig::default(),
    );
    let loc = nginx.location_via(&proxy.endpoint(), "t.ldb");
    let options = ObjectReadOptions::default()
        .read(tables::read_options(true))
        .tail_len(4096);
    let table = BlockingTable::open(&loc, options).unwrap();
    // Before the replacement every get is right; after it, each is either answered from
    // the bytes read at open (the old version, whole) or fails with "replaced".
    let (mut right, mut replaced) = (0, 0);
    for i in 0..400u32 {
        if i == 200 {
            std::thread::sleep(Duration::from_millis(1100));
            nginx.put("t.ldb", &new);
        }
        let k = (i * 97) % shape.entries;
        match table.get(&tables::key(k)) {
            Ok(v) => {
                assert_eq!(v, Some(tables::value(k, shape.value_len)), "key {k}");
                right += 1;
            }
            Err(e) => {
                assert!(e.is_replaced() && i >= 200, "{e}");
                replaced += 1;
            }
        }
    }
    println!("replaced mid-read: {right} right answers before, {replaced} replaced errors after");
    assert!(right >= 200);
    assert!(replaced >= 150, "{replaced}");
}

#[test]
fn writes_through_faults_appear_whole_or_not_at_all() {
    let Some(moto) = Moto::start() else { return };
    let proxy = faulty(moto.port, 23);
    let mut options = Moto::options(&proxy.endpoint());
    options.push(("timeout".into(), "2s".into()));
    // A table of about 11 MiB: three parts of 5 MiB.
    let shape = tables::Shape {
        name: "parts",
        entries: 100_000,
        value_len: 100,
        block_size: 4096,
        compression: leveltable_table::Compression::None,
        filter: true,
    };
    let bytes = tables::build(&shape);
    let (mut whole, mut failed) = (0, 0);
    for attempt in 0..3 {
        let name = format!("written-{attempt}.ldb");
        let loc = Location::parse_with(&format!("s3://{}/{name}", moto.bucket), options.clone())
            .unwrap()
            .with_retry(retry());
        let writer = ObjectWriter::with_part_size(&loc, 5 << 20);
        let built = ObjectTableBuilder::with_writer(writer, tables::build_options(&shape))
            .and_then(|mut b| {
                for i in 0..shape.entries {
                    b.add(&tables::key(i), &tables::value(i, shape.value_len))?;
                }
                b.finish()
            });
        // Read back directly, without faults.
        let direct = moto.location(&name);
        match built {
            Ok(_) => {
                let (object, _) = futures::executor::block_on(async {
                    tokio::runtime::Runtime::new()
                        .unwrap()
                        .block_on(leveltable_object::RemoteObject::open_tail(&direct, 1))
                })
                .unwrap();
                assert_eq!(object.size(), bytes.len() as u64);
                let t = BlockingTable::open(&direct, ObjectReadOptions::default()).unwrap();
                let all: Vec<_> = t
                    .range(Bound::Unbounded, Bound::Unbounded)
                    .collect::<Result<_, _>>()
                    .unwrap();
                assert_eq!(all.len() as u32, shape.entries);
                whole += 1;
            }
            Err(e) => {
                println!("a build failed: {e}");
                let gone = BlockingTable::open(&direct, ObjectReadOptions::default()).unwrap_err();
                assert!(
                    matches!(gone, leveltable_object::Error::NotFound { .. }),
                    "{e} then {gone}"
                );
                failed += 1;
            }
        }
    }
    println!(
        "writes through faults: {whole} whole tables, {failed} failed builds leaving no object"
    );
    assert!(whole >= 1);
}
