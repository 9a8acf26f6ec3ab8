//! Checks of the staged tables against their part records, made before a commit creates or
//! moves anything: each file is a regular file (never followed through a link, never a FIFO
//! or a device), of its recorded size and CRC32C, a table whose real first and last keys are
//! the recorded ones; and the real key ranges of all files, in the order given, increase
//! without overlapping.

use std::cmp::Ordering;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use leveltable_process::describe_file_type;
use leveltable_table::{Comparator, Table};

use crate::bulk::part::{Part, PartFile, plain_file_name};
use crate::dbformat::{ParsedInternalKey, ValueType, ldb_read_options};
use crate::writer::file_system::{FileSystem, ReadableFile};
use crate::{Error, Result};

/// Whether a check reads each staged file's bytes to compare their CRC32C with the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bytes {
    /// Read and compared: the record comes from elsewhere.
    Read,
    /// Not read again where the record has a CRC32C: this process wrote the file and made
    /// the record, computing the checksum of the bytes as it wrote them.
    Recorded,
}

/// A staged table, checked. It is not held open (a commit may have more files than a
/// process may open): the commit opens it again and checks that it is the same file.
#[derive(Debug)]
pub(super) struct Staged {
    /// Its path in the staging directory.
    pub path: PathBuf,
    /// The device and inode it was checked at.
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// The CRC32C of its bytes, as read during the check.
    pub crc: u32,
    pub entries: u64,
    /// Its first and last internal keys, as read from the table.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// Checks every file of `parts` (see the module documentation) and returns them in order,
/// calling `checked` with each file's size once it is checked.
/// The key ranges must increase by `order` (bytewise if `None`). With `last_sequence`
/// `None` each file's first and last keys must be values at sequence 0 (a bulk build's);
/// else of any type at a sequence up to it (tables a repair copied).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the part, the file and what differs from its record;
/// [`Error::Io`] for a file that cannot be read.
pub(super) fn check_parts(
    fsys: &dyn FileSystem,
    parts: &[Part],
    bytes: Bytes,
    order: Option<&dyn Comparator>,
    last_sequence: Option<u64>,
    checked: &mut dyn FnMut(u64),
) -> Result<Vec<Staged>> {
    let mut staged = Vec::new();
    // One buffer for every file's bytes: small enough that the checksum reads what the
    // read just copied from the cache it is in, allocated (and zeroed) once.
    let mut buf = match bytes {
        Bytes::Read => vec![0u8; CHECKSUM_BUFFER],
        Bytes::Recorded => Vec::new(),
    };
    // The last file's part index, name and largest user key.
    let mut previous: Option<(usize, String, Vec<u8>)> = None;
    for (i, part) in parts.iter().enumerate() {
        for file in &part.files {
            let staged_file = check_file(fsys, i, part, file, bytes, last_sequence, &mut buf)?;
            checked(staged_file.size);
            let first = user_key(&staged_file.smallest);
            if let Some((j, name, end)) = &previous {
                let in_order = match order {
                    None => first > end.as_slice(),
                    Some(order) => order.compare(first, end) == Ordering::Greater,
                };
                if !in_order {
                    return Err(refused(
                        i,
                        part,
                        &file.name,
                        format!(
                            "its first key {} does not sort after the last key {} of part \
                             {j}'s {name}: parts out of order or overlapping",
                            show(first),
                            show(end)
                        ),
                    ));
                }
            }
            previous = Some((
                i,
                file.name.clone(),
                user_key(&staged_file.largest).to_vec(),
            ));
            staged.push(staged_file);
        }
    }
    Ok(staged)
}

/// The refusal of part `i`'s file `name`: `part 0 (<staging>): 000001.ldb: <what>`.
fn refused(i: usize, part: &Part, name: &str, what: String) -> Error {
    Error::InvalidArgument(
        format!(
            "cannot commit: part {i} ({}): {name}: {what}; nothing was moved",
            part.staging.display()
        )
        .into(),
    )
}

/// A user key from an internal key that [`check_file`] parsed.
fn user_key(internal: &[u8]) -> &[u8] {
    ParsedInternalKey::parse(internal).map_or(internal, |k| k.user_key)
}

fn check_file(
    fsys: &dyn FileSystem,
    i: usize,
    part: &Part,
    file: &PartFile,
    bytes: Bytes,
    last_sequence: Option<u64>,
    buf: &mut [u8],
) -> Result<Staged> {
    let bad = |what: String| refused(i, part, &file.name, what);
    if !plain_file_name(&file.name) {
        return Err(bad(
            "not a table file name of a part (NNNNNN.ldb)".to_owned()
        ));
    }
    let path = part.staging.join(&file.name);
    // Looked at first without following a link or opening it: opening a device or a FIFO
    // may have effects, or wait.
    let meta = fsys
        .symlink_metadata(&path)
        .map_err(|source| Error::io(&path, source))?;
    if !meta.is_file() {
        return Err(bad(format!(
            "is {}, not a regular file",
            describe_file_type(meta.file_type())
        )));
    }
    let handle = fsys
        .open_read(&path)
        .map_err(|source| Error::io(&path, source))?;
    // What was opened, which may have been replaced since the look.
    let meta = handle
        .metadata()
        .map_err(|source| Error::io(&path, source))?;
    if !meta.is_file() {
        return Err(bad(format!(
            "is {}, not a regular file",
            describe_file_type(meta.file_type())
        )));
    }
    if meta.len() != file.size {
        return Err(bad(format!(
            "is {} bytes, its part record says {}",
            meta.len(),
            file.size
        )));
    }
    let crc = match (bytes, file.crc32c) {
        (Bytes::Recorded, Some(recorded)) => recorded,
        _ => {
            let (read, crc) =
                checksum(&*handle, meta.len(), buf).map_err(|source| Error::io(&path, source))?;
            if read != file.size {
                return Err(bad(format!(
                    "{read} bytes were read of the {} its record says: it changed while checked",
                    file.size
                )));
            }
            if let Some(recorded) = file.crc32c {
                if crc != recorded {
                    return Err(bad(format!(
                        "its CRC32C is {crc:08x}, its record says {recorded:08x}"
                    )));
                }
            }
            crc
        }
    };
    let (smallest, largest) = first_and_last(&handle).map_err(|e| match e {
        KeysError::Io(source) => Error::io(&path, source),
        KeysError::NotATable(what) => bad(format!("not a readable table: {what}")),
    })?;
    for (which, key, recorded) in [
        ("first", &smallest, &file.smallest),
        ("last", &largest, &file.largest),
    ] {
        let parsed = ParsedInternalKey::parse(key)
            .map_err(|_| bad(format!("its {which} key is not an internal key")))?;
        if let Some(last) = last_sequence {
            if parsed.sequence > last {
                return Err(bad(format!(
                    "its {which} key has sequence {}, above the database's last sequence {last}",
                    parsed.sequence
                )));
            }
        } else if parsed.sequence != 0 || parsed.value_type != ValueType::Value {
            return Err(bad(format!(
                "its {which} key has sequence {} and is a {}, not a bulk-built value at \
                 sequence 0",
                parsed.sequence,
                if parsed.value_type == ValueType::Value {
                    "value"
                } else {
                    "deletion"
                }
            )));
        }
        if parsed.user_key != recorded.as_slice() {
            return Err(bad(format!(
                "its {which} key is {}, its record says {}",
                show(parsed.user_key),
                show(recorded)
            )));
        }
    }
    Ok(Staged {
        path,
        dev: dev_ino(&meta).0,
        ino: dev_ino(&meta).1,
        size: file.size,
        crc,
        entries: file.entries,
        smallest,
        largest,
    })
}

/// Bytes read at a time by [`checksum`].
const CHECKSUM_BUFFER: usize = 256 << 10;

/// The CRC32C of the `size` bytes of `file` from its start, read through `buf`, and the
/// bytes it holds as far as they were read: fewer than `size` if it ended sooner, one more
/// if it goes on past `size` (it changed since its size was taken).
fn checksum(file: &dyn ReadableFile, size: u64, buf: &mut [u8]) -> io::Result<(u64, u32)> {
    let mut crc = 0u32;
    let mut read = 0u64;
    while read < size {
        let n = buf
            .len()
            .min(usize::try_from(size - read).unwrap_or(usize::MAX));
        match file.read_exact_at(&mut buf[..n], read) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok((read, crc)),
            Err(e) => return Err(e),
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        read += n as u64;
    }
    match file.read_exact_at(&mut [0u8], size) {
        Ok(()) => Ok((size + 1, crc)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok((size, crc)),
        Err(e) => Err(e),
    }
}

/// Why a staged file's keys could not be read: it could not be read at all, or it is not
/// a table.
enum KeysError {
    Io(io::Error),
    NotATable(String),
}

impl From<leveltable_table::Error> for KeysError {
    fn from(e: leveltable_table::Error) -> KeysError {
        match e {
            leveltable_table::Error::Io(e) => KeysError::Io(e),
            other => KeysError::NotATable(other.to_string()),
        }
    }
}

/// The first and last internal keys of the table `file`.
fn first_and_last(
    file: &Arc<dyn ReadableFile>,
) -> std::result::Result<(Vec<u8>, Vec<u8>), KeysError> {
    let table = Table::open(Arc::clone(file), ldb_read_options())?;
    let mut cursor = table.iter();
    cursor.seek_to_first();
    cursor.status()?;
    if !cursor.valid() {
        return Err(KeysError::NotATable("it holds no entry".to_owned()));
    }
    let first = cursor.key().to_vec();
    cursor.seek_to_last();
    cursor.status()?;
    if !cursor.valid() {
        return Err(KeysError::NotATable("it holds no last entry".to_owned()));
    }
    Ok((first, cursor.key().to_vec()))
}

/// The device and inode of a file, to tell whether two names are one file.
pub(super) fn dev_ino(meta: &fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// A key for messages: text when printable, else hex; its first 64 bytes and its length
/// when longer.
pub(super) fn show(key: &[u8]) -> String {
    const SHOWN: usize = 64;
    let head = &key[..key.len().min(SHOWN)];
    let mut text = if head.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(head))
    } else {
        let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    };
    if key.len() > SHOWN {
        text.push_str(&format!("… ({} bytes)", key.len()));
    }
    text
}
