"""nginx with its WebDAV extension (Debian's ``libnginx-mod-http-dav-ext``) on a loopback
port, serving a directory with range requests and listing it with ``PROPFIND``, as the
object store reads an ``http://`` prefix. nginx is ``NGINX``, ``nginx`` on PATH or
/usr/sbin/nginx; without it or the module the tests that need it skip, or fail under
LEVELTABLE_REQUIRE_SERVERS=1."""

import contextlib
import os
import re
import shutil
import subprocess
import tempfile

from loopback import free_port, unavailable, wait_listening

MODULE = "ngx_http_dav_ext_module.so"


def _module(nginx):
    """The WebDAV extension module's file, in the modules directory nginx was built with."""
    built = subprocess.run([nginx, "-V"], capture_output=True, text=True)
    found = re.search(r"--modules-path=(\S+)", built.stderr + built.stdout)
    directories = [found.group(1)] if found else []
    directories += ["/usr/lib/nginx/modules", "/usr/lib64/nginx/modules"]
    for d in directories:
        if os.path.isfile(os.path.join(d, MODULE)):
            return os.path.join(d, MODULE)
    return None


@contextlib.contextmanager
def server(root):
    """Starts nginx serving the directory `root` on a free loopback port, yields its
    ``http://127.0.0.1:PORT`` and stops it."""
    nginx = os.environ.get("NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not nginx or not os.path.isfile(nginx):
        unavailable("nginx missing (apt-get install nginx libnginx-mod-http-dav-ext)")
    module = _module(nginx)
    if module is None:
        unavailable("nginx's WebDAV extension missing (apt-get install libnginx-mod-http-dav-ext)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="leveltable-dav-") as d:
        os.mkdir(os.path.join(d, "tmp"))
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""load_module {module};
daemon off;
master_process off;
worker_processes 1;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location / {{ dav_ext_methods PROPFIND OPTIONS; }}
  }}
}}
""")
        process = subprocess.Popen([nginx, "-p", d, "-c", conf], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(process, port, f"nginx (configured by {conf})")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.kill()
            process.wait()
