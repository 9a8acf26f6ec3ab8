"""Times `leveltable chromium indexeddb DIR --dump` against dfindexeddb's parse of the same
IndexedDB directory (`dfindexeddb db -s DIR -f chromium -o jsonl`) and prints the ratio.

    python3 bench.py DIR [--leveltable PATH] [--dfindexeddb PATH] [--runs N]

DIR is a `*.indexeddb.leveldb` directory (make_data.sh writes one with headless Chromium);
dfindexeddb also wants the `*.indexeddb.blob` directory beside it. Each tool's output goes to
a temporary file; the best of --runs wall-clock times counts. Prints one line per tool
(seconds, lines printed, records whose value did not decode) and the ratio.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def run(cmd, runs):
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "out")
        err_path = os.path.join(tmp, "err")
        for _ in range(runs):
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                start = time.perf_counter()
                rc = subprocess.run(cmd, stdout=out, stderr=err, check=False).returncode
                elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        with open(out_path, "rb") as f:
            lines = sum(1 for _ in f)
        with open(err_path, "rb") as f:
            err = f.read()
        with open(out_path, "rb") as f:
            undecoded = sum(1 for line in f if b'"error"' in line)
    # dfindexeddb reports a record it cannot parse on standard error.
    undecoded += err.count(b"Error parsing Indexeddb record")
    return best, rc, lines, undecoded


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument(
        "--leveltable",
        default=os.path.join(here, "..", "..", "..", "target", "release", "leveltable"),
    )
    p.add_argument("--dfindexeddb", default="dfindexeddb")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    ours = run([a.leveltable, "chromium", "indexeddb", a.dir, "--dump"], a.runs)
    theirs = run([a.dfindexeddb, "db", "-s", a.dir, "-f", "chromium", "-o", "jsonl"], a.runs)
    for name, (secs, rc, lines, undecoded) in [("leveltable", ours), ("dfindexeddb", theirs)]:
        print(f"{name:12} {secs:8.3f} s  exit {rc}  {lines} lines  {undecoded} records undecoded")
    print(f"dfindexeddb / leveltable: {theirs[0] / ours[0]:.1f}x")
    return 0 if ours[1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
