"""Minecraft Bedrock worlds: databases written by Mojang's LevelDB (amulet-leveldb, raw
deflate blocks, type 4) read by leveltable and compared with Mojang's own iteration; and
databases leveltable writes with zlib or raw deflate, read back by Mojang's LevelDB."""

import os
import shutil

import pytest

import leveltable

from bedrock_world import write_world

try:
    import leveldb as amulet

    if not hasattr(amulet, "LevelDB"):  # another package of the same name
        amulet = None
except ImportError:  # pragma: no cover - CI installs it
    amulet = None

if amulet is None:
    if os.environ.get("LEVELTABLE_REQUIRE_SERVERS"):
        raise RuntimeError("amulet-leveldb is required (LEVELTABLE_REQUIRE_SERVERS=1)")
    pytest.skip("skipped: amulet-leveldb (Mojang's LevelDB) is not installed", allow_module_level=True)


def amulet_items(path):
    db = amulet.LevelDB(str(path))
    try:
        return list(db.items())
    finally:
        db.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A world as Mojang's LevelDB leaves it, and what Mojang's LevelDB reads from a copy."""
    root = tmp_path_factory.mktemp("world")
    path = root / "db"
    db = amulet.LevelDB(str(path), create_if_missing=True)
    write_world(db, megabytes=12, seed=7)
    db.close(compact=False)
    copy = root / "copy"
    shutil.copytree(path, copy)
    # Opening recovers the log into a table: Mojang's view, read from the copy.
    expected = amulet_items(copy)
    return path, copy, expected


def test_world_has_tables_logs_and_raw_deflate_blocks(world):
    path, _, expected = world
    names = os.listdir(path)
    tables = [n for n in names if n.endswith(".ldb")]
    assert len(tables) >= 2 and any(n.endswith(".log") for n in names), names
    assert len(expected) > 1000
    # Mojang's raw deflate (type 4) shrinks the data blocks to a fraction of the entries.
    stored = 0
    for name in tables:
        with leveltable.Table(path / name) as t:
            stored += t.stats()["data_size"]
    assert 0 < stored < 0.5 * sum(len(k) + len(v) for k, v in expected)


def test_db_reads_what_mojang_reads(world):
    path, copy, expected = world
    for where in (path, copy):
        for profile in ("auto", "mojang"):
            with leveltable.Db(where, profile=profile) as db:
                assert list(db) == expected
                for key, value in expected[::97]:
                    assert db[key] == value
                assert db.get(b"Nether") is None
    keys = {k for k, _ in expected}
    assert b"~local_player" in keys
    assert any(len(k) == 10 and k[8] == 0x2F for k in keys)  # overworld sub-chunks
    assert any(len(k) == 14 and k[12] == 0x2F for k in keys)  # nether and end sub-chunks


def test_tables_open_under_auto_and_mojang_only(world):
    # (The tables' entries, internal keys, are compared in
    # crates/db/tests/integration/mojang.rs.)
    path, _, _ = world
    for name in sorted(n for n in os.listdir(path) if n.endswith(".ldb")):
        stats = []
        for profile in ("auto", "mojang"):
            with leveltable.Table(path / name, profile=profile) as t:
                stats.append(t.stats()["data_blocks"])
        assert stats[0] == stats[1] > 0
        with pytest.raises(leveltable.Error) as e:
            leveltable.Table(path / name, profile="leveldb")
        assert "unsupported block compression type 4" in str(e.value)
        assert "known to profiles: mojang, auto" in str(e.value)


def test_unknown_profile_is_refused(world):
    path, _, _ = world
    with pytest.raises(leveltable.InvalidArgumentError, match="profile must be"):
        leveltable.Db(path, profile="bedrock")


@pytest.mark.parametrize("compression", ["deflate", "zlib"])
def test_mojang_reads_what_leveltable_writes(tmp_path, world, compression):
    _, _, expected = world
    out = tmp_path / compression
    leveltable.build_db(out, iter(expected), compression=compression, block_size=16384)
    # The blocks carry Mojang's type byte for the codec.
    table = next(n for n in sorted(os.listdir(out)) if n.endswith(".ldb"))
    data = (out / table).read_bytes()
    assert data[0:1] != b"" and len(data) < sum(len(k) + len(v) for k, v in expected)
    assert amulet_items(out) == expected
    # Mojang's LevelDB writes on top; both read its newest writes.
    db = amulet.LevelDB(str(out))
    db.put(b"~local_player", b"after the build")
    db.delete(expected[0][0])
    db.close(compact=False)
    with leveltable.Db(out) as ours:
        assert ours[b"~local_player"] == b"after the build"
        assert ours.get(expected[0][0]) is None
        assert len(list(ours)) == len(expected) - 1
