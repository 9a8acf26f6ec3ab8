"""leveltable.chromium on the data Chromium 156 wrote (crates/chromium/testdata), checked
against what the page that wrote it reported; and leveltable.Db opening an IndexedDB
database by its comparator's name."""

import json
import pathlib
import shutil

import pytest

import leveltable
from leveltable import chromium

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "crates" / "chromium" / "testdata" / "golden"
IDB = "IndexedDB/http_127.0.0.1_8765.indexeddb.leveldb"


@pytest.fixture
def golden(tmp_path):
    """A copy of the golden directories: the tests never read the test data in place."""
    shutil.copytree(GOLDEN, tmp_path / "golden")
    return tmp_path / "golden"


def report():
    return json.loads((GOLDEN / "report.json").read_text())


def written(name):
    return sorted((k, v) for k, v in report()[name])


def test_local_storage_yields_the_items_the_page_set(golden):
    records = list(chromium.local_storage(golden / "local_storage" / "leveldb"))
    assert all(set(r) == {"origin", "key", "value"} for r in records)
    assert {r["origin"] for r in records} == {"http://127.0.0.1:8765"}
    assert sorted((r["key"], r["value"]) for r in records) == written("local_storage")


def test_session_storage_yields_the_items_the_page_set(golden):
    records = list(chromium.session_storage(str(golden / "session_storage")))
    assert {r["origin"] for r in records} == {"http://127.0.0.1:8765/"}
    assert all(len(r["namespace"]) == 36 for r in records)
    assert sorted((r["key"], r["value"]) for r in records) == written("session_storage")


def test_indexeddb_yields_records_with_names_and_decoded_values(golden):
    path = golden / IDB
    values = {r["key"]: r["value"] for r in chromium.indexeddb(path, database="values")}
    assert values["int"] == 42
    assert values["two_byte"] == "\u65e5\u672c\u8a9e \U0001f600"
    assert values["bigint"] == {"type": "bigint", "value": "12345678901234567890"}
    assert values["obj"] == {"a": 1, "b": {"c": [1, 2, {"d": "e"}]}, "7": "seven"}
    assert values["nul"] is None
    assert values["t"] is True
    people = list(chromium.indexeddb(path, "keys", "people"))
    assert len(people) == len(report()["key_order"]["people"])
    for r in people:
        assert set(r) == {"origin", "database", "store", "key", "value"}
        assert (r["database"], r["store"]) == ("keys", "people")
        assert r["origin"].startswith("http_127.0.0.1_8765")
        # Auto-increment keys 1, 2, ... for the page's i = 0, 1, ...
        assert r["value"]["email"] == f"p{int(r['key']) - 1}@example.org"
    everything = list(chromium.indexeddb(path))
    assert len(everything) == 544
    assert list(chromium.indexeddb(path, store="no such store")) == []


def test_indexeddb_salvage_labels_versions_like_db_dump(golden):
    gone = list(chromium.indexeddb(golden / IDB, store="gone", salvage=True))
    deleted = [r for r in gone if r["state"] == "deleted"]
    shadowed = [r for r in gone if r["state"] == "shadowed"]
    assert (len(deleted), len(shadowed)) == (20, 20)
    assert all(r["value"] is None for r in deleted)
    # The page put i under key i, then deleted the store.
    assert all(r["value"] == r["key"] for r in shadowed)
    assert all(isinstance(r["sequence"], int) for r in gone)


def test_indexeddb_databases_lists_stores_indexes_and_counts(golden):
    dbs = {d["database"]: d for d in chromium.indexeddb_databases(golden / IDB)}
    assert sorted(dbs) == ["keys", "many", "values"]
    stores = {s["name"]: s for s in dbs["keys"]["object_stores"]}
    for name, keys in report()["key_order"].items():
        assert stores[name]["records"] == len(keys), name
    indexes = {i["name"]: i for i in stores["people"]["indexes"]}
    assert indexes["by_tag"]["multi_entry"] is True
    assert indexes["by_name_age"]["key_path"] == ["name", "age"]


def test_db_opens_an_indexeddb_database_by_its_comparators_name(golden):
    with leveltable.Db(golden / IDB) as db:
        assert db.stats()["comparator"] == "idb_cmp1"
        keys = list(db.keys())
        assert len(keys) > 544
        assert db.get(keys[0]) is not None
    salvaged = leveltable.Db.salvage(golden / IDB)
    assert salvaged.stats()["comparator"] == "idb_cmp1"


def test_the_wrong_kind_of_directory_and_a_missing_one(golden, tmp_path):
    # Local Storage keys are not IndexedDB keys: no record is an object store record.
    assert list(chromium.indexeddb(golden / "local_storage" / "leveldb")) == []
    with pytest.raises(FileNotFoundError):
        chromium.local_storage(tmp_path / "missing")
