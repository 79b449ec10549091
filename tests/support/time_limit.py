"""pytest plugin: a test that takes longer than a few seconds fails, unless it is marked slow.

    @pytest.mark.slow(reason="what it proves is slow")     # exempt, with the reason on record

A test's time is its setup plus its call (what `--durations` shows for it). Over the limit, a
passing test is turned into a failure that names its time and the limit, so the suite stays fast
as it grows. The limit is TIME_LIMIT seconds, stretched on a machine busier than its cores (by the
1-minute load average per core, so a shared machine does not fail tests for its neighbours'
work); TRIAGE_TEST_MAX_SECONDS sets a fixed limit instead (0 turns the check off).
tests/conftest.py loads this plugin.
"""

import os

import pytest

TIME_LIMIT = 3.0
ENV = "TRIAGE_TEST_MAX_SECONDS"
_FIXED = pytest.StashKey[object]()   # on the config: the limit from ENV, or None
_SETUP = pytest.StashKey[float]()    # on a test item: its setup time


def fixed_limit():
    """The limit TRIAGE_TEST_MAX_SECONDS sets, or None when it is not set."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{ENV}={raw!r}: expected a number of seconds (0 turns the "
                                "per-test time limit off)") from None
    if value < 0:
        raise pytest.UsageError(f"{ENV}={raw!r}: must be 0 or more seconds")
    return value


def load_factor():
    """1, or the 1-minute load average per core when the machine is busier than its cores."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:  # no load average on this platform
        return 1.0


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow(reason): the test is slow because what it proves is slow; exempt from "
                   f"the per-test time limit ({ENV}, default {TIME_LIMIT:g} s)")
    config.stash[_FIXED] = fixed_limit()  # read once, so a bad value stops the run at start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup":
        item.stash[_SETUP] = report.duration
        return
    if report.when != "call" or not report.passed or item.get_closest_marker("slow"):
        return
    fixed = item.config.stash[_FIXED]
    limit = TIME_LIMIT * load_factor() if fixed is None else fixed
    spent = item.stash.get(_SETUP, 0.0) + report.duration
    if limit and spent > limit:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} took {spent:.2f} s (setup and call), over the "
                           f"{limit:.3g} s limit for one test. Find the waiting (a poll, a fixed "
                           f"sleep, a long timeout) and remove it; if what the test proves is "
                           f"slow, mark it @pytest.mark.slow(reason=...). To set the limit: "
                           f"{ENV}=SECONDS (0: off).")
