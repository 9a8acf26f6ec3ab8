"""Building a LevelDB database from a Spark DataFrame.

``write_leveldb(df, path)`` range-partitions the DataFrame on its key column, sorts each
partition, builds one part per partition on the executors (``build_part_arrow``, fed Arrow
record batches through ``mapInArrow``), collects the parts' records on the driver and commits
them there as one database (``commit_db``). The staging directory beside ``path`` and the
output must be on a filesystem that the driver and every executor see under the same path.
``register(spark)`` adds the data source ``leveldb`` to a session, which reads databases
back: ``spark.read.format("leveldb").load(path)`` (see ``leveltable.spark_source``). See
docs/distributed.md.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from typing import Any, Optional

from leveltable._leveltable import (
    Error,
    InvalidArgumentError,
    Part,
    build_part,
    commit_db,
)

__all__ = ["LevelDbDataSource", "register", "write_leveldb"]


def register(spark: Any) -> None:
    """Registers the data source ``leveldb`` on the session ``spark``:
    ``spark.read.format("leveldb").load(path)`` reads LevelDB databases (Spark 4.0 and
    later; see ``leveltable.spark_source``)."""
    from leveltable.spark_source import register as register_source

    register_source(spark)


def __getattr__(name: str) -> Any:
    # The reader's module needs pyspark.sql.datasource (Spark 4.0 and later): imported on
    # first use, so that write_leveldb keeps working with older Spark.
    if name == "LevelDbDataSource":
        from leveltable.spark_source import LevelDbDataSource

        return LevelDbDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: Table options ``write_leveldb`` passes on to each part.
TABLE_OPTIONS = frozenset(
    {
        "threads",
        "max_file_size",
        "block_size",
        "restart_interval",
        "compression",
        "bloom_bits",
        "extra_filter",
    }
)

#: The row-order column added under ``dedup="last"``.
_SEQ = "__leveltable_seq"


def write_leveldb(
    df: Any,
    path: str | os.PathLike,
    *,
    key: str = "key",
    value: str = "value",
    num_partitions: Optional[int] = None,
    dedup: Optional[str] = None,
    method: str = "arrow",
    _fail_first_attempt: Optional[int] = None,
    **table_options: Any,
) -> dict:
    """Builds the LevelDB database ``path`` (new, or an empty directory) from the columns
    ``key`` and ``value`` of the Spark DataFrame ``df``; returns the summary of the commit
    (entries, tables, bytes, parts) with ``part_entries``, the entries of each partition's
    part in key order (empty partitions included), to judge their balance.

    Keys and values are ``binary`` or ``string`` columns (strings as their UTF-8 bytes); a
    null in either is an error naming the column. A key given twice is an error naming it,
    unless ``dedup="last"``: then of the rows with equal keys the one last in the
    DataFrame's row order is kept (the order of ``df.collect()``: by input partition, then
    position in it).

    ``num_partitions`` parts are built (by default ``spark.sql.shuffle.partitions``, which
    adaptive query execution may coalesce); ``table_options`` are those of
    ``leveltable.build_part`` (``max_file_size``, ``block_size``, ``compression``, ...).
    ``method="rows"`` feeds the parts through ``mapPartitions`` with one Python object per
    row instead of Arrow record batches; it is slower and kept for comparison.

    Raises ``leveltable.InvalidArgumentError`` for a bad column, option or output path
    before any Spark job runs; a task's error (a null, a duplicate key) fails the job after
    Spark's retries. Executors whose Python cannot import leveltable fail the job with
    ``leveltable.Error`` naming that Python and how to install the package for it. The
    staging directory is removed whether the build succeeds or not.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    if dedup not in (None, "last"):
        raise InvalidArgumentError(f'dedup must be None or "last", not {dedup!r}')
    if method not in ("arrow", "rows"):
        raise InvalidArgumentError(f'method must be "arrow" or "rows", not {method!r}')
    unknown = set(table_options) - TABLE_OPTIONS
    if unknown:
        raise TypeError(f"write_leveldb() got unexpected options {sorted(unknown)}")
    if num_partitions is not None and num_partitions < 1:
        raise InvalidArgumentError(f"num_partitions must be at least 1, not {num_partitions}")
    if key == value:
        raise InvalidArgumentError("key and value must be different columns")
    for name in (key, value):
        if name not in df.columns:
            raise InvalidArgumentError(f"no column {name!r} in the DataFrame")
        kind = df.schema[name].dataType
        if not isinstance(kind, (BinaryType, StringType)):
            raise InvalidArgumentError(
                f"column {name!r} is {kind.simpleString()}, not binary or string"
            )
    _check_options(table_options)

    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise InvalidArgumentError(f"{path} exists and is not an empty directory")
    staging = f"{path}.leveltable-staging-{uuid.uuid4().hex}"
    os.makedirs(staging)

    try:
        columns = [F.col(key).cast("binary").alias(key), F.col(value).cast("binary").alias(value)]
        if dedup == "last":
            columns.append(F.monotonically_increasing_id().alias(_SEQ))
        rows = df.select(*columns)
        if num_partitions is None:
            rows = rows.repartitionByRange(F.col(key))
        else:
            rows = rows.repartitionByRange(num_partitions, F.col(key))
        order = [F.col(key)] + ([F.col(_SEQ)] if dedup == "last" else [])
        rows = rows.sortWithinPartitions(*order).select(key, value)

        arrow, by_rows = _executor_functions(
            staging, key, value, dedup, table_options, _fail_first_attempt
        )
        try:
            if method == "arrow":
                records = rows.mapInArrow(arrow, "partition int, record string").collect()
                records = [(r["partition"], r["record"]) for r in records]
            else:
                records = rows.rdd.mapPartitions(by_rows).collect()
        except Exception as e:
            _raise_if_executors_lack_leveltable(e)
            raise
        parts = [Part.from_record(record) for _, record in sorted(records)]
        summary = commit_db(path, [p for p in parts if p.entries > 0])
        summary["part_entries"] = [p.entries for p in parts]
        return summary
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_options(table_options: dict) -> None:
    """Fails on the driver for options every task would refuse."""
    with tempfile.TemporaryDirectory(prefix="leveltable-options-") as scratch:
        build_part(os.path.join(scratch, "part"), [], **table_options)


