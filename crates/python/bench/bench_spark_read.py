"""Reading one LevelDB database with Spark (the data source ``leveldb``) against one process
running ``leveltable db dump --hex DB > /dev/null``: entries per second of a full read (the
values are binary, which the dump prints only as hex).

    python crates/python/bench/bench_spark_read.py --db DIR [--entries 5000000]
        [--leveltable target/release/leveltable] [--masters local[2],local[1]]
        [--partition-bytes 33554432]

The database DIR is built first if it does not exist (leveltable.build_db: 16-byte keys,
100-byte values, snappy; 2 MiB tables), so that its tables are at one level and its key
space cuts into as many ranges as it has tables. Spark's read is a full read of every
row through the Arrow batches the tasks yield, ending in Spark's ``noop`` writer (nothing
collected to the driver): ``df.write.format("noop").mode("overwrite").save()``. The first
read of each master warms the page cache and the Python workers and is not counted; the
best of ``--runs`` reads is. Prints entries per second and the ratio to the dump.

Two more figures bound Spark's share: the reader alone (the same partitions read in this
process through ``LevelDbReader.read``, no Spark), and Spark's ceiling on this machine: a
trivial Python data source whose tasks yield pre-built Arrow record batches of the same
shape (rows per batch, key and value sizes, row count) without reading anything, through
the same ``noop`` writer (``--ceiling-batch-rows`` adds runs with other batch sizes; the
reader's batches are the engine's chunks, up to 8192 rows or 4 MiB). ``--conf NAME=VALUE``
sets a Spark setting. The CPU model and the load average are printed first.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time

import leveltable
from machine_info import cpu_model


def ceiling_source():
    """A Python data source ``prebuilt``: each of ``partitions`` tasks yields one pre-built
    Arrow batch of ``batchRows`` rows (``keyBytes``-byte keys, ``valueBytes``-byte values)
    until it has yielded ``rows`` rows in all."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Reader(DataSourceReader):
        def __init__(self, options):
            self.options = options

        def partitions(self):
            return [InputPartition(i) for i in range(int(self.options["partitions"]))]

        def read(self, partition):
            import numpy as np
            import pyarrow as pa

            o = self.options
            parts, rows = int(o["partitions"]), int(o["rows"])
            batch_rows = int(o["batchrows"])
            mine = rows // parts + (1 if partition.value < rows % parts else 0)
            rng = np.random.default_rng(partition.value)

            def column(width):
                data = rng.integers(0, 256, batch_rows * width, dtype=np.uint8).tobytes()
                offsets = np.arange(0, (batch_rows + 1) * width, width, dtype=np.int32)
                return pa.Array.from_buffers(pa.binary(), batch_rows, [
                    None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])

            batch = pa.RecordBatch.from_arrays(
                [column(int(o["keybytes"])), column(int(o["valuebytes"]))],
                names=["key", "value"])
            while mine > 0:
                yield batch if mine >= batch_rows else batch.slice(0, mine)
                mine -= batch_rows

    class Prebuilt(DataSource):
        @classmethod
        def name(cls):
            return "prebuilt"

        def schema(self):
            return "key binary, value binary"

        def reader(self, schema):
            return Reader({k.lower(): v for k, v in self.options.items()})

    return Prebuilt


