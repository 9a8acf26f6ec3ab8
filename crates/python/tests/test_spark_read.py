"""The Spark data source ``leveldb`` (leveltable.spark_source): databases written by LevelDB
1.23 (the system's libleveldb, through its C API) with several levels and live logs, read by Spark and compared with LevelDB's own
iteration; the partitions' key ranges; key-range pushdown and the tables it opens; reads
while LevelDB writes. Needs PySpark 4.1 or later, pyarrow, libleveldb and Java; skipped without
them unless LEVELTABLE_REQUIRE_SERVERS=1."""

import json
import os
import random
import pathlib
import shutil
import threading

import pytest

import leveldb_c
import leveltable
from conftest import skip_without_spark


skip_without_spark("Spark tests", extra=[
    lambda: None if leveldb_c.library() else "libleveldb (LevelDB 1.23) missing"])

from pyspark.sql import datasource as ds  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import BinaryType, StructField, StructType  # noqa: E402

from leveltable import spark_source  # noqa: E402

CHROMIUM = pathlib.Path(__file__).resolve().parents[3] / "crates" / "chromium" / "testdata" / "golden"

#: Spark's master for this module: LEVELTABLE_SPARK_MASTER (local-cluster[2,1,1024] runs
#: two executor processes), else local[2], which keeps the module's time and memory low.
SPARK_MASTER = os.environ.get("LEVELTABLE_SPARK_MASTER", "local[2]")

LIB = leveldb_c.library()

RAW = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])


def key(i):
    return b"k%08d" % i


def value(i):
    """About 110 bytes that snappy cannot shrink much, different per i."""
    return random.Random(i).randbytes(60 + i % 100)


def open_leveldb(path, **options):
    return leveldb_c.LevelDB(LIB, path, **options)


def build(path, n, *, tail=2000):
    """A database LevelDB writes: `n` entries in random order through small write buffers
    and tables (so compactions fill levels 0 to 2 or more), a share of them deleted, and
    `tail` more writes left in the log (the database is closed without a flush, as LevelDB
    leaves its last log). Returns the path."""
    # LevelDB's smallest: 64 KiB buffers, 1 MiB tables.
    db = open_leveldb(path, write_buffer_size=64 << 10, max_file_size=1 << 20)
    step = 500
    for start in range(0, n, step):
        db.write([(key(i * 7919 % n), value(i)) for i in range(start, min(n, start + step))])
    db.write(deletes=[key(i) for i in range(0, n, 13)])
    db.close()
    # Reopened: the first of what follows fills a few level-0 tables, the rest stays in
    # the log.
    db = open_leveldb(path, write_buffer_size=64 << 10, max_file_size=1 << 20)
    for i in range(tail):
        db.write([(key(i * 31 % n), b"tail-" + value(i))])
    db.close()
    return path


def levels(path):
    with leveltable.Db(path) as db:
        stats = db.stats()
    return [len(level) for level in stats["levels"]], stats["log_bytes"]


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    path = build(tmp_path_factory.mktemp("read") / "db", 90000)
    tables, log_bytes = levels(path)
    assert sum(1 for t in tables if t) >= 3 and tables[0] + tables[1] > 0, tables
    assert log_bytes > 0
    return str(path)


def leveldb_items(path, start=None, stop=None):
    """The entries LevelDB's iterator yields, in `[start, stop)`."""
    db = open_leveldb(path, create=False)
    try:
        return list(db.items(start, stop))
    finally:
        db.close()


def read(spark, path, **options):
    reader = spark.read.format("leveldb")
    for name, v in options.items():
        reader = reader.option(name, str(v))
    return reader.load(path)


def reader_of(path, partition_bytes=1 << 20, schema=RAW, **options):
    """The data source's reader as Spark's planner makes it, without Spark."""
    options = {"path": path, "partitionbytes": str(partition_bytes), **options}
    return spark_source.LevelDbDataSource(options).reader(schema)


def scan(piece):
    return [r for batch in spark_source.read_piece(piece, ["key", "value"])
            for r in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist())]


