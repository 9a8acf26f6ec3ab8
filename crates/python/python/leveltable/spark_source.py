"""Reading LevelDB databases with Spark: the data source ``leveldb``.

``register(spark)`` adds it to a session; then
``spark.read.format("leveldb").load(PATH)`` reads one database directory, or every database
under a directory or a glob, as rows ``key binary, value binary`` (with a ``database string``
column, the directory, when the schema given asks for it). PATH may be the URL of an
object-store prefix (``s3://``, ``gs://``, ``az://``, ``http(s)://``) holding one database or
many, read through ``leveltable-object``; store settings come from the environment and
from options named as ``object_store`` names them (``aws_endpoint``, ``timeout``, ...).
With ``option("versions", "true")`` every stored version is a row, with its ``sequence``
and ``state`` (``live``, ``deleted``, ``shadowed``), as ``Db.scan_arrow(versions=True)``
reads them. With ``option("decode", "indexeddb")`` or ``option("decode",
"local-storage")`` Chromium's IndexedDB and Local Storage directories are read decoded
instead (JSON strings).

The driver plans: it opens each database read-only (``CURRENT``, the MANIFEST, the logs) and
cuts its key space at the table boundaries of its largest (deepest) level into ranges of about
``partitionBytes`` (default 128 MiB); small databases are packed together. Each partition
carries the version the planner saw (the tables whose key ranges overlap its range, the
logs and the bytes replayed from each, the last sequence), so every task of one read reads
the same state, whatever a writer does meanwhile; a table or log of that version deleted
since makes the task fail with an error naming the database. Tasks read their range with
the engine's merging iterator and yield Arrow record batches. Key-range filters (``key >=
a``, ``key < b``, ``key = k``, ``key IN (...)`` as its bounds, ``key LIKE 'p%'``) narrow the
ranges and the tables read. See docs/distributed.md.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import os
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from leveltable._leveltable import (
    Error,
    InvalidArgumentError,
    VersionScan,
    find_databases,
    plan_version,
)

__all__ = ["LevelDbDataSource", "register", "DEFAULT_PARTITION_BYTES"]

#: The bytes of tables (and logs) one partition reads, about, unless ``partitionBytes``.
DEFAULT_PARTITION_BYTES = 128 << 20

#: The comparator whose order is that of Spark's ``binary``: the only one key filters prune.
BYTEWISE = "leveldb.BytewiseComparator"

#: Columns of a raw read, and their types.
RAW_COLUMNS = {"key": "binary", "value": "binary", "database": "string"}

#: The columns only a read of every version (``versions``) has.
VERSION_COLUMNS = {"sequence": "bigint", "state": "string"}

#: Options passed on to the object store (``object_store``'s configuration keys): those
#: starting with these, and these.
STORE_OPTION_PREFIXES = ("aws_", "google_", "azure_")
STORE_OPTIONS = frozenset(
    {"timeout", "connect_timeout", "allow_http", "allow_invalid_certificates", "proxy_url",
     "pool_idle_timeout", "pool_max_idle_per_host", "user_agent"}
)

#: Columns of the decoded reads.
DECODED_COLUMNS = {
    "indexeddb": ["database_path", "origin", "database", "store", "key", "value"],
    "local-storage": ["database_path", "origin", "key", "value"],
}


def register(spark: Any) -> None:
    """Registers the data source ``leveldb`` on the session ``spark`` and turns on Spark's
    filter pushdown for Python data sources (``spark.sql.python.filterPushdown.enabled``),
    which its key-range pruning needs."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(LevelDbDataSource)


class LevelDbDataSource(DataSource):
    """``spark.read.format("leveldb")``. Options: ``partitionBytes`` (bytes per partition,
    about; default 128 MiB), ``versions`` (``"true"``: every stored version, with
    ``sequence`` and ``state``), ``decode`` (``"indexeddb"`` or ``"local-storage"``), and
    the object store's own (``aws_endpoint``, ``timeout``, ...)."""

    @classmethod
    def name(cls) -> str:
        return "leveldb"

    def schema(self) -> str:
        options = {k.lower(): v for k, v in self.options.items()}
        decode = options.get("decode")
        if decode is None:
            if _flag(options, "versions"):
                return "key binary, value binary, sequence bigint, state string"
            return "key binary, value binary"
        if decode not in DECODED_COLUMNS:
            raise InvalidArgumentError(
                f'option decode must be "indexeddb" or "local-storage", not {decode!r}'
            )
        return ", ".join(f"{c} string" for c in DECODED_COLUMNS[decode])

    def reader(self, schema: Any) -> DataSourceReader:
        # Spark's option names are case-insensitive: looked up in lower case.
        return LevelDbReader({k.lower(): v for k, v in self.options.items()}, schema)


