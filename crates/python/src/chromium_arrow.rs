//! The Arrow form of `leveltable.chromium`'s records: each record (the dict the iterator
//! would yield) as a row of two `string` columns, `key` (the record's `key`, as JSON text;
//! null for a record without one) and `json` (the whole record, as JSON text), so DuckDB's
//! JSON functions, Polars and pyarrow read a profile's data with no Python object per
//! record.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use serde_json::Value;

use crate::arrow_columns::BATCH_BYTES;

/// The records an iterator of `leveltable.chromium` yields.
pub type RecordIter = Box<dyn Iterator<Item = leveltable_db::Result<Value>> + Send>;

/// The schema of the batches: `key` (nullable) and `json`, both `string`.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("json", DataType::Utf8, false),
    ]))
}

/// Record batches of a Chromium directory's records.
pub struct RecordBatches {
    iter: RecordIter,
    path: std::path::PathBuf,
    schema: SchemaRef,
    rows: usize,
    done: bool,
}

impl RecordBatches {
    /// The records `iter` yields (read from `path`), `rows` per batch at most.
    pub fn new(iter: RecordIter, path: std::path::PathBuf, rows: usize) -> Self {
        RecordBatches {
            iter,
            path,
            schema: schema(),
            rows,
            done: false,
        }
    }

    fn fill(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        let capacity = self.rows.min(4096);
        let mut keys = StringBuilder::with_capacity(capacity, 0);
        let mut records = StringBuilder::with_capacity(capacity, 0);
        let (mut rows, mut key_bytes, mut bytes) = (0usize, 0usize, 0usize);
        let mut text = String::new();
        while rows < self.rows && key_bytes < BATCH_BYTES && bytes < BATCH_BYTES {
            let Some(record) = self.iter.next() else {
                self.done = true;
                break;
            };
            let record = record.map_err(|e| {
                ArrowError::ExternalError(format!("{}: {e}", self.path.display()).into())
            })?;
            text.clear();
            // Writing JSON into a String cannot fail for a `Value` (its map keys are strings).
            let key = record.get("key").map(Value::to_string);
            text.push_str(&record.to_string());
            let key_len = key.as_ref().map_or(0, String::len);
            if key_len >= i32::MAX as usize - key_bytes || text.len() >= i32::MAX as usize - bytes {
                return Err(crate::arrow_columns::too_large_error(
                    &self.path,
                    (key_len, text.len()),
                ));
            }
            keys.append_option(key);
            records.append_value(&text);
            key_bytes += key_len;
            bytes += text.len();
            rows += 1;
        }
        if rows == 0 {
            return Ok(None);
        }
        let columns: Vec<ArrayRef> = vec![Arc::new(keys.finish()), Arc::new(records.finish())];
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map(Some)
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.fill() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl RecordBatchReader for RecordBatches {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
