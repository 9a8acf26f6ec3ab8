"""plyvel's API over leveltable: change ``import plyvel`` into
``from leveltable import plyvel`` and a program written for plyvel runs on, with no C++
LevelDB library installed.

``DB``, ``repair_db``, ``destroy_db``, ``Error``, ``IOError``, ``CorruptionError``,
``IteratorInvalidError`` and ``__leveldb_version__`` have plyvel's names, signatures,
defaults and behaviour: a ``DB`` opens the directory for writing under LevelDB's lock, its
iterators move both ways and seek, ``raw_iterator()`` is LevelDB's own iterator,
``prefixed_db()`` views the keys under a prefix, and a closed database, snapshot or
iterator raises ``RuntimeError``.

Where they differ from plyvel:

- Iterators keep to their range where plyvel 1.5's leave it: after ``seek()`` a step back
  does not yield the entry before the start, and a seek to an excluded start does not
  yield it; a step back from past the end yields the range's first key, included, where
  plyvel stops; a seek past an included stop leaves the stop key behind the iterator.
- ``compression`` also takes leveltable's other codecs (``"zlib"``, ``"zstd"``, ...).
- A comparator that raises, or returns no integer, aborts the process after printing the
  error, as in plyvel.
- I/O errors after the open are ``OSError`` (plyvel: ``plyvel.IOError``); at the open they
  are ``plyvel.IOError``, which is an ``OSError`` too.
- ``verify_checksums`` and ``fill_cache`` are taken and not needed: blocks are always
  checked and read through the block cache.

Beyond plyvel, ``leveltable.Db(path)`` opens a database read-only without taking its lock
(so a database another process holds open can be read), reads Chromium's IndexedDB order
(``idb_cmp1``) and Minecraft Bedrock worlds, and ``leveltable.Db.salvage`` reads what a
repair would recover without changing a file.
"""

import builtins as _builtins
import os as _os

import leveltable as _leveltable
from leveltable import _leveltable as _native

__all__ = [
    "DB",
    "CorruptionError",
    "Error",
    "IOError",
    "IteratorInvalidError",
    "__leveldb_version__",
    "destroy_db",
    "repair_db",
]

#: The LevelDB release whose formats and behaviour leveltable follows.
__leveldb_version__ = "1.23"

#: plyvel's base exception: ``leveltable.Error``.
Error = _leveltable.Error
#: A corrupt file: ``leveltable.CorruptionError``.
CorruptionError = _leveltable.CorruptionError


class IOError(Error, _builtins.IOError):  # noqa: A001 (plyvel's name)
    """An I/O error opening a database."""


class IteratorInvalidError(Error):
    """A raw iterator read, or moved, while it is on no entry."""


_ClosedError = _leveltable.ClosedError


class DB(_native.Db):
    """A LevelDB database, opened for writing as plyvel opens it."""

    def __new__(
        cls,
        name,
        create_if_missing=False,
        error_if_exists=False,
        paranoid_checks=None,
        write_buffer_size=None,
        max_open_files=None,
        lru_cache_size=None,
        block_size=None,
        block_restart_interval=None,
        max_file_size=None,
        compression="snappy",
        bloom_filter_bits=0,
        comparator=None,
        comparator_name=None,
    ):
        if compression is not None and not isinstance(compression, str):
            raise TypeError("compression must be None or a str such as 'snappy'")
        try:
            db = _io_errors(
                _native.Db.__new__,
                cls,
                name,
                writable=True,
                create_if_missing=create_if_missing,
                error_if_exists=error_if_exists,
                paranoid_checks=paranoid_checks,
                write_buffer_size=write_buffer_size,
                max_open_files=max_open_files,
                lru_cache_size=lru_cache_size,
                block_size=block_size,
                block_restart_interval=block_restart_interval,
                max_file_size=max_file_size,
                compression=compression,
                bloom_filter_bits=bloom_filter_bits,
                comparator=comparator,
                comparator_name=comparator_name,
            )
        except _leveltable.InvalidArgumentError as e:
            if str(e).startswith("compression"):
                raise ValueError(str(e)) from None
            raise
        db._name = name
        return db

    @property
    def name(self):
        """The path the database was opened with."""
        return self._name

    #: ``iterator(*, reverse=False, start=None, stop=None, include_start=True,
    #: include_stop=False, prefix=None, include_key=True, include_value=True,
    #: verify_checksums=None, fill_cache=None)``
    iterator = _native.Db.cursor

    def write_batch(self, transaction=False, sync=False):
        """A batch of writes; as a context manager written when the block ends, even if
        it raised unless ``transaction=True``."""
        return _native.Db.write_batch(self, transaction=transaction, sync=sync)

    def raw_iterator(self, verify_checksums=None, fill_cache=None):
        """LevelDB's own iterator: ``seek_to_first``, ``seek_to_last``, ``seek``,
        ``next``, ``prev``, ``valid``, ``key``, ``value``, ``item``."""
        return RawIterator(self, self.cursor())

    def snapshot(self):
        """The database as it is now; later writes are invisible to it."""
        return Snapshot(self, _native.Db.snapshot(self))

    def prefixed_db(self, prefix):
        """The keys starting with ``prefix``, without it."""
        return PrefixedDB(self, _bytes(prefix, "prefix"))

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return "<plyvel.DB with name {!r} ({})>".format(self._name, state)


