"""Type stubs of the native module behind the ``leveltable`` package."""

import os
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Tuple, Type, TypeVar, Union

BytesLike = Union[bytes, bytearray, memoryview]
#: A path: ``str``, ``bytes`` (the file system's own bytes) or path-like, as ``os.fsdecode``
#: takes it.
StrPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_T = TypeVar("_T")

class Error(Exception):
    """The base of every error leveltable raises, other than OSError."""

class CorruptionError(Error):
    """A file's bytes are not what the format says: a bad checksum, a malformed block."""

class KeyOrderError(Error):
    """A key given to a builder does not sort strictly after the previous one."""

class InvalidArgumentError(Error):
    """An argument or option out of its range, or a path where a FIFO, a device, a socket
    or a symbolic link stands instead of a regular file."""

class ClosedError(Error, RuntimeError):
    """The table, database or builder was closed. Also a ``RuntimeError``, as plyvel raises
    for a closed database."""

class FollowGapError(Error):
    """Sequences ``first..last`` a follower needs are in no log any more (the writer moved
    them into tables and deleted their logs); ``args`` is ``(message, first, last)``. The
    way on: open the database again, read it, and follow from its newest sequence + 1."""

class Follow(Iterator[dict[str, Any]]):
    """The change feed of ``Db.follow()``: each write batch the writer commits, once and in
    order, as ``{"seq": N, "ops": [("put", key, value), ("del", key, None), ...]}`` (the
    operations are at sequences ``N``, ``N + 1``, ...). ``next()`` waits for the writer with
    the GIL released; a gap raises ``FollowGapError``."""
    def __iter__(self) -> "Follow": ...
    def __next__(self) -> dict[str, Any]: ...
    @property
    def next_seq(self) -> int:
        """The sequence of the next operation the feed will return."""
    @property
    def watches_directory(self) -> bool:
        """Whether the feed waits on an inotify watch of the directory (known after the
        first ``next()``, which sets the watch up; ``False`` before, with
        ``poll_only=True``, or where none could be set up)."""

