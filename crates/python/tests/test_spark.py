"""leveltable.spark.write_leveldb: databases built by Spark in local mode, read back by
LevelDB (plyvel) and leveltable.Db. Needs PySpark, pyarrow and Java; skipped without them
unless LEVELTABLE_REQUIRE_SERVERS=1."""

import os
import random
import shutil
import subprocess
import sys

import pytest

import leveltable


def _missing():
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        return f"PySpark or pyarrow missing ({e.name})"
    java = shutil.which("java") or (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else None
    )
    if not java or subprocess.run([java, "-version"], capture_output=True).returncode != 0:
        return "Java missing"
    return None


_MISSING = _missing()
if _MISSING and os.environ.get("LEVELTABLE_REQUIRE_SERVERS") != "1":
    pytest.skip(f"Spark tests skipped: {_MISSING}", allow_module_level=True)

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.types import BinaryType, StringType, StructField, StructType  # noqa: E402

from leveltable.spark import write_leveldb  # noqa: E402

try:
    import plyvel
except ImportError:
    plyvel = None

BINARY = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])


@pytest.fixture(scope="module")
def spark():
    # The workers run this interpreter, which has leveltable installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # local[2,3]: two cores, and a failed task is tried up to three times.
    session = (
        SparkSession.builder.master("local[2,3]")
        .appName("leveltable-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def random_items(n, seed, key_len=(1, 24)):
    rng = random.Random(seed)
    items = {}
    while len(items) < n:
        k = rng.randbytes(rng.randint(*key_len))
        items[k] = rng.randbytes(rng.randint(0, 40))
    return list(items.items())


def assert_database(path, expected):
    """The database at path holds exactly `expected` (sorted pairs), for LevelDB and us."""
    with leveltable.Db(path) as db:
        assert list(db) == expected
        sample = expected[:: max(1, len(expected) // 500)]
        assert db.get_many([k for k, _ in sample]) == [v for _, v in sample]
    if plyvel is not None:
        db = plyvel.DB(str(path), create_if_missing=False)
        try:
            assert list(db.iterator()) == expected
            for k, v in sample:
                assert db.get(k) == v
            assert db.get(b"\xff" * 40) is None
        finally:
            db.close()


def no_staging(tmp_path):
    return [p.name for p in tmp_path.iterdir() if "leveltable-staging" in p.name] == []


def test_random_binary_keys_over_8_partitions(spark, tmp_path):
    items = random_items(200_000, seed=1)
    df = spark.createDataFrame(items, BINARY).repartition(3)
    summary = write_leveldb(df, tmp_path / "db", num_partitions=8, max_file_size=1 << 20)
    assert summary["entries"] == 200_000
    assert summary["parts"] == 8 and summary["tables"] >= 8
    expected = sorted(items)
    assert [(bytes(r.key), bytes(r.value)) for r in df.orderBy("key").collect()] == expected
    assert_database(tmp_path / "db", expected)
    assert no_staging(tmp_path)


def test_rows_method_builds_the_same_database(spark, tmp_path):
    items = random_items(20_000, seed=2)
    df = spark.createDataFrame(items, BINARY)
    write_leveldb(df, tmp_path / "arrow", num_partitions=3)
    write_leveldb(df, tmp_path / "rows", num_partitions=3, method="rows")
    for name in ("arrow", "rows"):
        assert_database(tmp_path / name, sorted(items))
    assert no_staging(tmp_path)


def test_string_columns(spark, tmp_path):
    rows = [(f"ключ-{i:05d}-ü", f"значение {i}") for i in range(3000)]
    schema = StructType([StructField("k", StringType()), StructField("v", StringType())])
    df = spark.createDataFrame(rows, schema)
    write_leveldb(df, tmp_path / "db", key="k", value="v", num_partitions=3)
    expected = sorted((k.encode(), v.encode()) for k, v in rows)
    assert_database(tmp_path / "db", expected)


def test_empty_dataframe(spark, tmp_path):
    df = spark.createDataFrame([], BINARY)
    summary = write_leveldb(df, tmp_path / "db", num_partitions=4)
    assert summary["entries"] == 0 and summary["tables"] == 0
    assert_database(tmp_path / "db", [])
    assert no_staging(tmp_path)


def test_single_partition(spark, tmp_path):
    items = random_items(5000, seed=3)
    df = spark.createDataFrame(items, BINARY).repartition(4)
    summary = write_leveldb(df, tmp_path / "db", num_partitions=1)
    assert summary["parts"] == 1
    assert_database(tmp_path / "db", sorted(items))


def test_skewed_keys(spark, tmp_path):
    # 90% of the keys share a 3-byte prefix: range partitioning still splits them evenly.
    rng = random.Random(4)
    items = dict(random_items(2000, seed=5))
    while len(items) < 20_000:
        items[b"hot" + rng.randbytes(8)] = b"h"
    items = list(items.items())
    df = spark.createDataFrame(items, BINARY)
    summary = write_leveldb(df, tmp_path / "db", num_partitions=4)
    assert summary["parts"] == 4
    assert_database(tmp_path / "db", sorted(items))


def test_duplicates_refused_by_name_or_last_kept(spark, tmp_path):
    items = random_items(3000, seed=6)
    df = spark.createDataFrame(items + [(b"twice", b"first"), (b"twice", b"second")], BINARY)
    with pytest.raises(Exception, match="duplicate key \"twice\""):
        write_leveldb(df.coalesce(1), tmp_path / "dup", num_partitions=2)
    assert not (tmp_path / "dup").exists()
    assert no_staging(tmp_path)
    # "last": the row last in the DataFrame's order, here its only partition.
    write_leveldb(df.coalesce(1), tmp_path / "last", num_partitions=2, dedup="last")
    assert_database(tmp_path / "last", sorted(items + [(b"twice", b"second")]))
    # Across input partitions: partition order decides.
    first = spark.createDataFrame([(b"k", b"old"), (b"a", b"1")], BINARY).coalesce(1)
    second = spark.createDataFrame([(b"k", b"new"), (b"z", b"2")], BINARY).coalesce(1)
    write_leveldb(first.union(second), tmp_path / "union", num_partitions=2, dedup="last")
    assert_database(tmp_path / "union", [(b"a", b"1"), (b"k", b"new"), (b"z", b"2")])


def test_nulls_and_bad_arguments_are_refused_by_name(spark, tmp_path):
    df = spark.createDataFrame([(b"a", b"1"), (None, b"2")], BINARY)
    with pytest.raises(Exception, match="column 'key': null|column \"key\": null"):
        write_leveldb(df, tmp_path / "null", num_partitions=1)
    df = spark.createDataFrame([(b"a", None)], BINARY)
    with pytest.raises(Exception, match="column 'value': null|column \"value\": null"):
        write_leveldb(df, tmp_path / "null", num_partitions=1, method="rows")
    assert no_staging(tmp_path)
    good = spark.createDataFrame([(b"a", b"1")], BINARY)
    with pytest.raises(leveltable.InvalidArgumentError, match="no column 'nope'"):
        write_leveldb(good, tmp_path / "x", key="nope")
    with pytest.raises(leveltable.InvalidArgumentError, match="compression"):
        write_leveldb(good, tmp_path / "x", compression="zip")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_bytes(b"")
    with pytest.raises(leveltable.InvalidArgumentError, match="not an empty directory"):
        write_leveldb(good, tmp_path / "full")


@pytest.mark.parametrize("method", ["arrow", "rows"])
def test_a_failed_task_leaves_no_trace(spark, tmp_path, method):
    items = random_items(30_000, seed=7)
    df = spark.createDataFrame(items, BINARY)
    # Partition 2's first attempt builds its part completely, then fails; Spark retries it.
    summary = write_leveldb(
        df, tmp_path / "db", num_partitions=4, method=method, _fail_first_attempt=2
    )
    assert summary["entries"] == 30_000 and summary["parts"] == 4
    assert_database(tmp_path / "db", sorted(items))
    assert no_staging(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["db"]


def test_build_part_arrow_reads_sliced_large_and_string_columns(tmp_path):
    import pyarrow as pa

    items = sorted(random_items(3000, seed=8))
    keys = pa.array([k for k, _ in items], pa.binary())
    values = pa.array([v for _, v in items], pa.large_binary())
    whole = pa.RecordBatch.from_arrays([keys, values], names=["k", "v"])
    # Slices start mid-buffer (offset != 0); one is empty.
    batches = [whole.slice(0, 1000), whole.slice(1000, 0), whole.slice(1000, 1999)]
    batches.append(whole.slice(2999))
    part = leveltable.build_part_arrow(tmp_path / "p", batches, key_column="k", value_column="v")
    assert part.entries == 3000
    summary = leveltable.commit_db(tmp_path / "db", [part])
    assert summary["entries"] == 3000
    assert_database(tmp_path / "db", items)

    text = pa.RecordBatch.from_arrays(
        [pa.array(["a", "b", "b"], pa.large_string()), pa.array(["1", "2", "3"])],
        names=["key", "value"],
    )
    with pytest.raises(leveltable.KeyOrderError, match='duplicate key "b"'):
        leveltable.build_part_arrow(tmp_path / "dup", [text])
    halves = [text.slice(0, 2), text.slice(2)]
    part = leveltable.build_part_arrow(tmp_path / "last", halves, dedup="last")
    leveltable.commit_db(tmp_path / "last-db", [part])
    assert list(leveltable.Db(tmp_path / "last-db")) == [(b"a", b"1"), (b"b", b"3")]

    nulls = pa.RecordBatch.from_arrays(
        [pa.array([b"a", b"b", None, b"d"]), pa.array([b"1"] * 4)], names=["key", "value"]
    )
    with pytest.raises(leveltable.InvalidArgumentError, match='column "key": null in row 1'):
        leveltable.build_part_arrow(tmp_path / "null", [nulls.slice(1)])
    ints = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([b"1"])], names=["key", "value"])
    with pytest.raises(leveltable.InvalidArgumentError, match="type int64"):
        leveltable.build_part_arrow(tmp_path / "int", [ints])


def _python_without_leveltable():
    """Another interpreter of this Python's version that cannot import leveltable (the
    system's), or None."""
    for candidate in ("/usr/bin/python3", shutil.which("python3", path=os.defpath)):
        if not candidate or not os.path.exists(candidate):
            continue
        probe = (
            "import sys\n"
            f"assert sys.version_info[:2] == {tuple(sys.version_info[:2])!r}\n"
            "try:\n"
            "    import leveltable\n"
            "except ImportError:\n"
            "    sys.exit(0)\n"
            "sys.exit(1)\n"
        )
        if subprocess.run([candidate, "-c", probe], capture_output=True).returncode == 0:
            return candidate
    return None


def _bare_python(directory):
    """A virtual environment of this Python with nothing installed: it cannot import
    leveltable."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(directory)],
        check=True,
        capture_output=True,
    )
    return str(directory / "bin" / "python")


_DRIVER = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.argv[1]
from pyspark.sql import SparkSession
import leveltable
from leveltable.spark import write_leveldb
spark = (
    SparkSession.builder.master("local[1,1]")
    .appName("leveltable-missing-on-executors")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .getOrCreate()
)
df = spark.createDataFrame([(b"a", b"1"), (b"b", b"2")], "key binary, value binary")
try:
    write_leveldb(df, sys.argv[2], method="rows", num_partitions=1)
except leveltable.Error as e:
    print("raised", type(e).__name__, e)
spark.stop()
"""


def test_executors_without_leveltable_fail_the_job_clearly(tmp_path):
    python = _python_without_leveltable() or _bare_python(tmp_path / "bare")
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    out = subprocess.run(
        [sys.executable, str(driver), python, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("raised Error leveltable cannot be imported by the Python"), line
    assert f"({python})" in line
    assert f"{python} -m pip install leveltable" in line
    assert not (tmp_path / "db").exists()