class Piece:
    """A key range ``[start, stop)`` (``None``: unbounded) of one database at one version,
    with only the tables whose key ranges overlap it."""

    def __init__(self, database: str, version: dict, start: Optional[bytes], stop: Optional[bytes]):
        self.database = database
        self.start = start
        self.stop = stop
        bytewise = version["comparator"] == BYTEWISE
        levels = [
            [t for t in level if not bytewise or _overlaps(t, start, stop)]
            for level in version["levels"]
        ]
        self.version = dict(version, levels=levels)
        self.bytes = sum(t[1] for level in levels for t in level) + sum(
            size for _, size in version["logs"]
        )

    @property
    def tables(self) -> int:
        return sum(len(level) for level in self.version["levels"])

    def __repr__(self) -> str:
        return f"Piece({self.database!r}, {self.start!r}, {self.stop!r}, tables={self.tables})"


class LevelDbPartition(InputPartition):
    """The pieces one task reads, in order."""

    def __init__(self, pieces: List[Piece]):
        super().__init__(len(pieces))
        self.pieces = pieces

    def __repr__(self) -> str:
        return f"LevelDbPartition({self.pieces!r})"


class LevelDbReader(DataSourceReader):
    """Plans the read when created (each database's version, read once) and yields Arrow
    record batches per partition."""

    def __init__(self, options: dict, schema: Any):
        self.paths = _paths(options)
        self.decode = options.get("decode")
        self.versions_view = _flag(options, "versions")
        self.partition_bytes = _positive(options, "partitionBytes", DEFAULT_PARTITION_BYTES)
        self.store_options = {
            k: v for k, v in options.items()
            if k.startswith(STORE_OPTION_PREFIXES) or k in STORE_OPTIONS
        }
        self.columns = [f.name for f in schema.fields]
        if self.decode is not None and any(_is_url(p) for p in self.paths):
            raise InvalidArgumentError(
                "option decode reads Chromium directories on a filesystem, not object-store "
                "URLs"
            )
        if self.decode is None:
            allowed = dict(RAW_COLUMNS, **(VERSION_COLUMNS if self.versions_view else {}))
            for f in schema.fields:
                want = allowed.get(f.name)
                if want is None or f.dataType.simpleString() != want:
                    extra = (", sequence bigint and state string" if self.versions_view
                             else " (sequence bigint and state string with the option "
                             "versions=true)")
                    raise InvalidArgumentError(
                        f"column {f.name} {f.dataType.simpleString()}: a leveldb read has "
                        f"the columns key binary, value binary, database string{extra}"
                    )
        self.databases = _databases(self.paths, self.store_options)
        # Key bounds from pushed filters: [start, stop), None for unbounded.
        self.start: Optional[bytes] = None
        self.stop: Optional[bytes] = None
        self.empty = False
        self.versions = {}
        if self.decode is None:
            for db in self.databases:
                try:
                    self.versions[db] = plan_version(db, self.store_options)
                except Exception as e:
                    raise type(e)(f"leveldb database {db}: {e}") from e

    def pushFilters(self, filters: List[Any]) -> Iterator[Any]:
        bytewise = self.decode is None and all(
            v["comparator"] == BYTEWISE for v in self.versions.values()
        )
        for f in filters:
            bounds = _key_bounds(f) if bytewise else None
            if bounds is None:
                yield f
                continue
            lo, hi, exact = bounds
            if lo is not None and (self.start is None or lo > self.start):
                self.start = lo
            if hi is not None and (self.stop is None or hi < self.stop):
                self.stop = hi
            if not exact:
                yield f
        if self.stop is not None and (self.stop == b"" or (
            self.start is not None and self.start >= self.stop
        )):
            self.empty = True

    def partitions(self) -> Sequence[InputPartition]:
        if self.decode is not None:
            return [LevelDbPartition([db]) for db in self.databases]
        if self.empty:
            return []
        pieces = []
        for db in self.databases:
            pieces.extend(plan_pieces(db, self.versions[db], self.partition_bytes,
                                      self.start, self.stop))
        return pack(pieces, self.partition_bytes)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if self.decode is not None:
            yield from _read_decoded(self.decode, partition.pieces[0], self.columns)
            return
        for piece in partition.pieces:
            yield from read_piece(piece, self.columns, self.store_options, self.versions_view)


