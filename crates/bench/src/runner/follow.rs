//! `follow`: a reader keeping up with a live database. `Db::refresh` with nothing new and
//! after about 1 KB appended to the log, beside reopening the database (what a reader does
//! without refresh); and the change feed's latency, from the writer's return to the
//! follower's yield, polling at the default interval and waiting on inotify.
//!
//! Input: a database of about `--follow-bytes` (100 MB by default; 1 GB with
//! `--follow-bytes 1000000000`) of 1 KB values that do not compress, bulk built before any
//! clock starts; then a `WritableDb` holds it open as its writer for the whole workload.
//!
//! - refresh, nothing new: a loop of `refresh()` on a read-only handle, once the
//!   directory's modification time is more than 2 s old (a newer one makes a refresh list
//!   the directory, as `docs/db.md` explains);
//! - refresh, ~1 KB appended: each iteration puts one 1 KB value (untimed), then times the
//!   `refresh()` that reads it, which must find one batch;
//! - reopen: `Db::open` of the same database, with the same snapshot as the refreshed
//!   handle;
//! - feed latency: a writer thread puts one batch at a time, each after the follower took
//!   the one before and a pause that varies from 0 to 12 ms (so that the puts fall at every
//!   phase of a 10 ms poll); the follower, on the runner's thread, times from the instant
//!   `put` returned to the instant `next_event` returned the batch (0 when the follower was
//!   first). Median and 99th percentile of each round.
//!
//! leveltable alone: LevelDB has neither a refresh of a read-only handle nor a change feed.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use leveltable_db::{
    BulkOptions, DEFAULT_POLL_INTERVAL, Db, DbBuilder, DbOptions, FollowEvent, WritableDb,
    WritableOptions, WriteOptions,
};

use super::config::{Config, Result};
use super::harness::check;
use crate::report::{Row, Target, Unit};

/// Bytes of a value.
const VALUE_BYTES: usize = 1000;

/// `refresh()` with nothing new, at most this long (µs).
const IDLE_TARGET_US: f64 = 20.0;
/// `refresh()` after ~1 KB appended, at most this long (µs).
const APPEND_TARGET_US: f64 = 1000.0;
/// The feed's latency polling at the default interval, at most this long (ms).
const POLL_LATENCY_TARGET_MS: f64 = 50.0;
/// The feed's latency waiting on inotify, at most this long (ms).
const INOTIFY_LATENCY_TARGET_MS: f64 = 5.0;

/// The longest pause of the feed's writer between batches.
const MAX_PAUSE: Duration = Duration::from_millis(12);

/// How old the directory's modification time must be for a refresh with nothing new not to
/// list it (the refresh's own bound is 2 s).
const SETTLE: Duration = Duration::from_millis(2_200);

