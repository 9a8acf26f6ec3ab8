"""leveltable.plyvel against plyvel (LevelDB's C++ through Cython), the same script on both,
in one process pinned to one CPU, interleaved round by round, best of the rounds.

    python crates/python/bench/bench_plyvel.py [--entries 200000] [--rounds 3] [--cpu N]
        [--scans 3] [--cli target/release/leveltable] [--scan-only]
        [--workloads put "write_batch put" get "iterator()"]

Workloads, each on a database open for writing (`DB(path, create_if_missing=True)`):
puts (one call each), write batches of 1,000 puts, point gets of present keys, a full
iteration with `iterator()`, and `scan_arrow()` read into a pyarrow Table (leveltable only)
against plyvel's iteration into two Python lists. Prints per-operation times, the ratio of
leveltable.plyvel's time to plyvel's in wall time and in the process's CPU time (every
thread, background work included), and the targets: puts, batches, gets and iteration
each at most 0.90x plyvel's time; scan_arrow at least 10x plyvel's entries per second.
Beside the best of the rounds, the median of the rounds' ratios (each round runs both sides
back to back, each going first in every other round): a measure other work on the machine
moves less than the two bests, which can come from different moments.
With --cli, also `leveltable db dump DIR > /dev/null` over the same database (the process
and its open included, as a shell user runs it), and scan_arrow's entries per second as a
ratio of the dump's: at least 0.5x. `--scan-only` runs only these scan rows, over a
database plyvel's write batches made; `--workloads` only the rows named (and the write
batches, whose database the reads read).

The scan rows are timed in wall time and in the process's CPU time (`time.process_time`,
every thread), each the best of the scans of a round, with the best and the spread over the
rounds: on a machine other work is loading, CPU time moves less. The pyarrow Table is read
with `RecordBatchReader.from_stream(...).read_all()`: `pyarrow.table()` imports pandas on
its first call (some 0.4 s, once per process), which is no part of a scan.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

# pyarrow imports numpy, whose OpenBLAS starts a thread per core that spins for a while
# after it is loaded: in a process pinned to one CPU, those threads take that CPU from the
# rows being timed (some 4% of a scan's samples). One thread spins none.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import plyvel  # noqa: E402

from leveltable import plyvel as lt_plyvel  # noqa: E402
from machine_info import cpu_model  # noqa: E402

try:
    import pyarrow  # noqa: E402
except ImportError:
    pyarrow = None

KEY = b"key-%012d"
WORKLOADS = ("put", "write_batch put", "get", "iterator()")
VALUE = b"v" * 100


def pin(cpu):
    if not hasattr(os, "sched_setaffinity"):
        print("os.sched_setaffinity is unavailable: run under taskset -c 0")
        return
    cpu = min(os.sched_getaffinity(0)) if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    print(f"pinned to CPU {cpu}")


def timed(run):
    """The wall time and the process's CPU time (every thread) of `run()`, and its result."""
    t, c = time.perf_counter(), time.process_time()
    result = run()
    return (time.perf_counter() - t, time.process_time() - c), result


def per_entry(seconds, n):
    return tuple(s / n for s in seconds)


def puts(module, path, n):
    db = module.DB(path, create_if_missing=True)

    def run():
        for i in range(n):
            db.put(KEY % i, VALUE)

    seconds, _ = timed(run)
    db.close()
    return per_entry(seconds, n)


def batches(module, path, n):
    db = module.DB(path, create_if_missing=True)

    def run():
        for start in range(0, n, 1000):
            with db.write_batch() as wb:
                for i in range(start, min(n, start + 1000)):
                    wb.put(KEY % i, VALUE)

    seconds, _ = timed(run)
    db.close()
    return per_entry(seconds, n)


def gets(module, path, keys):
    db = module.DB(path)
    get = db.get
    for key in keys[:1000]:
        get(key)

    def run():
        for key in keys:
            get(key)

    seconds, _ = timed(run)
    db.close()
    return per_entry(seconds, len(keys))


