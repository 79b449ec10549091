"""The per-test time limit (tests/support/time_limit.py) fires: a real pytest run over a generated file,
in one process and in a pytest-xdist worker (as `make test` runs the suite). By default a test over
the limit is listed at the end and stays passed; with TRIAGE_TEST_MAX_SECONDS it fails; and without
it, a machine busier than its cores stretches the limit. The tests marked slow run first.

Each generated test that is meant to be over the limit waits 0.1 s on purpose, against a limit of
0.05 s: set through TRIAGE_TEST_MAX_SECONDS, or for the default, by a conftest.py beside the
generated file that lowers TIME_LIMIT (and holds the load factor at 1, which has its own test).

The one-process runs are pytest's own in this process (the pytester plugin's runpytest_inprocess:
a new config, plugin manager and session; no interpreter to start, about 0.19 s of CPU a run);
what the conftest changes in the shared time_limit module is put back after each. The xdist runs
are processes (a controller and its worker), as `make test` runs.
"""

import os
import subprocess

import pytest

from tests.support import time_limit
from tests.support.time_limit import ENV

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GENERATED = '''
import time
import pytest

@pytest.fixture
def slow_fixture():
    time.sleep(0.1)

def test_quick():
    pass

def test_over_the_limit():
    time.sleep(0.1)

def test_over_the_limit_in_setup(slow_fixture):
    pass

@pytest.mark.slow(reason="proves something slow")
def test_marked_slow():
    time.sleep(0.1)

def test_failing_on_its_own():
    assert 1 == 2
'''


LOWER_DEFAULT = '''
from tests.support import time_limit

time_limit.TIME_LIMIT = 0.05
time_limit.load_factor = lambda: 1.0
'''


def run_pytest(pytester, limit, *options):
    """pytest over GENERATED; limit is TRIAGE_TEST_MAX_SECONDS, or None for the default mode. In
    this process, unless `options` start xdist (see the module's docstring)."""
    pytester.makepyfile(test_generated=GENERATED)
    if limit is None:
        pytester.makeconftest(LOWER_DEFAULT)
    args = ("-p", "tests.support.time_limit", "-p", "no:cacheprovider", *options, "-rA", "-q",
            "test_generated.py")
    with pytest.MonkeyPatch.context() as patch:
        # No plugin autoload: only the plugins named here matter; another installed one costs time.
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        patch.setenv("PYTHONPATH", ROOT)
        if limit is None:
            patch.delenv(ENV, raising=False)
        else:
            patch.setenv(ENV, limit)
        for name in ("TIME_LIMIT", "load_factor"):   # LOWER_DEFAULT sets them in this process too
            patch.setattr(time_limit, name, getattr(time_limit, name))
        if "-n" in options:
            result = pytester.runpytest_subprocess(*args, timeout=60)
        else:
            result = pytester.runpytest_inprocess(*args)
    # as subprocess.run gives it, whichever way it ran (the tests read returncode, stdout, stderr)
    return subprocess.CompletedProcess(args, int(result.ret), result.stdout.str(),
                                       result.stderr.str())


def outcomes(stdout):
    """{test name: PASSED|FAILED} from the -rA summary lines."""
    found = {}
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED") and "::" in rest:
            found[rest.split("::")[1].split(" ")[0]] = word
    return found


# One xdist worker is enough: the limit is applied in the worker and its verdict must survive the
# trip to the controller; a second worker would only add an interpreter.
WORKERS = [
    pytest.param((), id="one-process"),
    pytest.param(("-p", "xdist.plugin", "-n", "1"), id="xdist", marks=pytest.mark.slow(
        reason="starts a pytest controller and its worker, two interpreters that each collect"))]


@pytest.mark.parametrize("workers", WORKERS)
def test_a_test_over_a_strict_limit_fails_unless_marked_slow(pytester, workers):
    done = run_pytest(pytester, "0.05", *workers)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("[gw" in done.stdout) is bool(workers)  # xdist's workers report as gw0, gw1
    assert outcomes(done.stdout) == {
        "test_quick": "PASSED", "test_over_the_limit": "FAILED",
        "test_over_the_limit_in_setup": "FAILED", "test_marked_slow": "PASSED",
        "test_failing_on_its_own": "FAILED"}
    assert "test_over_the_limit took 0.1" in done.stdout
    assert "over the 0.05 s limit for one test" in done.stdout
    assert f"{ENV}=SECONDS" in done.stdout
    assert "assert 1 == 2" in done.stdout  # a test's own failure is kept as it was


@pytest.mark.parametrize("workers", WORKERS)
def test_by_default_a_test_over_the_limit_is_listed_and_stays_passed(pytester, workers):
    done = run_pytest(pytester, None, *workers)
    assert done.returncode == 1, done.stdout + done.stderr  # test_failing_on_its_own only
    assert ("[gw" in done.stdout) is bool(workers)
    assert outcomes(done.stdout) == {
        "test_quick": "PASSED", "test_over_the_limit": "PASSED",
        "test_over_the_limit_in_setup": "PASSED", "test_marked_slow": "PASSED",
        "test_failing_on_its_own": "FAILED"}
    section = done.stdout.split("tests over the time limit", 1)[1].split("short test summary")[0]
    listed = [line.split()[2] for line in section.splitlines() if " s  " in line]
    assert sorted(listed) == ["test_generated.py::test_over_the_limit",
                              "test_generated.py::test_over_the_limit_in_setup"], section
    assert "(limit 0.05 s)" in section and "2 passing test(s) over the limit" in section
    assert f"{ENV}=SECONDS makes the limit strict" in section


def test_nothing_is_listed_when_every_test_is_quick(pytester):
    done = run_pytest(pytester, None, "-k", "quick or failing")
    assert outcomes(done.stdout) == {"test_quick": "PASSED", "test_failing_on_its_own": "FAILED"}
    assert "over the time limit" not in done.stdout


def test_zero_turns_the_limit_off(pytester):
    done = run_pytest(pytester, "0")
    assert outcomes(done.stdout) == {
        "test_quick": "PASSED", "test_over_the_limit": "PASSED",
        "test_over_the_limit_in_setup": "PASSED", "test_marked_slow": "PASSED",
        "test_failing_on_its_own": "FAILED"}
    assert "over the time limit" not in done.stdout
    # The test marked slow ran first, the rest in the file's order (-rA lists them as they ran).
    assert list(outcomes(done.stdout)) == [
        "test_marked_slow", "test_quick", "test_over_the_limit", "test_over_the_limit_in_setup",
        "test_failing_on_its_own"], done.stdout


def test_a_bad_limit_stops_the_run_with_a_clear_error(pytester):
    done = run_pytest(pytester, "soon")
    assert done.returncode == 4 and "Traceback" not in done.stderr
    assert f"{ENV}='soon': expected a number of seconds" in done.stderr
    assert "passed" not in done.stdout


def test_a_machine_busier_than_its_cores_stretches_the_limit(monkeypatch):
    monkeypatch.setattr(time_limit.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(time_limit.os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    assert time_limit.load_factor() == 4.0
    monkeypatch.setattr(time_limit.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert time_limit.load_factor() == 1.0
