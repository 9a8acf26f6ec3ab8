//! Databases out as Arrow: `Db.scan_arrow()` (and `Snapshot.scan_arrow()`,
//! `Table.scan_arrow()`) returns an
//! `ArrowStream`, which implements the Arrow PyCapsule stream interface
//! (`__arrow_c_stream__`): pyarrow's `RecordBatchReader.from_stream`, Polars, DuckDB and
//! pandas (through pyarrow) import its record batches through Arrow's C stream interface,
//! with no Python object per entry.
//!
//! Each batch has the columns `key` and `value` (`binary`), at most `batch_rows` rows and
//! at most `BATCH_BYTES` bytes of keys or of values (a `binary` column's 32-bit offsets
//! cap its data below 2 GiB; see `arrow_columns`). A batch is made when the consumer asks
//! for it, without Python: pyarrow and DuckDB ask with the GIL released.

use std::ffi::CString;
use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use leveltable_db::{Db as RustDb, DbIter};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::arrow_columns::{Columns, FillBatch, Filled, FilledBatches, Sizes, read_error};
use crate::closable::Closable;
use crate::cursor::{Reader, as_ref};
use crate::db_source::{Source, THE_DATABASE};
use crate::errors::{Error, InvalidArgumentError};
use crate::table_arrow::{TableRows, TableScan};

/// The default rows per batch.
pub const BATCH_ROWS: usize = 65_536;

/// The schema of the batches: `key` and `value`, both `binary`, never null.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
    ]))
}

/// A database iterator's entries, filled into record batches, each entry copied once, from
/// the merge's batch into the columns (`DbIter::next_entries`). Once the database is
/// closed, the next batch is an error, as an iterator's next entry is: nothing more is read
/// from a directory whose lock the close released.
struct DbRows {
    iter: DbIter,
    source: Source,
    path: PathBuf,
    rows: usize,
    /// What the batch before held.
    like: Sizes,
}

impl FillBatch for DbRows {
    fn fill(&mut self, schema: &SchemaRef, exhausted: &mut bool) -> Filled {
        if self.source.is_closed() {
            return Err(read_error(&self.path, format!("{THE_DATABASE} is closed")));
        }
        let mut columns = Columns::new(self.rows, self.like);
        let more = self
            .iter
            .next_entries(|k, v| columns.push(k, v))
            .map_err(|e| read_error(&self.path, e))?;
        *exhausted = !more;
        columns.into_batch(&self.path, schema, &mut self.like, exhausted)
    }
}

/// What a stream reads: a database (at a point in time, within a key range), every stored
/// version of a read-only database's keys in a range, or a table.
enum Scan {
    Db(Reader),
    Versions {
        db: Arc<Closable<RustDb>>,
        /// The view the stream was made on, which a `refresh()` of `db` does not change.
        view: Arc<RustDb>,
        lo: Edge<Vec<u8>>,
        hi: Edge<Vec<u8>>,
    },
    Table(TableScan),
}

/// A database's (or a table's) entries as Arrow record batches: pass it to
/// `pyarrow.RecordBatchReader.from_stream`, `polars.from_arrow`, or name it in DuckDB's
/// SQL. It reads the database as it was when made; each stream taken from it reads all
/// its entries again. Once the database is closed, a stream under way fails at its next
/// batch.
#[pyclass(frozen, module = "leveltable")]
pub struct ArrowStream {
    scan: Scan,
    batch_rows: usize,
}

fn checked_rows(batch_rows: usize) -> PyResult<usize> {
    if batch_rows == 0 {
        return Err(InvalidArgumentError::new_err(
            "batch_rows must be at least 1",
        ));
    }
    Ok(batch_rows)
}

impl ArrowStream {
    /// The entries `reader` reads, `batch_rows` per batch at most.
    pub fn new(reader: Reader, batch_rows: usize) -> PyResult<ArrowStream> {
        Ok(ArrowStream {
            scan: Scan::Db(reader),
            batch_rows: checked_rows(batch_rows)?,
        })
    }

    /// Every stored version of `db`'s keys from `lo` to `hi`, `batch_rows` per batch at
    /// most, with the columns `sequence` and `state` (see `versions_arrow`).
    pub fn of_versions(
        db: Arc<Closable<RustDb>>,
        (lo, hi): (Edge<Vec<u8>>, Edge<Vec<u8>>),
        batch_rows: usize,
    ) -> PyResult<ArrowStream> {
        let view = db.get(THE_DATABASE)?;
        Ok(ArrowStream {
            scan: Scan::Versions { db, view, lo, hi },
            batch_rows: checked_rows(batch_rows)?,
        })
    }

    /// The schema of the batches.
    fn schema(&self) -> SchemaRef {
        match &self.scan {
            Scan::Versions { .. } => crate::versions_arrow::schema(),
            Scan::Db(_) | Scan::Table(_) => schema(),
        }
    }

    /// The entries of a table in a key range, `batch_rows` per batch at most.
    pub fn of_table(scan: TableScan, batch_rows: usize) -> PyResult<ArrowStream> {
        Ok(ArrowStream {
            scan: Scan::Table(scan),
            batch_rows: checked_rows(batch_rows)?,
        })
    }
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule stream interface: a capsule named `arrow_array_stream` holding
    /// an `ArrowArrayStream` of the entries. `requested_schema` is not needed (the batches
    /// have one schema, `__arrow_c_schema__`'s).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches: Box<dyn RecordBatchReader + Send> = match &self.scan {
            Scan::Db(reader) => {
                let rows = DbRows {
                    // A bulk read: the blocks it reads would only evict the lookups' blocks
                    // from the cache.
                    iter: reader
                        .range(as_ref(&reader.lo), as_ref(&reader.hi))?
                        .fill_cache(false),
                    source: reader.source.clone(),
                    path: reader.path.clone(),
                    rows: self.batch_rows,
                    like: Sizes::default(),
                };
                Box::new(FilledBatches::new(rows, schema()))
            }
            Scan::Versions { db, view, lo, hi } => {
                // Refuses a closed database; reads the view the stream was made on.
                db.get(THE_DATABASE)?;
                Box::new(crate::versions_arrow::batches(
                    view,
                    Source::Read(Arc::clone(db)),
                    lo,
                    hi,
                    self.batch_rows,
                ))
            }
            Scan::Table(scan) => Box::new(FilledBatches::new(
                TableRows::new(scan, self.batch_rows),
                schema(),
            )),
        };
        stream_capsule(py, batches)
    }

    /// The Arrow PyCapsule schema interface: a capsule named `arrow_schema` holding the
    /// batches' `ArrowSchema`.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema())
    }
}

/// A capsule named `arrow_array_stream` holding an `ArrowArrayStream` of `batches`.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    batches: Box<dyn RecordBatchReader + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(batches);
    let name = CString::new("arrow_array_stream").map_err(|e| Error::new_err(e.to_string()))?;
    PyCapsule::new(py, stream, Some(name))
}

/// A capsule named `arrow_schema` holding `schema` as an `ArrowSchema`.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyCapsule>> {
    let schema = FFI_ArrowSchema::try_from(schema).map_err(|e| Error::new_err(e.to_string()))?;
    let name = CString::new("arrow_schema").map_err(|e| Error::new_err(e.to_string()))?;
    PyCapsule::new(py, schema, Some(name))
}
