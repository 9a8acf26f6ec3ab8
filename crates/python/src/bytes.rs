//! Keys and values in: `bytes`, `bytearray` or `memoryview`; `str` is refused, since a key's
//! encoding is the caller's choice.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// The bytes of a bytes-like object: borrowed from `bytes`, copied from `bytearray` (whose
/// contents Python code may change) and `memoryview`.
///
/// # Errors
/// `TypeError` for `str` (with the hint to encode it) and for anything not bytes-like.
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let copy = obj.call_method0("tobytes")?;
        let copy = copy.cast::<PyBytes>()?;
        return Ok(Cow::Owned(copy.as_bytes().to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray or memoryview, not str: encode it, e.g. \
             key.encode()"
        )));
    }
    let type_name = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray or memoryview, not {type_name}"
    )))
}

/// `bytes` in hex, at most 64 bytes of them.
pub fn hex(bytes: &[u8]) -> String {
    let mut out: String = bytes.iter().take(64).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > 64 {
        out.push_str("...");
    }
    out
}
