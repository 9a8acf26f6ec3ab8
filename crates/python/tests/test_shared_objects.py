"""One iterator or table builder used from several Python threads at once: while one
thread reads or writes with the GIL released, holding the object, another that calls it
waits without the GIL, so neither waits for the other forever."""

import subprocess
import sys
import textwrap

import leveltable


def run_within(seconds, script):
    """Runs `script` in a fresh interpreter; fails (instead of hanging) past `seconds`."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                              capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {seconds} s: the threads deadlocked")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_threads_sharing_one_iterator_each_get_entries_once(tmp_path):
    path = tmp_path / "db"
    items = [(b"k%07d" % i, b"v" * 50) for i in range(100_000)]
    leveltable.build_db(str(path), iter(items), max_file_size=256 << 10)
    out = run_within(60, f"""
        import threading, leveltable
        db = leveltable.Db({str(path)!r})
        for make in (db.items, db.keys, lambda: db.iterator(reverse=True)):
            it = make()
            got = [[], [], []]
            def take(j):
                for entry in it:
                    got[j].append(entry)
            threads = [threading.Thread(target=take, args=(j,)) for j in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(len(got[0]) + len(got[1]) + len(got[2]), len(set(got[0] + got[1] + got[2])))
    """)
    assert out.splitlines() == [f"{len(items)} {len(items)}"] * 3


def test_a_builder_abandoned_while_another_thread_adds_to_it(tmp_path):
    out = run_within(60, f"""
        import threading, leveltable
        for round in range(20):
            path = {str(tmp_path)!r} + "/t%d.ldb" % round
            builder = leveltable.TableBuilder(path)
            outcome = []
            def add():
                try:
                    for i in range(300_000):
                        builder.add(b"k%08d" % i, b"v" * 100)
                    outcome.append("added all")
                except leveltable.ClosedError:
                    outcome.append("closed")
            adder = threading.Thread(target=add)
            adder.start()
            while adder.is_alive() and not outcome:
                builder.abandon()
                break
            adder.join()
            builder.abandon()
            print(outcome[0])
    """)
    lines = out.splitlines()
    assert set(lines) <= {"closed", "added all"}
    assert len(lines) == 20
