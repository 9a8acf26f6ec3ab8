//! Binary and string columns of pyarrow record batches, read through their buffers: one copy
//! of the offsets and one of the data per batch (`Buffer.to_pybytes`), never a Python object
//! per row. The stable ABI (`abi3`) has no buffer protocol, so the bytes come as `bytes`.
//!
//! A column of `binary` or `string` (UTF-8, read as its bytes) has 32-bit offsets;
//! `large_binary` and `large_string` have 64-bit ones. Row `i` of an array at `offset` spans
//! `data[offsets[offset + i] .. offsets[offset + i + 1]]`; bit `offset + i` of the validity
//! bitmap (least significant bit first) is 0 for a null.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::InvalidArgumentError;

/// One column of one batch: row `i` is `data[offsets[i] - base .. offsets[i + 1] - base]`.
pub struct BinaryColumn<'py> {
    offsets: Vec<usize>,
    /// The column's data, from its first row's start to its last row's end.
    data: Bound<'py, PyBytes>,
    base: usize,
}

impl<'py> BinaryColumn<'py> {
    /// Column `name` of `batch` (a `pyarrow.RecordBatch`, or a `pyarrow.Table` whose column
    /// has exactly one chunk).
    ///
    /// # Errors
    /// `InvalidArgumentError` for a missing column, a type other than (large) binary or
    /// string, a null (naming the column), or buffers that do not hold what the offsets say.
    pub fn of(batch: &Bound<'py, PyAny>, name: &str) -> PyResult<BinaryColumn<'py>> {
        let bad = |what: String| InvalidArgumentError::new_err(format!("column {name:?}: {what}"));
        let index: isize = batch
            .getattr("schema")?
            .call_method1("get_field_index", (name,))?
            .extract()?;
        if index < 0 {
            return Err(bad("no such column in the batch".to_owned()));
        }
        let mut array = batch.call_method1("column", (index,))?;
        if array.hasattr("chunks")? {
            let chunks = array.getattr("chunks")?;
            array = match chunks.len()? {
                0 => return Ok(BinaryColumn::empty(batch.py())),
                1 => chunks.get_item(0)?,
                n => return Err(bad(format!("{n} chunks; pass record batches"))),
            };
        }
        let type_name = array.getattr("type")?.str()?.to_string();
        let width = match type_name.as_str() {
            "binary" | "string" => 4,
            "large_binary" | "large_string" => 8,
            other => {
                return Err(bad(format!(
                    "type {other}, not binary, string, large_binary or large_string"
                )));
            }
        };
        let len: usize = array.len()?;
        if len == 0 {
            return Ok(BinaryColumn::empty(batch.py()));
        }
        let offset: usize = array.getattr("offset")?.extract()?;
        let buffers = array.call_method0("buffers")?;
        let null_count: usize = array.getattr("null_count")?.extract()?;
        if null_count > 0 {
            let row = first_null(&buffers.get_item(0)?, offset, len)?;
            return Err(bad(format!("null in row {row} of a batch")));
        }
        // Only the offsets of these rows: len + 1 of them from `offset`.
        let start = offset
            .checked_mul(width)
            .ok_or_else(|| bad("offset out of range".to_owned()))?;
        let raw = slice(&buffers.get_item(1)?, start, (len + 1) * width)
            .map_err(|_| bad("offsets buffer shorter than the array".to_owned()))?;
        let offsets = decode_offsets(raw.as_bytes(), width)
            .ok_or_else(|| bad("offsets decrease or overflow".to_owned()))?;
        let (base, end) = (offsets[0], offsets[len]);
        let data = slice(&buffers.get_item(2)?, base, end - base)
            .map_err(|_| bad("data buffer shorter than the offsets say".to_owned()))?;
        if data.as_bytes().len() != end - base {
            return Err(bad("data buffer shorter than the offsets say".to_owned()));
        }
        Ok(BinaryColumn {
            offsets,
            data,
            base,
        })
    }

    fn empty(py: Python<'py>) -> BinaryColumn<'py> {
        BinaryColumn {
            offsets: vec![0],
            data: PyBytes::new(py, b""),
            base: 0,
        }
    }

    /// Its rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Its rows' bytes, borrowed: `Send`, so they can be read with the GIL released.
    pub fn rows(&self) -> Rows<'_> {
        Rows {
            offsets: &self.offsets,
            data: self.data.as_bytes(),
            base: self.base,
        }
    }
}

/// The rows of a [`BinaryColumn`].
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    offsets: &'a [usize],
    data: &'a [u8],
    base: usize,
}

impl<'a> Rows<'a> {
    /// Row `i`; `i` must be below the column's length.
    pub fn get(&self, i: usize) -> &'a [u8] {
        // Invariant (checked in `BinaryColumn::of`): the offsets never decrease, the first is
        // `base` and the last is `base + data.len()`, so the range is inside `data`.
        &self.data[self.offsets[i] - self.base..self.offsets[i + 1] - self.base]
    }
}

/// `buffer[start .. start + len]` as `bytes` (one copy), checked against its size.
fn slice<'py>(
    buffer: &Bound<'py, PyAny>,
    start: usize,
    len: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    if buffer.is_none() {
        return Err(InvalidArgumentError::new_err("missing buffer"));
    }
    let size: usize = buffer.getattr("size")?.extract()?;
    if start.checked_add(len).is_none_or(|end| end > size) {
        return Err(InvalidArgumentError::new_err("buffer too short"));
    }
    Ok(buffer
        .call_method1("slice", (start, len))?
        .call_method0("to_pybytes")?
        .cast_into::<PyBytes>()?)
}

/// Little-endian offsets of `width` bytes (Arrow's in-memory layout is the host's; every
/// platform Spark runs on is little-endian), checked never to decrease.
fn decode_offsets(raw: &[u8], width: usize) -> Option<Vec<usize>> {
    let offsets: Vec<usize> = raw
        .chunks_exact(width)
        .map(|b| match width {
            4 => usize::try_from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok(),
            _ => usize::try_from(i64::from_le_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ]))
            .ok(),
        })
        .collect::<Option<_>>()?;
    (offsets.windows(2).all(|w| w[0] <= w[1]) && !offsets.is_empty()).then_some(offsets)
}

/// The first row whose validity bit is 0.
fn first_null(validity: &Bound<'_, PyAny>, offset: usize, len: usize) -> PyResult<usize> {
    let bytes = slice(
        validity,
        offset / 8,
        (offset + len).div_ceil(8) - offset / 8,
    )?;
    let bits = bytes.as_bytes();
    let bit = |i: usize| {
        let at = offset % 8 + i;
        bits[at / 8] >> (at % 8) & 1
    };
    Ok((0..len).find(|&i| bit(i) == 0).unwrap_or(0))
}
