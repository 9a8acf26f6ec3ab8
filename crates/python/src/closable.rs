//! The state shared by the package's closable objects (`Table`, `Db`): a value that readers
//! take a reference to, until `close()` drops the object's own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::ClosedError;

/// A value held until closed. Iterators and snapshots made from it hold their own `Arc`, so
/// closing never pulls a value from under a reader.
pub struct Closable<T> {
    inner: RwLock<Option<Arc<T>>>,
    runs: Arc<OpenRuns>,
}

impl<T> Closable<T> {
    /// Holds `value`.
    pub fn new(value: T) -> Self {
        Closable {
            inner: RwLock::new(Some(Arc::new(value))),
            runs: Arc::default(),
        }
    }

    /// The value, or `ClosedError` saying `what` is closed (`"the table"`).
    pub fn get(&self, what: &str) -> PyResult<Arc<T>> {
        let guard = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        guard
            .clone()
            .ok_or_else(|| ClosedError::new_err(format!("{what} is closed")))
    }

    /// Whether `close()` was called.
    pub fn is_closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Holds `value` instead of the value held now (readers keep the one they took);
    /// `ClosedError` saying `what` is closed if it is.
    pub fn replace(&self, value: T, what: &str) -> PyResult<()> {
        let mut guard = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(held) => {
                *held = Arc::new(value);
                Ok(())
            }
            None => Err(ClosedError::new_err(format!("{what} is closed"))),
        }
    }

    /// The entries handed out to Python loops over the value, emptied at close.
    pub fn runs(&self) -> &Arc<OpenRuns> {
        &self.runs
    }

    /// Drops this object's reference to the value.
    pub fn close(&self) {
        self.take();
    }

    /// Closes, handing over this object's reference to the value (`None` if it was
    /// closed already), and empties the entries its loops were handed.
    pub fn take(&self) -> Option<Arc<T>> {
        let taken = self
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.runs.close();
        taken
    }
}

/// The lists of entries Python loops over a closable value were handed whole (a chunk at a
/// time, which the loop takes at the speed of Python's own iterators) and may not have
/// taken yet, one set per iterator. Closing empties them, so a loop stops at its next
/// entry and asks for the next chunk, which raises `ClosedError`, rather than yielding
/// entries read before the close.
#[derive(Default)]
pub struct OpenRuns {
    state: Mutex<Runs>,
}

#[derive(Default)]
struct Runs {
    closed: bool,
    next_id: u64,
    lists: HashMap<u64, Vec<Py<PyList>>>,
}

impl OpenRuns {
    fn state(&self) -> std::sync::MutexGuard<'_, Runs> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new iterator's id.
    pub fn register(&self) -> u64 {
        let mut state = self.state();
        let id = state.next_id;
        state.next_id = id.wrapping_add(1);
        id
    }

    /// Keeps `lists` as what iterator `id` handed out last (emptied at once if the value
    /// was closed since the iterator checked it).
    pub fn hold(&self, py: Python<'_>, id: u64, lists: Vec<Py<PyList>>) -> PyResult<()> {
        // Lists are emptied and dropped outside the lock: no Python work under it.
        let (refused, replaced) = {
            let mut state = self.state();
            if state.closed {
                (Some(lists), None)
            } else {
                (None, state.lists.insert(id, lists))
            }
        };
        drop(replaced);
        for list in refused.iter().flatten() {
            empty(list.bind(py))?;
        }
        Ok(())
    }

    /// Forgets what iterator `id` handed out (it ended or was dropped).
    pub fn release(&self, id: u64) {
        let released = self.state().lists.remove(&id);
        drop(released);
    }

    /// Empties every list handed out, and those handed out from now on.
    fn close(&self) {
        let lists = {
            let mut state = self.state();
            state.closed = true;
            std::mem::take(&mut state.lists)
        };
        if lists.is_empty() {
            return;
        }
        Python::attach(|py| {
            for list in lists.values().flatten() {
                // Emptying a list of `bytes` runs no Python code, and cannot fail.
                let _ = empty(list.bind(py));
            }
        });
    }
}

/// Removes every item of `list` (its iterators then stop).
fn empty(list: &Bound<'_, PyList>) -> PyResult<()> {
    list.call_method0("clear").map(drop)
}
