"""A LevelDB database built by Spark from a generated DataFrame, then read back.

    pip install ./crates/python pyspark pyarrow pandas    # and Java 17 or later
    python examples/spark_build.py [ROWS]

Spark runs in local mode with two cores; each of the four partitions of the key range is
built into a part on an executor, and the driver commits the parts as one database (see
docs/distributed.md). The example then opens it with leveltable.Db and checks a few keys.
"""

import os
import sys
import tempfile
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import leveltable
from leveltable.spark import write_leveldb


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    # The executors' Python must have leveltable installed: use this one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("leveltable-example")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        # user:000000042 -> "name-42,score-N", in no particular order.
        df = spark.range(rows).select(
            F.format_string("user:%09d", (F.col("id") * 7919) % rows).alias("key"),
            F.format_string("name-%d,score-%d", F.col("id"), F.col("id") % 100).alias("value"),
        )
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "users")
            start = time.perf_counter()
            summary = write_leveldb(df, path, num_partitions=4)
            seconds = time.perf_counter() - start
            print(
                f"built {summary['entries']:,} entries in {summary['tables']} tables "
                f"({summary['bytes']:,} bytes) from {summary['parts']} parts "
                f"in {seconds:.1f} s; entries per part: {summary['part_entries']}"
            )

            with leveltable.Db(path) as db:
                first = next(iter(db))
                print("first entry:", first)
                key = b"user:%09d" % (rows // 2)
                print(f"{key!r} -> {db[key]!r}")
                assert db.get(b"user:%09d" % rows) is None
                assert sum(1 for _ in db) == rows
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
