//! Entries that expire: each value starts with the time it expires (8 bytes, big-endian
//! seconds since the Unix epoch), and a compaction filter removes the expired ones whenever
//! a compaction rewrites them.
//!
//! Run with `cargo run --features db --example expiring_entries` (the database layer is the
//! `db` feature).
//!
//! Reads still see an expired entry until a compaction has removed it, so the application
//! checks the time on reads too (`get_live` below); the filter is what gives the space back.
//! The database stays a LevelDB database: a removed entry becomes an ordinary deletion.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use leveltable::db::{
    CompactionFilter, FilterDecision, WritableDb, WritableOptions, WriteBatchBuilder, WriteOptions,
};

/// Seconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A value that expires at `expires` (seconds since the epoch).
fn expiring(expires: u64, payload: &[u8]) -> Vec<u8> {
    [&expires.to_be_bytes()[..], payload].concat()
}

/// The expiry time of a value, if it has one.
fn expiry(value: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(value.get(..8)?.try_into().ok()?))
}

/// Removes entries whose expiry time has passed; keeps values too short to hold one.
struct ExpireByTimestamp;

impl CompactionFilter for ExpireByTimestamp {
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> FilterDecision {
        match expiry(value) {
            Some(t) if t <= now() => FilterDecision::Remove,
            _ => FilterDecision::Keep,
        }
    }

    fn name(&self) -> &str {
        "expire-by-timestamp"
    }
}

/// The payload of `key`, unless it is missing or expired.
fn get_live(db: &WritableDb, key: &[u8]) -> leveltable::db::Result<Option<Vec<u8>>> {
    Ok(db
        .get(key)?
        .filter(|v| expiry(v).is_some_and(|t| t > now()))
        .map(|v| v[8..].to_vec()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let options = WritableOptions::default()
        .create_if_missing(true)
        .compaction_filter(Some(Arc::new(ExpireByTimestamp)));
    let db = WritableDb::open(dir.path(), options)?;

    // 20,000 sessions: the odd ones expired a minute ago, the even ones last an hour.
    let t = now();
    let mut batch = WriteBatchBuilder::default();
    for i in 0..20_000u64 {
        let expires = if i % 2 == 1 { t - 60 } else { t + 3600 };
        let payload = format!("session data of user {i}, {}", "x".repeat(100));
        batch.put(
            format!("session:{i:06}").as_bytes(),
            &expiring(expires, payload.as_bytes()),
        );
        if batch.count() == 1000 {
            db.write(&batch, WriteOptions::default())?;
            batch = WriteBatchBuilder::default();
        }
    }
    db.write(&batch, WriteOptions::default())?;

    let stored = |db: &WritableDb| db.iter().count();
    let bytes = |db: &WritableDb| db.tables().iter().map(|t| t.size).sum::<u64>();
    db.flush()?;
    println!(
        "before compaction: {} entries stored, {} table bytes; session:000001 live: {:?}",
        stored(&db),
        bytes(&db),
        get_live(&db, b"session:000001")?.is_some(),
    );
    // A compaction rewrites every table; the filter removes the expired sessions.
    db.compact_range(None, None)?;
    println!(
        "after compaction:  {} entries stored, {} table bytes; session:000002 live: {:?}",
        stored(&db),
        bytes(&db),
        get_live(&db, b"session:000002")?.is_some(),
    );
    assert_eq!(stored(&db), 10_000);
    assert_eq!(db.get(b"session:000001")?, None);
    db.close()?;
    Ok(())
}
