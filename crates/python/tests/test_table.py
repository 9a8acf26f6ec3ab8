"""leveltable.Table and leveltable.TableBuilder: every method, errors, atomicity, threads,
and the tables LevelDB 1.23 wrote (the committed goldens)."""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest

import leveltable
from conftest import golden_entries


def build(path, entries, **options):
    with leveltable.TableBuilder(str(path), **options) as builder:
        for key, value in entries:
            builder.add(key, value)
    return path


def sample(n=5000, seed=7):
    rng = random.Random(seed)
    keys = sorted({rng.randbytes(rng.randrange(1, 24)) for _ in range(n)})
    return [(k, rng.randbytes(rng.randrange(0, 200))) for k in keys]


@pytest.mark.parametrize("name", ["table_none.ldb", "table_snappy.ldb"])
def test_tables_written_by_leveldb_read_back_exactly(testdata, name):
    expected = golden_entries()
    with leveltable.Table(testdata / name) as table:
        assert list(table) == expected
        assert list(table.keys()) == [k for k, _ in expected]
        assert list(table.values()) == [v for _, v in expected]
        for key, value in expected[::37]:
            assert table[key] == value
            assert table.get(key) == value
            assert key in table
        assert table.verify()["entries"] == len(expected)


def test_rebuilt_golden_is_leveldbs_bytes(testdata, tmp_path):
    # Same entries and options as LevelDB's table_none.ldb: the same bytes.
    out = build(
        tmp_path / "t.ldb",
        golden_entries(),
        block_size=1024,
        restart_interval=16,
        compression="none",
        bloom_bits=10,
    )
    assert out.read_bytes() == (testdata / "table_none.ldb").read_bytes()


@pytest.mark.parametrize("compression", ["snappy", "none"])
@pytest.mark.parametrize("bloom_bits", [0, 10])
def test_model(tmp_path, compression, bloom_bits):
    entries = sample()
    model = dict(entries)
    path = build(
        tmp_path / "t.ldb",
        entries,
        compression=compression,
        bloom_bits=bloom_bits,
        block_size=512,
        restart_interval=4,
    )
    rng = random.Random(1)
    probes = [k for k, _ in entries[::11]] + [rng.randbytes(9) for _ in range(300)]
    with leveltable.Table(path, cache_bytes=1 << 20) as table:
        assert list(table.items()) == entries
        for key in probes:
            assert table.get(key) == model.get(key)
            assert (key in table) == (key in model)
        assert table.get_many(probes) == [model.get(k) for k in probes]
        lo, hi = sorted(rng.sample([k for k, _ in entries], 2))
        assert list(table.range(lo, hi)) == [(k, v) for k, v in entries if lo <= k < hi]
        assert list(table.range(start=hi)) == [(k, v) for k, v in entries if k >= hi]
        assert list(table.range(stop=lo)) == [(k, v) for k, v in entries if k < lo]
        assert list(table.range(hi, lo)) == []
        stats = table.stats()
        assert stats["filter_policy"] == ("leveldb.BuiltinBloomFilter2" if bloom_bits else None)
        assert stats["file_size"] == os.path.getsize(path)


def test_getitem_of_absent_key_is_keyerror(tmp_path):
    table = leveltable.Table(build(tmp_path / "t.ldb", [(b"a", b"1")]))
    with pytest.raises(KeyError):
        table[b"b"]


def test_bytes_like_in_bytes_out(tmp_path):
    path = tmp_path / "t.ldb"
    with leveltable.TableBuilder(path) as builder:
        builder.add(bytearray(b"a"), memoryview(b"1"))
        builder.add(memoryview(b"b"), bytearray(b"2"))
    table = leveltable.Table(path)
    for key in [b"a", bytearray(b"a"), memoryview(b"a")]:
        value = table.get(key)
        assert value == b"1" and type(value) is bytes
    assert table.get_many([bytearray(b"b")]) == [b"2"]


