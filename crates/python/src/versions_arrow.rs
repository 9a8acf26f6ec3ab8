//! Every stored version as Arrow: `Db.scan_arrow(versions=True)`, the forensic view of a
//! database (and of what `Db.salvage` recovers) that `leveltable db dump --internal`
//! prints, as record batches.
//!
//! Each row is one version: `key` (`binary`), `value` (`binary`, null for a deletion),
//! `sequence` (`uint64`, the write's sequence number) and `state` (`string`): `live` (the
//! newest version of its key, a value: what a read returns), `deleted` (the newest, a
//! deletion) or `shadowed` (an older version, hidden by a newer one). Keys ascend, newest
//! version first per key.

use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use leveltable_db::dbformat::ValueType;
use leveltable_db::{Db as RustDb, VersionStatus, Versions};

use crate::arrow_columns::{
    BATCH_BYTES, FillBatch, Filled, FilledBatches, read_error, too_large_error,
};
use crate::db_source::{Source, THE_DATABASE};

/// The schema of the batches of versions.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, false),
        Field::new("value", DataType::Binary, true),
        Field::new("sequence", DataType::UInt64, false),
        Field::new("state", DataType::Utf8, false),
    ]))
}

/// The name of a version's state in the `state` column (as `db dump --salvage` prints it).
fn state_name(status: VersionStatus) -> &'static str {
    match status {
        VersionStatus::Live => "live",
        VersionStatus::Deleted => "deleted",
        VersionStatus::Shadowed => "shadowed",
    }
}

/// The versions of one database's keys in a range.
pub fn batches(
    db: &RustDb,
    source: Source,
    lo: &Edge<Vec<u8>>,
    hi: &Edge<Vec<u8>>,
    rows: usize,
) -> FilledBatches<VersionRows> {
    let range = (crate::cursor::as_ref(lo), crate::cursor::as_ref(hi));
    let versions = VersionRows {
        versions: db.versions_range::<[u8]>(range),
        source,
        path: db.path().to_owned(),
        rows,
    };
    FilledBatches::new(versions, schema())
}

/// A database's stored versions, filled into record batches, until the database (`source`)
/// is closed: the next batch is then an error, as an iterator's next entry is.
pub struct VersionRows {
    versions: Versions,
    source: Source,
    path: PathBuf,
    rows: usize,
}

impl FillBatch for VersionRows {
    fn fill(&mut self, schema: &SchemaRef, exhausted: &mut bool) -> Filled {
        if self.source.is_closed() {
            return Err(read_error(&self.path, format!("{THE_DATABASE} is closed")));
        }
        let capacity = self.rows.min(4096);
        let mut keys = BinaryBuilder::with_capacity(capacity, 0);
        let mut values = BinaryBuilder::with_capacity(capacity, 0);
        let mut sequences = UInt64Builder::with_capacity(capacity);
        let mut states = StringBuilder::with_capacity(capacity, 0);
        let (mut rows, mut key_bytes, mut value_bytes) = (0usize, 0usize, 0usize);
        while rows < self.rows && key_bytes < BATCH_BYTES && value_bytes < BATCH_BYTES {
            let Some(version) = self.versions.next() else {
                *exhausted = true;
                break;
            };
            let v = version.map_err(|e| read_error(&self.path, e))?;
            if v.user_key.len() >= i32::MAX as usize - key_bytes
                || v.value.len() >= i32::MAX as usize - value_bytes
            {
                return Err(too_large_error(
                    &self.path,
                    (v.user_key.len(), v.value.len()),
                ));
            }
            keys.append_value(&v.user_key);
            match v.value_type {
                ValueType::Deletion => values.append_null(),
                ValueType::Value => values.append_value(&v.value),
            }
            sequences.append_value(v.sequence);
            states.append_value(state_name(v.status));
            key_bytes += v.user_key.len();
            value_bytes += v.value.len();
            rows += 1;
        }
        if rows == 0 {
            return Ok(None);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(keys.finish()),
            Arc::new(values.finish()),
            Arc::new(sequences.finish()),
            Arc::new(states.finish()),
        ];
        RecordBatch::try_new(Arc::clone(schema), columns).map(Some)
    }
}