def plan_pieces(
    database: str,
    version: dict,
    partition_bytes: int,
    start: Optional[bytes] = None,
    stop: Optional[bytes] = None,
) -> List[Piece]:
    """Cuts the key space of ``database`` at ``version`` (a ``plan_version`` dict), within
    ``[start, stop)``, into ranges of about ``partition_bytes``: at the table boundaries of
    its largest level of 1 and deeper (the deepest, once compactions have settled), where the size of each table there stands for its share of
    every level's. A database of another comparator than bytewise is one range (the bounds
    are not applied to it)."""
    if version["comparator"] != BYTEWISE:
        return [Piece(database, version, None, None)]
    levels = version["levels"]
    total = sum(t[1] for level in levels for t in level) + sum(s for _, s in version["logs"])
    cuts: List[bytes] = []
    # The level of the most bytes (of level 1 and deeper, whose tables do not overlap): the
    # deepest, in a database compactions have settled.
    deepest = max(levels[1:], key=lambda level: sum(t[1] for t in level), default=None)
    if deepest and total > partition_bytes:
        inside = [t for t in deepest if _overlaps(t, start, stop)]
        share = total / max(1, sum(t[1] for t in deepest))
        filled = 0.0
        for t, following in zip(inside, inside[1:]):
            filled += t[1] * share
            if filled >= partition_bytes:
                cuts.append(following[2][:-8])
                filled = 0.0
    bounds = [start] + cuts + [stop]
    return [Piece(database, version, lo, hi) for lo, hi in zip(bounds, bounds[1:])]


def pack(pieces: List[Piece], partition_bytes: int) -> List[LevelDbPartition]:
    """Packs consecutive pieces into partitions of at most ``partition_bytes`` (a larger
    piece alone)."""
    partitions: List[LevelDbPartition] = []
    group: List[Piece] = []
    size = 0
    for p in pieces:
        if group and size + p.bytes > partition_bytes:
            partitions.append(LevelDbPartition(group))
            group, size = [], 0
        group.append(p)
        size += p.bytes
    if group:
        partitions.append(LevelDbPartition(group))
    return partitions


def read_piece(
    piece: Piece,
    columns: List[str],
    store_options: Optional[dict] = None,
    versions: bool = False,
) -> Iterator[Any]:
    """The piece's entries (with ``versions``, every stored version of its keys) as Arrow
    record batches of ``columns``."""
    import pyarrow as pa

    db = piece.database
    try:
        scan = VersionScan(db, piece.version, piece.start, piece.stop,
                           options=store_options or None)
        if versions:
            yield from _versions(pa, scan, db, columns)
            return
        for rows, key_offsets, keys, value_offsets, values in scan:
            arrays = []
            for c in columns:
                if c == "key":
                    arrays.append(_binary(pa, rows, key_offsets, keys))
                elif c == "value":
                    arrays.append(_binary(pa, rows, value_offsets, values))
                else:
                    arrays.append(pa.repeat(pa.scalar(db, pa.string()), rows))
            yield pa.RecordBatch.from_arrays(arrays, names=columns)
    except (Error, OSError) as e:
        raise Error(
            f"leveldb database {db}: the version this read planned on cannot be read "
            f"(a writer may have removed its files since; read again): {e}"
        ) from e


def _versions(pa: Any, scan: Any, db: str, columns: List[str]) -> Iterator[Any]:
    """The batches of ``scan.versions()`` with ``columns`` (``sequence`` as Spark's signed
    ``bigint``: sequence numbers take 56 bits)."""
    for batch in pa.RecordBatchReader.from_stream(scan.versions()):
        arrays = []
        for c in columns:
            if c == "database":
                arrays.append(pa.repeat(pa.scalar(db, pa.string()), batch.num_rows))
            elif c == "sequence":
                arrays.append(batch.column(c).cast(pa.int64()))
            else:
                arrays.append(batch.column(c))
        yield pa.RecordBatch.from_arrays(arrays, names=columns)