def test_full_read_count_and_ranges_equal_leveldb(spark, database):
    expected = leveldb_items(database)
    df = read(spark, database, partitionBytes=1 << 20)
    assert df.rdd.getNumPartitions() >= 8
    assert df.count() == len(expected)
    assert sorted((bytes(r.key), bytes(r.value)) for r in df.collect()) == expected
    a, b = key(12000), key(12500)
    ranged = df.filter((F.col("key") >= a) & (F.col("key") < b)).collect()
    assert [(bytes(r.key), bytes(r.value)) for r in ranged] == leveldb_items(database, a, b)
    assert df.filter(F.col("key") == key(12001)).count() == 1
    assert df.filter(F.col("key") > key(39990)).count() == len(
        [k for k, _ in expected if k > key(39990)]
    )


def test_partitions_are_disjoint_covering_key_ranges(database):
    reader = reader_of(database)
    partitions = reader.partitions()
    pieces = [p for part in partitions for p in part.pieces]
    assert len(partitions) >= 8
    assert pieces[0].start is None and pieces[-1].stop is None
    for before, after in zip(pieces, pieces[1:]):
        assert before.stop == after.start and before.stop is not None
        assert before.start is None or before.start < before.stop
    everything = []
    for p in pieces:
        rows = scan(p)
        assert all((p.start is None or k >= p.start) and (p.stop is None or k < p.stop)
                   for k, _ in rows)
        # Each piece reads only the tables overlapping its range: fewer than all.
        assert p.tables < sum(levels(database)[0])
        everything.extend(rows)
    assert everything == leveldb_items(database)


def test_spark_partitions_hold_increasing_key_ranges(spark, database):
    df = read(spark, database, partitionBytes=1 << 20)
    spans = (
        df.groupBy(F.spark_partition_id().alias("p"))
        .agg(F.min("key").alias("lo"), F.max("key").alias("hi"))
        .orderBy("p")
        .collect()
    )
    assert len(spans) >= 8
    for before, after in zip(spans, spans[1:]):
        assert bytes(before.hi) < bytes(after.lo)