def _bytes(value, what):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("{} must be bytes, not {}".format(what, type(value).__name__))


class Snapshot:
    """A database as it was when the snapshot was taken (``DB.snapshot()``)."""

    __slots__ = ("_db", "_snapshot", "get", "iterator", "close", "release")

    def __init__(self, db, snapshot):
        self._db = db
        self._snapshot = snapshot
        self.get = snapshot.get
        self.iterator = snapshot.cursor
        self.close = snapshot.close
        self.release = snapshot.release

    def raw_iterator(self, verify_checksums=None, fill_cache=None):
        return RawIterator(self._db, self._snapshot.cursor())

    def __iter__(self):
        return iter(self._snapshot)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


class RawIterator:
    """LevelDB's iterator: on one entry, or on none (``valid()`` is then false)."""

    __slots__ = ("_db", "_cursor", "_entry", "_after", "_closed")

    def __init__(self, db, cursor):
        self._db = db
        self._cursor = cursor
        self._entry = None
        # Whether the cursor stands after the entry (reached by next) or before it.
        self._after = True
        self._closed = False

    def _check(self):
        if self._closed:
            raise _ClosedError("the iterator is closed")
        if self._db.closed:
            raise _ClosedError("the database is closed")

    def _forward(self):
        try:
            self._entry = next(self._cursor)
            self._after = True
        except StopIteration:
            self._entry = None

    def _backward(self):
        try:
            self._entry = self._cursor.prev()
            self._after = False
        except StopIteration:
            self._entry = None

    def valid(self):
        self._check()
        return self._entry is not None

    def seek_to_first(self):
        self._check()
        self._cursor.seek_to_start()
        self._forward()

    def seek_to_last(self):
        self._check()
        self._cursor.seek_to_stop()
        self._backward()

    def seek(self, target):
        self._check()
        self._cursor.seek(target)
        self._forward()

    def _current(self):
        self._check()
        if self._entry is None:
            raise IteratorInvalidError("the iterator is on no entry")
        return self._entry

    def next(self):
        self._current()
        if not self._after:
            next(self._cursor)
        self._forward()

    def prev(self):
        self._current()
        if self._after:
            self._cursor.prev()
        self._backward()

    def key(self):
        return self._current()[0]

    def value(self):
        return self._current()[1]

    def item(self):
        return self._current()

    def close(self):
        self._closed = True
        self._entry = None
        self._cursor.close()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


def _prefix_end(prefix):
    """The smallest key after every key starting with ``prefix``; None if none is."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class _PrefixedCursor:
    """A cursor over a prefixed database's range, its keys without the prefix."""

    __slots__ = ("_cursor", "_cut", "_include_key", "_include_value", "_prefix")

    def __init__(self, cursor, prefix, include_key, include_value):
        self._cursor = cursor
        self._prefix = prefix
        self._cut = len(prefix)
        self._include_key = include_key
        self._include_value = include_value

    def _shape(self, entry):
        key, value = entry
        if self._include_key and self._include_value:
            return key[self._cut :], value
        if self._include_key:
            return key[self._cut :]
        if self._include_value:
            return value
        return None

    def __iter__(self):
        return self

    def __next__(self):
        return self._shape(next(self._cursor))

    def prev(self):
        return self._shape(self._cursor.prev())

    def seek(self, target):
        self._cursor.seek(self._prefix + _bytes(target, "target"))

    def seek_to_start(self):
        self._cursor.seek_to_start()

    def seek_to_stop(self):
        self._cursor.seek_to_stop()

    def close(self):
        self._cursor.close()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


def _prefixed_iterator(make, prefix, reverse, start, stop, include_start, include_stop,
                       sub_prefix, include_key, include_value):
    if sub_prefix is not None:
        if start is not None or stop is not None:
            raise TypeError("'prefix' cannot be used together with 'start' or 'stop'")
        cursor = make(reverse=reverse, prefix=prefix + _bytes(sub_prefix, "prefix"))
    else:
        if start is None:
            start, include_start = prefix, True
        else:
            start = prefix + _bytes(start, "start")
        if stop is None:
            stop, include_stop = _prefix_end(prefix), False
        else:
            stop = prefix + _bytes(stop, "stop")
        cursor = make(
            reverse=reverse,
            start=start,
            stop=stop,
            include_start=include_start,
            include_stop=include_stop,
        )
    return _PrefixedCursor(cursor, prefix, include_key, include_value)


