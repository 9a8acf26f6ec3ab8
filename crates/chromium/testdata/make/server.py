"""Serves the pages on a loopback port and saves the JSON a page posts to /result (any other
path: next to it, named after the path, e.g. /started to report.json.started)."""
import http.server
import sys

OUT = sys.argv[2]


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        if length > 10_000_000:
            self.send_error(413)
            return
        body = self.rfile.read(length)
        path = OUT if self.path == "/result" else OUT + "." + self.path.strip("/").replace("/", "_")
        with open(path, "wb") as f:
            f.write(body)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
