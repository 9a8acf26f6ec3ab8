"""Db.get_many's batches of keys and the chunks a loop over a Db or Table reads: every key
looked up and every entry handed out exactly as single calls would."""

import os
import random
import subprocess
import sys
import textwrap

import pytest

import leveltable


def entries(n, seed=1, value_len=60):
    rng = random.Random(seed)
    keys = sorted({rng.randbytes(rng.randrange(1, 20)) for _ in range(n)})
    return [(k, rng.randbytes(rng.randrange(0, value_len))) for k in keys]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    items = entries(5000, seed=11)
    path = tmp_path_factory.mktemp("batches") / "db"
    leveltable.build_db(str(path), iter(items), max_file_size=32 << 10)
    return path, items


def test_get_many_answers_as_get_does_for_every_kind_of_key(built):
    path, items = built
    model = dict(items)
    rng = random.Random(3)
    present = [k for k, _ in rng.sample(items, 600)]
    absent = [k + b"\x00absent" for k in present[:200]]
    keys = present + absent + present[:50] + [b"", b"\xff" * 30]
    rng.shuffle(keys)
    want = [model.get(k) for k in keys]
    with leveltable.Db(path) as db:
        assert db.get_many(keys) == want
        # A tuple, a generator, and bytearray and memoryview keys among bytes ones.
        assert db.get_many(tuple(keys)) == want
        assert db.get_many(k for k in keys) == want
        mixed = [bytearray(k) if i % 3 == 0 else memoryview(k) if i % 3 == 1 else k
                 for i, k in enumerate(keys)]
        assert db.get_many(mixed) == want
        # Duplicates of one key answer alike, and an empty batch is empty.
        assert db.get_many([present[0]] * 5) == [model[present[0]]] * 5
        assert db.get_many([]) == []
        for value in db.get_many(keys[:100]):
            assert value is None or type(value) is bytes


def test_get_many_refuses_a_bad_key_anywhere_in_a_batch(built):
    path, items = built
    keys = [k for k, _ in items[:1000]]
    with leveltable.Db(path) as db:
        with pytest.raises(TypeError, match="not str"):
            db.get_many(keys[:500] + ["text"] + keys[500:])
        with pytest.raises(TypeError, match="not int"):
            db.get_many(keys + [7])

        def failing():
            yield from keys[:300]
            raise ValueError("the generator failed")

        with pytest.raises(ValueError, match="the generator failed"):
            db.get_many(failing())
        with pytest.raises(TypeError):
            db.get_many(5)
        # The database reads on after each.
        assert db.get_many(keys[:3]) == [v for _, v in items[:3]]


def test_a_loop_over_a_database_or_table_hands_out_every_entry_once(built, tmp_path):
    path, items = built
    with leveltable.Db(path) as db:
        got = [entry for entry in db]
        assert got == items
        assert all(type(k) is bytes and type(v) is bytes for k, v in got)
        # Tuples made one at a time stay valid after the loop moved on.
        kept = []
        for i, entry in enumerate(db):
            if i % 997 == 0:
                kept.append(entry)
        assert kept == items[::997]
        assert list(db.snapshot()) == items
    table_path = tmp_path / "table.ldb"
    with leveltable.TableBuilder(str(table_path)) as builder:
        for key, value in items:
            builder.add(key, value)
    with leveltable.Table(table_path) as table:
        assert list(table) == items


def test_the_runs_of_a_chunk_match_its_entries(built):
    # The runs `for` loops are built on: pairs (zip of keys and values), keys, values or
    # None per entry, chunk after chunk, across the bounds of ranges, prefixes and a
    # reverse iteration; None at the end.
    path, items = built
    prefix = items[2500][0][:1]

    def runs(it):
        out = []
        while (run := it._next_run()) is not None:
            out.extend(run)
        assert it._next_run() is None
        return out

    with leveltable.Db(path) as db:
        assert runs(db.items()) == items
        assert runs(db.keys()) == [k for k, _ in items]
        assert runs(db.values()) == [v for _, v in items]
        assert runs(db.iterator(include_key=False, include_value=False)) == [None] * len(items)
        lo, hi = items[100][0], items[4000][0]
        assert runs(db.range(lo, hi)) == items[100:4000]
        assert runs(db.iterator(prefix=prefix)) == [(k, v) for k, v in items
                                                   if k.startswith(prefix)]
        assert runs(db.iterator(reverse=True, start=lo, stop=hi, include_stop=True)) == \
            items[100:4001][::-1]
        # Entries taken one by one first: the run hands out only the rest of the chunk.
        it = db.items()
        head = [next(it) for _ in range(10)]
        assert head + runs(it) == items


def _threads_during_a_long_loop(path, cpus):
    """Threads of a process pinned to `cpus` before and during a loop over the database."""
    script = textwrap.dedent(f"""
        import os, leveltable
        os.sched_setaffinity(0, {cpus!r})
        count = lambda: len(os.listdir("/proc/self/task"))
        before = count()
        with leveltable.Db({str(path)!r}) as db:
            for i, _ in enumerate(db.items()):
                if i == 20000:
                    print(before, count())
                    break
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True).stdout.split()
    return int(out[0]), int(out[1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_read_ahead_runs_only_beside_a_second_cpu(tmp_path):
    path = tmp_path / "db"
    leveltable.build_db(str(path), iter(entries(30_000, seed=5)), max_file_size=64 << 10)
    allowed = sorted(os.sched_getaffinity(0))
    before, during = _threads_during_a_long_loop(path, {allowed[0]})
    assert during == before, "a process on one CPU read ahead in a thread"
    if len(allowed) < 2:
        print("only one CPU here: the read-ahead thread of two CPUs is not checked")
        return
    before, during = _threads_during_a_long_loop(path, set(allowed[:2]))
    assert during == before + 1
