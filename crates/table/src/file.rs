//! Where tables live: positional reads for the reader, atomic creation for the builder.
//!
//! [`ReadAt`] is the small trait [`Table`](crate::Table) reads through. It is implemented for
//! `std::fs::File` (`pread`), for bytes in memory (`[u8]`, `Vec<u8>`, and through the
//! forwarding impls `&[u8]`, `Box<[u8]>`, `Arc<[u8]>`), for `bytes::Bytes` (feature `bytes`)
//! and for `memmap2::Mmap` (feature `mmap`). In-memory sources hand out their bytes directly,
//! so reading an uncompressed block copies nothing.
//!
//! [`AtomicTableFile`] builds a table under a temporary name in the destination directory and
//! renames it into place only when it is complete and synced.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::NamedTempFile;

use crate::options::BuildOptions;
use crate::table_builder::{BuildSummary, TableBuilder};
use crate::{Error, Result};

/// A byte source that can be read at any offset from many threads at once.
pub trait ReadAt: Send + Sync {
    /// The source's size in bytes.
    ///
    /// # Errors
    /// Whatever the underlying source reports.
    fn size(&self) -> io::Result<u64>;

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// # Errors
    /// [`io::ErrorKind::UnexpectedEof`] if the range runs past the end; any error of the
    /// underlying source.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// All the bytes, if the source holds them in memory. Readers then borrow blocks instead
    /// of copying them. Default: `None`.
    fn as_bytes(&self) -> Option<&[u8]> {
        None
    }
}

/// Reads `buf.len()` bytes at `offset` from an in-memory source.
fn read_slice_at(src: &[u8], buf: &mut [u8], offset: u64) -> io::Result<()> {
    let start = usize::try_from(offset).ok();
    let range = start.and_then(|s| Some(s..s.checked_add(buf.len())?));
    match range.and_then(|r| src.get(r)) {
        Some(bytes) => {
            buf.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "read past the end of the source",
        )),
    }
}

/// Implements [`ReadAt`] for types holding their bytes in memory: reads copy from them, and
/// readers borrow blocks from [`as_bytes`](ReadAt::as_bytes).
macro_rules! read_at_in_memory {
    ($($(#[$attr:meta])* $ty:ty),* $(,)?) => {$(
        $(#[$attr])*
        impl ReadAt for $ty {
            fn size(&self) -> io::Result<u64> {
                Ok(self.len() as u64)
            }
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                read_slice_at(self, buf, offset)
            }
            fn as_bytes(&self) -> Option<&[u8]> {
                Some(self)
            }
        }
    )*};
}

read_at_in_memory!(
    [u8],
    Vec<u8>,
    #[cfg(feature = "bytes")]
    bytes::Bytes,
    #[cfg(feature = "mmap")]
    memmap2::Mmap,
);

macro_rules! forward_read_at {
    ($($ptr:ty),*) => {$(
        impl<T: ReadAt + ?Sized> ReadAt for $ptr {
            #[inline]
            fn size(&self) -> io::Result<u64> {
                (**self).size()
            }
            #[inline]
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_exact_at(buf, offset)
            }
            #[inline]
            fn as_bytes(&self) -> Option<&[u8]> {
                (**self).as_bytes()
            }
        }
    )*};
}

forward_read_at!(&T, Box<T>, Arc<T>);

impl ReadAt for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    #[cfg(unix)]
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }

    #[cfg(windows)]
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match self.seek_read(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "read past the end of the file",
                    ));
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    #[cfg(not(any(unix, windows)))]
    fn read_exact_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "positional file reads are not supported on this platform",
        ))
    }
}

/// Prefix of the temporary files [`AtomicTableFile`] creates next to the destination. A file
/// with this prefix left in a directory is the remains of a build that was killed; it is
/// never a complete table under its final name and may be deleted.
pub const TEMP_FILE_PREFIX: &str = ".leveltable-tmp-";

/// A table being built under a temporary name, renamed to its path only once complete.
///
/// [`finish`](Self::finish) writes the rest of the table, flushes and `fsync`s the file,
/// renames it to its path and `fsync`s the directory, so that after a crash the path holds
/// either nothing (or what it held before) or the complete table. Dropping it unfinished, or
/// any error, removes the temporary file. A process killed mid-build leaves a file named
/// [`TEMP_FILE_PREFIX`]`*` behind.
///
/// ```
/// use leveltable_table::{AtomicTableFile, BuildOptions, ReadOptions, Table};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("000001.ldb");
/// let mut file = AtomicTableFile::create(&path, BuildOptions::default())?;
/// file.add(b"key", b"value")?;
/// assert!(!path.exists());
/// file.finish()?;
/// let table = Table::open(std::fs::File::open(&path)?, ReadOptions::default())?;
/// assert_eq!(table.get(b"key")?.as_deref(), Some(&b"value"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AtomicTableFile {
    builder: TableBuilder<BufWriter<NamedTempFile>>,
    path: PathBuf,
    replace: bool,
}

