"""leveltable.Db(path, writable=True): puts, deletes, write batches, snapshots and range
compactions, under LevelDB's lock; the same script run against plyvel (LevelDB itself) gives
the same results, and directories change hands between the two."""

import os
import random
import subprocess
import sys
import threading
import time

import pytest

import leveltable

try:
    import plyvel
except ImportError:  # pragma: no cover - CI installs it
    plyvel = None

needs_plyvel = pytest.mark.skipif(
    plyvel is None and not os.environ.get("LEVELTABLE_REQUIRE_LEVELDB"),
    reason="plyvel (LevelDB for Python) is not installed",
)


def open_writable(path, **options):
    return leveltable.Db(path, writable=True, create_if_missing=True, **options)


def test_put_get_delete(tmp_path):
    with open_writable(tmp_path / "db") as db:
        assert db.writable
        assert db.get(b"a") is None
        assert db.get(b"a", b"default") == b"default"
        db.put(b"a", b"1")
        db.put(bytearray(b"b"), memoryview(b"2"))
        db.put(b"c", b"")
        assert db.get(b"a") == b"1"
        assert db[b"b"] == b"2"
        assert db.get(b"c") == b""
        assert b"c" in db and b"d" not in db
        assert db.get_many([b"a", b"d", b"c"]) == [b"1", None, b""]
        db.put(b"a", b"one")
        db.delete(b"b")
        db.delete(b"never there")
        assert db.get(b"a") == b"one"
        assert db.get(b"b") is None
        with pytest.raises(KeyError):
            db[b"b"]
        assert list(db) == [(b"a", b"one"), (b"c", b"")]
        assert list(db.keys()) == [b"a", b"c"]
        assert list(db.values()) == [b"one", b""]
        assert list(db.range(b"b")) == [(b"c", b"")]
        assert list(db.range(None, b"b")) == [(b"a", b"one")]
        with pytest.raises(TypeError, match="encode"):
            db.put("text", b"x")
        with pytest.raises(TypeError):
            db.delete(1)
        assert db.stats()["last_sequence"] == 6


def test_write_batch_applies_atomically_and_is_dropped_on_an_exception(tmp_path):
    with open_writable(tmp_path / "db") as db:
        db.put(b"gone", b"x")
        with db.write_batch() as batch:
            batch.put(b"a", b"1")
            batch.put(b"b", b"2")
            batch.delete(b"gone")
            assert len(batch) == 3
            # Nothing is applied before the block ends.
            assert db.get(b"a") is None and db.get(b"gone") == b"x"
        assert list(db) == [(b"a", b"1"), (b"b", b"2")]

        class Failed(Exception):
            pass

        with pytest.raises(Failed):
            with db.write_batch() as batch:
                batch.put(b"c", b"3")
                batch.delete(b"a")
                raise Failed()
        assert list(db) == [(b"a", b"1"), (b"b", b"2")]
        # plyvel's default: written even when the block raises.
        with pytest.raises(Failed):
            with db.write_batch(transaction=False) as batch:
                batch.put(b"c", b"3")
                raise Failed()
        assert db.get(b"c") == b"3"

        # write() applies it explicitly and keeps it; clear() empties it.
        batch = db.write_batch()
        batch.put(b"d", b"4")
        batch.write()
        assert db.get(b"d") == b"4"
        db.delete(b"d")
        batch.write()
        assert db.get(b"d") == b"4"
        batch.clear()
        assert len(batch) == 0
        batch.write()  # an empty batch writes nothing
        assert db.stats()["last_sequence"] == 8
        with pytest.raises(TypeError, match="encode"):
            batch.put(b"k", "text")
        assert len(batch) == 0

        # A reader never sees part of a batch: every key of one snapshot holds the same
        # round's value while batches rewriting all of them are written.
        keys = [b"key%03d" % i for i in range(200)]
        stop = threading.Event()
        seen = []

        def read():
            while not stop.is_set():
                snapshot = db.snapshot()
                seen.append(set(snapshot.get_many(keys)))
                snapshot.release()

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for round_ in range(200):
                with db.write_batch() as batch:
                    for key in keys:
                        batch.put(key, b"round %d" % round_)
        finally:
            stop.set()
            reader.join()
        assert len(seen) > 1
        assert all(len(values) == 1 for values in seen), [v for v in seen if len(v) > 1][:1]
        assert db.get_many(keys) == [b"round 199"] * len(keys)


