"""Building one LevelDB database of N rows (16-byte keys, 100-byte values) three ways on one
machine: Spark in local mode (leveltable.spark.write_leveldb, Arrow batches and, for
comparison, Row objects), single-process leveltable.build_db (sort=True), and LevelDB's own
write path through plyvel (WriteBatch of 10,000 rows, sync off, until close). Then the
entries per part of a Spark build over skewed keys. Spark's own share is measured apart:
the same range partitioning and sort with the rows dropped (the "noop" writer).

    python crates/python/bench/bench_spark.py [--entries 10000000] [--master local[2]]
        [--partitions 8] [--methods arrow,rows] [--skip shuffle,build_db,plyvel]
        [--skew-entries 2000000]

Row i has the key sha256(str(i))[:16] and the value (sha512(str(i)) + sha512(str(i+1)))[:100]:
Spark computes them inside its job (spark.range, sha2); build_db and plyvel get the same rows
from a list made beforehand, whose time is printed apart and not counted. Prints times,
rows per second and ratios to the Spark build, the CPU model and the parts' balance.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time

import leveltable
from machine_info import cpu_model


def rows_in_python(n):
    out = []
    for i in range(n):
        s = str(i).encode()
        nxt = str(i + 1).encode()
        value = (hashlib.sha512(s).digest() + hashlib.sha512(nxt).digest())[:100]
        out.append((hashlib.sha256(s).digest()[:16], value))
    return out


def spark_session(master):
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master(master)
        .appName("leveltable-bench")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def spark_rows(spark, n, skewed=False):
    from pyspark.sql import functions as F

    ids = spark.range(n)
    key = F.expr("substring(unhex(sha2(cast(id as string), 256)), 1, 16)")
    if skewed:
        # 9 rows in 10 share the prefix "hot": one tenth of the key space.
        key = F.expr(
            "case when id % 10 = 0 then substring(unhex(sha2(cast(id as string), 256)), 1, 16) "
            "else concat(cast('hot' as binary), "
            "substring(unhex(sha2(cast(id as string), 256)), 1, 13)) end"
        )
    value = F.expr(
        "substring(concat(unhex(sha2(cast(id as string), 512)), "
        "unhex(sha2(cast(id + 1 as string), 512))), 1, 100)"
    )
    return ids.select(key.alias("key"), value.alias("value"))


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--methods", default="arrow,rows")
    parser.add_argument("--skip", default="")
    parser.add_argument("--skew-entries", type=int, default=2_000_000)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    n = args.entries

    from leveltable.spark import write_leveldb

    work = tempfile.mkdtemp(prefix="leveltable-bench-spark-", dir=os.environ.get("BENCH_DIR"))
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; {n:,} rows of 16 + 100 bytes")
    times = {}
    spark = spark_session(args.master)
    try:
        # Warm up the JVM and the Python workers, so the first method measured pays no more.
        for method in filter(None, args.methods.split(",")):
            warm = os.path.join(work, f"warm-{method}")
            write_leveldb(spark_rows(spark, 100_000), warm, num_partitions=2, method=method)
            shutil.rmtree(warm)
        if "shuffle" not in skip:
            # Spark's part alone: the same range partitioning and sort, rows dropped.
            from pyspark.sql import functions as F

            df = spark_rows(spark, n).repartitionByRange(args.partitions, F.col("key"))
            df = df.sortWithinPartitions("key")
            seconds, _ = timed(lambda: df.write.format("noop").mode("overwrite").save())
            times[f"spark {args.master}: partition and sort only"] = seconds
            print(f"spark {args.master} partition and sort only: {seconds:.1f} s")
        for method in filter(None, args.methods.split(",")):
            path = os.path.join(work, f"spark-{method}")
            df = spark_rows(spark, n)
            seconds, summary = timed(
                lambda: write_leveldb(df, path, num_partitions=args.partitions, method=method)
            )
            assert summary["entries"] == n, summary
            times[f"spark {args.master} {method}"] = seconds
            print(f"spark {args.master} {method}: {seconds:.1f} s, {summary}")
            shutil.rmtree(path)

        if args.skew_entries:
            path = os.path.join(work, "skew")
            df = spark_rows(spark, args.skew_entries, skewed=True)
            summary = write_leveldb(df, path, num_partitions=args.partitions)
            shutil.rmtree(path)
            parts = summary["part_entries"]
            mean = sum(parts) / len(parts)
            print(f"skewed keys ({args.skew_entries:,} rows, 9 in 10 under b'hot'):")
            print(f"  entries per part: {parts}")
            print(f"  max/mean {max(parts) / mean:.3f}, min/mean {min(parts) / mean:.3f}")
    finally:
        spark.stop()

    if not {"build_db", "plyvel"} <= skip:
        seconds, rows = timed(lambda: rows_in_python(n))
        print(f"(making {n:,} rows in Python: {seconds:.1f} s, not counted)")
        if "build_db" not in skip:
            path = os.path.join(work, "build_db")
            seconds, summary = timed(
                lambda: leveltable.build_db(path, rows, sort=True, memory=1 << 30)
            )
            assert summary["entries"] == n
            times["leveltable.build_db (sort=True)"] = seconds
            print(f"build_db: {seconds:.1f} s, {summary}")
            shutil.rmtree(path)
        if "plyvel" not in skip:
            import plyvel

            path = os.path.join(work, "plyvel")

            def load():
                db = plyvel.DB(path, create_if_missing=True, error_if_exists=True)
                for i in range(0, n, 10_000):
                    with db.write_batch(sync=False) as batch:
                        for k, v in rows[i : i + 10_000]:
                            batch.put(k, v)
                db.close()

            seconds, _ = timed(load)
            times["plyvel WriteBatch (sync off)"] = seconds
            print(f"plyvel: {seconds:.1f} s")
            shutil.rmtree(path)
        del rows

    builds = [t for name, t in times.items() if name.startswith("spark") and "only" not in name]
    base = builds[0] if builds else None
    print("\n| build | seconds | rows/s | vs. first Spark build |\n| --- | ---: | ---: | ---: |")
    for name, seconds in times.items():
        ratio = f"{seconds / base:.2f}x" if base else "-"
        print(f"| {name} | {seconds:.1f} | {n / seconds:,.0f} | {ratio} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