class PrefixedDB:
    """The keys of ``db`` starting with ``prefix``, seen without it
    (``DB.prefixed_db()``)."""

    def __init__(self, db, prefix):
        self._db = db
        self._prefix = prefix

    @property
    def db(self):
        """The database the keys are in."""
        return self._db

    @property
    def prefix(self):
        return self._prefix

    def get(self, key, default=None, verify_checksums=None, fill_cache=None):
        return self._db.get(self._prefix + _bytes(key, "key"), default)

    def put(self, key, value, sync=False):
        self._db.put(self._prefix + _bytes(key, "key"), value, sync=sync)

    def delete(self, key, sync=False):
        self._db.delete(self._prefix + _bytes(key, "key"), sync=sync)

    def write_batch(self, transaction=False, sync=False):
        return PrefixedWriteBatch(self._db.write_batch(transaction, sync), self._prefix)

    def iterator(self, reverse=False, start=None, stop=None, include_start=True,
                 include_stop=False, prefix=None, include_key=True, include_value=True,
                 verify_checksums=None, fill_cache=None):
        return _prefixed_iterator(self._db.cursor, self._prefix, reverse, start, stop,
                                  include_start, include_stop, prefix, include_key,
                                  include_value)

    def __iter__(self):
        return self.iterator()

    def snapshot(self):
        return PrefixedSnapshot(self._db.snapshot(), self._prefix)

    def prefixed_db(self, prefix):
        return PrefixedDB(self._db, self._prefix + _bytes(prefix, "prefix"))

    def __repr__(self):
        return "<plyvel.PrefixedDB with prefix {!r}>".format(self._prefix)


class PrefixedSnapshot:
    """A snapshot of a prefixed database."""

    def __init__(self, snapshot, prefix):
        self._snapshot = snapshot
        self._prefix = prefix

    def get(self, key, default=None, verify_checksums=None, fill_cache=None):
        return self._snapshot.get(self._prefix + _bytes(key, "key"), default)

    def iterator(self, reverse=False, start=None, stop=None, include_start=True,
                 include_stop=False, prefix=None, include_key=True, include_value=True,
                 verify_checksums=None, fill_cache=None):
        return _prefixed_iterator(self._snapshot._snapshot.cursor, self._prefix, reverse,
                                  start, stop, include_start, include_stop, prefix,
                                  include_key, include_value)

    def __iter__(self):
        return self.iterator()

    def raw_iterator(self, verify_checksums=None, fill_cache=None):
        """The snapshot's raw iterator, over every key (as plyvel's, not prefixed)."""
        return self._snapshot.raw_iterator()

    def close(self):
        self._snapshot.close()

    release = close

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()
        return False


class PrefixedWriteBatch:
    """A write batch of a prefixed database."""

    def __init__(self, batch, prefix):
        self._batch = batch
        self._prefix = prefix

    def put(self, key, value):
        self._batch.put(self._prefix + _bytes(key, "key"), value)

    def delete(self, key):
        self._batch.delete(self._prefix + _bytes(key, "key"))

    def clear(self):
        self._batch.clear()

    def write(self):
        self._batch.write()

    def append(self, other):
        self._batch.append(getattr(other, "_batch", other))

    def approximate_size(self):
        return self._batch.approximate_size()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return self._batch.__exit__(*args)


def destroy_db(name):
    """Deletes the database in ``name``, as LevelDB's ``DestroyDB``: under its lock, the
    files of a database are deleted, then the directory if nothing else is left in it.
    A directory that is missing (or not a directory) is no error; a database open in
    this process or another raises ``IOError`` and loses nothing."""
    _io_errors(_native.destroy_db, name)


def repair_db(
    name,
    paranoid_checks=None,
    write_buffer_size=None,
    max_open_files=None,
    lru_cache_size=None,
    block_size=None,
    block_restart_interval=None,
    max_file_size=None,
    compression="snappy",
    bloom_filter_bits=0,
    comparator=None,
    comparator_name=None,
):
    """Rebuilds the database in ``name`` from what its tables and logs hold, as LevelDB's
    ``RepairDB``: the newest version of each key is kept, a database whose MANIFEST is lost
    or damaged opens again. The files it replaces are moved to ``name/lost/``."""
    _io_errors(_leveltable.repair_db, name)


def _io_errors(call, *args, **kwargs):
    """``call(*args, **kwargs)``, its ``OSError`` raised as plyvel's ``IOError``."""
    try:
        return call(*args, **kwargs)
    except OSError as e:
        if isinstance(e, IOError):
            raise
        raise IOError(*e.args) from e


