"""scan_arrow(): databases as Arrow record batches through the PyCapsule stream interface,
read by pyarrow, DuckDB and Polars, and written to Parquet, compared with plain iteration.

LEVELTABLE_ARROW_ENTRIES sets the entries per database (default 20000; the full check uses
1000000). Without pyarrow, duckdb or polars the module is skipped, unless
LEVELTABLE_REQUIRE_SERVERS=1."""

import os

import pytest

import leveltable

try:
    import duckdb
    import polars
    import pyarrow
    import pyarrow.parquet
except ImportError as e:  # pragma: no cover - CI installs them
    if os.environ.get("LEVELTABLE_REQUIRE_SERVERS") == "1":
        raise
    pytest.skip(f"scan_arrow's consumers are not installed ({e})", allow_module_level=True)

ENTRIES = int(os.environ.get("LEVELTABLE_ARROW_ENTRIES", "20000"))


def make_db(path, step, offset):
    """A database of ENTRIES keys `k%08d` (every `step`-th number from `offset`), with
    values that differ per database, part in tables and part in the log."""
    db = leveltable.Db(str(path), writable=True, create_if_missing=True)
    batch = db.write_batch()
    for i in range(ENTRIES):
        n = offset + i * step
        batch.put(b"k%08d" % n, b"value-%d-%d" % (step, n))
        if len(batch) == 10000:
            batch.write()
            batch.clear()
    batch.write()
    db.compact_range()
    db.put(b"k%08d" % offset, b"rewritten")
    db.delete(b"k%08d" % (offset + step))
    return db


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    a = make_db(tmp_path_factory.mktemp("a"), 2, 0)
    b = make_db(tmp_path_factory.mktemp("b"), 3, 0)
    yield a, b
    a.close()
    b.close()


def test_pyarrow_reads_every_entry_in_batches(dbs):
    a, _ = dbs
    reader = pyarrow.RecordBatchReader.from_stream(a.scan_arrow(batch_rows=4096))
    assert reader.schema == pyarrow.schema(
        [pyarrow.field("key", pyarrow.binary(), False),
         pyarrow.field("value", pyarrow.binary(), False)])
    batches = list(reader)
    assert all(batch.num_rows <= 4096 for batch in batches)
    table = pyarrow.Table.from_batches(batches)
    assert list(zip(table.column("key").to_pylist(), table.column("value").to_pylist())) \
        == list(a)


def test_ranges_prefixes_and_snapshots(dbs):
    a, _ = dbs
    start, stop = b"k%08d" % 100, b"k%08d" % 2000
    table = pyarrow.table(a.scan_arrow(start, stop))
    assert table.column("key").to_pylist() == [k for k, _ in a.range(start, stop)]
    table = pyarrow.table(a.scan_arrow(prefix=b"k000001"))
    assert table.column("key").to_pylist() == [k for k, _ in a.iterator(prefix=b"k000001")]
    snapshot = a.snapshot()
    scan = a.scan_arrow(snapshot=snapshot)
    a.put(b"k%08d" % 4, b"after the snapshot")
    try:
        assert pyarrow.table(scan).num_rows == pyarrow.table(snapshot.scan_arrow()).num_rows
        assert dict(zip(*pyarrow.table(scan).to_pydict().values()))[b"k%08d" % 4] \
            == b"value-2-4"
    finally:
        a.put(b"k%08d" % 4, b"value-2-4")
    with pytest.raises(TypeError):
        a.scan_arrow(prefix=b"k", start=b"k")
    with pytest.raises(leveltable.InvalidArgumentError):
        a.scan_arrow(batch_rows=0)


def test_duckdb_counts_filters_and_joins_as_iteration_does(dbs):
    a, b = dbs
    scan_a, scan_b = a.scan_arrow(), b.scan_arrow()
    con = duckdb.connect()
    assert con.sql("select count(*) from scan_a").fetchall()[0][0] == len(list(a))
    lo, hi = b"k%08d" % 1000, b"k%08d" % 9000
    expected = sum(1 for k, _ in a if lo <= k < hi)
    got = con.execute("select count(*) from scan_a where key >= ? and key < ?",
                      [lo, hi]).fetchall()[0][0]
    assert got == expected
    values_b = dict(b)
    joined = sorted((k, v, values_b[k]) for k, v in a if k in values_b)
    got = con.sql("select scan_a.key, scan_a.value, scan_b.value from scan_a "
                  "join scan_b using (key) order by 1").fetchall()
    assert got == joined


def test_polars_reads_the_frame(dbs):
    a, _ = dbs
    frame = polars.DataFrame(a.scan_arrow())
    assert frame.columns == ["key", "value"]
    assert frame.height == len(list(a))
    assert frame["key"].to_list()[:3] == [k for k, _ in a.range()][:3]


def test_parquet_written_from_the_stream_reads_back_equal(dbs, tmp_path):
    a, _ = dbs
    path = tmp_path / "a.parquet"
    reader = pyarrow.RecordBatchReader.from_stream(a.scan_arrow())
    with pyarrow.parquet.ParquetWriter(path, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    table = pyarrow.parquet.read_table(path)
    assert list(zip(*table.to_pydict().values())) == list(a)


def test_a_closed_database_refuses_a_scan(tmp_path):
    db = leveltable.Db(str(tmp_path), writable=True, create_if_missing=True)
    db.put(b"a", b"1")
    scan = db.scan_arrow()
    db.close()
    with pytest.raises(leveltable.ClosedError):
        pyarrow.table(scan)
    with pytest.raises(leveltable.ClosedError):
        db.scan_arrow()


@pytest.mark.parametrize("writable, versions", [(True, False), (False, False), (False, True)])
def test_a_stream_under_way_stops_when_its_database_closes(tmp_path, writable, versions):
    # As an iterator does: the batches read before the close stand, the next one raises,
    # and nothing is read from a directory whose lock the close released.
    db = leveltable.Db(str(tmp_path), writable=True, create_if_missing=True)
    with db.write_batch() as wb:
        for i in range(1000):
            wb.put(b"k%04d" % i, b"v")
    if not writable:
        db.close()
        db = leveltable.Db(str(tmp_path))
    scan = db.scan_arrow(batch_rows=100, versions=True) if versions else db.scan_arrow(batch_rows=100)
    reader = pyarrow.RecordBatchReader.from_stream(scan)
    first = reader.read_next_batch()
    assert first.num_rows == 100
    db.close()
    with pytest.raises(Exception, match="the database is closed"):
        reader.read_next_batch()


def test_a_damaged_table_deep_in_a_scan_is_raised(damaged_db):
    # A data block of the last table damaged, some 12 MB into the scan (past the quarter of
    # the block cache after which a scan reads the blocks of the level that leads straight
    # into the columns): the batches before it hold every entry before it, in order, and
    # the stream then raises naming the file.
    path, items, last = damaged_db
    with leveltable.Db(path) as db:
        reader = pyarrow.RecordBatchReader.from_stream(db.scan_arrow(batch_rows=1000))
        got = []
        with pytest.raises(Exception, match=last):
            for batch in reader:
                got.extend(zip(batch.column("key").to_pylist(), batch.column("value").to_pylist()))
        assert got == items[: len(got)]
        assert len(got) > 50_000
