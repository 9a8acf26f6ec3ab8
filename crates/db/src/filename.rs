//! The names of a database's files (LevelDB's `db/filename`).
//!
//! ```text
//! CURRENT             the name of the current MANIFEST, then a newline
//! LOCK, LOG, LOG.old  the lock file and the info logs (never read here)
//! MANIFEST-NNNNNN     version edits: the table files of each level
//! NNNNNN.log          a write-ahead log of write batches
//! NNNNNN.ldb          a table file (NNNNNN.sst before LevelDB 1.14)
//! NNNNNN.dbtmp        a temporary file
//! ```

use std::path::{Path, PathBuf};

/// The directory `path` is named in: its parent, or `.` for a bare name.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` as a name in its parent directory: `.`, `..` or `x/..` (no last name of their
/// own) resolved to the directory they name, so that what is staged beside a target, in
/// its parent, is not staged inside it. An error if even that has no name (`/`).
pub(crate) fn named(path: &Path) -> crate::Result<PathBuf> {
    if path.file_name().is_some() {
        return Ok(path.to_owned());
    }
    let resolved = std::fs::canonicalize(path).or_else(|_| std::path::absolute(path));
    match resolved {
        Ok(p) if p.file_name().is_some() => Ok(p),
        Ok(_) => Err(crate::Error::InvalidArgument(
            format!(
                "{}: names no directory a database can be put in",
                path.display()
            )
            .into(),
        )),
        Err(e) => Err(crate::Error::io(path, e)),
    }
}

/// What a file of the database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileType {
    /// `NNNNNN.log`.
    Log(u64),
    /// `NNNNNN.ldb` or `NNNNNN.sst`.
    Table(u64),
    /// `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `NNNNNN.dbtmp`.
    Temp(u64),
    /// `CURRENT`.
    Current,
    /// `LOCK`.
    Lock,
    /// `LOG` or `LOG.old`.
    InfoLog,
}

/// A decimal number of at least one digit that fits in a u64 (LevelDB's
/// `ConsumeDecimalNumber`), and the rest of the name.
fn number(name: &str) -> Option<(u64, &str)> {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let (number, rest) = name.split_at(digits);
    Some((number.parse().ok()?, rest))
}

/// Parses a name of the database directory as LevelDB's `ParseFileName` does.
pub fn parse_file_name(name: &str) -> Option<FileType> {
    match name {
        "CURRENT" => return Some(FileType::Current),
        "LOCK" => return Some(FileType::Lock),
        "LOG" | "LOG.old" => return Some(FileType::InfoLog),
        _ => {}
    }
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return match number(rest)? {
            (n, "") => Some(FileType::Manifest(n)),
            _ => None,
        };
    }
    match number(name)? {
        (n, ".log") => Some(FileType::Log(n)),
        (n, ".ldb" | ".sst") => Some(FileType::Table(n)),
        (n, ".dbtmp") => Some(FileType::Temp(n)),
        _ => None,
    }
}

/// `NNNNNN.ldb`.
pub fn table_file_name(number: u64) -> String {
    format!("{number:06}.ldb")
}

/// `NNNNNN.sst`, the name of tables before LevelDB 1.14.
pub fn sst_table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// `NNNNNN.log`.
pub fn log_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// `NNNNNN.dbtmp`, a file being written before it is renamed into place.
pub(crate) fn temp_file_name(number: u64) -> String {
    format!("{number:06}.dbtmp")
}

/// `MANIFEST-NNNNNN`.
pub(crate) fn manifest_file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_leveldb_parses_them() {
        for (name, expected) in [
            ("100.log", Some(FileType::Log(100))),
            ("0.log", Some(FileType::Log(0))),
            ("0.sst", Some(FileType::Table(0))),
            ("000071.ldb", Some(FileType::Table(71))),
            ("CURRENT", Some(FileType::Current)),
            ("LOCK", Some(FileType::Lock)),
            ("LOG", Some(FileType::InfoLog)),
            ("LOG.old", Some(FileType::InfoLog)),
            ("MANIFEST-2", Some(FileType::Manifest(2))),
            ("MANIFEST-7", Some(FileType::Manifest(7))),
            ("18446744073709551615.log", Some(FileType::Log(u64::MAX))),
            ("123.dbtmp", Some(FileType::Temp(123))),
            ("", None),
            ("foo", None),
            ("foo-dx-100.log", None),
            (".log", None),
            ("manifest", None),
            ("CURREN", None),
            ("CURRENTX", None),
            ("MANIFES", None),
            ("MANIFEST", None),
            ("MANIFEST-", None),
            ("XMANIFEST-3", None),
            ("MANIFEST-3x", None),
            ("LOC", None),
            ("LOCKx", None),
            ("LO", None),
            ("LOGx", None),
            ("18446744073709551616.log", None),
            ("184467440737095516150.log", None),
            ("100", None),
            ("100.", None),
            ("100.lop", None),
        ] {
            assert_eq!(parse_file_name(name), expected, "{name}");
        }
        assert_eq!(table_file_name(71), "000071.ldb");
        assert_eq!(sst_table_file_name(5), "000005.sst");
        assert_eq!(log_file_name(1234567), "1234567.log");
        assert_eq!(manifest_file_name(2), "MANIFEST-000002");
    }
}
