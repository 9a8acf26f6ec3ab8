//! Bulk-building a database in one process: [`DbBuilder`] builds one part into a staging
//! directory beside the database and commits it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_process::TemporaryDir;
use leveltable_table::Comparator;

use super::commit::{CommitSummary, commit_built, refuse_dangling_link};
use super::options::BulkOptions;
use super::part_builder::PartBuilder;
use crate::filename::{named, parent_dir};
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// Creates a LevelDB database from entries added in strictly increasing key order: table
/// files of about [`BulkOptions::max_file_size`] built by [`BulkOptions::threads`] threads
/// (the same files whatever the number), then a MANIFEST and CURRENT. LevelDB 1.23 opens the
/// result without compacting it, reads every key, and keeps writing to it.
///
/// The directory must not exist or be empty. Files are staged in a hidden directory beside
/// it; an error or an abandoned build leaves no database, and an interrupted one leaves a
/// directory without `CURRENT`, which no reader takes for a database. The staging directory
/// is registered with [`leveltable_table::atomic_file`], so a program that calls
/// [`remove_temporaries`](leveltable_process::remove_temporaries) on a signal
/// removes it too.
///
/// ```
/// use leveltable_db::{BulkOptions, DbBuilder};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("db");
/// let mut builder = DbBuilder::create(&path, BulkOptions::default())?;
/// for i in 0..1000u32 {
///     builder.add(format!("key{i:04}").as_bytes(), b"value")?;
/// }
/// let summary = builder.finish()?;
/// assert_eq!((summary.entries, summary.tables), (1000, 1));
/// assert!(path.join("CURRENT").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbBuilder {
    dir: PathBuf,
    file_system: Arc<dyn FileSystem>,
    part: PartBuilder,
    staging: TemporaryDir,
    /// The user comparator ordering the keys; `None` for bytewise.
    order: Option<Arc<dyn Comparator>>,
}

impl std::fmt::Debug for DbBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbBuilder")
            .field("dir", &self.dir)
            .field("part", &self.part)
            .field("staging", &self.staging)
            .field("order", &self.order.as_ref().map(|c| c.name()))
            .finish_non_exhaustive()
    }
}

impl DbBuilder {
    /// A builder for the database `dir`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad options, or a `dir` that exists and is not an
    /// empty directory; [`Error::FileOp`] if the staging directory cannot be made beside it.
    pub fn create(dir: impl AsRef<Path>, options: BulkOptions) -> Result<DbBuilder> {
        DbBuilder::create_on(Arc::new(LocalFileSystem), dir, options)
    }

    /// [`create`](Self::create), making the table files and the database through
    /// `file_system` (a test's, say, that records what a power loss would keep). The staging
    /// directory itself is made on the local file system.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub fn create_on(
        file_system: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        options: BulkOptions,
    ) -> Result<DbBuilder> {
        DbBuilder::create_ordered(file_system, dir, options, None)
    }

    /// [`create_on`](Self::create_on), for keys ordered by the user comparator `order`,
    /// whose name the MANIFEST records (bytewise if `None`).
    pub(crate) fn create_ordered(
        file_system: Arc<dyn FileSystem>,
        dir: impl AsRef<Path>,
        options: BulkOptions,
        order: Option<Arc<dyn Comparator>>,
    ) -> Result<DbBuilder> {
        let dir = named(dir.as_ref())?;
        check_target(&dir)?;
        let parent = parent_dir(&dir).to_owned();
        let name = dir
            .file_name()
            .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
        let staging = TemporaryDir::new_in(&parent, &format!(".leveltable-tmp-{name}-"))
            .map_err(|e| Error::op("cannot create a directory in", &parent, e))?;
        let part = PartBuilder::create_ordered(
            Arc::clone(&file_system),
            staging.path().join("part"),
            options,
            order.clone(),
        )?;
        Ok(DbBuilder {
            dir,
            file_system,
            part,
            staging,
            order,
        })
    }

    /// Adds an entry; its key must sort strictly after the previous one (bytewise).
    ///
    /// # Errors
    /// As [`PartBuilder::add`].
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.part.add(key, value)
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.part.entries()
    }

    /// The hidden directory beside the database where the files are staged until the
    /// commit (for a program that removes it when interrupted by a signal).
    pub fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// Builds the last files and commits the database, as [`commit`](crate::commit())
    /// does but for one check: the files' bytes are not read again to recompute the CRC32C
    /// this builder computed as it wrote them (their type, size and first and last keys are
    /// checked).
    ///
    /// # Errors
    /// As [`PartBuilder::finish`] and [`commit`](crate::commit()); nothing is left at the
    /// database's path.
    pub fn finish(self) -> Result<CommitSummary> {
        let part = self.part.finish()?;
        let summary = commit_built(
            &*self.file_system,
            &self.dir,
            std::slice::from_ref(&part),
            self.order.as_deref(),
            None,
        )?;
        drop(self.staging);
        Ok(summary)
    }

    /// Drops the build and its staged files.
    pub fn abandon(self) {}
}

/// Refuses a target that exists and is not an empty directory, before any work.
fn check_target(dir: &Path) -> Result<()> {
    refuse_dangling_link(dir)?;
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::InvalidArgument(
            format!(
                "{} is not empty: a database is built only in a new or empty directory",
                dir.display()
            )
            .into(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            path: dir.to_owned(),
            source,
        }),
    }
}
