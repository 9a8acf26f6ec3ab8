"""leveltable.plyvel against plyvel (LevelDB's C++ through Cython), the same script on both,
in one process pinned to one CPU, interleaved round by round, best of the rounds.

    python crates/python/bench/bench_plyvel.py [--entries 200000] [--rounds 3] [--cpu N]
        [--scans 3] [--cli target/release/leveltable]

Workloads, each on a database open for writing (`DB(path, create_if_missing=True)`):
puts (one call each), write batches of 1,000 puts, point gets of present keys, a full
iteration with `iterator()`, and `scan_arrow()` read into a pyarrow Table (leveltable only)
against plyvel's iteration into two Python lists. Prints per-operation times, the ratio of
leveltable.plyvel's time to plyvel's, and the targets: puts, batches, gets and iteration
each at most 0.90x plyvel's time; scan_arrow at least 10x plyvel's entries per second.
With --cli, also `leveltable db dump DIR > /dev/null` over the same database (the process
and its open included, as a shell user runs it), and scan_arrow's entries per second as a
ratio of the dump's: at least 0.5x.
"""

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time

import plyvel

from leveltable import plyvel as lt_plyvel

try:
    import pyarrow
except ImportError:
    pyarrow = None

KEY = b"key-%012d"
VALUE = b"v" * 100


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it (Linux), or the platform's word."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def pin(cpu):
    if not hasattr(os, "sched_setaffinity"):
        print("os.sched_setaffinity is unavailable: run under taskset -c 0")
        return
    cpu = min(os.sched_getaffinity(0)) if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    print(f"pinned to CPU {cpu}")


def puts(module, path, n):
    db = module.DB(path, create_if_missing=True)
    t = time.perf_counter()
    for i in range(n):
        db.put(KEY % i, VALUE)
    elapsed = time.perf_counter() - t
    db.close()
    return elapsed / n


def batches(module, path, n):
    db = module.DB(path, create_if_missing=True)
    t = time.perf_counter()
    for start in range(0, n, 1000):
        with db.write_batch() as wb:
            for i in range(start, min(n, start + 1000)):
                wb.put(KEY % i, VALUE)
    elapsed = time.perf_counter() - t
    db.close()
    return elapsed / n


def gets(module, path, keys):
    db = module.DB(path)
    get = db.get
    for key in keys[:1000]:
        get(key)
    t = time.perf_counter()
    for key in keys:
        get(key)
    elapsed = time.perf_counter() - t
    db.close()
    return elapsed / len(keys)


def iteration(module, path, n):
    db = module.DB(path)
    t = time.perf_counter()
    count = 0
    for _ in db.iterator():
        count += 1
    elapsed = time.perf_counter() - t
    db.close()
    assert count == n, (count, n)
    return elapsed / n


def to_lists(path, n):
    db = plyvel.DB(path)
    t = time.perf_counter()
    keys, values = [], []
    for k, v in db.iterator():
        keys.append(k)
        values.append(v)
    elapsed = time.perf_counter() - t
    db.close()
    assert len(keys) == n
    return elapsed / n


def arrow(path, n):
    db = lt_plyvel.DB(path)
    t = time.perf_counter()
    table = pyarrow.table(db.scan_arrow())
    elapsed = time.perf_counter() - t
    db.close()
    assert table.num_rows == n
    return elapsed / n


def dump(cli, path, n):
    """`leveltable db dump path` into /dev/null, pinned as this process is."""
    t = time.perf_counter()
    subprocess.run([cli, "db", "dump", path], stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int)
    parser.add_argument("--scans", type=int, default=3, help="scans per round (best kept)")
    parser.add_argument("--cli", help="the leveltable command, to time `db dump` beside scan_arrow")
    args = parser.parse_args()
    pin(args.cpu)
    n = args.entries
    work = tempfile.mkdtemp(prefix="bench-plyvel-")
    keys = [KEY % i for i in range(n)]
    random.Random(1).shuffle(keys)
    best = {}

    def record(name, seconds):
        best[name] = min(best.get(name, seconds), seconds)

    try:
        for _ in range(args.rounds):
            for label, module in (("plyvel", plyvel), ("leveltable", lt_plyvel)):
                put_dir = os.path.join(work, label + "-puts")
                batch_dir = os.path.join(work, label + "-batches")
                for d in (put_dir, batch_dir):
                    shutil.rmtree(d, ignore_errors=True)
                record((label, "put"), puts(module, put_dir, n))
                record((label, "write_batch put"), batches(module, batch_dir, n))
                # Reads of the database the batches wrote, closed and reopened.
                record((label, "get"), gets(module, batch_dir, keys))
                record((label, "iterator()"), iteration(module, batch_dir, n))
                # The scans, each `--scans` times: the first may share the CPU with the
                # compaction the reopen started (both engines compact four level-0 tables).
                for _ in range(args.scans):
                    if label == "plyvel":
                        record(("plyvel", "into lists"), to_lists(batch_dir, n))
                    elif pyarrow is not None:
                        record(("leveltable", "scan_arrow"), arrow(batch_dir, n))
                if label == "leveltable" and args.cli:
                    record(("leveltable", "db dump"), dump(args.cli, batch_dir, n))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"CPU: {cpu_model()}; load average {os.getloadavg()[0]:.2f}")
    print(f"{n} entries, 16-byte keys, 100-byte values, best of {args.rounds} rounds")
    print(f"{'workload':<18} {'plyvel':>12} {'leveltable':>12} {'ratio':>7}  target")
    for workload in ("put", "write_batch put", "get", "iterator()"):
        p, lt = best["plyvel", workload], best["leveltable", workload]
        verdict = "met" if lt <= 0.9 * p else "missed"
        print(f"{workload:<18} {p * 1e9:>9.0f} ns {lt * 1e9:>9.0f} ns {lt / p:>6.2f}x"
              f"  <= 0.90x: {verdict}")
    if ("leveltable", "scan_arrow") in best:
        p, lt = best["plyvel", "into lists"], best["leveltable", "scan_arrow"]
        verdict = "met" if p / lt >= 10 else "missed"
        print(f"{'scan_arrow':<18} {p * 1e9:>9.0f} ns {lt * 1e9:>9.0f} ns {p / lt:>6.1f}x"
              f" entries/s vs plyvel into lists  >= 10x: {verdict}")
    if ("leveltable", "db dump") in best and ("leveltable", "scan_arrow") in best:
        d, lt = best["leveltable", "db dump"], best["leveltable", "scan_arrow"]
        verdict = "met" if d / lt >= 0.5 else "missed"
        print(f"{'db dump':<18} {d * 1e9:>9.0f} ns {lt * 1e9:>9.0f} ns {d / lt:>6.1f}x"
              f" scan_arrow's entries/s vs the CLI's db dump  >= 0.5x: {verdict}")


if __name__ == "__main__":
    main()