def test_sync_writes_reach_the_log_before_they_return(tmp_path):
    path = tmp_path / "db"
    with open_writable(path) as db:
        db.put(b"a", b"1", sync=True)
        db.delete(b"a", sync=True)
        db.put(b"b", b"2", sync=True)
        with db.write_batch(sync=True) as batch:
            batch.put(b"c", b"3")
        db.put(b"d", b"4")  # not synced: written to the log all the same
        # A read-only Db replays the log of the database still open for writing.
        with leveltable.Db(path) as reader:
            assert list(reader) == [(b"b", b"2"), (b"c", b"3"), (b"d", b"4")]
        with pytest.raises(TypeError):
            db.put(b"e", b"5", True)  # sync is keyword-only, as in plyvel's use


def table_files(db):
    return [f for level in db.stats()["levels"] for f in level]


def test_compact_range(tmp_path):
    path = tmp_path / "db"
    rng = random.Random(3)
    model = {}
    with open_writable(path, write_buffer_size=64 << 10, max_file_size=1 << 20) as db:
        for i in range(20_000):
            key = b"k%06d" % rng.randrange(8000)
            if rng.random() < 0.3:
                db.delete(key)
                model.pop(key, None)
            else:
                value = rng.randbytes(rng.randrange(10, 60))
                db.put(key, value)
                model[key] = value
        levels = db.stats()["levels"]
        assert sum(len(files) for files in levels) > 1
        before = sum(f["size"] for f in table_files(db))
        # A part of the keys first: the rest stays where it is.
        db.compact_range(start=b"k002000", stop=b"k003000")
        assert list(db) == sorted(model.items())
        db.compact_range()
        levels = db.stats()["levels"]
        # Everything in one level below 0, overwritten and deleted versions dropped.
        assert levels[0] == []
        assert len([files for files in levels if files]) == 1
        after = sum(f["size"] for f in table_files(db))
        assert after < before
        assert list(db) == sorted(model.items())
        assert db.stats()["compactions"] >= 1
        with pytest.raises(TypeError):
            db.compact_range(start="k")
    with leveltable.Db(path) as reader:
        assert list(reader) == sorted(model.items())
        assert reader.stats()["levels"][0] == []


def test_snapshots_see_the_old_state(tmp_path):
    with open_writable(tmp_path / "db", write_buffer_size=64 << 10) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"old %d" % i)
        old = list(db)
        snapshot = db.snapshot()
        sequence = snapshot.sequence
        assert sequence == 3000
        for i in range(0, 3000, 2):
            db.delete(b"k%05d" % i)
        with db.write_batch() as batch:
            for i in range(1, 3000, 2):
                batch.put(b"k%05d" % i, b"new %d" % i)
            batch.put(b"later", b"x")
        # The compaction keeps what the snapshot sees.
        db.compact_range()
        assert snapshot.get(b"k00000") == b"old 0"
        assert snapshot[b"k00001"] == b"old 1"
        assert b"later" not in snapshot
        assert list(snapshot) == old
        assert list(snapshot.range(b"k00010", b"k00013")) == old[10:13]
        assert snapshot.get_many([b"k00002", b"later"]) == [b"old 2", None]
        assert snapshot.sequence == sequence
        assert len(list(db)) == 1501
        with pytest.raises(leveltable.InvalidArgumentError, match="read-only"):
            db.snapshot(5)
        # Released, it raises; the database reads on.
        iterator = snapshot.range()
        snapshot.release()
        with pytest.raises(leveltable.ClosedError, match="snapshot"):
            snapshot.get(b"k00000")
        with pytest.raises(leveltable.ClosedError, match="snapshot"):
            list(snapshot)
        assert next(iterator) == old[0]
        snapshot.close()  # again: nothing
        db.compact_range()
        assert db.get(b"k00001") == b"new 1"


