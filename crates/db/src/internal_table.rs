//! A table of internal keys: a `.ldb` file of a LevelDB database, answering lookups as
//! LevelDB's `Version::Get` does within one file and listing its entries parsed.
//!
//! ```
//! use leveltable_table::TableBuilder;
//! use leveltable_db::InternalTable;
//! use leveltable_db::dbformat::{LookupResult, ValueType, append_internal_key, ldb_build_options};
//!
//! // Entries in internal-key order: per user key, newest first.
//! let mut builder = TableBuilder::new(Vec::new(), ldb_build_options(Some(10)))?;
//! let mut key = Vec::new();
//! for (user_key, sequence, value_type, value) in [
//!     ("apple", 7, ValueType::Value, "green"),
//!     ("apple", 3, ValueType::Value, "red"),
//!     ("banana", 9, ValueType::Deletion, ""),
//!     ("banana", 2, ValueType::Value, "yellow"),
//! ] {
//!     key.clear();
//!     append_internal_key(&mut key, user_key.as_bytes(), sequence, value_type)?;
//!     builder.add(&key, value.as_bytes())?;
//! }
//! builder.finish()?;
//!
//! let table = InternalTable::open(builder.into_inner())?;
//! assert_eq!(table.get(b"apple")?, LookupResult::Value { sequence: 7, value: b"green".to_vec() });
//! assert_eq!(table.get_at(b"apple", 5)?.into_value(), Some(b"red".to_vec()));
//! assert_eq!(table.get(b"banana")?, LookupResult::Deleted { sequence: 9 });
//! assert_eq!(table.get_at(b"banana", 8)?.into_value(), Some(b"yellow".to_vec()));
//! assert_eq!(table.get(b"cherry")?, LookupResult::NotFound);
//! assert_eq!(table.entries().count(), 4);
//! # Ok::<(), leveltable_db::Error>(())
//! ```

use std::cmp::Ordering;
use std::fmt;

use leveltable_table::{Range, ReadAt, Table};

use crate::dbformat::{
    INTERNAL_KEY_COMPARATOR_NAME, InternalKeyError, LookupKey, LookupResult, MAX_SEQUENCE,
    ParsedInternalKey, TAG_LEN, ValueType, invalid_argument, ldb_read_options,
};
use crate::{Error, Result};

/// One entry of a table of internal keys, taken apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InternalEntry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The sequence number.
    pub sequence: u64,
    /// Value or deletion.
    pub value_type: ValueType,
    /// The value (empty for deletions as LevelDB writes them, but whatever the file holds).
    pub value: Vec<u8>,
}

impl InternalEntry {
    /// The entry's key as a borrowed [`ParsedInternalKey`].
    pub fn key(&self) -> ParsedInternalKey<'_> {
        ParsedInternalKey::new(&self.user_key, self.sequence, self.value_type)
    }
}

/// A table of internal keys (a `.ldb` file of a LevelDB database), read as LevelDB reads it.
///
/// [`get_at`](Self::get_at) answers as LevelDB's `Version::Get` does for one file, through
/// `Table::InternalGet`: the index and the filter (on the user key) pick the one data block
/// that can hold the key, and the first entry there at or after the lookup key decides.
/// [`entries`](Self::entries) lists the entries parsed, in file order.
pub struct InternalTable<R> {
    table: Table<R>,
}

impl<R> fmt::Debug for InternalTable<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InternalTable")
            .field("table", &self.table)
            .finish()
    }
}

impl<R: ReadAt> InternalTable<R> {
    /// Opens a `.ldb` file of a database with the bytewise comparator, with
    /// [`ldb_read_options`].
    ///
    /// # Errors
    /// As [`Table::open`].
    pub fn open(source: R) -> Result<Self> {
        Ok(InternalTable {
            table: Table::open(source, ldb_read_options())?,
        })
    }

    /// Uses a table opened with other options: an [`InternalKeyComparator`] (over any user
    /// comparator), and for the filter, a policy wrapped in [`InternalFilterPolicy`] (a bare
    /// user policy would test whole internal keys and miss keys that are there).
    ///
    /// [`InternalKeyComparator`]: crate::dbformat::InternalKeyComparator
    /// [`InternalFilterPolicy`]: crate::dbformat::InternalFilterPolicy
    ///
    /// # Errors
    /// an invalid-argument error if the table's comparator is not named
    /// `leveldb.InternalKeyComparator`.
    pub fn from_table(table: Table<R>) -> Result<Self> {
        let name = table.comparator().name();
        if name != INTERNAL_KEY_COMPARATOR_NAME {
            return Err(invalid_argument(format!(
                "a table of internal keys needs {INTERNAL_KEY_COMPARATOR_NAME}, not {name}"
            )));
        }
        Ok(InternalTable { table })
    }

