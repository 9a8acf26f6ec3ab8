"""Reads of one LevelDB database from Python: leveltable against plyvel (LevelDB's C++
through Cython) and rleveldb (a reader with a Rust core), in the same process, interleaved
round by round, best of the rounds.

    python crates/python/bench/bench_db.py [--entries 1000000] [--rounds 5] [--cpu N]

The process pins itself to one CPU at start (`os.sched_setaffinity`; `--cpu N` chooses
which, else the lowest it may run on) before any reader or thread exists, so every reader
runs on one core and the ratios do not depend on the core count. Where
`os.sched_setaffinity` is unavailable it says so; run it under `taskset -c 0` or the
platform's equivalent.

Workloads: point gets of present keys (one call each), get_many of 1,000 keys per call
(plyvel has no batch call: its figure is the loop a user would write), and a full
iteration (rleveldb iterates raw records: every stored version, file by file). Prints the
CPU model, per-operation times and the ratios to the fastest other reader, then the
targets, each a ratio of leveltable's default reader to plyvel in the same run, with
"met" or "missed": a get at most 0.90x plyvel's get; get_many of 1,000 at most 0.50x
plyvel's get, per key; iteration at most 0.67x plyvel's, per entry.

leveltable verifies every block's checksum by default; plyvel (LevelDB's
`ReadOptions::verify_checksums`) does not, so for an uncompressed block it reads only the
cache lines its search touches, where a checksum reads all of the block. The column
"leveltable, unverified" opens the database with `verify_checksums=False`, the work plyvel
does, and its ratio is given beside the default's.
"""

import argparse
import os
import platform
import random
import shutil
import tempfile
import time

import leveltable

try:
    import plyvel
except ImportError:
    plyvel = None
try:
    import rleveldb
except ImportError:
    rleveldb = None


def cpu_model():
    """The model name with its family and model numbers ("AMD EPYC" names Zen 2 to Zen 5)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


# leveltable's default reader over plyvel, per key or entry, at most: (workload, its name,
# plyvel's workload, its name, target).
TARGETS = (
    ("get", "get", "get", "get", 0.90),
    ("get_many", "get_many of 1,000, per key", "get", "get", 0.50),
    ("scan", "iteration, per entry", "scan", "iteration", 0.67),
)


def pin_to_one_cpu(cpu):
    """Pins this process to one CPU; returns a line saying which, or why not."""
    if not hasattr(os, "sched_setaffinity"):
        return ("not pinned: os.sched_setaffinity is unavailable here; "
                "run under `taskset -c 0` (or the platform's equivalent) for one core")
    allowed = sorted(os.sched_getaffinity(0))
    if cpu is None:
        cpu = allowed[0]
    elif cpu not in allowed:
        raise SystemExit(f"--cpu {cpu}: this process may run only on CPUs {allowed}")
    os.sched_setaffinity(0, {cpu})
    return f"pinned to CPU {cpu} (of {len(allowed)} allowed): every reader runs on one core"


def verdicts(per_op):
    """The target lines from per-operation times keyed (workload, system)."""
    lines = []
    for workload, what, theirs, their_name, target in TARGETS:
        ours = per_op.get((workload, "leveltable"))
        plyvel_t = per_op.get((theirs, "plyvel"))
        if ours is None or plyvel_t is None:
            lines.append(f"target: {what} <= {target:.2f}x plyvel's {their_name}: not judged "
                         "(plyvel is not installed)")
            continue
        ratio = ours / plyvel_t
        verdict = "met" if ratio <= target else "missed"
        lines.append(f"target: {what} <= {target:.2f}x plyvel's {their_name}: {ratio:.2f}x "
                     f"({ours:.0f} ns against {plyvel_t:.0f} ns): {verdict}")
    return lines


def best(fn, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--gets", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=None,
                        help="the CPU to pin to (default: the lowest this process may use)")
    args = parser.parse_args()
    # Before any reader or thread exists: threads inherit the affinity of their creator.
    pinned = pin_to_one_cpu(args.cpu)

    work = tempfile.mkdtemp(prefix="leveltable-bench-")
    path = os.path.join(work, "db")
    rng = random.Random(1)
    keys = [b"%016d" % (i * 7) for i in range(args.entries)]
    leveltable.build_db(path, ((k, rng.randbytes(100)) for k in keys), threads=2)
    if plyvel is not None:
        # LevelDB writes a little on top (a log and a memtable), as a live database has.
        db = plyvel.DB(path, bloom_filter_bits=10)
        for k in keys[:1000]:
            db.put(k, b"updated")
        db.close()

    present = [rng.choice(keys) for _ in range(args.gets)]
    batches = [present[i : i + 1000] for i in range(0, len(present), 1000)]

    ours = leveltable.Db(path)
    unverified = leveltable.Db(path, verify_checksums=False)
    systems = {"leveltable": ours, "leveltable, unverified": unverified}
    if plyvel is not None:
        systems["plyvel"] = plyvel.DB(path, bloom_filter_bits=10, lru_cache_size=8 << 20)
    raw = rleveldb.RawLevelDb(path) if rleveldb is not None else None

    def gets(db):
        get = db.get
        for k in present:
            get(k)

    def many(db):
        if hasattr(db, "get_many"):
            for batch in batches:
                db.get_many(batch)
        else:
            get = db.get
            for batch in batches:
                [get(k) for k in batch]

    def scan(db):
        n = 0
        for _ in db:
            n += 1
        assert n == args.entries, n

    def raw_scan():
        n = sum(1 for _ in raw.iterate_records_raw())
        assert n >= args.entries, n

    results = {}
    for _ in range(args.rounds):
        for name, db in systems.items():
            for workload, fn in (("get", gets), ("get_many", many), ("scan", scan)):
                t = best(lambda: fn(db), 1)
                key = (workload, name)
                results[key] = min(results.get(key, t), t)
        if raw is not None:
            t = best(raw_scan, 1)
            results[("scan", "rleveldb")] = min(results.get(("scan", "rleveldb"), t), t)

    print(f"CPU: {cpu_model()}; Python {platform.python_version()}; "
          f"{args.entries} entries, {args.gets} gets, best of {args.rounds} rounds, interleaved")
    print(pinned)
    names = ("leveltable", "leveltable, unverified", "plyvel", "rleveldb")
    ours_names = names[:2]
    print("| workload | " + " | ".join(names) + " | ratio to fastest other | unverified: ratio |")
    print("|---|" + "--:|" * (len(names) + 2))
    per = {"get": args.gets, "get_many": args.gets, "scan": args.entries}
    per_op = {key: t / per[key[0]] * 1e9 for key, t in results.items()}
    for workload in ("get", "get_many", "scan"):
        row = {name: per_op.get((workload, name)) for name in names}
        others = [v for k, v in row.items() if k not in ours_names and v is not None]
        ratios = [f"{row[n] / min(others):.2f}x" if others else "-" for n in ours_names]
        cells = ["-" if v is None else f"{v:.0f} ns" for v in row.values()]
        print(f"| {workload} (per entry) | " + " | ".join(cells + ratios) + " |")
    print()
    for line in verdicts(per_op):
        print(line)
    ours.close()
    unverified.close()
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
