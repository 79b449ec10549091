"""A Reader straight to the simulator, for tests that call tool handlers in-process.

    with start_sim("crashloop") as sim:
        reader = sim_reader(sim, ["prod"])
        text, is_error = run_tool(reader.for_call(), "get_pods", {"namespace": "prod"})

The real Reader (mcp_kubectl_server/read/reader.py) with its channel replaced: each GET runs the
simulator's own request handler on the calling thread, with no socket and no kubectl proxy, and
the reader gets an http.client response parsed from the bytes the simulator would have sent. A
test that proves nothing about the way there (digests, redaction over thousands of outputs) runs
a read in a fraction of what a kept-alive HTTP connection costs (sockets, a server thread, both
sides' header parsing). Tests of the HTTP path go through kubectl (tests/sim, ServerProcess).

    with reads_here(sim):   # in-thread servers over sim.kubeconfig read this way too
        run_main_here([...])

An MCP server in a thread (tests/support/server_thread.py) whose --kubeconfig is that of a
simulator inside reads_here() gets the same channel instead of a kubectl proxy: for tests of what
a whole run makes of a cluster (the eval scenarios), not of the way the reads travel. What that
leaves out is the proxy's path filters and its start; the e2e tests, the CLI tests and `make eval`
keep the real kubectl proxy.
"""

import contextlib
import http.client
import io
import os
import threading

from fixtures.kube_sim.http import Handler
from mcp_kubectl_server.read.reader import Reader


class _NoProxy:
    """What the reader asks of its proxy, for a channel that has none."""

    def alive(self):
        return True

    def restart(self):
        raise ConnectionError("no proxy to restart")

    def stop(self):
        pass

    prepare = wake = stop

    def settle(self):
        return None

    def allow_custom(self, kinds):
        return False  # no path filter to widen

    def stderr_tail(self):
        return ""


class _Bytes:
    """A socket whose whole input is `data` (what http.client.HTTPResponse reads from)."""

    def __init__(self, data):
        self.data = data

    def makefile(self, mode):
        return io.BytesIO(self.data)


class _HandlerHere:
    """The connection the reader uses (request, getresponse), answered by the simulator's handler."""

    def __init__(self, sim):
        self.sim = sim
        self._request = None

    def request(self, method, target, headers=None):
        self._request = (method, target, dict(headers or {}, Host=self.sim.url.split("//")[1]))

    def getresponse(self):
        method, target, headers = self._request
        handler = Handler.__new__(Handler)   # no socket: what handle() would have set up
        handler.server, handler.client_address = self.sim.httpd, ("127.0.0.1", 0)
        handler.command, handler.path, handler.request_version = method, target, "HTTP/1.1"
        handler.requestline = f"{method} {target} HTTP/1.1"
        handler.headers, handler.wfile, handler.close_connection = headers, io.BytesIO(), False
        getattr(handler, "do_" + method)()
        response = http.client.HTTPResponse(_Bytes(handler.wfile.getvalue()), method=method)
        response.begin()
        return response


class HandlerChannel:
    """The reader's channel (open/drop/interrupt) over _HandlerHere."""

    def __init__(self, sim):
        self.proxy = _NoProxy()
        self.conn = _HandlerHere(sim)

    def open(self, timeout, cancelled=None):
        return self.conn, False

    def drop(self):
        pass

    def interrupt(self):
        pass


def sim_reader(sim, namespaces):
    """A Reader whose reads go straight to `sim` (a running fixtures.kube_sim Simulator); the
    `namespaces` are what the real one would be scoped to (its proxy is never started)."""
    reader = Reader(namespaces=namespaces, timeout=120.0)   # a busy machine is not a failure here
    reader._channel = HandlerChannel(sim)  # the seam: everything else is the real reader
    return reader


_HERE = {}   # realpath of a simulator's kubeconfig -> the Simulator, while in reads_here()
_HERE_LOCK = threading.Lock()


@contextlib.contextmanager
def reads_here(sim):
    """While inside: in-thread servers over `sim`'s kubeconfig read through HandlerChannel."""
    key = os.path.realpath(sim.kubeconfig)
    with _HERE_LOCK:
        _HERE[key] = sim
    try:
        yield sim
    finally:
        with _HERE_LOCK:
            _HERE.pop(key, None)


def channel_here(kubeconfig):
    """A HandlerChannel for the simulator whose kubeconfig this is, if it is in reads_here()."""
    if kubeconfig is None:
        return None
    with _HERE_LOCK:
        sim = _HERE.get(os.path.realpath(kubeconfig))
    return None if sim is None else HandlerChannel(sim)
