//! Committing parts into a database: their files moved into place with final numbers, then a
//! MANIFEST that lists them and a CURRENT that names it.
//!
//! The files go to the last level (6), where LevelDB never compacts them by size and never
//! charges them a seek (a lookup reads nothing after the last level), with every entry at
//! sequence 0 and the database's last sequence 0: LevelDB opens the database without
//! compacting it, and its new writes, numbered from 1, shadow the bulk-loaded values.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::dbformat::{ValueType, append_internal_key};
use crate::filename::{manifest_file_name, table_file_name};
use crate::log_writer::LogWriter;
use crate::part::{PART_RECORD, Part, sync_dir, write_atomically};
use crate::version_edit::{FileMetaData, NUM_LEVELS, VersionEdit};
use crate::{Error, Result};

/// The level bulk-built files are placed on: the last.
pub const BULK_LEVEL: usize = NUM_LEVELS - 1;

/// The MANIFEST's file number; the tables are numbered from the next.
const MANIFEST_NUMBER: u64 = 1;

/// The name of LevelDB's bytewise comparator, stored in the MANIFEST.
const BYTEWISE_COMPARATOR: &str = "leveldb.BytewiseComparator";

/// What a commit made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CommitSummary {
    /// Parts committed (empty ones included).
    pub parts: u64,
    /// Table files in the database.
    pub tables: u64,
    /// Entries in them.
    pub entries: u64,
    /// Bytes of the table files.
    pub bytes: u64,
}

/// Makes the database `dir` from `parts`, given in key order: checks that each part's files
/// are there with their recorded sizes and that the parts do not overlap, moves the files
/// into `dir` (created if missing; it must otherwise be empty) as `000002.ldb`, … in key
/// order, writes `MANIFEST-000001` and then `CURRENT`, and removes the staging directories.
///
/// Until `CURRENT` is written the directory is no database; an error before then moves the
/// files back to their staging directories and removes what the commit created.
///
/// # Errors
/// [`Error::InvalidArgument`] for parts out of order or overlapping, a file missing or of
/// another size, or a `dir` that is not empty; [`Error::Io`] for failed moves and writes.
pub fn commit(dir: impl AsRef<Path>, parts: &[Part]) -> Result<CommitSummary> {
    let dir = dir.as_ref();
    check_parts(parts)?;
    let created = prepare_dir(dir)?;
    let mut moved = Vec::new();
    let result = place(dir, parts, &mut moved);
    match result {
        Ok(summary) => {
            for part in parts {
                // The part's files are gone; only its record and directory remain.
                let _ = fs::remove_file(part.staging.join(PART_RECORD));
                let _ = fs::remove_dir(&part.staging);
            }
            Ok(summary)
        }
        Err(e) => {
            for (from, to) in moved.iter().rev() {
                let _ = fs::rename(to, from);
            }
            let _ = fs::remove_file(dir.join(manifest_name()));
            let _ = fs::remove_file(dir.join(current_temp_name()));
            if created {
                let _ = fs::remove_dir(dir);
            }
            Err(e)
        }
    }
}

fn manifest_name() -> String {
    manifest_file_name(MANIFEST_NUMBER)
}

/// The temporary file `CURRENT` is written through (LevelDB's `SetCurrentFile` name).
fn current_temp_name() -> String {
    format!("{MANIFEST_NUMBER:06}.dbtmp")
}

/// Checks every file is in place with its size, and the parts' key ranges in order.
fn check_parts(parts: &[Part]) -> Result<()> {
    let mut previous: Option<(usize, &[u8])> = None;
    for (i, part) in parts.iter().enumerate() {
        for file in &part.files {
            let path = part.staging.join(&file.name);
            let size = fs::metadata(&path)
                .map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?
                .len();
            if size != file.size {
                return Err(Error::InvalidArgument(
                    format!(
                        "{} is {size} bytes, its part record says {}",
                        path.display(),
                        file.size
                    )
                    .into(),
                ));
            }
        }
        if let Some(w) = part
            .files
            .windows(2)
            .find(|w| w[0].largest >= w[1].smallest)
        {
            return Err(Error::InvalidArgument(
                format!(
                    "part {i} ({}): files {} and {} overlap",
                    part.staging.display(),
                    w[0].name,
                    w[1].name
                )
                .into(),
            ));
        }
        let (Some(smallest), Some(largest)) = (part.smallest(), part.largest()) else {
            continue;
        };
        if let Some((j, end)) = previous {
            if end >= smallest {
                return Err(Error::InvalidArgument(
                    format!(
                        "parts {j} and {i} are out of order or overlap: part {j} ends at key \
                         {}, part {i} starts at key {}",
                        show(end),
                        show(smallest)
                    )
                    .into(),
                ));
            }
        }
        previous = Some((i, largest));
    }
    Ok(())
}

