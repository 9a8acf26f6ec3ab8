#![expect(unsafe_code, reason = "frees and reads buffers the shim allocated")]

use core::ffi::{CStr, c_char, c_int};
use core::fmt;

use crate::ffi;

/// The class of a non-OK `leveldb::Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusCode {
    /// `Status::NotFound`.
    NotFound,
    /// `Status::Corruption`.
    Corruption,
    /// `Status::NotSupported`.
    NotSupported,
    /// `Status::InvalidArgument`.
    InvalidArgument,
    /// `Status::IOError`.
    IoError,
}

/// What went wrong in a call into LevelDB.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// LevelDB returned a non-OK status; `message` is its `Status::ToString()`.
    Status {
        /// The status class.
        code: StatusCode,
        /// LevelDB's own text, e.g. `Corruption: block checksum mismatch`.
        message: String,
    },
    /// The input would trip an assertion compiled into LevelDB (aborting the process) or
    /// reach undefined behaviour in it, so it was refused before LevelDB saw it: keys out of
    /// order, an internal key shorter than 8 bytes, a filter block offset going backwards.
    Rejected {
        /// Why.
        reason: String,
    },
    /// LevelDB threw a C++ exception (in practice `std::bad_alloc` for an absurd
    /// allocation driven by corrupt input).
    Exception {
        /// The exception's `what()`.
        message: String,
    },
}

impl Error {
    /// Whether this is LevelDB's `Status::Corruption`.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Status {
                code: StatusCode::Corruption,
                ..
            }
        )
    }

    pub(crate) fn rejected(reason: impl Into<String>) -> Self {
        Error::Rejected {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Status { message, .. } => write!(f, "interop: leveldb status {message}"),
            Error::Rejected { reason } => write!(f, "interop: refused before leveldb: {reason}"),
            Error::Exception { message } => write!(f, "interop: leveldb threw {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// Receives the shim's `char** err` out-parameter and turns a status code plus message into
/// a `Result`, freeing the message.
pub(crate) struct ErrSlot(*mut c_char);

impl ErrSlot {
    pub(crate) fn new() -> Self {
        ErrSlot(core::ptr::null_mut())
    }

    pub(crate) fn as_out(&mut self) -> *mut *mut c_char {
        &mut self.0
    }

    /// `Ok(())` for `LT_OK`, otherwise the error the code and message describe.
    pub(crate) fn check(self, code: c_int) -> Result<()> {
        if code == ffi::LT_OK {
            return Ok(());
        }
        let message = self.message();
        let status = |code| Error::Status {
            code,
            message: message.clone(),
        };
        Err(match code {
            ffi::LT_NOT_FOUND => status(StatusCode::NotFound),
            ffi::LT_CORRUPTION => status(StatusCode::Corruption),
            ffi::LT_NOT_SUPPORTED => status(StatusCode::NotSupported),
            ffi::LT_INVALID_ARGUMENT => status(StatusCode::InvalidArgument),
            ffi::LT_IO_ERROR => status(StatusCode::IoError),
            ffi::LT_REJECTED => Error::Rejected { reason: message },
            ffi::LT_EXCEPTION => Error::Exception { message },
            other => Error::Exception {
                message: format!("unknown shim status {other}: {message}"),
            },
        })
    }

    /// Whether an error message was stored (the LevelDB C API's failure signal).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_null()
    }

    /// The message, or a placeholder when the shim could not allocate one.
    pub(crate) fn message(&self) -> String {
        if self.0.is_null() {
            return String::from("(no message)");
        }
        // SAFETY: a non-null pointer in the slot is a NUL-terminated string the shim or the
        // LevelDB C API allocated; it stays alive until `drop` frees it.
        unsafe { CStr::from_ptr(self.0) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for ErrSlot {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the message was malloc'd by the shim (`CopyString`) or by the LevelDB C
            // API (`strdup`); both are released with free(), which `lt_free` calls. It is
            // freed once: the slot owns it and is dropped once.
            unsafe { ffi::lt_free(self.0.cast()) };
        }
    }
}

/// Copies a shim-allocated buffer into a `Vec` and frees it.
pub(crate) fn take_bytes(bytes: ffi::LtBytes) -> Vec<u8> {
    if bytes.data.is_null() {
        return Vec::new();
    }
    // SAFETY: the shim filled `data` with a malloc'd buffer of `len` initialized bytes.
    let vec = unsafe { core::slice::from_raw_parts(bytes.data, bytes.len) }.to_vec();
    // SAFETY: the buffer came from malloc in the shim and is not used after this.
    unsafe { ffi::lt_free(bytes.data.cast()) };
    vec
}

/// Result of a call into LevelDB.
pub type Result<T> = std::result::Result<T, Error>;
