"""Live runs stream: the real CLI against the fake API in streaming mode, with the real MCP
server, kubectl and kube_sim. What the operator sees on a terminal (a real pty) and in a pipe,
--no-stream and --show-thinking, and ^C in the middle of a streamed answer."""

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.support.fake_messages_api import FakeMessagesApi
from tests.agent.cli.test_cli import ROOT
from tests.agent.cli.test_live import KEY, crashloop_responses, live
from tests.agent.cli.test_signals import LAUNCH
from triage_agent.status import CLEAR

SYMPTOM = "checkout pods in prod keep restarting"
THOUGHT = "The checkout pods crash-loop; previous logs next."


def cli_env(api):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    # PYTHONFAULTHANDLER: a CLI that hangs can be made to print every thread's stack (SIGABRT)
    return dict(environ, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=api.url, TERM="xterm",
                PYTHONFAULTHANDLER="1")


def communicate_or_show_stacks(proc, reader, *, timeout):
    """proc.communicate(); a CLI still running after `timeout` is made to print its threads'
    stacks on its stderr (the pty) and the test fails with what the pty showed."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.communicate(timeout=30)
        reader.join(10)
        pytest.fail(f"the CLI did not end within {timeout} s; its stderr, stacks last:\n"
                    + reader.seen.decode(errors="replace")[-8000:])


class PtyReader(threading.Thread):
    """Reads the pty's master end until the child closes it; `.seen` grows as it reads."""

    def __init__(self, master):
        super().__init__(daemon=True)
        self.master, self.seen, self.changed = master, b"", threading.Event()

    def run(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:   # EIO: every copy of the slave end is closed
                return
            if not chunk:
                return
            self.seen += chunk
            self.changed.set()

    def wait_for(self, text, deadline_s=30):
        deadline = time.monotonic() + deadline_s
        while text not in self.seen:
            assert time.monotonic() < deadline, self.seen.decode(errors="replace")
            self.changed.wait(deadline - time.monotonic())
            self.changed.clear()


def start_on_pty(api, sim, *extra):
    """The CLI with stderr on a pty (stdout stays a pipe, as when --json is piped on)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "SIG_DFL", SYMPTOM, "--namespaces",
                             "prod", "--kubeconfig", sim.kubeconfig, "--json", *extra],
                            cwd=ROOT, env=cli_env(api), stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    reader = PtyReader(master)
    reader.start()
    return proc, reader


def test_on_a_terminal_the_status_line_runs_and_the_text_streams(shared_sim):
    with FakeMessagesApi(crashloop_responses(), sse={"split": 9, "pings": True}) as api:
        proc, reader = start_on_pty(api, shared_sim("crashloop"))
        stdout, _ = proc.communicate(timeout=60)
        reader.join(10)
        os.close(reader.master)
    err = reader.seen.decode()
    assert proc.returncode == 0, err
    assert json.loads(stdout)["stop"] == "report"          # stdout: one JSON object
    assert CLEAR + "[step 1/12] waiting for the model (0 s)" in err
    assert CLEAR + "[step 4/12] preparing a call to write_report (" in err
    assert "Listing pods in prod.\r\n" in err and THOUGHT not in err
    # four steps and the review, every one streamed
    assert all(r["body"]["stream"] is True for r in api.requests) and len(api.requests) == 5


def test_in_a_pipe_no_escapes_and_thinking_only_when_asked(shared_sim):
    responses = crashloop_responses()
    broken = {"status": 200, "body": responses[0], "sse": {"after": 4, "then": "error"}}
    with FakeMessagesApi([broken] + responses, sse={"split": [3, 17]}) as api:
        out = live(api, shared_sim("crashloop"), "--json", "--show-thinking")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["stop"] == "report" and len(api.requests) == 6
    # the first answer broke off after a few words: it is retried, and said so on its own line
    assert "\n[retry 1] overloaded_error (HTTP 200): Overloaded (in the event stream) " \
           "(request-id req_fake_001); trying again in" in out.stderr
    assert "Listing pods in prod.\n" in out.stderr and f"(thinking) {THOUGHT}\n" in out.stderr
    assert "\r" not in out.stderr and "\x1b" not in out.stderr


def test_no_stream_sends_plain_requests_with_the_same_outcome(shared_sim):
    responses = crashloop_responses()
    with FakeMessagesApi(responses) as api:
        out = live(api, shared_sim("crashloop"), "--json", "--no-stream")
    assert out.returncode == 0, out.stderr
    assert not any("stream" in r["body"] for r in api.requests) and len(api.requests) == 5
    assert json.loads(out.stdout)["report"] == responses[3]["content"][0]["input"]
    assert "Listing pods" not in out.stderr     # nothing streamed, so no text as it comes


def test_ctrl_c_in_a_streamed_answer_stops_at_once_and_closes_the_connection(shared_sim):
    first = {"status": 200, "body": crashloop_responses()[0],
             "sse": {"after": 4, "then": "stall", "split": 5}}   # a little text, then silence
    with FakeMessagesApi([first]) as api:
        proc, reader = start_on_pty(api, shared_sim("crashloop"))
        reader.wait_for(b"Listing pods")
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, _ = communicate_or_show_stacks(proc, reader, timeout=30)
        stopped = time.monotonic() - began
        reader.join(10)
        os.close(reader.master)
        assert api.hung_up.wait(30)
    outcome = json.loads(stdout)
    assert proc.returncode == 130 and outcome["stop"] == "interrupted", reader.seen
    assert outcome["steps"] == 1 and outcome["error"] == "interrupted by the operator"
    assert api.hangups == ["req_fake_001"] and stopped < 5
    assert b"Traceback" not in reader.seen


def test_the_stream_flags_reach_the_client_and_the_status_line(monkeypatch, tmp_path):
    from triage_agent import cli, status
    from triage_agent.model import replay
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    def parse(argv):
        args = cli.build_parser().parse_args(argv)
        cli.check_options(args)   # which sets the endpoint: base URL, profile, timeouts, prices
        return args
    model, _ = cli.make_model(parse([SYMPTOM, "--namespaces", "prod"]), None)
    assert isinstance(model, status.StatusModel)
    assert (model.model.stream, model.model.idle_timeout) == (True, 30.0)
    assert model.status.show_thinking is False and model.status.max_steps == 12
    args = parse([SYMPTOM, "--namespaces", "prod", "--no-stream", "--idle-timeout", "0.5",
                  "--show-thinking", "--max-steps", "4", "--record", str(tmp_path / "r.json")])
    model, _ = cli.make_model(args, None)
    assert isinstance(model, replay.RecordingModel)   # it records what the client assembled
    client, line = model.model.model, model.model.status
    assert (client.stream, client.idle_timeout) == (False, 0.5)
    assert line.show_thinking is True and line.max_steps == 4
