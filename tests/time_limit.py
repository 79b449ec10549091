"""pytest plugin: a test that takes longer than a few seconds fails, unless it is marked slow.

    @pytest.mark.slow(reason="what it proves is slow")     # exempt, with the reason on record

A test's time is its setup plus its call (what `--durations` shows for it). Over the limit, a
passing test is turned into a failure that names its time and the limit, so the suite stays fast
as it grows. The limit is TIME_LIMIT seconds; TRIAGE_TEST_MAX_SECONDS overrides it (for a loaded
or slow machine; 0 turns the check off). tests/conftest.py loads this plugin.
"""

import os

import pytest

TIME_LIMIT = 3.0
ENV = "TRIAGE_TEST_MAX_SECONDS"
_LIMIT = pytest.StashKey[float]()   # on the config: the limit in force
_SETUP = pytest.StashKey[float]()   # on a test item: its setup time


def limit_seconds():
    """The limit in force: TRIAGE_TEST_MAX_SECONDS when set, else TIME_LIMIT."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return TIME_LIMIT
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{ENV}={raw!r}: expected a number of seconds (0 turns the "
                                "per-test time limit off)") from None
    if value < 0:
        raise pytest.UsageError(f"{ENV}={raw!r}: must be 0 or more seconds")
    return value


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow(reason): the test is slow because what it proves is slow; exempt from "
                   f"the per-test time limit ({ENV}, default {TIME_LIMIT:g} s)")
    config.stash[_LIMIT] = limit_seconds()  # read once, so a bad value stops the run at start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup":
        item.stash[_SETUP] = report.duration
        return
    limit = item.config.stash[_LIMIT]
    if report.when != "call" or not report.passed or not limit:
        return
    spent = item.stash.get(_SETUP, 0.0) + report.duration
    if spent > limit and item.get_closest_marker("slow") is None:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} took {spent:.2f} s (setup and call), over the "
                           f"{limit:g} s limit for one test. Find the waiting (a poll, a fixed "
                           f"sleep, a long timeout) and remove it; if what the test proves is "
                           f"slow, mark it @pytest.mark.slow(reason=...). On a loaded machine, "
                           f"raise the limit with {ENV}=SECONDS (0: off).")