#: What the executors' error says when leveltable cannot be imported there; the driver
#: finds it in the failed job's error.
_MISSING_ON_EXECUTORS = "leveltable cannot be imported by the Python the Spark executors run"


def _executor_functions(staging, key, value, dedup, table_options, fail_first_attempt):
    """What each task runs, for ``mapInArrow`` and for ``mapPartitions``: builds its
    partition's part in its own staging directory, ``part-<partition>-attempt-<task attempt
    id>``, and returns the part's record.

    The functions are closures, which Spark's cloudpickle ships by value: an executor
    unpickles them without importing leveltable, and they import it when they run, so that
    an executor whose Python lacks it fails with an error that says so (naming that Python
    and how to install the package there) instead of an unpickling traceback. They refer to
    nothing of this module's own for the same reason.
    """
    marker = _MISSING_ON_EXECUTORS

    def native():
        try:
            import leveltable._leveltable as native
        except ImportError as e:
            import sys

            python = sys.executable or "python"
            raise ImportError(
                f"{marker} ({python}): {e}. Install it for that Python "
                f"({python} -m pip install leveltable), on every executor, or point "
                "spark.pyspark.python (PYSPARK_PYTHON) at a Python that has it"
            ) from e
        return native

    def directory():
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId()
        path = os.path.join(staging, f"part-{partition:05d}-attempt-{context.taskAttemptId()}")
        # mkdir, not makedirs: an attempt still running after the job ended (a speculative
        # copy) fails here instead of recreating the removed staging directory.
        os.mkdir(path)
        return context, partition, path

    def maybe_fail(context, partition):
        if partition == fail_first_attempt and context.attemptNumber() == 0:
            raise RuntimeError(f"injected failure of partition {partition}, attempt 0")

    def arrow(batches):
        lib = native()
        import pyarrow as pa

        context, partition, path = directory()
        part = lib.build_part_arrow(
            path,
            batches,
            key_column=key,
            value_column=value,
            dedup=dedup,
            **table_options,
        )
        maybe_fail(context, partition)
        yield pa.RecordBatch.from_pydict(
            {"partition": [partition], "record": [part.to_record()]},
            schema=pa.schema([("partition", pa.int32()), ("record", pa.string())]),
        )

    def rows(items):
        lib = native()
        context, partition, path = directory()

        def pairs():
            for k, v in items:
                if k is None or v is None:
                    column = key if k is None else value
                    raise lib.InvalidArgumentError(f'column "{column}": null')
                yield k, v

        part = lib.build_part(path, pairs(), dedup=dedup, **table_options)
        maybe_fail(context, partition)
        yield (partition, part.to_record())

    return arrow, rows


def _raise_if_executors_lack_leveltable(error: BaseException) -> None:
    """Raises ``leveltable.Error`` with the executors' own message if the failed job's
    ``error`` (a Py4J error, or PySpark's ``PythonException``) is that they cannot import
    leveltable; returns otherwise."""
    text = str(error)
    at = text.find(_MISSING_ON_EXECUTORS)
    if at < 0:
        return
    message = text[at:].splitlines()[0]
    raise Error(message + " (the Spark job failed on the executors)") from None
