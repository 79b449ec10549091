"""The suite runs in a random order, and a run that failed names its seed, which runs the same
order again (tests/support/random_order.py over pytest-randomly): a real pytest run over a
generated file, twice with one seed."""

import os
import re
import subprocess
import sys

import pytest

from tests.support import random_order

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = [f"test_{i}" for i in range(8)]
GENERATED = "".join(f"def {name}():\n    assert {name!r} != 'test_5'\n\n" for name in NAMES)


def run_pytest(tmp_path, *options):
    """pytest -v over GENERATED (test_5 fails): (the order the tests ran in, stdout)."""
    (tmp_path / "test_generated.py").write_text(GENERATED)
    # no plugin autoload: only the plugins named here, as the suite loads them
    env = dict(os.environ, PYTHONPATH=ROOT, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "randomly", "-p",
                           "tests.support.random_order", "-p", "no:cacheprovider", "-v",
                           *options, "test_generated.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr   # test_5, and nothing else, failed
    order = re.findall(r"::(test_\d+) (?:PASSED|FAILED)", done.stdout)
    assert sorted(order) == sorted(NAMES), done.stdout
    return order, done.stdout


def test_a_failed_run_names_its_seed_and_the_seed_runs_the_same_order(tmp_path):
    order, stdout = run_pytest(tmp_path, "--randomly-seed=4242")
    assert order != NAMES   # shuffled (this seed does not give back the file's order)
    named = re.findall(r"--randomly-seed=(\d+) runs it again", stdout)
    assert named == ["4242"], stdout
    # the line comes before the total line, which stays the last one
    assert stdout.strip().splitlines()[-1].startswith("=") and "1 failed" in stdout.splitlines()[-1]
    again, _ = run_pytest(tmp_path, f"--randomly-seed={named[0]}")
    assert again == order


def test_this_suite_runs_in_a_random_order(pytestconfig):
    if pytestconfig.pluginmanager.is_blocked("randomly"):
        pytest.skip("this run asked for the collection order (-p no:randomly)")
    assert pytestconfig.pluginmanager.hasplugin("randomly")   # installed by make test
    assert isinstance(random_order.seed_of(pytestconfig), int)
