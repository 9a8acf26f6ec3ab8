"""The Spark data source ``leveldb`` at scale, with executors in processes of their own
(``local-cluster[2,1,1024]``): a database LevelDB 1.23 built with tables in all seven levels
and a live log, and a Minecraft Bedrock world Mojang's LevelDB wrote, read by Spark and
compared with LevelDB's own iteration (per partition, by digest), from a directory and
from an S3 server (moto).

LEVELTABLE_SPARK_SCALE_BYTES sizes the LevelDB database (default 24 MiB; the read is cut
into partitions of LEVELTABLE_SPARK_SCALE_PARTITION_BYTES, default 1/12 of it);
LEVELTABLE_SPARK_SCALE_DB names one ``leveldb_levels DIR BYTES SEED`` built before instead.
Needs PySpark 4.1 or later and pyarrow (skipped without them), and Java, g++ with LevelDB
1.23's static library (libleveldb-dev) and its shared one, moto's server, Mojang's LevelDB
(amulet-leveldb) and Chromium (skipped without them unless LEVELTABLE_REQUIRE_SERVERS=1).
LEVELTABLE_SPARK_PROFILES sets the number of Chromium profiles (default 8),
LEVELTABLE_SPARK_WORLD_MEGABYTES the world's size (default 40). Progress and timings go to
stderr (``pytest -s``)."""

import os
import shutil
import subprocess
import sys
import time

import pytest

import leveldb_c
from conftest import skip_without_spark

REQUIRED = os.environ.get("LEVELTABLE_REQUIRE_SERVERS") == "1"
HERE = os.path.dirname(os.path.abspath(__file__))
STATIC_LEVELDB = "/usr/lib/x86_64-linux-gnu/libleveldb.a"


try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as e:
    # The environments without PySpark (the sdist's tests) skip the module whatever
    # LEVELTABLE_REQUIRE_SERVERS says; where PySpark is, the rest must be too.
    pytest.skip(f"Spark scale tests skipped: PySpark or pyarrow missing ({e.name})",
                allow_module_level=True)


skip_without_spark("Spark scale tests", extra=[
    lambda: None if leveldb_c.library() and os.path.isfile(STATIC_LEVELDB)
    else "LevelDB 1.23 (libleveldb-dev) missing",
    lambda: None if shutil.which("g++") else "g++ missing"])

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import BinaryType, StructField, StructType  # noqa: E402

import s3_moto  # noqa: E402
from spark_digest import bounds_of, leveldb_digests, spark_digests  # noqa: E402
from leveltable import spark_source  # noqa: E402

SPARK_MASTER = os.environ.get("LEVELTABLE_SPARK_CLUSTER_MASTER", "local-cluster[2,1,1024]")
SCALE = int(os.environ.get("LEVELTABLE_SPARK_SCALE_BYTES", 24 << 20))
PARTITION_BYTES = int(os.environ.get("LEVELTABLE_SPARK_SCALE_PARTITION_BYTES", SCALE // 12))
RAW = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])


def log(message):
    """Progress on stderr (shown by pytest -s), with the figures a run at scale reports."""
    print(f"[spark scale] {message}", file=sys.stderr, flush=True)


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    """A database LevelDB 1.23 built (tests/leveldb_levels.cc) with tables in every level
    and a live log: (its directory, the tables of each level)."""
    given = os.environ.get("LEVELTABLE_SPARK_SCALE_DB")
    if given:
        # A database leveldb_levels built before (left as it is: LevelDB iterates a copy).
        import leveltable

        with leveltable.Db(given) as db:
            tables = [len(level) for level in db.stats()["levels"]]
        return given, tables
    root = tmp_path_factory.mktemp("deep")
    program = root / "leveldb_levels"
    subprocess.run(["g++", "-O1", "-std=c++17", os.path.join(HERE, "leveldb_levels.cc"),
                    STATIC_LEVELDB, "-lsnappy", "-lpthread", "-o", str(program)], check=True)
    path = root / "db"
    started = time.monotonic()
    out = subprocess.run([str(program), str(path), str(SCALE), "1"], check=True,
                         capture_output=True, text=True).stdout
    tables = [int(n) for n in out.split()]
    size = sum(os.path.getsize(path / n) for n in os.listdir(path))
    log(f"LevelDB built {size / 1e6:.1f} MB, tables per level {tables}, "
        f"in {time.monotonic() - started:.1f} s")
    return str(path), tables


