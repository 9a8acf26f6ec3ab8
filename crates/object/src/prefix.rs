//! Databases under an object-store prefix: `CURRENT`, the MANIFEST, logs and tables as
//! objects, read by the database crate through its [`Storage`] trait; and a local database
//! uploaded to a prefix, `CURRENT` last.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use leveltable_db::storage::{MAX_READ_BYTES, Storage, open_regular};
use leveltable_db::table_source::TableSource;
use leveltable_db::{Db, DbOptions};

use leveltable_table::{Error as TableError, ReadOptions, Table};

use crate::async_table::open_plan;
use crate::read_at::ObjectReadAt;
use crate::remote::read_whole;
use crate::runtime::block_on;
use crate::{Error, Location, ObjectWriter, Result};

/// The tail read with a table's first request.
const TABLE_TAIL: u64 = 256 << 10;

/// The files of a database under a prefix. Each table opens with one request (its tail),
/// each block read is one ranged GET (sequential reads fetch ahead); `CURRENT`, the
/// MANIFEST and logs are read whole, one GET each, refused without reading their body if
/// the store says they are larger than the database reads whole (4 KiB for `CURRENT`);
/// listing is one LIST.
#[derive(Debug, Clone)]
pub struct PrefixStorage {
    location: Location,
}

impl PrefixStorage {
    /// The database under `location` (a prefix).
    pub fn new(location: &Location) -> PrefixStorage {
        PrefixStorage {
            location: location.clone(),
        }
    }
}

fn to_io(e: Error) -> io::Error {
    match e {
        Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e.to_string()),
        Error::TooLarge { .. } => io::Error::new(io::ErrorKind::FileTooLarge, e.to_string()),
        other => io::Error::other(other.to_string()),
    }
}

impl Storage for PrefixStorage {
    fn path(&self) -> PathBuf {
        PathBuf::from(self.location.name())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let loc = &self.location;
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            loc.stats.list();
            let listed = block_on(async {
                loc.store
                    .list(Some(&loc.path))
                    .try_collect::<Vec<_>>()
                    .await
            })
            .map_err(to_io)?;
            match listed {
                Ok(metas) => {
                    let depth = loc.path.parts().count();
                    return Ok(metas
                        .iter()
                        .filter(|m| m.location.parts().count() == depth + 1)
                        .filter_map(|m| m.location.filename().map(str::to_owned))
                        .collect());
                }
                Err(e) => match loc.retry.backoff(attempt, started) {
                    Some(wait)
                        if matches!(e, object_store::Error::Generic { .. })
                            && crate::connector::refused_redirect(&e).is_none() =>
                    {
                        loc.stats.retry();
                        std::thread::sleep(wait);
                    }
                    _ => return Err(io::Error::other(loc.message(&e))),
                },
            }
        }
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.read_bounded(name, MAX_READ_BYTES)
    }

    fn read_bounded(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        let child = self.location.child(name);
        block_on(read_whole(&child, limit))
            .and_then(|r| r)
            .map(Vec::from)
            .map_err(to_io)
    }

    fn open_table(&self, name: &str, _memory_map: bool) -> io::Result<TableSource> {
        let child = self.location.child(name);
        let source = ObjectReadAt::open_with_tail(&child, TABLE_TAIL).map_err(to_io)?;
        Ok(TableSource::Other(Box::new(source.sequential_readahead())))
    }

    /// Opens the table as an [`AsyncTable`](crate::AsyncTable) opens: its tail in the first
    /// request, what else the open plan needs in at most one more; then data blocks are
    /// ranged reads of the same pinned object, ahead when sequential.
    fn open_table_with(
        &self,
        name: &str,
        _memory_map: bool,
        options: &ReadOptions,
    ) -> io::Result<std::result::Result<Table<TableSource>, TableError>> {
        let child = self.location.child(name);
        match block_on(open_plan(&child, TABLE_TAIL, options.clone())).map_err(to_io)? {
            Ok((object, plan, held)) => {
                let source = ObjectReadAt::from_parts(object, held).sequential_readahead();
                Ok(plan.finish(TableSource::Other(Box::new(source))))
            }
            Err(Error::Table { source, .. }) => Ok(Err(source)),
            Err(e) => Err(to_io(e)),
        }
    }
}

/// Opens the database under the prefix `location` read-only (see [`Db::open`]).
///
/// # Errors
/// [`Error::Db`] for what [`Db::open`] reports, the object errors inside.
pub fn open_db(location: &Location, options: DbOptions) -> Result<Db> {
    Db::open_storage(Arc::new(PrefixStorage::new(location)), options).map_err(|e| Error::Db {
        object: location.name().to_owned(),
        source: e,
    })
}

/// Uploads the database in the local directory `dir` to the prefix `location`: every
/// file but `CURRENT` first (each appearing only when whole), then `CURRENT`, so a reader
/// sees either no database or all of it. Returns the bytes uploaded.
///
/// # Errors
/// [`Error::Request`] for a failed upload (`CURRENT` is then not written); a missing
/// `CURRENT` or an unreadable file is an [`Error::Request`] naming it.
pub fn upload_db(dir: &Path, location: &Location) -> Result<u64> {
    let local = |name: &str, e: io::Error| Error::Request {
        object: dir.join(name).display().to_string(),
        range: None,
        attempts: 0,
        message: e.to_string(),
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| local("", e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n != "CURRENT" && n != "LOCK" && !n.starts_with("LOG"))
        .collect();
    names.sort();
    if !dir.join("CURRENT").is_file() {
        return Err(local("CURRENT", io::Error::from(io::ErrorKind::NotFound)));
    }
    names.push("CURRENT".to_owned());
    let mut total = 0;
    for name in &names {
        // Regular files only (a FIFO would block the upload), no further than their size
        // at open, streamed in parts.
        let (file, metadata) = open_regular(&dir.join(name)).map_err(|e| local(name, e))?;
        let mut w = ObjectWriter::new(&location.child(name));
        let copied = io::copy(&mut io::Read::take(file, metadata.len()), &mut w)
            .map_err(|e| local(name, e))?;
        w.finish()?;
        total += copied;
    }
    Ok(total)
}
