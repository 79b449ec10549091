"""A scripted API server for the server's failure tests: real HTTP on port 0, real kubectl proxy.

    with ApiStub([Rule("/pods/x/log", text="line\\n"), Rule("/pods", hang=True)]) as api:
        ServerProcess("--allow-namespaces", "prod", "--kubeconfig", api.kubeconfig, ...)
        api.requests   # [(method, path with query)], in arrival order

The first rule whose `match` is a substring of the request path (query included) answers: JSON
`body`, plain `text`, or an endless text stream; `hang` holds the answer until the stub stops (a
cluster that never answers), `delay` for a while. Unmatched requests get a 404 Status, as the
API server answers an unknown path. `/version` answers like a cluster unless a rule names it:
kubectl proxy reads it once at start (and waits up to 5 s for it); `reads()` leaves that out.
The simulator (fixtures/kube_sim) is for real-shaped clusters; this stub is for what a simulator
should never do.
"""

import json
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fixtures.http_thread import ServerThread
from fixtures.kube_sim.sim import kubeconfig_text


@dataclass
class Rule:
    match: str
    status: int = 200
    body: object = None
    text: str = None
    endless: bool = False
    hang: bool = False
    delay: float = 0.0


VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.4"}


def status(code, reason, message, **details):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details, "code": code}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms wait between

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        stub = self.server.stub
        stub.requests.append((self.command, self.path))
        rule = next((r for r in stub.rules if r.match in self.path), None)
        if self.path.startswith("/version") and not (rule and rule.match.startswith("/version")):
            return self._send(200, json.dumps(VERSION), "application/json")
        if rule is None:
            return self._send(404, json.dumps(status(404, "NotFound", "the server could not find "
                                                     "the requested resource")), "application/json")
        if rule.hang:
            stub.release.wait()
        elif rule.delay:
            stub.release.wait(rule.delay)
        if rule.endless:
            return self._stream()
        if rule.text is not None:
            return self._send(rule.status, rule.text, "text/plain")
        return self._send(rule.status, json.dumps(rule.body if rule.body is not None else {}),
                          "application/json")

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _send(self, code, text, content_type):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.close_connection = True
        chunk = b"x" * 65535 + b"\n"
        try:
            while not self.server.stub.release.is_set():
                self.wfile.write(chunk)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that went away (a stopped read, a killed proxy) is what these tests do


class ApiStub:
    """A running stub: `.url`, `.kubeconfig`, `.requests`; stop() releases every held answer."""

    def __init__(self, rules):
        self.rules = list(rules)
        self.requests = []
        self.release = threading.Event()
        self._tmp = tempfile.TemporaryDirectory(prefix="api-stub-")
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.stub = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.kubeconfig = str(Path(self._tmp.name) / "kubeconfig")
        Path(self.kubeconfig).write_text(kubeconfig_text(self.url), encoding="utf-8")
        self._serving = ServerThread(self.httpd, name="api-stub")

    def reads(self, *, since=0):
        """The GET paths (with query) the server caused, without kubectl proxy's start-up probe;
        with `since`, only those after the first `since` requests."""
        return [path for verb, path in self.requests[since:]
                if verb == "GET" and path != "/version?timeout=5s"]

    def __enter__(self):
        self._serving.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self._serving.stop()
        self._tmp.cleanup()


def wait_for(predicate, timeout=5.0):
    """Wait until predicate() is true (events here are other processes': poll them briefly)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
