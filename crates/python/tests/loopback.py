"""A server the tests start on a loopback port: a free port, the wait for the server to
listen, and the skip (or, under LEVELTABLE_REQUIRE_SERVERS=1, the failure) when it is not
installed."""

import os
import socket
import time

import pytest


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable(message):
    """Skips the test for want of a server, or fails it under LEVELTABLE_REQUIRE_SERVERS=1."""
    if os.environ.get("LEVELTABLE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{message} and LEVELTABLE_REQUIRE_SERVERS=1")
    pytest.skip(message)


def wait_listening(process, port, what, seconds=60):
    """Waits until `process` (the server `what`) accepts connections on `port`; fails if it
    exits first or does not listen within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, f"{what} exited at start"
            assert time.monotonic() < deadline, f"{what} did not listen within {seconds} s"
            time.sleep(0.05)
