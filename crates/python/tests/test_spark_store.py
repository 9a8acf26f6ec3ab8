"""The Spark data source ``leveldb`` on object storage, with executors in processes of their
own (``local-cluster[2,1,1024]``: two workers): databases LevelDB wrote (through plyvel)
uploaded to an S3 server (moto, started on a loopback port) and read by Spark, compared
with LevelDB's own iteration; the requests the planner makes; tasks that need only their
own tables; many databases under one prefix; the same database served by an HTTP server
that lists (nginx with WebDAV) and read from its ``http://`` URL. Needs PySpark 4.1 or
later, pyarrow, plyvel, Java, moto's server (``MOTO_SERVER`` or ``moto_server`` on PATH) and
nginx with its WebDAV extension (``NGINX`` or ``nginx`` on PATH,
``libnginx-mod-http-dav-ext``); skipped without them unless
LEVELTABLE_REQUIRE_SERVERS=1."""

import os
import shutil

import pytest

import leveltable
from conftest import skip_without_spark

skip_without_spark("Spark tests", extra=["plyvel"])

import plyvel  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from leveltable import spark_source  # noqa: E402
from s3_moto import BUCKET, store_options, upload  # noqa: E402
from s3_moto import request as _request  # noqa: E402
from spark_digest import bounds_of, leveldb_digests, spark_digests  # noqa: E402

#: Two worker processes of one core and 1 GiB each, as a cluster runs executors; PySpark as
#: pip installs it carries the scripts this mode starts them with.
SPARK_MASTER = os.environ.get("LEVELTABLE_SPARK_CLUSTER_MASTER", "local-cluster[2,1,1024]")


def key(i):
    return b"k%07d" % i


def write_plyvel(path, n):
    """A database LevelDB writes through plyvel: `n` entries through a small write buffer
    (tables of about 50 KiB, which compactions move down to levels 1 and 2), then, reopened,
    a share of them deleted and some overwritten, left in the log. Returns the path."""
    db = plyvel.DB(str(path), create_if_missing=True, write_buffer_size=64 << 10)
    for start in range(0, n, 500):
        with db.write_batch() as wb:
            for i in range(start, min(n, start + 500)):
                wb.put(key(i), b"value-%d-" % i + os.urandom(40))
    db.close()
    db = plyvel.DB(str(path), write_buffer_size=8 << 20)
    for i in range(0, n, 17):
        db.delete(key(i))
    for i in range(0, n, 101):
        db.put(key(i), b"overwritten-%d" % i)
    db.close()
    return str(path)


def in_range(items, start=None, stop=None):
    return [(k, v) for k, v in items
            if (start is None or k >= start) and (stop is None or k < stop)]


def plyvel_items(path, start=None, stop=None):
    db = plyvel.DB(path)
    try:
        return list(db.iterator(start=start, stop=stop))
    finally:
        db.close()