def reader_of(path, **options):
    """The data source's reader as Spark's planner makes it, without Spark."""
    options = {"path": path, "partitionbytes": str(PARTITION_BYTES), **options}
    return spark_source.LevelDbDataSource(options).reader(RAW)


def leveldb_items(path, start=None, stop=None):
    """LevelDB 1.23's own iteration of a copy of `path` (an open writes the log out into
    a table: the original stays as written)."""
    copy = f"{path}.leveldb-view"
    if not os.path.exists(copy):
        shutil.copytree(path, copy)
    db = leveldb_c.LevelDB(leveldb_c.library(), copy, create=False)
    try:
        yield from db.items(start, stop)
    finally:
        db.close()


def check_read_equals(spark, path, expected_items, options=None, ranges=(),
                      partition_bytes=PARTITION_BYTES, min_partitions=8):
    """Spark's read of `path` against `expected_items()` (an iteration in key order): the
    planned partitions (at least `min_partitions`, disjoint and covering the key space), each partition's
    digest, the count, and `ranges` collected. Returns the seconds Spark's full read
    (the digests) took."""
    options = dict(options or {})
    reader = spark_source.LevelDbDataSource(
        {"path": path, "partitionbytes": str(partition_bytes), **options}).reader(RAW)
    spans = bounds_of(reader.partitions())
    assert len(spans) >= min_partitions, spans
    assert spans[0][0] is None and spans[-1][1] is None
    for (_, stop), (start, _) in zip(spans, spans[1:]):
        assert stop is not None and stop == start
    for start, stop in spans:
        assert start is None or stop is None or start < stop
    expected = leveldb_digests(spans, expected_items())
    df = spark.read.format("leveldb").option("partitionBytes", partition_bytes)
    for name, value in options.items():
        df = df.option(name, value)
    df = df.load(path)
    assert df.rdd.getNumPartitions() == len(spans)
    started = time.monotonic()
    got = spark_digests(df)
    seconds = time.monotonic() - started
    rows = sum(r for r, _ in expected)
    log(f"{path}: {rows} entries in {len(spans)} partitions read and digested by Spark in "
        f"{seconds:.1f} s")
    assert got == expected
    assert df.count() == rows
    for a, b in ranges:
        want = [(k, v) for k, v in expected_items(a, b)]
        ranged = df.filter((F.col("key") >= a) & (F.col("key") < b)).collect()
        assert [(bytes(r.key), bytes(r.value)) for r in ranged] == want
    return seconds


def test_a_database_with_every_level_reads_as_leveldb_iterates(spark, deep):
    path, tables = deep
    assert len(tables) == 7 and all(tables), tables
    assert any(n.endswith(".log") and os.path.getsize(os.path.join(path, n)) > 0
               for n in os.listdir(path))
    # Ranges: one inside a partition, one across a partition boundary, one past the end.
    spans = bounds_of(reader_of(path).partitions())
    middle = spans[len(spans) // 2][0]
    ranges = [(b"k000000000100", b"k000000000900"),
              (middle[:-3] + b"000", middle[:-3] + b"999"),
              (b"k9", b"l")]
    check_read_equals(spark, path, lambda a=None, b=None: leveldb_items(path, a, b),
                      ranges=ranges)
    # Every level is read: the versions read finds rows of each phase's writes (each
    # value starts with the phase that wrote it, p6 deepest, p7 in the log).
    phases = (spark.read.format("leveldb").option("versions", "true").load(path)
              .select(F.substring("value", 1, 3).alias("p")).distinct().collect())
    assert {bytes(r.p) for r in phases if r.p is not None} >= {b"p%d:" % n for n in range(8)}


def test_the_same_database_on_s3_reads_as_leveldb_iterates(spark, moto, deep):
    path, _ = deep
    url, _ = s3_moto.upload(moto, path, "scale/deep")
    check_read_equals(spark, url, lambda a=None, b=None: leveldb_items(path, a, b),
                      options=s3_moto.store_options(moto),
                      ranges=[(b"k000000000100", b"k000000000900")])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A Minecraft Bedrock world's db/ as Mojang's LevelDB (amulet-leveldb) leaves it, and
    Mojang's own iteration of it (of a copy: an open writes the log out)."""
    try:
        import leveldb as amulet
    except ImportError:
        amulet = None
    if amulet is None or not hasattr(amulet, "LevelDB"):
        if REQUIRED:
            pytest.fail("amulet-leveldb (Mojang's LevelDB) missing and LEVELTABLE_REQUIRE_SERVERS=1")
        pytest.skip("amulet-leveldb (Mojang's LevelDB) missing")
    from bedrock_world import write_world

    root = tmp_path_factory.mktemp("world")
    path = root / "db"
    db = amulet.LevelDB(str(path), create_if_missing=True)
    write_world(db, megabytes=WORLD_MEGABYTES, seed=11)
    db.close(compact=False)
    shutil.copytree(path, root / "copy")
    db = amulet.LevelDB(str(root / "copy"))
    try:
        items = list(db.items())
    finally:
        db.close()
    return str(path), items


#: The world's values, in MB (LEVELTABLE_SPARK_WORLD_MEGABYTES).
WORLD_MEGABYTES = int(os.environ.get("LEVELTABLE_SPARK_WORLD_MEGABYTES", 40))


def in_range(items, start=None, stop=None):
    return [(k, v) for k, v in items
            if (start is None or k >= start) and (stop is None or k < stop)]


def world_partition_bytes(path):
    """A partition size that cuts the world into about 12 partitions."""
    return max(1, sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path)) // 12)


