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
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time

import leveltable


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
    args = ap.parse_args()

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

    from leveltable.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    for master in args.masters.split(","):
        spark = (
            SparkSession.builder.master(master)
            .appName("leveltable-read-bench")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        df = (
            spark.read.format("leveldb")
            .option("partitionBytes", args.partition_bytes)
            .load(os.path.abspath(args.db))
        )
        partitions = df.rdd.getNumPartitions()
        best = None
        for run in range(args.runs + 1):
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            took = time.perf_counter() - t
            if run > 0:
                best = took if best is None else min(best, took)
        rate = entries / best
        print(
            f"spark {master}: {partitions} partitions, {best:.2f} s: {rate:,.0f} entries/s, "
            f"{rate / dump_rate:.2f}x the dump",
            flush=True,
        )
        spark.stop()


if __name__ == "__main__":
    main()
