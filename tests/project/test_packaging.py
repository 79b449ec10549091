"""`pip install .` gives working `triage-agent` and `mcp-kubectl-server` commands outside the checkout.

Builds and installs the project into a fresh virtual environment (no system site-packages, so a
stray runtime dependency would fail here too), then runs the installed command from a directory
outside the checkout: a replay against kube_sim through the installed MCP server.

The venv is made without pip and the running interpreter's pip installs into it (`pip --python`,
pip 22.3 and later): bootstrapping pip into every new venv took most of this test's time.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def outer_pip_can_target(python):
    """True when this interpreter's pip can install into another environment (--python)."""
    probe = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "--version"],
                           capture_output=True, text=True, timeout=60)
    return probe.returncode == 0


def install(env_dir):
    """pip install the checkout into a new venv at env_dir; the venv's bin directory."""
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    pip = [sys.executable, "-m", "pip", "--python", str(bindir / "python")]
    if not outer_pip_can_target(bindir / "python"):  # no pip here, or one too old: the long way
        venv.EnvBuilder(with_pip=True).create(env_dir)
        pip = [str(bindir / "python"), "-m", "pip"]
    done = subprocess.run([*pip, "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                           str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return bindir


@pytest.mark.slow(reason="builds the project with pip in an isolated build environment")
def test_installed_commands_run_a_replay_outside_the_checkout(tmp_path, kube_sim):
    bindir = install(tmp_path / "venv")

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
    helped = subprocess.run([str(bindir / "triage-agent"), "--help"], cwd=workdir,
                            capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--namespaces" in helped.stdout
    # every subpackage made it into the wheel: the server's --check loads the tool registry,
    # the read layer and the digests, and reads the cluster through the installed package
    checked = subprocess.run([str(bindir / "mcp-kubectl-server"), "--check", "--allow-namespaces", "prod",
                              "--kubeconfig", sim.kubeconfig], cwd=workdir,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert "prod" in checked.stdout + checked.stderr
