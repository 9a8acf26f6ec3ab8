//! The exceptions of the package: one base, `leveltable.Error`, with a subclass per kind of
//! failure; I/O errors are `OSError` (with its subclasses, such as `FileNotFoundError`).

use std::io;
use std::path::Path;

use leveltable_db::filename::{FileType, parse_file_name};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

create_exception!(
    leveltable,
    Error,
    PyException,
    "The base of every error leveltable raises, other than OSError."
);
create_exception!(
    leveltable,
    CorruptionError,
    Error,
    "A file's bytes are not what the format says: a bad checksum, a malformed block, a \
     truncated table."
);
create_exception!(
    leveltable,
    KeyOrderError,
    Error,
    "A key given to a builder does not sort strictly after the previous one."
);
create_exception!(
    leveltable,
    InvalidArgumentError,
    Error,
    "An argument or option out of its range, a builder used after it finished, or a path \
     where a FIFO, a device, a socket or a symbolic link stands instead of a regular file."
);
/// `leveltable.ClosedError`: the table, database or builder was closed. A subclass of
/// `Error` and of `RuntimeError`, which plyvel raises for a closed database, so that code
/// written for plyvel catches it.
pub struct ClosedError;

/// The class, made once: `type("ClosedError", (Error, RuntimeError), ...)`.
static CLOSED_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

impl ClosedError {
    /// The class.
    pub fn type_object(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
        CLOSED_ERROR
            .get_or_try_init(py, || {
                let bases = PyTuple::new(
                    py,
                    [py.get_type::<Error>(), py.get_type::<PyRuntimeError>()],
                )?;
                let namespace = PyDict::new(py);
                namespace.set_item("__module__", "leveltable")?;
                namespace.set_item(
                    "__doc__",
                    "The table, database or builder was closed (also a RuntimeError, as \
                     plyvel raises for a closed database).",
                )?;
                let class = py.import("builtins")?.getattr("type")?.call1((
                    "ClosedError",
                    bases,
                    namespace,
                ))?;
                Ok::<_, PyErr>(class.cast_into::<PyType>()?.unbind())
            })
            .map(|class| class.bind(py))
    }

    /// The exception, saying `message`.
    pub fn new_err(message: impl Into<String>) -> PyErr {
        let message = message.into();
        Python::attach(|py| match Self::type_object(py) {
            Ok(class) => PyErr::from_type(class.clone(), message),
            Err(e) => e,
        })
    }
}

/// An I/O error on `path` as Python's `OSError(errno, message, filename)`, which Python turns
/// into the matching subclass (`FileNotFoundError`, `PermissionError`, ...).
pub fn os_error(path: &Path, e: &io::Error) -> PyErr {
    let message = e.to_string();
    let message = match message.find(" (os error ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    };
    let filename = path.display().to_string();
    match (e.raw_os_error(), e.kind()) {
        (Some(errno), _) => PyOSError::new_err((errno, message, filename)),
        // What stands where a file should be, refused before it is opened or read: a
        // FIFO, a device, a socket or a link (`a FIFO, not a regular file`) is no failure
        // of the system, and a directory is Python's `IsADirectoryError`.
        (None, io::ErrorKind::InvalidInput) if message.starts_with(&filename) => {
            InvalidArgumentError::new_err(message)
        }
        (None, io::ErrorKind::InvalidInput) => {
            InvalidArgumentError::new_err(format!("{filename}: {message}"))
        }
        (None, io::ErrorKind::IsADirectory) => PyOSError::new_err((EISDIR, message, filename)),
        (None, _) => PyOSError::new_err(format!("{filename}: {message}")),
    }
}

/// The `errno` of a directory where a file should be (the same on Linux, the BSDs and
/// macOS), which Python's `OSError` turns into `IsADirectoryError`.
const EISDIR: i32 = 21;

/// A table error on the file at `path` as the matching exception, naming the file.
pub fn table_error(path: &Path, e: leveltable_table::Error) -> PyErr {
    use leveltable_table::Error as E;
    let name = path.display();
    match e {
        E::Io(io) => os_error(path, &io),
        E::KeyOutOfOrder { .. } => KeyOrderError::new_err(format!("{name}: {e}")),
        E::InvalidArgument(_) => InvalidArgumentError::new_err(format!("{name}: {e}")),
        e if e.is_corruption() => CorruptionError::new_err(format!("{name}: {e}")),
        e => Error::new_err(format!("{name}: {e}")),
    }
}

/// A database error on `path` as the matching exception, naming the path.
/// An option out of its range (the library's `Error::OptionOutOfRange`) as
/// `InvalidArgumentError`, naming the Python keyword `keyword` that set it: "`keyword` is
/// `value`: it must be from `min` to `max`" (or "at least `min`" without an upper bound).
pub fn option_error(keyword: &str, value: u64, min: u64, max: u64) -> PyErr {
    let range = if max == u64::MAX {
        format!("at least {min}")
    } else {
        format!("from {min} to {max}")
    };
    InvalidArgumentError::new_err(format!("{keyword} is {value}: it must be {range}"))
}

pub fn db_error(path: &Path, e: leveltable_db::Error) -> PyErr {
    use leveltable_db::Error as E;
    match e {
        E::Table(e) => table_error(path, e),
        E::TableFile { file, source } => table_error(&file, source),
        E::Io { path, source } | E::FileOp { path, source, .. } => os_error(&path, &source),
        E::InvalidArgument(_)
        | E::TooLong { .. }
        | E::OptionOutOfRange { .. }
        | E::NoDatabase { .. } => InvalidArgumentError::new_err(e.to_string()),
        E::DuplicateKey { .. } => KeyOrderError::new_err(format!(
            "{}: {} (keep the last one with dedup=\"last\")",
            path.display(),
            e.to_string().trim_start_matches("db: ")
        )),
        e if e.is_corruption() => CorruptionError::new_err(e.to_string()),
        e => Error::new_err(e.to_string()),
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("KeyOrderError", py.get_type::<KeyOrderError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("ClosedError", ClosedError::type_object(py)?)?;
    Ok(())
}

/// The error for a database that does not open: a directory that is not there is
/// `FileNotFoundError` (a file, `NotADirectoryError`), and one without CURRENT or any other
/// file of a database is `leveltable.Error` saying it is not a database; the rest as
/// [`db_error`] says.
pub fn open_error(path: &Path, e: leveltable_db::Error) -> PyErr {
    let no_current = matches!(
        &e,
        leveltable_db::Error::MissingFile { file, .. } if file.as_os_str() == "CURRENT"
    );
    if !no_current {
        return db_error(path, e);
    }
    match std::fs::metadata(path) {
        Err(io) => return os_error(path, &io),
        Ok(m) if !m.is_dir() => {
            let io = std::io::Error::from_raw_os_error(20); // ENOTDIR
            return os_error(path, &io);
        }
        Ok(_) => {}
    }
    let holds_database_files = std::fs::read_dir(path).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry.file_name().to_str().is_some_and(|name| {
                matches!(
                    parse_file_name(name),
                    Some(FileType::Manifest(_) | FileType::Table(_) | FileType::Log(_))
                )
            })
        })
    });
    if holds_database_files {
        return db_error(path, e);
    }
    Error::new_err(format!(
        "{}: not a LevelDB database: no CURRENT file",
        path.display()
    ))
}
