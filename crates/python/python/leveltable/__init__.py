"""LevelDB tables and databases, read and built without the C++ library.

``Table`` reads one table file (``.ldb``, ``.sst``); ``TableBuilder`` writes one, byte for
byte as LevelDB 1.23 would. ``Db`` opens a whole database directory read-only (``Db.salvage``
reads what LevelDB's repair would recover), or with ``writable=True`` for writing, as
plyvel does; ``build_db`` bulk-builds one that LevelDB opens
and keeps using, and ``build_part`` (or ``build_part_arrow``, from Arrow record batches)
with ``commit_db`` builds one in parts, on many machines; ``leveltable.spark.write_leveldb``
does so from a Spark DataFrame.
Keys and values are bytes-like in and ``bytes`` out. ``leveltable.chromium`` decodes what
Chrome, Chromium and Electron apps keep in LevelDB (Local Storage, Session Storage,
IndexedDB). ``leveltable.plyvel`` is plyvel's API over it: change ``import plyvel`` into
``from leveltable import plyvel``.
"""

from leveltable._leveltable import (
    ArrowStream,
    ClosedError,
    CorruptionError,
    Cursor,
    Db,
    Entries,
    Error,
    Follow,
    FollowGapError,
    InvalidArgumentError,
    KeyOrderError,
    Part,
    Snapshot,
    Table,
    TableBuilder,
    WriteBatch,
    build_db,
    build_part,
    build_part_arrow,
    commit_db,
    repair_db,
)
from leveltable import chromium

__all__ = [
    "ArrowStream",
    "ClosedError",
    "CorruptionError",
    "Cursor",
    "Db",
    "Entries",
    "Error",
    "Follow",
    "FollowGapError",
    "InvalidArgumentError",
    "KeyOrderError",
    "Part",
    "Snapshot",
    "Table",
    "TableBuilder",
    "WriteBatch",
    "build_db",
    "build_part",
    "build_part_arrow",
    "chromium",
    "commit_db",
    "repair_db",
]
