"""JSON-RPC 2.0 with one child process over its stdio: newline-delimited messages, no shell.

    StdioPeer(argv)  spawns the child in a session of its own with a minimal environment
                     (through StdioPeer.popen: subprocess.Popen)
    .request(method, params, deadline) -> result     RpcError / PeerGone / RequestTimeout
    .notify(method, params)
    .stop(close_timeout)   close stdin, wait; terminate, wait; kill

A reader thread turns stdout lines into a queue, so no read blocks past its deadline. The same
thread answers the child's own requests at once (`ping` with {}, anything else with -32601),
whether or not a call is in flight: a server that pings an idle client is answered while the
agent waits on the model, not at the next tool call. Notifications and non-JSON noise on stdout
are skipped. Another thread keeps the last few KiB of stderr for error messages.
"""

import collections
import itertools
import json
import queue
import subprocess
import threading
import time

from mcp_kubectl_server.redact import redact

STDERR_TAIL_BYTES = 4096
# A wait for an answer returns to Python at least this often. A signal whose C handler runs just
# before the wait blocks (after the last check for pending signals) does not interrupt it: its
# Python handler (the CLI's ^C / SIGTERM, terminal.StopSignals) would run only when the wait ends,
# at the call's deadline. Waking this often bounds that delay, at four wake-ups a second.
SIGNAL_CHECK_S = 0.25
_EOF = object()


class RpcError(Exception):
    """A JSON-RPC error answer; `data` is kept, and shown, because it can say what to do
    (e.g. the protocol versions a server supports)."""

    def __init__(self, code, message, data=None):
        self.code, self.message, self.data = code, message, data
        shown = f"MCP error {code}: {message}"
        if data is not None:
            # redacted before the cut: a cut could leave a piece of a secret no rule knows
            shown += f" (data: {redact(json.dumps(data, ensure_ascii=False, default=str))[:300]})"
        super().__init__(shown)


class PeerGone(Exception):
    """The child exited or closed its pipes."""


class RequestTimeout(Exception):
    def __init__(self, request_id):
        super().__init__(request_id)
        self.request_id = request_id


class StdioPeer:
    """One running child process that speaks newline-delimited JSON-RPC on stdin/stdout.

    `popen` is what starts it: subprocess.Popen; the tests swap in a factory that runs this
    project's own server in a thread over pipes (tests/support/server_thread.py)."""

    popen = staticmethod(subprocess.Popen)

    def __init__(self, argv, *, env, cwd=None):
        self.argv = argv
        self._inbox = queue.Queue()
        self._tail = collections.deque()
        self._tail_cut = False
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._stdout_closed = threading.Event()
        self.proc = self.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, cwd=cwd,
                               start_new_session=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()

    def alive(self):
        return self.proc.poll() is None

    def send(self, message):
        """Write one message; PeerGone when the child is gone. TypeError/ValueError (a value
        that is not JSON) are the caller's."""
        line = json.dumps(message).encode("utf-8") + b"\n"
        with self._write_lock:
            if self.proc.poll() is not None:
                raise PeerGone()
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (OSError, ValueError):
                raise PeerGone() from None

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, deadline):
        """Send a request and wait for its answer until `deadline` (time.monotonic())."""
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimeout(request_id)
            try:
                message = self._inbox.get(timeout=min(remaining, SIGNAL_CHECK_S))
            except queue.Empty:
                continue   # the deadline is checked above
            if message is _EOF:
                self._inbox.put(_EOF)  # stay gone for whoever asks next
                raise PeerGone()
            if message.get("id") != request_id:
                continue  # a late answer to a request we gave up on
            error = message.get("error")
            if isinstance(error, dict):
                raise RpcError(error.get("code"), error.get("message", "(no message)"),
                               error.get("data"))
            return message.get("result")

    def _answer(self, message):
        if message["method"] == "ping":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": f"method not found: {str(message['method'])[:100]}"}}
        try:
            self.send(reply)
        except PeerGone:
            pass

    def _read_stdout(self):
        try:
            for line in self.proc.stdout:
                try:
                    data = json.loads(line)
                except ValueError:
                    continue  # noise: banners, stray prints
                for message in data if isinstance(data, list) else [data]:
                    if not isinstance(message, dict):
                        continue
                    if "method" in message:
                        if "id" in message:
                            self._answer(message)
                        continue  # notifications: logging, progress, list_changed
                    self._inbox.put(message)
        except (OSError, ValueError):
            pass
        self._stdout_closed.set()
        self._inbox.put(_EOF)

    def _read_stderr(self):
        size = 0
        try:
            for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
                self._tail.append(chunk)
                size += len(chunk)
                while size > STDERR_TAIL_BYTES and len(self._tail) > 1:
                    size -= len(self._tail.popleft())
                    self._tail_cut = True
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        """The last few KiB the child wrote to stderr."""
        if self._stdout_closed.is_set() or self.proc.poll() is not None:
            # an exiting child's last words may still be in the pipe: its stdout closes before
            # it has exited, and before the stderr reader has read what it wrote last
            self._stderr_thread.join(1.0)
        text = b"".join(list(self._tail)).decode("utf-8", "replace")
        if self._tail_cut or len(text) > STDERR_TAIL_BYTES:
            # the cut's first line is a piece: a piece of a secret would pass the redactor
            text = text[-STDERR_TAIL_BYTES:].partition("\n")[2]
        return text.strip()

    def exit_code(self, wait=1.0):
        try:
            return self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, close_timeout):
        """Close stdin and wait; then terminate and wait; then kill (each wait close_timeout)."""
        proc = self.proc
        with self._write_lock:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for step in (None, proc.terminate, proc.kill):
            try:
                if step is not None:
                    step()
                proc.wait(close_timeout)
                break
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                break
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
