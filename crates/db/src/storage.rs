//! Where a database's files are: a local directory, or anything else that can list its
//! names, read a file whole and open a table for positional reads (an object-store prefix,
//! through the `leveltable-object` crate).
//!
//! Every read is bounded: a file is read whole only up to a limit the caller gives
//! ([`CURRENT_MAX_BYTES`] for `CURRENT`, [`MAX_READ_BYTES`] for a MANIFEST or a log), and a
//! local file is read only if it is a regular file, at most the size its handle had at open.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use leveltable_table::{Error as TableError, ReadOptions, Table};

use crate::regular_file::{check_regular, without_waiting};
use crate::table_source::TableSource;

/// The most bytes of `CURRENT` read: it holds one file name and a newline, so a longer
/// `CURRENT` is corrupt.
pub const CURRENT_MAX_BYTES: u64 = 4 << 10;

/// The most bytes of a MANIFEST or a log read whole. LevelDB switches to a new log once
/// its memtable passes `write_buffer_size`, which it caps at 1 GiB, and rewrites the
/// MANIFEST at each open; a larger file is refused rather than read into memory.
pub const MAX_READ_BYTES: u64 = 2 << 30;

/// The error for a file (or object) of `size` bytes, more than `limit`, read whole: of kind
/// [`io::ErrorKind::FileTooLarge`].
pub fn too_large(size: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("{size} bytes, more than the {limit} bytes read whole"),
    )
}

/// Opens the local file `path` for reading, refusing anything but a regular file: a FIFO
/// (whose open would wait for a writer, and whose reads would wait for data), a device
/// (`/dev/zero` never ends), a socket or a directory, also behind a symbolic link. The
/// file type is checked before the open and again on the open handle, and the open does
/// not block (`O_NONBLOCK`, which does nothing to reads of a regular file), so a file
/// swapped for a FIFO in between is refused too. Returns the file and its metadata as the
/// handle saw it at open.
///
/// # Errors
/// [`io::ErrorKind::NotFound`] if there is none; [`io::ErrorKind::IsADirectory`] for a
/// directory; [`io::ErrorKind::InvalidInput`] for another kind of file; whatever opening
/// reports.
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    check_regular(&fs::metadata(path)?)?;
    let file = read_without_waiting(false).open(path)?;
    let metadata = file.metadata()?;
    check_regular(&metadata)?;
    Ok((file, metadata))
}

/// Opens `path` for reading without following a final symbolic link and without waiting
/// on a FIFO; the caller checks what it opened.
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    read_without_waiting(true).open(path)
}

/// Options that open for reading [`without_waiting`].
fn read_without_waiting(no_follow: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    without_waiting(options.read(true), no_follow);
    options
}

/// What stands at `path`, where a table file should be, when it is not a file that can be
/// read: a dangling symbolic link (naming its target, kind [`io::ErrorKind::NotFound`]) or
/// a directory (kind [`io::ErrorKind::IsADirectory`]); `None` otherwise.
pub fn table_path_problem(path: &Path) -> Option<io::Error> {
    let link = fs::symlink_metadata(path).ok()?;
    if link.file_type().is_symlink() && fs::metadata(path).is_err() {
        let target =
            fs::read_link(path).map_or_else(|_| "?".to_owned(), |t| t.display().to_string());
        return Some(io::Error::new(
            io::ErrorKind::NotFound,
            format!("a dangling symbolic link: its target {target} does not exist"),
        ));
    }
    fs::metadata(path)
        .is_ok_and(|m| m.is_dir())
        .then(|| io::Error::new(io::ErrorKind::IsADirectory, "a directory, not a table file"))
}

/// Reads the regular file `path` whole: at most `limit` bytes, and at most the size its
/// handle had at open (a file that grows meanwhile is read to that size).
///
/// # Errors
/// As [`open_regular`]; [`io::ErrorKind::FileTooLarge`] (see [`too_large`]) for a file
/// larger than `limit`, before anything is read; whatever reading reports.
pub(crate) fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, metadata) = open_regular(path)?;
    let size = metadata.len();
    if size > limit {
        return Err(too_large(size, limit));
    }
    // `size` is the handle's own size, checked against `limit`: no larger buffer is ever
    // needed, and `take` stops the read there.
    let mut data = Vec::with_capacity(usize::try_from(size).map_err(|_| too_large(size, limit))?);
    file.take(size).read_to_end(&mut data)?;
    Ok(data)
}

