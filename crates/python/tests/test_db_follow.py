"""Following a database another handle writes: Db.refresh() brings the view up to date and
keeps it a prefix of the writer's history; Db.follow() yields each committed batch once, in
order, with the GIL released while it waits."""

import sys
import threading
import time

import pytest

import leveltable


def _writer(path):
    return leveltable.Db(path, writable=True, create_if_missing=True, write_buffer_size=32 << 10)


def _batch(i):
    """Batch i: one to four puts and deletes over 500 keys."""
    ops = []
    for j in range(1 + i % 4):
        key = b"key%05d" % ((i * 7 + j * 13) % 500)
        value = None if (i + j) % 5 == 0 else b"value %d %d " % (i, j) + b"x" * (i % 300)
        ops.append((key, value))
    return ops


def _write(db, ops):
    with db.write_batch() as batch:
        for key, value in ops:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)


def _apply(state, ops):
    for key, value in ops:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value


def test_refresh_sees_each_prefix_of_the_writers_batches(tmp_path):
    path = tmp_path / "db"
    writer = _writer(path)
    writer.put(b"before", b"the reader")
    reader = leveltable.Db(path)
    assert reader.refresh() is False
    batches = [_batch(i) for i in range(1500)]
    states = [{b"before": b"the reader"}]
    for ops in batches:
        state = dict(states[-1])
        _apply(state, ops)
        states.append(state)
    done = threading.Event()

    def write():
        for i, ops in enumerate(batches):
            _write(writer, ops)
            if i % 50 == 0:
                time.sleep(0.001)
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    seen = 0
    changed = 0
    while True:
        finished = done.is_set()
        changed += reader.refresh()
        view = dict(reader)
        # The view is the writer's state after some prefix, never an earlier one.
        prefix = next((k for k in range(seen, len(states)) if states[k] == view), None)
        assert prefix is not None, "the view is no prefix of the writer's history at or after %d" % seen
        seen = prefix
        if finished:
            break
    thread.join()
    assert seen == len(batches)
    assert changed >= 1
    writer.close()


def test_a_snapshot_keeps_its_view_across_a_refresh(tmp_path):
    path = tmp_path / "db"
    writer = _writer(path)
    writer.put(b"a", b"1")
    reader = leveltable.Db(path)
    snapshot = reader.snapshot()
    it = reader.iterator()
    writer.put(b"a", b"2")
    writer.put(b"b", b"3")
    assert reader.refresh() is True
    assert reader.get(b"a") == b"2" and reader.get(b"b") == b"3"
    assert snapshot.get(b"a") == b"1" and snapshot.get(b"b") is None
    assert list(it) == [(b"a", b"1")]
    writer.close()


def test_refresh_refuses_a_writable_database(tmp_path):
    with _writer(tmp_path / "db") as db:
        with pytest.raises(leveltable.Error, match="read-only"):
            db.refresh()


def test_follow_yields_every_batch_once_in_order(tmp_path):
    path = tmp_path / "db"
    writer = _writer(path)
    writer.put(b"before", b"the follower")
    reader = leveltable.Db(path)
    feed = reader.follow(poll_ms=1)
    start = feed.next_seq
    batches = [_batch(i) for i in range(800)]
    # The writer waits for the feed every 20 batches: a log lives for many more, so the feed
    # opens each before the writer deletes it, however slowly either thread is scheduled.
    taken = threading.Condition()
    count = [0]

    def write():
        for i, ops in enumerate(batches):
            if i % 20 == 0:
                with taken:
                    taken.wait_for(lambda: count[0] >= i, timeout=60)
            _write(writer, ops)

    thread = threading.Thread(target=write)
    thread.start()
    got = []
    for change in feed:
        got.append(change)
        with taken:
            count[0] = len(got)
            taken.notify_all()
        if len(got) == len(batches):
            break
    thread.join()
    seq = start
    for change, ops in zip(got, batches):
        assert change["seq"] == seq
        assert change["ops"] == [("del", k, None) if v is None else ("put", k, v) for k, v in ops]
        seq += len(ops)
    assert feed.next_seq == seq
    writer.close()


def test_follow_releases_the_gil_while_it_waits(tmp_path):
    path = tmp_path / "db"
    writer = _writer(path)
    writer.put(b"a", b"1")
    feed = leveltable.Db(path).follow(poll_ms=5)
    got = []
    thread = threading.Thread(target=lambda: got.append(next(feed)))
    thread.start()
    # While the follower waits, this thread runs Python.
    ticks = 0
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        ticks += 1
    assert ticks > 1000
    writer.put(b"b", b"2")
    thread.join(timeout=10)
    assert got == [{"seq": 2, "ops": [("put", b"b", b"2")]}]
    writer.close()


def test_a_start_no_log_holds_raises_a_gap(tmp_path):
    path = tmp_path / "db"
    with _writer(path) as writer:
        for i in range(200):
            writer.put(b"k%03d" % i, b"v" * 1000)
        writer.compact_range()
    with _writer(path) as writer:
        writer.put(b"after", b"reopen")
    feed = leveltable.Db(path).follow(from_seq=1)
    with pytest.raises(leveltable.FollowGapError) as e:
        next(feed)
    message, first, last = e.value.args
    assert first == 1 and last >= 200
    assert "no log" in message


def test_follow_waits_on_the_directory_or_polls_with_poll_only(tmp_path):
    path = tmp_path / "db"
    writer = _writer(path)
    writer.put(b"a", b"1")
    reader = leveltable.Db(path)
    watching = reader.follow(poll_ms=60000)
    polling = reader.follow(poll_ms=2, poll_only=True)
    got = []
    thread = threading.Thread(target=lambda: got.append((next(watching), next(polling))))
    thread.start()
    writer.put(b"b", b"2")
    thread.join(timeout=60)
    change = {"seq": 2, "ops": [("put", b"b", b"2")]}
    assert got == [(change, change)]
    assert watching.watches_directory == sys.platform.startswith("linux")
    assert not polling.watches_directory
    writer.close()
