//! The floor under the `write` workloads' single puts and deletes: what the kernel alone
//! takes for the one `write(2)` that each of them must make.
//!
//! A put that is not synced must still be in the kernel when it returns, so that a process
//! dying after it loses nothing: LevelDB and leveltable both append its log record with one
//! `write(2)` before the put returns. No write path can be faster than those appends, so the
//! runner measures them in the same run, in a child process of their own: `n` appends of a
//! put's log record (138 bytes: a 7-byte record header, a 12-byte batch header, a tag, the
//! 16-byte key and the 100-byte value with their lengths), then `n` of a delete's (37
//! bytes), each to a fresh file that is replaced after 4 MiB as a log is at a memtable
//! switch. The replaced file is removed outside the clock (a database removes its old logs
//! on its background thread).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use leveltable_db::{WriteBatchBuilder, log_format};

use super::config::Result;
use crate::workload::{VALUE_LEN, key};

/// The child's system name for the floor.
pub const FLOOR_SYSTEM: &str = "kernel";

/// The floor's scenario.
pub const FLOOR_SCENARIO: &str = "floor";

/// The log record of a one-operation batch: the record header and the batch, encoded.
fn record_of(batch: &WriteBatchBuilder) -> usize {
    log_format::HEADER_SIZE + batch.as_bytes().len()
}

/// The log record of a one-put batch of the workloads' key and value sizes.
pub fn put_record() -> usize {
    record_of(WriteBatchBuilder::new(0).put(&key(0), &[0; VALUE_LEN]))
}

/// The log record of a one-delete batch.
pub fn delete_record() -> usize {
    record_of(WriteBatchBuilder::new(0).delete(&key(0)))
}

/// The size at which a log is replaced by a new one (LevelDB's 4 MiB write buffer).
const LOG_BYTES: u64 = 4 << 20;

/// `n` appends of `record` bytes each, one `write(2)` per append, to files in `dir` that are
/// replaced after [`LOG_BYTES`]. Returns the time the creates and appends took.
fn appends(dir: &Path, record: usize, n: u64) -> Result<Duration> {
    let bytes = vec![0x5a_u8; record];
    let create = |number: u64| -> Result<(File, std::path::PathBuf)> {
        let path = dir.join(format!("{number:06}.log"));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok((file, path))
    };
    let mut number = 1;
    let mut elapsed = Duration::ZERO;
    let mut start = Instant::now();
    let (mut file, mut path) = create(number)?;
    let mut in_file = 0u64;
    for _ in 0..n {
        if in_file + record as u64 > LOG_BYTES {
            elapsed += start.elapsed();
            drop(file);
            fs::remove_file(&path)?;
            number += 1;
            start = Instant::now();
            (file, path) = create(number)?;
            in_file = 0;
        }
        let written = file.write(&bytes)?;
        if written != record {
            return Err(format!("{}: a short write of {written} bytes", path.display()).into());
        }
        in_file += record as u64;
    }
    elapsed += start.elapsed();
    drop(file);
    fs::remove_file(&path)?;
    Ok(elapsed)
}

/// The floor's phases: `floor-put` and `floor-delete`, `n` appends each in `dir`, and the
/// time each took.
///
/// # Errors
///
/// From the file system.
pub fn phases(dir: &Path, n: u64) -> Result<[(&'static str, Duration); 2]> {
    fs::create_dir_all(dir)?;
    Ok([
        ("floor-put", appends(dir, put_record(), n)?),
        ("floor-delete", appends(dir, delete_record(), n)?),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_sizes_of_one_operation_batches() {
        assert_eq!(put_record(), 138);
        assert_eq!(delete_record(), 37);
    }

    #[test]
    fn appends_replace_full_files_and_leave_none() {
        let dir = tempfile::tempdir().unwrap();
        let n = (LOG_BYTES / put_record() as u64) * 2 + 5;
        appends(dir.path(), put_record(), n).unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
