"""leveltable.chromium's iterators in their Arrow form: each record as JSON text beside its
key, equal to the dicts the iterators yield."""

import json
import pathlib
import shutil

import pytest

from leveltable import chromium

pyarrow = pytest.importorskip("pyarrow")

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "crates" / "chromium" / "testdata" / "golden"
IDB = "IndexedDB/http_127.0.0.1_8765.indexeddb.leveldb"


@pytest.fixture
def golden(tmp_path):
    shutil.copytree(GOLDEN, tmp_path / "golden")
    return tmp_path / "golden"


def as_dicts(records):
    table = pyarrow.table(records)
    assert table.schema == pyarrow.schema(
        [pyarrow.field("key", pyarrow.string(), True), pyarrow.field("json", pyarrow.string(), False)]
    )
    keys, texts = table.column("key").to_pylist(), table.column("json").to_pylist()
    dicts = [json.loads(t) for t in texts]
    assert keys == [None if "key" not in d else json.dumps(d["key"], separators=(",", ":"), ensure_ascii=False) for d in dicts]
    return dicts


@pytest.mark.parametrize(
    "read",
    [
        lambda g: chromium.local_storage(g / "local_storage" / "leveldb"),
        lambda g: chromium.session_storage(g / "session_storage"),
        lambda g: chromium.indexeddb(g / IDB),
        lambda g: chromium.indexeddb(g / IDB, store="gone", salvage=True),
    ],
)
def test_the_arrow_form_holds_the_records(golden, read):
    want = list(read(golden))
    assert want
    assert as_dicts(read(golden)) == want


def test_the_arrow_form_takes_the_records_left(golden):
    records = chromium.indexeddb(golden / IDB)
    first = next(records)
    rest = as_dicts(records)
    assert [first] + rest == list(chromium.indexeddb(golden / IDB))
    assert list(records) == []


def test_duckdb_reads_indexeddb_records(golden):
    duckdb = pytest.importorskip("duckdb")
    records = chromium.indexeddb(golden / IDB, database="keys", store="people")
    want = len(list(chromium.indexeddb(golden / IDB, database="keys", store="people")))
    got = duckdb.sql("select count(*) from records where json like '%\"store\":\"people\"%'").fetchall()
    assert got == [(want,)]
