"""LevelDB tables and databases, read and built without the C++ library.

``Table`` reads one table file (``.ldb``, ``.sst``); ``TableBuilder`` writes one, byte for
byte as LevelDB 1.23 would. Keys and values are bytes-like in and ``bytes`` out.
"""

from leveltable._leveltable import (
    ClosedError,
    CorruptionError,
    Entries,
    Error,
    InvalidArgumentError,
    KeyOrderError,
    Table,
    TableBuilder,
)

__all__ = [
    "ClosedError",
    "CorruptionError",
    "Entries",
    "Error",
    "InvalidArgumentError",
    "KeyOrderError",
    "Table",
    "TableBuilder",
]
