"""leveltable.Db, its snapshots and salvage, and the bulk builds (build_db, build_part,
commit_db); against LevelDB itself through plyvel where it is installed."""

import hashlib
import os
import pickle
import random
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


def entries(n, seed=1, value_len=60):
    rng = random.Random(seed)
    keys = sorted({rng.randbytes(rng.randrange(1, 20)) for _ in range(n)})
    return [(k, rng.randbytes(rng.randrange(0, value_len))) for k in keys]


def tree_hash(path):
    digest = hashlib.sha256()
    for name in sorted(os.listdir(path)):
        digest.update(name.encode())
        with open(os.path.join(path, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def settled_hash(path):
    """The directory's hash once LevelDB's background work has stopped changing it."""
    last = tree_hash(path)
    for _ in range(50):
        time.sleep(0.1)
        now = tree_hash(path)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{path} kept changing")


def test_build_db_and_read_it(tmp_path):
    items = entries(20_000)
    path = tmp_path / "db"
    summary = leveltable.build_db(str(path), iter(items), max_file_size=64 << 10, threads=2)
    assert summary["entries"] == len(items)
    assert summary["tables"] > 5
    model = dict(items)
    with leveltable.Db(path) as db:
        assert list(db) == items
        assert list(db.keys()) == [k for k, _ in items]
        assert list(db.values()) == [v for _, v in items]
        # An explicit iterator's `next` is exact: a loop that breaks early and `next` after
        # it continue with the following entry, across chunks.
        it = db.items()
        for i, entry in enumerate(it):
            assert entry == items[i]
            if i == 1500:
                break
        assert next(it) == items[1501]
        rest = it.next_chunk()
        assert rest == items[1502 : 1502 + len(rest)]
        assert list(it) == items[1502 + len(rest) :]
        assert it.next_chunk() == []
        # Looping over the database itself takes a chunk at a time.
        whole = iter(db)
        assert next(whole) == items[0]
        assert list(whole) == items[1:]
        rng = random.Random(2)
        probes = [k for k, _ in items[::13]] + [rng.randbytes(5) for _ in range(200)]
        for key in probes:
            assert db.get(key) == model.get(key)
            assert (key in db) == (key in model)
        assert db.get_many(probes) == [model.get(k) for k in probes]
        with pytest.raises(KeyError):
            db[b"\xff" * 30]
        lo, hi = items[100][0], items[9000][0]
        assert list(db.range(lo, hi)) == items[100:9000]
        stats = db.stats()
        assert stats["comparator"] == "leveldb.BytewiseComparator"
        assert [len(level) for level in stats["levels"][:6]] == [0] * 6
        assert len(stats["levels"][6]) == summary["tables"]
        assert db.verify()["table_entries"] == len(items)
        with pytest.raises(TypeError):
            db.get("text")


def test_build_db_sorts_and_refuses_duplicates(tmp_path):
    items = entries(5000, seed=3)
    shuffled = items[:]
    random.Random(4).shuffle(shuffled)
    with pytest.raises(leveltable.KeyOrderError):
        leveltable.build_db(tmp_path / "unsorted", shuffled)
    assert not (tmp_path / "unsorted").exists()
    leveltable.build_db(tmp_path / "sorted", shuffled, sort=True, memory=1 << 20)
    assert list(leveltable.Db(tmp_path / "sorted")) == items
    twice = shuffled + [(items[7][0], b"newer")]
    with pytest.raises(leveltable.Error) as info:
        leveltable.build_db(tmp_path / "dup", twice, sort=True)
    assert "duplicate key" in str(info.value)
    leveltable.build_db(tmp_path / "last", twice, sort=True, dedup="last")
    assert leveltable.Db(tmp_path / "last")[items[7][0]] == b"newer"
    with pytest.raises(TypeError):
        leveltable.build_db(tmp_path / "bad", [b"not a pair"])
    with pytest.raises(leveltable.InvalidArgumentError):
        leveltable.build_db(tmp_path / "bad", [], compression="zip")


def test_build_part_resolves_duplicates_as_the_cli_does(tmp_path):
    # The same input and answers as crates/cli/tests/integration/db_dedup.rs: both front ends go
    # through the db crate's SortedFeed.
    rows = [(b"a", b"1"), (b"b", b"1"), (b"b", b"2"), (b"b", b"3"), (b"c", b"1")]
    with pytest.raises(leveltable.KeyOrderError, match='duplicate key "b"'):
        leveltable.build_part(tmp_path / "refused", rows)
    part = leveltable.build_part(tmp_path / "kept", rows, dedup="last")
    leveltable.commit_db(tmp_path / "db", [part])
    assert list(leveltable.Db(tmp_path / "db")) == [(b"a", b"1"), (b"b", b"3"), (b"c", b"1")]


def test_parts_pickle_and_commit(tmp_path):
    items = entries(8000, seed=5)
    cuts = [0, 2000, 2000, 5000, len(items)]
    parts = [
        leveltable.build_part(tmp_path / f"part-{i}", items[a:b], max_file_size=16 << 10)
        for i, (a, b) in enumerate(zip(cuts, cuts[1:]))
    ]
    parts = [pickle.loads(pickle.dumps(p)) for p in parts]
    assert [p.entries for p in parts] == [2000, 0, 3000, len(items) - 5000]
    assert parts[1].smallest is None and parts[0].smallest == items[0][0]
    assert leveltable.Part.load(parts[0].staging).to_record() == parts[0].to_record()
    with pytest.raises(leveltable.Error) as info:
        leveltable.commit_db(tmp_path / "db", parts[::-1])
    assert "out of order" in str(info.value)
    summary = leveltable.commit_db(tmp_path / "db", parts)
    assert (summary["entries"], summary["parts"]) == (len(items), 4)
    assert list(leveltable.Db(tmp_path / "db")) == items
    assert not any(name.startswith("part-") for name in os.listdir(tmp_path))


def test_missing_database(tmp_path):
    with pytest.raises((leveltable.Error, OSError)) as info:
        leveltable.Db(tmp_path)
    assert "CURRENT" in str(info.value)


@needs_plyvel
def test_leveldb_opens_and_keeps_using_a_bulk_built_database(tmp_path):
    items = entries(10_000, seed=6)
    path = str(tmp_path / "db")
    leveltable.build_db(path, items, max_file_size=32 << 10)
    db = plyvel.DB(path, bloom_filter_bits=10)
    assert list(db) == items
    assert db.get_property(b"leveldb.num-files-at-level0") == b"0"
    db.put(items[0][0], b"changed")
    db.delete(items[1][0])
    db.close()
    model = dict(items)
    model[items[0][0]] = b"changed"
    del model[items[1][0]]
    # The writes are in LevelDB's log; our view replays it.
    assert list(leveltable.Db(path)) == sorted(model.items())


@needs_plyvel
def test_views_equal_leveldbs_while_it_holds_the_database(tmp_path):
    path = str(tmp_path / "db")
    rng = random.Random(8)
    writer = plyvel.DB(path, create_if_missing=True, write_buffer_size=64 << 10)
    keys = [b"key%05d" % i for i in range(3000)]
    sequence = 0
    writes = {}
    for round_ in range(20):
        with writer.write_batch() as batch:
            for _ in range(300):
                key = rng.choice(keys)
                sequence += 1
                if rng.random() < 0.2:
                    batch.delete(key)
                    writes.setdefault(key, []).append((sequence, None))
                else:
                    value = b"%d-%s" % (round_, rng.randbytes(rng.randrange(0, 100)))
                    batch.put(key, value)
                    writes.setdefault(key, []).append((sequence, value))
        if round_ % 7 == 3:
            writer.compact_range()
    # More writes after the last compaction: some are only in the log.
    for key in keys[:50]:
        sequence += 1
        writer.put(key, b"in the log")
        writes.setdefault(key, []).append((sequence, b"in the log"))
    writer.compact_range(start=b"zzz")  # settles pending compactions, touches no key
    expected = list(writer)
    # LevelDB's own reads may schedule compactions (its seek statistics): read it first.
    expected_values = [writer.get(k) for k in keys]
    writer.compact_range(start=b"zzz")
    before = settled_hash(path)
    with leveltable.Db(path) as db:
        assert list(db) == expected
        assert db.get_many(keys) == expected_values
        # A key written once survives compactions with its sequence number: a snapshot at
        # that number sees it, one just before does not.
        once = [(w[0][0], k, w[0][1]) for k, w in writes.items() if len(w) == 1 and w[0][1]]
        seq, key, value = min(once)
        assert db.snapshot(seq)[key] == value
        assert key not in db.snapshot(seq - 1)
        assert db.snapshot(seq).sequence == seq
        assert db.verify()["tables"] >= 1
        salvaged = leveltable.Db.salvage(path)
        assert list(salvaged) == expected
    # Reading changed no byte and no name, while LevelDB held the database open.
    assert tree_hash(path) == before
    writer.close()
    after_close = tree_hash(path)
    with leveltable.Db(path) as db:
        assert list(db) == expected
    assert tree_hash(path) == after_close


@needs_plyvel
def test_a_database_table_read_as_a_plain_table_is_out_of_order(tmp_path):
    # Two versions of one key in one table: newest first in the file, which is not bytewise
    # order of the internal keys. Reading it as a plain bytewise table must fail, not loop.
    path = tmp_path / "db"
    db = plyvel.DB(str(path), create_if_missing=True)
    for i in range(3000):
        db.put(b"k%05d" % (i % 1500), b"v%d" % i)
    db.close()
    plyvel.DB(str(path)).close()  # the reopen writes the log into a table
    tables = sorted(p for p in os.listdir(path) if p.endswith(".ldb"))
    assert tables
    with leveltable.Table(path / tables[0]) as table:
        with pytest.raises(leveltable.CorruptionError, match="out of order"):
            for _ in table:
                pass
    with leveltable.Db(path) as db:
        assert len(list(db)) == 1500


def thread_count():
    return len(os.listdir("/proc/self/task"))


def test_long_iterations_read_ahead_and_stop_when_dropped(tmp_path):
    # Many chunks (a thread reads ahead from the third on): exact entries, in order, with
    # two iterations taking turns; an abandoned iterator's thread ends.
    items = entries(30_000, seed=5)
    path = tmp_path / "db"
    leveltable.build_db(str(path), iter(items), max_file_size=64 << 10)
    with leveltable.Db(path) as db:
        before = thread_count()
        a, b = db.items(), iter(db.keys())
        got_a, got_b = [], []
        for x, y in zip(a, b):
            got_a.append(x)
            got_b.append(y)
        assert got_a == items
        assert got_b == [k for k, _ in items]
        del a, b
        for _ in range(8):
            it = db.items()
            for i, entry in enumerate(it):
                assert entry == items[i]
                if i == 5000:
                    break
            del it
        for _ in range(100):
            if thread_count() <= before:
                break
            time.sleep(0.05)
        assert thread_count() <= before


def test_corruption_deep_in_a_long_iteration_is_raised(damaged_db):
    # A data block of the last table damaged: the iteration hands out every entry before
    # it, raises, and then ends.
    path, items, last = damaged_db
    with leveltable.Db(path) as db:
        it = db.items()
        got = []
        with pytest.raises(leveltable.CorruptionError, match=last):
            for entry in it:
                got.append(entry)
        assert got == items[: len(got)]
        assert len(got) > 50_000
        assert list(it) == []


def test_closing_a_db_closes_its_iterators_and_snapshots(tmp_path):
    items = entries(5000, seed=11)
    path = tmp_path / "db"
    leveltable.build_db(path, iter(items), max_file_size=32 << 10)
    db = leveltable.Db(path)
    snap = db.snapshot()
    it = db.items()
    assert next(it) == items[0]
    keys = db.keys()
    values = snap.range()
    loop = iter(db)
    snap_loop = iter(snap)
    db.close()
    # As plyvel refuses a closed database: every read through it raises.
    for step in (
        lambda: next(it),
        lambda: next(keys),
        lambda: next(values),
        lambda: it.next_chunk(),
        lambda: list(loop),
        lambda: list(snap_loop),
        lambda: snap.get(items[1][0]),
        lambda: snap[items[1][0]],
        lambda: items[1][0] in snap,
        lambda: snap.get_many([items[1][0]]),
        lambda: snap.range(),
        lambda: iter(snap),
        lambda: db.get(items[1][0]),
        lambda: db.snapshot(),
        lambda: db.verify(),
        lambda: db.stats(),
    ):
        with pytest.raises(leveltable.ClosedError, match="the database is closed"):
            step()
    # And keeps raising.
    with pytest.raises(leveltable.ClosedError):
        next(it)
    assert repr(db) == "leveltable.Db(<closed>)"
    db.close()
    # An iterator that had read ahead (a long one, past two chunks) stops too.
    with leveltable.Db(path) as db:
        long = db.items()
        got = [next(long) for _ in range(3000)]
        assert got == items[:3000]
    with pytest.raises(leveltable.ClosedError):
        next(long)


def test_paths_may_be_str_bytes_or_path_like(tmp_path):
    items = entries(500, seed=12)
    raw = os.fsencode(tmp_path) + b"/db-\xff\xfe"
    # Bytes are the file system's own: a name that is not UTF-8 works both ways.
    leveltable.build_db(raw, iter(items))
    assert os.path.isdir(raw)
    with leveltable.Db(raw) as db:
        assert list(db) == items
    with leveltable.Db(os.fsdecode(raw)) as db:
        assert list(db) == items
    with leveltable.Db.salvage(raw) as db:
        assert list(db) == items
    table = next(name for name in os.listdir(raw) if name.endswith(b".ldb"))
    with leveltable.Table(raw + b"/" + table) as t:
        assert len(list(t)) == len(items)
    with pytest.raises(TypeError, match="str, bytes or os.PathLike"):
        leveltable.Db(123)
    with pytest.raises(FileNotFoundError):
        leveltable.Db(os.fsencode(tmp_path / "missing"))


def test_table_memory_bounds_what_open_tables_keep(tmp_path):
    items = entries(20_000, seed=13)
    path = tmp_path / "db"
    summary = leveltable.build_db(path, iter(items), max_file_size=32 << 10)
    assert summary["tables"] > 5
    # Room for about one table's index and filter: every read still works.
    with leveltable.Db(path, table_memory=64 << 10) as db:
        assert list(db) == items
        assert db.get(items[777][0]) == items[777][1]
        assert db.verify()["table_entries"] == len(items)
    # Less than one table's: refused, naming the table and both sizes.
    with leveltable.Db(path, table_memory=100) as db:
        with pytest.raises(leveltable.InvalidArgumentError) as info:
            db.get(items[0][0])
        message = str(info.value)
        assert ".ldb" in message
        assert "more than the table memory budget of 100 bytes" in message
    with pytest.raises(leveltable.InvalidArgumentError, match="table_memory"):
        leveltable.Db(path, table_memory=0)
    with pytest.raises(OverflowError):
        leveltable.Db(path, table_memory=-1)


def test_what_is_not_a_database_says_so(tmp_path):
    with pytest.raises(FileNotFoundError):
        leveltable.Db(tmp_path / "missing")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        leveltable.Db(tmp_path / "file")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(leveltable.Error) as info:
        leveltable.Db(empty)
    assert not isinstance(info.value, leveltable.CorruptionError)
    assert str(info.value) == f"{empty}: not a LevelDB database: no CURRENT file"
    # A database that lost its CURRENT is a corrupt one.
    path = tmp_path / "db"
    leveltable.build_db(path, iter(entries(100)))
    os.remove(path / "CURRENT")
    with pytest.raises(leveltable.CorruptionError, match="CURRENT"):
        leveltable.Db(path)


def _crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _prefixed(b):
    return _varint(len(b)) + b


def write_manifest(path, files, last_sequence):
    """A MANIFEST of one version edit listing ``files`` (level, number, size, smallest user
    key, largest user key), as LevelDB 1.23 writes it: one FULL log record."""
    ikey = lambda k: k + (1).to_bytes(8, "little")  # sequence 0, a value
    edit = _varint(1) + _prefixed(b"leveldb.BytewiseComparator")
    edit += _varint(2) + _varint(0)  # log number
    edit += _varint(3) + _varint(max(f[1] for f in files) + 1)  # next file number
    edit += _varint(4) + _varint(last_sequence)
    for level, number, size, smallest, largest in files:
        edit += _varint(7) + _varint(level) + _varint(number) + _varint(size)
        edit += _prefixed(ikey(smallest)) + _prefixed(ikey(largest))
    crc = _crc32c(bytes([1]) + edit)
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    record = masked.to_bytes(4, "little") + len(edit).to_bytes(2, "little") + b"\x01" + edit
    current = (path / "CURRENT").read_text().strip()
    (path / current).write_bytes(record)
    return current


def test_overlapping_files_of_a_level_are_refused_naming_both_tables(tmp_path):
    path = tmp_path / "db"
    items = entries(3000, seed=5)
    leveltable.build_db(path, iter(items), max_file_size=16 << 10)
    with leveltable.Db(path) as db:
        tables = db.stats()["levels"][6]
        db.verify()
    assert len(tables) > 2
    # Every table claims a..b: the last level's files overlap.
    manifest = write_manifest(
        path, [(6, t["number"], t["size"], b"a", b"b") for t in tables], 0
    )
    numbers = sorted(t["number"] for t in tables)
    with pytest.raises(leveltable.CorruptionError) as info:
        with leveltable.Db(path) as db:
            db.verify()
    message = str(info.value)
    assert manifest in message and "overlap" in message, message
    for number in numbers[:2]:
        assert f"{number:06d}.ldb" in message, message


def test_a_fifo_or_device_where_a_file_should_be_is_a_leveltable_error(tmp_path):
    path = tmp_path / "db"
    leveltable.build_db(path, iter(entries(100)))
    os.remove(path / "CURRENT")
    os.mkfifo(path / "CURRENT")
    with pytest.raises(leveltable.Error, match="FIFO") as info:
        leveltable.Db(path)
    assert not isinstance(info.value, OSError)
    # A table of the database replaced by a FIFO.
    path = tmp_path / "db2"
    leveltable.build_db(path, iter(entries(100)))
    (table,) = [n for n in os.listdir(path) if n.endswith(".ldb")]
    os.remove(path / table)
    os.mkfifo(path / table)
    with pytest.raises(leveltable.Error, match="FIFO") as info:
        with leveltable.Db(path) as db:
            db.verify()
    assert not isinstance(info.value, OSError)


def test_iterating_a_db_stops_at_close(tmp_path):
    items = entries(3000, seed=3)
    path = tmp_path / "db"
    leveltable.build_db(path, iter(items))
    for writable in (False, True):
        db = leveltable.Db(path, writable=writable)
        loop = iter(db)
        assert next(loop) == items[0]
        snap_loop = iter(db.snapshot())
        assert next(snap_loop) == items[0]
        db.close()
        # The entries fetched with the first are not handed out after the close.
        for it in (loop, snap_loop):
            with pytest.raises(leveltable.ClosedError, match="the database is closed"):
                next(it)
        # A loop that ends before the close is unaffected.
        with leveltable.Db(path, writable=writable) as db:
            assert list(db) == items


@pytest.mark.parametrize(
    "url, variables, secret",
    [
        ("s3://AKIDLEAK:wJalrLEAK@bucket/db", "AWS_ACCESS_KEY_ID", "LEAK"),
        ("gs://user:pLEAK@bucket/db", "GOOGLE_SERVICE_ACCOUNT", "LEAK"),
        ("https://user:pLEAK@host.example/db?x=1", "presigned URL", "LEAK"),
    ],
)
def test_a_url_with_credentials_is_refused_without_showing_them(
    tmp_path, url, variables, secret
):
    for call in (
        lambda: leveltable.Db(url),
        lambda: leveltable.Table(url + "/000005.ldb"),
        lambda: leveltable.build_db(url, iter(entries(10))),
    ):
        with pytest.raises(leveltable.InvalidArgumentError) as info:
            call()
        message = str(info.value)
        assert variables in message and "credentials in a URL" in message, message
        assert secret not in message and "user" not in message, message


def test_cache_bytes_zero_means_no_block_cache(tmp_path):
    items = entries(20_000, seed=17)
    path = tmp_path / "db"
    leveltable.build_db(path, iter(items), max_file_size=64 << 10)
    with leveltable.Db(path) as db:
        assert db.stats()["block_cache_bytes"] == 8 << 20
    with leveltable.Db(path, cache_bytes=1 << 16) as db:
        assert db.stats()["block_cache_bytes"] == 1 << 16
    # No cache: every read still works, each block read from its file.
    with leveltable.Db(path, cache_bytes=0) as db:
        assert db.stats()["block_cache_bytes"] == 0
        assert list(db) == items
        assert list(db.range(items[10][0], items[15_000][0])) == items[10:15_000]
        assert db.get(items[4321][0]) == items[4321][1]
        assert db.verify()["table_entries"] == len(items)


def test_build_db_refuses_a_bloom_filter_past_64_bits_per_key(tmp_path):
    message = "bloom_bits is 65: it must be from 0 to 64"
    with pytest.raises(leveltable.InvalidArgumentError, match=message):
        leveltable.build_db(str(tmp_path / "db"), [(b"a", b"1")], bloom_bits=65)
    leveltable.build_db(str(tmp_path / "db"), [(b"a", b"1")], bloom_bits=64)
    assert list(tmp_path.glob("db/*.ldb"))
