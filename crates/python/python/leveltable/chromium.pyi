"""Type stubs of ``leveltable.chromium``."""

from typing import Any, Dict, Iterator, List, Optional

from leveltable._leveltable import StrPath

class Records(Iterator[Dict[str, Any]]):
    """The records of a Chromium LevelDB directory, one dict each."""

    def __iter__(self) -> "Records": ...
    def __next__(self) -> Dict[str, Any]: ...
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The records not yet read as Arrow record batches: ``key`` (the record's key as
        JSON text, null if it has none) and ``json`` (the record as JSON text), both
        ``string``. Takes the records: the iterator is then exhausted."""
    def __arrow_c_schema__(self) -> object: ...

def local_storage(path: StrPath, *, salvage: bool = False) -> Records:
    """Every ``localStorage`` item: dicts with ``origin``, ``key``, ``value``."""

def session_storage(path: StrPath, *, salvage: bool = False) -> Records:
    """Every ``sessionStorage`` item, once per tab holding it: dicts with ``namespace``,
    ``origin``, ``key``, ``value``, ``map_id``."""

def indexeddb(
    path: StrPath,
    database: Optional[str] = None,
    store: Optional[str] = None,
    salvage: bool = False,
) -> Records:
    """Every IndexedDB record (of the database and object store named): dicts with
    ``origin``, ``database``, ``store``, ``key``, ``value``; with ``salvage``, every version,
    with ``sequence`` and ``state``."""

def indexeddb_databases(path: StrPath, *, salvage: bool = False) -> List[Dict[str, Any]]:
    """The databases, object stores and indexes, with record and index entry counts."""