def build(path, entries):
    def rows():
        for i in range(entries):
            k = hashlib.sha256(b"%d" % i).digest()[:16]
            v = (hashlib.sha512(b"%d" % i).digest() + hashlib.sha512(b"%d" % (i + 1)).digest())[:100]
            yield k, v

    t = time.perf_counter()
    summary = leveltable.build_db(path, rows(), sort=True, max_file_size=2 << 20)
    print(f"built {path}: {summary} in {time.perf_counter() - t:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--entries", type=int, default=5_000_000)
    ap.add_argument("--leveltable", default="leveltable")
    ap.add_argument("--masters", default="local[2],local[1]")
    ap.add_argument("--partition-bytes", type=int, default=32 << 20)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--ceiling-batch-rows", default="",
                    help="comma-separated rows per batch for more ceiling runs (default: only "
                    "the reader's average)")
    ap.add_argument("--conf", action="append", default=[],
                    help="a Spark setting NAME=VALUE for every session (repeatable)")
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)

    if not os.path.exists(args.db):
        build(args.db, args.entries)
    with leveltable.Db(args.db) as db:
        stats = db.stats()
    tables = sum(len(level) for level in stats["levels"])
    size = sum(t["size"] for level in stats["levels"] for t in level)
    print(f"database: {tables} tables, {size / 1e6:.0f} MB", flush=True)

    with leveltable.Db(args.db) as db:
        entries = sum(1 for _ in db.keys())
    best = None
    for _ in range(args.runs + 1):
        t = time.perf_counter()
        subprocess.run(
            [args.leveltable, "db", "dump", "--hex", args.db], stdout=subprocess.DEVNULL,
            check=True,
        )
        took = time.perf_counter() - t
        best = took if best is None else min(best, took)
    dump_rate = entries / best
    print(f"leveltable db dump --hex: {entries} entries in {best:.2f} s: {dump_rate:,.0f} entries/s",
          flush=True)

    from pyspark.sql import SparkSession
    from pyspark.sql.types import BinaryType, StructField, StructType

    from leveltable import spark_source
    from leveltable.spark import register

    options = {"path": os.path.abspath(args.db), "partitionbytes": str(args.partition_bytes)}
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    reader = spark_source.LevelDbDataSource(options).reader(schema)
    partitions = reader.partitions()
    best, batches = None, 0
    for run in range(args.runs + 1):
        t = time.perf_counter()
        batches = sum(1 for p in partitions for _ in reader.read(p))
        took = time.perf_counter() - t
        if run > 0:
            best = took if best is None else min(best, took)
    print(f"reader alone (one process, no Spark): {len(partitions)} partitions, {batches} "
          f"batches, {best:.2f} s: {entries / best:,.0f} entries/s, "
          f"{entries / best / dump_rate:.2f}x the dump", flush=True)

    def timed(df):
        best = None
        for run in range(args.runs + 1):
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            took = time.perf_counter() - t
            if run > 0:
                best = took if best is None else min(best, took)
        return best

    os.environ["PYSPARK_PYTHON"] = sys.executable
    for master in args.masters.split(","):
        builder = (
            SparkSession.builder.master(master)
            .appName("leveltable-read-bench")
            .config("spark.ui.enabled", "false")
        )
        for setting in args.conf:
            name, _, value = setting.partition("=")
            builder = builder.config(name, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        spark.dataSource.register(ceiling_source())
        df = spark.read.format("leveldb")
        for name, value in options.items():
            if name != "path":
                df = df.option(name, value)
        df = df.load(options["path"])
        n = df.rdd.getNumPartitions()
        best = timed(df)
        rate = entries / best
        print(
            f"spark {master}: {n} partitions, {best:.2f} s: {rate:,.0f} entries/s, "
            f"{rate / dump_rate:.2f}x the dump",
            flush=True,
        )
        sizes = [max(1, entries // max(1, batches))]
        sizes += [int(x) for x in args.ceiling_batch_rows.split(",") if x]
        for rows_per_batch in sizes:
            ceiling = (spark.read.format("prebuilt").option("partitions", n)
                       .option("rows", entries).option("batchRows", rows_per_batch)
                       .option("keyBytes", 16).option("valueBytes", 100).load())
            best = timed(ceiling)
            rate = entries / best
            print(
                f"spark {master} ceiling (pre-built Arrow batches of {rows_per_batch} rows, "
                f"no reading): {best:.2f} s: {rate:,.0f} entries/s, "
                f"{rate / dump_rate:.2f}x the dump",
                flush=True,
            )
        spark.stop()


if __name__ == "__main__":
    main()
