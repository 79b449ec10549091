"""Helpers for the mcp_kubectl_server tests (no tests here): a stdio driver for the server.

`ServerProcess` starts `python -m mcp_kubectl_server` and speaks raw newline-delimited JSON-RPC
to it: in a thread of the test's process (server_thread.py) unless `process=True` asks for the
child process, as the tests of main(), signals and exit codes do. The cluster behind it is the
simulator (conftest.kube_sim) or, for answers a cluster should not give, the scripted API server
in api_stub.py; both are reached through the server's real kubectl proxy.

`SimView` is one test's view of a simulator it shares with other tests (conftest's
`shared_serve`): its request log from the test's start on, everything else the simulator's own.
"""

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from tests.support import server_thread

ROOT = Path(__file__).resolve().parents[2]


class ServerProcess:
    """The server as a child process; `request()` sends one message and waits for its reply."""

    def __init__(self, *args, env=None, process=False):
        start = subprocess.Popen if process else server_thread.popen
        self.proc = start([sys.executable, "-m", "mcp_kubectl_server", *args], cwd=ROOT,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env or dict(os.environ))
        self.replies = queue.Queue()
        self.stderr_lines = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.replies.put), daemon=True).start()
        self._stderr_pump = threading.Thread(target=self._pump, args=(self.proc.stderr, self._keep_stderr),
                                             daemon=True)
        self._stderr_pump.start()
        self.next_id = 0

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink(line)

    def _keep_stderr(self, line):
        self.stderr_lines.append(line.decode("utf-8", "replace"))

    def send_raw(self, data):
        self.proc.stdin.write(data if isinstance(data, bytes) else data.encode())
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(json.dumps(message) + "\n")

    def recv(self, timeout=20):
        """The next stdout line as parsed JSON (fails the test if none comes in time)."""
        line = self.replies.get(timeout=timeout)
        return json.loads(line)

    def next_reply_is_for(self, probe_id):
        """Send a ping with `probe_id`; True when the very next reply is its answer, i.e. nothing
        was sent in between (how a test shows that a notification got no reply)."""
        self.send({"jsonrpc": "2.0", "id": probe_id, "method": "ping"})
        return self.recv().get("id") == probe_id

    def settled(self):
        """True when the server runs and the very next reply is to a ping sent now: no reply of an
        earlier request is still pending (how a shared server is checked between tests)."""
        return self.proc.poll() is None and self.next_reply_is_for("settled?")

    def request(self, method, params=None, *, timeout=20):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.recv(timeout)
        assert reply.get("id") == self.next_id, reply
        return reply

    def initialize(self, version="2025-11-25"):
        reply = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments, *, timeout=30):
        """tools/call -> (text, is_error)."""
        reply = self.request("tools/call", {"name": name, "arguments": arguments}, timeout=timeout)
        result = reply["result"]
        return result["content"][0]["text"], result["isError"]

    def close(self, timeout=10):
        """Close stdin (EOF) and return the exit code; past `timeout` the server is killed and
        TimeoutExpired raised. A blocking wait returns the moment the server exits, where
        wait(timeout) polls and saw the exit up to 50 ms late; a timer does the killing."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        expired = threading.Event()
        timer = threading.Timer(timeout, lambda: (expired.set(), self.proc.kill()))
        timer.start()
        try:
            code = self.proc.wait()
        finally:
            timer.cancel()
        if expired.is_set():
            raise subprocess.TimeoutExpired(self.proc.args, timeout)
        return code

    def stderr_text(self):
        """Everything the server wrote on stderr; call after close()."""
        self._stderr_pump.join(timeout=5)
        return "".join(self.stderr_lines)


class SimView:
    """A shared simulator as one test sees it: `requests` holds only what arrived since the view
    was made (the test's own reads); kubeconfig, store, journal_entries() are the simulator's."""

    def __init__(self, sim):
        log = sim.requests
        self._sim, self._last = sim, (log[-1] if log else None)   # the newest before the view

    @property
    def requests(self):
        log = list(self._sim.requests)
        for i in range(len(log) - 1, -1, -1):
            if log[i] is self._last:
                return log[i + 1:]
        if self._last is None and len(log) < self._sim.requests.maxlen:
            return log
        # the log (a bounded deque) dropped what came before this view's first request
        raise RuntimeError("the shared simulator's request log is full: give this test a server of its own")

    def __getattr__(self, name):
        return getattr(self._sim, name)
