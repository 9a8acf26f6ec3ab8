//! The state shared by the package's closable objects (`Table`, `Db`): a value that readers
//! take a reference to, until `close()` drops the object's own.

use std::sync::{Arc, PoisonError, RwLock};

use pyo3::prelude::*;

use crate::errors::ClosedError;

/// A value held until closed. Iterators and snapshots made from it hold their own `Arc`, so
/// closing never pulls a value from under a reader.
pub struct Closable<T> {
    inner: RwLock<Option<Arc<T>>>,
}

impl<T> Closable<T> {
    /// Holds `value`.
    pub fn new(value: T) -> Self {
        Closable {
            inner: RwLock::new(Some(Arc::new(value))),
        }
    }

    /// The value, or `ClosedError` saying `what` is closed (`"the table"`).
    pub fn get(&self, what: &str) -> PyResult<Arc<T>> {
        let guard = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        guard
            .clone()
            .ok_or_else(|| ClosedError::new_err(format!("{what} is closed")))
    }

    /// Drops this object's reference to the value.
    pub fn close(&self) {
        self.take();
    }

    /// Closes, handing over this object's reference to the value (`None` if it was
    /// closed already).
    pub fn take(&self) -> Option<Arc<T>> {
        self.inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}
