//! The Arrow form of `leveltable.chromium`'s records: each record (the dict the iterator
//! would yield) as a row of two `string` columns, `key` (the record's `key`, as JSON text;
//! null for a record without one) and `json` (the whole record, as JSON text), so DuckDB's
//! JSON functions, Polars and pyarrow read a profile's data with no Python object per
//! record.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde_json::Value;

use crate::arrow_columns::{
    BATCH_BYTES, FillBatch, Filled, FilledBatches, read_error, too_large_error,
};

/// The records an iterator of `leveltable.chromium` yields.
pub type RecordIter = Box<dyn Iterator<Item = leveltable_db::Result<Value>> + Send>;

/// The schema of the batches: `key` (nullable) and `json`, both `string`.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("json", DataType::Utf8, false),
    ]))
}

/// A Chromium directory's records, filled into record batches.
pub struct RecordRows {
    iter: RecordIter,
    path: std::path::PathBuf,
    rows: usize,
}

/// Record batches of the records `iter` yields (read from `path`), `rows` per batch at most.
pub fn batches(
    iter: RecordIter,
    path: std::path::PathBuf,
    rows: usize,
) -> FilledBatches<RecordRows> {
    FilledBatches::new(RecordRows { iter, path, rows }, schema())
}

impl FillBatch for RecordRows {
    fn fill(&mut self, schema: &SchemaRef, exhausted: &mut bool) -> Filled {
        let capacity = self.rows.min(4096);
        let mut keys = StringBuilder::with_capacity(capacity, 0);
        let mut records = StringBuilder::with_capacity(capacity, 0);
        let (mut rows, mut key_bytes, mut bytes) = (0usize, 0usize, 0usize);
        let mut text = String::new();
        while rows < self.rows && key_bytes < BATCH_BYTES && bytes < BATCH_BYTES {
            let Some(record) = self.iter.next() else {
                *exhausted = true;
                break;
            };
            let record = record.map_err(|e| read_error(&self.path, e))?;
            text.clear();
            // Writing JSON into a String cannot fail for a `Value` (its map keys are strings).
            let key = record.get("key").map(Value::to_string);
            text.push_str(&record.to_string());
            let key_len = key.as_ref().map_or(0, String::len);
            if key_len >= i32::MAX as usize - key_bytes || text.len() >= i32::MAX as usize - bytes {
                return Err(too_large_error(&self.path, (key_len, text.len())));
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
        RecordBatch::try_new(Arc::clone(schema), columns).map(Some)
    }
}
