"""Prints, as JSON lines, every LevelDB record dfindexeddb finds in a Chromium IndexedDB
LevelDB directory, with the key as dfindexeddb decodes it: python dfindexeddb_keys.py DIR.

Run by tests/dfindexeddb.rs with the Python that has dfindexeddb installed. Records are
read with dfindexeddb's sequence-number mode (every .log and .ldb file in the directory; the
newest version of each key is not `recovered`); values are not decoded. A key dfindexeddb
fails to decode is printed with its `error`.

Each line: {"file", "sequence", "type" (1 put, 0 deletion), "recovered", "key_hex", and
either "error" or "class" (dfindexeddb's key class), "prefix" ([database, object store,
index] ids), for names, metadata and free lists the "fields" in the key (names, metadata
type, ids), and for record, exists, blob and index keys, "key" (and for index keys
"sequence_number" and "primary_key")}, keys as {"number": x}, {"date": ms},
{"string": [UTF-16 code units]}, {"binary": "hex"}, {"array": [...]}, {"min": null} or
{"null": null}; numbers (and dates' milliseconds) as their 64 bits in hexadecimal.
"""
import datetime
import json
import os
import pathlib
import struct
import sys

from dfindexeddb.indexeddb.chromium import definitions
from dfindexeddb.indexeddb.chromium import record as chromium_record
from dfindexeddb.leveldb import record as leveldb_record

EPOCH = datetime.datetime(1970, 1, 1)


def number(x):
    """A float's bits, in hexadecimal: exact, whatever reads the JSON."""
    return struct.pack(">d", x).hex()


def plain(value):
    """An array item: dfindexeddb keeps only its Python value."""
    if isinstance(value, float):
        return {"number": number(value)}
    if isinstance(value, datetime.datetime):
        return {"date": number((value - EPOCH) / datetime.timedelta(milliseconds=1))}
    if isinstance(value, str):
        units = value.encode("utf-16-be", "surrogatepass")
        return {"string": [int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2)]}
    if isinstance(value, bytes):
        return {"binary": value.hex()}
    if isinstance(value, list):
        return {"array": [plain(v) for v in value]}
    if value is None:
        return {"null": None}
    raise TypeError(f"unexpected key value {value!r}")


def idb_key(key):
    if key is None:
        return None
    if key.type == definitions.IDBKeyType.MIN_KEY:
        return {"min": None}
    return plain(key.value)


def describe(k):
    out = {
        "class": type(k).__name__,
        "prefix": [k.key_prefix.database_id, k.key_prefix.object_store_id, k.key_prefix.index_id],
    }
    c = chromium_record
    if isinstance(k, c.DatabaseNameKey):
        out["fields"] = {"origin": k.origin, "name": k.database_name}
    elif isinstance(k, (c.ObjectStoreNamesKey,)):
        out["fields"] = {"name": k.object_store_name}
    elif isinstance(k, c.IndexNamesKey):
        out["fields"] = {"name": k.index_name}
    elif isinstance(k, c.DatabaseMetaDataKey):
        out["fields"] = {"type": int(k.metadata_type)}
    elif isinstance(k, c.ObjectStoreMetaDataKey):
        out["fields"] = {"object_store_id": k.object_store_id, "type": int(k.metadata_type)}
    elif isinstance(k, c.IndexMetaDataKey):
        out["fields"] = {"object_store_id": k.object_store_id, "index_id": k.index_id,
                         "type": int(k.metadata_type)}
    elif isinstance(k, c.DatabaseFreeListKey):
        out["fields"] = {"database_id": k.database_id}
    elif isinstance(k, (c.ObjectStoreFreeListKey, c.IndexFreeListKey)):
        out["fields"] = {"object_store_id": k.object_store_id}
    if isinstance(k, (chromium_record.ObjectStoreDataKey, chromium_record.ExistsEntryKey)):
        out["key"] = idb_key(k.encoded_user_key)
    elif isinstance(k, chromium_record.BlobEntryKey):
        out["key"] = idb_key(k.user_key)
    elif isinstance(k, chromium_record.IndexDataKey):
        out["key"] = idb_key(k.encoded_user_key)
        out["sequence_number"] = k.sequence_number
        out["primary_key"] = idb_key(k.encoded_primary_key)
    return out


def main():
    folder = pathlib.Path(sys.argv[1])
    reader = leveldb_record.FolderReader(folder)
    for r in reader.GetRecords(use_sequence_number=True):
        line = {
            "file": os.path.basename(r.path),
            "sequence": r.record.sequence_number,
            "type": int(r.record.record_type),
            "recovered": r.recovered,
            "key_hex": r.record.key.hex(),
        }
        try:
            line.update(describe(chromium_record.IndexedDbKey.FromBytes(r.record.key)))
        except Exception as e:  # every failure is a finding, reported per record
            line["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(line))


if __name__ == "__main__":
    main()