def read(spark, url, endpoint, schema=None, **options):
    reader = spark.read.format("leveldb")
    if schema:
        reader = reader.schema(schema)
    for name, v in {**store_options(endpoint), **options}.items():
        reader = reader.option(name, str(v))
    return reader.load(url)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A plyvel-written database: (its directory, its entries as LevelDB iterates them).
    The directory is left as written (LevelDB iterates a copy: an open flushes the log
    into a table), to upload or serve."""
    root = tmp_path_factory.mktemp("written")
    path = write_plyvel(root / "db", 40000)
    shutil.copytree(path, root / "copy")
    return path, plyvel_items(str(root / "copy"))


@pytest.fixture(scope="module")
def remote(moto, written):
    """The plyvel-written database, uploaded: (its directory, its URL, the uploaded sizes,
    its entries as LevelDB iterates them)."""
    path, expected = written
    url, sizes = upload(moto, path, "one/db")
    return path, url, sizes, expected


def test_a_database_on_s3_reads_as_leveldb_iterates(spark, moto, remote):
    _, url, _, expected = remote
    df = read(spark, url, moto, partitionBytes=256 << 10)
    assert df.rdd.getNumPartitions() >= 4
    assert df.count() == len(expected)
    assert sorted((bytes(r.key), bytes(r.value)) for r in df.collect()) == expected
    a, b = key(12000), key(12400)
    got = df.filter((F.col("key") >= a) & (F.col("key") < b)).collect()
    assert [(bytes(r.key), bytes(r.value)) for r in got] == in_range(expected, a, b)


def test_the_planner_reads_current_the_manifest_and_the_logs_only(moto, remote):
    _, url, sizes, _ = remote
    reader = spark_source.LevelDbDataSource(
        {"path": url, "partitionbytes": str(256 << 10), **store_options(moto)}
    ).reader(spark_source_schema())
    (version,) = reader.versions.values()
    requests = version["requests"]
    logs = [n for n in sizes if n.endswith(".log")]
    manifest = [n for n in sizes if n.startswith("MANIFEST-")]
    assert len(manifest) == 1 and logs
    # One LIST; one GET for CURRENT, one for the MANIFEST, one per log: no table.
    assert requests["lists"] == 1
    assert requests["gets"] == 2 + len(logs)
    assert requests["bytes_read"] == sum(sizes[n] for n in ["CURRENT"] + manifest + logs)
    tables = sum(len(level) for level in version["levels"])
    assert tables >= 4


def spark_source_schema():
    from pyspark.sql.types import BinaryType, StructField, StructType

    return StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])


def test_each_task_reads_only_its_own_tables(moto, remote):
    """A piece reads whole from a copy of the database from which every table but its own
    was deleted: its task needs only its tables."""
    path, url, _, expected = remote
    reader = spark_source.LevelDbDataSource(
        {"path": url, "partitionbytes": str(256 << 10), **store_options(moto)}
    ).reader(spark_source_schema())
    (version,) = reader.versions.values()
    everyone = {t[0] for level in version["levels"] for t in level}
    pieces = [p for part in reader.partitions() for p in part.pieces]
    assert len(pieces) >= 4
    for n in sorted({0, len(pieces) // 2, len(pieces) - 1}):
        piece = pieces[n]
        mine = {t[0] for level in piece.version["levels"] for t in level}
        assert mine < everyone
        copy, _ = upload(moto, path, f"own/{n}")
        for number in everyone - mine:
            _request(moto, "DELETE", f"/{BUCKET}/own/{n}/{number:06d}.ldb")
        alone = spark_source.Piece(copy, piece.version, piece.start, piece.stop)
        rows = [r for batch in spark_source.read_piece(alone, ["key", "value"],
                                                       reader.store_options)
                for r in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist())]
        assert rows == in_range(expected, piece.start, piece.stop) and rows


def test_a_table_deleted_after_planning_fails_naming_the_database(moto, remote):
    path = remote[0]
    url, _ = upload(moto, path, "deleted/db")
    reader = spark_source.LevelDbDataSource(
        {"path": url, "partitionbytes": str(1 << 30), **store_options(moto)}
    ).reader(spark_source_schema())
    (partition,) = reader.partitions()
    (piece,) = partition.pieces
    number = next(t[0] for level in piece.version["levels"] for t in level)
    _request(moto, "DELETE", f"/{BUCKET}/deleted/db/{number:06d}.ldb")
    with pytest.raises(leveltable.Error, match=f"leveldb database {url}: .*{number:06d}.ldb"):
        list(reader.read(partition))


def test_many_databases_under_a_prefix(spark, moto, tmp_path):
    expected = []
    for d in range(4):
        path = tmp_path / f"p{d}"
        db = plyvel.DB(str(path), create_if_missing=True)
        for i in range(30):
            db.put(b"%d-%03d" % (d, i), b"v%d" % i)
        db.delete(b"%d-%03d" % (d, 0))
        db.close()
        url, _ = upload(moto, str(path), f"many/profile{d}/leveldb")
        expected.extend((url, k, v) for k, v in plyvel_items(str(path)))
    schema = "key binary, value binary, database string"
    df = read(spark, f"s3://{BUCKET}/many", moto, schema=schema)
    got = sorted((r.database, bytes(r.key), bytes(r.value)) for r in df.collect())
    assert got == sorted(expected)
    # Small databases share a partition.
    assert df.rdd.getNumPartitions() == 1
    globbed = read(spark, f"s3://{BUCKET}/many/profile[13]", moto, schema=schema)
    assert sorted({r.database for r in globbed.collect()}) == [
        f"s3://{BUCKET}/many/profile1/leveldb", f"s3://{BUCKET}/many/profile3/leveldb"]
    # Every version, with its sequence and state: the deletions are there.
    versions = read(spark, f"s3://{BUCKET}/many", moto, versions="true")
    assert versions.filter(F.col("state") == "deleted").count() == 4
    assert versions.filter(F.col("state") == "live").count() == len(expected)


def test_a_prefix_without_a_database_is_refused(spark, moto):
    with pytest.raises(Exception, match="no LevelDB database"):
        read(spark, f"s3://{BUCKET}/nothing-here", moto).count()


def test_a_local_database_read_by_two_executors(spark, tmp_path):
    path = write_plyvel(tmp_path / "db", 20000)
    expected = plyvel_items(path)
    df = spark.read.format("leveldb").option("partitionBytes", 128 << 10).load(path)
    assert df.rdd.getNumPartitions() >= 4
    assert sorted((bytes(r.key), bytes(r.value)) for r in df.collect()) == expected


def test_a_database_over_http_reads_as_it_reads_locally(spark, dav, written):
    """The database served by nginx, listed with WebDAV and read with range requests:
    Spark's read of its ``http://`` URL plans the same partitions as the read of the
    directory, and each partition's rows are the same (by digest) and LevelDB's."""
    root, endpoint = dav
    path, expected = written
    served = root / "site" / "a" / "db"
    shutil.copytree(path, served)
    with leveltable.Db(str(served)) as db:
        stats = db.stats()
    assert sum(len(level) for level in stats["levels"]) >= 4 and stats["log_bytes"] > 0
    url = f"{endpoint}/site/a/db"
    reader = spark_source.LevelDbDataSource(
        {"path": url, "partitionbytes": str(256 << 10)}).reader(spark_source_schema())
    spans = bounds_of(reader.partitions())
    assert len(spans) >= 4
    # The planner over HTTP: one listing (a PROPFIND), then CURRENT, the MANIFEST and the
    # logs, and no table.
    (version,) = reader.versions.values()
    logs = [n for n in os.listdir(served) if n.endswith(".log")]
    assert version["requests"]["lists"] == 1
    assert version["requests"]["gets"] == 2 + len(logs)

    def load(where):
        return spark.read.format("leveldb").option("partitionBytes", 256 << 10).load(where)

    remote, local = load(url), load(str(served))
    assert remote.rdd.getNumPartitions() == local.rdd.getNumPartitions() == len(spans)
    got = spark_digests(remote)
    assert got == spark_digests(local)
    assert got == leveldb_digests(spans, expected)
    a, b = key(12000), key(12400)
    ranged = remote.filter((F.col("key") >= a) & (F.col("key") < b)).collect()
    assert [(bytes(r.key), bytes(r.value)) for r in ranged] == in_range(expected, a, b)
    # A prefix two directories above: the listing walks down to the database.
    found = (spark.read.format("leveldb").schema("key binary, value binary, database string")
             .load(f"{endpoint}/site"))
    assert [r.database for r in found.select("database").distinct().collect()] == [url]
    assert found.count() == len(expected)
    with pytest.raises(Exception, match="no LevelDB database"):
        load(f"{endpoint}/nothing-here").count()
