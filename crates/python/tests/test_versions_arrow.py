"""Db.scan_arrow(versions=True): every stored version, with its sequence number and state,
as Arrow record batches, against a model of the writes."""

import random

import pytest

import leveltable

pyarrow = pytest.importorskip("pyarrow")


def write(path, seed=11):
    """Writes puts and deletes over 300 keys in two sessions (the first ends up in a table
    when the second opens, the second stays in the log); returns every write as
    (key, sequence, value or None)."""
    rng = random.Random(seed)
    history = []
    sequence = 0
    for session in range(2):
        db = leveltable.Db(str(path), writable=True, create_if_missing=True)
        for _ in range(2000):
            key = b"k%04d" % rng.randrange(300)
            sequence += 1
            if rng.random() < 0.2:
                db.delete(key)
                history.append((key, sequence, None))
            else:
                value = b"v%d" % sequence * rng.randrange(1, 4)
                db.put(key, value)
                history.append((key, sequence, value))
        db.close()
    return history


def model(history, start=None, stop=None):
    """The rows: keys ascending, newest version first, each labelled."""
    rows = []
    for key in sorted({k for k, _, _ in history}):
        if (start is not None and key < start) or (stop is not None and key >= stop):
            continue
        versions = sorted((v for v in history if v[0] == key), key=lambda v: -v[1])
        for i, (_, sequence, value) in enumerate(versions):
            state = "shadowed" if i else ("deleted" if value is None else "live")
            rows.append((key, value, sequence, state))
    return rows


def rows(stream):
    table = pyarrow.table(stream)
    return list(zip(*(table.column(c).to_pylist() for c in ("key", "value", "sequence", "state"))))


def test_every_version_with_its_sequence_and_state(tmp_path):
    history = write(tmp_path / "db")
    db = leveltable.Db(tmp_path / "db")
    scan = db.scan_arrow(versions=True, batch_rows=333)
    assert pyarrow.schema(scan) == pyarrow.schema(
        [
            pyarrow.field("key", pyarrow.binary(), False),
            pyarrow.field("value", pyarrow.binary(), True),
            pyarrow.field("sequence", pyarrow.uint64(), False),
            pyarrow.field("state", pyarrow.string(), False),
        ]
    )
    want = model(history)
    assert rows(scan) == want
    # The live rows are the plain scan's entries.
    assert [(k, v) for k, v, _, s in want if s == "live"] == list(db)
    assert rows(db.scan_arrow(b"k0100", b"k0200", versions=True)) == model(history, b"k0100", b"k0200")
    assert rows(db.scan_arrow(prefix=b"k002", versions=True, batch_rows=1)) == model(
        history, b"k002", b"k003"
    )
    salvaged = leveltable.Db.salvage(tmp_path / "db")
    assert rows(salvaged.scan_arrow(versions=True)) == want


def test_duckdb_counts_states(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    history = write(tmp_path / "db", seed=5)
    scan = leveltable.Db(tmp_path / "db").scan_arrow(versions=True)
    got = dict(duckdb.sql("select state, count(*) from scan group by state").fetchall())
    want = {}
    for _, _, _, state in model(history):
        want[state] = want.get(state, 0) + 1
    assert got == want


def test_versions_need_a_read_only_database(tmp_path):
    write(tmp_path / "db")
    with leveltable.Db(str(tmp_path / "db"), writable=True) as db:
        with pytest.raises(leveltable.InvalidArgumentError, match="read-only"):
            db.scan_arrow(versions=True)
    db = leveltable.Db(tmp_path / "db")
    with pytest.raises(leveltable.InvalidArgumentError, match="snapshot"):
        db.scan_arrow(versions=True, snapshot=db.snapshot())
    scan = db.scan_arrow(versions=True)
    db.close()
    with pytest.raises(leveltable.ClosedError):
        pyarrow.table(scan)


def test_a_stream_reads_the_view_it_was_made_on(tmp_path):
    # A refresh() after scan_arrow() leaves the stream the view it was made on, as it
    # leaves the plain scan's.
    writer = leveltable.Db(str(tmp_path / "db"), writable=True, create_if_missing=True)
    writer.put(b"a", b"1")
    db = leveltable.Db(tmp_path / "db")
    scan = db.scan_arrow(versions=True)
    plain = db.scan_arrow()
    writer.put(b"a", b"2")
    writer.put(b"b", b"3")
    assert db.refresh()
    assert rows(scan) == [(b"a", b"1", 1, "live")]
    assert pyarrow.table(plain).to_pydict() == {"key": [b"a"], "value": [b"1"]}
    assert len(rows(db.scan_arrow(versions=True))) == 3
    writer.close()
