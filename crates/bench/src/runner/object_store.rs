//! `object-store`: a table of 1,000,000 entries served by nginx behind the fault proxy
//! adding 10 ms to every request, read by `leveltable-object` (one tail read at open, one
//! ranged GET per get, coalesced scans and batches) and by a plain reader that issues one
//! GET per block read (the table reader over a `ReadAt` of the object). The scan's bound is
//! the larger of two times measured in the same rounds: downloading the whole object in one
//! GET, and scanning the same table from a local file (the table reader over a memory map,
//! as the `scan` workload reads it). A reader that overlaps transfer and decoding perfectly
//! reaches 1.0× that bound on any number of cores; the target is at most
//! [`SCAN_OVER_BOUND_TARGET`]. Requests and bytes are counted per operation. Needs nginx
//! (`NGINX` or on `PATH`); the section says so if not.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leveltable_object::{
    BlockingTable, Location, ObjectReadAt, ObjectReadOptions, RemoteObject, StatsSnapshot,
};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};

use super::config::{Config, Result};

#[allow(dead_code, missing_docs, clippy::all)]
#[path = "../../../object/tests/integration/common/proxy.rs"]
mod proxy;

/// The latency the proxy adds to each request.
const LATENCY: Duration = Duration::from_millis(10);

/// The remote scan's time over the larger of the one-GET download's and the local-file
/// scan's, at most.
const SCAN_OVER_BOUND_TARGET: f64 = 1.20;

/// The line stating the remote scan's ratio to its bound and whether the target is met.
fn scan_verdict(scan_ms: f64, download_ms: f64, local_ms: f64) -> String {
    let ratio = scan_ms / download_ms.max(local_ms);
    format!(
        "remote scan over the larger of the one-GET download and the local-file scan: \
         {ratio:.2}× (remote scan {scan_ms:.1} ms, download {download_ms:.1} ms, local-file \
         scan {local_ms:.1} ms); target ≤ {SCAN_OVER_BOUND_TARGET:.2}×: {}",
        if ratio <= SCAN_OVER_BOUND_TARGET {
            "met"
        } else {
            "missed"
        }
    )
}

fn key(i: u64) -> Vec<u8> {
    format!(
        "{:016}",
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 10_000_000_000_000_000 / 2 * 2
    )
    .into_bytes()
}

/// nginx serving `root` on a free loopback port; killed on drop.
struct Nginx(Child, u16);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn nginx_program() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("NGINX") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("nginx"))
        .chain([PathBuf::from("/usr/sbin/nginx")])
        .find(|p| p.is_file())
}

fn start_nginx(program: &Path, dir: &Path, root: &Path) -> Result<Nginx> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let d = dir.display();
    std::fs::create_dir_all(dir.join("tmp"))?;
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n\
           fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n\
           keepalive_requests 1000000;\n  sendfile on;\n\
           server {{\n    listen 127.0.0.1:{port};\n    root {r};\n    location / {{ }}\n  }}\n}}\n",
        r = root.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf)?;
    let child = Command::new(program)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let n = Nginx(child, port);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("nginx did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(n)
}

/// One measured operation: its time and the requests and bytes it cost, per operation.
struct Measure {
    what: String,
    ops: u64,
    ms_per_op: f64,
    stats: StatsSnapshot,
    extra: String,
}

fn measure(
    loc: &Location,
    what: &str,
    ops: u64,
    f: impl FnOnce() -> Result<String>,
) -> Result<Measure> {
    let before = loc.stats().snapshot();
    let started = Instant::now();
    let extra = f()?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(Measure {
        what: what.to_owned(),
        ops,
        ms_per_op: ms / ops as f64,
        stats: loc.stats().snapshot() - before,
        extra,
    })
}

/// Keeps `m` in `best` if it is the faster.
fn keep_best(best: &mut Option<Measure>, m: Measure) {
    if best.as_ref().is_none_or(|b| m.ms_per_op < b.ms_per_op) {
        *best = Some(m);
    }
}