def test_a_narrow_range_opens_few_tables(spark, database):
    total = sum(levels(database)[0])
    a, b = key(20000), key(20400)  # 1% of the keys
    reader = reader_of(database)
    filters = [ds.GreaterThanOrEqual(("key",), a), ds.LessThan(("key",), b),
               ds.EqualTo(("value",), b"x")]
    left = list(reader.pushFilters(filters))
    assert left == [filters[2]]  # the key bounds are handled by the source
    pieces = [p for part in reader.partitions() for p in part.pieces]
    assert pieces and pieces[0].start == a and pieces[-1].stop == b
    rows = []
    opened = 0
    for p in pieces:
        s = leveltable._leveltable.VersionScan(database, p.version, p.start, p.stop)
        for chunk in s:
            rows.append(chunk[0])
        opened += s.opened()
        assert s.opened() <= s.tables == p.tables
    assert sum(rows) == len(leveldb_items(database, a, b))
    # 1% of the keys: the tables overlapping it, a few per level, of many.
    assert opened <= max(4, total // 10), (opened, total)
    # And through Spark, pushed down: the same rows.
    got = read(spark, database).filter((F.col("key") >= a) & (F.col("key") < b)).collect()
    assert [(bytes(r.key), bytes(r.value)) for r in got] == leveldb_items(database, a, b)


def test_a_one_percent_range_opens_at_most_two_percent_of_the_tables(spark, tmp_path):
    path = str(tmp_path / "bulk")
    n = 100_000
    summary = leveltable.build_db(path, ((key(i), value(i)) for i in range(n)),
                                  max_file_size=48 << 10)
    tables = summary["tables"]
    assert tables >= 100, summary
    a, b = key(40000), key(41000)  # 1% of the keys
    reader = reader_of(path, partition_bytes=1 << 20)
    filters = [ds.GreaterThanOrEqual(("key",), a), ds.LessThan(("key",), b)]
    assert list(reader.pushFilters(filters)) == []
    rows, opened = 0, 0
    for part in reader.partitions():
        for p in part.pieces:
            s = leveltable._leveltable.VersionScan(path, p.version, p.start, p.stop)
            rows += sum(chunk[0] for chunk in s)
            opened += s.opened()
    assert rows == 1000
    assert 1 <= opened <= tables * 2 // 100, (opened, tables)
    got = read(spark, path).filter((F.col("key") >= a) & (F.col("key") < b)).collect()
    assert [(bytes(r.key), bytes(r.value)) for r in got] == [
        (key(i), value(i)) for i in range(40000, 41000)]


def test_every_version_with_its_sequence_and_state(spark, database, tmp_path):
    import pyarrow as pa

    # A copy LevelDB never opens: an open by LevelDB flushes the log and compacts, which
    # drops shadowed versions.
    copy = str(tmp_path / "db")
    shutil.copytree(database, copy)
    with leveltable.Db(copy) as db:
        table = pa.RecordBatchReader.from_stream(db.scan_arrow(versions=True)).read_all()
    # (key, sequence) names a version: sorted by it (a deletion's value is None).
    by_version = lambda r: (r[0], r[2])  # noqa: E731
    expected = sorted(zip(table.column("key").to_pylist(), table.column("value").to_pylist(),
                          table.column("sequence").to_pylist(), table.column("state").to_pylist()),
                      key=by_version)
    assert {"live", "deleted", "shadowed"} <= {e[3] for e in expected}
    df = read(spark, copy, versions="true", partitionBytes=1 << 20)
    assert df.columns == ["key", "value", "sequence", "state"]
    assert df.rdd.getNumPartitions() >= 8
    arrow = df.toArrow()
    got = sorted(zip(arrow.column("key").to_pylist(), arrow.column("value").to_pylist(),
                     arrow.column("sequence").to_pylist(), arrow.column("state").to_pylist()),
                 key=by_version)
    assert got == expected
    # The live versions are what a read returns.
    live = df.filter(F.col("state") == "live").select("key", "value").collect()
    assert sorted((bytes(r.key), bytes(r.value)) for r in live) == leveldb_items(database)
    # A key range, pushed down, and the database column.
    a, b = key(300), key(900)
    ranged = (spark.read.format("leveldb").option("versions", "true")
              .schema("key binary, sequence bigint, state string, database string")
              .load(copy).filter((F.col("key") >= a) & (F.col("key") < b)).collect())
    assert sorted((bytes(r.key), r.sequence, r.state) for r in ranged) == sorted(
        (k, q, st) for k, _, q, st in expected if a <= k < b)
    assert {r.database for r in ranged} == {copy}
    with pytest.raises(Exception, match="versions=true"):
        spark.read.format("leveldb").schema("key binary, state string").load(copy).count()
    with pytest.raises(Exception, match="versions"):
        read(spark, copy, versions="maybe").count()


def test_key_filters_bound_the_range():
    assert spark_source._key_bounds(ds.StringStartsWith(("key",), "k1")) == (b"k1", b"k2", True)
    assert spark_source._key_bounds(ds.LessThanOrEqual(("key",), b"a")) == (None, b"a\0", True)
    assert spark_source._key_bounds(ds.GreaterThan(("key",), b"a")) == (b"a\0", None, True)
    assert spark_source._key_bounds(ds.In(("key",), (b"b", b"a"))) == (b"a", b"b\0", False)
    assert spark_source._key_bounds(ds.EqualTo(("value",), b"a")) is None
    assert spark_source._prefix_end(b"a\xff\xff") == b"b"
    assert spark_source._prefix_end(b"\xff") is None


def test_an_empty_key_range_reads_nothing(spark, database):
    df = read(spark, database)
    assert df.filter((F.col("key") >= key(5)) & (F.col("key") < key(5))).count() == 0
    assert df.filter(F.col("key").isin([key(7), key(9)])).count() == len(
        [k for k, _ in leveldb_items(database, key(7), key(10)) if k in (key(7), key(9))]
    )


def test_many_databases_packed_with_their_names(spark, tmp_path):
    root = tmp_path / "fleet"
    expected = []
    for d in range(5):
        path = root / f"profile{d}" / "leveldb"
        path.parent.mkdir(parents=True)
        db = open_leveldb(path)
        for i in range(50):
            db.write([(b"%d-%03d" % (d, i), b"v%d" % i)])
            expected.append((str(path), b"%d-%03d" % (d, i), b"v%d" % i))
        db.close()
    schema = "key binary, value binary, database string"
    df = spark.read.format("leveldb").schema(schema).load(str(root))
    got = sorted((r.database, bytes(r.key), bytes(r.value)) for r in df.collect())
    assert got == sorted(expected)
    # Small databases share partitions.
    assert df.rdd.getNumPartitions() == 1
    globbed = spark.read.format("leveldb").load(str(root / "profile[13]" / "leveldb"))
    assert globbed.count() == 100


def test_a_table_deleted_after_planning_fails_naming_the_database(tmp_path):
    path = str(build(tmp_path / "db", 8000, tail=100))
    reader = reader_of(path, partition_bytes=1 << 30)
    (partition,) = reader.partitions()
    db = open_leveldb(path, create=False)
    db.compact_range()  # rewrites every table: the planned ones are deleted
    db.close()
    with pytest.raises(leveltable.Error, match=f"leveldb database {path}: .*ldb"):
        list(reader.read(partition))


def test_a_read_while_leveldb_writes_sees_one_state(spark, database, tmp_path):
    path = str(tmp_path / "db")
    shutil.copytree(database, path)
    # Keys spread over the whole key space, so over every partition: each write batch
    # sets all of them to its own number.
    watched = [key(i) for i in range(0, 90000, 397)]
    db = open_leveldb(path, create=False, write_buffer_size=256 << 20)
    # Compacted now, so that no compaction deletes tables during the reads (that fails a
    # read, naming the database): the writes below stay in the log.
    db.compact_range()
    db.write([(k, b"state-0") for k in watched])
    stop = threading.Event()
    written = [0]

    def writer():
        n = 0
        # At most 300 batches (about 9 MB of log), so that the log the reads replay stays
        # small; the reads run meanwhile.
        while not stop.is_set() and n < 300:
            n += 1
            db.write([(k, b"state-%d" % n) for k in watched])
            written[0] = n
            stop.wait(0.02)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        states = set()
        for _ in range(2):
            df = read(spark, path, partitionBytes=1 << 20)
            assert df.rdd.getNumPartitions() >= 4
            rows = df.filter(F.col("key").isin(watched)).collect()
            seen = {bytes(r.key): bytes(r.value) for r in rows}
            assert set(seen) == set(watched)
            values = set(seen.values())
            assert len(values) == 1, sorted(values)[:5]
            states.update(values)
    finally:
        stop.set()
        thread.join()
        db.close()
    assert written[0] > 0


def test_chromium_directories_decoded(spark, tmp_path):
    golden = tmp_path / "golden"
    shutil.copytree(CHROMIUM, golden)
    idb = golden / "IndexedDB"
    df = spark.read.format("leveldb").option("decode", "indexeddb").load(str(idb))
    got = sorted(
        (r.origin, r.database, r.store, r.key, r.value) for r in df.collect()
    )
    expected = []
    for d in sorted(p for p in idb.iterdir() if p.name.endswith(".leveldb")):
        for r in leveltable.chromium.indexeddb(d):
            expected.append((r["origin"], str(r["database"]), str(r["store"]),
                             json.dumps(r["key"], ensure_ascii=False, sort_keys=True),
                             json.dumps(r["value"], ensure_ascii=False, sort_keys=True)))
    assert got == sorted(expected) and got
    ls = spark.read.format("leveldb").option("decode", "local-storage").load(
        str(golden / "local_storage" / "leveldb"))
    assert ls.count() == len(list(leveltable.chromium.local_storage(golden / "local_storage" / "leveldb")))
    # The raw view of IndexedDB directories (comparator idb_cmp1): their raw entries.
    raw = sorted(bytes(r.key) for r in spark.read.format("leveldb").load(str(idb)).collect())
    direct = []
    for d in (p for p in idb.iterdir() if p.name.endswith(".leveldb")):
        with leveltable.Db(d) as db:
            direct.extend(k for k, _ in db)
    assert raw == sorted(direct) and raw


def test_bad_options_are_refused(spark, database):
    with pytest.raises(Exception, match="partitionBytes"):
        read(spark, database, partitionBytes=0).count()
    with pytest.raises(Exception, match="decode"):
        read(spark, database, decode="nope").count()
    with pytest.raises(Exception, match="object-store"):
        read(spark, "s3://bucket/db", decode="indexeddb").count()
