//! The `key` and `value` columns of one Arrow record batch, written straight into the
//! buffers the batch then owns: one copy of each key and value from the reader's block into
//! a column's data, one 32-bit offset per row, no allocation per entry. The data buffers
//! come from, and go back to, the `column_pool`.
//!
//! A batch ends at `rows` rows, or once its keys or its values reach [`BATCH_BYTES`] (one
//! entry more if it alone is larger): a `binary` column's 32-bit offsets cap its data below
//! 2 GiB, and an entry that would pass that is refused ([`Columns::push`]).
//!
//! [`FilledBatches`] hands out the batches any [`FillBatch`] fills as an Arrow reader.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch, RecordBatchReader};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, SchemaRef};

/// Bytes of keys, or of values, in one batch at most (one entry more if it alone is
/// larger, up to the 2 GiB a `binary` column holds).
pub const BATCH_BYTES: usize = 256 << 20;

/// One `binary` column being written: its data end to end and the offset where each row
/// ends (the first offset, 0, starts the first row).
struct BinaryColumn {
    data: Vec<u8>,
    offsets: Vec<i32>,
}

impl BinaryColumn {
    fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        BinaryColumn {
            data: crate::column_pool::take(bytes),
            offsets,
        }
    }

    /// Whether `more` bytes still fit below the 2 GiB of 32-bit offsets.
    #[inline(always)]
    fn fits(&self, more: usize) -> bool {
        more < i32::MAX as usize - self.data.len()
    }

    #[inline(always)]
    fn push(&mut self, bytes: &[u8]) {
        // The first 16 bytes as a copy of fixed size, made inline where one of varying
        // size is a call: a key of 16 bytes is copied without one.
        match bytes.split_first_chunk::<16>() {
            Some((head, rest)) => {
                self.data.extend_from_slice(head);
                if !rest.is_empty() {
                    self.data.extend_from_slice(rest);
                }
            }
            None => self.data.extend_from_slice(bytes),
        }
        // Invariant: `fits` was checked, so the length is below `i32::MAX`.
        self.offsets.push(self.data.len() as i32);
    }

    fn finish(self) -> Result<BinaryArray, ArrowError> {
        let offsets = OffsetBuffer::new(ScalarBuffer::from(self.offsets));
        BinaryArray::try_new(offsets, crate::column_pool::into_buffer(self.data), None)
    }
}

/// The columns of one batch being written.
pub struct Columns {
    keys: BinaryColumn,
    values: BinaryColumn,
    rows: usize,
    max_rows: usize,
    /// The lengths of an entry refused for not fitting a column.
    too_large: Option<(usize, usize)>,
}

/// What a batch held, to size the next one's buffers: rows, key bytes and value bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sizes {
    rows: usize,
    key_bytes: usize,
    value_bytes: usize,
}

impl Columns {
    /// An empty batch of at most `max_rows` rows, its buffers sized as `like` (the batch
    /// before, or nothing): a scan's batches are usually alike, and the buffers then grow
    /// no more. The sizes are those of data read, never of a number read from a file.
    pub fn new(max_rows: usize, like: Sizes) -> Self {
        let rows = if like.rows == 0 {
            max_rows.min(4096)
        } else {
            like.rows
        };
        Columns {
            keys: BinaryColumn::with_capacity(rows, like.key_bytes),
            values: BinaryColumn::with_capacity(rows, like.value_bytes),
            rows: 0,
            max_rows,
            too_large: None,
        }
    }

    /// Appends an entry; `false` once the batch is full, or when the entry does not fit
    /// (then it is not appended, and [`into_batch`](Self::into_batch) is an error).
    #[inline(always)]
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> bool {
        if !self.keys.fits(key.len()) || !self.values.fits(value.len()) {
            self.too_large = Some((key.len(), value.len()));
            return false;
        }
        self.keys.push(key);
        self.values.push(value);
        self.rows += 1;
        self.rows < self.max_rows
            && self.keys.data.len() < BATCH_BYTES
            && self.values.data.len() < BATCH_BYTES
    }

    /// The key of the last row, if there is one.
    pub fn last_key(&self) -> Option<&[u8]> {
        let n = self.keys.offsets.len();
        let (start, end) = (
            *self.keys.offsets.get(n.checked_sub(2)?)?,
            self.keys.offsets[n - 1],
        );
        // Invariant: the offsets ascend from 0 to the data's length (`push`).
        self.keys.data.get(start as usize..end as usize)
    }

    /// What the batch holds, to size the next one.
    fn sizes(&self) -> Sizes {
        Sizes {
            rows: self.rows,
            key_bytes: self.keys.data.len(),
            value_bytes: self.values.data.len(),
        }
    }

    /// The filled batch with `schema`'s columns, `like` set to what it holds: an error for
    /// an entry refused (read from `path`), or `None`, and `exhausted` set, if it has no row.
    pub fn into_batch(
        self,
        path: &std::path::Path,
        schema: &SchemaRef,
        like: &mut Sizes,
        exhausted: &mut bool,
    ) -> Filled {
        if let Some(lengths) = self.too_large {
            return Err(too_large_error(path, lengths));
        }
        if self.rows == 0 {
            *exhausted = true;
            return Ok(None);
        }
        *like = self.sizes();
        self.finish(schema).map(Some)
    }

    /// The record batch, with `schema`'s two `binary` columns.
    ///
    /// # Errors
    /// None in practice: the offsets ascend and end at the data's length by construction.
    fn finish(self, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.keys.finish()?),
            Arc::new(self.values.finish()?),
        ];
        RecordBatch::try_new(Arc::clone(schema), columns)
    }
}

/// The error for an entry refused by [`Columns::push`].
pub fn too_large_error(path: &std::path::Path, (key, value): (usize, usize)) -> ArrowError {
    ArrowError::ExternalError(
        format!(
            "{}: an entry of {key} + {value} bytes does not fit a binary column",
            path.display()
        )
        .into(),
    )
}

/// The error for an entry that could not be read from `path`.
pub fn read_error(path: &std::path::Path, e: impl std::fmt::Display) -> ArrowError {
    ArrowError::ExternalError(format!("{}: {e}", path.display()).into())
}

/// The next record batch of a [`FillBatch`], `None` if no row is left.
pub type Filled = Result<Option<RecordBatch>, ArrowError>;

/// What a [`FilledBatches`] reads from: rows handed out one batch at a time.
pub trait FillBatch {
    /// Fills the next batch with `schema`'s columns, setting `exhausted` once the rows have
    /// run out.
    fn fill(&mut self, schema: &SchemaRef, exhausted: &mut bool) -> Filled;
}

/// Record batches filled by a [`FillBatch`], ending after the rows run out or at the first
/// error.
pub struct FilledBatches<F> {
    rows: F,
    schema: SchemaRef,
    done: bool,
}

impl<F> FilledBatches<F> {
    /// The batches `rows` fills, with the columns of `schema`.
    pub fn new(rows: F, schema: SchemaRef) -> Self {
        FilledBatches {
            rows,
            schema,
            done: false,
        }
    }
}

impl<F: FillBatch> Iterator for FilledBatches<F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.rows.fill(&self.schema, &mut self.done) {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<F: FillBatch> RecordBatchReader for FilledBatches<F> {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
