"""Helpers for the mcp_kubectl_server tests (no tests here): a recording kubectl, a stdio driver.

`recording_kubectl(tmp_path, rules)` writes an executable Python script that appends its argv to
a JSONL log and answers from `rules`, dicts {match, stdout, stderr, code, sleep}: the first rule
whose `match` is a substring of the space-joined argv wins. `ServerProcess` spawns
`python -m mcp_kubectl_server` and speaks raw newline-delimited JSON-RPC to it.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -S: no site module; the script needs only the standard library and starts in a third of the time.
_SCRIPT = """#!{python} -S
import json, sys, time
argv = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(argv) + "\\n")
joined = " ".join(argv)
for rule in json.load(open({rules!r})):
    if rule.get("match", "") in joined:
        time.sleep(rule.get("sleep", 0))
        sys.stdout.write(rule.get("stdout", ""))
        sys.stderr.write(rule.get("stderr", ""))
        sys.exit(rule.get("code", 0))
sys.stderr.write("error: no canned answer for " + joined + "\\n")
sys.exit(1)
"""


class Recorder:
    def __init__(self, path, log, *, skip=0):
        self.path, self.log, self.skip = str(path), Path(log), skip

    def calls(self):
        """Every argv (without the program name) kubectl was run with, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()[self.skip:]]

    def from_here(self):
        """The same kubectl, seen from now on: calls() leaves out the calls made so far."""
        return Recorder(self.path, self.log, skip=self.skip + len(self.calls()))


def recording_kubectl(tmp_path, rules):
    rules_path, log = tmp_path / "rules.json", tmp_path / "kubectl-calls.jsonl"
    rules_path.write_text(json.dumps(rules))
    script = tmp_path / "kubectl"
    script.write_text(_SCRIPT.format(python=sys.executable, log=str(log), rules=str(rules_path)))
    script.chmod(0o755)
    return Recorder(script, log)


class ServerProcess:
    """The server as a child process; `request()` sends one message and waits for its reply."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "mcp_kubectl_server", *args], cwd=ROOT,
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
        """Close stdin (EOF) and return the exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            raise

    def stderr_text(self):
        """Everything the server wrote on stderr; call after close()."""
        self._stderr_pump.join(timeout=5)
        return "".join(self.stderr_lines)


_PASSTHROUGH = """#!{python} -S
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
real = {real!r}
os.execv(real, [real] + sys.argv[1:])
"""


def passthrough_kubectl(tmp_path, real="kubectl"):
    """A kubectl that records its argv, then execs the real kubectl with the same arguments."""
    log = tmp_path / "real-kubectl-calls.jsonl"
    script = tmp_path / "kubectl-recording"
    script.write_text(_PASSTHROUGH.format(python=sys.executable, log=str(log), real=shutil.which(real)))
    script.chmod(0o755)
    return Recorder(script, log)
