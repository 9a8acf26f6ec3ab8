//! How long `Db::refresh` takes beside reopening the database, which is what readers of a
//! live database do without it: with nothing new, and with about 1 KB appended to the log.
//!
//! `cargo run --release -p leveltable-db --example refresh_speed [MB]` builds a database of
//! about MB megabytes (default 256) with `WritableDb`, keeps the writer open, and prints the
//! median of each.

use std::time::{Duration, Instant};

use leveltable_db::{Db, DbOptions, WritableDb, WritableOptions, WriteOptions};

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mb: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(256);
    let work = tempfile::tempdir()?;
    let dir = work.path().join("db");
    let writer = WritableDb::open(&dir, WritableOptions::default().create_if_missing(true))?;
    let entries = mb * 1000;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = vec![0u8; 1000];
    for i in 0..entries {
        // Values that do not compress, keys scattered so that compactions merge across
        // the key space.
        for byte in &mut value {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
        let key = format!("key{:012}", (i * 7_919) % entries);
        writer.put(key.as_bytes(), &value, WriteOptions::default())?;
    }
    // No compaction left to run while the reader is timed.
    writer.compact_range(None, None)?;
    let mut reader = Db::open(&dir, DbOptions::default())?;
    reader.refresh()?;
    let tables = reader.properties().levels.iter().flatten().count();
    println!("database: {entries} entries of ~1 KB, {tables} tables");

    let mut idle = |n: usize| -> Duration {
        median(
            (0..n)
                .map(|_| {
                    let start = Instant::now();
                    let r = reader.refresh().expect("refresh");
                    assert!(!r.changed());
                    start.elapsed()
                })
                .collect(),
        )
    };
    // Within 2 s of a change of the directory, each refresh lists it.
    println!(
        "refresh, nothing new, files changed < 2 s ago: median {:?}",
        idle(1_000)
    );
    std::thread::sleep(Duration::from_millis(2_500));
    println!("refresh, nothing new: median {:?}", idle(10_000));

    let small = vec![b's'; 1000];
    let appended: Vec<Duration> = (0..500u64)
        .map(|i| {
            let key = format!("new{i:08}");
            writer
                .put(key.as_bytes(), &small, WriteOptions::default())
                .expect("put");
            let start = Instant::now();
            let r = reader.refresh().expect("refresh");
            let took = start.elapsed();
            assert_eq!(r.batches, 1);
            took
        })
        .collect();
    println!(
        "refresh, ~1 KB appended to the log: median {:?}",
        median(appended)
    );

    let reopen: Vec<Duration> = (0..20)
        .map(|_| {
            let start = Instant::now();
            let db = Db::open(&dir, DbOptions::default()).expect("open");
            let took = start.elapsed();
            assert_eq!(db.snapshot(), reader.snapshot());
            took
        })
        .collect();
    println!("reopening instead: median {:?}", median(reopen));
    Ok(())
}