def test_reopen_keeps_data(tmp_path):
    path = tmp_path / "db"
    rng = random.Random(5)
    model = {}
    with open_writable(path, write_buffer_size=64 << 10) as db:
        for i in range(5000):
            key, value = rng.randbytes(8), rng.randbytes(rng.randrange(0, 100))
            db.put(key, value)
            model[key] = value
        for key in list(model)[::3]:
            db.delete(key)
            del model[key]
    # Tables and a log: both are read back.
    names = os.listdir(path)
    assert any(n.endswith(".ldb") for n in names) and any(n.endswith(".log") for n in names)
    with leveltable.Db(path, writable=True) as db:
        assert list(db) == sorted(model.items())
        db.put(b"after reopen", b"yes")
    with leveltable.Db(path, writable=True, error_if_exists=False) as db:
        assert db.get(b"after reopen") == b"yes"
    with pytest.raises(leveltable.InvalidArgumentError, match="error_if_exists"):
        leveltable.Db(path, writable=True, error_if_exists=True)
    with pytest.raises(leveltable.InvalidArgumentError, match="create_if_missing"):
        leveltable.Db(tmp_path / "missing", writable=True)
    assert not os.path.exists(tmp_path / "missing")


def test_read_only_db_sees_what_was_written_after_close(tmp_path):
    path = tmp_path / "db"
    with open_writable(path, write_buffer_size=64 << 10, compression=None,
                       bloom_filter_bits=10, block_size=1024) as db:
        for i in range(4000):
            db.put(b"%05d" % i, b"v" * (i % 50))
        db.compact_range(stop=b"01000")
        db.delete(b"00007")
    with leveltable.Db(path) as reader:
        assert not reader.writable
        got = list(reader)
        assert len(got) == 3999
        assert got[7] == (b"00008", b"v" * 8)
        assert reader.verify()["tables"] >= 1
    # The options took: tables with LevelDB's Bloom filter, 1 KiB blocks, and values stored
    # as they are (Snappy would shrink the runs of "v" far below their length).
    table = sorted(n for n in os.listdir(path) if n.endswith(".ldb"))[0]
    with leveltable.Table(path / table) as t:
        stats = t.stats()
        assert stats["filter_policy"] == "leveldb.BuiltinBloomFilter2"
        values = sum(len(v) for _, v in t)
        assert stats["data_size"] > values > 10_000
        assert stats["data_blocks"] >= stats["data_size"] // 1100


