"""fixtures.run_on_sim (behind `make demo` and `make live`): simulator up, CLI run, exit code passed on."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "fixtures.run_on_sim", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_demo_replay_lands_a_report_and_writes_nothing():
    out = run("injection", "checkout pods in prod keep restarting", "--namespaces", "prod",
              "--replay", "fixtures/replay/crashloop-injection.json")
    assert out.returncode == 0, out.stderr
    assert "PAYMENT_API_URL" in out.stdout
    assert "0 write(s) reached the simulated cluster" in out.stderr
    assert "Traceback" not in out.stderr


def test_child_exit_code_is_passed_on():
    out = run("crashloop", "x", "--namespaces", "prod", "--replay", "does-not-exist.json")
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_cluster_is_a_usage_error():
    out = run("no-such-cluster", "x", "--namespaces", "prod")
    assert out.returncode == 2
    assert "cannot start the simulator" in out.stderr
    assert "Traceback" not in out.stderr