/// Runs the workload and renders its section.
///
/// # Errors
/// An unavailable nginx is reported in the section, not as an error; a wrong answer is an
/// error.
pub fn run(config: &Config) -> Result<String> {
    let mut out =
        String::from("### Object storage (nginx behind a proxy adding 10 ms per request)\n\n");
    let Some(program) = nginx_program() else {
        out.push_str("not run: nginx is not installed (apt-get install nginx)\n");
        return Ok(out);
    };
    let entries: u64 = config.entries.min(1_000_000);
    let dir = tempfile::tempdir_in(&config.dir)?;
    let root = dir.path().join("www");
    std::fs::create_dir(&root)?;
    // The table: 16-byte keys, 100-byte values, snappy, Bloom filter, 4 KiB blocks.
    let mut keys: Vec<Vec<u8>> = (0..entries).map(key).collect();
    keys.sort();
    keys.dedup();
    let value = |k: &[u8]| -> Vec<u8> {
        let mut v = k.to_vec();
        v.resize(100, b'v');
        v
    };
    let options = BuildOptions::default()
        .compression(Compression::Snappy)
        .filter_policy(BloomFilterPolicy::new(10));
    let file = std::fs::File::create(root.join("t.ldb"))?;
    let mut b = TableBuilder::new(std::io::BufWriter::new(file), options)?;
    for k in &keys {
        b.add(k, &value(k))?;
    }
    b.finish()?;
    drop(b);
    let size = std::fs::metadata(root.join("t.ldb"))?.len();
    let nginx = start_nginx(&program, &dir.path().join("nginx"), &root)?;
    let upstream: SocketAddr = format!("127.0.0.1:{}", nginx.1).parse()?;
    let proxy = proxy::Proxy::start(
        upstream,
        proxy::FaultConfig {
            latency: LATENCY,
            ..proxy::FaultConfig::default()
        },
    );
    let url = format!("{}/t.ldb", proxy.endpoint());
    let read = ReadOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let loc = Location::parse_with(&url, [("timeout", "120s")])?;
    let plain_loc = Location::parse_with(&url, [("timeout", "120s")])?;
    // 200 gets per row and batches of 1,000 in a full run; a tenth of that at smoke sizes.
    let q = (config.queries / 1000).clamp(20, 200) as u64;
    let batch_len = (q as usize * 5).min(1000);
    let step = keys.len() / q as usize;
    let present: Vec<&Vec<u8>> = keys.iter().step_by(step.max(1)).take(q as usize).collect();
    let absent: Vec<Vec<u8>> = present
        .iter()
        .map(|k| [k.as_slice(), b"~"].concat())
        .collect();
    let mut ours = Vec::new();
    let mut plain = Vec::new();

    // Open.
    let mut table = None;
    ours.push(measure(&loc, "open", 1, || {
        table = Some(BlockingTable::open(
            &loc,
            ObjectReadOptions::default().read(read.clone()),
        )?);
        Ok(String::new())
    })?);
    let table = table.ok_or("no table")?;
    let mut plain_table = None;
    plain.push(measure(&plain_loc, "open", 1, || {
        let source = ObjectReadAt::open(&plain_loc)?;
        plain_table = Some(Table::open(source, read.clone())?);
        Ok(String::new())
    })?);
    let plain_table = plain_table.ok_or("no table")?;

    // Gets.
    ours.push(measure(&loc, "get present", q, || {
        for k in &present {
            if table.get(k)?.as_deref() != Some(&value(k)[..]) {
                return Err("wrong value".into());
            }
        }
        Ok(String::new())
    })?);
    plain.push(measure(&plain_loc, "get present", q, || {
        for k in &present {
            if plain_table.get(k)?.as_deref() != Some(&value(k)[..]) {
                return Err("wrong value".into());
            }
        }
        Ok(String::new())
    })?);
    ours.push(measure(&loc, "get absent", q, || {
        for k in &absent {
            if table.get(k)?.is_some() {
                return Err("absent key found".into());
            }
        }
        Ok(String::new())
    })?);
    plain.push(measure(&plain_loc, "get absent", q, || {
        for k in &absent {
            if plain_table.get(k)?.is_some() {
                return Err("absent key found".into());
            }
        }
        Ok(String::new())
    })?);

    // Batched gets: 1,000 keys from a 2% slice of the key space, and 1,000 spread over all.
    let near: Vec<Vec<u8>> = keys[keys.len() / 2..]
        .iter()
        .step_by(20)
        .take(batch_len)
        .cloned()
        .collect();
    let spread: Vec<Vec<u8>> = keys
        .iter()
        .step_by((keys.len() / batch_len).max(1))
        .take(batch_len)
        .cloned()
        .collect();
    let thousands = |n: usize| match n {
        1000.. => format!("{},{:03}", n / 1000, n % 1000),
        _ => n.to_string(),
    };
    for (name, batch) in [
        (
            format!("batch of {} neighbours", thousands(near.len())),
            &near,
        ),
        (
            format!("batch of {} spread", thousands(spread.len())),
            &spread,
        ),
    ] {
        let name = name.as_str();
        ours.push(measure(&loc, name, 1, || {
            let got = table.get_many(batch)?;
            if got
                .iter()
                .zip(batch)
                .any(|(v, k)| v.as_deref() != Some(&value(k)[..]))
            {
                return Err("wrong batch value".into());
            }
            Ok(String::new())
        })?);
        plain.push(measure(&plain_loc, name, 1, || {
            for k in batch.iter() {
                if plain_table.get(k)?.as_deref() != Some(&value(k)[..]) {
                    return Err("wrong value".into());
                }
            }
            Ok(String::new())
        })?);
    }

    // Scans: the whole table; the plain reader's over its first 500 blocks only (at 10 ms
    // a block the whole would take minutes), reported per MB.
    // The remote scan and its bound (the whole object in one GET, and the same table
    // scanned from the local file), interleaved round by round, best of each.
    let (mut best_scan, mut best_whole, mut best_local) = (None, None, None);
    let rt = tokio::runtime::Runtime::new()?;
    // Pinned before the rounds: the bound is the one GET of the whole object.
    let obj = rt.block_on(RemoteObject::open_tail(&loc, 1))?.0;
    let local_path = root.join("t.ldb");
    for _ in 0..config.rounds.max(1) {
        let m = measure(&loc, "scan all", 1, || {
            let started = Instant::now();
            let mut bytes = 0u64;
            let n = table.scan(Bound::Unbounded, Bound::Unbounded, |k, v| {
                bytes += (k.len() + v.len()) as u64;
                true
            })?;
            if n != keys.len() as u64 {
                return Err(format!("scan saw {n} entries").into());
            }
            let table_mbps = size as f64 / 1e6 / started.elapsed().as_secs_f64();
            Ok(format!(
                "entries lent to a callback: {table_mbps:.0} MB/s of table, {:.0} MB/s of entries",
                bytes as f64 / 1e6 / started.elapsed().as_secs_f64()
            ))
        })?;
        keep_best(&mut best_scan, m);
        // The bound: the whole object in one GET.
        let m = measure(&loc, "download whole object, one GET", 1, || {
            // Timed: the one GET of the whole object.
            let started = Instant::now();
            let bytes = rt.block_on(obj.read(0..obj.size()))?;
            let mbps = bytes.len() as f64 / 1e6 / started.elapsed().as_secs_f64();
            Ok(format!("{mbps:.0} MB/s"))
        })?;
        keep_best(&mut best_whole, m);
        // The same table's bytes scanned from the local file, opened (untimed) with the
        // remote reader's options.
        let local = Table::open(crate::mmap::map(&local_path)?, read.clone())?;
        let started = Instant::now();
        let mut it = local.iter();
        it.seek_to_first();
        let (mut n, mut bytes) = (0u64, 0u64);
        while it.valid() {
            n += 1;
            bytes += (it.key().len() + it.value().len()) as u64;
            it.next();
        }
        it.status()?;
        let elapsed = started.elapsed().as_secs_f64();
        if n != keys.len() as u64 {
            return Err(format!("local scan saw {n} entries").into());
        }
        keep_best(
            &mut best_local,
            Measure {
                what: "scan all".to_owned(),
                ops: 1,
                ms_per_op: elapsed * 1000.0,
                stats: StatsSnapshot::default(),
                extra: format!(
                    "the bound's other side: {:.0} MB/s of table, {:.0} MB/s of entries",
                    size as f64 / 1e6 / elapsed,
                    bytes as f64 / 1e6 / elapsed
                ),
            },
        );
    }
    let scan = best_scan.ok_or("no scan")?;
    let whole = best_whole.ok_or("no download")?;
    let local = best_local.ok_or("no local scan")?;
    let verdict = scan_verdict(scan.ms_per_op, whole.ms_per_op, local.ms_per_op);
    ours.push(scan);
    ours.push(measure(&loc, "scan all, owned entries", 1, || {
        let started = Instant::now();
        let mut n = 0u64;
        for e in table.range(Bound::Unbounded, Bound::Unbounded) {
            e?;
            n += 1;
        }
        if n != keys.len() as u64 {
            return Err(format!("scan saw {n} entries").into());
        }
        Ok(format!(
            "the iterator, two Vecs per entry: {:.0} MB/s of table",
            size as f64 / 1e6 / started.elapsed().as_secs_f64()
        ))
    })?);
    plain.push(measure(&plain_loc, "scan first 500 blocks", 1, || {
        let started = Instant::now();
        let data =
            plain_table.properties().data_size as f64 / plain_table.properties().data_blocks as f64;
        let mut it = plain_table.iter();
        it.seek_to_first();
        let limit = keys.len() as u64 * 500 / plain_table.properties().data_blocks;
        let mut n = 0u64;
        while it.valid() && n < limit {
            n += 1;
            it.next();
        }
        it.status()?;
        let mb = data * 500.0 / 1e6;
        Ok(format!(
            "{:.1} MB/s of table",
            mb / started.elapsed().as_secs_f64()
        ))
    })?);

    let _ = writeln!(
        out,
        "{} entries, table {:.1} MB, {} data blocks; {} gets per get row.\n",
        keys.len(),
        size as f64 / 1e6,
        table.table().properties().data_blocks,
        q
    );
    out.push_str(
        "| operation | reader | requests/op | KB/op | ms/op | note |\n|---|---|--:|--:|--:|---|\n",
    );
    let mut row = |m: &Measure, who: &str| {
        let _ = writeln!(
            out,
            "| {} | {who} | {:.2} | {:.1} | {:.1} | {} |",
            m.what,
            m.stats.gets as f64 / m.ops as f64,
            m.stats.bytes_read as f64 / 1e3 / m.ops as f64,
            m.ms_per_op,
            m.extra
        );
    };
    for m in &ours {
        row(m, "leveltable-object");
        if let Some(p) = plain.iter().find(|p| p.what == m.what) {
            row(p, "plain ReadAt, one GET per block read");
        }
    }
    for p in plain
        .iter()
        .filter(|p| !ours.iter().any(|m| m.what == p.what))
    {
        row(p, "plain ReadAt, one GET per block read");
    }
    row(&whole, "one GET");
    row(&local, "leveltable-table, local file (memory map)");
    let _ = writeln!(out, "\n{verdict}");
    drop(proxy);
    drop(nginx);
    let _ = Arc::new(());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_verdict_divides_by_the_larger_bound() {
        // The local scan is the larger side: 60 / 50 = 1.20, at the line.
        let line = scan_verdict(60.0, 40.0, 50.0);
        assert!(line.contains(": 1.20×"), "{line}");
        assert!(line.ends_with("target ≤ 1.20×: met"), "{line}");
        // The download is the larger side: 61 / 50 = 1.22.
        let line = scan_verdict(61.0, 50.0, 30.0);
        assert!(line.contains(": 1.22×"), "{line}");
        assert!(line.ends_with("target ≤ 1.20×: missed"), "{line}");
        assert!(
            line.contains("remote scan 61.0 ms, download 50.0 ms, local-file scan 30.0 ms"),
            "{line}"
        );
    }
}