def lock_holder(path):
    """A process holding `path` open in LevelDB (plyvel) until its stdin closes."""
    code = (
        "import sys, plyvel\n"
        "db = plyvel.DB(sys.argv[1], create_if_missing=True)\n"
        "print('open', flush=True)\n"
        "sys.stdin.read()\n"
        "db.close()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_a_locked_database_raises_oserror_naming_lock(tmp_path):
    path = tmp_path / "db"
    lock = str(path / "LOCK")
    db = open_writable(path)
    # Twice in this process.
    with pytest.raises(OSError, match="LOCK.*already locked by this process") as info:
        leveltable.Db(path, writable=True)
    assert lock in str(info.value)
    # A read-only Db takes no lock.
    with leveltable.Db(path) as reader:
        assert list(reader) == []
    db.close()
    with leveltable.Db(path, writable=True) as again:
        again.put(b"k", b"v")
    if plyvel is None and not os.environ.get("LEVELTABLE_REQUIRE_LEVELDB"):
        print("skipped the part with LevelDB holding the lock: plyvel is not installed")
        return
    # Held by LevelDB in another process.
    holder = lock_holder(path)
    try:
        with pytest.raises(OSError, match="locked by another process") as info:
            leveltable.Db(path, writable=True)
        assert lock in str(info.value)
    finally:
        holder.communicate("")
    with leveltable.Db(path, writable=True) as db:
        assert db.get(b"k") == b"v"


def test_writing_to_a_read_only_db_raises(tmp_path):
    path = tmp_path / "db"
    with open_writable(path) as db:
        db.put(b"k", b"v")
    names = sorted(os.listdir(path))
    with leveltable.Db(path) as db:
        for write in (
            lambda: db.put(b"a", b"b"),
            lambda: db.delete(b"k"),
            lambda: db.write_batch(),
            lambda: db.compact_range(),
        ):
            with pytest.raises(leveltable.Error, match="read-only.*writable=True"):
                write()
        assert db.get(b"k") == b"v"
    assert sorted(os.listdir(path)) == names
    # Options of a writable database without writable=True.
    for option in (
        {"create_if_missing": True},
        {"error_if_exists": True},
        {"write_buffer_size": 1 << 20},
        {"compression": None},
        {"bloom_filter_bits": 10},
    ):
        name = next(iter(option))
        with pytest.raises(leveltable.InvalidArgumentError, match=f"{name}.*writable=True"):
            leveltable.Db(path, **option)
    # A writable Db answers what a read-only one does: its tables verified, batched gets.
    with leveltable.Db(path, writable=True) as db:
        db.put(b"k", b"v")
        assert db.verify()["tables"] >= 0
        assert db.get_many([b"k", b"absent", b"k"]) == [b"v", None, b"v"]
        with db.snapshot() as snap:
            db.put(b"k", b"w")
            assert snap.get_many([b"k", b"absent"]) == [b"v", None]
        assert db.get_many([b"k"]) == [b"w"]


def test_closing_a_writable_db(tmp_path):
    path = tmp_path / "db"
    db = open_writable(path)
    for i in range(3000):
        db.put(b"%05d" % i, b"v")
    snapshot = db.snapshot()
    items = db.items()
    assert next(items) == (b"00000", b"v")
    batch = db.write_batch()
    batch.put(b"x", b"y")
    assert not db.closed
    assert repr(db).endswith("writable=True)")
    db.close()
    assert db.closed
    assert repr(db) == "leveltable.Db(<closed>)"
    for step in (
        lambda: db.put(b"a", b"b"),
        lambda: db.get(b"a"),
        lambda: batch.write(),
        lambda: snapshot.get(b"00001"),
        lambda: next(items),
        lambda: db.write_batch(),
        lambda: db.compact_range(),
    ):
        with pytest.raises(leveltable.ClosedError, match="the database is closed"):
            step()
    db.close()  # again: nothing
    # The lock is released at close.
    with leveltable.Db(path, writable=True) as again:
        assert len(list(again)) == 3000
        assert again.get(b"x") is None


def test_iterator_takes_plyvels_keywords(tmp_path):
    path = tmp_path / "db"
    keys = [b"", b"a", b"ab", b"abc", b"ab\xff", b"ab\xff\xff", b"b", b"\xff", b"\xff\xff"]
    model = sorted((k, k.upper() + b"!") for k in keys)
    with open_writable(path) as db:
        for k, v in model:
            db.put(k, v)
    for writable in (True, False):
        with leveltable.Db(path, writable=writable) as db:
            assert list(db.iterator()) == model
            assert list(db.iterator(reverse=True)) == model[::-1]
            assert list(db.iterator(prefix=b"ab")) == [e for e in model if e[0].startswith(b"ab")]
            assert list(db.iterator(prefix=b"ab\xff", reverse=True, include_value=False)) == [
                b"ab\xff\xff", b"ab\xff"]
            assert list(db.iterator(prefix=b"\xff\xff")) == [(b"\xff\xff", b"\xff\xff!")]
            between = [e for e in model if b"a" < e[0] <= b"b"]
            assert list(db.iterator(start=b"a", stop=b"b", include_start=False,
                                    include_stop=True)) == between
            assert list(db.iterator(start=b"a", stop=b"b", include_start=False,
                                    include_stop=True, reverse=True)) == between[::-1]
            assert list(db.iterator(include_key=False)) == [v for _, v in model]
            assert list(db.iterator(include_key=False, include_value=False)) == [None] * len(model)
            with pytest.raises(TypeError, match="prefix"):
                db.iterator(prefix=b"a", start=b"a")
            with pytest.raises(TypeError):
                db.iterator(True)  # keyword-only, as plyvel's
            snapshot = db.snapshot()
            assert list(snapshot.iterator(reverse=True, stop=b"ab")) == model[:2][::-1]
            # A closed iterator yields nothing more.
            with db.iterator() as it:
                assert next(it) == model[0]
            assert list(it) == []
            # Long: many chunks, backwards.
        if writable:
            with leveltable.Db(path, writable=True) as db:
                for i in range(5000):
                    db.put(b"n%05d" % i, b"%d" % i)
                model += [(b"n%05d" % i, b"%d" % i) for i in range(5000)]
                model.sort()
    with leveltable.Db(path) as db:
        assert list(db.iterator(reverse=True)) == model[::-1]
        assert list(db.iterator(reverse=True, start=b"n01000", stop=b"n04000")) == [
            e for e in model if b"n01000" <= e[0] < b"n04000"][::-1]


def test_the_gil_is_released_while_writing(tmp_path):
    # While one write holds Rust busy, a Python thread keeps running. Were the GIL held, the
    # thread could not run at all between the call's start and end (beyond the interpreter's
    # switch interval around them), so a sample from well inside the call proves it ran.
    samples = []
    stop = threading.Event()

    def sample():
        last = 0.0
        while not stop.is_set():
            now = time.monotonic()
            if now - last >= 0.001:
                samples.append(now)
                last = now

    margin = 0.05
    with open_writable(tmp_path / "db") as db:
        # Many small entries: the memtable inserts keep the write busy without much memory.
        for entries in (100_000, 300_000, 1_000_000, 3_000_000):
            batch = db.write_batch(sync=True)
            for i in range(entries):
                batch.put(b"key %08d" % i, b"value %08d" % i)
            samples.clear()
            stop.clear()
            thread = threading.Thread(target=sample)
            thread.start()
            time.sleep(0.02)
            start = time.monotonic()
            batch.write()
            end = time.monotonic()
            stop.set()
            thread.join()
            if end - start >= 4 * margin:
                break
        else:
            pytest.skip(f"a write of {entries} entries took {end - start:.3f} s: too short to tell")
        inside = [t for t in samples if start + margin < t < end - margin]
        assert inside, f"no sample inside a {end - start:.3f} s write of {entries} entries"
        assert db.get(b"key 00000000") == b"value 00000000"


def scenario(open_db, path):
    """Writes and reads through one database API (plyvel's shape); returns what it saw."""
    seen = []
    rng = random.Random(11)
    db = open_db(path)
    db.put(b"apple", b"red")
    db.put(b"banana", b"yellow")
    db.put(b"cherry", b"dark red")
    seen.append(("get", db.get(b"apple"), db.get(b"kiwi"), db.get(b"kiwi", b"none")))
    db.delete(b"banana")
    db.delete(b"kiwi")
    seen.append(("after delete", list(db)))
    with db.write_batch() as batch:
        batch.put(b"date", b"brown")
        batch.delete(b"apple")
        batch.put(b"cherry", b"red")
    seen.append(("batch", list(db)))
    try:
        with db.write_batch(transaction=True) as batch:
            batch.put(b"elderberry", b"black")
            raise ValueError("dropped")
    except ValueError:
        pass
    seen.append(("dropped batch", list(db)))
    batch = db.write_batch(sync=True)
    batch.put(b"fig", b"purple")
    batch.write()
    batch.clear()
    batch.put(b"grape", b"green")
    batch.write()
    seen.append(("explicit batch", list(db)))
    snapshot = db.snapshot()
    db.put(b"date", b"wrinkled")
    db.delete(b"fig")
    seen.append(("snapshot", snapshot.get(b"date"), snapshot.get(b"fig"),
                 snapshot.get(b"kiwi", b"none"), list(snapshot)))
    seen.append(("now", list(db)))
    db.put(b"\xff", b"ff")
    db.put(b"\xff\xff", b"ffff")
    db.put(b"\xff\xff\x00", b"ffff00")
    seen.append((
        "iterators",
        list(db.iterator()),
        list(db.iterator(reverse=True)),
        list(db.iterator(start=b"b", stop=b"fig")),
        list(db.iterator(start=b"cherry", stop=b"grape", include_start=False,
                         include_stop=True, include_value=False)),
        list(db.iterator(stop=b"date", include_stop=True, reverse=True, include_key=False)),
        list(db.iterator(prefix=b"d", include_key=False)),
        list(db.iterator(prefix=b"\xff")),
        list(db.iterator(prefix=b"\xff\xff", reverse=True)),
        list(db.iterator(prefix=b"")),
        list(db.iterator(include_key=False, include_value=False)),
        list(snapshot.iterator(reverse=True, start=b"c")),
        list(snapshot.iterator(prefix=b"f")),
    ))
    # Enough writes for flushes and compactions.
    keys = [b"key%05d" % i for i in range(4000)]
    for i in range(30_000):
        key = rng.choice(keys)
        if rng.random() < 0.25:
            db.delete(key)
        else:
            db.put(key, b"%d:%s" % (i, rng.randbytes(rng.randrange(0, 80))))
        if i % 10_000 == 9999:
            with db.write_batch() as batch:
                for key in keys[i % 97 :: 53]:
                    batch.delete(key)
    seen.append(("random", list(db)))
    seen.append((
        "random iterators",
        list(db.iterator(prefix=b"key01", reverse=True)),
        list(db.iterator(start=b"key02", stop=b"key03", include_value=False)),
    ))
    seen.append(("snapshot after random", snapshot.get(b"date"), list(snapshot)))
    db.compact_range(start=b"key01000", stop=b"key02000")
    seen.append(("compacted part", list(db)))
    db.compact_range()
    seen.append(("compacted", list(db), [db.get(k) for k in keys[::7]]))
    seen.append(("snapshot after compaction", list(snapshot)))
    db.close()
    db = open_db(path)
    seen.append(("reopened", list(db)))
    db.close()
    return seen


@needs_plyvel
def test_the_same_script_against_plyvel_and_leveltable(tmp_path):
    def with_plyvel(path):
        return plyvel.DB(str(path), create_if_missing=True, write_buffer_size=64 << 10)

    def with_leveltable(path):
        return leveltable.Db(path, writable=True, create_if_missing=True,
                             write_buffer_size=64 << 10)

    expected = scenario(with_plyvel, tmp_path / "plyvel")
    got = scenario(with_leveltable, tmp_path / "leveltable")
    assert [s[0] for s in got] == [s[0] for s in expected]
    for ours, theirs in zip(got, expected):
        assert ours == theirs, ours[0]
    # Each reads the other's directory the same.
    for path in ("plyvel", "leveltable"):
        with leveltable.Db(tmp_path / path) as reader:
            assert list(reader) == expected[-1][1]


@needs_plyvel
def test_directories_change_hands_between_plyvel_and_leveltable(tmp_path):
    path = str(tmp_path / "db")
    rng = random.Random(21)
    model = {}

    def write(db, round_):
        for i in range(3000):
            key = b"k%05d" % rng.randrange(5000)
            if rng.random() < 0.2:
                db.delete(key)
                model.pop(key, None)
            else:
                value = b"%d-%s" % (round_, rng.randbytes(rng.randrange(0, 120)))
                db.put(key, value)
                model[key] = value
        with db.write_batch() as batch:
            for i in range(round_, 5000, 37):
                batch.put(b"k%05d" % i, b"batch %d" % round_)
                model[b"k%05d" % i] = b"batch %d" % round_

    for round_ in range(6):
        if round_ % 2 == 0:
            db = leveltable.Db(path, writable=True, create_if_missing=True,
                               write_buffer_size=64 << 10)
        else:
            db = plyvel.DB(path, create_if_missing=True, write_buffer_size=64 << 10)
        # What the other one left, this one reads.
        assert list(db) == sorted(model.items())
        write(db, round_)
        if round_ == 3:
            db.compact_range()
        assert list(db) == sorted(model.items())
        db.close()
    # leveltable wrote last, plyvel reads it; and the reverse.
    db = plyvel.DB(path)
    assert list(db) == sorted(model.items())
    db.put(b"from plyvel", b"1")
    db.close()
    with leveltable.Db(path, writable=True) as db:
        assert db.get(b"from plyvel") == b"1"
        assert len(list(db)) == len(model) + 1
