"""Random programs of plyvel calls, run through plyvel (LevelDB 1.23's C++) and through
leveltable.plyvel on fresh databases side by side: every call must give the same result or
raise the same exception, for every option of ``iterator`` and ``raw_iterator``, iterators'
moves, snapshots, prefixed databases, write batches (as transactions too), range
compactions and reopening."""

import random

import pytest

from leveltable import plyvel as lt_plyvel

plyvel = pytest.importorskip("plyvel")

PROGRAMS = 40
CALLS = 400
# Few keys, sharing prefixes, so that ranges, prefixes and seeks land on, between and
# beside them.
KEYS = [b"", b"a", b"a\x00", b"a\xff", b"ab", b"abc", b"b", b"ba", b"bb", b"c", b"\xff", b"\xff\xff"]
PREFIXES = [b"", b"a", b"ab", b"b", b"c", b"d", b"\xff"]


def outcome(call):
    """What ``call()`` returned, or the name of what it raised (plyvel's own exceptions by
    their name, so either module's count as the same)."""
    try:
        return ("ok", call())
    except StopIteration:
        return ("stop",)
    except Exception as e:  # noqa: BLE001 - the exception's kind is the result
        return ("raised", type(e).__name__)


class Program:
    """One random program: a list of calls, each a name and a function of the module and
    the program's state (open database, snapshots, iterators), made once and replayed on
    each module."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def key(self):
        rng = self.rng
        return rng.choice(KEYS) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(rng.randrange(4)))

    def maybe_key(self):
        return None if self.rng.random() < 0.3 else self.key()

    def value(self):
        return b"v%d" % self.rng.randrange(1000) * self.rng.choice([1, 1, 1, 50])

    def iterator_options(self):
        rng = self.rng
        options = {}
        for name in ["reverse", "include_start", "include_stop", "include_key", "include_value"]:
            if rng.random() < 0.4:
                options[name] = rng.random() < 0.5
        if rng.random() < 0.3:
            options["prefix"] = rng.choice(PREFIXES)
        # plyvel refuses a prefix with a start or stop: sometimes ask for that too.
        if "prefix" not in options or rng.random() < 0.1:
            for name in ["start", "stop"]:
                if rng.random() < 0.5:
                    options[name] = self.key()
        return options

    def calls(self):
        """Yields ``(description, function(state) -> result)``, and for an iterator's calls a
        third: a function of plyvel's result and ours that says whether they differ only
        by plyvel's range mistakes."""
        rng = self.rng
        for _ in range(CALLS):
            which = rng.random()
            target = rng.choice(["db", "db", "db", "prefixed", "snapshot"])
            prefix = rng.choice(PREFIXES[1:])
            if which < 0.25:
                k, v = self.key(), self.value()
                yield f"put {k!r}", lambda s, k=k, v=v, t=target, p=prefix: s.writer(t, p).put(k, v)
            elif which < 0.35:
                k = self.key()
                yield f"delete {k!r}", lambda s, k=k, t=target, p=prefix: s.writer(t, p).delete(k)
            elif which < 0.45:
                k = self.key()
                yield f"get {k!r} on {target}", lambda s, k=k, t=target, p=prefix: s.reader(t, p).get(k, b"default")
            elif which < 0.55:
                ops = [(rng.random() < 0.7, self.key(), self.value()) for _ in range(rng.randrange(6))]
                transaction = rng.random() < 0.5
                fail = rng.random() < 0.3
                yield (
                    f"write_batch {ops!r} transaction={transaction} fail={fail}",
                    lambda s, o=ops, tr=transaction, f=fail, t=target, p=prefix: s.batch(t, p, o, tr, f),
                )
            elif which < 0.70:
                options = self.iterator_options()
                yield (
                    f"list(iterator({options!r})) on {target}",
                    lambda s, o=options, t=target, p=prefix: s.listing(t, p, o),
                    lambda a, b, o=options, t=target, p=prefix: listing_errs(a, b, o, db_prefix(t, p)),
                )
            elif which < 0.80:
                options = self.iterator_options()
                moves = [rng.choice(["next", "prev", "seek", "seek_to_start", "seek_to_stop"]) for _ in range(8)]
                keys = [self.key() for _ in moves]
                yield (
                    f"iterator({options!r}) moves {moves} {keys}",
                    lambda s, o=options, m=moves, ks=keys, t=target, p=prefix: s.moves(t, p, o, m, ks),
                    lambda a, b, o=options, t=target, p=prefix, m=moves, ks=keys: moves_errs(
                        a, b, o, db_prefix(t, p), m, ks
                    ),
                )
            elif which < 0.88:
                moves = [rng.choice(["next", "prev", "seek", "seek_to_first", "seek_to_last", "key", "value", "item", "valid"]) for _ in range(10)]
                keys = [self.key() for _ in moves]
                yield (
                    f"raw_iterator moves {moves} {keys}",
                    lambda s, m=moves, ks=keys, t=target, p=prefix: s.raw_moves(t, p, m, ks),
                )
            elif which < 0.93:
                yield "snapshot", lambda s: s.take_snapshot()
            elif which < 0.96:
                start, stop = self.maybe_key(), self.maybe_key()
                yield f"compact_range({start!r}, {stop!r})", lambda s, a=start, b=stop: s.db.compact_range(start=a, stop=b)
            else:
                yield "reopen", lambda s: s.reopen()


