"""Digests of a Spark read per partition, against the same digests of an iteration in key
order cut at the planned partitions' bounds: a read compared with LevelDB's (or another
read) without collecting its rows to the driver."""

import hashlib
import struct


def bounds_of(partitions):
    """Each partition's key range [start, stop) (its pieces', which follow each other)."""
    spans = []
    for part in partitions:
        pieces = part.pieces
        for before, after in zip(pieces, pieces[1:]):
            assert before.stop == after.start
        spans.append((pieces[0].start, pieces[-1].stop))
    return spans


class Digest:
    """The digest of a run of entries in order: SHA-256 of its keys, its values, and their
    lengths (as little-endian int32), each concatenated."""

    def __init__(self):
        self.rows = 0
        self.keys, self.values = hashlib.sha256(), hashlib.sha256()
        self.key_lengths, self.value_lengths = hashlib.sha256(), hashlib.sha256()

    def add(self, key, value):
        self.rows += 1
        self.keys.update(key)
        self.values.update(value)
        self.key_lengths.update(struct.pack("<i", len(key)))
        self.value_lengths.update(struct.pack("<i", len(value)))

    def result(self):
        parts = (self.keys, self.key_lengths, self.values, self.value_lengths)
        return self.rows, hashlib.sha256("".join(h.hexdigest() for h in parts).encode()).hexdigest()


def leveldb_digests(spans, items):
    """The digests of `items` (an iteration in key order) cut at the spans' bounds."""
    digests = [Digest() for _ in spans]
    n = 0
    for key, value in items:
        while spans[n][1] is not None and key >= spans[n][1]:
            n += 1
        digests[n].add(key, value)
    return [d.result() for d in digests]


def spark_digests(df):
    """The digest of each Spark partition's rows, computed on the executors from the
    Arrow batches, in partition order."""
    def digest(batches):
        import hashlib

        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        hashes = [hashlib.sha256() for _ in range(4)]
        rows = 0
        for batch in batches:
            rows += batch.num_rows
            for n, column in enumerate((batch.column("key"), batch.column("value"))):
                column = column.cast(pa.large_binary())
                lengths = pc.binary_length(column).to_numpy(zero_copy_only=False)
                hashes[2 * n + 1].update(lengths.astype("<i4").tobytes())
                if len(column):
                    offsets = np.frombuffer(column.buffers()[1], dtype="<i8")
                    lo, hi = offsets[column.offset], offsets[column.offset + len(column)]
                    hashes[2 * n].update(memoryview(column.buffers()[2])[lo:hi])
        text = "".join(hashes[i].hexdigest() for i in (0, 1, 2, 3))
        yield pa.RecordBatch.from_pydict({
            "partition": [TaskContext.get().partitionId()],
            "rows": [rows],
            "digest": [hashlib.sha256(text.encode()).hexdigest()],
        }, schema=pa.schema([("partition", pa.int32()), ("rows", pa.int64()),
                             ("digest", pa.string())]))

    got = df.mapInArrow(digest, "partition int, rows long, digest string").collect()
    return [(r.rows, r.digest) for r in sorted(got, key=lambda r: r.partition)]
