//! A database open for writing read by the read-only engine: its memtables and tables as
//! they are now, as a [`Db`], so that whatever a read-only handle answers (batched gets,
//! approximate sizes, properties, verification, iterators) a writable one answers by the
//! same code.

use std::sync::Arc;

use crate::Result;
use crate::db::Db;
use crate::options::{DbProperties, DbVerifySummary};
use crate::version::Version;
use crate::writer::writable_db::{Snapshot, WritableDb};

impl WritableDb {
    /// The database as it is now, read-only: the memtables and the tables of the current
    /// version, read at the newest sequence number. Writes made after it was taken are not
    /// in it; the tables it reads are kept until it is dropped, whatever compactions do
    /// meanwhile. Its [`properties`](Db::properties) give the MANIFEST, its counters and
    /// each level's tables; it lists no logs (the writer's log is its own).
    ///
    /// # Errors
    /// [`Error::ForkedProcess`](crate::Error::ForkedProcess) in a process forked from the one
    /// that opened the database.
    pub fn view(&self) -> Result<Db> {
        self.check_process()?;
        // The view and the levels together: a new view is installed with the state locked.
        let st = self.shared.state();
        let (version, sequence) = self.shared.read_view();
        let mut db = self.db_at(version, sequence);
        let m = &st.versions.current;
        let p = &mut db.properties;
        p.manifest = Some(m.file.clone());
        p.log_number = m.log_number;
        p.prev_log_number = m.prev_log_number;
        p.next_file_number = m.next_file_number;
        p.levels = m.levels.infos();
        drop(st);
        Ok(db)
    }

    /// The reads of [`view`](Self::view) without its properties: the current version at the
    /// newest sequence number, taken without the state lock and without copying each table's
    /// keys, for the calls that only read (batched gets, sizes, verification).
    pub(super) fn reader(&self) -> Result<Db> {
        self.check_process()?;
        let (version, sequence) = self.shared.read_view();
        Ok(self.db_at(version, sequence))
    }

    /// `version` read at `sequence`, with only the comparator and the sequence in its
    /// properties.
    fn db_at(&self, version: Arc<Version>, sequence: u64) -> Db {
        let properties = DbProperties {
            comparator: self.shared.user.name().to_string(),
            last_sequence: sequence,
            ..DbProperties::default()
        };
        Db::of_version(
            self.shared.dir.clone(),
            version,
            sequence,
            properties,
            self.cores,
        )
    }

    /// The values of many keys at once, in the order given: what [`get`](Self::get) answers
    /// for each, by [`Db::get_many`] over the database as it is now.
    ///
    /// # Errors
    /// As [`get`](Self::get), if the lookup of any key fails.
    pub fn get_many<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.reader()?.get_many(keys)
    }

    /// [`get_many`](Self::get_many) at `snapshot`.
    ///
    /// # Errors
    /// As [`get`](Self::get), if the lookup of any key fails.
    pub fn get_many_at<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
        snapshot: &Snapshot,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        // The current view holds every version a snapshot can see: compactions keep them.
        self.reader()?.get_many_at(keys, snapshot.sequence())
    }

    /// Reads and checks every block of every table of the current version, and that each
    /// table's first and last keys are the range the MANIFEST gives it ([`Db::verify`]).
    ///
    /// # Errors
    /// As [`Db::verify`].
    pub fn verify(&self) -> Result<DbVerifySummary> {
        self.reader()?.verify()
    }

    /// [`verify`](Self::verify), calling `progress(done, total)` as it goes
    /// ([`Db::verify_with_progress`]).
    ///
    /// # Errors
    /// As [`Db::verify`].
    pub fn verify_with_progress(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<DbVerifySummary> {
        self.reader()?.verify_with_progress(progress)
    }
}
