"""The suite runs in a random order, and a run that failed names its seed, which runs the same
order again (tests/support/random_order.py over pytest-randomly): a real pytest run over a
generated file, twice with one seed, each in this process (the pytester plugin's
runpytest_inprocess: a config and session of its own, no interpreter to start)."""

import re

import pytest

from tests.support import random_order

NAMES = [f"test_{i}" for i in range(8)]
GENERATED = "".join(f"def {name}():\n    assert {name!r} != 'test_5'\n\n" for name in NAMES)


def run_pytest(pytester, *options):
    """pytest -v over GENERATED (test_5 fails): (the order the tests ran in, stdout)."""
    pytester.makepyfile(test_generated=GENERATED)
    with pytest.MonkeyPatch.context() as patch:
        # no plugin autoload: only the plugins named here, as the suite loads them
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        done = pytester.runpytest_inprocess("-p", "randomly", "-p", "tests.support.random_order",
                                            "-p", "no:cacheprovider", "-v", *options,
                                            "test_generated.py")
    stdout = done.stdout.str()
    assert done.ret == 1, stdout + done.stderr.str()   # test_5, and nothing else, failed
    order = re.findall(r"::(test_\d+) (?:PASSED|FAILED)", stdout)
    assert sorted(order) == sorted(NAMES), stdout
    return order, stdout


def test_a_failed_run_names_its_seed_and_the_seed_runs_the_same_order(pytester):
    order, stdout = run_pytest(pytester, "--randomly-seed=4242")
    assert order != NAMES   # shuffled (this seed does not give back the file's order)
    named = re.findall(r"--randomly-seed=(\d+) runs it again", stdout)
    assert named == ["4242"], stdout
    # the line comes before the total line, which stays the last one
    assert stdout.strip().splitlines()[-1].startswith("=") and "1 failed" in stdout.splitlines()[-1]
    again, _ = run_pytest(pytester, f"--randomly-seed={named[0]}")
    assert again == order


def test_this_suite_runs_in_a_random_order(pytestconfig):
    if pytestconfig.pluginmanager.is_blocked("randomly"):
        pytest.skip("this run asked for the collection order (-p no:randomly)")
    assert pytestconfig.pluginmanager.hasplugin("randomly")   # installed by make test
    assert isinstance(random_order.seed_of(pytestconfig), int)
