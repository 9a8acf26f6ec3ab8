//! Paths in: `str`, `bytes` or any `os.PathLike`, as `os.fsdecode` takes them (bytes are the
//! file system's own bytes, as Python's `open` takes them).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyString;

/// A path argument, converted with `os.fsdecode`.
pub struct FsPath(pub PathBuf);

impl<'a, 'py> FromPyObject<'a, 'py> for FsPath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        // A `str` as it is; `bytes` and path-likes through `os.fsdecode`, which raises
        // TypeError naming what it takes for anything else. Undecodable bytes come back as
        // surrogate escapes, which the conversion to a path turns back into those bytes.
        let text = if obj.is_instance_of::<PyString>() {
            obj.to_owned()
        } else {
            py.import("os")?.getattr("fsdecode")?.call1((obj,))?
        };
        Ok(FsPath(text.extract::<PathBuf>()?))
    }
}
