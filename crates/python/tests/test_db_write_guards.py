"""What leveltable.Db(path, writable=True) refuses, as the library decides it for every
caller: options out of range, a directory that lost its CURRENT, and a handle used in a
child forked from the process that opened it."""

import os

import pytest

import leveltable


def contents(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def test_a_bloom_filter_past_64_bits_per_key_is_refused_at_open(tmp_path):
    path = tmp_path / "db"
    for bits in (10**9, 65):
        with pytest.raises(leveltable.InvalidArgumentError,
                           match=f"bloom_filter_bits is {bits}: it must be from 0 to 64"):
            leveltable.Db(path, writable=True, create_if_missing=True, bloom_filter_bits=bits)
        assert not path.exists()
    for keyword in ("block_size", "block_restart_interval"):
        with pytest.raises(leveltable.InvalidArgumentError,
                           match=f"{keyword} is 0: it must be at least 1"):
            leveltable.Db(path, writable=True, create_if_missing=True, **{keyword: 0})
    with leveltable.Db(path, writable=True, create_if_missing=True,
                       bloom_filter_bits=64) as db:
        db.put(b"k", b"v")
        db.compact_range()
        assert db.get(b"k") == b"v"


def test_create_if_missing_refuses_a_database_that_lost_current(tmp_path):
    path = tmp_path / "db"
    with leveltable.Db(path, writable=True, create_if_missing=True,
                       write_buffer_size=64 << 10) as db:
        for i in range(20_000):
            db.put(b"%08d" % i, b"v" * 20)
        db.compact_range()
    os.remove(path / "CURRENT")
    before = contents(path)
    with pytest.raises(leveltable.CorruptionError,
                       match="no CURRENT file, though it holds a database's files"):
        leveltable.Db(path, writable=True, create_if_missing=True)
    assert contents(path) == before
    with leveltable.Db.salvage(path) as db:
        assert sum(1 for _ in db) == 20_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_forked_child_cannot_use_the_parents_writable_db(tmp_path):
    path = tmp_path / "db"
    db = leveltable.Db(path, writable=True, create_if_missing=True)
    db.put(b"before", b"fork", sync=True)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            os.close(read)
            try:
                db.put(b"child", b"x")
                said = "put succeeded"
            except leveltable.Error as e:
                said = str(e)
            db.close()
            os.write(write, said.encode())
            status = 0
        except BaseException as e:  # noqa: BLE001 - anything else fails the test
            os.write(write, repr(e).encode())
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, said)
    assert f"opened by process {os.getpid()}" in said and "fork" in said, said
    # The parent's handle goes on, and every acknowledged write survives.
    for i in range(1000):
        db.put(b"after%04d" % i, b"v" * 100)
    db.close()
    with leveltable.Db(path, writable=True) as again:
        assert again.get(b"before") == b"fork"
        assert again.get(b"child") is None
        assert sum(1 for k in again.keys() if k.startswith(b"after")) == 1000
