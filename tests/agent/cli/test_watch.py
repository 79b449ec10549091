"""The watch after an approved action ran, end to end: the CLI with --execute, the approval typed
on a pty, real kubectl writing to kube_sim, whose pods then come up (or fail) after a short pod
start delay, and the watch reading them back through the project's read-only server.

Each run waits for the watch's first look (two seconds after the action) and, for a recovery,
one quiet period; the delays are a fraction of a second. The watch's timing and its decisions on
scripted readings are tests/agent/test_watch.py's."""

import contextlib
import json
import os
import signal
import threading
import time

from tests.agent.cli.test_gates import message, run_here_on_pty
from tests.agent.cli.test_gates import ROOT, clean_env
from tests.agent.cli.test_gates import _wait, type_answer

CRASH = "checkout-6f8d9c7b5d-x7k2p"


def replay(tmp_path, kind, target, quote):
    report = {"summary": f"{target} is unhealthy", "severity": "high",
              "affected": [{"kind": "Deployment", "namespace": "prod", "name": target}],
              "evidence": [{"tool_use_id": "toolu_01pods", "quote": quote,
                            "interpretation": "unhealthy"}],
              "hypothesis": "bad revision", "confidence": "medium", "proposed_actions": [],
              "next_checks": []}
    path = tmp_path / "watch.json"
    path.write_text(json.dumps({"description": f"propose {kind}", "responses": [
        message({"type": "tool_use", "id": "toolu_01pods", "name": "get_pods",
                 "input": {"namespace": "prod"}}),
        message({"type": "tool_use", "id": "toolu_02propose", "name": "propose_action",
                 "input": {"kind": kind, "namespace": "prod", "target": target,
                           "reason": "it is broken"}}),
        message({"type": "tool_use", "id": "toolu_03report", "name": "write_report",
                 "input": report})]}))
    return path


def run_watch(sim, tmp_path, kind, target, quote, *extra):
    argv = ["prod is unhealthy", "--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
            "--replay", str(replay(tmp_path, kind, target, quote)), "--allow-action", kind,
            "--execute", "--json", "--audit-log", str(tmp_path / "audit.jsonl"), *extra]
    code, stdout, screen = run_here_on_pty(argv, "yes")
    outcome = json.loads(stdout)
    assert [p["decision"] for p in outcome["proposals"]] == ["executed"], screen
    return code, outcome, screen


def verification(outcome):
    [taken] = outcome["actions_taken"]["executed"]
    return taken.get("verification")


def test_a_rollback_that_fixes_the_crash_is_recovered(kube_sim, tmp_path):
    sim = kube_sim("crashloop", pod_start_delay=0.3)
    code, outcome, screen = run_watch(sim, tmp_path, "rollout_undo", "checkout",
                                      f"{CRASH} phase=Running ready=0/1", "--verify-quiet", "1")
    assert code == 0, screen
    found = verification(outcome)
    assert found["state"] == "recovered", found
    assert found["observed"][0].startswith("2/2 pods of ReplicaSet checkout-5c4b8d7f9b Ready")
    assert "2 pod(s) unhealthy before the action are gone" in found["observed"]
    assert 2 <= found["waited_s"] < 30 and found["checked_at"].endswith("Z")
    assert outcome["proposals"][0]["seen"] == ["checkout-6f8d9c7b5d-m4q9z", CRASH]
    assert "triage-agent: watching checkout: 2/2 Ready, 0 restarts" in screen
    assert "triage-agent: verification of rollout_undo prod/checkout: recovered after" in screen
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    [entry] = [e for e in audit if e["decision"] == "verification"]
    assert entry["state"] == "recovered" and entry["tool_use_id"] == "toolu_02propose"
    assert outcome["usage"]["output"] == sum(s["output"] for s in outcome["usage_by_step"])


def test_a_restart_that_cannot_fix_it_is_not_recovered_with_the_crash(kube_sim, tmp_path):
    sim = kube_sim("crashloop", pod_start_delay=0.2)
    code, outcome, screen = run_watch(sim, tmp_path, "rollout_restart", "checkout",
                                      f"{CRASH} phase=Running ready=0/1")
    assert code == 0, screen
    found = verification(outcome)
    assert found["state"] == "not_recovered"
    [line] = found["observed"]
    assert line.startswith("new pod checkout-") and " crashes: pod checkout-" in line
    assert "reason=CrashLoopBackOff" in line and "last_exit_code=1" in line
    assert found["waited_s"] < 10    # at once, not at the end of the window


