//! What a directory without `CURRENT` holds, for an open that may create a database there:
//! nothing of a database, what a creation interrupted before `CURRENT` leaves, or the files
//! of a database that lost its `CURRENT` (which a new database would delete as obsolete).

use std::path::Path;

use crate::filename::{FileType, manifest_file_name, parse_file_name};
use crate::log_reader::LogReader;
use crate::storage::list_dir;
use crate::storage::read_regular;
use crate::version_edit::VersionEdit;
use crate::{Error, Result};

/// The most bytes of a file left by an interrupted creation that are read to tell what it
/// is: the first MANIFEST of a new database holds one record of a few dozen bytes, and a
/// new log holds nothing, or the zeros reserved for it by a mapped log.
const CREATION_FILE_MAX_BYTES: u64 = 4 << 20;

/// What a directory without `CURRENT` holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WithoutCurrent {
    /// None of a database's files (a MANIFEST, table, log or temporary file).
    Nothing,
    /// What a creation interrupted before `CURRENT` was in place leaves (LevelDB's
    /// `DBImpl::NewDB`, or ours): `MANIFEST-000001` holding no table and no write, perhaps
    /// `000001.dbtmp` holding (part of) the name `CURRENT` was to get, perhaps logs holding
    /// no byte but zeros. Nothing is lost by starting afresh.
    InterruptedCreation,
    /// Any other of a database's files: up to three of them, by name.
    DatabaseFiles(Vec<String>),
}

/// Looks at the database files in `dir`, a directory without `CURRENT`: the regular files
/// with the names of a MANIFEST, a table, a log or a temporary file.
///
/// # Errors
/// The directory cannot be listed.
pub(crate) fn without_current(dir: &Path) -> Result<WithoutCurrent> {
    let mut names: Vec<String> = list_dir(dir)?
        .into_iter()
        .filter(|name| {
            matches!(
                parse_file_name(name),
                Some(
                    FileType::Manifest(_)
                        | FileType::Table(_)
                        | FileType::Log(_)
                        | FileType::Temp(_)
                )
            ) && is_regular_file(&dir.join(name))
        })
        .collect();
    if names.is_empty() {
        return Ok(WithoutCurrent::Nothing);
    }
    names.sort();
    let first_manifest = manifest_file_name(1);
    if names.contains(&first_manifest) && names.iter().all(|name| left_by_creation(dir, name)) {
        return Ok(WithoutCurrent::InterruptedCreation);
    }
    names.truncate(3);
    Ok(WithoutCurrent::DatabaseFiles(names))
}

/// Whether `path` is a regular file (not followed if a link). Only regular files hold a
/// database's data; anything else at a name the new database creates is refused by that
/// creation, naming it and saying what it is.
fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// Whether the file `name` of `dir` is one an interrupted creation leaves.
fn left_by_creation(dir: &Path, name: &str) -> bool {
    let Some(kind) = parse_file_name(name) else {
        return false;
    };
    let read = || read_regular(&dir.join(name), CREATION_FILE_MAX_BYTES).ok();
    match kind {
        FileType::Manifest(1) => read().is_some_and(|data| describes_no_data(&data)),
        FileType::Temp(1) => read().is_some_and(|data| {
            format!("{}\n", manifest_file_name(1))
                .as_bytes()
                .starts_with(&data)
        }),
        FileType::Log(_) => read().is_some_and(|data| data.iter().all(|&b| b == 0)),
        _ => false,
    }
}

/// Whether the MANIFEST `data` records no table and no write: every whole record decodes
/// to an edit without files and without a last sequence number past 0. (A record cut short
/// by the interruption is no record.)
fn describes_no_data(data: &[u8]) -> bool {
    let mut reader = LogReader::new(data, true);
    while let Some(record) = reader.read_record() {
        let mut src = record.data.as_slice();
        let Ok(edit) = VersionEdit::decode_from(&mut src) else {
            return false;
        };
        if !edit.new_files.is_empty()
            || !edit.deleted_files.is_empty()
            || edit.last_sequence.is_some_and(|s| s > 0)
        {
            return false;
        }
    }
    true
}

/// The error for a directory holding `files` of a database but no `CURRENT`.
pub(crate) fn lost_current(dir: &Path, files: Vec<String>) -> Error {
    Error::LostCurrent {
        path: dir.to_path_buf(),
        files,
    }
}