@pytest.mark.parametrize("bad", ["a", 1, None, 1.5, [b"a"]])
def test_str_and_other_types_are_refused(tmp_path, bad):
    table = leveltable.Table(build(tmp_path / "t.ldb", [(b"a", b"1")]))
    with pytest.raises(TypeError) as info:
        table.get(bad)
    if isinstance(bad, str):
        assert "not str" in str(info.value)
    with pytest.raises(TypeError):
        bad in table
    builder = leveltable.TableBuilder(tmp_path / "u.ldb")
    with pytest.raises(TypeError):
        builder.add(bad, b"v")
    with pytest.raises(TypeError):
        builder.add(b"k", bad)
    builder.abandon()


def test_keys_out_of_order_are_refused_and_the_builder_goes_on(tmp_path):
    path = tmp_path / "t.ldb"
    builder = leveltable.TableBuilder(path)
    builder.add(b"b", b"1")
    for bad in [b"a", b"b"]:
        with pytest.raises(leveltable.KeyOrderError) as info:
            builder.add(bad, b"x")
        assert "t.ldb" in str(info.value)
        assert isinstance(info.value, leveltable.Error)
    builder.add(b"c", b"2")
    summary = builder.finish()
    assert summary["entries"] == 2
    assert list(leveltable.Table(path)) == [(b"b", b"1"), (b"c", b"2")]
    with pytest.raises(leveltable.ClosedError):
        builder.add(b"d", b"3")
    with pytest.raises(leveltable.ClosedError):
        builder.finish()


def test_builder_is_atomic(tmp_path):
    path = tmp_path / "t.ldb"
    with pytest.raises(RuntimeError):
        with leveltable.TableBuilder(path) as builder:
            for i in range(100_000):
                builder.add(b"%08d" % i, b"x" * 50)
            raise RuntimeError("the caller failed")
    assert os.listdir(tmp_path) == []
    builder = leveltable.TableBuilder(path)
    builder.add(b"a", b"1")
    assert not path.exists()
    builder.abandon()
    assert os.listdir(tmp_path) == []
    # An existing file is never replaced.
    path.write_bytes(b"precious")
    with pytest.raises(OSError):
        leveltable.TableBuilder(path)
    assert path.read_bytes() == b"precious"


def test_options_are_checked(tmp_path):
    for options in [
        {"compression": "zip"},
        {"block_size": 0},
        {"restart_interval": 0},
        {"extra_filter": "cuckoo"},
    ]:
        with pytest.raises(leveltable.InvalidArgumentError):
            leveltable.TableBuilder(tmp_path / "t.ldb", **options)
    assert os.listdir(tmp_path) == []
    path = build(tmp_path / "t.ldb", sample(500), extra_filter="local-bloom")
    stats = leveltable.Table(path).stats()
    assert stats["filters"] == ["leveldb.BuiltinBloomFilter2", "leveltable.LocalBloom64"]
    assert stats["filter_policy"] == "leveltable.LocalBloom64"


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        leveltable.Table(tmp_path / "nope.ldb")
    assert "nope.ldb" in str(info.value)
    junk = tmp_path / "junk.ldb"
    junk.write_bytes(b"not a table" * 10)
    with pytest.raises(leveltable.CorruptionError) as info:
        leveltable.Table(junk)
    assert "junk.ldb" in str(info.value)
    # A flipped byte in a data block: an error on read, never a wrong value.
    entries = sample(2000)
    path = build(tmp_path / "t.ldb", entries, compression="none", bloom_bits=0)
    data = bytearray(path.read_bytes())
    data[100] ^= 0x40
    path.write_bytes(bytes(data))
    table = leveltable.Table(path)
    with pytest.raises(leveltable.CorruptionError):
        table.verify()
    with pytest.raises(leveltable.CorruptionError):
        list(table)
    unchecked = leveltable.Table(path, verify_checksums=False)
    model = dict(entries)
    try:
        for key, value in unchecked:
            # Unchecked, a flipped value byte may go unnoticed, but a key never maps to
            # another key's value.
            assert key not in model or len(value) == len(model[key])
    except leveltable.CorruptionError:
        pass


