"""Type stubs of the native module behind the ``leveltable`` package."""

import os
from types import TracebackType
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Type, TypeVar, Union

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
    """An argument or option out of its range."""

class ClosedError(Error):
    """The table, database or builder was closed."""

class Entries(Iterator[_T]):
    """Entries in key order, read from Rust in chunks."""

    def __iter__(self) -> "Entries[_T]": ...
    def __next__(self) -> _T: ...
    def next_chunk(self) -> list[_T]:
        """The entries not yet handed out of the current chunk (or the next chunk), as a
        list; empty at the end."""

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
        """Writes the rest, syncs and moves the table into place; returns a summary."""
    def abandon(self) -> None:
        """Drops everything added; no file is left at ``path``."""
    def __enter__(self) -> "TableBuilder": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Snapshot:
    """A database as it was at one sequence number: later writes are invisible to it."""

    @property
    def sequence(self) -> int: ...
    def get(self, key: BytesLike) -> Optional[bytes]: ...
    def get_many(self, keys: Iterable[BytesLike]) -> list[Optional[bytes]]: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]: ...
    def range(
        self, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None
    ) -> Entries[Tuple[bytes, bytes]]: ...

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
    holds); another name raises ``leveltable.Error`` naming it."""

    def __init__(
        self,
        path: StrPath,
        *,
        verify_checksums: bool = True,
        cache_bytes: int = 8388608,
        max_open_tables: Optional[int] = None,
        table_memory: Optional[int] = None,
        profile: str = "auto",
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
    def get(self, key: BytesLike) -> Optional[bytes]: ...
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
    def snapshot(self, sequence: Optional[int] = None) -> Snapshot:
        """The database as it is now, or at an older sequence number."""
    def stats(self) -> dict[str, object]:
        """Files per level, logs replayed and bytes dropped, last sequence, comparator."""
    def verify(self) -> dict[str, int]:
        """Reads and checks every table and log record."""
    def close(self) -> None:
        """Closes the database. Its snapshots and iterators raise ``ClosedError`` from then
        on, as the ``Db`` does (a ``for`` loop over the ``Db`` itself first yields the
        entries it has already fetched, at most 1024)."""
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