def increment(prefix):
    """The least key above every key that starts with ``prefix`` (plyvel's
    ``bytes_increment``), ``None`` for all-0xff."""
    trimmed = prefix.rstrip(b"\xff")
    return trimmed[:-1] + bytes([trimmed[-1] + 1]) if trimmed else None


def whole_options(options, db_prefix):
    """``options`` of an iterator of a database prefixed by ``db_prefix``, as the options of
    the whole database's iterator over the same range, yielding keys and values."""
    options = dict(options, include_key=True, include_value=True)
    if not db_prefix:
        return options
    if "prefix" in options:
        options["prefix"] = db_prefix + options["prefix"]
        return options
    if options.get("start") is None:
        options["start"], options["include_start"] = db_prefix, True
    else:
        options["start"] = db_prefix + options["start"]
    if options.get("stop") is None:
        options["stop"], options["include_stop"] = increment(db_prefix), False
    else:
        options["stop"] = db_prefix + options["stop"]
    return options


def bounds(options):
    """The iterator's range over whole keys: ``(low, low included, high, high included)``."""
    if options.get("prefix") is not None:
        return options["prefix"], True, increment(options["prefix"]), False
    return (
        options.get("start"),
        options.get("include_start", True),
        options.get("stop"),
        options.get("include_stop", False),
    )


def outside(key, options):
    """Whether ``key`` is outside the range of an iterator made with ``options``."""
    low, low_in, high, high_in = bounds(options)
    if low is not None and (key < low or (key == low and not low_in)):
        return True
    return high is not None and (key > high or (key == high and not high_in))


def yielded_key(result):
    """The key of the entry a move yielded, or None where it yielded none (a seek, an end,
    an exception)."""
    if result[0] == "ok" and isinstance(result[1], tuple):
        return result[1][0]
    return None


def is_low(key, options):
    """Whether ``key`` is the first key of the range, included."""
    low, low_in, _, _ = bounds(options)
    return low_in and key == low


def moves_errs(theirs, ours, options, db_prefix, moves, keys):
    """Whether the first difference of two runs of one iterator's moves is one of plyvel
    1.5's range mistakes, which leveltable.plyvel does not make:

    - a step yields an entry outside the range: a step back from a seek checks no bound,
      and a seek to an excluded start, or clamped to it, yields the start;
    - a step back from past the end that finds just the range's first key, included, stops;
    - a seek past an included stop is clamped to the stop: the next step yields the stop
      key (before the target), a step back skips it.

    Each run is ``(outcomes, witness)``: the witness made the same moves over the whole
    database with keys shown."""
    (their_seen, their_keys), (our_seen, our_keys) = theirs, ours
    options = whole_options(options, db_prefix)
    _, _, high, high_in = bounds(options)
    past_stop = False
    for i, step in enumerate(zip(their_seen, our_seen, their_keys, our_keys)):
        if step[0] == step[1] and step[2] == step[3]:
            if moves[i] == "seek":
                target = db_prefix + keys[i]
                past_stop = high is not None and high_in and target > high
            elif moves[i] in ("seek_to_start", "seek_to_stop"):
                past_stop = False
            continue
        if their_keys[i] == our_keys[i]:
            return False
        theirs_key, ours_key = yielded_key(their_keys[i]), yielded_key(our_keys[i])
        if ours_key is not None and outside(ours_key, options):
            return False
        yielded_outside = theirs_key is not None and outside(theirs_key, options)
        first_missed = theirs_key is None and ours_key is not None and is_low(ours_key, options)
        clamped = past_stop and high in (theirs_key, ours_key)
        # After any of them the two iterators stand in different places: the rest of the
        # moves are not compared.
        return yielded_outside or first_missed or clamped
    return False


