"""What Chrome, Chromium and Electron apps (Slack, Teams, VS Code, Discord, ...) keep in
LevelDB, decoded: Local Storage, Session Storage and IndexedDB.

Each function takes one LevelDB directory of a browser profile and yields one ``dict`` per
record. Reading never writes to the directory and takes no lock, so it works while the
browser runs: it reads the files as they are (what the browser has written to them).

- ``local_storage(path)``: ``Default/Local Storage/leveldb``; dicts with ``origin``,
  ``key``, ``value``.
- ``session_storage(path)``: ``Default/Session Storage``; dicts with ``namespace`` (the
  tab), ``origin``, ``key``, ``value``, ``map_id``.
- ``indexeddb(path, database=None, store=None, salvage=False)``:
  ``Default/IndexedDB/<origin>.indexeddb.leveldb``; dicts with ``origin``, ``database``,
  ``store``, ``key`` and ``value``, keys and values decoded to Python values (JSON's
  types), with ``{"type": ...}`` dicts for what JSON has no type for (``undefined``,
  BigInt, ``Date``, ``Map``, typed arrays, blobs, ...).
- ``indexeddb_databases(path)``: the databases, object stores and indexes, with record
  counts.

With ``salvage=True``, every version LevelDB's repair would find (the MANIFEST ignored),
each dict with ``sequence`` and ``state``: ``"live"``, ``"deleted"`` (``value`` is
``None``) or ``"shadowed"`` (an older version). A record that does not decode has ``None``
for what failed, an ``error`` naming what and where, and ``key_hex`` and ``value_hex``.

Each iterator is also an Arrow stream (``__arrow_c_stream__``): ``pyarrow.table(records)``,
``polars.DataFrame(records)`` or DuckDB's ``select ... from records`` read the records not
yet read as rows of ``key`` (the record's key as JSON text) and ``json`` (the whole record
as JSON text), with no Python object per record.

``leveltable.Db`` opens IndexedDB directories too (their comparator, ``idb_cmp1``, is
chosen by the name their MANIFEST records), for the raw keys and values.
"""

from leveltable._leveltable import chromium as _native

Records = _native.Records
local_storage = _native.local_storage
session_storage = _native.session_storage
indexeddb = _native.indexeddb
indexeddb_databases = _native.indexeddb_databases

__all__ = [
    "Records",
    "indexeddb",
    "indexeddb_databases",
    "local_storage",
    "session_storage",
]
