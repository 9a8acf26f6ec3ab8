//! Whether a torn tail's sequence numbers were given again to later writes.
//!
//! LevelDB's reader ends a log at its torn tail; a writer that reopens the database then
//! numbers its next writes from the last sequence the log's readable part held, the
//! numbers the tail's batches (read again by a repair past a damaged record length) carry
//! too. Those batches are then older than the later writes whatever their numbers say,
//! and taken by a repair they would shadow them. Only the files written after the log can
//! hold such writes: a later log, or a table numbered after the log.

use std::ops::{Bound, RangeInclusive};

use crate::dbformat::ParsedInternalKey;
use crate::filename::{log_file_name, table_file_name};
use crate::live_memtable::LiveMemTable;
use crate::table_cache::TableCache;
use crate::version::{Origin, Source};

/// The first file of `sources` newer than log `log` that shows its tail's numbers reused,
/// by name: a later log holding a version numbered at or below `range`'s end (a log's
/// writes all come after every write of an older one), or a later table holding one within
/// `range` (a table numbered after the log may hold older writes, flushed from an older
/// log, but none numbered past the log's readable part unless that part's writes go on
/// there, or were given again). `range` runs from past the newest sequence of the log's
/// readable part to the tail's newest. A table that cannot be read shows nothing.
pub(crate) fn reused_by(
    sources: &[Source],
    tables: &TableCache,
    log: u64,
    range: &RangeInclusive<u64>,
) -> Option<String> {
    let below_end = |sequence: u64| sequence <= *range.end();
    for source in sources {
        match source {
            Source::Mem { origin, table } => {
                let (newer, test): (bool, &dyn Fn(u64) -> bool) = match *origin {
                    Origin::Log { number } => (number > log, &below_end),
                    Origin::Table { number, .. } => (number > log, &|s| range.contains(&s)),
                };
                if newer && holds(table, test) {
                    return Some(origin_name(origin));
                }
            }
            Source::Files { files, .. } => {
                for f in files.iter().filter(|f| f.number > log) {
                    if table_holds(tables, f.number, range) {
                        return Some(table_file_name(f.number));
                    }
                }
            }
        }
    }
    None
}

/// Whether the memtable holds a version whose sequence passes `test`.
fn holds(table: &LiveMemTable, test: &dyn Fn(u64) -> bool) -> bool {
    let mut found = false;
    table.visit_range(Bound::Unbounded, Bound::Unbounded, true, &mut |key, _| {
        found = ParsedInternalKey::parse(key).is_ok_and(|p| test(p.sequence));
        !found
    });
    found
}

/// Whether table `number` holds a version numbered within `range`.
fn table_holds(tables: &TableCache, number: u64, range: &RangeInclusive<u64>) -> bool {
    let Ok(table) = tables.open(number) else {
        return false;
    };
    let mut it = table.table().iter().fill_cache(false);
    it.seek_to_first();
    while it.valid() {
        if ParsedInternalKey::parse(it.key()).is_ok_and(|p| range.contains(&p.sequence)) {
            return true;
        }
        it.next();
    }
    false
}

fn origin_name(origin: &Origin) -> String {
    match *origin {
        Origin::Log { number } => log_file_name(number),
        Origin::Table { number, .. } => table_file_name(number),
    }
}
