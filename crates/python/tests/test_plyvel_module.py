"""leveltable.plyvel beyond plyvel's own suite: cursors on read-only databases, LevelDB's
properties, comparators LevelDB would refuse, repair and destroy, and databases handed
between plyvel and leveltable.plyvel."""

import os
import shutil

import pytest

import leveltable
from leveltable import plyvel as lt_plyvel

try:
    import plyvel as real_plyvel
except ImportError:  # pragma: no cover - CI installs plyvel
    real_plyvel = None


def fill(db, n=300):
    for i in range(n):
        db.put(b"k%04d" % i, b"v%04d" % i)


def test_cursor_on_read_only_db_moves_both_ways_and_seeks(tmp_path):
    with lt_plyvel.DB(str(tmp_path), create_if_missing=True) as db:
        fill(db)
        db.compact_range()
        db.put(b"k0100", b"newer")
    with leveltable.Db(str(tmp_path)) as db:
        c = db.cursor(start=b"k0010", stop=b"k0200", include_value=False)
        assert next(c) == b"k0010"
        assert c.prev() == b"k0010"
        with pytest.raises(StopIteration):
            c.prev()
        c.seek(b"k0099x")
        assert next(c) == b"k0100"
        assert c.prev() == b"k0100"
        assert c.prev() == b"k0099"
        c.seek_to_stop()
        assert c.prev() == b"k0199"
        assert len(list(db.cursor(reverse=True, prefix=b"k00"))) == 100
        assert dict(db.cursor())[b"k0100"] == b"newer"


def test_cursor_reads_as_of_its_creation(tmp_path):
    with lt_plyvel.DB(str(tmp_path), create_if_missing=True) as db:
        fill(db, 10)
        it = db.iterator(include_value=False)
        assert next(it) == b"k0000"
        db.put(b"k0000a", b"")
        db.delete(b"k0001")
        assert list(it) == [b"k%04d" % i for i in range(1, 10)]


def test_properties_name_levels_and_tables(tmp_path):
    with lt_plyvel.DB(str(tmp_path), create_if_missing=True) as db:
        fill(db)
        db.compact_range()
        levels = [int(db.get_property(b"leveldb.num-files-at-level%d" % n)) for n in range(7)]
        assert sum(levels) >= 1
        assert db.get_property(b"leveldb.num-files-at-level7") is None
        sstables = db.get_property(b"leveldb.sstables").decode()
        assert "--- level 0 ---" in sstables and "'k0000' @ " in sstables
        db.put(b"in-memory", b"x" * 1000)
        assert int(db.get_property(b"leveldb.approximate-memory-usage")) > 1000
        stats = db.get_property(b"leveldb.stats").split(b"\n")
        assert stats[1] == b"Level  Files Size(MB) Time(sec) Read(MB) Write(MB)"
        assert all(len(row) == 50 for row in stats[3:-1]) and stats[-1] == b""
        assert db.approximate_size(b"k", b"l") > 0
        assert db.approximate_size(b"x", b"y") == 0


def test_comparator_is_recorded_and_other_orders_are_refused(tmp_path):
    def reverse(a, b):
        return (a < b) - (a > b)

    with lt_plyvel.DB(str(tmp_path), create_if_missing=True, comparator=reverse,
                      comparator_name=b"test.Reverse") as db:
        for key in (b"a", b"c", b"b"):
            db.put(key, b"")
        assert list(db.iterator(include_value=False)) == [b"c", b"b", b"a"]
    with pytest.raises(leveltable.Error, match="test.Reverse"):
        lt_plyvel.DB(str(tmp_path))
    if real_plyvel is not None:
        with pytest.raises(real_plyvel.Error):
            real_plyvel.DB(str(tmp_path))
    with lt_plyvel.DB(str(tmp_path), comparator=reverse, comparator_name="test.Reverse") as db:
        assert list(db.iterator(include_value=False, reverse=True)) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("stderr_closed", [False, True])
def test_a_failing_comparator_aborts_the_process(tmp_path, stderr_closed):
    """As plyvel: keys kept in an order that failed would be lost to every later read. The
    process aborts even when its message cannot be printed."""
    import signal
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from leveltable import plyvel\n"
        "def cmp(a, b):\n"
        "    if b'boom' in (a, b):\n"
        "        raise ValueError('no order')\n"
        "    return (a > b) - (a < b)\n"
        "db = plyvel.DB(sys.argv[1], create_if_missing=True, comparator=cmp,\n"
        "               comparator_name=b'test.Failing')\n"
        "db.put(b'a', b'')\n"
        "db.put(b'boom', b'')\n"
        "print('went on', flush=True)\n"
    )
    read, write = os.pipe()
    if stderr_closed:
        os.close(read)
    try:
        child = subprocess.run([sys.executable, "-c", script, str(tmp_path / "db")],
                               stdout=subprocess.PIPE, stderr=write, timeout=60)
    finally:
        os.close(write)
    said = b""
    if not stderr_closed:
        with os.fdopen(read, "rb") as r:
            said = r.read()
    assert child.returncode == -signal.SIGABRT, (child.returncode, child.stdout, said)
    assert child.stdout == b""
    if not stderr_closed:
        assert b'the comparator "test.Failing" failed; aborting' in said, said


