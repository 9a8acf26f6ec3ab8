"""Shared fixtures: where the repository's test data lives; the Spark session of the Spark
test modules (each names its master in SPARK_MASTER); an S3 server (moto)."""

import os
import pathlib
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
