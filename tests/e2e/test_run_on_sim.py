"""fixtures.run_on_sim (behind `make demo` and `make live`): simulator up, CLI run, exit code
passed on; the README's demo excerpt is what the demo prints."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "fixtures.run_on_sim", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, start_new_session=True)  # no terminal


def test_demo_replay_lands_a_report_and_writes_nothing():
    out = run("injection", "checkout pods in prod keep restarting", "--namespaces", "prod",
              "--replay", "fixtures/replay/crashloop-injection.json", "--verify")  # make demo's
    assert out.returncode == 0, out.stderr
    assert "PAYMENT_API_URL" in out.stdout
    assert "0 write(s) reached the simulated cluster" in out.stderr
    assert "Traceback" not in out.stderr
    assert unprinted(readme_demo_excerpt(), out.stderr.splitlines() + out.stdout.splitlines()) \
        == [], "README.md's demo excerpt must be lines `make demo` prints, in its order"


def readme_demo_excerpt():
    """The lines of the first code block of README.md's demo section, `...` left out."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The demo\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```\n(.*?)^```", section, re.M | re.S).group(1)
    return [line for line in block.splitlines() if line != "..."]


def unprinted(excerpt, printed):
    """The lines of `excerpt` that are not in `printed` in the same order."""
    missing, at = [], 0
    for line in excerpt:
        try:
            at = printed.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def test_unprinted_finds_a_line_made_up_or_out_of_order():
    printed = ["a", "b", "c"]
    assert unprinted(["a", "c"], printed) == []
    assert unprinted(["a", "x"], printed) == ["x"]
    assert unprinted(["c", "a"], printed) == ["a"]
    assert unprinted(["a", "x", "b"], printed) == ["x"]


def test_child_exit_code_is_passed_on():
    out = run("crashloop", "x", "--namespaces", "prod", "--replay", "does-not-exist.json")
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_cluster_is_a_usage_error():
    out = run("no-such-cluster", "x", "--namespaces", "prod")
    assert out.returncode == 2
    assert "cannot start the simulator" in out.stderr
    assert "Traceback" not in out.stderr


def test_approval_demo_without_a_terminal_fails_closed():
    """`make demo-approve` with no terminal to ask: all gates but approval hold, nothing runs."""
    out = run("crashloop", "checkout pods in prod keep restarting", "--namespaces", "prod",
              "--replay", "fixtures/replay/crashloop-undo.json",
              "--allow-action", "rollout_undo", "--execute", "--json")
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    [proposal] = outcome["proposals"]
    assert proposal["decision"] == "denied"
    assert proposal["gates"] == {"enabled": True, "approved": False, "executed": False}
    assert "0 write(s) reached the simulated cluster" in out.stderr


def test_kubectl_cache_stays_out_of_home(tmp_path):
    """kubectl's per-port discovery cache goes to the run's temp dir, not the user's ~/.kube."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECACHEDIR"}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-m", "fixtures.run_on_sim", "crashloop", "x",
                          "--namespaces", "prod", "--replay", "fixtures/replay/crashloop.json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / ".kube").exists()


def test_sigterm_is_passed_on_and_nothing_is_left_running(tmp_path):
    """A killed `make demo`: the CLI gets the signal, writes its outcome, stops its MCP server."""
    from tests.agent.cli.test_mcp import SERVER
    from tests.agent.cli.test_signals import alive, call, message, wait_for
    (tmp_path / "server.py").write_text(SERVER)
    pidfile = tmp_path / "server.pid"
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"description": "t", "responses": [
        message(call("toolu_1", "get_pods")), message(call("toolu_2", "get_logs"))]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixtures.run_on_sim", "crashloop", "web pods fail",
         "--namespaces", "prod", "--replay", str(fixture), "--json",
         "--mcp", f"{sys.executable} {tmp_path / 'server.py'} {pidfile}"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        wait_for(pidfile.exists, "the MCP server's pid file")
        server_pid = int(pidfile.read_text())
        seen, deadline = b"", time.monotonic() + 30
        while b"[step 2/" not in seen and time.monotonic() < deadline:  # get_logs never answers
            if select.select([proc.stderr], [], [], 0.5)[0]:
                seen += os.read(proc.stderr.fileno(), 4096)
        assert b"[step 2/" in seen, seen
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        err = seen.decode() + err.decode()
        assert proc.returncode == 143, err
        outcome = json.loads(out.decode())
        assert outcome["stop"] == "interrupted" and outcome["tool_calls"] == 1
        assert "Traceback" not in err
        wait_for(lambda: not alive(server_pid), "the MCP server to exit")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
