//! One version of a database, as an open read it, and opening exactly that version again
//! elsewhere (another process, another machine seeing the same files): what a distributed
//! read plans on and what each of its tasks opens, so that all of them read the same state
//! while a writer goes on.
//!
//! A version is the tables of each level (as the MANIFEST listed them) and the logs with the
//! number of bytes replayed from each. Logs only grow at their end and tables never change
//! once written, so replaying the same prefix of each log and reading the same tables gives
//! the same entries, whatever was appended since. A file of the version that has gone since
//! (a compaction deleted the table, a flush the log) makes the version unreadable: the open,
//! or the read of the table, fails naming it, never reading a newer state instead.
//!
//! An open may be given only some of the version's tables: a task reading a key range needs
//! only those whose key ranges overlap it.

use std::path::Path;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::db::{Db, table_cache};
use crate::filename::{log_file_name, table_file_name};
use crate::options::{DbOptions, DbProperties, TableInfo};
use crate::recovery::replay_log;
use crate::storage::{MAX_READ_BYTES, Storage};
use crate::version::{Origin, Source, file_sources};
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// One version of a database: what [`Db::open_version`] needs to open it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedVersion {
    /// The user comparator's name, as the MANIFEST records it.
    pub comparator: String,
    /// The newest sequence number of the version.
    pub last_sequence: u64,
    /// The logs replayed, in order: each log's number and the bytes replayed from its start.
    pub logs: Vec<(u64, u64)>,
    /// The tables of each level (all of them, or those a reader needs).
    pub levels: Vec<Vec<TableInfo>>,
}

impl TableInfo {
    /// The table `number` of `size` bytes at `level`, holding the internal keys from
    /// `smallest` to `largest`: as a [`PinnedVersion`] received from elsewhere lists it.
    pub fn new(
        number: u64,
        level: Option<usize>,
        size: u64,
        smallest: Vec<u8>,
        largest: Vec<u8>,
    ) -> TableInfo {
        TableInfo {
            number,
            level,
            size,
            smallest,
            largest,
        }
    }
}

impl Db {
    /// The version this database was opened at: its tables per level, the logs and how
    /// many bytes of each were replayed, and the last sequence.
    pub fn pinned_version(&self) -> PinnedVersion {
        let p = &self.properties;
        PinnedVersion {
            comparator: p.comparator.clone(),
            last_sequence: p.last_sequence,
            logs: p.logs.iter().map(|l| (l.number, l.size)).collect(),
            levels: p.levels.clone(),
        }
    }

    /// Opens the database in `path` at `version` (see [`open_version_in`](Self::open_version_in)).
    ///
    /// # Errors
    /// As [`open_version_in`](Self::open_version_in).
    pub fn open_version(
        path: impl AsRef<Path>,
        version: &PinnedVersion,
        options: DbOptions,
    ) -> Result<Db> {
        let storage = options.file_system.storage(path.as_ref());
        Db::open_version_in(storage, version, options)
    }

    /// Opens the database whose files `storage` holds at `version`, which an open of it
    /// (here or elsewhere) reported with [`pinned_version`](Self::pinned_version), perhaps
    /// with only some of its tables: `CURRENT` and the MANIFEST are not read; each log is
    /// replayed up to the bytes the version names, whatever was appended since; tables open
    /// lazily, as in [`open`](Self::open). Reads see the version's state and nothing newer.
    ///
    /// # Errors
    /// [`Error::MissingFile`] naming a table or log of the version that the directory no
    /// longer has (a compaction or a flush removed it since), or a log shorter than the
    /// bytes the version replayed from it; [`Error::UnknownComparator`] if the options
    /// provide no comparator of the version's name; [`Error::Corruption`] for a log
    /// record that does not replay, when [`DbOptions::paranoid_checks`]; [`Error::Io`]
    /// if reading fails.
    pub fn open_version_in(
        storage: Arc<dyn Storage>,
        version: &PinnedVersion,
        options: DbOptions,
    ) -> Result<Db> {
        let dir = storage.path();
        let user = comparator_named(&options, &version.comparator)?;
        let names = storage.list().map_err(|e| Error::io(&dir, e))?;
        let names: std::collections::HashSet<String> = names.into_iter().collect();
        let present = |name: &str| names.contains(name);
        let gone = |file: String, what: &str| Error::MissingFile {
            file: file.into(),
            what: format!("{what} of the version of {} being read", dir.display()).into(),
        };
        for t in version.levels.iter().flatten() {
            let name = table_file_name(t.number);
            // LevelDB's older tables are named NNNNNN.sst.
            let sst = format!("{:06}.sst", t.number);
            if !present(&name) && !present(&sst) {
                return Err(gone(name, "a table"));
            }
        }
        let mut sources = Vec::new();
        let mut logs = Vec::new();
        for &(number, size) in &version.logs {
            let name = log_file_name(number);
            let data = match storage.read_bounded(&name, MAX_READ_BYTES) {
                Ok(data) => data,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(gone(name, "a log"));
                }
                Err(e) => return Err(Error::io(dir.join(&name), e)),
            };
            let Some(prefix) = usize::try_from(size).ok().and_then(|s| data.get(..s)) else {
                return Err(gone(
                    name,
                    &format!("{size} bytes (it now holds {}) of a log", data.len()),
                ));
            };
            let replayed = replay_log(
                number,
                &dir.join(&name),
                prefix,
                true,
                options.paranoid_checks,
                &user,
            )?;
            replayed.table.build_key_filter();
            logs.push(replayed.info);
            sources.push(Source::Mem {
                origin: Origin::Log { number },
                table: Arc::new(replayed.table),
            });
        }
        // Newest first: logs, then level-0 tables by number, then the deeper levels.
        sources.reverse();
        let files: Vec<Vec<Arc<FileMetaData>>> = version
            .levels
            .iter()
            .map(|level| {
                level
                    .iter()
                    .map(|t| {
                        Arc::new(FileMetaData {
                            number: t.number,
                            file_size: t.size,
                            smallest: t.smallest.clone(),
                            largest: t.largest.clone(),
                        })
                    })
                    .collect()
            })
            .collect();
        sources.extend(file_sources(&files));
        let mut properties = DbProperties {
            comparator: user.name().to_string(),
            manifest: None,
            last_sequence: version.last_sequence,
            log_number: 0,
            prev_log_number: 0,
            next_file_number: 0,
            levels: version.levels.clone(),
            logs,
            ..DbProperties::default()
        };
        properties.count_logs();
        let tables = table_cache(
            Arc::clone(&storage),
            &user,
            &options,
            options.verify_checksums,
        );
        Ok(Db::assemble(
            dir,
            user,
            sources,
            tables,
            version.last_sequence,
            false,
            properties,
        ))
    }
}

/// The options' comparator of the name `name`: with [`DbOptions::comparators`], the
/// registered one; otherwise the options' own, if it has that name.
fn comparator_named(options: &DbOptions, name: &str) -> Result<Arc<dyn Comparator>> {
    let unknown = |ours: String| Error::UnknownComparator {
        file: "(the version being read)".into(),
        name: name.to_string(),
        ours,
    };
    match &options.comparators {
        Some(registry) => registry.choose(Some(name)).map_err(unknown),
        None if options.comparator.name() == name => Ok(Arc::clone(&options.comparator)),
        None => Err(unknown(options.comparator.name().to_string())),
    }
}
