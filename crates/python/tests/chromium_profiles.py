"""Chromium profiles made by headless Chromium (``chromium`` on PATH): each loads a page
from a loopback HTTP server that writes IndexedDB records and Local Storage items; once
its Local Storage database holds them (Chromium commits Local Storage seconds after the
writes), Chromium is stopped (SIGTERM)."""

import http.server
import os
import shutil
import signal
import subprocess
import threading
import time

#: IndexedDB records and Local Storage items each profile's page writes.
RECORDS = 200
ITEMS = 100


def available():
    """Whether Chromium runs here."""
    program = shutil.which("chromium")
    if not program:
        return False
    return subprocess.run([program, "--version"], capture_output=True).returncode == 0


def page(profile):
    return f"""<!doctype html><script>
(async () => {{
  const p = {profile};
  for (let i = 0; i < {ITEMS}; i++) localStorage.setItem("item " + i, "profile " + p + " \u00e9t\u00e9 " + i);
  const db = await new Promise((ok, fail) => {{
    const r = indexedDB.open("scale", 1);
    r.onupgradeneeded = () => r.result.createObjectStore("records", {{keyPath: "id"}});
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  }});
  await new Promise((ok, fail) => {{
    const tx = db.transaction("records", "readwrite");
    const store = tx.objectStore("records");
    for (let i = 0; i < {RECORDS}; i++)
      store.put({{id: i, profile: p, name: "record " + i, tags: ["a", "b" + i], score: i * 1.5}});
    tx.oncomplete = ok;
    tx.onerror = () => fail(tx.error);
  }});
  db.close();
  await fetch("/done?" + p);
}})();
</script>"""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def make_profiles(root, count, parallel=4, timeout=180):
    """Makes `count` profiles under `root` (``root/profileN``), `parallel` browsers at a
    time; returns their directories."""
    done = set()
    lock = threading.Condition()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            if path == "/done":
                with lock:
                    done.add(int(query))
                    lock.notify_all()
                body, kind = b"ok", "text/plain"
            elif path.startswith("/p/"):
                body, kind = page(int(path[3:])).encode(), "text/html; charset=utf-8"
            else:
                body, kind = b"", "text/plain"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profiles = [os.path.join(root, f"profile{n:02d}") for n in range(count)]
    try:
        for first in range(0, count, parallel):
            batch = range(first, min(count, first + parallel))
            browsers = {n: subprocess.Popen(
                ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                 "--no-first-run", f"--user-data-dir={profiles[n]}",
                 f"http://127.0.0.1:{port}/p/{n}"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL) for n in batch}
            try:
                deadline = time.monotonic() + timeout
                with lock:
                    while not all(n in done for n in batch):
                        for n, b in browsers.items():
                            assert b.poll() is None or n in done, f"chromium exited ({n})"
                        assert time.monotonic() < deadline, "chromium's page did not finish"
                        lock.wait(0.2)
                for n in batch:
                    _wait_for_local_storage(profiles[n], deadline)
                for b in browsers.values():
                    b.send_signal(signal.SIGTERM)
                for b in browsers.values():
                    b.wait(timeout=60)
            finally:
                for b in browsers.values():
                    if b.poll() is None:
                        b.kill()
                        b.wait()
    finally:
        server.shutdown()
        server.server_close()
    return profiles


def _wait_for_local_storage(profile, deadline):
    """Waits until the profile's Local Storage holds every item its page set."""
    from leveltable import chromium

    path = os.path.join(profile, "Default", "Local Storage", "leveldb")
    while True:
        try:
            items = sum(1 for r in chromium.local_storage(path)
                        if str(r.get("key", "")).startswith("item "))
        except Exception:  # not made yet, or caught between two files of a commit
            items = 0
        if items == ITEMS:
            return
        assert time.monotonic() < deadline, f"{path}: {items} of {ITEMS} items committed"
        time.sleep(0.5)