impl AtomicTableFile {
    /// Starts a table that will be written to `path`, replacing any file there when
    /// [`finish`](Self::finish) succeeds.
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary file cannot be created in `path`'s directory;
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn create(path: impl AsRef<Path>, options: BuildOptions) -> Result<AtomicTableFile> {
        AtomicTableFile::start(path.as_ref(), options, true)
    }

    /// Like [`create`](Self::create), but [`finish`](Self::finish) fails (and removes the
    /// temporary file) if something exists at `path` by then.
    ///
    /// # Errors
    /// As [`create`](Self::create), and [`io::ErrorKind::AlreadyExists`] if `path` exists
    /// already.
    pub fn create_new(path: impl AsRef<Path>, options: BuildOptions) -> Result<AtomicTableFile> {
        let path = path.as_ref();
        if path.symlink_metadata().is_ok() {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", path.display()),
            )));
        }
        AtomicTableFile::start(path, options, false)
    }

    fn start(path: &Path, options: BuildOptions, replace: bool) -> Result<AtomicTableFile> {
        let dir = parent_dir(path);
        let mut temp = tempfile::Builder::new();
        temp.prefix(TEMP_FILE_PREFIX);
        #[cfg(unix)]
        {
            // Like File::create: the umask decides, rather than tempfile's private 0600.
            use std::os::unix::fs::PermissionsExt;
            temp.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let file = temp.tempfile_in(dir)?;
        let builder = TableBuilder::new(BufWriter::with_capacity(64 * 1024, file), options)?;
        Ok(AtomicTableFile {
            builder,
            path: path.to_owned(),
            replace,
        })
    }

    /// Adds an entry; see [`TableBuilder::add`].
    ///
    /// # Errors
    /// As [`TableBuilder::add`].
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.builder.add(key, value)
    }

    /// Closes the current data block; see [`TableBuilder::flush`].
    ///
    /// # Errors
    /// As [`TableBuilder::flush`].
    pub fn flush(&mut self) -> Result<()> {
        self.builder.flush()
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.builder.num_entries()
    }

    /// Bytes of the table written so far.
    pub fn file_size(&self) -> u64 {
        self.builder.file_size()
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        self.builder.get_ref().get_ref().path()
    }

    /// Completes the table and moves it into place (see the type's documentation).
    ///
    /// # Errors
    /// Any error finishing the table, syncing, or renaming ([`io::ErrorKind::AlreadyExists`]
    /// for [`create_new`](Self::create_new) when the path exists). The temporary file is
    /// removed on error.
    pub fn finish(mut self) -> Result<BuildSummary> {
        let summary = self.builder.finish()?;
        let temp = self
            .builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        temp.as_file().sync_all()?;
        let persisted = if self.replace {
            temp.persist(&self.path)
        } else {
            temp.persist_noclobber(&self.path)
        };
        // On error, the PersistError owns the temporary file and removes it when dropped.
        drop(persisted.map_err(|e| Error::Io(e.error))?);
        sync_dir(parent_dir(&self.path))?;
        Ok(summary)
    }

    /// Gives up: the temporary file is removed. Dropping does the same.
    pub fn abandon(self) {}
}

