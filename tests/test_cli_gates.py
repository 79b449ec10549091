"""The write path through the real CLI: approval on a real pseudo-terminal while stdout is a pipe,
the action run by real kubectl against kube_sim, proved with the simulator's journal."""

import json
import os
import pty
import select
import signal
import sys
import time

import pytest

from tests.fake_messages_api import SMALL_USAGE, response
from tests.test_cli import ROOT

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


def run_on_pty(argv, answer, timeout=60):
    """Run argv with a controlling pty (for the approval) and stdout on a pipe."""
    out_r, out_w = os.pipe()
    pid, master = pty.fork()
    if pid == 0:  # child: stdout to the pipe, the pty stays the controlling terminal
        os.dup2(out_w, 1)
        os.chdir(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "triage_agent", *argv])
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
            os.write(master, answer.encode() + b"\n")
            answered = True
    status = _wait(pid, deadline)
    stdout = b""
    while chunk := os.read(out_r, 65536):
        stdout += chunk
    os.close(out_r)
    os.close(master)
    return os.waitstatus_to_exitcode(status), stdout.decode(), screen.decode(errors="replace")


def _wait(pid, deadline):
    """The child's wait status; killed once the deadline has passed (a test never hangs)."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
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
    code, stdout, screen = run_on_pty(argv + (["--execute"] if execute else []), answer)
    assert code == 0, screen
    outcome = json.loads(stdout)
    proposal = outcome["proposals"][0]
    assert proposal["decision"] == decision and "kubectl" in screen
    writes_seen = [e for e in sim.journal_entries() if "checkout" in e["path"]]
    assert len(writes_seen) == writes
    if decision == "denied":
        assert proposal["note"] == answer
        assert outcome["violations"][0]["decision"] == "proposal_denied"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_audit_log_that_fails_mid_run_stops_every_action(kube_sim, tmp_path):
    # /dev/full opens, then refuses the first entry: the operator would say yes, and --execute
    # is on, but the gate answers that the audit log is unavailable and nothing reaches kubectl
    sim = kube_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay", str(fixture(tmp_path)),
            "--kubeconfig", sim.kubeconfig, "--allow-action", "rollout_restart", "--execute",
            "--audit-log", "/dev/full", "--json"]
    code, stdout, screen = run_on_pty(argv, "yes")
    assert code == 0, screen
    outcome = json.loads(stdout)
    assert outcome["proposals"][0]["decision"] == "audit_unavailable"
    assert outcome["proposals"][0]["gates"]["executed"] is False
    assert "Run this command?" not in screen  # the operator was not even asked
    assert "cannot write the audit log" in outcome["audit_error"]
    assert "no action could execute after that" in screen
    assert sim.journal_entries() == []
