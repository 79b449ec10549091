"""kubectl runner: verb allow-list, connection flags, timeouts that kill the group, caps, error text."""

import os
import sys
import time

import pytest

from mcp_kubectl_server.kubectl import CancelledError, Kubectl, error_line
from tests.test_server_support import recording_kubectl


def test_only_allow_listed_verbs():
    kubectl = Kubectl("kubectl")
    for verb in ("delete", "exec", "apply", "edit", "patch", "rollout", "proxy", "cp", "config", "-A",
                 "--kubeconfig"):
        with pytest.raises(ValueError):
            kubectl.argv(verb, [])


def test_connection_flags_come_from_the_constructor(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "stdout": "{}"}])
    result = Kubectl(rec.path, context="kube-sim", kubeconfig="/k/config").run("get", ["pods"])
    assert result.ok
    assert rec.calls() == [["--context=kube-sim", "--kubeconfig=/k/config", "get", "pods"]]


def test_missing_binary_is_an_error_value(tmp_path):
    result = Kubectl(str(tmp_path / "no-such-kubectl")).run("get", ["pods"])
    assert not result.ok and "not installed or not found" in result.error


def test_non_zero_exit_carries_kubectls_message(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "code": 1,
                                        "stderr": "I1129 noise\nError from server (NotFound): pods \"x\" not found\n"}])
    result = Kubectl(rec.path).run("get", ["pod/x"])
    assert result.error == 'kubectl failed (exit 1): Error from server (NotFound): pods "x" not found'


def test_forbidden_is_named(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "code": 1, "stderr":
                                        'Error from server (Forbidden): pods is forbidden: User "x" cannot list'}])
    result = Kubectl(rec.path).run("get", ["pods"])
    assert result.error.startswith("kubectl was refused (Forbidden): Error from server (Forbidden)")


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    script = tmp_path / "hang"
    # A kubectl that starts a grandchild holding the pipes open, then hangs.
    script.write_text(f"#!{sys.executable} -S\nimport subprocess, sys, time\n"
                      f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                      f"open({str(marker)!r}, 'w').write(str(p.pid))\ntime.sleep(60)\n")
    script.chmod(0o755)
    # 0.5 s: room for the script (a Python start) to have started its grandchild on a loaded machine.
    result = Kubectl(str(script), timeout=0.5).run("get", ["pods"])
    assert "timed out after 0.5s and was stopped" in result.error
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of an exited child still answers kill(0): look at its state
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_runs_of_one_call_share_one_timeout(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "sleep": 120}])
    bounded = Kubectl(rec.path, timeout=0.3).for_one_call()
    assert "timed out after 0.3s" in bounded.run("get", ["pods"]).error
    assert "timed out after 0.3s" in bounded.run("get", ["events"]).error  # the budget is spent: not started
    assert rec.calls() == [["get", "pods"]]


def test_output_cap_stops_kubectl(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "stdout": "x" * 200_000}])
    result = Kubectl(rec.path).run("get", ["pods"], max_bytes=10_000)
    assert "passed the 10000 byte cap" in result.error
    assert len(result.stdout) <= 10_000


def test_cancellation_kills_and_raises(tmp_path):
    rec = recording_kubectl(tmp_path, [{"match": "get", "sleep": 30}])
    started = time.monotonic()
    with pytest.raises(CancelledError):
        Kubectl(rec.path, timeout=60).run("get", ["pods"], cancelled=lambda: time.monotonic() - started > 0.3)


def test_error_line_is_one_line():
    assert error_line(b"") == "no message on stderr"
    assert "\n" not in error_line(b"error: one\nerror: two\n")