    /// The newest version of `user_key` in the file: [`get_at`](Self::get_at) with
    /// [`MAX_SEQUENCE`].
    ///
    /// # Errors
    /// As [`get_at`](Self::get_at).
    pub fn get(&self, user_key: &[u8]) -> Result<LookupResult> {
        self.get_at(user_key, MAX_SEQUENCE)
    }

    /// The newest version of `user_key` with a sequence number `<= sequence` (a snapshot),
    /// as LevelDB finds it in this file.
    ///
    /// # Errors
    /// an invalid-argument error if `sequence` exceeds [`MAX_SEQUENCE`];
    /// a corruption error if the entry that decides is not an internal key (LevelDB's
    /// "corrupted key"); otherwise as [`Table::internal_get`].
    pub fn get_at(&self, user_key: &[u8], sequence: u64) -> Result<LookupResult> {
        self.lookup(&LookupKey::new(user_key, sequence)?)
    }

    /// [`get_at`](Self::get_at) with the keys of the lookup built by the caller, who may
    /// share them between the tables it consults.
    ///
    /// # Errors
    /// As [`get_at`](Self::get_at).
    pub fn lookup(&self, key: &LookupKey) -> Result<LookupResult> {
        let (target, floor) = (key.target(), key.floor());
        let cmp = self.table.comparator();
        let found = self.table.internal_get(
            target,
            |key, value| -> std::result::Result<LookupResult, InternalKeyError> {
                // As LevelDB's `SaveValue`: a key that does not parse is an error even when its
                // user key differs.
                let parsed = ParsedInternalKey::parse(key)?;
                if cmp.compare(key, floor) == Ordering::Greater {
                    return Ok(LookupResult::NotFound);
                }
                Ok(LookupResult::decided_by(&parsed, value))
            },
        )?;
        match found {
            None => Ok(LookupResult::NotFound),
            Some(Ok(result)) => Ok(result),
            Some(Err(e)) => Err(e.corruption_at(self.table.approximate_offset_of(target))),
        }
    }

    /// Every entry in file order, parsed; double-ended.
    pub fn entries(&self) -> Entries<'_, R> {
        Entries {
            table: &self.table,
            inner: self.table.entries(),
            done: false,
        }
    }
}

impl<R> InternalTable<R> {
    /// The table, for everything else (raw entries, properties, counters, verify).
    pub fn table(&self) -> &Table<R> {
        &self.table
    }

    /// Gives back the table.
    pub fn into_table(self) -> Table<R> {
        self.table
    }
}

/// The entries of an [`InternalTable`] in file order, parsed. Made by
/// [`InternalTable::entries`].
///
/// An error is yielded once as `Some(Err(..))` and ends the iteration: an I/O or block error
/// as [`Table::entries`] reports it, or for a key that is not an internal key,
/// a corruption error at the offset of its data block.
pub struct Entries<'t, R> {
    table: &'t Table<R>,
    inner: Range<'t, R>,
    done: bool,
}

impl<R> fmt::Debug for Entries<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entries")
            .field("inner", &self.inner)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<R: ReadAt> Entries<'_, R> {
    fn parse(
        &mut self,
        item: Option<leveltable_table::Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Option<Result<InternalEntry>> {
        let result = item?.map_err(Error::from).and_then(|(mut key, value)| {
            let (sequence, value_type) = match ParsedInternalKey::parse(&key) {
                Ok(parsed) => (parsed.sequence, parsed.value_type),
                Err(e) => return Err(e.corruption_at(self.table.approximate_offset_of(&key))),
            };
            key.truncate(key.len() - TAG_LEN);
            Ok(InternalEntry {
                user_key: key,
                sequence,
                value_type,
                value,
            })
        });
        self.done = result.is_err();
        Some(result)
    }
}

impl<R: ReadAt> Iterator for Entries<'_, R> {
    type Item = Result<InternalEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.inner.next();
        self.parse(item)
    }
}

impl<R: ReadAt> DoubleEndedIterator for Entries<'_, R> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.inner.next_back();
        self.parse(item)
    }
}

impl<R: ReadAt> std::iter::FusedIterator for Entries<'_, R> {}
