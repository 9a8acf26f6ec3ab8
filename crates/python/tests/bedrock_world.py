"""Minecraft Bedrock-like worlds written by Mojang's LevelDB (amulet-leveldb), for the
differential tests and the world benchmark.

    python bedrock_world.py write DIR [--megabytes 8] [--seed 1]   # a world's db/ directory
    python bedrock_world.py scan DIR                               # amulet's full iteration, timed
    python bedrock_world.py dump DIR OUT                           # amulet's view as hex KEY<TAB>VALUE lines

Keys follow Bedrock's layout: chunk records are x and z as little-endian int32 (plus a
dimension int32 outside the overworld), a tag byte and, for sub-chunks, a signed y index;
players, actors and maps have string-prefixed keys. Values are palette-like: a random quarter
and repetitive runs, so blocks compress about as real chunks do (3-4x). The writer
overwrites and deletes as a game does, compacts once, and leaves its newest writes in the
log, unflushed.
"""

import argparse
import random
import struct
import sys
import time

SUBCHUNK = 0x2F
VERSION = 0x2C
DATA2D = 0x2D
BLOCK_ENTITY = 0x31
FINALIZED = 0x36


def chunk_key(x, z, dimension, tag, y=None):
    key = struct.pack("<ii", x, z)
    if dimension:
        key += struct.pack("<i", dimension)
    key += bytes([tag])
    if y is not None:
        key += struct.pack("b", y)
    return key


def palette_value(rng, size):
    """A sub-chunk-like value: a random quarter (light and block-state data), then runs of
    a few block ids (the palette indices)."""
    head = rng.randbytes(size // 4)
    body = bytearray()
    ids = [rng.randbytes(4) for _ in range(rng.randrange(2, 9))]
    while len(body) < size - len(head):
        body += rng.choice(ids) * rng.randrange(1, 40)
    return head + bytes(body[: size - len(head)])


def write_world(db, megabytes, seed):
    """Writes a world of about `megabytes` of values into the open amulet `db`; returns
    the number of operations."""
    rng = random.Random(seed)
    budget = megabytes << 20
    written = 0
    ops = 0
    side = 4
    chunks = []
    while written < budget:
        # Chunks are generated in square rings around the spawn, as a player explores.
        ring = [(x, z) for x in range(-side, side) for z in range(-side, side)
                if max(abs(x + 0.5), abs(z + 0.5)) > side - 1]
        side += 1
        for x, z in ring:
            dimension = 0 if rng.random() < 0.8 else rng.choice([1, 2])
            chunks.append((x, z, dimension))
            db.put(chunk_key(x, z, dimension, VERSION), b"\x28")
            db.put(chunk_key(x, z, dimension, FINALIZED), b"\x02\x00\x00\x00")
            data2d = palette_value(rng, 768)
            db.put(chunk_key(x, z, dimension, DATA2D), data2d)
            written += 768
            for y in range(-4, rng.randrange(2, 20)):
                value = palette_value(rng, rng.randrange(1500, 6000))
                db.put(chunk_key(x, z, dimension, SUBCHUNK, y), value)
                written += len(value)
                ops += 1
            if rng.random() < 0.3:
                db.put(chunk_key(x, z, dimension, BLOCK_ENTITY), palette_value(rng, 300))
            if rng.random() < 0.2:
                actor = b"actorprefix" + rng.randbytes(8)
                db.put(actor, palette_value(rng, rng.randrange(200, 900)))
                digp = b"digp" + struct.pack("<ii", x, z)
                db.put(digp, actor[len(b"actorprefix"):])
            ops += 4
            if written >= budget:
                break
        # Revisits: sub-chunks rewritten, a few chunks pruned.
        for x, z, dimension in rng.sample(chunks, min(len(chunks), 20)):
            db.put(chunk_key(x, z, dimension, SUBCHUNK, 0), palette_value(rng, 2500))
            ops += 1
        for x, z, dimension in rng.sample(chunks, min(len(chunks), 3)):
            for y in range(-4, 20):
                db.delete(chunk_key(x, z, dimension, SUBCHUNK, y))
            ops += 24
    for i in range(4):
        db.put(b"player_server_%08x-0000-4000-8000-%012x" % (i, i), palette_value(rng, 2000))
    db.put(b"~local_player", palette_value(rng, 3000))
    db.put(b"map_-%d" % rng.randrange(1 << 40), palette_value(rng, 1200))
    db.put(b"BiomeData", palette_value(rng, 400))
    db.put(b"Nether", b"nether data")
    db.delete(b"Nether")
    db.compact()
    # After the compaction, the world is played on: rewrites of half its size flush the
    # memtable into newer tables that shadow the compacted ones.
    rewritten = 0
    while rewritten < budget // 2:
        x, z, dimension = rng.choice(chunks)
        value = palette_value(rng, rng.randrange(1500, 6000))
        db.put(chunk_key(x, z, dimension, SUBCHUNK, rng.randrange(-4, 4)), value)
        rewritten += len(value)
        ops += 1
    # The newest state, left in the log.
    for x, z, dimension in rng.sample(chunks, min(len(chunks), 10)):
        db.put(chunk_key(x, z, dimension, SUBCHUNK, 1), palette_value(rng, 2000))
        db.delete(chunk_key(x, z, dimension, DATA2D))
    db.put(b"~local_player", b"moved " + palette_value(rng, 3000))
    return ops


def open_amulet(path, create=False):
    import leveldb  # amulet-leveldb

    return leveldb.LevelDB(str(path), create_if_missing=create)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir")
    w.add_argument("--megabytes", type=int, default=8)
    w.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("scan")
    s.add_argument("dir")
    d = sub.add_parser("dump")
    d.add_argument("dir")
    d.add_argument("out")
    args = parser.parse_args(argv)
    if args.command == "write":
        db = open_amulet(args.dir, create=True)
        ops = write_world(db, args.megabytes, args.seed)
        db.close(compact=False)
        print(f"wrote {ops} operations to {args.dir}")
    elif args.command == "dump":
        db = open_amulet(args.dir)
        with open(args.out, "w") as out:
            for key, value in db.items():
                out.write(f"{key.hex()}\t{value.hex()}\n")
        db.close()
    else:
        db = open_amulet(args.dir)
        start = time.perf_counter()
        entries = 0
        total = 0
        for key, value in db.items():
            entries += 1
            total += len(key) + len(value)
        elapsed = time.perf_counter() - start
        db.close()
        print(f"{entries} entries {total} bytes {elapsed:.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
