//! The database a `Db` holds until closed (read-only, or open for writing), and what a
//! `Snapshot` pins: what the views, cursors and streams over it share.

use std::sync::Arc;

use leveltable_db::{Db as RustDb, Snapshot as RustSnapshot, WritableDb};
use pyo3::prelude::*;

use crate::closable::{Closable, OpenRuns};

/// What the database's iterators and snapshots say once it is closed.
pub const THE_DATABASE: &str = "the database";

/// A database as the `Db` holds it until closed: read-only, or open for writing.
#[derive(Clone)]
pub enum Source {
    /// Opened read-only: nothing in the directory is locked or written.
    Read(Arc<Closable<RustDb>>),
    /// Opened for writing, under LevelDB's lock.
    Write(Arc<Closable<WritableDb>>),
}

impl Source {
    /// Where the entries handed to Python loops over the database are kept until it
    /// closes.
    pub fn runs(&self) -> &Arc<OpenRuns> {
        match self {
            Source::Read(db) => db.runs(),
            Source::Write(db) => db.runs(),
        }
    }

    /// Whether `self` and `other` hold the same database.
    pub fn same_as(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Read(a), Source::Read(b)) => Arc::ptr_eq(a, b),
            (Source::Write(a), Source::Write(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Whether the database was closed.
    pub fn is_closed(&self) -> bool {
        match self {
            Source::Read(db) => db.is_closed(),
            Source::Write(db) => db.is_closed(),
        }
    }

    /// `ClosedError` once the database is closed.
    pub fn check_open(&self) -> PyResult<()> {
        match self {
            Source::Read(db) => db.get(THE_DATABASE).map(drop),
            Source::Write(db) => db.get(THE_DATABASE).map(drop),
        }
    }
}

/// What a `Snapshot` says once released.
pub const THE_SNAPSHOT: &str = "the snapshot";

/// Where a view reads.
pub enum At {
    /// The newest writes, at each read (of a read-only database, its current view's).
    Now,
    /// What a `Snapshot` pins until released.
    Snapshot(Closable<Pin>),
}

/// What a `Snapshot` pins.
pub enum Pin {
    /// A sequence number of a read-only database, and the view it was taken on (which a
    /// `refresh()` of the database does not change).
    Read(u64, Arc<RustDb>),
    /// A snapshot of a writable database, which its compactions keep.
    Writable(RustSnapshot),
}

impl Pin {
    pub fn sequence(&self) -> u64 {
        match self {
            Pin::Read(s, _) => *s,
            Pin::Writable(s) => s.sequence(),
        }
    }

    pub fn writable(&self) -> Option<&RustSnapshot> {
        match self {
            Pin::Read(..) => None,
            Pin::Writable(s) => Some(s),
        }
    }

    /// The read-only view the pin was taken on.
    pub fn read(&self) -> Option<&Arc<RustDb>> {
        match self {
            Pin::Read(_, db) => Some(db),
            Pin::Writable(_) => None,
        }
    }
}
