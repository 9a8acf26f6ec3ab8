"""An S3 server (moto's, ``MOTO_SERVER`` or ``moto_server`` on PATH) on a loopback port for
the object store tests, and uploads to it without a client library. Without moto the tests
that need it skip, or fail under LEVELTABLE_REQUIRE_SERVERS=1."""

import contextlib
import os
import shutil
import subprocess
import urllib.request

from loopback import free_port, unavailable, wait_listening

BUCKET = "leveltable"
ACCESS_KEY = "AKIDLEVELTABLETEST"
SECRET_KEY = "levelTableSecretKeyDoNotPrint0123456789"

#: moto checks no signature, but wants to see whose request it is (an unsigned DELETE is
#: refused).
AUTHORIZATION = (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20240101/us-east-1/s3/aws4_request, "
                 "SignedHeaders=host, Signature=0")


@contextlib.contextmanager
def server():
    """Starts moto on a free loopback port, makes the bucket, yields the endpoint URL and
    stops the server."""
    program = os.environ.get("MOTO_SERVER") or shutil.which("moto_server")
    if not program:
        unavailable('moto_server missing (pip install "moto[server]")')
    port = free_port()
    process = subprocess.Popen([program, "-H", "127.0.0.1", "-p", str(port)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_listening(process, port, "moto_server")
        request(endpoint, "PUT", f"/{BUCKET}")
        yield endpoint
    finally:
        process.kill()
        process.wait()


def request(endpoint, method, path, data=None):
    req = urllib.request.Request(endpoint + path, data=data, method=method, headers={
        "Authorization": AUTHORIZATION, "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req) as r:
        assert r.status in (200, 204), (method, path, r.status)


def upload(endpoint, directory, prefix):
    """The database in `directory` under `prefix` (every file but LOCK and LOG), `CURRENT`
    last; returns the URL and the uploaded files' sizes."""
    names = sorted(n for n in os.listdir(directory)
                   if n not in ("LOCK", "CURRENT") and not n.startswith("LOG"))
    sizes = {}
    for name in names + ["CURRENT"]:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        request(endpoint, "PUT", f"/{BUCKET}/{prefix}/{name}", data)
        sizes[name] = len(data)
    return f"s3://{BUCKET}/{prefix}", sizes


def store_options(endpoint):
    """The data source's options for the server at `endpoint`."""
    return {
        "aws_endpoint": endpoint,
        "aws_allow_http": "true",
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_region": "us-east-1",
        "timeout": "10s",
    }
