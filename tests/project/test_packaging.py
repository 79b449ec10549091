"""An installed wheel gives working `triage-agent` and `mcp-kubectl-server` commands outside the
checkout.

The wheel is built by the project's own build backend (pyproject.toml's build-system) from a clean
copy of the checkout's sources, so nothing stale under build/ gets in (an in-tree build still
carried mcp_kubectl_server/redact.py after it became a package). The backend is the pinned
setuptools of the test venv (tests/requirements.txt), without pip's isolated build environment:
that one resolved and fetched setuptools from an index on every run. The wheel goes into a fresh
virtual environment (no system site-packages, so a stray runtime dependency would fail here too)
made without pip, since bootstrapping pip into every new venv took most of this test's time: the
venv's own interpreter runs the test venv's pip from a folder that holds only pip (what
`pip --python` does, without a second pip process in front of it). Then the
installed commands run from a directory outside the checkout, down to a replay against kube_sim
through the installed MCP server.
"""

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What a wheel cannot need: version control, environments, build output, and the development
# trees (tests, the simulator's fixtures), which are most of the checkout's bytes.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__",
                                     ".pytest_cache", ".sim", "tests", "fixtures")


def build_wheel(tmp):
    """The project's wheel, built from a copy of the checkout by setuptools' PEP 517 backend."""
    assert 'build-backend = "setuptools.build_meta"' in (ROOT / "pyproject.toml").read_text()
    source, wheels = tmp / "source", tmp / "wheels"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    built = subprocess.run([sys.executable, "-c", "import sys, setuptools.build_meta as backend; "
                            "backend.build_wheel(sys.argv[1])", str(wheels)],
                           cwd=source, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = wheels.glob("*.whl")
    return wheel


def install(wheel, env_dir):
    """pip install the wheel into a new venv at env_dir; the venv's bin directory."""
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    only_pip = env_dir.parent / "only-pip"  # on the install's path: pip, and nothing else
    only_pip.mkdir()
    import pip  # not at the top: a fresh checkout's first collection runs before pip is in
    (only_pip / "pip").symlink_to(Path(pip.__file__).parent, target_is_directory=True)
    done = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-index", "--disable-pip-version-check", str(wheel)],
                          env=dict(os.environ, PYTHONPATH=str(only_pip)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return bindir


@pytest.mark.slow(reason="builds a wheel and installs it with pip into a new venv")
def test_installed_commands_run_a_replay_outside_the_checkout(tmp_path, kube_sim):
    bindir = install(build_wheel(tmp_path), tmp_path / "venv")

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
