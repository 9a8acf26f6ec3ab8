"""Shared fixtures: where the repository's test data lives; what the Spark test modules need
(``spark_missing``) and their Spark session (each names its master in SPARK_MASTER); an S3
server (moto); an HTTP server that lists (nginx with WebDAV); a database with a damaged
table."""

import importlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = REPO / "crates" / "table" / "testdata"


@pytest.fixture
def testdata() -> pathlib.Path:
    return TESTDATA


def golden_entries() -> list:
    """The 1000 entries LevelDB 1.23 wrote into the golden tables, in order."""
    lines = (TESTDATA / "entries.tsv").read_text().splitlines()
    return [tuple(bytes.fromhex(f) for f in line.split("\t")) for line in lines]


def spark_missing(extra=()):
    """What the Spark data source's tests lack here, or ``None``: PySpark 4.1 or later (filter
    pushdown for Python data sources) with pyarrow, a Java that runs, then each of ``extra``:
    a module name (missing if it does not import) or a function returning what is missing
    or ``None``."""
    try:
        import pyarrow  # noqa: F401
        import pyspark.sql.datasource as ds
    except ImportError as e:
        return f"PySpark or pyarrow missing ({e.name})"
    if not hasattr(ds.DataSourceReader, "pushFilters"):
        return "PySpark older than 4.1 (no filter pushdown for Python data sources)"
    java = shutil.which("java") or (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else None
    )
    if not java or subprocess.run([java, "-version"], capture_output=True).returncode != 0:
        return "Java missing"
    for check in extra:
        if isinstance(check, str):
            try:
                importlib.import_module(check)
            except ImportError:
                return f"{check} missing"
            continue
        missing = check()
        if missing:
            return missing
    return None


def skip_without_spark(what, extra=()):
    """Skips the calling test module (``what``: its tests, for the message) when
    ``spark_missing(extra)`` names something, unless LEVELTABLE_REQUIRE_SERVERS=1, where the
    module runs and fails on what is missing."""
    missing = spark_missing(extra)
    if missing and os.environ.get("LEVELTABLE_REQUIRE_SERVERS") != "1":
        pytest.skip(f"{what} skipped: {missing}", allow_module_level=True)


@pytest.fixture(scope="module")
def spark(request):
    """A Spark session with the data source ``leveldb`` registered, on the master the test
    module names in ``SPARK_MASTER``; stopped after the module, so that the next module
    can start one on its own master."""
    from pyspark.sql import SparkSession

    from leveltable.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master(request.module.SPARK_MASTER)
        .appName(f"leveltable-{request.module.__name__}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def moto():
    """The endpoint of an S3 server (moto) on a loopback port, with the bucket
    ``s3_moto.BUCKET`` made."""
    import s3_moto

    with s3_moto.server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def dav(tmp_path_factory):
    """An HTTP server that lists (nginx with its WebDAV extension) on a loopback port:
    (the directory it serves, its ``http://127.0.0.1:PORT``)."""
    import http_dav

    root = tmp_path_factory.mktemp("www")
    with http_dav.server(root) as endpoint:
        yield root, endpoint


#: The damaged database's entries: 60,000 keys ``k%06d`` with 200-byte values.
DAMAGED_ITEMS = [(b"k%06d" % i, b"v" * 200) for i in range(60_000)]


@pytest.fixture
def damaged_db(tmp_path):
    """A database of ``DAMAGED_ITEMS`` in uncompressed tables of 256 KiB (some 12 MB in
    all), with a data block of its last table damaged (one bit flipped): (its path, its
    entries, the damaged table's file name)."""
    import leveltable

    path = tmp_path / "db"
    leveltable.build_db(str(path), iter(DAMAGED_ITEMS), max_file_size=256 << 10,
                        compression="none")
    last = sorted(p for p in os.listdir(path) if p.endswith(".ldb"))[-1]
    with open(path / last, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0x40]))
    return path, DAMAGED_ITEMS, last
