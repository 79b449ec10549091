"""Running kubectl: argv lists, a verb allow-list, a timeout that kills the process group, byte caps.

`Kubectl(binary, context=..., kubeconfig=..., timeout=...)` builds
`[binary, --context=C, --kubeconfig=K, VERB, *args]`; the connection flags come only from the
server's command line. `run()` never raises for kubectl's own failures: it returns a
`KubectlResult` whose `error` is a one-line text carrying kubectl's message (binary missing,
timeout, output over the cap, non-zero exit, Forbidden), ready to hand to the model.
"""

import copy
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

# version is for --check; nothing calls `config` (it could print credentials: config view --raw)
ALLOWED_VERBS = ("get", "logs", "version")
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
POLL_SECONDS = 0.05


class CancelledError(Exception):
    """The request that started this kubectl run was cancelled by the client."""


@dataclass
class KubectlResult:
    argv: list
    stdout: bytes = b""
    stderr: bytes = b""
    error: str = ""

    @property
    def ok(self):
        return not self.error


def _read_capped(stream, cap, sink, over):
    """Read `stream` into `sink` until EOF; past `cap` bytes set `over` and keep draining."""
    size = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if size < cap:
            sink.append(chunk[: cap - size])
        size += len(chunk)
        if size > cap:
            over.set()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _exited(waiter):
    """True once kubectl has exited, else False after POLL_SECONDS. `waiter` is a thread blocked
    in Popen.wait(): joining it wakes the moment kubectl exits, where Popen.wait(timeout) polls
    (sleeps of 0.5 ms doubling to 50 ms, which added about 15 ms to every run)."""
    waiter.join(timeout=POLL_SECONDS)
    return not waiter.is_alive()


def error_line(stderr):
    """kubectl's own error message from its stderr, as one line."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.lower().startswith(("error", "unable", "the server"))]
    text = " | ".join(picked or lines[-2:]) or "no message on stderr"
    return text if len(text) <= 600 else text[:600] + "..."


class Kubectl:
    """Runs allow-listed kubectl verbs against one cluster connection."""

    def __init__(self, binary="kubectl", *, context=None, kubeconfig=None, timeout=20.0,
                 max_bytes=DEFAULT_MAX_BYTES):
        self.binary = binary
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.deadline = None  # monotonic time by which every run must end (see for_one_call)
        self.connection = []
        if context:
            self.connection.append("--context=" + context)
        if kubeconfig:
            self.connection.append("--kubeconfig=" + kubeconfig)

    def for_one_call(self):
        """A copy whose runs together end within `timeout` (a tool call may run kubectl 3 times)."""
        bounded = copy.copy(self)
        bounded.deadline = time.monotonic() + self.timeout
        return bounded

    def argv(self, verb, args):
        """The full argv for `kubectl VERB ARGS` (raises ValueError for a verb off the list)."""
        if verb not in ALLOWED_VERBS:
            raise ValueError(f"kubectl verb {verb!r} is not allowed")
        return [self.binary, *self.connection, verb, *args]

    def run(self, verb, args, *, max_bytes=None, cancelled=None):
        """Run kubectl; `cancelled()` is polled and, when true, kills it and raises CancelledError."""
        argv = self.argv(verb, args)
        cap = max_bytes or self.max_bytes
        deadline = time.monotonic() + self.timeout
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        if time.monotonic() >= deadline:
            return KubectlResult(argv, error=self._error_text("timeout", None, b"", cap))
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError:
            return KubectlResult(argv, error=f"kubectl is not installed or not found at {self.binary!r};"
                                             " the operator must install it or pass --kubectl PATH")
        except OSError as exc:
            return KubectlResult(argv, error=f"kubectl could not be started ({self.binary!r}): {exc.strerror}")
        out, err, over = [], [], threading.Event()
        readers = [threading.Thread(target=_read_capped, args=(proc.stdout, cap, out, over), daemon=True),
                   threading.Thread(target=_read_capped, args=(proc.stderr, 65536, err, threading.Event()),
                                    daemon=True)]
        waiter = threading.Thread(target=proc.wait, daemon=True)
        for thread in (*readers, waiter):
            thread.start()
        reason = ""
        while not _exited(waiter):
            if cancelled is not None and cancelled():
                reason = "cancelled"
            elif over.is_set():
                reason = "over"
            elif time.monotonic() >= deadline:
                reason = "timeout"
            if reason:
                _kill_group(proc)
                break
        for reader in readers:
            reader.join(timeout=2)
        result = KubectlResult(argv, b"".join(out), b"".join(err))
        if reason == "cancelled":
            raise CancelledError()
        result.error = self._error_text(reason, proc.returncode, result.stderr, cap)
        if over.is_set() and not result.error:
            result.error = self._error_text("over", proc.returncode, result.stderr, cap)
        return result

    def _error_text(self, reason, code, stderr, cap):
        if reason == "timeout":
            return (f"kubectl timed out after {self.timeout:g}s and was stopped: the cluster is slow"
                    " or unreachable; try again later or narrow the query")
        if reason == "over":
            return (f"kubectl output passed the {cap} byte cap and was stopped: narrow the query"
                    " (a label selector, a pod name, a smaller tail)")
        if code == 0:
            return ""
        message = error_line(stderr)
        if "forbidden" in message.lower():
            return f"kubectl was refused (Forbidden): {message}. These credentials cannot read that; do not retry it"
        return f"kubectl failed (exit {code}): {message}"