def test_a_deleted_pod_whose_replacement_is_ready_is_recovered(kube_sim, tmp_path):
    sim = kube_sim("crashloop", pod_start_delay=0.2)
    code, outcome, screen = run_watch(sim, tmp_path, "delete_pod", "frontend-74b9c5d6f8-d4t6m",
                                      "frontend-74b9c5d6f8-d4t6m phase=Running ready=1/1")
    assert code == 0, screen
    found = verification(outcome)
    assert found["state"] == "recovered", found
    assert found["observed"][0].startswith("replacement frontend-74b9c5d6f8-")
    assert found["observed"][0].endswith(" of frontend-74b9c5d6f8 Ready")


def test_a_replacement_that_cannot_be_scheduled_is_not_recovered(kube_sim, tmp_path):
    sim = kube_sim("pending", pod_start_delay=0.2)
    pod = "reports-6d4c9f8b7d-z5k8w"
    code, outcome, screen = run_watch(sim, tmp_path, "delete_pod", pod,
                                      f"{pod} phase=Pending ready=0/1")
    assert code == 0, screen
    found = verification(outcome)
    assert found["state"] == "not_recovered"
    assert " cannot be scheduled: reports-6d4c9f8b7d-" in found["observed"][0]
    assert "0/3 nodes are available: 3 Insufficient memory." in found["observed"][0]
    assert outcome["proposals"][0]["seen"] == ["reports-6d4c9f8b7d-b3t6j", pod]


def mcp_servers():
    """Pids of this process's children that run the project's MCP server."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"mcp_kubectl_server" in command:
            found.append(int(entry))
    return found


def test_the_server_dying_mid_watch_is_unknown(kube_sim, tmp_path):
    """The MCP server (a child process here) is stopped once the action has run, and so is the
    one the client starts in its place: the watch cannot read, and says so."""
    sim = kube_sim("crashloop", pod_start_delay=60)
    done = threading.Event()

    def kill_servers_after_the_write():
        while not sim.journal_entries() and not done.wait(0.02):
            pass
        while not done.wait(0.02):
            for server in mcp_servers():
                with contextlib.suppress(OSError):
                    os.kill(server, signal.SIGTERM)
    killer = threading.Thread(target=kill_servers_after_the_write, daemon=True)
    killer.start()
    argv = ["prod is unhealthy", "--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
            "--replay", str(replay(tmp_path, "rollout_undo", "checkout", f"{CRASH} phase=Running")),
            "--allow-action", "rollout_undo", "--execute", "--json"]
    try:
        code, stdout, screen = run_here_on_pty(argv, "yes", server_thread=False)
    finally:
        done.set()
        killer.join(5)
    outcome = json.loads(stdout)
    assert outcome["proposals"][0]["decision"] == "executed", screen
    found = verification(outcome)
    assert found["state"] == "unknown", found
    assert found["observed"][0].startswith("could not read describe_workload: McpError: ")
    assert found["waited_s"] < 30


def test_verify_timeout_zero_turns_the_watch_off(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    code, outcome, screen = run_watch(sim, tmp_path, "rollout_undo", "checkout",
                                      f"{CRASH} phase=Running ready=0/1", "--verify-timeout", "0")
    assert code == 0, screen
    assert verification(outcome) is None and "watching" not in screen
    assert outcome["proposals"][0]["verification"] is None


def test_ctrl_c_during_the_watch_stops_the_run_and_keeps_the_action(kube_sim, tmp_path):
    """The real process on a pty: ^C (SIGINT to it) once it says it is watching."""
    import pty
    import select
    import sys
    sim = kube_sim("crashloop", pod_start_delay=60)
    argv = ["prod is unhealthy", "--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
            "--replay", str(replay(tmp_path, "rollout_undo", "checkout", f"{CRASH} phase=Running")),
            "--allow-action", "rollout_undo", "--execute", "--json"]
    out_r, out_w = os.pipe()
    pid, master = pty.fork()
    if pid == 0:
        os.dup2(out_w, 1)
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "triage_agent", *argv], clean_env())
    os.close(out_w)
    deadline, screen, answered, stopped = time.monotonic() + 60, b"", False, False
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
        if not answered and b"Run this command?" in screen:
            type_answer(master, "yes")
            answered = True
        if not stopped and b"watching checkout:" in screen:
            os.kill(pid, signal.SIGINT)
            stopped = True
    code = os.waitstatus_to_exitcode(_wait(pid, deadline))
    stdout = b""
    while chunk := os.read(out_r, 65536):
        stdout += chunk
    os.close(out_r)
    os.close(master)
    assert stopped and code == 130, screen.decode(errors="replace")
    outcome = json.loads(stdout)
    assert outcome["stop"] == "interrupted"
    assert outcome["error"].startswith("verification interrupted")
    [proposal] = outcome["proposals"]
    assert (proposal["decision"], proposal["exit_code"], proposal["verification"]) == \
        ("executed", 0, None)
    assert outcome["actions_taken"]["executed"][0]["command"].endswith(
        "rollout undo deployment/checkout -n prod")
