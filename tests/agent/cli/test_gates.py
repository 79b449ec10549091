"""The write path through the CLI: approval on a real pseudo-terminal while stdout is a pipe, the
action run by real kubectl against kube_sim, proved with the simulator's journal.

One run is the real process with the pty as its controlling terminal (run_on_pty: the prompt
opens /dev/tty); the others run the CLI in this process (tests/support/cli_here.py) and its
approval prompt on a pty of their own, which prompt.tty_approve opens where it would open /dev/tty
(run_here_on_pty): the same prompt, terminal and answer, without an interpreter, a server process
and their imports to start for each (about 0.14 s of CPU a run). The ^C at the prompt of the real
process is tests/agent/cli/test_operator.py's."""

import functools
import json
import os
import pty
import select
import shlex
import signal
import sys
import threading
import time

import pytest

from tests.support.cli_here import run_main_here
from tests.support.fake_messages_api import SMALL_USAGE, response
from tests.agent.cli.test_cli import ROOT, clean_env
from triage_agent.actions import prompt

POD = "checkout-6f8d9c7b5d-x7k2p"
PODS_QUOTE = f"{POD} phase=Running ready=0/1 restarts=47"


def message(*blocks):
    return response("tool_use", *blocks, usage=SMALL_USAGE)


def fixture(tmp_path):
    report = {"summary": "checkout crash-loops", "severity": "high",
              "affected": [{"kind": "Deployment", "namespace": "prod", "name": "checkout"}],
              "evidence": [{"tool_use_id": "toolu_01pods", "quote": PODS_QUOTE,
                            "interpretation": "restarting"}],
              "hypothesis": "bad config", "confidence": "medium", "proposed_actions": [],
              "next_checks": []}
    path = tmp_path / "gates.json"
    path.write_text(json.dumps({"description": "propose a restart", "responses": [
        message({"type": "tool_use", "id": "toolu_01pods", "name": "get_pods",
                 "input": {"namespace": "prod"}}),
        message({"type": "tool_use", "id": "toolu_02propose", "name": "propose_action",
                 "input": {"kind": "rollout_restart", "namespace": "prod", "target": "checkout",
                           "reason": "pods crash-loop"}}),
        message({"type": "tool_use", "id": "toolu_03report", "name": "write_report",
                 "input": report})]}))
    return path


def run_on_pty(argv, answer, timeout=60, env=None):
    """Run argv with a controlling pty (for the approval) and stdout on a pipe; `answer` is
    typed at the prompt (a str, then Enter) or is a callable given the pty's master fd."""
    out_r, out_w = os.pipe()
    environ = {**clean_env(), **(env or {})}
    pid, master = pty.fork()
    if pid == 0:  # child: stdout to the pipe, the pty stays the controlling terminal
        os.dup2(out_w, 1)
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "triage_agent", *argv], environ)
    os.close(out_w)
    deadline, screen, answered = time.monotonic() + timeout, b"", False
    while time.monotonic() < deadline:
        if not select.select([master], [], [], deadline - time.monotonic())[0]:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the pty
            break
        if not chunk:
            break
        screen += chunk
        if not answered and b"Run this command?" in screen:
            type_answer(master, answer)
            answered = True
    status = _wait(pid, deadline)
    stdout = b""
    while chunk := os.read(out_r, 65536):
        stdout += chunk
    os.close(out_r)
    os.close(master)
    return os.waitstatus_to_exitcode(status), stdout.decode(), screen.decode(errors="replace")


def type_answer(master, answer):
    """At the prompt, on the pty's master: `answer` typed then Enter, or a callable given the fd."""
    if callable(answer):
        answer(master)
    else:
        os.write(master, answer.encode() + b"\n")


def run_here_on_pty(argv, answer, timeout=60, server_thread=True):
    """run_on_pty's answer for the CLI in this process: its approval prompt is asked on a pty of
    the test's (prompt.tty_approve's tty_path), which `answer` is typed at; the screen is what the
    pty showed and then the CLI's stderr. server_thread=False: the MCP server is a child process
    (tests/support/cli_here.py)."""
    master, slave = os.openpty()
    shown = bytearray()
    answered = threading.Event()

    def operator():   # until the last slave fd is closed: the master's read then fails (EIO)
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            shown.extend(chunk)
            if b"Run this command?" in shown and not answered.is_set():
                answered.set()
                type_answer(master, answer)

    reader = threading.Thread(target=operator, daemon=True)
    reader.start()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prompt, "tty_approve", functools.partial(prompt.tty_approve,
                                                            tty_path=os.ttyname(slave)))
        try:
            done = run_main_here(argv, env=clean_env(), timeout=timeout,
                                 server_thread=server_thread)
        finally:
            os.close(slave)
            reader.join(timeout)
            os.close(master)
    return done.returncode, done.stdout, shown.decode(errors="replace") + done.stderr