/// A xorshift step: values that do not compress, pauses that vary.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Bulk builds the database of `entries` 1 KB values at `dir`.
fn build(dir: &std::path::Path, entries: u64) -> Result<()> {
    let mut builder = DbBuilder::create(dir, BulkOptions::default().threads(1))?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = vec![0u8; VALUE_BYTES];
    for i in 0..entries {
        for chunk in value.chunks_mut(8) {
            let word = next(&mut state).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        builder.add(format!("key{i:012}").as_bytes(), &value)?;
    }
    let summary = builder.finish()?;
    check(summary.entries == entries, || {
        format!("built {} entries, not {entries}", summary.entries)
    })
}

fn keep_least(slot: &mut Option<f64>, value: f64) {
    if slot.is_none_or(|b| value < b) {
        *slot = Some(value);
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The feed's latencies for `samples` batches, sorted: a writer thread puts each batch
/// after the follower took the one before and a varying pause.
fn feed_latencies(
    writer: &WritableDb,
    reader: &Db,
    poll_only: bool,
    samples: usize,
    seed: u64,
) -> Result<(Vec<Duration>, bool)> {
    let mut follower = reader
        .follow(Some(writer.last_sequence() + 1))
        .poll_interval(DEFAULT_POLL_INTERVAL)
        .poll_only(poll_only);
    // The first wait sets up the watch; nothing is new yet.
    check(
        follower
            .next_event_timeout(Duration::from_millis(1))?
            .is_none(),
        || "the follower found a batch before the writer put one".into(),
    )?;
    let (returned_tx, returned) = mpsc::channel::<Instant>();
    let (taken, taken_rx) = mpsc::channel::<()>();
    let value = vec![b'f'; VALUE_BYTES];
    let latencies = std::thread::scope(|s| -> Result<Vec<Duration>> {
        let writing = s.spawn(move || -> Result<()> {
            let mut state = seed;
            for i in 0..samples {
                let pause = next(&mut state) % (MAX_PAUSE.as_micros() as u64);
                std::thread::sleep(Duration::from_micros(pause));
                let key = format!("feed{seed:x}-{i:08}");
                writer.put(key.as_bytes(), &value, WriteOptions::default())?;
                returned_tx.send(Instant::now())?;
                if taken_rx.recv().is_err() {
                    break;
                }
            }
            Ok(())
        });
        let mut latencies = Vec::with_capacity(samples);
        for i in 0..samples {
            let event = follower.next_event()?;
            let yielded = Instant::now();
            let FollowEvent::Batch(change) = event else {
                return Err(format!("the feed reported a gap at batch {i}: {event:?}").into());
            };
            check(change.ops.len() == 1, || {
                format!("batch {i} holds {} operations, not 1", change.ops.len())
            })?;
            let returned = returned.recv()?;
            latencies.push(yielded.saturating_duration_since(returned));
            taken.send(())?;
        }
        drop(taken);
        writing.join().map_err(|_| "the feed's writer panicked")??;
        Ok(latencies)
    })?;
    let mut latencies = latencies;
    latencies.sort_unstable();
    Ok((latencies, follower.watches_directory()))
}

/// The `follow` rows.
///
/// # Errors
///
/// From the database, or a refresh or feed that found the wrong batches.
pub(super) fn rows(config: &Config) -> Result<Vec<Row>> {
    let entries = (config.follow_bytes / VALUE_BYTES as u64).max(1);
    let dir = config.dir.join("follow");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    build(&dir, entries)?;
    let writer = WritableDb::open(&dir, WritableOptions::default())?;
    let mut reader = Db::open(&dir, DbOptions::default())?;
    reader.refresh()?;
    let tables = reader.properties().levels.iter().flatten().count();
    let size = format!(
        "{:.0} MB database ({tables} table{})",
        (entries * VALUE_BYTES as u64) as f64 / 1e6,
        if tables == 1 { "" } else { "s" }
    );
    let (idle_loops, appends, reopens, samples) = (
        config.follow_samples * 50,
        config.follow_samples,
        (config.follow_samples / 20).max(2),
        config.follow_samples,
    );

    let (mut idle, mut appended, mut reopen) = (None, None, None);
    let (mut poll_median, mut poll_p99) = (None, None);
    let (mut watch_median, mut watch_p99) = (None, None);
    let mut watched = true;
    let small = vec![b's'; VALUE_BYTES];
    for round in 0..config.rounds.max(1) {
        // Up to what the feeds of the round before wrote, then nothing new.
        reader.refresh()?;
        std::thread::sleep(SETTLE);
        let start = Instant::now();
        for _ in 0..idle_loops {
            let r = reader.refresh()?;
            check(!r.changed(), || "a refresh with nothing new changed".into())?;
        }
        keep_least(
            &mut idle,
            start.elapsed().as_secs_f64() * 1e9 / idle_loops as f64,
        );

        let mut spent = Duration::ZERO;
        for i in 0..appends {
            let key = format!("new{round:02}-{i:08}");
            writer.put(key.as_bytes(), &small, WriteOptions::default())?;
            let start = Instant::now();
            let r = reader.refresh()?;
            spent += start.elapsed();
            check(r.batches == 1, || {
                format!("a refresh after one put read {} batches", r.batches)
            })?;
        }
        keep_least(&mut appended, spent.as_secs_f64() * 1e9 / appends as f64);

        let start = Instant::now();
        for _ in 0..reopens {
            let db = Db::open(&dir, DbOptions::default())?;
            check(db.snapshot() == reader.snapshot(), || {
                "a reopen and the refreshed handle disagree on the sequence".into()
            })?;
        }
        keep_least(
            &mut reopen,
            start.elapsed().as_secs_f64() * 1e9 / reopens as f64,
        );

        for poll_only in [true, false] {
            let seed = 0x5eed_0000 + round as u64 * 2 + u64::from(poll_only);
            let (lat, watching) = feed_latencies(&writer, &reader, poll_only, samples, seed)?;
            let (median, p99) = (
                millis(lat[lat.len() / 2]),
                millis(lat[(lat.len() * 99 / 100).min(lat.len() - 1)]),
            );
            if poll_only {
                keep_least(&mut poll_median, median);
                keep_least(&mut poll_p99, p99);
            } else {
                watched &= watching;
                keep_least(&mut watch_median, median);
                keep_least(&mut watch_p99, p99);
            }
        }
    }
    drop(reader);
    drop(writer);
    std::fs::remove_dir_all(&dir)?;

    let ours = |v: Option<f64>| [v, None, None, None];
    let poll = DEFAULT_POLL_INTERVAL.as_millis();
    let mut rows = vec![
        Row {
            workload: format!("follow: refresh(), nothing new, {size}"),
            unit: Unit::NsPerOp,
            figures: ours(idle),
            target: Target::AtMost(IDLE_TARGET_US * 1e3),
        },
        Row {
            workload: format!("follow: refresh() after ~1 KB appended to the log, {size}"),
            unit: Unit::NsPerOp,
            figures: ours(appended),
            target: Target::AtMost(APPEND_TARGET_US * 1e3),
        },
        Row {
            workload: format!("follow: reopening instead (Db::open), {size}"),
            unit: Unit::NsPerOp,
            figures: ours(reopen),
            target: Target::None,
        },
        Row {
            workload: format!(
                "follow: feed latency, writer's return to follower's yield, polling every \
                 {poll} ms, median of {samples}"
            ),
            unit: Unit::Millis,
            figures: ours(poll_median),
            target: Target::AtMost(POLL_LATENCY_TARGET_MS),
        },
        Row {
            workload: format!("follow: feed latency, polling every {poll} ms, p99"),
            unit: Unit::Millis,
            figures: ours(poll_p99),
            target: Target::None,
        },
    ];
    if watched {
        rows.extend([
            Row {
                workload: format!(
                    "follow: feed latency, writer's return to follower's yield, inotify \
                     (default on Linux), median of {samples}"
                ),
                unit: Unit::Millis,
                figures: ours(watch_median),
                target: Target::AtMost(INOTIFY_LATENCY_TARGET_MS),
            },
            Row {
                workload: "follow: feed latency, inotify, p99".into(),
                unit: Unit::Millis,
                figures: ours(watch_p99),
                target: Target::None,
            },
        ]);
    } else {
        eprintln!("follow: no inotify watch here; its latency rows are left out");
    }
    Ok(rows)
}
