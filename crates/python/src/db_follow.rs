//! Following a database another process writes: `Db.refresh()` and the change feed
//! `Db.follow()`.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use leveltable_db::{ChangeOp, FollowEvent, Follower};
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::db_source::{Source, THE_DATABASE};
use crate::errors::{Error, db_error};

create_exception!(
    leveltable,
    FollowGapError,
    Error,
    "Sequences a follower needs are in no log any more (the writer moved them into tables \
     and deleted their logs): `first` and `last` name them. The way on is a snapshot: open \
     the database again, read it, and follow from the sequence after its `snapshot()`."
);

/// Refreshes of one process run one at a time, so a slower one cannot put back an older
/// view than a faster one left.
static REFRESHING: Mutex<()> = Mutex::new(());

/// `Db.refresh()`: the database's view brought up to what its writer has committed since;
/// whether anything changed. Snapshots and iterators made before keep their view.
pub fn refresh(py: Python<'_>, source: &Source) -> PyResult<bool> {
    let Source::Read(held) = source else {
        return Err(Error::new_err(
            "refresh() brings a database opened read-only up to what another process wrote; \
             a database open for writing is always current",
        ));
    };
    py.detach(|| {
        let _one = REFRESHING.lock().unwrap_or_else(PoisonError::into_inner);
        let db = held.get(THE_DATABASE)?;
        match db.refreshed().map_err(|e| db_error(db.path(), e))? {
            Some((new, refresh)) => {
                held.replace(new, THE_DATABASE)?;
                Ok(refresh.changed())
            }
            None => Ok(false),
        }
    })
}

/// `Db.follow(from_seq=None, poll_ms=10, poll_only=False)`: the change feed of a
/// read-only database.
pub fn follow(
    source: &Source,
    from_seq: Option<u64>,
    poll_ms: u64,
    poll_only: bool,
) -> PyResult<Follow> {
    let Source::Read(held) = source else {
        return Err(Error::new_err(
            "follow() reads the log of a database opened read-only while another process \
             writes it",
        ));
    };
    let db = held.get(THE_DATABASE)?;
    let poll = Duration::from_millis(poll_ms.max(1));
    Ok(Follow {
        follower: db.follow(from_seq).poll_interval(poll).poll_only(poll_only),
        path: db.path().to_owned(),
    })
}

/// The longest the GIL stays released in one wait, so that Ctrl-C is seen.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// The write batches another process commits to a database, once and in order, as it
/// commits them: an iterator that waits for the next (`Db.follow()`). Each item is a dict
/// `{"seq": N, "ops": [("put", key, value), ("del", key, None), …]}`: the batch's first
/// sequence number (its operations are at `N`, `N + 1`, …) and its operations in order.
/// Sequences no log holds any more raise `FollowGapError`.
#[pyclass(module = "leveltable")]
pub struct Follow {
    follower: Follower,
    path: PathBuf,
}

#[pymethods]
impl Follow {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch, waiting for the writer (the GIL released while waiting).
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        loop {
            let follower = &mut self.follower;
            let event = py.detach(|| follower.next_event_timeout(WAIT_SLICE));
            let event = event.map_err(|e: leveltable_db::Error| db_error(&self.path, e))?;
            match event {
                Some(FollowEvent::Batch(change)) => return batch_dict(py, change),
                Some(FollowEvent::Gap { first, last }) => {
                    let err = FollowGapError::new_err((
                        format!(
                            "sequences {first}..{last} are in no log any more: open the \
                             database again and follow from the sequence after its snapshot"
                        ),
                        first,
                        last,
                    ));
                    return Err(err);
                }
                None => py.check_signals()?,
            }
        }
    }

    /// The sequence of the next operation the feed will return.
    #[getter]
    fn next_seq(&self) -> u64 {
        self.follower.next_sequence()
    }

    /// Whether the feed waits on an inotify watch of the directory (known after the first
    /// `next()`, which sets the watch up; `False` before, with `poll_only=True`, or where
    /// it could not set one up).
    #[getter]
    fn watches_directory(&self) -> bool {
        self.follower.watches_directory()
    }
}

fn batch_dict(py: Python<'_>, change: leveltable_db::Change) -> PyResult<Bound<'_, PyDict>> {
    let ops = PyList::empty(py);
    for op in change.ops {
        let item = match op {
            ChangeOp::Put { key, value } => PyTuple::new(
                py,
                [
                    "put".into_pyobject(py)?.into_any(),
                    PyBytes::new(py, &key).into_any(),
                    PyBytes::new(py, &value).into_any(),
                ],
            )?,
            ChangeOp::Delete { key } => PyTuple::new(
                py,
                [
                    "del".into_pyobject(py)?.into_any(),
                    PyBytes::new(py, &key).into_any(),
                    py.None().into_bound(py),
                ],
            )?,
        };
        ops.append(item)?;
    }
    let dict = PyDict::new(py);
    dict.set_item("seq", change.sequence)?;
    dict.set_item("ops", ops)?;
    Ok(dict)
}

/// Adds `Follow` and `FollowGapError` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FollowGapError", m.py().get_type::<FollowGapError>())?;
    m.add_class::<Follow>()
}
