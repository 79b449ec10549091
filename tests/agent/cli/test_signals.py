"""Signals to the real CLI mid-run: ^C (SIGINT), SIGTERM and SIGHUP all end the run like ^C.

Each still prints exactly one JSON outcome with what was gathered, writes the audit log and trace
up to that point, prints the cost, shows no traceback, shuts the MCP server child down (its pid is
checked) and exits 128 + the signal number. The run is made to wait at a known point by a small
MCP server (written to a temp dir) whose get_logs never answers; the test waits for the CLI's
`[step 2/` progress line, then signals it.

The CLI is started through a two-line launcher that sets SIGINT and SIGHUP to a known disposition
and execs `python -m triage_agent` in the same process: a shell that starts pytest in the
background ignores SIGINT, and `nohup` ignores SIGHUP, and the child would inherit either."""

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.agent.cli.test_cli import ROOT, clean_env, jsonl
from tests.agent.cli.test_mcp import SERVER


LAUNCH = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
          "signal.signal(signal.SIGHUP, getattr(signal, sys.argv[1])); "
          "os.execv(sys.executable, [sys.executable, '-m', 'triage_agent', *sys.argv[2:]])")


def call(tid, name):
    return tool_use(tid, name, {"namespace": "prod"})


def message(*blocks):
    return response("tool_use", *blocks, usage=SMALL_USAGE)


def wait_for(predicate, what, deadline_s=15):
    deadline = time.monotonic() + deadline_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def alive(pid):
    """True while `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Cli:
    """The real CLI with the waiting MCP server; `.server_pid` once the server has started."""

    def __init__(self, tmp_path, *, server_flags="", sighup="SIG_DFL", extra=(), env=None):
        (tmp_path / "server.py").write_text(SERVER)
        fixture = tmp_path / "fixture.json"
        fixture.write_text(json.dumps({"description": "t", "responses": [
            message(call("toolu_1", "get_pods")), message(call("toolu_2", "get_logs"))]}))
        self.pidfile = tmp_path / "server.pid"
        self.audit, self.trace = tmp_path / "audit.jsonl", tmp_path / "trace.jsonl"
        args = ["web pods fail", "--namespaces", "prod", "--replay", str(fixture), "--json",
                "--mcp", f"{sys.executable} {tmp_path / 'server.py'} {self.pidfile} "
                f"{server_flags}", "--audit-log", str(self.audit), "--trace", str(self.trace),
                *extra]
        environ = clean_env()
        environ.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, sighup, *args], cwd=ROOT,
                                     env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.seen = b""

    @property
    def server_pid(self):
        wait_for(self.pidfile.exists, "the MCP server's pid file")
        return int(self.pidfile.read_text())

    def wait_stderr(self, text, deadline_s=30):
        """Read stderr until `text` shows (raw reads: a buffered reader could hold it back)."""
        deadline = time.monotonic() + deadline_s
        while text not in self.seen and time.monotonic() < deadline:
            if select.select([self.proc.stderr], [], [], deadline - time.monotonic())[0]:
                chunk = os.read(self.proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                self.seen += chunk
        assert text in self.seen, self.seen.decode(errors="replace")

    def finish(self):
        """(exit code, stdout, all of stderr)."""
        stdout, rest = self.proc.communicate(timeout=30)
        return self.proc.returncode, stdout.decode(), (self.seen + rest).decode()

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        if self.pidfile.exists() and alive(int(self.pidfile.read_text())):
            os.kill(int(self.pidfile.read_text()), signal.SIGKILL)


@pytest.fixture
def cli(tmp_path):
    made = []

    def make(**kwargs):
        made.append(Cli(tmp_path, **kwargs))
        return made[-1]
    yield make
    for one in made:
        one.cleanup()


@pytest.mark.parametrize("signum,code,error", [
    (signal.SIGINT, 130, "interrupted by the operator"),
    (signal.SIGTERM, 143, "terminated by SIGTERM"),
    (signal.SIGHUP, 129, "the terminal hung up (SIGHUP)"),
])
def test_a_signal_mid_run_ends_it_like_ctrl_c(cli, signum, code, error):
    run = cli()
    run.wait_stderr(b"[step 2/")   # the get_logs call is waiting on the server
    server = run.server_pid
    assert alive(server)
    run.proc.send_signal(signum)
    returncode, stdout, stderr = run.finish()
    outcome = json.loads(stdout)   # exactly one JSON object
    assert returncode == code, stderr
    assert (outcome["stop"], outcome["error"]) == ("interrupted", error)
    assert outcome["steps"] == 2 and outcome["tool_calls"] == 1 and outcome["usage"]["input"] == 20
    assert "stop: interrupted" in stderr and "cost: claude-opus-5-5" in stderr
    assert "Traceback" not in stderr
    assert [e["decision"] for e in jsonl(run.audit)] == ["executed"]   # written as it happened
    spans = jsonl(run.trace)   # each span as it ended, the run's root span last
    assert [s["name"] for s in spans] == ["chat claude-opus-5-5", "execute_tool get_pods",
                                          "chat claude-opus-5-5", "invoke_agent triage-agent"]
    assert spans[-1]["status"] == {"code": 2, "message": error}
    wait_for(lambda: not alive(server), "the MCP server to be gone", deadline_s=5)


def test_a_signal_during_start_up_is_an_outcome_too(cli):
    run = cli(server_flags="--stall")   # the handshake never completes
    server = run.server_pid
    run.proc.send_signal(signal.SIGTERM)
    returncode, stdout, stderr = run.finish()
    outcome = json.loads(stdout)
    assert returncode == 143 and outcome["stop"] == "interrupted" and outcome["steps"] == 0
    assert outcome["error"] == "terminated by SIGTERM" and "Traceback" not in stderr
    wait_for(lambda: not alive(server), "the MCP server to be gone", deadline_s=5)


@pytest.mark.slow(reason="runs the CLI's whole MCP close sequence: 2 s for the server to exit at "
                         "end of input, 2 s after SIGTERM, then SIGKILL")
def test_a_second_signal_does_not_cut_the_shutdown_short(cli, tmp_path):
    # The server outlives its input and ignores SIGTERM, so closing it takes the client's whole
    # close sequence (wait, terminate, kill); more signals arrive while that runs.
    run = cli(server_flags="--linger")
    run.wait_stderr(b"[step 2/")
    server = run.server_pid
    run.proc.send_signal(signal.SIGTERM)
    wait_for((tmp_path / "server.pid.eof").exists, "the server to see its input end")
    run.proc.send_signal(signal.SIGHUP)
    run.proc.send_signal(signal.SIGINT)
    returncode, stdout, stderr = run.finish()
    outcome = json.loads(stdout)
    assert returncode == 143 and outcome["error"] == "terminated by SIGTERM", stderr
    assert outcome["tool_calls"] == 1 and "Traceback" not in stderr
    wait_for(lambda: not alive(server), "the MCP server to be gone", deadline_s=5)


def test_sighup_stays_ignored_under_nohup(cli):
    run = cli(sighup="SIG_IGN", extra=["--mcp-timeout", "0.3"])
    run.wait_stderr(b"[step 2/")
    run.proc.send_signal(signal.SIGHUP)
    returncode, stdout, stderr = run.finish()
    outcome = json.loads(stdout)   # the hung call timed out and the run went on to its end
    assert returncode == 3 and outcome["stop"] == "replay_exhausted", stderr
    assert outcome["tool_calls"] == 2
