//! Bringing a read-only database's view up to what its writer has committed since:
//! [`Db::refresh`] and [`Db::refreshed`], over the handle's [`Tail`](crate::tail::Tail).

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError};

use crate::db::Db;
use crate::dbformat::{InternalKeyComparator, MAX_SEQUENCE};
use crate::storage::Storage;
use crate::tail::{TailRef, table_numbers};
use crate::version::{Source, Version};
use crate::{Error, Result};

/// What a [`Db::refresh`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refresh {
    /// The newest sequence number of the view now: reads without a snapshot read at it.
    pub last_sequence: u64,
    /// The newest sequence number of the view before.
    pub previous_sequence: u64,
    /// Write batches read from the logs.
    pub batches: u64,
    /// Tables the view gained (flushes and compactions' outputs).
    pub tables_added: usize,
    /// Tables the view lost (compactions' inputs).
    pub tables_removed: usize,
}

impl Refresh {
    /// Whether the view changed: new batches, or new tables.
    pub fn changed(&self) -> bool {
        self.last_sequence != self.previous_sequence
            || self.tables_added != 0
            || self.tables_removed != 0
    }
}

impl Db {
    /// Brings this handle's view up to what the writer of the database (another process,
    /// LevelDB or [`WritableDb`](crate::WritableDb)) has committed since the open or the
    /// last refresh, reading only what was added since: the new edits at the end of the
    /// MANIFEST (or a new MANIFEST that `CURRENT` names), and the new records at the end of
    /// each live log. Like the open, it writes, locks, creates and deletes nothing, and it
    /// reads through the same [`Storage`] (that of
    /// [`DbOptions::file_system`](crate::DbOptions::file_system)).
    ///
    /// The view stays consistent: after each refresh it is the database as the writer left
    /// it after some batch, never older than the view before. A refresh opens the tables of
    /// its view (as many as [`DbOptions::max_open_tables`](crate::DbOptions::max_open_tables)),
    /// so the view reads on after the writer's compactions delete them. Iterators made
    /// before keep reading the view they were made on until a refresh closes the tables it
    /// no longer lists (so that the writer's deletes free their space); such an iterator
    /// that then reaches a deleted table gets [`Error::MissingFile`].
    ///
    /// A database opened from an object store, a pinned version or a salvage cannot be
    /// refreshed (an invalid-argument error).
    ///
    /// # Errors
    /// [`Error::KeptChanging`] if the writer changed the MANIFEST during each of 50 looks;
    /// [`Error::Corruption`] for a malformed `CURRENT` or MANIFEST edit; [`Error::Io`] if
    /// reading fails. The view is then unchanged, and a later refresh goes on from what was
    /// read.
    pub fn refresh(&mut self) -> Result<Refresh> {
        let previous_sequence = self.last_sequence;
        match self.refreshed()? {
            Some((db, refresh)) => {
                *self = db;
                Ok(refresh)
            }
            None => Ok(Refresh {
                last_sequence: previous_sequence,
                previous_sequence,
                batches: 0,
                tables_added: 0,
                tables_removed: 0,
            }),
        }
    }

    /// [`refresh`](Self::refresh) into a new handle, leaving this one's view as it is (for a
    /// handle shared behind an `Arc`): `None` if there is nothing new. The handles share
    /// what was read, so each refresh of either reads only what neither has read.
    ///
    /// # Errors
    /// As [`refresh`](Self::refresh).
    pub fn refreshed(&self) -> Result<Option<(Db, Refresh)>> {
        let Some(held) = self.tail.as_ref() else {
            return Err(Error::InvalidArgument(
                "only a database opened from a directory can be refreshed".into(),
            ));
        };
        let mut tail = held.shared.lock().unwrap_or_else(PoisonError::into_inner);
        tail.advance(&self.user, &self.version.tables)?;
        let batches = tail.publish();
        if tail.generation() == held.generation {
            return Ok(None);
        }
        // The tables are this view's unless an edit came since it was taken.
        let same_tables = !tail.tables_changed_since(held.generation);
        let (published, now) = if same_tables {
            (BTreeSet::new(), BTreeSet::new())
        } else {
            (table_numbers(&self.version), tail.live_tables())
        };
        let removed: Vec<u64> = published.difference(&now).copied().collect();
        let previous_sequence = self.last_sequence;
        let last_sequence = tail
            .last_sequence()
            .max(previous_sequence)
            .min(MAX_SEQUENCE);
        let tables = Arc::clone(&self.version.tables);
        for &number in &removed {
            tables.forget(number);
        }
        let mut sources = tail.log_sources();
        if same_tables {
            sources.extend(
                self.version
                    .sources
                    .iter()
                    .filter_map(|source| match source {
                        Source::Files { level, files } => Some(Source::Files {
                            level: *level,
                            files: files.clone(),
                        }),
                        Source::Mem { .. } => None,
                    }),
            );
        } else {
            sources.extend(tail.table_sources());
        }
        let version = Version::new(
            InternalKeyComparator::new(Arc::clone(&self.user)),
            tables,
            sources,
            false,
        );
        let mut properties = self.properties.clone();
        tail.describe(&mut properties, last_sequence, !same_tables);
        let db = Db {
            dir: self.dir.clone(),
            version: Arc::new(version),
            user: Arc::clone(&self.user),
            last_sequence,
            properties,
            cores: self.cores,
            tail: Some(TailRef {
                shared: Arc::clone(&held.shared),
                generation: tail.generation(),
            }),
        };
        let refresh = Refresh {
            last_sequence,
            previous_sequence,
            batches,
            tables_added: now.difference(&published).count(),
            tables_removed: removed.len(),
        };
        Ok(Some((db, refresh)))
    }
}

impl Db {
    /// The files the open read (through its file system), for a handle that can be
    /// refreshed; `None` for one that cannot.
    pub(crate) fn storage(&self) -> Option<Arc<dyn Storage>> {
        let held = self.tail.as_ref()?;
        let tail = held.shared.lock().unwrap_or_else(PoisonError::into_inner);
        Some(tail.storage())
    }
}
