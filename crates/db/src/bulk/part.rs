//! A part's record, `PART`: a few lines of text, one per table file, easy to read from any
//! language.
//!
//! ```text
//! leveltable-part 2
//! staging <the staging path's bytes in hex>
//! file 000001.ldb <size> <entries> <CRC32C of the whole file, 8 hex digits> <smallest key in hex> <largest key in hex>
//! ```
//!
//! Version 1 records (`leveltable-part 1`, written before the checksum was recorded) have no
//! CRC32C field; they are still read, and their files are committed without the checksum
//! check.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use leveltable_process::describe_file_type;

use crate::filename::table_file_name;
use crate::storage::open_no_follow;
use crate::{Error, Result};

/// The name of a part's record in its staging directory.
pub const PART_RECORD: &str = "PART";

/// The first line of a part record this version writes.
const PART_HEADER: &str = "leveltable-part 2";

/// The first line of a record of the first version, without checksums.
const PART_HEADER_V1: &str = "leveltable-part 1";

/// The largest record read: about 200 bytes per file, with keys of some kilobytes, for
/// hundreds of thousands of files. A larger file is no record of ours.
const MAX_RECORD_BYTES: u64 = 1 << 30;

/// A table file of a part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartFile {
    /// The file's name in the staging directory (`000001.ldb`).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its entries.
    pub entries: u64,
    /// The CRC32C (Castagnoli) of the whole file; `None` in a version 1 record.
    pub crc32c: Option<u32>,
    /// Its smallest user key.
    pub smallest: Vec<u8>,
    /// Its largest user key.
    pub largest: Vec<u8>,
}

/// The record of a finished part: where its files are and what they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The staging directory holding the files.
    pub staging: PathBuf,
    /// The files in key order.
    pub files: Vec<PartFile>,
}

impl Part {
    /// The entries of all its files.
    pub fn entries(&self) -> u64 {
        self.files
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.entries))
    }

    /// The bytes of all its files.
    pub fn bytes(&self) -> u64 {
        self.files
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.size))
    }

    /// Its smallest user key, if it holds any entry.
    pub fn smallest(&self) -> Option<&[u8]> {
        self.files.first().map(|f| f.smallest.as_slice())
    }

    /// Its largest user key, if it holds any entry.
    pub fn largest(&self) -> Option<&[u8]> {
        self.files.last().map(|f| f.largest.as_slice())
    }

    /// The record as written to `PART`: version 2, or version 1 if a file has no checksum.
    pub fn to_record(&self) -> String {
        let v1 = self.files.iter().any(|f| f.crc32c.is_none());
        let header = if v1 { PART_HEADER_V1 } else { PART_HEADER };
        let mut text = format!(
            "{header}\nstaging {}\n",
            hex(self.staging.as_os_str().as_encoded_bytes())
        );
        for f in &self.files {
            let crc = match f.crc32c {
                Some(crc) if !v1 => format!(" {crc:08x}"),
                _ => String::new(),
            };
            text.push_str(&format!(
                "file {} {} {}{crc} {} {}\n",
                f.name,
                f.size,
                f.entries,
                hex(&f.smallest),
                hex(&f.largest)
            ));
        }
        text
    }

    /// A record from its text, checked: the header, file names of the form `NNNNNN.ldb`
    /// each named once, each file's keys in order, a nonzero entry count no larger than the
    /// file's size (an entry takes at least a byte), and the checksum's form.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the line that is wrong.
    pub fn from_record(text: &str) -> Result<Part> {
        let bad = |line: usize, what: &str| {
            Error::InvalidArgument(format!("not a part record: line {line}: {what}").into())
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let version = match lines.next().map(|(_, l)| l) {
            Some(PART_HEADER) => 2,
            Some(PART_HEADER_V1) => 1,
            _ => {
                return Err(bad(
                    1,
                    "not the header `leveltable-part 2` (or `leveltable-part 1`)",
                ));
            }
        };
        let staging = match lines.next() {
            Some((_, l)) => l.strip_prefix("staging ").and_then(unhex),
            None => None,
        }
        .ok_or_else(|| bad(2, "no staging path"))?;
        let staging = path_from_bytes(staging).ok_or_else(|| bad(2, "a bad staging path"))?;
        let mut files: Vec<PartFile> = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (n, line) in lines {
            let file = parse_file(line, version).ok_or_else(|| {
                bad(
                    n,
                    if version == 1 {
                        "not `file NAME SIZE ENTRIES SMALLEST LARGEST`"
                    } else {
                        "not `file NAME SIZE ENTRIES CRC32C SMALLEST LARGEST`"
                    },
                )
            })?;
            if !plain_file_name(&file.name)
                || file.smallest > file.largest
                || file.entries == 0
                || file.entries > file.size
            {
                return Err(bad(n, "a bad file name, key range or entry count"));
            }
            if !names.insert(file.name.clone()) {
                return Err(bad(n, "a file named twice"));
            }
            files.push(file);
        }
        Ok(Part { staging, files })
    }

    /// Reads the record of the part staged in `staging`; the record's staging path is
    /// replaced by `staging` (the directory may have moved or be mounted elsewhere).
    ///
    /// # Errors
    /// [`Error::Io`] if `staging/PART` cannot be read; [`Error::InvalidArgument`] if it is
    /// not a regular file (a symbolic link is not followed) of at most 1 GiB; as
    /// [`from_record`](Self::from_record), the message starting with the record's path
    /// (`staging/PART: not a part record: line 3: ...`).
    pub fn load(staging: impl AsRef<Path>) -> Result<Part> {
        let staging = staging.as_ref();
        let path = staging.join(PART_RECORD);
        let not_a_record = |what: &str| {
            Error::InvalidArgument(
                format!("{} is {what}, not a part record", path.display()).into(),
            )
        };
        // Looked at before it is opened (a FIFO or a device is never opened), then opened
        // without following a link and checked again through the handle.
        let meta = fs::symlink_metadata(&path).map_err(|source| Error::io(&path, source))?;
        if !meta.is_file() {
            return Err(not_a_record(describe_file_type(meta.file_type())));
        }
        let file = open_no_follow(&path).map_err(|source| Error::io(&path, source))?;
        let meta = file.metadata().map_err(|source| Error::io(&path, source))?;
        if !meta.is_file() {
            return Err(not_a_record(describe_file_type(meta.file_type())));
        }
        let mut text = String::new();
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|source| Error::io(&path, source))?;
        if text.len() as u64 > MAX_RECORD_BYTES {
            return Err(not_a_record("larger than 1 GiB"));
        }
        // The record's own errors name the line; the part and its record file are named
        // here, for a caller given many parts.
        let mut part = Part::from_record(&text).map_err(|e| match e {
            Error::InvalidArgument(what) => {
                Error::InvalidArgument(format!("{}: {what}", path.display()).into())
            }
            other => other,
        })?;
        part.staging = staging.to_owned();
        Ok(part)
    }
}