def test_closed_table(tmp_path):
    table = leveltable.Table(build(tmp_path / "t.ldb", [(b"a", b"1"), (b"b", b"2")]))
    items = iter(table)
    table.close()
    with pytest.raises(leveltable.ClosedError):
        table.get(b"a")
    # An iterator made before keeps the file open until it ends.
    assert list(items) == [(b"a", b"1"), (b"b", b"2")]
    assert "closed" in repr(table)


def test_threads_read_one_table(tmp_path):
    entries = sample(20_000)
    model = dict(entries)
    table = leveltable.Table(build(tmp_path / "t.ldb", entries), cache_bytes=256 << 10)
    keys = [k for k, _ in entries]
    errors = []

    def reader(seed):
        rng = random.Random(seed)
        try:
            for _ in range(3000):
                key = rng.choice(keys) if rng.random() < 0.8 else rng.randbytes(7)
                assert table.get(key) == model.get(key)
            batch = rng.sample(keys, 200)
            assert table.get_many(batch) == [model[k] for k in batch]
            assert sum(1 for _ in table.range(keys[100], keys[5000])) == 4900
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_iteration_survives_chunk_boundaries(tmp_path):
    # Large values end chunks early; many small entries end them by count.
    entries = [(b"%06d" % i, b"v" * (300_000 if i % 500 == 0 else 3)) for i in range(5000)]
    table = leveltable.Table(build(tmp_path / "t.ldb", entries))
    assert list(table) == entries
    assert list(table.range(b"001000", b"004001")) == entries[1000:4001]


def test_a_fifo_or_device_is_refused_as_a_leveltable_error(tmp_path):
    fifo = tmp_path / "fifo.ldb"
    os.mkfifo(fifo)
    for path, what in ((fifo, "FIFO"), ("/dev/null", "device")):
        with pytest.raises(leveltable.InvalidArgumentError, match=what) as info:
            leveltable.Table(path)
        assert not isinstance(info.value, OSError)
        assert str(path) in str(info.value)
    # Nor written to, nor replaced, as a builder's output.
    with pytest.raises(leveltable.Error, match="FIFO") as info:
        build(fifo, [(b"a", b"1")])
    assert not isinstance(info.value, OSError)
    assert os.path.exists(fifo) and not os.path.isfile(fifo)



# Builds a table at argv[1] and prints the warnings its finish gave, one per line.
_FINISH_IN_A_BOX = """
import sys, warnings, leveltable
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    builder = leveltable.TableBuilder(sys.argv[1])
    for i in range(100):
        builder.add(b"k%03d" % i, b"v")
    builder.finish()
for w in caught:
    print(w.category.__name__ + ": " + str(w.message))
"""


def test_a_directory_that_cannot_be_read_gets_the_table_and_a_warning():
    # A directory that can be written but not read cannot be opened to sync it after the
    # rename: the table is in place, and a RuntimeWarning says a crash may undo the rename.
    # Root opens any directory, so as root the builder runs as another user.
    command = [sys.executable, "-c", _FINISH_IN_A_BOX]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        as_nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        probe = [setpriv, *as_nobody, sys.executable, "-c", "import leveltable"]
        if setpriv is None or subprocess.run(probe, capture_output=True).returncode != 0:
            pytest.skip("cannot run as a user other than root here (no setpriv)")
        command = [setpriv, *as_nobody, *command]
    top = tempfile.mkdtemp()
    box = os.path.join(top, "box")
    try:
        os.chmod(top, 0o755)
        os.mkdir(box)
        os.chmod(box, 0o333)
        out = os.path.join(box, "t.ldb")
        result = subprocess.run([*command, out], capture_output=True, text=True)
        os.chmod(box, 0o755)
        assert result.returncode == 0, result.stderr
        assert result.stdout == (
            f"RuntimeWarning: {out} is complete and in place, but its directory {box} "
            "could not be synced (Permission denied (os error 13)), so a system crash soon "
            "after may undo the rename\n"
        )
        assert list(leveltable.Table(out)) == [(b"k%03d" % i, b"v") for i in range(100)]
        assert os.listdir(box) == ["t.ldb"]
    finally:
        if os.path.isdir(box):
            os.chmod(box, 0o755)
        shutil.rmtree(top)