/// The names in the local directory `dir` ([`LocalDir::list`]), an error naming it.
pub(crate) fn list_dir(dir: &Path) -> crate::Result<Vec<String>> {
    LocalDir::new(dir)
        .list()
        .map_err(|e| crate::Error::io(dir, e))
}

/// A file read while a writer appends to it (a refresh's logs and MANIFEST): read and
/// seek as a file, and asked its size now.
pub trait TailFile: Read + Seek + Send + Sync {
    /// The file's size now.
    ///
    /// # Errors
    /// The system's.
    fn size(&self) -> io::Result<u64>;
}

impl TailFile for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

/// The files of one database. Errors for a missing file have kind
/// [`io::ErrorKind::NotFound`].
pub trait Storage: Send + Sync {
    /// The directory or prefix, as messages and [`Db::path`](crate::Db::path) show it.
    fn path(&self) -> PathBuf;

    /// The names of the files.
    ///
    /// # Errors
    /// Whatever listing reports.
    fn list(&self) -> io::Result<Vec<String>>;

    /// The whole contents of the file `name`, of at most [`MAX_READ_BYTES`]; the database
    /// reads through [`read_bounded`](Self::read_bounded).
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; whatever reading reports.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;

    /// The whole contents of the file `name`, which must hold at most `limit` bytes.
    /// Implementations check the size before they read and never allocate for more than
    /// `limit` bytes, nor for more than have arrived. The default reads through
    /// [`read`](Self::read) and checks the length after.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; [`io::ErrorKind::FileTooLarge`] (see
    /// [`too_large`]) if it holds more than `limit` bytes; whatever reading reports.
    fn read_bounded(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        let data = self.read(name)?;
        if data.len() as u64 > limit {
            return Err(too_large(data.len() as u64, limit));
        }
        Ok(data)
    }

    /// The file `name` (a log), to be read from its start to its end once. The default reads
    /// it whole through [`read_bounded`](Self::read_bounded) with `limit`; a local
    /// directory reads the file as it goes, up to the size its handle had at open, holding
    /// none of it but what the caller keeps (no limit applies).
    ///
    /// # Errors
    /// As [`read_bounded`](Self::read_bounded), for the open (or whole read); reading from
    /// the stream reports the system's errors.
    fn read_stream(&self, name: &str, limit: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(io::Cursor::new(self.read_bounded(name, limit)?)))
    }

    /// The table file `name`, for positional reads (memory-mapped if `memory_map` and the
    /// storage can).
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; whatever opening reports.
    fn open_table(&self, name: &str, memory_map: bool) -> io::Result<TableSource>;

    /// Opens the table file `name` with `options`: the outer error when the file cannot be
    /// opened (as [`open_table`](Self::open_table)), the inner one when it is not a
    /// well-formed table. The default feeds the table's open plan from
    /// [`open_table`](Self::open_table)'s source with positional reads; a storage whose reads
    /// are requests (an object store) feeds the plan its own way, fetching the metadata in as
    /// few requests as it can.
    ///
    /// # Errors
    /// As [`open_table`](Self::open_table).
    fn open_table_with(
        &self,
        name: &str,
        memory_map: bool,
        options: &ReadOptions,
    ) -> io::Result<Result<Table<TableSource>, TableError>> {
        let source = self.open_table(name, memory_map)?;
        Ok(Table::open(source, options.clone()))
    }

    /// What changes whenever a writer changes the set of live files (CURRENT's contents
    /// and the MANIFEST's size), for storages another process may write while we open;
    /// `None` when unknown, and opening then makes one attempt.
    fn fingerprint(&self) -> Option<(Vec<u8>, u64)> {
        None
    }

    /// The file `name`, open to be read as its writer appends to it (what a refresh of a
    /// read-only database reads: the MANIFEST and the logs). By default unsupported: a
    /// database in such a storage cannot be refreshed.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; whatever opening reports.
    fn open_tail(&self, name: &str) -> io::Result<Box<dyn TailFile>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{name} cannot be read as it grows here"),
        ))
    }

    /// When a file was last created, renamed or deleted (a local directory's modification
    /// time), so that a refresh lists the names again only after a change; `None` when
    /// unknown (a refresh then lists them each time). By default `None`.
    ///
    /// # Errors
    /// The system's.
    fn modified(&self) -> io::Result<Option<SystemTime>> {
        Ok(None)
    }
}