def listing_errs(theirs, ours, options, db_prefix):
    """Whether two listings of one iterator differ by plyvel's second mistake: reversed, the
    range holds just its first key, included, and plyvel yields nothing."""
    options = whole_options(options, db_prefix)
    return (
        options.get("reverse", False)
        and theirs == ([], [])
        and len(ours[1]) == 1
        and is_low(ours[1][0][0], options)
    )


def db_prefix(target, prefix):
    """The prefix of the keys the calls on ``target`` see."""
    return prefix if target == "prefixed" else b""


class State:
    """A module's open database, its latest snapshot, and how calls reach them."""

    def __init__(self, module, path):
        self.module = module
        self.path = path
        self.db = module.DB(path, create_if_missing=True, write_buffer_size=4096)
        self.snapshot = None

    def reopen(self):
        if self.snapshot is not None:
            self.snapshot.close()
            self.snapshot = None
        self.db.close()
        self.db = self.module.DB(self.path)

    def take_snapshot(self):
        if self.snapshot is not None:
            self.snapshot.close()
        self.snapshot = self.db.snapshot()

    def writer(self, target, prefix):
        return self.db.prefixed_db(prefix) if target == "prefixed" else self.db

    def reader(self, target, prefix):
        if target == "snapshot" and self.snapshot is not None:
            return self.snapshot
        return self.writer(target, prefix)

    def whole(self, target, prefix):
        """The reader of ``reader(target, prefix)``'s keys, unprefixed, and its prefix."""
        if target == "prefixed":
            return self.db, prefix
        return self.reader(target, prefix), b""

    def batch(self, target, prefix, ops, transaction, fail):
        try:
            with self.writer(target, prefix).write_batch(transaction=transaction) as wb:
                for put, k, v in ops:
                    if put:
                        wb.put(k, v)
                    else:
                        wb.delete(k)
                if fail:
                    raise KeyError("abandoned")
        except KeyError:
            return "abandoned"
        return "written"

    def listing(self, target, prefix, options):
        """The entries an iterator yields, and the same range's entries over the whole
        database (keys shown)."""
        seen = list(self.reader(target, prefix).iterator(**options))
        whole, db_prefix = self.whole(target, prefix)
        return seen, list(whole.iterator(**whole_options(options, db_prefix)))

    def moves(self, target, prefix, options, moves, keys):
        """What each move of an iterator gives, and what the same moves give over the whole
        database with keys shown."""
        seen = run_moves(self.reader(target, prefix).iterator(**options), moves, keys)
        whole, db_prefix = self.whole(target, prefix)
        witness = run_moves(
            whole.iterator(**whole_options(options, db_prefix)), moves, [db_prefix + k for k in keys]
        )
        return seen, witness

    def raw_moves(self, target, prefix, moves, keys):
        """What each move or read of a raw iterator gives; ``keys`` are the seeks' targets."""
        raw = self.reader(target, prefix).raw_iterator()
        return run_moves(raw, moves, keys, lambda it: it.next())

    def close(self):
        if self.snapshot is not None:
            self.snapshot.close()
        self.db.close()


def run_moves(it, moves, keys, step=next):
    """What each move of iterator ``it`` gives; ``keys`` are the seeks' targets, ``step`` makes
    a "next" move (a raw iterator's is its method ``next``)."""
    seen = []
    for move, k in zip(moves, keys):
        if move == "seek":
            seen.append(outcome(lambda: it.seek(k)))
        elif move == "next":
            seen.append(outcome(lambda: step(it)))
        else:
            seen.append(outcome(getattr(it, move)))
    it.close()
    return seen


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_random_programs_match_plyvel(tmp_path, seed):
    theirs = State(plyvel, str(tmp_path / "plyvel"))
    ours = State(lt_plyvel, str(tmp_path / "leveltable"))
    try:
        for i, (what, call, *deliberate) in enumerate(Program(seed).calls()):
            expected = outcome(lambda: call(theirs))
            got = outcome(lambda: call(ours))
            if got != expected and expected[0] == got[0] == "ok" and deliberate:
                assert deliberate[0](expected[1], got[1]), f"call {i}: {what}: {expected} != {got}"
                continue
            assert got == expected, f"call {i}: {what}"
    finally:
        theirs.close()
        ours.close()