def test_a_bedrock_world_reads_as_mojang_iterates(spark, world):
    path, items = world
    middle = items[len(items) // 2][0]
    check_read_equals(spark, path, lambda a=None, b=None: in_range(items, a, b),
                      partition_bytes=world_partition_bytes(path), min_partitions=4,
                      ranges=[(middle, middle + b"\xff"), (b"~", b"\xff")])


def test_the_same_world_on_s3_reads_as_mojang_iterates(spark, moto, world):
    path, items = world
    url, _ = s3_moto.upload(moto, path, "scale/world")
    check_read_equals(spark, url, lambda a=None, b=None: in_range(items, a, b),
                      options=s3_moto.store_options(moto),
                      partition_bytes=world_partition_bytes(path), min_partitions=4,
                      ranges=[(b"~", b"\xff")])


#: Chromium profiles made for the decoded reads (LEVELTABLE_SPARK_PROFILES).
PROFILES = int(os.environ.get("LEVELTABLE_SPARK_PROFILES", 8))


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """A directory of PROFILES Chromium profiles, each with an IndexedDB database and Local
    Storage that its page wrote."""
    import chromium_profiles

    if not chromium_profiles.available():
        if REQUIRED:
            pytest.fail("chromium missing and LEVELTABLE_REQUIRE_SERVERS=1")
        pytest.skip("chromium missing: the Chromium profile reads are skipped")
    root = tmp_path_factory.mktemp("profiles")
    started = time.monotonic()
    chromium_profiles.make_profiles(str(root), PROFILES)
    log(f"{PROFILES} Chromium profiles made in {time.monotonic() - started:.1f} s")
    return root


def text(v):
    import json

    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def test_chromium_profiles_decoded_as_the_decoders_read_them(spark, profiles):
    import glob

    from leveltable import chromium

    import chromium_profiles

    idb = glob.glob(str(profiles / "*" / "Default" / "IndexedDB" / "*.indexeddb.leveldb"))
    storage = glob.glob(str(profiles / "*" / "Default" / "Local Storage" / "leveldb"))
    assert len(idb) == len(storage) == PROFILES
    expected = sorted(
        (d, r["origin"], str(r["database"]), str(r["store"]), text(r["key"]), text(r["value"]))
        for d in idb for r in chromium.indexeddb(d))
    # Every record each page wrote is there.
    records = [e for e in expected if e[2] == "scale" and e[3] == "records"]
    assert len(records) == PROFILES * chromium_profiles.RECORDS
    started = time.monotonic()
    got = (spark.read.format("leveldb").option("decode", "indexeddb")
           .load(str(profiles / "*" / "Default" / "IndexedDB")).collect())
    log(f"{len(got)} IndexedDB records of {PROFILES} profiles read by Spark in "
        f"{time.monotonic() - started:.1f} s")
    assert sorted((r.database_path, r.origin, r.database, r.store, r.key, r.value)
                  for r in got) == expected

    expected = sorted((d, r["origin"], text(r["key"]), text(r["value"]))
                      for d in storage for r in chromium.local_storage(d))
    ours = [e for e in expected if e[2].startswith('"item ')]
    assert len(ours) == PROFILES * chromium_profiles.ITEMS
    got = (spark.read.format("leveldb").option("decode", "local-storage")
           .load(str(profiles / "*" / "Default" / "Local Storage" / "leveldb")).collect())
    assert sorted((r.database_path, r.origin, r.key, r.value) for r in got) == expected
