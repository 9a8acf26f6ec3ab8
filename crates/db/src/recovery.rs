//! Replaying write-ahead logs into memtables, as LevelDB's `DBImpl::RecoverLogFile` (for an
//! open) and `Repairer::ConvertLogToTable` (for a salvage) do.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::filename::log_file_name;
use crate::live_memtable::LiveMemTable;
use crate::log_reader::{Dropped, LogReader};
use crate::options::LogInfo;
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// A replayed log.
pub(crate) struct ReplayedLog {
    pub(crate) table: LiveMemTable,
    pub(crate) info: LogInfo,
    /// The largest `sequence + count - 1` of its batches (LevelDB's `max_sequence`).
    pub(crate) max_sequence: Option<u64>,
}

/// Replays the log `number`, read from `source` a block at a time (`path` names it in
/// errors): the memtable holds its batches, and nothing holds the log's bytes.
///
/// For an open (`checksum` true), a batch that does not apply is skipped after its valid
/// prefix (LevelDB applies the operations before the bad one), and its header still counts
/// toward the last sequence number. For a salvage (`checksum` false, as `RepairDB` reads
/// logs), a bad batch's valid prefix is kept and its count ignored.
///
/// # Errors
/// With `paranoid`, the first problem, naming the log; an I/O error reading it, naming
/// `path`.
pub(crate) fn replay_log(
    number: u64,
    path: &Path,
    source: impl Read,
    checksum: bool,
    paranoid: bool,
    comparator: &Arc<dyn Comparator>,
) -> Result<ReplayedLog> {
    let name = log_file_name(number);
    let mut reader = LogReader::from_reader(source, checksum);
    let mem = LiveMemTable::new(comparator);
    let mut extra: Vec<Dropped> = Vec::new();
    let mut records = 0u64;
    let mut versions = 0u64;
    let mut max_sequence = None;
    while let Some(record) = reader.next() {
        if paranoid && let Some(d) = reader.dropped().first() {
            return Err(Error::corruption(
                name,
                format!("log record ({})", d.reason),
                d.offset,
            ));
        }
        records += 1;
        let batch = match WriteBatch::new(&record.data) {
            Ok(batch) => batch,
            Err(reason) => {
                if paranoid {
                    return Err(Error::corruption(
                        name,
                        format!("log record ({reason})"),
                        record.offset,
                    ));
                }
                extra.push(Dropped {
                    bytes: record.data.len() as u64,
                    reason,
                    offset: record.offset,
                });
                continue;
            }
        };
        let before = mem.added();
        let applied = mem.insert_batch(&batch);
        versions += (mem.added() - before) as u64;
        if let Err(reason) = applied {
            if paranoid {
                return Err(Error::corruption(
                    name,
                    format!("write batch ({reason})"),
                    record.offset,
                ));
            }
            extra.push(Dropped {
                bytes: record.data.len() as u64,
                reason,
                offset: record.offset,
            });
            if !checksum {
                // RepairDB counts nothing of a batch that failed.
                continue;
            }
        }
        let last = batch.last_sequence();
        max_sequence = Some(max_sequence.map_or(last, |m: u64| m.max(last)));
    }
    if let Some(e) = reader.take_error() {
        return Err(Error::io(path, e));
    }
    if paranoid && let Some(d) = reader.dropped().first() {
        return Err(Error::corruption(
            name,
            format!("log record ({})", d.reason),
            d.offset,
        ));
    }
    let mut dropped = reader.dropped().to_vec();
    dropped.extend(extra);
    dropped.sort_by_key(|d| d.offset);
    let size = reader.bytes_read();
    let tail_bytes = size.saturating_sub(reader.last_record_end());
    Ok(ReplayedLog {
        table: mem,
        info: LogInfo {
            number,
            size,
            records,
            versions,
            dropped,
            tail_bytes,
        },
        max_sequence,
    })
}
