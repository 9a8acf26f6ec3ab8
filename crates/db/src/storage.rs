//! Where a database's files are: a local directory, or anything else that can list its
//! names, read a file whole and open a table for positional reads (an object-store prefix,
//! through the `leveltable-object` crate).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::table_source::TableSource;

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

    /// The whole contents of the file `name`.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; whatever reading reports.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;

    /// The table file `name`, for positional reads (memory-mapped if `memory_map` and the
    /// storage can).
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is none; whatever opening reports.
    fn open_table(&self, name: &str, memory_map: bool) -> io::Result<TableSource>;

    /// What changes whenever a writer changes the set of live files (CURRENT's contents
    /// and the MANIFEST's size), for storages another process may write while we open;
    /// `None` when unknown, and opening then makes one attempt.
    fn fingerprint(&self) -> Option<(Vec<u8>, u64)> {
        None
    }
}

/// A database in a local directory.
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
        fs::read(self.dir.join(name))
    }

    fn open_table(&self, name: &str, memory_map: bool) -> io::Result<TableSource> {
        TableSource::open(File::open(self.dir.join(name))?, memory_map)
    }

    fn fingerprint(&self) -> Option<(Vec<u8>, u64)> {
        let current = fs::read(self.dir.join("CURRENT")).ok()?;
        let name = String::from_utf8_lossy(current.strip_suffix(b"\n")?).into_owned();
        let len = fs::metadata(self.dir.join(name)).ok()?.len();
        Some((current, len))
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
}