/// Whether `name` is a part's table file name, `NNNNNN.ldb` as LevelDB names table `N`
/// (six digits at least, more from the millionth on): no path, nothing else.
pub(crate) fn plain_file_name(name: &str) -> bool {
    name.strip_suffix(".ldb")
        .filter(|digits| (6..=20).contains(&digits.len()))
        .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse::<u64>().ok())
        .is_some_and(|n| table_file_name(n) == name)
}

/// A `file …` line of a record of `version`.
fn parse_file(line: &str, version: u32) -> Option<PartFile> {
    let fields: Vec<&str> = line.split(' ').collect();
    let (name, size, entries, crc32c, smallest, largest) = match (version, &fields[..]) {
        (1, ["file", name, size, entries, smallest, largest]) => {
            (name, size, entries, None, smallest, largest)
        }
        (2, ["file", name, size, entries, crc, smallest, largest]) => {
            if crc.len() != 8 || !crc.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let crc = u32::from_str_radix(crc, 16).ok()?;
            (name, size, entries, Some(crc), smallest, largest)
        }
        _ => return None,
    };
    Some(PartFile {
        name: (*name).to_owned(),
        size: size.parse().ok()?,
        entries: entries.parse().ok()?,
        crc32c,
        smallest: unhex(smallest)?,
        largest: unhex(largest)?,
    })
}

/// Bytes as lowercase hex digits (`-` for none, so no field of a record is empty).
fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".to_owned();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`]'s digits, or `None` for anything else.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if text == "-" {
        return Some(Vec::new());
    }
    if text.is_empty() || text.len() % 2 != 0 {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| char::from(c).to_digit(16);
            Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
        })
        .collect()
}

/// A path from the bytes [`Part::to_record`] wrote.
fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(bytes).ok().map(PathBuf::from)
    }
}

#[cfg(test)]
mod tests {
    use super::plain_file_name;
    use crate::bulk::chunk::file_name;

    #[test]
    fn every_name_a_part_gives_its_files_is_a_part_file_name() {
        for index in [0, 1, 999_998, 999_999, 1_000_000, u64::MAX - 1] {
            let name = file_name(index);
            assert!(plain_file_name(&name), "{name}");
        }
        for name in [
            "00001.ldb",
            "0000001.ldb",
            "000001.sst",
            "00000a.ldb",
            "../000001.ldb",
            "000001.ldb ",
            "99999999999999999999.ldb",
        ] {
            assert!(!plain_file_name(name), "{name}");
        }
    }
}