/// A database in a local directory. Only regular files are read (see [`open_regular`]).
#[derive(Debug, Clone)]
pub struct LocalDir {
    dir: PathBuf,
}

impl LocalDir {
    /// The directory `dir`.
    pub fn new(dir: impl AsRef<Path>) -> LocalDir {
        LocalDir {
            dir: dir.as_ref().to_path_buf(),
        }
    }
}

impl Storage for LocalDir {
    fn path(&self) -> PathBuf {
        self.dir.clone()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.read_bounded(name, MAX_READ_BYTES)
    }

    fn read_bounded(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        read_regular(&self.dir.join(name), limit)
    }

    fn read_stream(&self, name: &str, _limit: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        let (file, metadata) = open_regular(&self.dir.join(name))?;
        // The size at open: what a writer appends later is not read.
        Ok(Box::new(file.take(metadata.len())))
    }

    fn open_table(&self, name: &str, memory_map: bool) -> io::Result<TableSource> {
        let (file, _) = open_regular(&self.dir.join(name))?;
        TableSource::open(file, memory_map)
    }

    fn fingerprint(&self) -> Option<(Vec<u8>, u64)> {
        let current = self.read_bounded("CURRENT", CURRENT_MAX_BYTES).ok()?;
        let name = String::from_utf8_lossy(current.strip_suffix(b"\n")?).into_owned();
        let len = fs::metadata(self.dir.join(name)).ok()?.len();
        Some((current, len))
    }

    fn open_tail(&self, name: &str) -> io::Result<Box<dyn TailFile>> {
        let (file, _) = open_regular(&self.dir.join(name))?;
        Ok(Box::new(file))
    }

    fn modified(&self) -> io::Result<Option<SystemTime>> {
        fs::metadata(&self.dir)?.modified().map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lists_reads_and_opens() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("CURRENT"), b"MANIFEST-000002\n").unwrap();
        fs::write(dir.path().join("MANIFEST-000002"), b"abc").unwrap();
        let s = LocalDir::new(dir.path());
        let mut names = s.list().unwrap();
        names.sort();
        assert_eq!(names, ["CURRENT", "MANIFEST-000002"]);
        assert_eq!(s.read("MANIFEST-000002").unwrap(), b"abc");
        assert_eq!(s.read("nope").unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(matches!(
            s.open_table("nope", false),
            Err(e) if e.kind() == io::ErrorKind::NotFound
        ));
        assert_eq!(s.fingerprint(), Some((b"MANIFEST-000002\n".to_vec(), 3)));
    }

    /// A file longer than the limit is refused before it is read, by its size at open.
    #[test]
    fn reads_stop_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
        let s = LocalDir::new(dir.path());
        assert_eq!(s.read_bounded("f", 100).unwrap().len(), 100);
        let e = s.read_bounded("f", 99).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("100 bytes"), "{e}");
        let e = s.read_bounded("", 99).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
    }

    /// The default `read_bounded` of a storage that only reads whole checks the length.
    #[test]
    fn the_default_bounded_read_checks_the_length() {
        struct Whole;
        impl Storage for Whole {
            fn path(&self) -> PathBuf {
                PathBuf::new()
            }
            fn list(&self) -> io::Result<Vec<String>> {
                Ok(Vec::new())
            }
            fn read(&self, _: &str) -> io::Result<Vec<u8>> {
                Ok(vec![0; 10])
            }
            fn open_table(&self, _: &str, _: bool) -> io::Result<TableSource> {
                Err(io::ErrorKind::NotFound.into())
            }
        }
        assert_eq!(Whole.read_bounded("x", 10).unwrap().len(), 10);
        assert_eq!(
            Whole.read_bounded("x", 9).unwrap_err().kind(),
            io::ErrorKind::FileTooLarge
        );
    }
}