def _wait(pid, deadline):
    """The child's wait status; killed once the deadline has passed (a test never hangs). It
    waits on the child's pidfd, not by polling."""
    import select
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("answer,execute,decision,writes", [
    ("yes", True, "executed", 1),
    ("no, not during the sale", True, "denied", 0),
    ("yes", False, "approved_not_executed", 0),
])
def test_approval_on_a_terminal(kube_sim, tmp_path, answer, execute, decision, writes):
    sim = kube_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay", str(fixture(tmp_path)),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_restart", "--json"]
    # --verify-timeout 0: the watch after an executed action is tests/agent/cli/test_watch.py's
    code, stdout, screen = run_here_on_pty(
        argv + (["--execute", "--verify-timeout", "0"] if execute else []), answer)
    assert code == 0, screen
    assert "watching" not in screen
    outcome = json.loads(stdout)
    proposal = outcome["proposals"][0]
    assert proposal["decision"] == decision and "kubectl" in screen
    writes_seen = [e for e in sim.journal_entries() if "checkout" in e["path"]]
    assert len(writes_seen) == writes
    if decision == "denied":
        assert proposal["note"] == answer
        assert outcome["violations"][0]["decision"] == "proposal_denied"
    key = {"executed": "executed", "denied": "denied",
           "approved_not_executed": "approved_not_run"}[decision]
    assert {k: len(v) for k, v in outcome["actions_taken"].items()} == {
        k: int(k == key) for k in ("executed", "failed", "approved_not_run", "denied")}
    taken = outcome["actions_taken"][key][0]
    assert (taken["kind"], taken["target"]) == ("rollout_restart", "checkout")
    assert shlex.split(taken["command"]) == proposal["argv"]


def test_an_approved_command_that_does_not_run_is_printed_ready_to_paste(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay", str(fixture(tmp_path)),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_restart", "--json"]
    code, stdout, screen = run_here_on_pty(argv, "yes")
    assert code == 0, screen
    proposal = json.loads(stdout)["proposals"][0]
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if "approved, not run" in line)
    assert lines[at] == ("triage-agent: approved, not run (--execute is off). To run it "
                         "yourself:")
    assert shlex.split(lines[at + 1]) == proposal["argv"]      # pasted, it is the argv
    assert lines[at + 1].startswith("  kubectl --kubeconfig ")
    assert sim.journal_entries() == []


def test_the_report_says_what_ran_and_does_not_offer_it_again(kube_sim):
    sim = kube_sim("crashloop")
    argv = ["checkout pods in prod keep restarting", "--namespaces", "prod",
            "--replay", str(ROOT / "fixtures" / "replay" / "crashloop-undo.json"),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_undo", "--execute",
            "--verify-quiet", "0"]   # the rollback's pods are Ready at the watch's first look
    code, stdout, screen = run_on_pty(argv, "yes")
    assert code == 0, screen
    assert [e["verb"] for e in sim.journal_entries()] == ["PATCH"]   # it really ran
    taken = stdout.split("Actions taken", 1)[1].split("Proposed actions", 1)
    assert "  - executed: rollout_undo prod/checkout (exit code 0)" in taken[0]
    assert f"    kubectl --kubeconfig {sim.kubeconfig} rollout undo deployment/checkout -n prod" \
        in taken[0]
    assert "    verification: recovered after " in taken[0]
    assert "      2/2 pods of ReplicaSet checkout-5c4b8d7f9b Ready" in taken[0]
    assert "triage-agent: watching checkout: 2/2 Ready, 0 restarts" in screen
    proposed = taken[1].split("Next checks", 1)[0]
    assert "1. rollout_undo prod/checkout" in proposed
    assert "already executed in this run (see Actions taken)" in proposed
    assert "run: kubectl" not in proposed                   # not offered to run a second time


def test_with_nothing_approved_the_report_says_nothing_ran(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay", str(fixture(tmp_path)),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_restart"]
    code, stdout, screen = run_here_on_pty(argv, "no")
    assert code == 0, screen
    taken = stdout.split("Actions taken", 1)[1].split("Proposed actions", 1)[0]
    assert "  - denied by the operator: rollout_restart prod/checkout (no)" in taken


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_audit_log_that_fails_mid_run_stops_every_action(kube_sim, tmp_path):
    # /dev/full opens, then refuses the first entry: the operator would say yes, and --execute
    # is on, but the gate answers that the audit log is unavailable and nothing reaches kubectl
    sim = kube_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay", str(fixture(tmp_path)),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_restart", "--execute",
            "--audit-log", "/dev/full", "--json"]
    code, stdout, screen = run_here_on_pty(argv, "yes")
    assert code == 0, screen
    outcome = json.loads(stdout)
    assert outcome["proposals"][0]["decision"] == "audit_unavailable"
    assert outcome["proposals"][0]["gates"]["executed"] is False
    assert "Run this command?" not in screen  # the operator was not even asked
    assert "cannot write the audit log" in outcome["audit_error"]
    assert "no action could execute after that" in screen
    assert sim.journal_entries() == []
