"""leveltable.repair_db: a damaged database repaired into a new directory or in place,
without bringing deleted data back, with the JSON loss report."""

import json
import os
import shutil

import pytest

import leveltable


def ldb_files(path):
    return sorted(n for n in os.listdir(path) if n.endswith(".ldb"))


def left_behind(tmp_path):
    """Keys 0..99 deleted and compacted away, the tables that held them put back (as a crash
    between a compaction and its deletes leaves them)."""
    src = tmp_path / "src"
    saved = tmp_path / "saved"
    saved.mkdir()
    with leveltable.Db(src, writable=True, create_if_missing=True) as db:
        for i in range(200):
            db.put(b"key%04d" % i, b"v")
        db.compact_range()
        for name in ldb_files(src):
            shutil.copy(src / name, saved / name)
        for i in range(100):
            db.delete(b"key%04d" % i)
        db.compact_range()
    for name in ldb_files(saved):
        if not (src / name).exists():
            shutil.copy(saved / name, src / name)
    return src


def test_repair_into_a_new_directory(tmp_path):
    src = left_behind(tmp_path)
    before = {n: (src / n).read_bytes() for n in os.listdir(src)}
    with leveltable.Db.salvage(src) as salvaged:
        assert len(list(salvaged)) == 200  # what RepairDB recovers
    summary = leveltable.repair_db(src, tmp_path / "dest", report=tmp_path / "r.json")
    assert summary["keys"] == 100
    assert summary["manifest"].startswith("MANIFEST-")
    with leveltable.Db(tmp_path / "dest") as db:
        assert [k for k, _ in db] == [b"key%04d" % i for i in range(100, 200)]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["keys"] == 100 and report["ignored"]
    assert {n: (src / n).read_bytes() for n in os.listdir(src)} == before


def test_repair_in_place_keeps_the_originals_in_lost(tmp_path):
    src = left_behind(tmp_path)
    names = set(os.listdir(src))
    summary = leveltable.repair_db(str(src), drop_uncertain=True)
    assert summary["keys"] == 100
    with leveltable.Db(src) as db:
        assert len(list(db)) == 100
    assert names <= set(os.listdir(src / "lost"))


def test_a_dest_that_is_not_empty_is_refused(tmp_path):
    src = left_behind(tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "x").write_bytes(b"x")
    with pytest.raises(leveltable.InvalidArgumentError, match="not empty"):
        leveltable.repair_db(src, dest)
