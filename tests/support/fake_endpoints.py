"""A loopback HTTP server answering from a table of routes, for the credential endpoints the
model transports ask: STS, the container credentials endpoint, IMDSv2, Google's metadata server
and its OAuth token endpoint.

    with FakeEndpoints({("PUT", "/latest/api/token"): (200, {}, b"tok"),
                        ("GET", "/x"): lambda request: (200, {}, b"...")}) as fake:
        fake.url ... fake.requests  # [{"method", "path", "headers" (lower-case), "body"}]

A route's answer is (status, headers, body bytes or a JSON-able object), or a callable of the
request record returning one; an unknown route is a 404.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fixtures.http_thread import ServerThread


class FakeEndpoints:
    def __init__(self, routes):
        self.routes = dict(routes)
        self.requests = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _any(self):
                owner._serve(self)
            do_GET = do_PUT = do_POST = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = ServerThread(self.server, name="fake-endpoints")

    def __enter__(self):
        self.serving.start()
        return self

    def __exit__(self, *exc):
        self.serving.stop()

    def count(self, method, path) -> int:
        return sum(1 for r in self.requests if (r["method"], r["path"]) == (method, path))

    def _serve(self, handler):
        length = int(handler.headers.get("content-length") or 0)
        record = {"method": handler.command, "path": handler.path,
                  "headers": {k.lower(): v for k, v in handler.headers.items()},
                  "body": handler.rfile.read(length)}
        with self._lock:
            self.requests.append(record)
        answer = self.routes.get((handler.command, handler.path.split("?")[0]))
        if callable(answer):
            answer = answer(record)
        status, headers, body = answer or (404, {}, b"not found")
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        handler.send_response(status)
        for name, value in dict({"content-length": str(len(body))}, **headers).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