class Cursor(Iterator[_T]):
    """plyvel's iterator (``Db.cursor()``, ``Snapshot.cursor()``): a position between two
    entries of a key range, reading the database as it was when made. ``next()`` yields
    the entry after the position (before it with ``reverse=True``) and moves past it;
    ``prev()`` the one the other way."""

    def __iter__(self) -> "Cursor[_T]": ...
    def __next__(self) -> _T: ...
    def prev(self) -> _T:
        """The entry the other way from ``next()``, moving the position before it;
        ``StopIteration`` at the range's start (at its end with ``reverse=True``)."""
    def seek(self, target: BytesLike) -> None:
        """Moves the position before the first entry whose key is at least ``target``."""
    def seek_to_start(self) -> None:
        """Moves the position before the range's first entry."""
    def seek_to_stop(self) -> None:
        """Moves the position after the range's last entry."""
    def close(self) -> None:
        """Closes the cursor: it raises ``ClosedError`` from then on."""
    def __enter__(self) -> "Cursor[_T]": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Entries(Iterator[_T]):
    """Entries in key order, read from Rust in chunks."""

    def __iter__(self) -> "Entries[_T]": ...
    def __next__(self) -> _T: ...
    def next_chunk(self) -> list[_T]:
        """The entries not yet handed out of the current chunk (or the next chunk), as a
        list; empty at the end."""
    def close(self) -> None:
        """Stops the iteration: it yields nothing more."""
    def __enter__(self) -> "Entries[_T]": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Table:
    """A LevelDB table file (``.ldb``, ``.sst``), read-only.

    ``verify_checksums`` checks each block's CRC as it is read; ``cache_bytes`` > 0 keeps
    recently read blocks in a cache of that many bytes. ``profile`` says which compression
    each block type byte names: ``"auto"`` (Google's and Mojang's LevelDB alike: Minecraft
    Bedrock's zlib and raw deflate, LevelDB's zstd), ``"leveldb"`` or ``"mojang"``. Lookups
    and scans release the GIL.
    """

    def __init__(
        self,
        path: StrPath,
        *,
        verify_checksums: bool = True,
        cache_bytes: int = 0,
        profile: str = "auto",
    ) -> None: ...
    def get(self, key: BytesLike) -> Optional[bytes]:
        """The value stored under ``key``, or ``None``."""
    def get_many(self, keys: Iterable[BytesLike]) -> list[Optional[bytes]]:
        """The values of ``keys`` in order, ``None`` for each absent key."""
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def range(
        self, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None
    ) -> Entries[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs with ``start <= key < stop``, in key order."""
    def keys(self) -> Entries[bytes]: ...
    def values(self) -> Entries[bytes]: ...
    def items(self) -> Entries[Tuple[bytes, bytes]]: ...
    def scan_arrow(
        self,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        *,
        prefix: Optional[BytesLike] = None,
        batch_rows: int = 65536,
    ) -> ArrowStream:
        """The entries with ``start <= key < stop`` (or starting with ``prefix``) as Arrow
        record batches of ``key`` and ``value`` (``binary``), as ``Db.scan_arrow()``."""
    def stats(self) -> dict[str, object]:
        """Sizes, blocks, filters, and the read counters so far."""
    def verify(self) -> dict[str, int]:
        """Reads and checks every block; raises ``CorruptionError`` at the first problem."""
    def close(self) -> None: ...
    def __enter__(self) -> "Table": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class TableBuilder:
    """Builds a table file at ``path``, atomically: it appears only when ``finish`` succeeds.

    Keys are added in strictly increasing bytewise order. As a context manager the builder
    finishes on success and abandons on an exception, leaving no file.
    """

    def __init__(
        self,
        path: StrPath,
        *,
        block_size: int = 4096,
        restart_interval: int = 16,
        compression: str = "snappy",
        bloom_bits: int = 10,
        extra_filter: Optional[str] = None,
    ) -> None: ...
    def add(self, key: BytesLike, value: BytesLike) -> None: ...
    def finish(self) -> dict[str, int]:
        """Writes the rest, syncs and moves the table into place; returns a summary. If the
        directory cannot be synced after the move (one that can be written but not read),
        the table is in place all the same, and a ``RuntimeWarning`` says that a crash soon
        after may undo the move."""
    def abandon(self) -> None:
        """Drops everything added; no file is left at ``path``."""
    def __enter__(self) -> "TableBuilder": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class ArrowStream:
    """A database's entries as Arrow record batches of ``key`` and ``value`` (``binary``)
    columns (``Db.scan_arrow()``), through the Arrow PyCapsule interface: pass it to
    ``pyarrow.RecordBatchReader.from_stream``, ``pyarrow.table``, ``polars.DataFrame``, or
    name it in DuckDB's SQL. It reads the database as it was when made; each consumer
    reads every entry again. Once the database is closed, a stream under way raises at its
    next batch, as an iterator does at its next entry."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """A capsule named ``arrow_array_stream`` holding an ``ArrowArrayStream``."""
    def __arrow_c_schema__(self) -> object:
        """A capsule named ``arrow_schema`` holding the batches' ``ArrowSchema``."""

class Snapshot:
    """A database as it was at one sequence number: later writes are invisible to it. A
    database open for writing keeps what its snapshots see through compactions until they
    are released (``release()``, or dropped)."""

    @property
    def sequence(self) -> int: ...
    def get(
        self,
        key: BytesLike,
        default: Optional[_T] = None,
        *,
        verify_checksums: Optional[bool] = None,
        fill_cache: Optional[bool] = None,
    ) -> Union[bytes, _T, None]:
        """The value of ``key``, or ``default`` if it is absent (plyvel's ``get``;
        ``verify_checksums`` and ``fill_cache`` are taken and not needed)."""
    def get_many(self, keys: Iterable[BytesLike]) -> list[Optional[bytes]]: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def range(
        self, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None
    ) -> Entries[Tuple[bytes, bytes]]: ...
    def cursor(
        self,
        *,
        reverse: bool = False,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[BytesLike] = None,
        include_key: bool = True,
        include_value: bool = True,
        verify_checksums: Optional[bool] = None,
        fill_cache: Optional[bool] = None,
    ) -> Cursor[Any]:
        """plyvel's iterator with ``prev``, ``seek``, ``seek_to_start`` and
        ``seek_to_stop``: the keywords of ``iterator()``. Reads at the
        snapshot, and goes on after it is released."""
    def iterator(
        self,
        *,
        reverse: bool = False,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[BytesLike] = None,
        include_key: bool = True,
        include_value: bool = True,
    ) -> Entries[Any]:
        """plyvel's ``iterator()``: entries from ``start`` to ``stop`` (``include_start``
        and ``include_stop`` say whether each bound is in) or those whose key starts with
        ``prefix`` (not with ``start`` or ``stop``: ``TypeError``), from the last down with
        ``reverse``; ``(key, value)`` pairs, keys, values, or ``None`` per entry as
        ``include_key`` and ``include_value`` say. A forward-only iterator: no ``seek``."""
    def scan_arrow(
        self,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        *,
        prefix: Optional[BytesLike] = None,
        batch_rows: int = 65536,
    ) -> ArrowStream:
        """The entries with ``start <= key < stop`` (or starting with ``prefix``) as Arrow
        record batches of at most ``batch_rows`` rows."""
    def release(self) -> None:
        """Releases the snapshot (plyvel's name): its reads raise ``ClosedError`` from then
        on; its iterators made before read on."""
    def close(self) -> None:
        """The same as ``release()``."""
    def __enter__(self) -> "Snapshot": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        """Releases the snapshot."""

class WriteBatch:
    """Puts and deletes applied together, atomically (a read sees all or none of them):
    ``Db.write_batch()``. As a context manager it is written when the ``with`` block ends,
    and dropped if the block raised (with ``transaction=False``, plyvel's default, written
    then too)."""

    def put(self, key: BytesLike, value: BytesLike) -> None: ...
    def delete(self, key: BytesLike) -> None: ...
    def write(self) -> None:
        """Applies the operations, with the GIL released; the batch keeps them."""
    def clear(self) -> None:
        """Drops the operations."""
    def approximate_size(self) -> int:
        """The bytes of the encoded batch."""
    def append(self, other: "WriteBatch") -> None:
        """Adds the operations of ``other`` after this batch's own."""
    def __len__(self) -> int: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Db:
    """A LevelDB database directory, opened read-only: nothing in it is created, changed,
    locked or deleted, so a database another process holds open can be read. Reads see the
    newest writes, those still in the log included.

    ``table_memory`` is the most bytes the open tables may keep in memory (their index and
    filter blocks, decompressed; default 512 MiB): past it, the least recently used are
    closed and reopened when needed, and a table that alone needs more raises
    ``InvalidArgumentError`` naming it and both sizes. A directory that is not there raises
    ``FileNotFoundError``; one without CURRENT or any other file of a database,
    ``leveltable.Error`` (not a database).

    The comparator is the one the MANIFEST names: LevelDB's bytewise order, or Chromium's
    IndexedDB order ``idb_cmp1`` (``leveltable.chromium`` decodes what such a database
    holds); another name raises ``leveltable.Error`` naming it.

    With ``writable=True`` the database is opened for writing, as plyvel opens it: under
    LevelDB's lock (held elsewhere: ``OSError`` naming the ``LOCK`` file), created with
    ``create_if_missing``, refused with ``error_if_exists`` if it exists. ``put``,
    ``delete``, ``write_batch`` and ``compact_range`` write; the reads see the writes. The
    other write options are LevelDB's, under plyvel's names: ``compression`` is
    ``"snappy"`` or ``None`` (or a codec name of ``TableBuilder``), ``bloom_filter_bits``
    adds LevelDB's Bloom filter to new tables. Without ``writable=True`` they raise
    ``InvalidArgumentError``, and the write methods ``leveltable.Error``.
    ``lru_cache_size`` and ``max_open_files`` are plyvel's names of ``cache_bytes`` and
    ``max_open_tables`` (plus LevelDB's 10 other files)."""

    def __init__(
        self,
        path: StrPath,
        *,
        verify_checksums: bool = True,
        cache_bytes: int = 8388608,
        max_open_tables: Optional[int] = None,
        table_memory: Optional[int] = None,
        profile: str = "auto",
        writable: bool = False,
        create_if_missing: bool = False,
        error_if_exists: bool = False,
        paranoid_checks: Optional[bool] = None,
        write_buffer_size: Optional[int] = None,
        max_file_size: Optional[int] = None,
        block_size: Optional[int] = None,
        block_restart_interval: Optional[int] = None,
        compression: Optional[str] = "snappy",
        bloom_filter_bits: int = 0,
        lru_cache_size: Optional[int] = None,
        max_open_files: Optional[int] = None,
        comparator: Optional[Callable[[bytes, bytes], int]] = None,
        comparator_name: Union[bytes, str, None] = None,
    ) -> None: ...
    @classmethod
    def salvage(
        cls,
        path: StrPath,
        *,
        verify_checksums: bool = True,
        cache_bytes: int = 8388608,
        max_open_tables: Optional[int] = None,
        table_memory: Optional[int] = None,
        profile: str = "auto",
    ) -> "Db":
        """What LevelDB's RepairDB would recover, read without writing anything."""
    def get(
        self,
        key: BytesLike,
        default: Optional[_T] = None,
        *,
        verify_checksums: Optional[bool] = None,
        fill_cache: Optional[bool] = None,
    ) -> Union[bytes, _T, None]:
        """The value of ``key``, or ``default`` if it is absent (plyvel's ``get``;
        ``verify_checksums`` and ``fill_cache`` are taken and not needed)."""
    def get_many(self, keys: Iterable[BytesLike]) -> list[Optional[bytes]]: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def range(
        self, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None
    ) -> Entries[Tuple[bytes, bytes]]: ...
    def keys(self) -> Entries[bytes]: ...
    def values(self) -> Entries[bytes]: ...
    def items(self) -> Entries[Tuple[bytes, bytes]]: ...
    def iterator(
        self,
        *,
        reverse: bool = False,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[BytesLike] = None,
        include_key: bool = True,
        include_value: bool = True,
    ) -> Entries[Any]:
        """plyvel's ``iterator()``: entries from ``start`` to ``stop`` (``include_start``
        and ``include_stop`` say whether each bound is in) or those whose key starts with
        ``prefix`` (not with ``start`` or ``stop``: ``TypeError``), from the last down with
        ``reverse``; ``(key, value)`` pairs, keys, values, or ``None`` per entry as
        ``include_key`` and ``include_value`` say. A forward-only iterator: no ``seek``."""
    def cursor(
        self,
        *,
        reverse: bool = False,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[BytesLike] = None,
        include_key: bool = True,
        include_value: bool = True,
        verify_checksums: Optional[bool] = None,
        fill_cache: Optional[bool] = None,
    ) -> Cursor[Any]:
        """plyvel's iterator with ``prev``, ``seek``, ``seek_to_start`` and
        ``seek_to_stop``: the keywords of ``iterator()``. Reads the
        database as it is when made."""
    def scan_arrow(
        self,
        start: Optional[BytesLike] = None,
        stop: Optional[BytesLike] = None,
        *,
        prefix: Optional[BytesLike] = None,
        batch_rows: int = 65536,
        snapshot: Optional[Snapshot] = None,
        versions: bool = False,
    ) -> ArrowStream:
        """The entries with ``start <= key < stop`` (or starting with ``prefix``) as Arrow
        record batches of at most ``batch_rows`` rows. ``snapshot``: one of the
        database's snapshots to read at. ``versions=True`` (a read-only ``Db`` or
        ``Db.salvage``): every stored version of those keys, newest first per key, with
        the columns ``key``, ``value`` (null for a deletion), ``sequence`` (``uint64``) and
        ``state`` (``"live"``, ``"deleted"`` or ``"shadowed"``). A bulk read, it adds none
        of the blocks it reads to the block cache."""
    def get_property(self, name: BytesLike) -> Optional[bytes]:
        """LevelDB's property ``name`` (open for writing): ``leveldb.stats``,
        ``leveldb.sstables``, ``leveldb.num-files-at-level<N>``,
        ``leveldb.approximate-memory-usage``; ``None`` for another name."""
    def approximate_size(self, start: BytesLike, stop: BytesLike) -> int:
        """The approximate bytes of table files holding the keys from ``start`` to
        ``stop`` (excluded)."""
    def approximate_sizes(self, *ranges: Tuple[BytesLike, BytesLike]) -> list[int]:
        """``approximate_size`` of each ``(start, stop)``."""
    def snapshot(self, sequence: Optional[int] = None) -> Snapshot:
        """The database as it is now, or (read-only) at an older sequence number."""
    def refresh(self) -> bool:
        """Brings a read-only view up to what another process (the database's writer) has
        committed since the open or the last refresh, reading only what it added;
        ``True`` if anything changed. The view stays a state the writer passed through;
        snapshots and iterators made before keep their view. Releases the GIL."""
    def follow(
        self, from_seq: Optional[int] = None, *, poll_ms: int = 10, poll_only: bool = False
    ) -> Follow:
        """The change feed of a read-only database: each batch the writer commits from
        sequence ``from_seq`` on (by default, those after this view). It waits on an
        inotify watch of the directory (Linux), looking at least every ``poll_ms``;
        elsewhere, or with ``poll_only=True``, it looks every ``poll_ms``."""
    def put(self, key: BytesLike, value: BytesLike, *, sync: bool = False) -> None:
        """Sets ``key`` to ``value``; ``sync=True`` syncs the log to disk first. Releases
        the GIL while writing."""
    def delete(self, key: BytesLike, *, sync: bool = False) -> None:
        """Deletes ``key`` (nothing happens if it is absent)."""
    def write_batch(self, *, sync: bool = False, transaction: bool = True) -> WriteBatch:
        """A batch of puts and deletes, applied atomically by ``write()`` or at the end of
        a ``with`` block; dropped if the block raised, unless ``transaction=False``."""
    def compact_range(
        self, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None
    ) -> None:
        """Compacts the keys from ``start`` to ``stop`` (both included) down the levels,
        as LevelDB's ``CompactRange``. Releases the GIL."""
    @property
    def writable(self) -> bool:
        """Whether the database is open for writing."""
    @property
    def closed(self) -> bool: ...
    def stats(self) -> dict[str, object]:
        """Files per level, logs replayed and bytes dropped, last sequence, comparator,
        ``block_cache_bytes`` (the block cache's size; 0 with ``cache_bytes=0``, no cache);
        open for writing: path, last sequence, files per level, compactions."""
    def verify(self) -> dict[str, int]:
        """Reads and checks every table and log record (a database open for writing: the
        tables of its current version)."""
    def close(self) -> None:
        """Closes the database. Its snapshots and iterators raise ``ClosedError`` from then
        on, as the ``Db`` does (a ``for`` loop over the ``Db`` itself too, at its next
        entry). Open for writing, it waits for its
        background work and releases the lock."""
    def __enter__(self) -> "Db": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Part:
    """One part of a distributed build: table files in a staging directory and the record
    describing them. Picklable."""

    @classmethod
    def load(cls, staging: StrPath) -> "Part": ...
    @classmethod
    def from_record(cls, record: str) -> "Part":
        """The part from its record (the text of its ``PART`` file)."""
    def to_record(self) -> str:
        """The record, as written to its ``PART`` file."""
    @property
    def staging(self) -> str: ...
    @property
    def entries(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def files(self) -> list[dict[str, object]]: ...
    @property
    def smallest(self) -> Optional[bytes]: ...
    @property
    def largest(self) -> Optional[bytes]: ...

def build_db(
    path: StrPath,
    items: Iterable[Tuple[BytesLike, BytesLike]],
    *,
    sort: bool = False,
    memory: Optional[int] = None,
    dedup: Optional[str] = None,
    threads: Optional[int] = None,
    max_file_size: Optional[int] = None,
    block_size: int = 4096,
    restart_interval: int = 16,
    compression: str = "snappy",
    bloom_bits: int = 10,
    extra_filter: Optional[str] = None,
) -> dict[str, int]:
    """Bulk-builds a LevelDB database at ``path`` (new or empty) from ``(key, value)`` pairs
    in strictly increasing key order, or any order with ``sort=True``."""

def build_part(
    staging: StrPath,
    items: Iterable[Tuple[BytesLike, BytesLike]],
    *,
    dedup: Optional[str] = None,
    threads: Optional[int] = None,
    max_file_size: Optional[int] = None,
    block_size: int = 4096,
    restart_interval: int = 16,
    compression: str = "snappy",
    bloom_bits: int = 10,
    extra_filter: Optional[str] = None,
) -> Part:
    """Builds one part of a database from pairs in increasing key order; a key given twice
    in a row is a ``KeyOrderError`` naming it, unless ``dedup="last"`` keeps the last."""

def build_part_arrow(
    staging: StrPath,
    batches: Iterable[Any],
    *,
    key_column: str = "key",
    value_column: str = "value",
    dedup: Optional[str] = None,
    threads: Optional[int] = None,
    max_file_size: Optional[int] = None,
    block_size: int = 4096,
    restart_interval: int = 16,
    compression: str = "snappy",
    bloom_bits: int = 10,
    extra_filter: Optional[str] = None,
) -> Part:
    """Builds one part of a database from pyarrow ``RecordBatch``es whose columns
    ``key_column`` and ``value_column`` are binary or string (UTF-8), in increasing key
    order; each column is read through its buffers, one copy per batch. A null is an
    ``InvalidArgumentError`` naming its column; duplicates as in ``build_part``."""

def commit_db(path: StrPath, parts: Sequence[Part]) -> dict[str, int]:
    """Commits parts (in key order, not overlapping) as the database ``path``."""

def destroy_db(name: StrPath) -> None:
    """Deletes the database in ``name`` under its lock, as LevelDB's ``DestroyDB``
    (``leveltable.plyvel.destroy_db``): ``OSError`` if a process, this one included, holds
    it open; a directory that is missing or not a directory is no error. ``CURRENT`` goes
    first, synced before any other file: one cut short leaves the whole database or no
    ``CURRENT``."""

def repair_db(
    src: StrPath,
    dest: Optional[StrPath] = None,
    report: Optional[StrPath] = None,
    drop_uncertain: bool = False,
) -> dict[str, Any]:
    """Repairs the database ``src`` without bringing deleted data back: into ``dest`` (a new
    or empty directory; ``src`` is not written), or in place without it (the original
    files kept in ``src/lost/``). ``report`` names a file for the JSON loss report;
    ``drop_uncertain`` leaves out keys whose newest version may have been lost. The repair
    is ordered by the comparator the MANIFEST names (bytewise, or IndexedDB's ``idb_cmp1``)
    and names it too. Returns keys, deleted, tables, bytes, lost, ignored, uncertain_keys
    and manifest."""

def plan_version(path: StrPath) -> dict[str, object]:
    """The version an open of ``path`` sees: ``comparator``, ``last_sequence``, ``logs``
    (``(number, bytes replayed)``) and ``levels`` (``(number, size, smallest, largest)``
    per table, internal keys)."""

class VersionScan:
    """The entries of ``path`` at ``version`` (a ``plan_version`` dict, perhaps with only
    some tables) in ``[start, stop)``, as chunks ``(rows, key_offsets, keys, value_offsets,
    values)``: the buffers of two Arrow binary arrays."""

    def __init__(
        self,
        path: StrPath,
        version: dict[str, object],
        start: bytes | None = None,
        stop: bytes | None = None,
    ) -> None: ...
    @property
    def tables(self) -> int: ...
    def opened(self) -> int: ...
    def __iter__(self) -> VersionScan: ...
    def __next__(self) -> tuple[int, bytes, bytes, bytes, bytes]: ...