/// Builds a table at `path` atomically: `build` adds the entries, then the table is finished
/// as by [`AtomicTableFile::finish`]. If `build` returns an error, nothing appears at `path`
/// and the error is returned.
///
/// ```
/// use leveltable_table::{create_table, BuildOptions};
/// let dir = tempfile::tempdir()?;
/// let summary = create_table(dir.path().join("t.ldb"), BuildOptions::default(), |t| {
///     for i in 0..100u32 {
///         t.add(format!("key{i:03}").as_bytes(), b"v")?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(summary.entries, 100);
/// # Ok::<(), leveltable_table::Error>(())
/// ```
///
/// # Errors
/// The error of `build`, or any error of [`AtomicTableFile::create`] and
/// [`AtomicTableFile::finish`].
pub fn create_table(
    path: impl AsRef<Path>,
    options: BuildOptions,
    build: impl FnOnce(&mut AtomicTableFile) -> Result<()>,
) -> Result<BuildSummary> {
    let mut file = AtomicTableFile::create(path, options)?;
    build(&mut file)?;
    file.finish()
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename itself.
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReadOptions, Table};

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_FILE_PREFIX))
            .collect()
    }

    #[test]
    fn slices_read_exactly() {
        let data: Vec<u8> = (0..10).collect();
        let mut buf = [0u8; 3];
        data.read_exact_at(&mut buf, 7).unwrap();
        assert_eq!(buf, [7, 8, 9]);
        let e = data.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let e = data.read_exact_at(&mut buf, u64::MAX).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let arc: Arc<[u8]> = data.clone().into();
        assert_eq!(arc.size().unwrap(), 10);
        assert_eq!(arc.as_bytes(), Some(&data[..]));
        let slice: &[u8] = &data;
        assert_eq!(ReadAt::size(&slice).unwrap(), 10);
    }

    #[cfg(feature = "bytes")]
    #[test]
    fn bytes_are_a_source() {
        let data = bytes::Bytes::from_static(b"0123456789");
        let mut buf = [0u8; 2];
        data.read_exact_at(&mut buf, 8).unwrap();
        assert_eq!(&buf, b"89");
        assert_eq!(data.as_bytes(), Some(&b"0123456789"[..]));
    }

    #[cfg(feature = "mmap")]
    #[test]
    fn maps_are_a_source() {
        // An anonymous map is safe to create; a file map needs `unsafe` from the caller.
        let mut map = memmap2::MmapMut::map_anon(10).unwrap();
        map.copy_from_slice(b"0123456789");
        let map = map.make_read_only().unwrap();
        let mut buf = [0u8; 3];
        map.read_exact_at(&mut buf, 1).unwrap();
        assert_eq!(&buf, b"123");
        assert_eq!(ReadAt::size(&map).unwrap(), 10);
        assert!(map.read_exact_at(&mut buf, 9).is_err());
    }

    #[test]
    fn files_read_at_offsets() {
        let mut f = tempfile::tempfile().unwrap();
        io::Write::write_all(&mut f, b"0123456789").unwrap();
        let mut buf = [0u8; 4];
        f.read_exact_at(&mut buf, 3).unwrap();
        assert_eq!(&buf, b"3456");
        assert_eq!(ReadAt::size(&f).unwrap(), 10);
        assert!(f.as_bytes().is_none());
        let e = f.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn atomic_file_appears_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
        file.add(b"a", b"1").unwrap();
        let temp = file.temp_path().to_owned();
        assert!(temp.exists());
        assert!(
            temp.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(TEMP_FILE_PREFIX)
        );
        assert!(!path.exists());
        let summary = file.finish().unwrap();
        assert!(!temp.exists());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), summary.file_size);
        let table = Table::open(File::open(&path).unwrap(), ReadOptions::default()).unwrap();
        assert_eq!(table.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn abandoned_and_failed_builds_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
        file.add(b"a", b"1").unwrap();
        file.abandon();
        assert!(leftovers(dir.path()).is_empty());

        let err = create_table(&path, BuildOptions::default(), |t| {
            t.add(b"b", b"1")?;
            t.add(b"a", b"1")
        })
        .unwrap_err();
        assert!(matches!(err, Error::KeyOutOfOrder { .. }));
        assert!(!path.exists());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn replace_and_no_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        std::fs::write(&path, b"old").unwrap();
        let err = AtomicTableFile::create_new(&path, BuildOptions::default())
            .err()
            .unwrap();
        assert!(matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::AlreadyExists));

        // The path appears while building: finish refuses and cleans up.
        let other = dir.path().join("u.ldb");
        let file = AtomicTableFile::create_new(&other, BuildOptions::default()).unwrap();
        std::fs::write(&other, b"raced").unwrap();
        let err = file.finish().unwrap_err();
        assert!(matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::AlreadyExists));
        assert_eq!(std::fs::read(&other).unwrap(), b"raced");
        assert!(leftovers(dir.path()).is_empty());

        create_table(&path, BuildOptions::default(), |t| t.add(b"k", b"v")).unwrap();
        let table = Table::open(File::open(&path).unwrap(), ReadOptions::default()).unwrap();
        assert_eq!(table.get(b"k").unwrap(), Some(b"v".to_vec()));
    }

    #[test]
    fn relative_paths_use_the_current_directory() {
        assert_eq!(parent_dir(Path::new("t.ldb")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/t.ldb")), Path::new("/a"));
    }
}
