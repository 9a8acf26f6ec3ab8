//! One table file out as Arrow: `Table.scan_arrow()`'s record batches, with the schema of a
//! database's (`key` and `value`, `binary`), each entry copied once from its data block
//! into the columns.
//!
//! A table's cursors borrow the table, so none is kept between batches: each batch seeks
//! past the last key of the batch before (one seek per batch of up to 65,536 rows).

use std::cmp::Ordering;
use std::ops::Bound as Edge;
use std::sync::Arc;

use arrow_schema::{ArrowError, SchemaRef};

use crate::arrow_columns::{Columns, FillBatch, Filled, Sizes, read_error};
use crate::open_table::OpenTable;

/// What a table scan reads: a table, within a key range.
pub struct TableScan {
    pub table: Arc<OpenTable>,
    pub start: Edge<Vec<u8>>,
    pub stop: Edge<Vec<u8>>,
}

/// A table's entries, filled into record batches.
pub struct TableRows {
    table: Arc<OpenTable>,
    /// Where the next batch starts: past the last key handed out, after the first batch.
    start: Edge<Vec<u8>>,
    stop: Edge<Vec<u8>>,
    rows: usize,
    like: Sizes,
}

impl TableRows {
    /// The entries of `scan`, `rows` rows per batch at most.
    pub fn new(scan: &TableScan, rows: usize) -> Self {
        TableRows {
            table: Arc::clone(&scan.table),
            start: scan.start.clone(),
            stop: scan.stop.clone(),
            rows,
            like: Sizes::default(),
        }
    }

    fn error(&self, what: impl std::fmt::Display) -> ArrowError {
        read_error(&self.table.path, what)
    }

    /// Fills `columns` from the table; `Ok(true)` when the table (or the range) ends.
    fn fill_columns(&self, columns: &mut Columns) -> Result<bool, ArrowError> {
        let table = &self.table.table;
        let cmp = table.comparator();
        let mut it = table.iter();
        match &self.start {
            Edge::Unbounded => it.seek_to_first(),
            Edge::Included(k) | Edge::Excluded(k) => it.seek(k),
        }
        let past = |key: &[u8]| match &self.stop {
            Edge::Unbounded => false,
            Edge::Included(s) => cmp.compare(key, s) == Ordering::Greater,
            Edge::Excluded(s) => cmp.compare(key, s) != Ordering::Less,
        };
        // Invariant: the keys handed out strictly ascend, so the next batch's seek moves on.
        // A table whose keys are out of order (a database's table read as a plain table,
        // or a damaged one) is an error, not a scan that repeats entries forever.
        let excluded = match &self.start {
            Edge::Excluded(k) => Some(k.as_slice()),
            _ => None,
        };
        // The key a resumed batch seeks to was handed out by the batch before.
        if let Some(k) = excluded {
            if it.valid() && cmp.compare(it.key(), k) == Ordering::Equal {
                it.next();
            }
        }
        let mut ended = true;
        while it.valid() {
            let key = it.key();
            let previous = columns.last_key().or(excluded);
            match previous.map(|p| (cmp.compare(p, key), p)) {
                Some((Ordering::Less, _)) | None => {}
                Some((_, p)) => {
                    return Err(self.error(format!(
                        "keys out of order for comparator {}: {} after {} (a table of a \
                         LevelDB database holds internal keys: open the database with \
                         leveltable.Db)",
                        cmp.name(),
                        crate::bytes::hex(key),
                        crate::bytes::hex(p)
                    )));
                }
            }
            if past(key) {
                break;
            }
            if !columns.push(key, it.value()) {
                ended = false;
                break;
            }
            it.next();
        }
        it.status().map_err(|e| self.error(e))?;
        Ok(ended)
    }
}

impl FillBatch for TableRows {
    fn fill(&mut self, schema: &SchemaRef, exhausted: &mut bool) -> Filled {
        let mut columns = Columns::new(self.rows, self.like);
        *exhausted = self.fill_columns(&mut columns)?;
        if let Some(last) = columns.last_key() {
            self.start = Edge::Excluded(last.to_vec());
        }
        columns.into_batch(&self.table.path, schema, &mut self.like, exhausted)
    }
}