def test_repair_db_recovers_a_database_whose_manifest_is_lost(tmp_path):
    with lt_plyvel.DB(str(tmp_path), create_if_missing=True) as db:
        fill(db)
        db.compact_range()
        db.put(b"in-the-log", b"yes")
    for name in os.listdir(tmp_path):
        if name.startswith("MANIFEST-") or name == "CURRENT":
            os.unlink(tmp_path / name)
    with pytest.raises(lt_plyvel.Error):
        lt_plyvel.DB(str(tmp_path))
    lt_plyvel.repair_db(str(tmp_path))
    with lt_plyvel.DB(str(tmp_path)) as db:
        assert db.get(b"in-the-log") == b"yes"
        assert len(list(db)) == 301
    if real_plyvel is not None:
        db = real_plyvel.DB(str(tmp_path))
        assert db.get(b"k0299") == b"v0299"
        db.close()


def test_destroy_db_refuses_a_database_open_in_leveldb(tmp_path):
    if real_plyvel is None:
        pytest.skip("plyvel is not installed")
    path = str(tmp_path / "db")
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import plyvel, sys; db = plyvel.DB(sys.argv[1], create_if_missing=True); "
         "print('open', flush=True); sys.stdin.read()", path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(lt_plyvel.IOError):
            lt_plyvel.destroy_db(path)
        assert os.path.exists(os.path.join(path, "CURRENT"))
    finally:
        holder.stdin.close()
        holder.wait()
    lt_plyvel.destroy_db(path)
    assert not os.path.exists(path)


def test_destroy_db_refuses_a_database_this_process_holds_open(tmp_path):
    path = str(tmp_path / "db")
    db = lt_plyvel.DB(path, create_if_missing=True)
    db.put(b"k", b"v")
    with pytest.raises(lt_plyvel.IOError):
        lt_plyvel.destroy_db(path)
    db.put(b"after", b"v")
    db.close()
    with lt_plyvel.DB(path) as db:
        assert db.get(b"k") == b"v" and db.get(b"after") == b"v"
    # A file, or nothing, where the directory would be: nothing to destroy.
    a_file = tmp_path / "a-file"
    a_file.write_bytes(b"x")
    assert lt_plyvel.destroy_db(str(a_file)) is None
    assert lt_plyvel.destroy_db(str(tmp_path / "missing")) is None
    assert a_file.read_bytes() == b"x"


def test_plyvel_shapes_of_batches_sizes_snapshots_and_properties(tmp_path):
    db = lt_plyvel.DB(str(tmp_path / "db"), create_if_missing=True)
    fill(db)
    assert db.approximate_sizes([b"a", b"z"], (b"k", b"l")) == db.approximate_sizes(
        (b"a", b"z"), (b"k", b"l"))
    with pytest.raises(ValueError):
        db.approximate_sizes((b"a",))
    assert db.get_property(b"leveldb.num-files-at-level+1") is None
    assert db.get_property(b"leveldb.num-files-at-level1") is not None
    prefixed = db.prefixed_db(b"k00")
    with prefixed.snapshot() as snapshot:
        raw = snapshot.raw_iterator()
        raw.seek_to_first()
        assert raw.key() == b"k0000"
    batch = db.write_batch()
    db.close()
    for use in (batch.clear, batch.approximate_size, batch.__enter__,
                lambda: batch.append(batch)):
        with pytest.raises(RuntimeError):
            use()


def test_repair_db_returns_none(tmp_path):
    with lt_plyvel.DB(str(tmp_path), create_if_missing=True) as db:
        fill(db, 10)
    assert lt_plyvel.repair_db(str(tmp_path)) is None


@pytest.mark.skipif(real_plyvel is None, reason="plyvel is not installed")
def test_databases_pass_between_plyvel_and_leveltable_plyvel(tmp_path):
    path = str(tmp_path)
    db = real_plyvel.DB(path, create_if_missing=True)
    fill(db)
    db.close()
    with lt_plyvel.DB(path) as db:
        assert db.get(b"k0005") == b"v0005"
        it = db.iterator(reverse=True, include_value=False)
        assert next(it) == b"k0299"
        db.delete(b"k0005")
        with db.write_batch() as wb:
            wb.put(b"from-leveltable", b"1")
    db = real_plyvel.DB(path)
    try:
        assert db.get(b"k0005") is None
        assert db.get(b"from-leveltable") == b"1"
        assert len(list(db)) == 300
    finally:
        db.close()
    shutil.rmtree(path)
