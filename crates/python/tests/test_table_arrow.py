"""Table.scan_arrow(): one table file as Arrow record batches, the schema of
Db.scan_arrow(), compared with the table's own iteration."""

import os
import random

import pytest

import leveltable

pyarrow = pytest.importorskip("pyarrow")


def build(path, entries):
    with leveltable.TableBuilder(str(path), block_size=1024) as builder:
        for key, value in entries:
            builder.add(key, value)
    return path


def sample(n=20000, seed=3):
    rng = random.Random(seed)
    keys = sorted({rng.randbytes(rng.randrange(1, 24)) for _ in range(n)})
    return [(k, rng.randbytes(rng.randrange(0, 300))) for k in keys]


def rows(stream):
    table = pyarrow.table(stream)
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))


@pytest.mark.parametrize("batch_rows", [1, 7, 4096, 65536])
def test_a_scan_is_the_iteration(tmp_path, batch_rows):
    entries = sample()
    table = leveltable.Table(build(tmp_path / "t.ldb", entries))
    reader = pyarrow.RecordBatchReader.from_stream(table.scan_arrow(batch_rows=batch_rows))
    assert reader.schema == pyarrow.schema(
        [pyarrow.field("key", pyarrow.binary(), False), pyarrow.field("value", pyarrow.binary(), False)]
    )
    batches = list(reader)
    assert all(b.num_rows <= batch_rows for b in batches)
    got = [(k, v) for b in batches for k, v in zip(b.column(0).to_pylist(), b.column(1).to_pylist())]
    assert got == entries == list(table)


def test_ranges_and_prefixes(tmp_path):
    entries = [(b"%c%05d" % (c, i), b"v%d" % i) for c in b"abc" for i in range(3000)]
    table = leveltable.Table(build(tmp_path / "t.ldb", entries))
    for start, stop in [(b"a00100", b"b00007"), (None, b"a02000"), (b"c02999", None), (b"b", b"b")]:
        want = [e for e in entries if (start is None or e[0] >= start) and (stop is None or e[0] < stop)]
        assert rows(table.scan_arrow(start, stop, batch_rows=500)) == want
    assert rows(table.scan_arrow(prefix=b"b0001", batch_rows=3)) == [
        e for e in entries if e[0].startswith(b"b0001")
    ]
    with pytest.raises(TypeError):
        table.scan_arrow(b"a", prefix=b"b")
    with pytest.raises(leveltable.InvalidArgumentError):
        table.scan_arrow(batch_rows=0)


def test_each_stream_reads_again_and_outlives_the_close(tmp_path):
    entries = sample(500)
    table = leveltable.Table(build(tmp_path / "t.ldb", entries))
    scan = table.scan_arrow(batch_rows=100)
    assert rows(scan) == rows(scan) == entries
    table.close()
    assert rows(scan) == entries
    with pytest.raises(leveltable.ClosedError):
        table.scan_arrow()


def test_duckdb_reads_a_table(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    entries = sample(5000)
    table = leveltable.Table(build(tmp_path / "t.ldb", entries))
    scan = table.scan_arrow(batch_rows=999)
    assert duckdb.sql("select count(*), sum(octet_length(value)) from scan").fetchall()[0] == (
        len(entries),
        sum(len(v) for _, v in entries),
    )


def test_a_database_table_read_as_a_plain_table_is_out_of_order(tmp_path):
    # Two versions of one key in one table, newest first: not bytewise order of the
    # internal keys. The scan must fail, naming the file, not loop or skip.
    path = tmp_path / "db"
    db = leveltable.Db(str(path), writable=True, create_if_missing=True)
    for i in range(3000):
        db.put(b"k%05d" % (i % 1500), b"v%d" % i)
    db.close()
    leveltable.Db(str(path), writable=True).close()  # the reopen writes the log into a table
    tables = sorted(p for p in os.listdir(path) if p.endswith(".ldb"))
    assert tables
    with leveltable.Table(path / tables[0]) as table:
        with pytest.raises(Exception, match="out of order") as info:
            pyarrow.table(table.scan_arrow(batch_rows=100))
        assert tables[0] in str(info.value)