/// Creates `dir`, or checks that it is an empty directory. Returns whether it was created.
fn prepare_dir(dir: &Path) -> Result<bool> {
    let io = |source| Error::Io {
        path: dir.to_owned(),
        source,
    };
    match fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let mut entries = fs::read_dir(dir).map_err(io)?;
            if entries.next().is_some() {
                return Err(Error::InvalidArgument(
                    format!(
                        "{} is not empty: a database is built only in a new or empty directory",
                        dir.display()
                    )
                    .into(),
                ));
            }
            Ok(false)
        }
        Err(e) => Err(io(e)),
    }
}

/// Moves the files in, recording each move in `moved`, and writes the MANIFEST and CURRENT.
fn place(dir: &Path, parts: &[Part], moved: &mut Vec<(PathBuf, PathBuf)>) -> Result<CommitSummary> {
    let mut summary = CommitSummary {
        parts: parts.len() as u64,
        ..CommitSummary::default()
    };
    let mut edit = VersionEdit::default();
    let mut number = MANIFEST_NUMBER;
    for part in parts {
        for file in &part.files {
            number += 1;
            let from = part.staging.join(&file.name);
            let to = dir.join(table_file_name(number));
            move_file(&from, &to)?;
            moved.push((from, to));
            let mut smallest = Vec::new();
            append_internal_key(&mut smallest, &file.smallest, 0, ValueType::Value)?;
            let mut largest = Vec::new();
            append_internal_key(&mut largest, &file.largest, 0, ValueType::Value)?;
            edit.new_files.push((
                BULK_LEVEL,
                FileMetaData {
                    number,
                    file_size: file.size,
                    smallest,
                    largest,
                },
            ));
            summary.tables += 1;
            summary.entries += file.entries;
            summary.bytes += file.size;
        }
    }
    edit.comparator = Some(BYTEWISE_COMPARATOR.to_owned());
    edit.log_number = Some(0);
    edit.next_file_number = Some(number + 1);
    edit.last_sequence = Some(0);

    let manifest = dir.join(manifest_name());
    let io = |source| Error::Io {
        path: manifest.clone(),
        source,
    };
    let file = File::create_new(&manifest).map_err(io)?;
    let mut log = LogWriter::new(BufWriter::new(file));
    log.add_record(&edit.encode()).map_err(io)?;
    log.flush().map_err(io)?;
    let file = log
        .into_inner()
        .into_inner()
        .map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    sync_dir(dir)?;
    let temp = current_temp_name();
    write_atomically(
        dir,
        &temp,
        "CURRENT",
        format!("{}\n", manifest_name()).as_bytes(),
    )?;
    Ok(summary)
}

/// Moves `from` to `to` (which must not exist): a rename, or on another file system a copy,
/// synced, then a removal.
fn move_file(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        return Err(Error::InvalidArgument(
            format!("{} exists already", to.display()).into(),
        ));
    }
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            let io = |source| Error::Io {
                path: to.to_owned(),
                source,
            };
            let mut source = File::open(from).map_err(|source| Error::Io {
                path: from.to_owned(),
                source,
            })?;
            let mut dest = File::create_new(to).map_err(io)?;
            io::copy(&mut source, &mut dest).map_err(io)?;
            dest.flush().map_err(io)?;
            dest.sync_all().map_err(io)?;
            fs::remove_file(from).map_err(|source| Error::Io {
                path: from.to_owned(),
                source,
            })
        }
        Err(source) => Err(Error::Io {
            path: from.to_owned(),
            source,
        }),
    }
}

/// A key for messages: text when printable, else hex.
fn show(key: &[u8]) -> String {
    if key.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(key))
    } else {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}