def _binary(pa: Any, rows: int, offsets: bytes, data: bytes) -> Any:
    return pa.Array.from_buffers(
        pa.binary(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _read_decoded(decode: str, database: str, columns: List[str]) -> Iterator[Any]:
    """A Chromium directory's records, decoded, as Arrow record batches of strings."""
    import pyarrow as pa

    from leveltable import chromium

    records = chromium.indexeddb(database) if decode == "indexeddb" else chromium.local_storage(database)
    batch: dict = {c: [] for c in columns}

    def text(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, sort_keys=True)

    def flush() -> Any:
        out = pa.RecordBatch.from_pydict(
            {c: pa.array(batch[c], pa.string()) for c in columns}
        )
        for c in columns:
            batch[c] = []
        return out

    for r in records:
        for c in columns:
            if c == "database_path":
                batch[c].append(database)
            elif c in ("key", "value"):
                batch[c].append(text(r.get(c)))
            else:
                v = r.get(c)
                batch[c].append(None if v is None else str(v))
        if len(batch[columns[0]]) >= 4096:
            yield flush()
    if batch[columns[0]]:
        yield flush()


def _overlaps(table: Tuple, start: Optional[bytes], stop: Optional[bytes]) -> bool:
    """Whether the table ``(number, size, smallest, largest)`` (internal keys) holds user
    keys in ``[start, stop)``."""
    smallest, largest = table[2][:-8], table[3][:-8]
    return (stop is None or smallest < stop) and (start is None or largest >= start)


def _key_bounds(f: Any) -> Optional[Tuple[Optional[bytes], Optional[bytes], bool]]:
    """``(lo, hi, exact)`` for a filter on ``key``: the key range ``[lo, hi)`` (``None``:
    unbounded) it keeps, and whether it keeps exactly that range (``key IN (...)`` keeps
    only some keys of its range); ``None`` if it is not such a filter. Bytewise, the key
    right after ``k`` is ``k + b"\\0"``."""
    from pyspark.sql import datasource as ds

    if getattr(f, "attribute", None) != ("key",):
        return None
    value = getattr(f, "value", None)
    if isinstance(f, ds.In):
        keys = [bytes(v) for v in value if isinstance(v, (bytes, bytearray))]
        if len(keys) != len(value):
            return None
        if not keys:
            return (b"", b"", True)
        return (min(keys), max(keys) + b"\0", False)
    if isinstance(f, ds.StringStartsWith) and isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray)):
        return None
    v = bytes(value)
    if isinstance(f, ds.EqualTo):
        return (v, v + b"\0", True)
    if isinstance(f, ds.GreaterThan):
        return (v + b"\0", None, True)
    if isinstance(f, ds.GreaterThanOrEqual):
        return (v, None, True)
    if isinstance(f, ds.LessThan):
        return (None, v, True)
    if isinstance(f, ds.LessThanOrEqual):
        return (None, v + b"\0", True)
    if isinstance(f, ds.StringStartsWith):
        return (v, _prefix_end(v), True)
    return None


def _prefix_end(prefix: bytes) -> Optional[bytes]:
    """The first key after every key starting with ``prefix`` (``None``: there is none)."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)


def _paths(options: dict) -> List[str]:
    path = options.get("path")
    paths = options.get("paths")
    if paths:
        found = json.loads(paths)
    elif path:
        found = [path]
    else:
        raise InvalidArgumentError("load(PATH): no path given")
    return [p[len("file://"):] if p.startswith("file://") else p for p in found]


def _is_url(path: str) -> bool:
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.replace("+", "").isalnum()


def _remote_databases(url: str, store_options: dict) -> List[str]:
    """The databases under the prefix ``url``, or those under the prefixes a glob in
    ``url`` matches (the prefix before its first wildcard is listed)."""
    if not glob.has_magic(url):
        return find_databases(url, store_options or None)
    first = min(url.index(c) for c in "*?[" if c in url)
    base = url[:first].rsplit("/", 1)[0]
    found = []
    for db in find_databases(base, store_options or None):
        # A database matches if it, or a prefix of it ending at a "/", does.
        parts = db.split("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:n]), url) for n in range(1, len(parts) + 1)):
            found.append(db)
    return found


def _databases(paths: List[str], store_options: Optional[dict] = None) -> List[str]:
    """The databases (directories or prefixes holding ``CURRENT``) that ``paths`` name:
    each a database, a directory or prefix searched for databases, or a glob of either;
    sorted."""
    found = []
    for path in paths:
        if _is_url(path):
            databases = _remote_databases(path, store_options or {})
            if not databases:
                raise Error(f"{path}: no LevelDB database (no prefix with a CURRENT object)")
            found.extend(databases)
            continue
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise FileNotFoundError(f"{path}: no such file or directory")
        for m in matches:
            if os.path.isfile(os.path.join(m, "CURRENT")):
                found.append(os.path.abspath(m))
                continue
            for root, dirs, files in os.walk(m):
                if "CURRENT" in files:
                    found.append(os.path.abspath(root))
                    dirs[:] = []
                else:
                    dirs.sort()
    if not found:
        raise Error(f"{', '.join(paths)}: no LevelDB database (no directory with a CURRENT file)")
    return sorted(set(found))


def _flag(options: dict, name: str) -> bool:
    text = options.get(name.lower())
    if text is None:
        return False
    if text.lower() not in ("true", "false"):
        raise InvalidArgumentError(f'option {name} must be "true" or "false", not {text!r}')
    return text.lower() == "true"


def _positive(options: dict, name: str, default: int) -> int:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise InvalidArgumentError(
            f"option {name} must be a positive integer, not {text!r}"
        )
    return n