def iteration(module, path, n):
    db = module.DB(path)

    def run():
        count = 0
        for _ in db.iterator():
            count += 1
        return count

    seconds, count = timed(run)
    db.close()
    assert count == n, (count, n)
    return per_entry(seconds, n)


def to_lists(path, n):
    db = plyvel.DB(path)

    def run():
        keys, values = [], []
        for k, v in db.iterator():
            keys.append(k)
            values.append(v)
        return len(keys)

    seconds, count = timed(run)
    db.close()
    assert count == n, (count, n)
    return tuple(s / n for s in seconds)


def arrow(path, n):
    db = lt_plyvel.DB(path)
    seconds, table = timed(
        lambda: pyarrow.RecordBatchReader.from_stream(db.scan_arrow()).read_all()
    )
    db.close()
    assert table.num_rows == n, (table.num_rows, n)
    return tuple(s / n for s in seconds)


def dump(cli, path, n):
    """`leveltable db dump path` into /dev/null, pinned as this process is; its CPU time
    is the child's (`os.times`)."""
    before = os.times()
    t = time.perf_counter()
    subprocess.run([cli, "db", "dump", path], stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall / n, cpu / n


def make_db(path, n):
    """A database of `n` entries written by plyvel's write batches, closed."""
    db = plyvel.DB(path, create_if_missing=True)
    for start in range(0, n, 1000):
        with db.write_batch() as wb:
            for i in range(start, min(n, start + 1000)):
                wb.put(KEY % i, VALUE)
    db.close()


def scan_rows(scans, cli, path, n):
    """One round of the scan rows: the best (wall, CPU) per entry of each, over `scans`."""
    rows = {}

    def keep(name, seconds):
        old = rows.get(name, (float("inf"), float("inf")))
        rows[name] = (min(old[0], seconds[0]), min(old[1], seconds[1]))

    # The first of a database's opens may share the CPU with the compaction it starts
    # (four level-0 tables): each row is the best of its scans.
    for _ in range(scans):
        keep("plyvel into lists", to_lists(path, n))
        if pyarrow is not None:
            keep("scan_arrow", arrow(path, n))
        if cli:
            keep("db dump", dump(cli, path, n))
    return rows


def report_scans(rounds, n):
    """Prints the scan rows: per entry, best and spread over the rounds, and the ratios."""
    if not rounds:
        return
    names = [name for name in ("plyvel into lists", "scan_arrow", "db dump") if name in rounds[0]]
    print(f"scans of {n} entries, best of each round's scans, {len(rounds)} rounds:")
    print(f"{'':<18} {'wall ns/entry (best, spread)':>30} {'CPU ns/entry (best, spread)':>30}")
    best = {}
    for name in names:
        cells = []
        for kind in (0, 1):
            values = [r[name][kind] for r in rounds]
            lo, hi = min(values), max(values)
            best[name, kind] = lo
            cells.append(f"{lo * 1e9:>6.0f} ({1 / lo / 1e6:5.2f} M/s) {lo * 1e9:>4.0f}-{hi * 1e9:<4.0f}")
        print(f"{name:<18} {cells[0]:>30} {cells[1]:>30}")
    for kind, label in ((0, "wall"), (1, "CPU")):
        if ("scan_arrow", kind) in best:
            ratio = best["plyvel into lists", kind] / best["scan_arrow", kind]
            verdict = "met" if ratio >= 10 else "missed"
            print(f"  {label}: scan_arrow {ratio:.1f}x plyvel into lists' entries/s"
                  f"  >= 10x: {verdict}")
        if ("db dump", kind) in best and ("scan_arrow", kind) in best:
            ratio = best["db dump", kind] / best["scan_arrow", kind]
            verdict = "met" if ratio >= 0.5 else "missed"
            print(f"  {label}: scan_arrow {ratio:.1f}x the CLI's db dump entries/s"
                  f"  >= 0.5x: {verdict}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int)
    parser.add_argument("--scans", type=int, default=3, help="scans per round (best kept)")
    parser.add_argument("--cli", help="the leveltable command, to time `db dump` beside scan_arrow")
    parser.add_argument("--scan-only", action="store_true", help="only the scan rows")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=WORKLOADS,
        help="only these rows (the write batches always run: the reads read their database)",
    )
    args = parser.parse_args()
    pin(args.cpu)
    n = args.entries
    work = tempfile.mkdtemp(prefix="bench-plyvel-")
    keys = [KEY % i for i in range(n)]
    random.Random(1).shuffle(keys)
    best = {}
    # Each round's wall times, for the ratio of the two sides within a round.
    by_round = {}
    scan_rounds = []

    def record(name, seconds):
        old = best.get(name, seconds)
        best[name] = (min(old[0], seconds[0]), min(old[1], seconds[1]))
        by_round.setdefault(name, []).append(seconds[0])

    workloads = [w for w in WORKLOADS if args.workloads is None or w in args.workloads]
    try:
        if args.scan_only:
            scanned = os.path.join(work, "scanned")
            make_db(scanned, n)
            for _ in range(args.rounds):
                scan_rounds.append(scan_rows(args.scans, args.cli, scanned, n))
        sides = (("plyvel", plyvel), ("leveltable", lt_plyvel))
        for round_ in range(0 if args.scan_only else args.rounds):
            # Each side goes first in every other round: neither always follows the
            # other's writeback.
            for label, module in sides if round_ % 2 == 0 else sides[::-1]:
                put_dir = os.path.join(work, label + "-puts")
                batch_dir = os.path.join(work, label + "-batches")
                for d in (put_dir, batch_dir):
                    shutil.rmtree(d, ignore_errors=True)
                if "put" in workloads:
                    record((label, "put"), puts(module, put_dir, n))
                record((label, "write_batch put"), batches(module, batch_dir, n))
                # Reads of the database the batches wrote, closed and reopened.
                if "get" in workloads:
                    record((label, "get"), gets(module, batch_dir, keys))
                if "iterator()" in workloads:
                    record((label, "iterator()"), iteration(module, batch_dir, n))
            # The scans, of the database leveltable's batches wrote.
            if args.workloads is None:
                scan_rounds.append(
                    scan_rows(args.scans, args.cli, os.path.join(work, "leveltable-batches"), n)
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"CPU: {cpu_model()}; load average {os.getloadavg()[0]:.2f}")
    print(f"{n} entries, 16-byte keys, 100-byte values")
    if best:
        print(f"best of {args.rounds} rounds, per operation; wall time, then the process's CPU "
              "time (every thread); then the median over the rounds of each round's wall-time "
              "ratio:")
        print(f"{'workload':<18} {'plyvel':>12} {'leveltable':>12} {'ratio':>7}  target"
              f"   {'plyvel':>12} {'leveltable':>12} {'ratio':>7}  {'median':>7}")
    for workload in workloads if best else ():
        p, lt = best["plyvel", workload], best["leveltable", workload]
        verdict = "met" if lt[0] <= 0.9 * p[0] else "missed"
        paired = statistics.median(
            mine / theirs
            for mine, theirs in zip(by_round["leveltable", workload], by_round["plyvel", workload])
        )
        print(f"{workload:<18} {p[0] * 1e9:>9.0f} ns {lt[0] * 1e9:>9.0f} ns "
              f"{lt[0] / p[0]:>6.2f}x  <= 0.90x: {verdict:<6}  CPU: {p[1] * 1e9:>9.0f} ns "
              f"{lt[1] * 1e9:>9.0f} ns {lt[1] / p[1]:>6.2f}x  {paired:>6.2f}x")
    report_scans(scan_rounds, n)


if __name__ == "__main__":
    main()
