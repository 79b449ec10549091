"""`pip install .` gives working `triage-agent` and `mcp-kubectl-server` commands outside the checkout.

Builds and installs the project into a fresh virtual environment (no system site-packages, so a
stray runtime dependency would fail here too), then runs the installed command from a directory
outside the checkout: a replay against kube_sim through the installed MCP server.
"""

import json
import os
import subprocess
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_installed_commands_run_a_replay_outside_the_checkout(tmp_path, kube_sim):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    pip = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                          "--disable-pip-version-check", str(ROOT)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]

    sim = kube_sim("crashloop")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    out = subprocess.run(
        [str(bindir / "triage-agent"), "checkout pods in prod keep restarting",
         "--namespaces", "prod", "--replay", str(ROOT / "fixtures/replay/crashloop.json"),
         "--kubeconfig", sim.kubeconfig, "--json"],
        cwd=workdir, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, start_new_session=True)
    assert out.returncode == 0, out.stderr[-2000:]
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "report" and outcome["tool_calls"] == 3
    assert "PAYMENT_API_URL" in outcome["report"]["summary"]

    server = subprocess.run([str(bindir / "mcp-kubectl-server"), "--help"], cwd=workdir,
                            capture_output=True, text=True, timeout=60)
    assert server.returncode == 0 and "--allow-namespaces" in server.stdout
