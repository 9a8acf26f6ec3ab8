"""Serves page.html on a loopback port and saves the JSON the page posts to /result."""
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
        with open(OUT, "wb") as f:
            f.write(body)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
