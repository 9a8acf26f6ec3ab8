"""One script of plyvel calls run through plyvel (LevelDB 1.23's C++) and through
leveltable.plyvel on real databases, both ways: one writes, the other reads what it wrote
and writes on, and every read of every step agrees with the same steps run by either
module alone. The databases: Chromium's Local Storage and Session Storage directories
(crates/chromium/testdata) and one LevelDB wrote with several levels."""

import pathlib
import random
import shutil

import pytest

from leveltable import plyvel as lt_plyvel

plyvel = pytest.importorskip("plyvel")

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "crates" / "chromium" / "testdata" / "golden"
MODULES = {"plyvel": plyvel, "leveltable": lt_plyvel}


def leveldb_written(path):
    """A database LevelDB wrote: 20,000 keys in several tables and levels, then a log."""
    db = plyvel.DB(str(path), create_if_missing=True, write_buffer_size=64 << 10)
    rng = random.Random(3)
    for i in range(20000):
        db.put(b"key:%06d" % rng.randrange(30000), b"%d" % i * rng.randrange(1, 20))
    db.compact_range()
    for i in range(500):
        db.delete(b"key:%06d" % rng.randrange(30000))
    db.close()
    return path


def step(module, path, seed):
    """Reads everything, writes a batch and single puts and deletes over present and new
    keys, then reads again in several ways; returns what every read saw."""
    seen = []
    db = module.DB(str(path))
    try:
        before = list(db.iterator())
        seen.append(before)
        rng = random.Random(seed)
        keys = [k for k, _ in before]
        with db.write_batch() as wb:
            for i in range(200):
                if keys and rng.random() < 0.5:
                    key = rng.choice(keys)
                else:
                    key = b"new-%d-%d" % (seed, i)
                if rng.random() < 0.25:
                    wb.delete(key)
                else:
                    wb.put(key, b"batch-%d-%d" % (seed, i))
        snapshot = db.snapshot()
        for i in range(50):
            db.put(b"single-%d" % (rng.randrange(100)), b"s-%d-%d" % (seed, i))
            if keys:
                db.delete(rng.choice(keys))
        seen.append(list(snapshot.iterator()))
        snapshot.close()
        seen.append(list(db.iterator(reverse=True)))
        if keys:
            lo, hi = sorted(rng.sample(keys, 2)) if len(keys) > 1 else (keys[0], keys[0] + b"\xff")
            seen.append(list(db.iterator(start=lo, stop=hi, include_stop=True)))
            seen.append([db.get(k) for k in rng.sample(keys, min(len(keys), 100))])
        seen.append(list(db.prefixed_db(b"single-").iterator(include_value=False)))
        seen.append(db.get(b"absent", b"default"))
    finally:
        db.close()
    return seen


def databases(tmp_path):
    yield "local storage", GOLDEN / "local_storage" / "leveldb"
    yield "session storage", GOLDEN / "session_storage"
    yield "leveldb-written", leveldb_written(tmp_path / "written")


@pytest.mark.parametrize("order", [("plyvel", "leveltable"), ("leveltable", "plyvel")])
def test_one_writes_the_other_reads_and_writes_on(tmp_path, order):
    for name, source in databases(tmp_path):
        runs = {}
        for first, second in [order, (order[0], order[0]), (order[1], order[1])]:
            path = tmp_path / f"{name}-{first}-{second}"
            shutil.copytree(source, path)
            seen = step(MODULES[first], path, 1) + step(MODULES[second], path, 2)
            # The first module reads back what the second wrote.
            db = MODULES[first].DB(str(path))
            seen.append(list(db.iterator()))
            db.close()
            runs[(first, second)] = seen
        mixed, *alone = runs.values()
        for other in alone:
            assert mixed == other, f"{name}: {list(runs)}"
