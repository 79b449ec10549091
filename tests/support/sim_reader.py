"""A Reader straight to the simulator, for tests that call tool handlers in-process.

    with start_sim("crashloop") as sim:
        reader = sim_reader(sim, ["prod"])
        text, is_error = run_tool(reader.for_call(), "get_pods", {"namespace": "prod"})

The real Reader (mcp_kubectl_server/read/reader.py) with its channel replaced: requests go over
one kept-alive HTTP connection to the simulator instead of through kubectl proxy, so a test that
proves nothing about the process boundary (digests, redaction over many outputs) runs a hundred
calls in the time kubectl takes to start once. Tests of the boundary use ServerProcess.
"""

import http.client
from urllib.parse import urlsplit

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

    def stderr_tail(self):
        return ""


class DirectChannel:
    """The reader's channel (open/drop/interrupt), as one HTTP connection to `url`."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.proxy = _NoProxy()
        self.conn = None

    def open(self, timeout, cancelled=None):
        reused = self.conn is not None and self.conn.sock is not None
        if not reused:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.conn.connect()
        return self.conn, reused

    def drop(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def interrupt(self):
        self.drop()


def sim_reader(sim, namespaces):
    """A Reader whose reads go straight to `sim` (a running fixtures.kube_sim Simulator); the
    `namespaces` are what the real one would be scoped to (its proxy is never started)."""
    reader = Reader(namespaces=namespaces, timeout=120.0)   # a busy machine is not a failure here
    reader._channel = DirectChannel(sim.url)  # the seam: everything else is the real reader
    return reader
